//! Throughput: a generated Codex recording (≥ 200k lines), a Claude one and an ACP agent's one
//! (≥ 100k lines each), each path against the typed parse limit ([`limit`]) measured in the same
//! run on the same lines.
//!
//! The project decoder row decodes each line the way the bridge's readers and adapters do, with the
//! same functions: the JSON-RPC envelope in one borrowed pass and the params' raw text straight
//! into `codex::ServerNotification` or `acp::SessionNotification`, or a Claude line into raw text,
//! classified by a peek at its `type`, and that text straight into `claude::CliMessage`. The in-process full path adds everything the bridge does, through
//! the same backend seam and pipeline as the product: a child process and its pipe, framing,
//! JSON-RPC classification and ordering, the adapter's mapping and recorder, serve's pipeline (the
//! `attempt/event` notifications and the transcript's acknowledged appends). The product's own
//! processes follow: `clawbridge run --json` to a pipe and to a file, and `clawbridge serve` with
//! this bench as its host ([`serve_process`]). Each figure is the best of its runs; the rows take
//! turns within a round, in an order that rotates.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use clawbridge_protocol::acp::{SessionNotification, SessionUpdate};
use clawbridge_protocol::claude::CliMessage;
use clawbridge_protocol::codex::notifications::ServerNotification;
use clawbridge_protocol::jsonrpc::{Envelope, Incoming, Message, Notification, RawMessage, classify_control_line};
use serde_json::value::RawValue;

use super::generate::{self, Generated};
use super::report::{Report, Row, Target, number};
use super::session::{self, Attempt, HostSide};
use super::{Scenario, Setup, Sizes};
use super::{limit, serve_process};

/// The target: the full path at half the typed parse limit or better.
const RATIO_TARGET: f64 = 0.5;

/// One backend's generated native stream: how it is made, and how its lines decode.
struct Stream {
    /// The backend's name in the registry (and in the rows).
    backend: &'static str,
    /// Writes a recording of at least the given number of lines.
    generate: fn(&Path, &str, usize) -> anyhow::Result<Generated>,
    /// How many lines, at the run's sizes.
    lines: fn(&Sizes) -> usize,
    /// Decodes one peer line into the protocol's types; whether it was a kind the protocol knows.
    decode: fn(&str) -> anyhow::Result<bool>,
}

/// The streams measured.
const STREAMS: [Stream; 3] = [
    Stream { backend: "codex", generate: generate::codex, lines: |s| s.codex_lines, decode: decode_codex },
    Stream { backend: "claude", generate: generate::claude, lines: |s| s.claude_lines, decode: decode_claude },
    // As many lines as the Claude stream: both are one turn of one session.
    Stream { backend: "acp", generate: generate::acp, lines: |s| s.claude_lines, decode: decode_acp },
];

