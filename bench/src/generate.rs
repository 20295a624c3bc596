//! Large recordings made at bench time from the shapes of real ones: the checked-in recordings of
//! codex app-server 0.169.0 and claude 2.1.328 supply the handshake verbatim and one sample of every
//! line kind; the body repeats their turn's items (reasoning, a command with its output, assistant
//! text) with fresh ids and text until the recording is long enough.
//!
//! Each generator writes the recording (the `fixtures::recording` format, which `replay-agent`
//! plays too) and, beside it, the peer's stdout lines alone: what the bridge reads, and what the
//! typed parse limit and the project decoder read.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use clawbridge_fixtures::recording::{Direction, Entry, Header, Recording, TagsFirst};
use serde::Serialize;
use serde_json::{Value, json};

/// A recorded codex app-server 0.169.0 turn that runs one command without asking.
pub const CODEX_TEMPLATE: &str = include_str!("../../fixtures/recordings/codex/command-auto.jsonl");
/// A recorded claude 2.1.328 turn with partial messages (thinking and text, streamed).
pub const CLAUDE_TEMPLATE: &str = include_str!("../../fixtures/recordings/claude/partial-messages.jsonl");
/// A recorded claude 2.1.328 turn that runs Bash (its tool_use and tool_result lines).
pub const CLAUDE_TOOL_TEMPLATE: &str = include_str!("../../fixtures/recordings/claude/bash-allowed.jsonl");

/// Output lines per generated command.
const OUTPUT_CHUNKS: usize = 24;
/// Assistant text deltas per generated message.
const TEXT_DELTAS: usize = 16;
/// Steps the final `result` of a generated Claude turn sums up.
const FINAL_SUMMARY_STEPS: usize = 24;
/// Thinking deltas per generated Claude message.
const THINKING_DELTAS: usize = 8;
/// Words the generated text is made of.
const WORDS: &[&str] = &[
    "the ",
    "build ",
    "passed ",
    "after ",
    "fixing ",
    "three ",
    "failing ",
    "tests ",
    "in ",
    "src/lib.rs ",
    "and ",
    "updating ",
    "the ",
    "snapshot ",
    "files; ",
    "next ",
    "I ",
    "will ",
    "run ",
    "clippy.\n",
];

/// A generated recording and what it holds.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The recording (header + entries).
    pub recording: PathBuf,
    /// The peer's stdout lines alone, one per line.
    pub native: PathBuf,
    /// How many lines the peer writes.
    pub native_lines: u64,
    /// Their bytes, newlines included.
    pub native_bytes: u64,
    /// Lines of the recording (both directions, header excluded).
    pub recording_lines: u64,
    /// Tool calls in the turn (each must reach exactly one terminal).
    pub tool_calls: u64,
}

/// Parses a checked-in template recording.
pub fn template(text: &str) -> anyhow::Result<Recording> {
    Recording::parse(text).map_err(|e| anyhow!("a bundled template recording is damaged: {e}"))
}

/// The first peer line of `recording` that `pick` accepts.
pub fn sample(recording: &Recording, what: &str, pick: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
    recording
        .entries
        .iter()
        .filter(|e| e.dir == Direction::FromAgent)
        .filter_map(|e| e.json.as_ref())
        .find(|v| pick(v))
        .cloned()
        .ok_or_else(|| anyhow!("the template recording has no {what} line"))
}

/// Whether `v` is the Codex notification `method` (about an item of `item_type`, when given).
pub fn codex_is(v: &Value, method: &str, item_type: Option<&str>) -> bool {
    v["method"] == method && item_type.is_none_or(|t| v["params"]["item"]["type"] == t)
}

/// Sets the value at `path` (object keys) inside `v`.
pub fn set(v: &mut Value, path: &[&str], value: Value) {
    let mut at = v;
    for key in path {
        at = &mut at[*key];
    }
    *at = value;
}

/// Text of `n` words, starting at word `from`.
fn words(from: usize, n: usize) -> Vec<&'static str> {
    (0..n).map(|i| WORDS[(from + i) % WORDS.len()]).collect()
}

/// Words per streamed delta, in turn: real peers send a token or two at a time when the model is
/// slow and whole phrases or sentences when it is fast (or when the CLI batches), so the deltas
/// of a generated stream are not all tiny, and not all mergeable into one.
const DELTA_WORDS: &[usize] = &[1, 4, 2, 9, 1, 16, 3, 30, 2, 60];

