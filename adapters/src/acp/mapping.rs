//! ACP `session/update`s → normalized events, for one turn (pure: no I/O).
//!
//! - `TurnStarted` comes first, nothing follows `TurnTerminal`.
//! - Message and thought chunks stream as deltas of one item until something else starts (a tool, a
//!   plan step does not count, the other kind of text, another `messageId`); the item then gets its
//!   final text.
//! - Tool calls are keyed by `toolCallId`: `tool_call` (or a first `tool_call_update` for an id never
//!   announced) starts one, `completed`/`failed` finishes it, exactly once. A call the host declined
//!   ends `declined` with `executionStarted: false`. Calls still open when the turn ends get a
//!   terminal of their own (cancelled after a cancel, else failed), so the host sees every call end.
//! - The `session/prompt` answer's `stopReason` is the turn's terminal.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use clawbridge_bridge::events::{
    CappedText, DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES, Event, NativeMutation, Plan, PlanStep, PlanStepStatus,
    TerminalKind, ToolCall, ToolFinish, ToolOutcome, TurnTerminal, Usage,
};
use clawbridge_protocol::acp::{
    ContentChunk, PromptResponse, SessionUpdate, StopReason, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use serde_json::{Value, json};

/// Most bytes of one assistant or reasoning item kept for its final text (head, then tail).
const TEXT_HEAD_BYTES: usize = 4 * 1024 * 1024;
/// Most bytes kept from the end of one assistant or reasoning item.
const TEXT_TAIL_BYTES: usize = 1024 * 1024;
/// Past this much of a tool's content text, no more output deltas are derived from it (the final
/// output still carries its head and tail).
const TOOL_DELTA_BYTES: usize = 1024 * 1024;

const MUTATING: NativeMutation = NativeMutation { mutating_action: true, replay_safe: false };
const READ_ONLY: NativeMutation = NativeMutation { mutating_action: false, replay_safe: true };

/// Tool call ids whose permission the host refused, each with why, shared by the request handler
/// (which writes) and the turn's mapper (which reads when the call ends).
pub type Declined = Arc<Mutex<HashMap<String, String>>>;

/// The failure of a turn the agent ended `cancelled` on its own after the host declined a call.
pub const STOPPED_AFTER_DECLINE: &str =
    "the agent stopped after a declined permission request (stopReason cancelled, no cancel from the host)";

/// Why a call was declined when the host (the approver) said no.
pub const HOST_DECLINED: &str = "the host declined the permission request";

/// The calls the agent asked the host about this turn, in order, shared like [`Declined`]. Two real
/// agents need it: codex-acp announces a call that needs approval only inside its permission
/// request (no `tool_call` before it, and none at all when the host refuses), and claude-agent-acp
/// never reports an approved call `in_progress` (docs/peers/acp.md).
pub type Asked = Arc<Mutex<Vec<AskedCall>>>;

/// Most calls one turn remembers in [`Asked`]; later ones still get the host's answer (and
/// [`Declined`]), only not a terminal of their own if the agent never reports them.
pub const MAX_ASKED: usize = 4096;

/// Most tool calls one turn tracks (open and finished together); a call beyond it is logged once
/// and not reported, so an agent announcing calls without end cannot grow the bridge's memory.
pub const MAX_TOOLS_PER_TURN: usize = 4096;

/// One permission request of the turn.
#[derive(Clone, Debug)]
pub struct AskedCall {
    /// The call as the request described it.
    pub update: ToolCallUpdate,
    /// Whether the host let it run.
    pub allowed: bool,
}

/// The OpenClaw tool name for an ACP tool kind, so the host's policy and summaries see one vocabulary.
pub fn canonical_tool_name(kind: Option<&ToolKind>) -> &'static str {
    match kind {
        Some(ToolKind::Read) => "read",
        Some(ToolKind::Edit) => "edit",
        Some(ToolKind::Delete) => "delete",
        Some(ToolKind::Move) => "move",
        Some(ToolKind::Search) => "search",
        Some(ToolKind::Execute) => "exec",
        Some(ToolKind::Think) => "think",
        Some(ToolKind::Fetch) => "web_fetch",
        Some(ToolKind::SwitchMode) => "switch_mode",
        Some(ToolKind::Other | ToolKind::Unknown(_)) | None => "tool",
    }
}