/// Runs every stream through the typed parse limit, the project's decoder and the full path, and
/// adds their rows. Each row is the best of its runs, and the rows take turns within a round (the
/// order rotates from round to round), so a machine that gets busy mid-run slows every row alike.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let rounds = if ctx.sizes.codex_lines < 100_000 { 1 } else { 3 };
    for stream in &STREAMS {
        let name = stream.backend;
        let kind = limit::Kind::of(name)?;
        let generated = (stream.generate)(ctx.work, &format!("throughput-{name}"), (stream.lines)(&ctx.sizes))?;
        let mut typed: Option<Duration> = None;
        let mut project: Option<Duration> = None;
        let mut full: Option<Attempt> = None;
        let mut to_pipe: Option<Duration> = None;
        let mut to_file: Option<Duration> = None;
        // Serve's harnesses run Codex and Claude; an ACP agent needs its command line in serve's
        // config, so the serve process row is left out for it.
        let via_serve = name != "acp";
        let mut serve: Option<(Duration, u64)> = None;
        for round in 0..rounds {
            for step in 0..6 {
                match (step + round) % 6 {
                    4 if via_serve => {
                        let (time, events) = serve_process::run(ctx, name, &generated)?;
                        if serve.is_none_or(|(best, _)| time < best) {
                            serve = Some((time, events));
                        }
                    }
                    4 => {}
                    0 => keep_best(&mut typed, limit::typed_parse(&generated.native, kind)?),
                    1 => keep_best(&mut project, parse_only(&generated.native, stream.decode)?),
                    2 => keep_best(&mut to_pipe, product_run(ctx, name, &generated, Output::Pipe)?),
                    3 => keep_best(&mut to_file, product_run(ctx, name, &generated, Output::File)?),
                    _ => {
                        let attempt = full_path(ctx, name, &generated, round).await?;
                        if full.as_ref().is_none_or(|best| attempt.elapsed < best.elapsed) {
                            full = Some(attempt);
                        }
                    }
                }
            }
        }
        let (Some(typed), Some(project), Some(attempt), Some(to_pipe), Some(to_file)) =
            (typed, project, full, to_pipe, to_file)
        else {
            anyhow::bail!("the {name} stream ran no round");
        };
        let lines = generated.native_lines as f64;
        let mb = generated.native_bytes as f64 / 1e6;
        let limit_rate = lines / typed.as_secs_f64();
        let generated_sizes = limit::line_sizes(&generated.native)?;
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: recording (peer lines; {} MB)", number(mb)),
            lines,
            "lines",
        ));
        match limit::recorded_sizes(name) {
            Some(real) => report.push(
                Row::info(
                    Scenario::Throughput,
                    format!("{name}: line size of the real recordings (p99 {} B)", real.p99),
                    real.avg,
                    "B avg",
                )
                .with_note(format!("fixtures/recordings/{name}: {}", real.describe())),
            ),
            None => report.skipped(
                Scenario::Throughput,
                &format!("{name}: no real recordings beside this build to size lines against"),
            ),
        }
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: line size of the generated stream (p99 {} B)", generated_sizes.p99),
            generated_sizes.avg,
            "B avg",
        ));
        report.push(Row::info(Scenario::Throughput, format!("{name}: typed parse limit"), limit_rate, "lines/s").with_note(
            "one serde_json::from_str per line into a flat struct of borrowed fields (what a consumer reads), the rest skipped; written in the bench, not the product's decoder",
        ));
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: typed parse limit, bytes"),
            mb / typed.as_secs_f64(),
            "MB/s",
        ));
        let ratio = |seconds: f64| (lines / seconds) / limit_rate;
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: project decoder (text → typed), peer lines"),
            lines / project.as_secs_f64(),
            "lines/s",
        ));
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: project decoder (text → typed) ÷ typed parse limit"),
            ratio(project.as_secs_f64()),
            "×",
        ));
        let seconds = attempt.elapsed.as_secs_f64();
        let totals = &attempt.totals;
        let forwarded = totals.delivered.notifications;
        let mut events = Row::info(
            Scenario::Throughput,
            format!("{name}: full path (in-process serve pipeline), normalized events"),
            totals.events as f64 / seconds,
            "events/s",
        );
        if forwarded < totals.events {
            events = events.with_note(format!(
                "{} events became {} attempt/event notifications: the pipeline's queue merges consecutive deltas \
                 of one item while its stages lag ({} delta bytes cut); {} transcript appends carried {} rows",
                number(totals.events as f64),
                number(forwarded as f64),
                number(totals.dropped_bytes as f64),
                number(totals.delivered.appends as f64),
                number(totals.delivered.rows as f64)
            ));
        }
        report.push(events);
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: full path (in-process serve pipeline), peer lines"),
            lines / seconds,
            "lines/s",
        ));
        report.push(Row::judged(
            Scenario::Throughput,
            format!("{name}: full path (in-process serve pipeline) ÷ typed parse limit"),
            ratio(seconds),
            "×",
            Target::AtLeast(RATIO_TARGET),
        ));
        for (output, time) in [(Output::Pipe, to_pipe), (Output::File, to_file)] {
            let what = format!("{name}: `clawbridge run --json` {}", output.words());
            report.push(Row::info(
                Scenario::Throughput,
                format!("{what}, peer lines"),
                lines / time.as_secs_f64(),
                "lines/s",
            ));
            report.push(Row::info(
                Scenario::Throughput,
                format!("{what} ÷ typed parse limit"),
                ratio(time.as_secs_f64()),
                "×",
            ));
        }
        if let Some((time, events)) = serve {
            let what = format!("{name}: `clawbridge serve` process to a host on its stdio");
            report.push(
                Row::info(Scenario::Throughput, format!("{what}, peer lines"), lines / time.as_secs_f64(), "lines/s")
                    .with_note(format!(
                        "the host read {} attempt/event notifications and acknowledged every transcript append",
                        number(events as f64)
                    )),
            );
            report.push(Row::info(
                Scenario::Throughput,
                format!("{what} ÷ typed parse limit"),
                ratio(time.as_secs_f64()),
                "×",
            ));
        }
    }
    Ok(())
}