/// `n` deltas of text whose sizes follow [`DELTA_WORDS`], starting at word `from`.
fn deltas(from: usize, n: usize) -> Vec<String> {
    let mut at = from;
    (0..n)
        .map(|i| {
            let count = DELTA_WORDS[(from + i) % DELTA_WORDS.len()];
            let text = words(at, count).concat();
            at += count;
            text
        })
        .collect()
}

/// Lines of command output in one streamed output chunk, in turn: a chunk is what the peer read
/// from the command's pipe at once, one line to a screenful.
const OUTPUT_LINES: &[usize] = &[1, 2, 6, 1, 3, 1, 12, 2];

/// Writes a recording and its native stream side by side.
struct Writer {
    /// The recording.
    recording: BufWriter<File>,
    /// The peer's stdout alone.
    native: BufWriter<File>,
    /// What has been written.
    generated: Generated,
}

/// A recording entry as written (field order as `fixtures::recording::Entry` serialises), its line
/// in the peers' member order, so the bench's peer, which copies a line's text out of the
/// recording, writes what the player writes.
#[derive(Serialize)]
struct EntryRef<'a> {
    dir: Direction,
    json: TagsFirst<'a>,
}

impl Writer {
    fn create(dir: &Path, name: &str, header: &Header) -> anyhow::Result<Writer> {
        let recording = dir.join(format!("{name}.jsonl"));
        let native = dir.join(format!("{name}.native.jsonl"));
        let open = |p: &Path| File::create(p).with_context(|| format!("creating {}", p.display()));
        let mut writer = Writer {
            recording: BufWriter::with_capacity(1 << 20, open(&recording)?),
            native: BufWriter::with_capacity(1 << 20, open(&native)?),
            generated: Generated {
                recording,
                native,
                native_lines: 0,
                native_bytes: 0,
                recording_lines: 0,
                tool_calls: 0,
            },
        };
        serde_json::to_writer(&mut writer.recording, header)?;
        writer.recording.write_all(b"\n")?;
        Ok(writer)
    }

    fn entry(&mut self, dir: Direction, json: &Value) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.recording, &EntryRef { dir, json: TagsFirst(json) })?;
        self.recording.write_all(b"\n")?;
        self.generated.recording_lines += 1;
        if dir == Direction::FromAgent {
            // As the player writes it (the peers' member order), so the native file is what the
            // bridge reads from the replayed peer.
            let line = clawbridge_fixtures::recording::line_text(json);
            self.native.write_all(line.as_bytes())?;
            self.native.write_all(b"\n")?;
            self.generated.native_lines += 1;
            self.generated.native_bytes += line.len() as u64 + 1;
        }
        Ok(())
    }

    fn peer(&mut self, json: &Value) -> anyhow::Result<()> {
        self.entry(Direction::FromAgent, json)
    }

    fn copy(&mut self, entry: &Entry) -> anyhow::Result<()> {
        match &entry.json {
            Some(json) => self.entry(entry.dir, json),
            None => Err(anyhow!("the template holds a non-JSON line")),
        }
    }

    fn finish(mut self) -> anyhow::Result<Generated> {
        self.recording.flush()?;
        self.native.flush()?;
        Ok(self.generated)
    }
}

/// The shapes of one Codex turn's lines, from the template.
pub struct CodexShapes {
    /// The template, whose handshake is replayed verbatim.
    pub template: Recording,
    /// How many template entries form the handshake and turn start (up to the user message item).
    pub prelude: usize,
    reasoning_started: Value,
    reasoning_part: Value,
    reasoning_delta: Value,
    reasoning_completed: Value,
    /// `item/started` of a command.
    pub command_started: Value,
    /// `item/completed` of a command.
    pub command_completed: Value,
    token_usage: Value,
    /// `item/started` of an assistant message.
    pub message_started: Value,
    /// `item/agentMessage/delta`.
    pub message_delta: Value,
    /// `item/completed` of an assistant message.
    pub message_completed: Value,
    /// `thread/status/changed` to idle.
    pub idle: Value,
    /// `turn/completed`.
    pub turn_completed: Value,
}

