//! Throughput: a generated Codex recording (≥ 200k lines), a Claude one and an ACP agent's one (≥ 100k lines each) through
//! the full path, against the parse-only limit measured in the same run on the same lines.
//!
//! Parse-only reads the peer's lines from a file and decodes each once into the protocol types the
//! way the bridge's readers do (JSON text → `Value` → `jsonrpc::Message` → `codex::ServerNotification`,
//! or → `claude::CliMessage`, or → `acp::SessionNotification`), nothing else. The full path adds everything the bridge does, through
//! the same backend seam and pipeline as the product: a child process and its pipe, framing,
//! JSON-RPC classification and ordering, the adapter's mapping and recorder, serve's pipeline (the
//! `attempt/event` notifications and the transcript's acknowledged appends). Each figure is the
//! median of three runs.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use clawbridge_protocol::acp::{SessionNotification, SessionUpdate};
use clawbridge_protocol::claude::CliMessage;
use clawbridge_protocol::codex::notifications::ServerNotification;
use clawbridge_protocol::jsonrpc::Message;
use serde_json::Value;

use super::generate::{self, Generated};
use super::report::{Report, Row, Target, number};
use super::session::{self, Attempt, HostSide};
use super::{Scenario, Setup, Sizes};

/// The target: the full path at half the parse-only limit or better.
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
    decode: fn(Value) -> anyhow::Result<bool>,
}

/// The streams measured.
const STREAMS: [Stream; 3] = [
    Stream { backend: "codex", generate: generate::codex, lines: |s| s.codex_lines, decode: decode_codex },
    Stream { backend: "claude", generate: generate::claude, lines: |s| s.claude_lines, decode: decode_claude },
    // As many lines as the Claude stream: both are one turn of one session.
    Stream { backend: "acp", generate: generate::acp, lines: |s| s.claude_lines, decode: decode_acp },
];

/// Runs every stream through parse-only and the full path and adds their rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let runs = if ctx.sizes.codex_lines < 100_000 { 1 } else { 3 };
    for stream in &STREAMS {
        let name = stream.backend;
        let generated = (stream.generate)(ctx.work, &format!("throughput-{name}"), (stream.lines)(&ctx.sizes))?;
        let mut parse_times = Vec::new();
        for _ in 0..runs {
            parse_times.push(parse_only(&generated.native, stream.decode)?);
        }
        let mut full = Vec::new();
        for run in 0..runs {
            full.push(full_path(ctx, name, &generated, run).await?);
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
        let forwarded = totals.delivered.notifications;
        let mut events = Row::info(
            Scenario::Throughput,
            format!("{name}: full path, normalized events"),
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
fn parse_only(native: &Path, decode: fn(Value) -> anyhow::Result<bool>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let file = File::open(native).with_context(|| format!("opening {}", native.display()))?;
    let mut decoded = 0u64;
    for line in BufReader::with_capacity(64 * 1024, file).lines() {
        let line = line?;
        let value: Value = serde_json::from_str(&line).context("a generated line is not JSON")?;
        decoded += u64::from(decode(value)?);
    }
    std::hint::black_box(decoded);
    Ok(started.elapsed())
}

/// A Codex peer line: JSON-RPC classification, then the typed notification.
fn decode_codex(value: Value) -> anyhow::Result<bool> {
    match Message::from_value(value) {
        Ok(Message::Notification(note)) => {
            let typed = ServerNotification::from_notification(&note.method, note.params);
            let known = !matches!(typed, ServerNotification::Unknown { .. });
            std::hint::black_box(typed);
            Ok(known)
        }
        Ok(other) => {
            std::hint::black_box(other);
            Ok(false)
        }
        Err(error) => anyhow::bail!("a generated line is not JSON-RPC: {error}"),
    }
}

/// A Claude CLI line: the typed message.
fn decode_claude(value: Value) -> anyhow::Result<bool> {
    let typed = CliMessage::from_value(value);
    let known = !matches!(typed, CliMessage::Unknown(_));
    std::hint::black_box(typed);
    Ok(known)
}

/// An ACP agent line: JSON-RPC classification, then the typed `session/update`.
fn decode_acp(value: Value) -> anyhow::Result<bool> {
    match Message::from_value(value) {
        Ok(Message::Notification(note)) => {
            let typed = SessionNotification::decode(note.params).update;
            let known = !matches!(typed, SessionUpdate::Unknown { .. });
            std::hint::black_box(typed);
            Ok(known)
        }
        Ok(other) => {
            std::hint::black_box(other);
            Ok(false)
        }
        Err(error) => anyhow::bail!("a generated line is not JSON-RPC: {error}"),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}
