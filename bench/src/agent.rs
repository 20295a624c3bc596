//! The roles this binary plays for the benchmarks, as hidden `clawbridge-bench <role>` subcommands:
//! native peers on stdio (each handed to a backend as its executable through a launcher script,
//! `session::peer_program`), and the measured child of the memory scenario.
//!
//! The peers are synchronous and write through one large buffer, so on a 2-core machine they take as
//! little as possible from the bridge they feed:
//!
//! - `replay`: plays a recording (the `fixtures::recording` format). The peer's lines are copied out
//!   of the file as they are (only answers to the client's requests are re-encoded, with the
//!   client's ids, in the peers' member order as the product's player writes them); each client
//!   line must be of the recorded kind (method, or `type`/`subtype`). Unlike
//!   `replay-agent` it does not compare the client's lines field by field: the recordings it plays
//!   are generated, and the bench measures the bridge, not the check. `--version` / `-v` print the
//!   recorded peer version, so it can stand in for `claude` behind a version gate.
//! - `flood`: the Codex handshake from the template recording, then one turn whose command streams
//!   `--bytes` of output.
//! - `paced`: the same handshake, then one turn of assistant text deltas at `--rate` per second, each
//!   stamped with the wall-clock time it was written (`~T<nanos>~`), for the latency scenario.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, StdinLock, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clawbridge_fixtures::recording::{Direction, Entry, Header};
use serde_json::Value;

use super::generate::CodexShapes;
use super::{memory, sys};

/// The marker the paced peer puts before a timestamp.
pub const STAMP_MARK: &[u8] = b"~T";

/// Hidden roles.
#[derive(Debug, clap::Subcommand)]
pub enum Role {
    /// (internal) Play a recording on stdio, fast.
    #[command(hide = true, disable_help_flag = true)]
    Replay {
        /// The recording.
        recording: PathBuf,
        /// The arguments a native launch passes (`app-server`, `-p …`); `--version`/`-v` print the version.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        native_args: Vec<String>,
    },
    /// (internal) A Codex turn whose command streams this much output.
    #[command(hide = true, disable_help_flag = true)]
    Flood {
        /// Bytes of command output.
        #[arg(long)]
        bytes: u64,
        /// Ignored: what a Codex launch passes.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        native_args: Vec<String>,
    },
    /// (internal) A Codex turn of timestamped deltas at a steady rate.
    #[command(hide = true, disable_help_flag = true)]
    Paced {
        /// How many deltas.
        #[arg(long)]
        events: u64,
        /// Deltas per second.
        #[arg(long)]
        rate: u64,
        /// Ignored: what a Codex launch passes.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        native_args: Vec<String>,
    },
    /// (internal) Run one memory scenario in this process and print its figures as JSON.
    #[command(hide = true)]
    Measure(memory::MeasureArgs),
}

/// Plays `role`.
pub async fn play(role: Role) -> anyhow::Result<()> {
    match role {
        Role::Replay { recording, native_args } => replay(&recording, &native_args),
        Role::Flood { bytes, native_args: _ } => scripted(|out, shapes| flood(out, shapes, bytes)),
        Role::Paced { events, rate, native_args: _ } => scripted(|out, shapes| paced(out, shapes, events, rate)),
        Role::Measure(args) => memory::measure(args).await,
    }
}

/// The start of a recording line holding a peer line, as `fixtures::recording` writes it.
const FROM_AGENT_PREFIX: &str = r#"{"dir":"from_agent","json":"#;

/// A peer on stdio: the client's lines in, the peer's lines out (buffered until the peer waits).
struct Player {
    /// The client's lines.
    client: std::io::Lines<StdinLock<'static>>,
    /// The peer's output.
    out: BufWriter<std::io::StdoutLock<'static>>,
    /// Recorded client-chosen ids (as JSON text) → the ids this client used.
    ids: HashMap<String, Value>,
}

impl Player {
    fn new() -> Player {
        Player {
            client: std::io::stdin().lock().lines(),
            out: BufWriter::with_capacity(256 * 1024, std::io::stdout().lock()),
            ids: HashMap::new(),
        }
    }