impl CodexShapes {
    /// Reads the shapes from the bundled template.
    pub fn load() -> anyhow::Result<CodexShapes> {
        let template = template(CODEX_TEMPLATE)?;
        let prelude = template
            .entries
            .iter()
            .position(|e| e.json.as_ref().is_some_and(|v| codex_is(v, "item/started", Some("reasoning"))))
            .ok_or_else(|| anyhow!("the codex template has no reasoning item"))?;
        let s = |what: &str, pick: &dyn Fn(&Value) -> bool| sample(&template, what, pick);
        Ok(CodexShapes {
            reasoning_started: s("reasoning start", &|v| codex_is(v, "item/started", Some("reasoning")))?,
            reasoning_part: s("summary part", &|v| codex_is(v, "item/reasoning/summaryPartAdded", None))?,
            reasoning_delta: s("summary delta", &|v| codex_is(v, "item/reasoning/summaryTextDelta", None))?,
            reasoning_completed: s("reasoning end", &|v| codex_is(v, "item/completed", Some("reasoning")))?,
            command_started: s("command start", &|v| codex_is(v, "item/started", Some("commandExecution")))?,
            command_completed: s("command end", &|v| codex_is(v, "item/completed", Some("commandExecution")))?,
            token_usage: s("token usage", &|v| codex_is(v, "thread/tokenUsage/updated", None))?,
            message_started: s("message start", &|v| codex_is(v, "item/started", Some("agentMessage")))?,
            message_delta: s("message delta", &|v| codex_is(v, "item/agentMessage/delta", None))?,
            message_completed: s("message end", &|v| codex_is(v, "item/completed", Some("agentMessage")))?,
            idle: s("idle status", &|v| {
                v["method"] == "thread/status/changed" && v["params"]["status"]["type"] == "idle"
            })?,
            turn_completed: s("turn end", &|v| codex_is(v, "turn/completed", None))?,
            template,
            prelude,
        })
    }

    /// A command's output delta (Codex streams output as `item/commandExecution/outputDelta`,
    /// shaped like the other item deltas).
    pub fn output_delta(&self, call_id: &str, text: &str) -> Value {
        let mut v = self.message_delta.clone();
        v["method"] = json!("item/commandExecution/outputDelta");
        set(&mut v, &["params", "itemId"], json!(call_id));
        set(&mut v, &["params", "delta"], json!(text));
        v
    }

    /// An assistant message's delta.
    pub fn text_delta(&self, item_id: &str, text: &str) -> Value {
        let mut v = self.message_delta.clone();
        set(&mut v, &["params", "itemId"], json!(item_id));
        set(&mut v, &["params", "delta"], json!(text));
        v
    }

    /// `item/started` / `item/completed` of assistant message `item_id` with `text`.
    pub fn message(&self, item_id: &str, text: &str) -> (Value, Value) {
        let mut started = self.message_started.clone();
        set(&mut started, &["params", "item", "id"], json!(item_id));
        let mut completed = self.message_completed.clone();
        set(&mut completed, &["params", "item", "id"], json!(item_id));
        set(&mut completed, &["params", "item", "text"], json!(text));
        (started, completed)
    }

    /// `item/started` / `item/completed` of command `call_id` whose whole output is `output`.
    pub fn command(&self, call_id: &str, command: &str, output: &str) -> (Value, Value) {
        let mut started = self.command_started.clone();
        set(&mut started, &["params", "item", "id"], json!(call_id));
        set(&mut started, &["params", "item", "command"], json!(command));
        let mut completed = self.command_completed.clone();
        set(&mut completed, &["params", "item", "id"], json!(call_id));
        set(&mut completed, &["params", "item", "command"], json!(command));
        set(&mut completed, &["params", "item", "aggregatedOutput"], json!(output));
        (started, completed)
    }

    /// `turn/completed` naming `last_message` as the turn's summary item.
    pub fn turn_end(&self, last_message: &Value) -> Value {
        let mut v = self.turn_completed.clone();
        set(&mut v, &["params", "turn", "items"], json!([last_message["params"]["item"].clone()]));
        v
    }
}