/// Whether a tool of `kind` may change state (unknown kinds are assumed to).
fn mutation(kind: Option<&ToolKind>) -> NativeMutation {
    match kind {
        Some(ToolKind::Read | ToolKind::Search | ToolKind::Think | ToolKind::Fetch) => READ_ONLY,
        _ => MUTATING,
    }
}

/// The arguments a call shows: its raw input, else its title. A `command` given as an argv array
/// (codex-acp's `["/bin/bash", "-lc", "…"]`) becomes one shell-quoted line, the string the host's
/// views and approval prompts read `command` as.
fn arguments(update: &ToolCallUpdate, title: Option<&str>) -> Value {
    match (&update.raw_input, title) {
        (Some(input), _) => {
            let mut input = input.clone();
            if let Some(command) = input.get_mut("command")
                && let Some(line) = argv_line(command)
            {
                *command = Value::String(line);
            }
            input
        }
        (None, Some(title)) => json!({ "title": title }),
        (None, None) => Value::Null,
    }
}

/// `argv` as one shell-quoted line, when it is an array of strings (anything else is left as sent).
fn argv_line(argv: &Value) -> Option<String> {
    let words = argv.as_array()?.iter().map(Value::as_str).collect::<Option<Vec<_>>>()?;
    Some(shell_words::join(words))
}

/// The name the agent knows the bridge's MCP server by (claude-agent-acp calls its tools
/// `mcp__clawbridge__<tool>`). The bridge offers no other server, so a call on a server of this name
/// is a call of one of the host's tools.
pub const MCP_SERVER_NAME: &str = "clawbridge";

/// The host tool and its arguments, when `update` is a call of one through the bridge's MCP server:
/// claude-agent-acp titles it `mcp__clawbridge__<tool>` with the tool's own arguments as raw input;
/// codex-acp sends `{"server":"clawbridge","tool":…,"arguments":…}` as raw input.
fn host_tool(update: &ToolCallUpdate) -> Option<(String, Value)> {
    let prefix = format!("mcp__{MCP_SERVER_NAME}__");
    if let Some(tool) = update.title.as_deref().and_then(|title| title.strip_prefix(prefix.as_str()))
        && !tool.is_empty()
    {
        return Some((tool.to_owned(), update.raw_input.clone().unwrap_or(Value::Null)));
    }
    let input = update.raw_input.as_ref()?.as_object()?;
    if input.get("server").and_then(Value::as_str) != Some(MCP_SERVER_NAME) {
        return None;
    }
    let tool = input.get("tool").and_then(Value::as_str).filter(|tool| !tool.is_empty())?;
    Some((tool.to_owned(), input.get("arguments").cloned().unwrap_or(Value::Null)))
}

/// The tool call an update describes, as the host sees it. A host tool keeps its own name and the
/// model's arguments and carries no native facts (the host has its own metadata for its tools), as
/// the other backends report their host tools.
pub fn tool_call(update: &ToolCallUpdate) -> ToolCall {
    if let Some((tool_name, arguments)) = host_tool(update) {
        return ToolCall {
            call_id: update.tool_call_id.clone(),
            tool_name,
            arguments,
            native: false,
            native_mutation: None,
        };
    }
    ToolCall {
        call_id: update.tool_call_id.clone(),
        tool_name: canonical_tool_name(update.kind.as_ref()).to_owned(),
        arguments: arguments(update, update.title.as_deref()),
        native: true,
        native_mutation: Some(mutation(update.kind.as_ref())),
    }
}

/// Which kind of text item is streaming.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextKind {
    Assistant,
    Reasoning,
}

/// The text item being streamed.
#[derive(Debug)]
struct OpenText {
    kind: TextKind,
    item_id: String,
    /// The agent's `messageId`, when it numbers messages.
    message_id: Option<String>,
    text: CappedText,
}