    /// Waits for the client's next line and checks it is what `recorded` was. `Ok(false)` when the
    /// client closed its output (it went away; so does the peer).
    fn expect(&mut self, recorded: &Value) -> anyhow::Result<bool> {
        self.out.flush()?;
        let Some(Ok(line)) = self.client.next() else {
            return Ok(false);
        };
        let received: Value =
            serde_json::from_str(&line).with_context(|| format!("the client sent a line that is not JSON: {line}"))?;
        let (want, got) = (kind(recorded), kind(&received));
        if want != got {
            bail!("the client deviated from the recording: expected a `{want}` line, received `{got}`: {line}");
        }
        if let (Some(recorded), Some(used)) = (
            clawbridge_bridge::replay::client_request_id(recorded),
            clawbridge_bridge::replay::client_request_id(&received),
        ) {
            self.ids.insert(recorded.to_string(), used.clone());
        }
        Ok(true)
    }

    /// Writes a peer line, answering with the client's own id.
    fn emit(&mut self, line: &Value) -> anyhow::Result<()> {
        let mut line = line.clone();
        if let Some(slot) = answer_id(&mut line) {
            if let Some(used) = self.ids.get(&slot.to_string()) {
                *slot = used.clone();
            }
        }
        serde_json::to_writer(&mut self.out, &clawbridge_bridge::replay::TagsFirst(&line))?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// Writes a peer line that is already JSON text.
    fn emit_text(&mut self, text: &str) -> anyhow::Result<()> {
        if may_answer(text) {
            return self.emit(&serde_json::from_str(text)?);
        }
        self.out.write_all(text.as_bytes())?;
        self.out.write_all(b"\n")?;
        Ok(())
    }

    /// Flushes and waits for the client to close its output, as a daemon does at the end.
    fn finish(mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        for _ in self.client.by_ref() {}
        Ok(())
    }
}

/// What a client line is: its method, its `type` (with the control request's `subtype`), or an answer.
fn kind(line: &Value) -> String {
    if let Some(method) = line.get("method").and_then(Value::as_str) {
        return method.to_string();
    }
    match line.get("type").and_then(Value::as_str) {
        Some("control_request") => {
            format!("control_request/{}", line["request"]["subtype"].as_str().unwrap_or_default())
        }
        Some(kind) => kind.to_string(),
        None if line.get("result").is_some() || line.get("error").is_some() => "answer".into(),
        None => "unknown".into(),
    }
}

/// Where a peer line answering a client request holds the client's id.
fn answer_id(line: &mut Value) -> Option<&mut Value> {
    if line.get("method").is_none() && line.get("id").is_some() {
        line.get_mut("id")
    } else if line.get("type").and_then(Value::as_str) == Some("control_response") {
        line.get_mut("response").and_then(|r| r.get_mut("request_id"))
    } else {
        None
    }
}

/// Whether a peer line's text may be an answer to a client request (then it is re-encoded with the
/// client's id); every other line is copied as it is.
fn may_answer(text: &str) -> bool {
    text.starts_with(r#"{"id":"#) || text.contains(r#""control_response""#)
}

/// The version a native launch asks for with `--version` / `-v`, as that peer prints it.
fn version_line(header: &Header) -> String {
    match header.backend.as_str() {
        "claude" => format!("{} (Claude Code)", header.peer_version),
        _ => format!("codex-cli {}", header.peer_version),
    }
}

fn replay(path: &Path, native_args: &[String]) -> anyhow::Result<()> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let header: Header = serde_json::from_str(&line).context("the recording has no header")?;
    if native_args.iter().any(|a| a == "--version" || a == "-v") {
        println!("{}", version_line(&header));
        return Ok(());
    }
    let mut player = Player::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let text = line.trim_end_matches(['\n', '\r']);
        if text.is_empty() {
            continue;
        }
        if let Some(payload) = text.strip_prefix(FROM_AGENT_PREFIX).and_then(|rest| rest.strip_suffix('}')) {
            player.emit_text(payload)?;
            continue;
        }
        let entry: Entry = serde_json::from_str(text).with_context(|| format!("a damaged recording line: {text}"))?;
        match (entry.dir, &entry.json) {
            (Direction::FromAgent, Some(json)) => player.emit(json)?,
            (Direction::FromAgent, None) => player.emit_text(&entry.to_line())?,
            (Direction::ToAgent, Some(json)) => {
                if !player.expect(json)? {
                    return Ok(());
                }
            }
            (Direction::ToAgent, None) => bail!("the recording expects a non-JSON client line"),
        }
    }
    player.finish()
}