/// Generates a Codex recording of at least `min_lines` lines: the template's handshake and turn
/// start, then blocks of reasoning, a command with its streamed output, token usage and an
/// assistant message, then the turn's end.
pub fn codex(dir: &Path, name: &str, min_lines: usize) -> anyhow::Result<Generated> {
    let shapes = CodexShapes::load()?;
    let header = Header { scenario: format!("bench-{min_lines}"), ..shapes.template.header.clone() };
    let mut w = Writer::create(dir, name, &header)?;
    for entry in &shapes.template.entries[..shapes.prelude] {
        w.copy(entry)?;
    }
    let mut block = 0usize;
    let mut last_message = Value::Null;
    while (w.generated.recording_lines as usize) < min_lines.saturating_sub(2) {
        block += 1;
        let rs = format!("rs_{block}");
        let mut v = shapes.reasoning_started.clone();
        set(&mut v, &["params", "item", "id"], json!(rs));
        w.peer(&v)?;
        let mut v = shapes.reasoning_part.clone();
        set(&mut v, &["params", "itemId"], json!(rs));
        w.peer(&v)?;
        let thought = deltas(block, 6);
        for word in &thought {
            let mut v = shapes.reasoning_delta.clone();
            set(&mut v, &["params", "itemId"], json!(rs));
            set(&mut v, &["params", "delta"], json!(word));
            w.peer(&v)?;
        }
        let mut v = shapes.reasoning_completed.clone();
        set(&mut v, &["params", "item", "id"], json!(rs));
        set(&mut v, &["params", "item", "summary"], json!([thought.concat()]));
        w.peer(&v)?;

        let call = format!("call_{block}");
        let command = format!("/bin/bash -lc 'cargo test --package step-{block}'");
        let chunks: Vec<String> = (0..OUTPUT_CHUNKS)
            .map(|i| {
                (0..OUTPUT_LINES[(block + i) % OUTPUT_LINES.len()])
                    .map(|l| {
                        format!(
                            "test step_{block}::case_{i:03}_{l:02} ... ok ({} ms) {}\n",
                            (block * 7 + i + l) % 97,
                            words(i + l, 8).concat().trim_end()
                        )
                    })
                    .collect()
            })
            .collect();
        let (started, completed) = shapes.command(&call, &command, &chunks.concat());
        w.peer(&started)?;
        for chunk in &chunks {
            w.peer(&shapes.output_delta(&call, chunk))?;
        }
        w.peer(&completed)?;
        w.generated.tool_calls += 1;
        w.peer(&shapes.token_usage)?;

        let msg = format!("msg_{block}");
        let text = deltas(block, TEXT_DELTAS);
        let (started, completed) = shapes.message(&msg, &text.concat());
        w.peer(&started)?;
        for word in &text {
            w.peer(&shapes.text_delta(&msg, word))?;
        }
        w.peer(&completed)?;
        last_message = completed;
    }
    w.peer(&shapes.idle)?;
    w.peer(&shapes.turn_end(&last_message))?;
    w.finish()
}

/// The shapes of one Claude turn's lines, from the templates.
struct ClaudeShapes {
    /// The partial-messages template: handshake, user line, `system/init`, stream events, result.
    template: Recording,
    /// Template entries up to and including `system/init`.
    prelude: usize,
    status: Value,
    message_start: Value,
    thinking_start: Value,
    thinking_tokens: Value,
    thinking_delta: Value,
    signature_delta: Value,
    assistant_thinking: Value,
    block_stop: Value,
    text_start: Value,
    text_delta: Value,
    assistant_text: Value,
    assistant_tool_use: Value,
    tool_result: Value,
    message_delta: Value,
    message_stop: Value,
    result: Value,
}

fn claude_event_is(v: &Value, event: &str) -> bool {
    v["type"] == "stream_event" && v["event"]["type"] == event
}

fn claude_block_is(v: &Value, block: &str) -> bool {
    v["type"] == "assistant" && v["message"]["content"][0]["type"] == block
}