/// A tool call that has not ended.
#[derive(Debug)]
struct OpenTool {
    kind: Option<ToolKind>,
    title: Option<String>,
    raw_input: Option<Value>,
    raw_output: Option<Value>,
    /// The newest content text (each update replaces it), for the final output.
    content: Option<String>,
    /// Whether the agent said it runs (`in_progress`), or it ended: for `executionStarted`.
    ran: bool,
    /// Its place in the turn's start order (its key in `TurnMapper::order`).
    seq: u64,
}

impl OpenTool {
    fn call(&self, call_id: &str) -> ToolCall {
        let update = ToolCallUpdate {
            tool_call_id: call_id.to_owned(),
            title: self.title.clone(),
            kind: self.kind.clone(),
            raw_input: self.raw_input.clone(),
            ..ToolCallUpdate::default()
        };
        tool_call(&update)
    }
}

/// Maps one ACP turn's updates to normalized events.
#[derive(Debug)]
pub struct TurnMapper {
    turn_id: String,
    announced: bool,
    terminated: bool,
    /// The host cancelled the turn (a `cancelled` stop reason then answers it).
    host_cancelled: bool,
    text: Option<OpenText>,
    items: u32,
    tools: HashMap<String, OpenTool>,
    /// Open tool ids by start order (their closing order at the turn's end), removable by key.
    order: BTreeMap<u64, String>,
    /// The next call's start-order key.
    next_seq: u64,
    /// A call beyond [`MAX_TOOLS_PER_TURN`] was dropped (logged once).
    dropped_tools: bool,
    finished: HashSet<String>,
    declined: Declined,
    /// The turn's permission requests (empty unless [`with_asked`](Self::with_asked) shares them).
    asked: Asked,
    /// Update kinds already logged as not mapped, so each is logged once per turn.
    logged: HashSet<String>,
}

impl TurnMapper {
    /// A mapper for the turn `turn_id`; `declined` names the calls the host refused.
    pub fn new(turn_id: impl Into<String>, declined: Declined) -> Self {
        TurnMapper {
            turn_id: turn_id.into(),
            announced: false,
            terminated: false,
            host_cancelled: false,
            text: None,
            items: 0,
            tools: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
            dropped_tools: false,
            finished: HashSet::new(),
            declined,
            asked: Asked::default(),
            logged: HashSet::new(),
        }
    }

    /// This mapper reading the turn's permission requests from `asked` (the request handler's).
    #[must_use]
    pub fn with_asked(mut self, asked: Asked) -> Self {
        self.asked = asked;
        self
    }

    /// Whether the host allowed a permission request for `id`: an approved call may have run even
    /// when the agent never said `in_progress`.
    fn approved(&self, id: &str) -> bool {
        self.asked.lock().is_ok_and(|asked| asked.iter().any(|c| c.allowed && c.update.tool_call_id == id))
    }

    /// Opens every call the agent asked about but never reported, so the turn's end gives it its one
    /// terminal (declined: never started; allowed: may have run).
    fn open_unannounced(&mut self, out: &mut Vec<Event>) {
        let asked: Vec<AskedCall> = self.asked.lock().map(|asked| asked.clone()).unwrap_or_default();
        for call in asked {
            let id = call.update.tool_call_id.clone();
            if self.tools.contains_key(&id) || self.finished.contains(&id) {
                continue;
            }
            if !self.make_room() {
                break;
            }
            out.push(Event::ToolStarted(tool_call(&call.update)));
            let tool = OpenTool {
                kind: call.update.kind,
                title: call.update.title,
                raw_input: call.update.raw_input,
                raw_output: None,
                content: None,
                ran: call.allowed,
                seq: 0,
            };
            self.open_tool(id, tool);
        }
    }

    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// Whether the turn's terminal was emitted.
    pub fn is_complete(&self) -> bool {
        self.terminated
    }

