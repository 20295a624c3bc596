//! Throughput: a generated Codex recording (≥ 200k lines) and a Claude one (≥ 100k lines) through
//! the full path, against the parse-only limit measured in the same run on the same lines.
//!
//! Parse-only reads the peer's lines from a file and decodes each into the protocol types the way the
//! bridge's readers do (JSON text → `Value` → `jsonrpc::Message` → `codex::ServerNotification`, or
//! → `claude::CliMessage`), nothing else. The full path adds everything the bridge does: a child
//! process and its pipe, framing, JSON-RPC classification and ordering, the adapter's mapping and
//! recorder, the host notification and the transcript. Each figure is the median of three runs.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use clawbridge_protocol::claude::CliMessage;
use clawbridge_protocol::codex::notifications::ServerNotification;
use clawbridge_protocol::jsonrpc::Message;
use serde_json::Value;

use super::generate::{self, Generated};
use super::report::{Report, Row, Target, number};
use super::session::{self, Attempt, HostSide};
use super::{Scenario, Setup};

/// The target: the full path at half the parse-only limit or better.
const RATIO_TARGET: f64 = 0.5;

/// Which peer a recording is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// codex app-server.
    Codex,
    /// claude -p stream-json.
    Claude,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Codex => "codex",
            Backend::Claude => "claude",
        }
    }
}

pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let runs = if ctx.sizes.codex_lines < 100_000 { 1 } else { 3 };
    for backend in [Backend::Codex, Backend::Claude] {
        let name = backend.name();
        let generated = match backend {
            Backend::Codex => generate::codex(ctx.work, "throughput-codex", ctx.sizes.codex_lines)?,
            Backend::Claude => generate::claude(ctx.work, "throughput-claude", ctx.sizes.claude_lines)?,
        };
        let mut parse_times = Vec::new();
        for _ in 0..runs {
            parse_times.push(parse_only(&generated.native, backend)?);
        }
        let mut full = Vec::new();
        for run in 0..runs {
            full.push(full_path(ctx, backend, &generated, run).await?);
        }
        let parse = median(parse_times);
        full.sort_by_key(|a| a.elapsed);
        let attempt = &full[full.len() / 2];
        let seconds = attempt.elapsed.as_secs_f64();
        let mb = generated.native_bytes as f64 / 1e6;
        let full_mbs = mb / seconds;
        let parse_mbs = mb / parse.as_secs_f64();
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: recording (peer lines; {} MB)", number(mb)),
            generated.native_lines as f64,
            "lines",
        ));
        let totals = &attempt.totals;
        let mut events = Row::info(
            Scenario::Throughput,
            format!("{name}: full path, normalized events"),
            totals.events as f64 / seconds,
            "events/s",
        );
        if totals.forwarded < totals.events {
            events = events.with_note(format!(
                "{} events became {} attempt/event notifications: serve's queue merges consecutive deltas of one \
                 item while its forwarder lags ({} delta bytes cut)",
                number(totals.events as f64),
                number(totals.forwarded as f64),
                number(totals.dropped_bytes as f64)
            ));
        }
        report.push(events);
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: full path, peer lines"),
            generated.native_lines as f64 / seconds,
            "lines/s",
        ));
        report.push(Row::info(Scenario::Throughput, format!("{name}: full path"), full_mbs, "MB/s"));
        report.push(Row::info(
            Scenario::Throughput,
            format!("{name}: parse-only, peer lines"),
            generated.native_lines as f64 / parse.as_secs_f64(),
            "lines/s",
        ));
        report.push(Row::info(Scenario::Throughput, format!("{name}: parse-only"), parse_mbs, "MB/s"));
        report.push(Row::judged(
            Scenario::Throughput,
            format!("{name}: full path ÷ parse-only"),
            full_mbs / parse_mbs,
            "×",
            Target::AtLeast(RATIO_TARGET),
        ));
    }
    Ok(())
}

/// One full-path run of a generated recording: the replay role as the peer, the real session.
pub async fn full_path(
    ctx: &Setup<'_>,
    backend: Backend,
    generated: &Generated,
    run: usize,
) -> anyhow::Result<Attempt> {
    let transcript = ctx.work.join(format!("throughput-{}-{run}.transcript.jsonl", backend.name()));
    let host = HostSide::new("bench-throughput", transcript);
    let attempt = match backend {
        Backend::Codex => {
            let args = session::role_args([std::ffi::OsStr::new("replay"), generated.recording.as_os_str()]);
            session::codex_attempt(ctx.me, args, host).await?
        }
        Backend::Claude => {
            let cli = session::claude_wrapper(ctx.work, ctx.me, &generated.recording)?;
            session::claude_attempt(&cli, host).await?
        }
    };
    attempt.check(generated.tool_calls).with_context(|| format!("the {} replay", backend.name()))?;
    if attempt.totals.transcript_rows < generated.tool_calls * 2 {
        anyhow::bail!(
            "the transcript got {} rows for {} tool calls",
            attempt.totals.transcript_rows,
            generated.tool_calls
        );
    }
    Ok(attempt)
}

/// Reads `native` and decodes every line into the protocol types, as the bridge's readers do.
pub fn parse_only(native: &Path, backend: Backend) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let file = File::open(native).with_context(|| format!("opening {}", native.display()))?;
    let mut decoded = 0u64;
    for line in BufReader::with_capacity(64 * 1024, file).lines() {
        let line = line?;
        let value: Value = serde_json::from_str(&line).context("a generated line is not JSON")?;
        match backend {
            Backend::Codex => match Message::from_value(value) {
                Ok(Message::Notification(note)) => {
                    let typed = ServerNotification::from_notification(&note.method, note.params);
                    decoded += u64::from(!matches!(typed, ServerNotification::Unknown { .. }));
                    std::hint::black_box(typed);
                }
                Ok(other) => {
                    std::hint::black_box(other);
                }
                Err(error) => anyhow::bail!("a generated line is not JSON-RPC: {error}"),
            },
            Backend::Claude => {
                let typed = CliMessage::from_value(value);
                decoded += u64::from(!matches!(typed, CliMessage::Unknown(_)));
                std::hint::black_box(typed);
            }
        }
    }
    std::hint::black_box(decoded);
    Ok(started.elapsed())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}