/// Where `clawbridge run --json` writes.
#[derive(Clone, Copy, Debug)]
pub enum Output {
    /// A pipe the bench reads to its end.
    Pipe,
    /// A file.
    File,
}

impl Output {
    /// `to a pipe`, `to a file`.
    pub fn words(self) -> &'static str {
        match self {
            Output::Pipe => "to a pipe",
            Output::File => "to a file",
        }
    }
}

/// The product's own `clawbridge run --backend <b> --json` process on the replay peer, its stdout a
/// pipe this reads every byte of, or a file: spawn to exit, the whole of what a person's run costs.
pub fn product_run(ctx: &Setup<'_>, backend: &str, generated: &Generated, output: Output) -> anyhow::Result<Duration> {
    use std::process::{Command, Stdio};
    let role = [std::ffi::OsStr::new("replay"), generated.recording.as_os_str()];
    let program = session::peer_program(ctx.work, &format!("run-{backend}"), ctx.me, &role)?;
    let state = tempfile::Builder::new().prefix("run-state-").tempdir_in(ctx.work)?;
    let config = ctx.work.join("run-empty-config.toml");
    std::fs::write(&config, "")?;
    let mut command = Command::new(ctx.product);
    command.args(["run", "--backend", backend, "--json"]);
    if backend == "acp" {
        command.arg("--agent").arg(&program);
    } else {
        command.arg("--program").arg(&program);
    }
    command.arg("bench the stream").env("CLAWBRIDGE_STATE_DIR", state.path()).env("CLAWBRIDGE_CONFIG", &config);
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    let file = ctx.work.join(format!("run-{backend}.out.jsonl"));
    let started = Instant::now();
    let (status, bytes, stderr) = match output {
        Output::Pipe => {
            let mut child = command
                .stdout(Stdio::piped())
                .spawn()
                .with_context(|| format!("spawning {}", ctx.product.display()))?;
            let mut stdout = child.stdout.take().ok_or_else(|| anyhow::anyhow!("no stdout pipe"))?;
            let mut stderr = child.stderr.take().ok_or_else(|| anyhow::anyhow!("no stderr pipe"))?;
            let errors = std::thread::spawn(move || {
                let mut text = Vec::new();
                let _ = std::io::Read::read_to_end(&mut stderr, &mut text);
                text
            });
            let bytes = std::io::copy(&mut stdout, &mut std::io::sink())?;
            let status = child.wait()?;
            (status, bytes, errors.join().unwrap_or_default())
        }
        Output::File => {
            let out = File::create(&file).with_context(|| format!("creating {}", file.display()))?;
            let done = command.stdout(out).output().with_context(|| format!("running {}", ctx.product.display()))?;
            (done.status, std::fs::metadata(&file)?.len(), done.stderr)
        }
    };
    let elapsed = started.elapsed();
    if !status.success() || bytes == 0 {
        anyhow::bail!(
            "`clawbridge run --backend {backend} --json` {}: {status}, {bytes} bytes out; stderr: {}",
            output.words(),
            String::from_utf8_lossy(&stderr).trim()
        );
    }
    let _ = std::fs::remove_file(&file);
    Ok(elapsed)
}