impl ClaudeShapes {
    fn load() -> anyhow::Result<ClaudeShapes> {
        let template = template(CLAUDE_TEMPLATE)?;
        let tools = self::template(CLAUDE_TOOL_TEMPLATE)?;
        let prelude = template
            .entries
            .iter()
            .position(|e| e.json.as_ref().is_some_and(|v| v["type"] == "system" && v["subtype"] == "init"))
            .ok_or_else(|| anyhow!("the claude template has no system/init line"))?
            + 1;
        let s = |what: &str, pick: &dyn Fn(&Value) -> bool| sample(&template, what, pick);
        Ok(ClaudeShapes {
            status: s("status", &|v| v["type"] == "system" && v["subtype"] == "status")?,
            message_start: s("message_start", &|v| claude_event_is(v, "message_start"))?,
            thinking_start: s("thinking start", &|v| {
                claude_event_is(v, "content_block_start") && v["event"]["content_block"]["type"] == "thinking"
            })?,
            thinking_tokens: s("thinking tokens", &|v| v["type"] == "system" && v["subtype"] == "thinking_tokens")?,
            thinking_delta: s("thinking delta", &|v| {
                claude_event_is(v, "content_block_delta") && v["event"]["delta"]["type"] == "thinking_delta"
            })?,
            signature_delta: s("signature delta", &|v| {
                claude_event_is(v, "content_block_delta") && v["event"]["delta"]["type"] == "signature_delta"
            })?,
            assistant_thinking: s("assistant thinking", &|v| claude_block_is(v, "thinking"))?,
            block_stop: s("block stop", &|v| claude_event_is(v, "content_block_stop"))?,
            text_start: s("text start", &|v| {
                claude_event_is(v, "content_block_start") && v["event"]["content_block"]["type"] == "text"
            })?,
            text_delta: s("text delta", &|v| {
                claude_event_is(v, "content_block_delta") && v["event"]["delta"]["type"] == "text_delta"
            })?,
            assistant_text: s("assistant text", &|v| claude_block_is(v, "text"))?,
            assistant_tool_use: sample(&tools, "tool_use", |v| claude_block_is(v, "tool_use"))?,
            tool_result: sample(&tools, "tool_result", |v| v["type"] == "user")?,
            message_delta: s("message_delta", &|v| claude_event_is(v, "message_delta"))?,
            message_stop: s("message_stop", &|v| claude_event_is(v, "message_stop"))?,
            result: s("result", &|v| v["type"] == "result")?,
            template,
            prelude,
        })
    }
}