    /// `TurnStarted`, once: a turn shows as started as soon as the prompt went out.
    pub fn start(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        self.announce(&mut out);
        out
    }

    fn announce(&mut self, out: &mut Vec<Event>) {
        if !self.announced {
            self.announced = true;
            out.push(Event::TurnStarted { turn_id: self.turn_id.clone() });
        }
    }

    /// The events of one update.
    pub fn on_update(&mut self, update: SessionUpdate) -> Vec<Event> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        self.announce(&mut out);
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => self.on_text(TextKind::Assistant, chunk, &mut out),
            SessionUpdate::AgentThoughtChunk(chunk) => self.on_text(TextKind::Reasoning, chunk, &mut out),
            SessionUpdate::ToolCall(update) | SessionUpdate::ToolCallUpdate(update) => {
                self.on_tool(update, &mut out);
            }
            SessionUpdate::Plan(plan) => {
                let steps = plan
                    .entries
                    .into_iter()
                    .map(|entry| PlanStep {
                        step: entry.content,
                        status: match entry.status.as_str() {
                            "pending" => PlanStepStatus::Pending,
                            "in_progress" => PlanStepStatus::InProgress,
                            "completed" => PlanStepStatus::Completed,
                            _ => PlanStepStatus::Unknown,
                        },
                    })
                    .collect();
                out.push(Event::Plan(Plan { explanation: None, steps }));
            }
            // The prompt echoed back: the host wrote it already.
            SessionUpdate::UserMessageChunk(_) => self.log_once("user_message_chunk", None),
            SessionUpdate::Usage(usage) => {
                if self.logged.insert("usage_update".into()) {
                    tracing::debug!(used = usage.used, size = usage.size, "ACP context window use (no event maps it)");
                }
            }
            SessionUpdate::Metadata { kind, .. } => self.log_once(&kind, None),
            SessionUpdate::Unknown { kind, decode_error, .. } => self.log_once(&kind, decode_error.as_deref()),
            // A variant a newer protocol crate adds before this mapper learns it.
            _ => self.log_once("an update variant this mapper does not know", None),
        }
        out
    }

    fn log_once(&mut self, kind: &str, decode_error: Option<&str>) {
        if self.logged.insert(kind.to_owned()) {
            match decode_error {
                Some(error) => tracing::warn!(%kind, %error, "an ACP session/update did not decode; skipped"),
                None => tracing::debug!(%kind, "an ACP session/update with no event of its own; skipped"),
            }
        }
    }

    fn on_text(&mut self, kind: TextKind, chunk: ContentChunk, out: &mut Vec<Event>) {
        let Some(delta) = chunk.content.text().map(str::to_owned) else {
            self.log_once("non-text content chunk", None);
            return;
        };
        let continues = self.text.as_ref().is_some_and(|open| {
            open.kind == kind && (chunk.message_id.is_none() || open.message_id == chunk.message_id)
        });
        if !continues {
            self.close_text(out);
            self.items += 1;
            let suffix = if kind == TextKind::Assistant { "msg" } else { "thought" };
            self.text = Some(OpenText {
                kind,
                item_id: format!("{}-{suffix}-{}", self.turn_id, self.items),
                message_id: chunk.message_id,
                text: CappedText::new(TEXT_HEAD_BYTES, TEXT_TAIL_BYTES),
            });
        }
        let Some(open) = self.text.as_mut() else { return };
        open.text.push(&delta);
        let item_id = open.item_id.clone();
        out.push(match kind {
            TextKind::Assistant => Event::AssistantDelta { item_id, delta },
            TextKind::Reasoning => Event::ReasoningDelta { item_id, delta },
        });
    }

    fn close_text(&mut self, out: &mut Vec<Event>) {
        if let Some(open) = self.text.take() {
            let text = open.text.finish().text;
            out.push(match open.kind {
                TextKind::Assistant => Event::AssistantFinal { item_id: open.item_id, text },
                TextKind::Reasoning => Event::ReasoningFinal { item_id: open.item_id, text, signature: None },
            });
        }
    }

    /// Whether one more call fits the turn's bound (logs once when it does not).
    fn make_room(&mut self) -> bool {
        let fits = self.tools.len() + self.finished.len() < MAX_TOOLS_PER_TURN;
        if !fits && !self.dropped_tools {
            self.dropped_tools = true;
            tracing::warn!(
                limit = MAX_TOOLS_PER_TURN,
                "the ACP agent reported more tool calls than one turn tracks; later ones are not reported"
            );
        }
        fits
    }

    fn open_tool(&mut self, id: String, mut tool: OpenTool) {
        tool.seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(tool.seq, id.clone());
        self.tools.insert(id, tool);
    }

    fn on_tool(&mut self, update: ToolCallUpdate, out: &mut Vec<Event>) {
        let id = update.tool_call_id.clone();
        if self.finished.contains(&id) {
            return; // ended already: the host saw its terminal
        }
        self.close_text(out);
        if !self.tools.contains_key(&id) {
            if !self.make_room() {
                return;
            }
            out.push(Event::ToolStarted(tool_call(&update)));
            let tool = OpenTool {
                kind: None,
                title: None,
                raw_input: None,
                raw_output: None,
                content: None,
                ran: false,
                seq: 0,
            };
            self.open_tool(id.clone(), tool);
        }
        let Some(tool) = self.tools.get_mut(&id) else { return };
        if let Some(kind) = update.kind {
            tool.kind = Some(kind);
        }
        if let Some(title) = update.title {
            tool.title = Some(title);
        }
        if let Some(input) = update.raw_input {
            tool.raw_input = Some(input);
        }
        if let Some(output) = update.raw_output {
            tool.raw_output = Some(output);
        }
        if let Some(content) = update.content {
            let text = content.iter().filter_map(ToolCallContent::text).collect::<Vec<_>>().join("\n");
            // Content replaces the earlier value; output that only grew streams as its new part.
            let old = tool.content.as_deref().unwrap_or_default();
            if text.len() <= TOOL_DELTA_BYTES && text.len() > old.len() && text.starts_with(old) {
                out.push(Event::ToolOutputDelta { call_id: id.clone(), delta: text[old.len()..].to_owned() });
            }
            tool.content = Some(text);
        }
        match update.status {
            Some(ToolCallStatus::InProgress) => tool.ran = true,
            Some(ToolCallStatus::Completed) => self.finish_tool(&id, ToolOutcome::Success, true, out),
            Some(ToolCallStatus::Failed) => {
                let declined = self.declined_reason(&id);
                if let Some(reason) = declined {
                    self.finish_tool(&id, ToolOutcome::Declined { reason: Some(reason) }, false, out);
                } else {
                    let error =
                        Some(self.tools.get(&id).and_then(|t| t.content.clone()).unwrap_or_else(|| "failed".into()));
                    self.finish_tool(
                        &id,
                        ToolOutcome::Failure { error, error_code: None, timed_out: false },
                        true,
                        out,
                    );
                }
            }
            Some(ToolCallStatus::Pending | ToolCallStatus::Unknown(_)) | None => {}
        }
    }

    /// The host cancelled this turn (so a `cancelled` stop reason is the answer to that).
    pub fn note_host_cancel(&mut self) {
        self.host_cancelled = true;
    }

    fn any_declined(&self) -> bool {
        self.declined.lock().is_ok_and(|d| !d.is_empty())
    }

    /// Why the host refused `id`, if it did.
    fn declined_reason(&self, id: &str) -> Option<String> {
        self.declined.lock().ok().and_then(|d| d.get(id).cloned())
    }

    fn finish_tool(&mut self, id: &str, outcome: ToolOutcome, ran: bool, out: &mut Vec<Event>) {
        let Some(tool) = self.tools.remove(id) else { return };
        self.order.remove(&tool.seq);
        self.finished.insert(id.to_owned());
        let declined = self.declined_reason(id).filter(|_| !matches!(outcome, ToolOutcome::Success));
        let (outcome, execution_started) = if let Some(reason) = declined {
            (ToolOutcome::Declined { reason: Some(reason) }, false)
        } else {
            (outcome, ran || tool.ran || self.approved(id))
        };
        let text = match (&tool.content, &tool.raw_output) {
            (Some(text), _) if !text.is_empty() => Some(text.clone()),
            (_, Some(Value::String(text))) => Some(text.clone()),
            (_, Some(raw)) if !raw.is_null() => Some(raw.to_string()),
            _ => None,
        };
        let output = text.map(|text| {
            let mut capped = CappedText::new(DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES);
            capped.push(&text);
            capped.finish()
        });
        let exit_code = tool
            .raw_output
            .as_ref()
            .and_then(|raw| raw.get("exit_code").or_else(|| raw.get("exitCode")))
            .and_then(Value::as_i64)
            .and_then(|code| i32::try_from(code).ok());
        out.push(Event::ToolFinished(ToolFinish {
            call: tool.call(id),
            outcome,
            exit_code,
            execution_started,
            output,
        }));
    }

    /// The turn's end from the `session/prompt` answer: open items closed, open tools given a
    /// terminal, usage, then the terminal named by the stop reason.
    pub fn finish(&mut self, answer: &PromptResponse) -> Vec<Event> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        self.announce(&mut out);
        self.close_text(&mut out);
        let (kind, message) =
            if answer.stop_reason == StopReason::Cancelled && !self.host_cancelled && self.any_declined() {
                // codex-acp ends a turn itself (`cancelled`) once the host refuses a call: not an abort
                // the host asked for, and not a finished answer either.
                (TerminalKind::Failed, Some(STOPPED_AFTER_DECLINE.to_owned()))
            } else {
                terminal_of(&answer.stop_reason)
            };
        self.open_unannounced(&mut out);
        let open = std::mem::take(&mut self.order);
        for id in open.into_values() {
            let outcome = ToolOutcome::left_open(kind);
            let ran = self.tools.get(&id).is_some_and(|t| t.ran);
            self.finish_tool(&id, outcome, ran, &mut out);
        }
        if let Some(usage) = answer.usage {
            out.push(Event::Usage(Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
                cached_input_tokens: usage.cached_read_tokens.unwrap_or(0),
                reasoning_tokens: usage.thought_tokens.unwrap_or(0),
            }));
        }
        self.terminated = true;
        out.push(Event::TurnTerminal(TurnTerminal::new(kind, message)));
        out
    }

    /// The closing events of a turn that ends without its answer (a crash, the watchdog, a cancel
    /// the agent never confirmed).
    pub fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        self.announce(&mut out);
        self.close_text(&mut out);
        let outcome = ToolOutcome::abandoned(kind, &message);
        self.open_unannounced(&mut out);
        for id in std::mem::take(&mut self.order).into_values() {
            // Unknown whether a call still open ran: say it may have.
            self.finish_tool(&id, outcome.clone(), true, &mut out);
        }
        self.terminated = true;
        out.push(Event::TurnTerminal(TurnTerminal::new(kind, Some(message))));
        out
    }
}

/// The terminal kind a stop reason maps to, and what to tell the user when it is not a plain end.
pub fn terminal_of(reason: &StopReason) -> (TerminalKind, Option<String>) {
    match reason {
        StopReason::EndTurn => (TerminalKind::Ok, None),
        StopReason::Cancelled => (TerminalKind::Aborted, Some("the turn was cancelled (stopReason cancelled)".into())),
        StopReason::MaxTokens => {
            (TerminalKind::Failed, Some("the model's token limit was reached (stopReason max_tokens)".into()))
        }
        StopReason::MaxTurnRequests => (
            TerminalKind::Failed,
            Some("the agent's limit of model requests in one turn was reached (stopReason max_turn_requests)".into()),
        ),
        StopReason::Refusal => {
            (TerminalKind::Failed, Some("the model refused to continue (stopReason refusal)".into()))
        }
        StopReason::Unknown(other) => (TerminalKind::Failed, Some(format!("the agent stopped: stopReason {other}"))),
    }
}