/// Keeps the shorter of two times.
pub fn keep_best(best: &mut Option<Duration>, time: Duration) {
    if best.is_none_or(|b| time < b) {
        *best = Some(time);
    }
}

/// One full-path run of a generated recording on the registry's `backend`: the replay role as its
/// peer, the backend's real session, serve's pipeline.
async fn full_path(ctx: &Setup<'_>, backend: &str, generated: &Generated, run: usize) -> anyhow::Result<Attempt> {
    let role = [std::ffi::OsStr::new("replay"), generated.recording.as_os_str()];
    let program = session::peer_program(ctx.work, &format!("throughput-{backend}"), ctx.me, &role)?;
    let host = HostSide::new(format!("bench-throughput-{backend}-{run}"));
    let attempt = session::attempt(&ctx.backend(backend)?, &program, host).await?;
    attempt.check(generated.tool_calls).with_context(|| format!("the {backend} replay"))?;
    let rows = attempt.totals.delivered.rows;
    if rows < generated.tool_calls * 2 {
        anyhow::bail!("the host's transcript got {rows} rows for {} tool calls", generated.tool_calls);
    }
    Ok(attempt)
}

/// Reads `native` and decodes every line once with `decode`, as the bridge's readers do.
fn parse_only(native: &Path, decode: fn(&str) -> anyhow::Result<bool>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let file = File::open(native).with_context(|| format!("opening {}", native.display()))?;
    let mut decoded = 0u64;
    for line in BufReader::with_capacity(64 * 1024, file).lines() {
        decoded += u64::from(decode(&line?)?);
    }
    std::hint::black_box(decoded);
    Ok(started.elapsed())
}

/// A JSON-RPC peer line as the bridge's reader classifies it: one borrowed pass over the envelope,
/// the notification's params copied out as raw text (what the reader hands on).
fn jsonrpc_notification(line: &str) -> anyhow::Result<Option<(String, Box<RawValue>)>> {
    let envelope =
        Envelope::parse(line).map_err(|error| anyhow::anyhow!("a generated line is not JSON-RPC: {error}"))?;
    match envelope.classify(false) {
        Ok(RawMessage::Notification { method, params }) => {
            Ok(Some((method, params.map_or_else(|| RawValue::NULL.to_owned(), RawValue::to_owned))))
        }
        Ok(other) => {
            std::hint::black_box(other);
            Ok(None)
        }
        Err(error) => anyhow::bail!("a generated line is not JSON-RPC: {error}"),
    }
}

/// A Codex peer line: JSON-RPC classification, then the typed notification from the params' text.
fn decode_codex(line: &str) -> anyhow::Result<bool> {
    let Some((method, params)) = jsonrpc_notification(line)? else { return Ok(false) };
    let typed = ServerNotification::from_raw(&method, Some(&params));
    let known = !matches!(typed, ServerNotification::Unknown { .. });
    std::hint::black_box(typed);
    Ok(known)
}

/// A Claude CLI line: read into raw text and classified by its `type` (the reader), then the typed
/// message from that text (the mapper's decode).
fn decode_claude(line: &str) -> anyhow::Result<bool> {
    let raw: Box<RawValue> = serde_json::from_str(line).context("a generated line is not JSON")?;
    match classify_control_line(raw) {
        Ok(Incoming::Message(Message::Notification(Notification { params: Some(params), .. }))) => {
            let typed = CliMessage::from_raw(&params);
            let known = !matches!(typed, CliMessage::Unknown(_));
            std::hint::black_box(typed);
            Ok(known)
        }
        Ok(other) => {
            std::hint::black_box(other);
            Ok(false)
        }
        Err(error) => anyhow::bail!("a generated line is no Claude message: {error}"),
    }
}

/// An ACP agent line: JSON-RPC classification, then the typed `session/update` from the params' text.
fn decode_acp(line: &str) -> anyhow::Result<bool> {
    let Some((_, params)) = jsonrpc_notification(line)? else { return Ok(false) };
    let typed = SessionNotification::decode_raw(Some(&params)).update;
    let known = !matches!(typed, SessionUpdate::Unknown { .. });
    std::hint::black_box(typed);
    Ok(known)
}