/// Generates a Claude recording of at least `min_lines` lines: the template's handshake, user line
/// and `system/init`, then messages (streamed thinking and text, a Bash call and its result), then the
/// turn's `result`. The CLI asks no permission in it (as with `--allowedTools Bash`), so any client
/// that sends `initialize` and one user line can consume it.
pub fn claude(dir: &Path, name: &str, min_lines: usize) -> anyhow::Result<Generated> {
    let shapes = ClaudeShapes::load()?;
    let header = Header { scenario: format!("bench-{min_lines}"), ..shapes.template.header.clone() };
    let mut w = Writer::create(dir, name, &header)?;
    for entry in &shapes.template.entries[..shapes.prelude] {
        w.copy(entry)?;
    }
    let mut uuid = 0u64;
    let mut next_uuid = || {
        uuid += 1;
        json!(format!("00000000-0000-4000-8000-{uuid:012}"))
    };
    let mut block = 0usize;
    // The turn's final answer sums up its last steps, as a real multi-step turn's does: the
    // `result` line is the longest line of a Claude turn.
    let mut summary: Vec<String> = Vec::new();
    while (w.generated.recording_lines as usize) < min_lines.saturating_sub(1) {
        block += 1;
        let message_id = json!(format!("msg_bench_{block}"));
        let stamp = |mut v: Value, uuid: Value| {
            if v["type"] == "stream_event" {
                v["api_message_id"] = message_id.clone();
            }
            v["uuid"] = uuid;
            v
        };
        w.peer(&stamp(shapes.status.clone(), next_uuid()))?;
        let mut v = shapes.message_start.clone();
        set(&mut v, &["event", "message", "id"], message_id.clone());
        w.peer(&stamp(v, next_uuid()))?;

        w.peer(&stamp(shapes.thinking_start.clone(), next_uuid()))?;
        let thought = deltas(block, THINKING_DELTAS);
        for word in &thought {
            w.peer(&stamp(shapes.thinking_tokens.clone(), next_uuid()))?;
            let mut v = shapes.thinking_delta.clone();
            set(&mut v, &["event", "delta", "thinking"], json!(word));
            w.peer(&stamp(v, next_uuid()))?;
        }
        w.peer(&stamp(shapes.signature_delta.clone(), next_uuid()))?;
        let mut v = shapes.assistant_thinking.clone();
        set(&mut v, &["message", "id"], message_id.clone());
        v["message"]["content"][0]["thinking"] = json!(thought.concat());
        w.peer(&stamp(v, next_uuid()))?;
        w.peer(&stamp(shapes.block_stop.clone(), next_uuid()))?;

        let mut v = shapes.text_start.clone();
        v["event"]["index"] = json!(1);
        w.peer(&stamp(v, next_uuid()))?;
        let text = deltas(block + 3, TEXT_DELTAS);
        for word in &text {
            let mut v = shapes.text_delta.clone();
            v["event"]["delta"]["text"] = json!(word);
            w.peer(&stamp(v, next_uuid()))?;
        }
        let mut v = shapes.assistant_text.clone();
        v["message"]["id"] = message_id.clone();
        v["message"]["content"][0]["text"] = json!(text.concat());
        w.peer(&stamp(v, next_uuid()))?;
        let mut v = shapes.block_stop.clone();
        v["event"]["index"] = json!(1);
        w.peer(&stamp(v, next_uuid()))?;

        let tool_id = json!(format!("toolu_bench_{block}"));
        let command = format!("cargo test --package step-{block}");
        let mut v = shapes.assistant_tool_use.clone();
        v["message"]["id"] = message_id.clone();
        v["message"]["content"][0]["id"] = tool_id.clone();
        v["message"]["content"][0]["input"]["command"] = json!(command);
        v["session_id"] = shapes.result["session_id"].clone();
        w.peer(&stamp(v, next_uuid()))?;
        w.peer(&stamp(shapes.message_delta.clone(), next_uuid()))?;
        w.peer(&stamp(shapes.message_stop.clone(), next_uuid()))?;

        let output: String = (0..OUTPUT_LINES[block % OUTPUT_LINES.len()] * 4)
            .map(|i| format!("test step_{block}::case_{i:03} ... ok ({} ms)\n", (block * 7 + i) % 97))
            .collect::<String>()
            .trim_end()
            .to_string();
        let mut v = shapes.tool_result.clone();
        v["message"]["content"][0]["tool_use_id"] = tool_id.clone();
        v["message"]["content"][0]["content"] = json!(output);
        v["tool_use_result"]["stdout"] = json!(output);
        v["tool_result_meta"][0]["id"] = tool_id;
        v["session_id"] = shapes.result["session_id"].clone();
        w.peer(&stamp(v, next_uuid()))?;
        w.generated.tool_calls += 1;
        summary.push(format!("step {block}: {}", text.concat().trim_end()));
        if summary.len() > FINAL_SUMMARY_STEPS {
            summary.remove(0);
        }
    }
    let mut result = shapes.result.clone();
    result["result"] = json!(summary.join("\n"));
    result["num_turns"] = json!(block);
    w.peer(&result)?;
    w.finish()
}

/// The session id of a generated ACP recording.
const ACP_SESSION: &str = "bench-acp-session";

/// One ACP `session/update` notification of the generated session.
fn acp_update(update: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": ACP_SESSION, "update": update}})
}