/// The Codex template's handshake and turn start, then `body`, then the turn's end.
fn scripted(body: impl FnOnce(&mut Player, &CodexShapes) -> anyhow::Result<Value>) -> anyhow::Result<()> {
    let shapes = CodexShapes::load()?;
    let mut player = Player::new();
    for entry in &shapes.template.entries[..shapes.prelude] {
        let json = entry.json.as_ref().ok_or_else(|| anyhow!("the template holds a non-JSON line"))?;
        match entry.dir {
            Direction::FromAgent => player.emit(json)?,
            Direction::ToAgent => {
                if !player.expect(json)? {
                    return Ok(());
                }
            }
        }
    }
    let last_message = body(&mut player, &shapes)?;
    player.emit(&shapes.idle)?;
    player.emit(&shapes.turn_end(&last_message))?;
    player.finish()
}

/// One command streaming `bytes` of output in 16 KiB deltas, then a short answer.
fn flood(player: &mut Player, shapes: &CodexShapes, bytes: u64) -> anyhow::Result<Value> {
    const CHUNK_LINES: usize = 200;
    let chunk: String = (0..CHUNK_LINES).map(|i| format!("{i:05} {}\n", "build output ".repeat(6))).collect();
    let call = "call_flood";
    let (started, completed) = shapes.command(call, "/bin/bash -lc 'cat big.log'", &chunk);
    player.emit(&started)?;
    // The peer's cost is not measured: one delta line, encoded once, written again and again.
    let mut delta = serde_json::to_vec(&shapes.output_delta(call, &chunk))?;
    delta.push(b'\n');
    let mut sent = 0u64;
    while sent < bytes {
        player.out.write_all(&delta)?;
        sent += chunk.len() as u64;
    }
    player.emit(&completed)?;
    let (started, completed) = shapes.message("msg_flood", "The log is long; it ends with build output.");
    player.emit(&started)?;
    player.emit(&shapes.text_delta("msg_flood", "The log is long; it ends with build output."))?;
    player.emit(&completed)?;
    Ok(completed)
}

/// `events` assistant deltas, one every 1/`rate` s, each flushed as soon as it is stamped.
fn paced(player: &mut Player, shapes: &CodexShapes, events: u64, rate: u64) -> anyhow::Result<Value> {
    let item = "msg_paced";
    let (started, completed) = shapes.message(item, "paced");
    player.emit(&started)?;
    player.out.flush()?;
    let template = serde_json::to_string(&shapes.text_delta(item, "\u{0}"))?;
    let (before, after) = template.split_once("\\u0000").ok_or_else(|| anyhow!("no placeholder in the delta"))?;
    let interval = Duration::from_nanos(1_000_000_000 / rate.max(1));
    let start = Instant::now();
    for i in 0..events {
        let due = start + interval * i as u32;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let mark = std::str::from_utf8(STAMP_MARK).unwrap_or("~T");
        let line = format!("{before}{mark}{:020}~ {after}\n", sys::wall_nanos());
        player.out.write_all(line.as_bytes())?;
        player.out.flush()?;
    }
    player.emit(&completed)?;
    Ok(completed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn client_lines_are_told_apart_by_kind() {
        assert_eq!(kind(&json!({"id": 1, "method": "turn/start"})), "turn/start");
        assert_eq!(kind(&json!({"id": 0, "result": {}})), "answer");
        assert_eq!(
            kind(&json!({"type": "control_request", "request_id": "r", "request": {"subtype": "initialize"}})),
            "control_request/initialize"
        );
        assert_eq!(kind(&json!({"type": "user", "message": {}})), "user");
    }

    #[test]
    fn only_answers_are_re_encoded() {
        assert!(may_answer(r#"{"id":3,"result":{}}"#));
        assert!(may_answer(r#"{"response":{"request_id":"x"},"type":"control_response"}"#));
        assert!(!may_answer(r#"{"emittedAtMs":0,"method":"item/agentMessage/delta","params":{}}"#));
        let mut answer = json!({"type": "control_response", "response": {"request_id": "req_1_init"}});
        *answer_id(&mut answer).unwrap() = json!("req_9");
        assert_eq!(answer["response"]["request_id"], "req_9");
        let mut request = json!({"id": 0, "method": "item/commandExecution/requestApproval"});
        assert!(answer_id(&mut request).is_none(), "a peer's own request keeps its id");
    }
}