/// Generates an ACP agent's recording of at least `min_lines` lines: the handshake and
/// `session/new`, then one `session/prompt` answered by blocks of a thought, a command (a
/// `tool_call`, output that grows in `tool_call_update`s as codex-acp sends it, its completion) and
/// a streamed message, then `end_turn`. No real ACP agent's recording is checked in yet, so the
/// shapes are the protocol's (docs/peers/acp.md).
pub fn acp(dir: &Path, name: &str, min_lines: usize) -> anyhow::Result<Generated> {
    let header = Header {
        clawbridge_recording: clawbridge_fixtures::recording::FORMAT_VERSION,
        backend: "acp".into(),
        peer_version: "0.1.0".into(),
        scenario: format!("bench-{min_lines}"),
    };
    let mut w = Writer::create(dir, name, &header)?;
    let client = |id: u64, method: &str| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}});
    w.entry(Direction::ToAgent, &client(1, "initialize"))?;
    w.peer(&json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentCapabilities": {},
        "agentInfo": {"name": "bench-acp", "version": "0.1.0"}, "authMethods": []}}))?;
    w.entry(Direction::ToAgent, &client(2, "session/new"))?;
    w.peer(&json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": ACP_SESSION}}))?;
    w.entry(Direction::ToAgent, &client(3, "session/prompt"))?;
    let mut block = 0usize;
    while (w.generated.recording_lines as usize) < min_lines.saturating_sub(2) {
        block += 1;
        for word in deltas(block, 6) {
            let chunk = json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": word}});
            w.peer(&acp_update(chunk))?;
        }
        let call = format!("call_{block}");
        let command = format!("cargo test --package step-{block}");
        w.peer(&acp_update(json!({"sessionUpdate": "tool_call", "toolCallId": call, "title": command,
            "kind": "execute", "status": "in_progress", "rawInput": {"command": command}})))?;
        let mut output = String::new();
        for i in 0..OUTPUT_CHUNKS {
            output.push_str(&format!("test step_{block}::case_{i:03} ... ok {}\n", words(i, 8).concat().trim_end()));
            let content = json!([{"type": "content", "content": {"type": "text", "text": output}}]);
            w.peer(&acp_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "content": content})))?;
        }
        w.peer(&acp_update(json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
            "rawOutput": {"exit_code": 0}})))?;
        w.generated.tool_calls += 1;
        for word in deltas(block, TEXT_DELTAS) {
            let chunk = json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word}});
            w.peer(&acp_update(chunk))?;
        }
    }
    w.peer(&json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}))?;
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn a_codex_recording_has_the_asked_length_and_a_well_formed_turn() {
        let dir = tempfile::tempdir().unwrap();
        let made = codex(dir.path(), "codex", 600).unwrap();
        let recording = Recording::load(&made.recording).unwrap();
        assert!(recording.entries.len() >= 600, "{}", recording.entries.len());
        assert_eq!(made.recording_lines as usize, recording.entries.len());
        let native = lines(&made.native);
        assert_eq!(native.len() as u64, made.native_lines);
        assert_eq!(std::fs::metadata(&made.native).unwrap().len(), made.native_bytes);
        let starts = native.iter().filter(|v| codex_is(v, "item/started", Some("commandExecution"))).count();
        let ends = native.iter().filter(|v| codex_is(v, "item/completed", Some("commandExecution"))).count();
        assert_eq!((starts as u64, ends as u64), (made.tool_calls, made.tool_calls));
        assert!(native.iter().any(|v| v["method"] == "item/commandExecution/outputDelta"));
        assert_eq!(native.last().unwrap()["method"], "turn/completed");
        // The client's lines are the template's handshake and turn start, nothing more.
        let client: Vec<_> =
            recording.client_lines().filter_map(|e| e.json.as_ref()).map(|v| v["method"].clone()).collect();
        assert_eq!(client, [json!("initialize"), json!("initialized"), json!("thread/start"), json!("turn/start")]);
    }

    /// The strict replayer (`replay-agent`'s) accepts the recording's own client lines and plays
    /// exactly the native stream written beside it: the recording is self-consistent.
    #[test]
    fn the_strict_replayer_plays_each_recording_as_its_native_stream() {
        use clawbridge_fixtures::recording::{ReplayOptions, replay};
        let dir = tempfile::tempdir().unwrap();
        for made in [codex(dir.path(), "codex", 300).unwrap(), claude(dir.path(), "claude", 200).unwrap()] {
            let recording = Recording::load(&made.recording).unwrap();
            let client: String = recording.client_lines().map(|e| e.to_line() + "\n").collect();
            let mut out = Vec::new();
            replay(&recording, client.as_bytes(), &mut out, &ReplayOptions::default()).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), std::fs::read_to_string(&made.native).unwrap());
        }
    }

    #[test]
    fn a_claude_recording_has_the_asked_length_and_ends_with_one_result() {
        let dir = tempfile::tempdir().unwrap();
        let made = claude(dir.path(), "claude", 300).unwrap();
        let recording = Recording::load(&made.recording).unwrap();
        assert!(recording.entries.len() >= 300);
        let native = lines(&made.native);
        assert_eq!(native.iter().filter(|v| v["type"] == "result").count(), 1);
        assert_eq!(native.last().unwrap()["type"], "result");
        let uses = native.iter().filter(|v| claude_block_is(v, "tool_use")).count() as u64;
        let results = native.iter().filter(|v| v["type"] == "user").count() as u64;
        assert_eq!((uses, results), (made.tool_calls, made.tool_calls));
        let thinking = native.iter().find(|v| claude_block_is(v, "thinking")).unwrap();
        assert!(thinking["message"]["content"].is_array(), "{thinking}");
        assert!(thinking["message"]["content"][0]["thinking"].as_str().unwrap().len() > 10);
    }
}
