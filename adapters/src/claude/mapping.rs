//! The pure mapping from Claude Code CLI stdout lines to normalized [`Event`]s, one turn at a time.
//!
//! A turn is everything the CLI writes between one user line and its `result` (one `result` per
//! user line: docs/peers/claude.md#the-result-line). A [`TurnMapper`] is created when the user line
//! is sent, fed every decoded [`CliMessage`] in arrival order, and told about the host's permission
//! denials ([`note_denied`](TurnMapper::note_denied)); it does no I/O and keeps the event stream
//! well formed:
//!
//! - `TurnStarted` comes first (as soon as the turn has any line), nothing follows `TurnTerminal`;
//! - **items**: the CLI writes one `assistant` line per content block, all sharing `message.id`, so a
//!   block's item id is `<message id>:<block index>`, the index counted per message in arrival order —
//!   which is also the `index` of the `stream_event`s of that block, so partial deltas and the final
//!   block share an id. `text` → `AssistantFinal`, `thinking` → `ReasoningFinal` (with its signature),
//!   `text_delta` / `thinking_delta` → `AssistantDelta` / `ReasoningDelta`; each item is finalised once
//!   and a delta after its final is dropped;
//! - **tools**: a `tool_use` block → `ToolStarted`; its `tool_result` (in a `user` line) →
//!   `ToolFinished`: `is_error` → `Failure`, a Bash result with `interrupted: true` → `Cancelled`, and a
//!   call the host denied through `can_use_tool` (or that `tool_result_meta` / `system/permission_denied`
//!   marks as rejected) → `Declined` with `execution_started: false`
//!   (docs/peers/claude.md#declined-tool-calls). Exactly one `ToolFinished` per call id, never one
//!   without its `ToolStarted` (a result for a call never seen is dropped: its name is unknown, and
//!   the host never heard of the call);
//! - **the `result` line is authoritative and ends the turn**
//!   (docs/peers/claude.md#result-ends-the-turn): it brings the turn's usage (the only final usage
//!   there is), its failure flag (`is_error` or a non-`success` subtype → `Failed`;
//!   `terminal_reason: aborted_*`, or an error after our interrupt → `Aborted`; `success` → `Ok`),
//!   and closes every tool still open (docs/peers/openclaw.md#tool-call-without-a-result);
//! - `system/init`, re-sent at the start of every turn, records the session id
//!   ([`session_id`](TurnMapper::session_id)); when it opens the turn, its `uuid` (fresh every turn,
//!   from the CLI) becomes the turn id, so turn ids — and the transcript keys derived from them — stay
//!   unique across processes of one session (a restarted CLI counts turns from 1 again;
//!   docs/peers/claude.md#turn-ids-across-processes). The id given to [`TurnMapper::new`] is the
//!   fallback.
//!
//! Subagent output (`parent_tool_use_id` set) is not the assistant's answer: its text and reasoning
//! are not mapped, but its tool calls are (they are side effects the host must hear about).
//!
//! **Tool names** ([`canonical_tool_name`]): Claude's own tool names are kept, in snake case
//! (`Bash` → `bash`, `Edit` → `edit`, `MultiEdit` → `multi_edit`, `WebSearch` → `web_search`, the
//! same name the Codex backend uses for its web search); edit tools are *not* renamed `apply_patch`,
//! because their arguments are Claude's (`file_path`, `old_string`, …), not a patch, and a host that
//! reads the name would misread the arguments. MCP tools `mcp__<server>__<tool>` become
//! `<server>.<tool>` (as for Codex MCP calls), except the host's own SDK MCP server's tools, which are
//! host tools and keep the bare tool name ([`TurnMapper::with_host_mcp_server`]).

use std::collections::{HashMap, HashSet};

use clawbridge_bridge::events::{
    CappedOutput, CappedText, Event, LastCall, NativeMutation, TerminalCause, TerminalKind, ToolCall, ToolFinish,
    ToolImage, ToolOutcome, TurnTerminal, Usage,
};
use clawbridge_protocol::claude::{
    ApiUsage, AssistantMessage, BlockDelta, CliMessage, ContentBlock, ResultMessage, ResultSubtype, StreamEvent,
    StreamEventMessage, SystemMessage, ToolResultBlock, ToolUseBlock, UserMessage,
};
use serde_json::Value;

/// Canonical name of Claude's shell tool (`Bash`): `bash`, the name the Codex backend gives its shell.
pub const SHELL_TOOL_NAME: &str = "bash";

/// Facts for tools that may change files, processes or the outside world. Every tool not known to only
/// read counts (unknown and MCP tools included): the host must assume the worst.
const MUTATING: NativeMutation = NativeMutation { mutating_action: true, replay_safe: false };
/// Facts for tools that only read, and for calls that never ran.
const READ_ONLY: NativeMutation = NativeMutation { mutating_action: false, replay_safe: true };

/// Claude tools that only read (or only touch the agent's own state, such as its todo list).
const READ_ONLY_TOOLS: &[&str] = &[
    "Read",
    "Glob",
    "Grep",
    "LS",
    "NotebookRead",
    "WebSearch",
    "WebFetch",
    "ToolSearch",
    "TodoWrite",
    "TodoRead",
    "BashOutput",
    "AskUserQuestion",
    "ListAgents",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
];

/// The canonical (OpenClaw-facing) name of a Claude tool: `mcp__<server>__<tool>` → `<server>.<tool>`;
/// anything else in snake case (`Bash` → `bash`, `NotebookEdit` → `notebook_edit`). See the module
/// documentation for why edit tools keep their own names.
pub fn canonical_tool_name(name: &str) -> String {
    if let Some((server, tool)) = mcp_parts(name) {
        return format!("{server}.{tool}");
    }
    snake_case(name)
}

/// `(server, tool)` of an MCP tool name `mcp__<server>__<tool>` (the server ends at the first `__`).
fn mcp_parts(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then_some((server, tool))
}

/// `CamelCase` → `camel_case`; an acronym stays one word (`HTTPFetch` → `http_fetch`); names already in
/// lower or snake case are unchanged.
fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// The tool call a `tool_use` block describes. `host_server` names the host's SDK MCP server, whose
/// tools are host tools (bare name, not native); every other tool runs inside the CLI (native).
pub fn tool_call(block: &ToolUseBlock, host_server: Option<&str>) -> ToolCall {
    let arguments = block.input.clone();
    // (No let chains: the workspace's MSRV is 1.85.)
    let host_tool = mcp_parts(&block.name).filter(|(server, _)| host_server == Some(*server)).map(|(_, tool)| tool);
    if let Some(tool) = host_tool {
        // The host has its own metadata for its tools, so no native facts.
        return ToolCall {
            call_id: block.id.clone(),
            tool_name: tool.to_owned(),
            arguments,
            native: false,
            native_mutation: None,
        };
    }
    let facts = if READ_ONLY_TOOLS.contains(&block.name.as_str()) { READ_ONLY } else { MUTATING };
    ToolCall {
        call_id: block.id.clone(),
        tool_name: canonical_tool_name(&block.name),
        arguments,
        native: true,
        native_mutation: Some(facts),
    }
}

/// What a streamed content block is, so deltas go to the right event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    /// `text`.
    Text,
    /// `thinking`.
    Thinking,
    /// Anything else (`tool_use`, …): its deltas map to nothing.
    Other,
}

/// A block seen through `stream_event`s: what was shown, so an unfinished one can be finalised.
#[derive(Debug)]
struct StreamedBlock {
    /// Text or thinking.
    kind: BlockKind,
    /// Every delta's text, in order (the model's own output, so of model-bounded size).
    text: String,
    /// The `signature_delta` of a thinking block.
    signature: Option<String>,
}

/// State for one Claude turn: turns the CLI's lines into normalized events.
///
/// Create it when the user line is written, feed it every line in arrival order with
/// [`on_message`](Self::on_message), and either see [`is_complete`](Self::is_complete) (the `result`)
/// or call [`abandon`](Self::abandon) when the turn ends any other way.
#[derive(Debug)]
pub struct TurnMapper {
    /// The turn's id (the CLI has none: the caller names the turn).
    turn_id: String,
    /// The host's SDK MCP server, whose tools are host tools.
    host_server: Option<String>,
    /// `TurnStarted` was emitted.
    announced: bool,
    /// The `result` was seen.
    complete: bool,
    /// A `TurnTerminal` was emitted (by the `result` or [`abandon`](Self::abandon)); nothing follows.
    terminated: bool,
    /// The resume handle, from `system/init` or the `result`.
    session_id: Option<String>,
    /// The last `system/api_retry`, described: what a turn abandoned meanwhile was waiting on.
    last_retry: Option<String>,
    /// We asked the CLI to interrupt this turn, so an error result means aborted.
    interrupt_requested: bool,
    /// Tool calls started and not yet finished, in start order (so synthesized terminals come out in a
    /// stable order).
    open_tools: Vec<ToolCall>,
    /// Call ids that got their `ToolFinished`; never finished twice, never restarted.
    finished_tools: HashSet<String>,
    /// Calls denied before their result arrived, with the reason given.
    denied: HashMap<String, Option<String>>,
    /// Items (`<message>:<index>`) that got their final event.
    finalized: HashSet<String>,
    /// Per message id, the index the next block of an `assistant` line gets.
    next_block: HashMap<String, u64>,
    /// Per message id, the streamed block opened by `content_block_start` and not yet stopped: the
    /// `assistant` line for a block arrives just before its `content_block_stop`.
    open_stream_block: HashMap<String, u64>,
    /// The message the latest `message_start` announced, for events without `api_message_id`.
    stream_message: Option<String>,
    /// Blocks seen through deltas, by item id, in first-seen order (for finalising unfinished ones).
    streamed: Vec<(String, StreamedBlock)>,
    /// Index into `streamed` by item id: a long turn holds thousands of blocks.
    streamed_index: HashMap<String, usize>,
    /// An `AssistantFinal` was emitted (else the `result` text backfills one).
    assistant_final_seen: bool,
    /// Counter for blocks of messages without an id.
    anonymous: u64,
    /// The model last named by `system/init` or an assistant message (each change is one
    /// `ModelInUse`).
    model: Option<String>,
    /// `result`s still to come for user lines steered into this turn: the CLI answers each queued
    /// line with its own `system/init` … `result`, which continue this turn.
    continuations: usize,
    /// Usage of the `result`s already absorbed as continuations, added to the last one.
    usage_so_far: Usage,
    /// Usage of the model calls of this turn that already ended (streamed `message_start` /
    /// `message_delta`), so each call's end is one `Usage` with the turn's running total.
    usage_done: Usage,
    /// The model call streaming now: its message id and its usage so far.
    usage_current: Option<(String, ApiUsage)>,
    /// The latest model call that reported its usage (for `LastCall`; the `result` adds the
    /// model's context window).
    last_call: Option<LastCall>,
}

impl TurnMapper {
    /// A mapper for a turn whose id is `turn_id` unless the CLI's `system/init` names it first.
    pub fn new(turn_id: impl Into<String>) -> Self {
        Self {
            turn_id: turn_id.into(),
            host_server: None,
            announced: false,
            complete: false,
            terminated: false,
            session_id: None,
            interrupt_requested: false,
            open_tools: Vec::new(),
            finished_tools: HashSet::new(),
            denied: HashMap::new(),
            finalized: HashSet::new(),
            next_block: HashMap::new(),
            open_stream_block: HashMap::new(),
            stream_message: None,
            streamed: Vec::new(),
            streamed_index: HashMap::new(),
            assistant_final_seen: false,
            anonymous: 0,
            last_retry: None,
            model: None,
            continuations: 0,
            usage_so_far: Usage::default(),
            usage_done: Usage::default(),
            usage_current: None,
            last_call: None,
        }
    }

    /// A user line was steered into this turn: its own `result` comes after the current one, and
    /// only that one ends the turn (docs/peers/claude.md#steering).
    pub fn expect_continuation(&mut self) {
        self.continuations += 1;
    }

    /// How many steered lines' `result`s are still to come.
    pub fn pending_continuations(&self) -> usize {
        self.continuations
    }

    /// The CLI dropped the steered lines it had queued (an interrupt with `cancel_queued`): the
    /// next `result` ends the turn.
    pub fn drop_continuations(&mut self) {
        self.continuations = 0;
    }

    /// Names the host's SDK MCP server (`--mcp-config … {"type":"sdk","name":…}`): its tools
    /// `mcp__<server>__<tool>` are host tools, reported as `<tool>` with no native facts.
    pub fn with_host_mcp_server(mut self, server: impl Into<String>) -> Self {
        self.host_server = Some(server.into());
        self
    }

    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The session id (the `--resume` handle), once `system/init` or the `result` named it.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// True once the turn's `result` was seen.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Records that the host denied `tool_use_id` (its `can_use_tool` answer was `behavior: deny`), so
    /// the call's terminal is `Declined` and not started, whatever its error result says. No events:
    /// the terminal comes with the call's `tool_result` (or the turn's end). Ignored once the call
    /// finished.
    pub fn note_denied(&mut self, tool_use_id: &str, message: impl Into<String>) {
        if !self.finished_tools.contains(tool_use_id) {
            let message = message.into();
            self.denied.insert(tool_use_id.to_owned(), (!message.is_empty()).then_some(message));
        }
    }

    /// Records that the host sent `interrupt` for this turn, so an error `result` without an
    /// `aborted_*` terminal reason still counts as aborted.
    pub fn note_interrupt_requested(&mut self) {
        self.interrupt_requested = true;
    }

    /// Zero or more events for one line, in order. Lines that map to nothing (control traffic, status,
    /// unknown types, replays of our own prompt) give none; so does everything after the terminal.
    pub fn on_message(&mut self, message: &CliMessage) -> Vec<Event> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        match message {
            CliMessage::System(system) => self.on_system(system, &mut out),
            CliMessage::Assistant(assistant) => self.on_assistant(assistant, &mut out),
            CliMessage::User(user) => self.on_user(user, &mut out),
            CliMessage::StreamEvent(event) => self.on_stream_event(event, &mut out),
            CliMessage::Result(result) => self.on_result(result, &mut out),
            // The control protocol is the handler's business; the host's denials come through
            // `note_denied`.
            _ => {}
        }
        out
    }

    /// The events that close a turn the CLI never ended with a `result` (its process died, the
    /// deadline passed, the user cancelled), none when it did end: finals for the blocks that
    /// streamed without completing, then for each tool still open a terminal as
    /// [`ToolOutcome::abandoned`] says (counted as started unless the host denied it: it may have
    /// run), then the `TurnTerminal`.
    pub fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        let mut out = Vec::new();
        if self.terminated {
            return out;
        }
        self.finalize_streamed(&mut out);
        let message = match &self.last_retry {
            Some(last) => format!("{message}; the model request was being retried: {last}"),
            None => message,
        };
        let outcome = ToolOutcome::abandoned(kind, &message);
        self.close_open_tools(&outcome, &mut out);
        self.terminate(kind, Some(message), None, &mut out);
        out
    }

    /// Emits `TurnStarted` once.
    fn announce(&mut self, out: &mut Vec<Event>) {
        if !self.announced {
            self.announced = true;
            out.push(Event::TurnStarted { turn_id: self.turn_id.clone() });
        }
    }

    /// Emits `event`, after `TurnStarted` if that is still owed.
    fn push(&mut self, out: &mut Vec<Event>, event: Event) {
        self.announce(out);
        out.push(event);
    }

    fn on_system(&mut self, system: &SystemMessage, out: &mut Vec<Event>) {
        match system {
            SystemMessage::Init(init) => {
                // Re-sent every turn with the same id: recording it again changes nothing.
                if let Some(id) = init.session_id.as_deref().filter(|id| !id.is_empty()) {
                    self.session_id = Some(id.to_owned());
                }
                if !self.announced {
                    if let Some(uuid) = init.uuid.as_deref().filter(|uuid| !uuid.is_empty()) {
                        self.turn_id = uuid.to_owned();
                    }
                }
                self.announce(out);
                self.name_model(init.model.as_deref(), out);
            }
            SystemMessage::PermissionDenied(denied) => {
                if let Some(id) = denied.tool_use_id.as_deref() {
                    let reason = denied.message.clone().unwrap_or_default();
                    self.note_denied(id, reason);
                }
            }
            SystemMessage::ApiRetry(retry) => {
                let message = describe_retry(retry);
                self.last_retry = Some(message.clone());
                let event = Event::ModelRetry {
                    message,
                    attempt: retry.attempt,
                    max_attempts: retry.max_retries,
                    retry_in_ms: retry.retry_delay_ms,
                    http_status: retry.error_status,
                };
                self.push(out, event);
            }
            // `/compact` in the session, or the CLI's own auto-compaction: the host counts it,
            // with the sizes the CLI gives (docs/peers/claude.md#compaction).
            SystemMessage::CompactBoundary(boundary) => {
                let metadata = boundary.compact_metadata.clone().unwrap_or_default();
                let item_id = boundary.uuid.clone().unwrap_or_default();
                let event = Event::ContextCompacted {
                    item_id,
                    tokens_before: metadata.pre_tokens,
                    tokens_after: metadata.post_tokens,
                };
                self.push(out, event);
            }
            _ => {}
        }
    }

    /// The item id of the next block of `message_id` in an `assistant` line.
    fn assistant_item(&mut self, message_id: Option<&str>) -> String {
        let Some(message_id) = message_id.filter(|id| !id.is_empty()) else {
            self.anonymous += 1;
            return format!("{}:block-{}", self.turn_id, self.anonymous);
        };
        // A streamed block that is open is the one this line completes; otherwise count blocks.
        let index = match self.open_stream_block.get(message_id) {
            Some(&open) => open,
            None => self.next_block.get(message_id).copied().unwrap_or(0),
        };
        self.next_block.insert(message_id.to_owned(), index.saturating_add(1));
        // The open block is now complete: a second block in the same line takes the next index.
        self.open_stream_block.remove(message_id);
        format!("{message_id}:{index}")
    }

    /// Emits `ModelInUse` when the CLI names a model other than the last one. `<synthetic>` is the
    /// CLI's own stand-in (an API error shown as a message), not a model.
    fn name_model(&mut self, model: Option<&str>, out: &mut Vec<Event>) {
        let Some(model) = model.map(str::trim).filter(|m| !m.is_empty() && *m != "<synthetic>") else { return };
        if self.model.as_deref() == Some(model) {
            return;
        }
        self.model = Some(model.to_owned());
        self.push(out, Event::ModelInUse { model: model.to_owned() });
    }

    fn on_assistant(&mut self, assistant: &AssistantMessage, out: &mut Vec<Event>) {
        // The CLI's report of a failed API request is no answer: the `result` after it fails the
        // turn with the same text (an answer here would tell the host the turn composed one).
        if assistant.is_api_error_message == Some(true) {
            return;
        }
        let subagent = assistant.parent_tool_use_id.as_deref().is_some_and(|p| !p.is_empty());
        if !subagent {
            self.name_model(assistant.message.model.as_deref(), out);
        }
        let message_id = assistant.message.id.clone();
        for block in assistant.message.content.blocks() {
            if subagent {
                // A subagent's words are not the answer, but its tool calls are real side effects.
                if let ContentBlock::ToolUse(tool) = block {
                    self.start_tool(tool, out);
                }
                continue;
            }
            let item_id = self.assistant_item(message_id.as_deref());
            match block {
                ContentBlock::Text(text) => self.finalize_text(item_id, text.text.clone(), out),
                ContentBlock::Thinking(thinking) => {
                    let signature = thinking.signature.clone().filter(|s| !s.is_empty());
                    self.finalize_reasoning(item_id, thinking.thinking.clone(), signature, out);
                }
                ContentBlock::ToolUse(tool) => self.start_tool(tool, out),
                // Redacted thinking has no text for anyone; other blocks are not ours to report.
                _ => {}
            }
        }
    }

    /// `AssistantFinal` for `item_id`, once. An empty text that never streamed is no message.
    fn finalize_text(&mut self, item_id: String, text: String, out: &mut Vec<Event>) {
        let streamed = self.streamed_index.contains_key(&item_id);
        if (text.is_empty() && !streamed) || !self.finalized.insert(item_id.clone()) {
            return;
        }
        self.assistant_final_seen = true;
        self.push(out, Event::AssistantFinal { item_id, text });
    }

    /// `ReasoningFinal` for `item_id`, once; the signature falls back to a streamed one.
    fn finalize_reasoning(&mut self, item_id: String, text: String, signature: Option<String>, out: &mut Vec<Event>) {
        let streamed = self.streamed_index.get(&item_id).map(|&i| self.streamed[i].1.signature.clone());
        if (text.is_empty() && streamed.is_none()) || !self.finalized.insert(item_id.clone()) {
            return;
        }
        let signature = signature.or(streamed.flatten());
        self.push(out, Event::ReasoningFinal { item_id, text, signature });
    }

    fn on_stream_event(&mut self, message: &StreamEventMessage, out: &mut Vec<Event>) {
        if message.parent_tool_use_id.as_deref().is_some_and(|p| !p.is_empty()) {
            return;
        }
        if let StreamEvent::MessageStart(start) = &message.event {
            // One `message_start` per API request of the main agent: a model call starts.
            self.push(out, Event::ModelCallStarted {});
            self.stream_message = start.message.id.clone().or_else(|| message.api_message_id.clone());
            if let Some(id) = self.stream_message.clone() {
                self.start_call_usage(id, start.message.usage.clone().unwrap_or_default());
            }
            return;
        }
        if let StreamEvent::MessageDelta(delta) = &message.event {
            if let Some(usage) = &delta.usage {
                self.end_call_usage(usage, out);
            }
            return;
        }
        let Some(message_id) = message.api_message_id.clone().or_else(|| self.stream_message.clone()) else { return };
        match &message.event {
            StreamEvent::ContentBlockStart(start) => {
                let Some(index) = start.index else { return };
                self.open_stream_block.insert(message_id.clone(), index);
                let kind = match start.content_block {
                    ContentBlock::Text(_) => BlockKind::Text,
                    ContentBlock::Thinking(_) => BlockKind::Thinking,
                    _ => BlockKind::Other,
                };
                let item_id = format!("{message_id}:{index}");
                if !self.streamed_index.contains_key(&item_id) {
                    self.streamed_index.insert(item_id.clone(), self.streamed.len());
                    self.streamed.push((item_id, StreamedBlock { kind, text: String::new(), signature: None }));
                }
            }
            StreamEvent::ContentBlockDelta(delta) => {
                let Some(index) = delta.index else { return };
                let item_id = format!("{message_id}:{index}");
                if self.finalized.contains(&item_id) {
                    // After the final text, a late delta would only duplicate it.
                    return;
                }
                let (kind, piece) = match &delta.delta {
                    BlockDelta::TextDelta(d) => (BlockKind::Text, d.text.as_str()),
                    BlockDelta::ThinkingDelta(d) => (BlockKind::Thinking, d.thinking.as_str()),
                    BlockDelta::SignatureDelta(d) => {
                        let block = self.streamed_block(&item_id, BlockKind::Thinking);
                        block.signature = Some(d.signature.clone()).filter(|s| !s.is_empty());
                        return;
                    }
                    // Tool input arrives whole in the `assistant` line; other deltas carry no text.
                    _ => return,
                };
                if piece.is_empty() {
                    return;
                }
                let block = self.streamed_block(&item_id, kind);
                block.text.push_str(piece);
                let event = match kind {
                    BlockKind::Text => Event::AssistantDelta { item_id, delta: piece.to_owned() },
                    _ => Event::ReasoningDelta { item_id, delta: piece.to_owned() },
                };
                self.push(out, event);
            }
            // Only the open marker goes: the block count stays with the `assistant` lines, so a line
            // that comes after its block's stop (another CLI's order) still counts right.
            StreamEvent::ContentBlockStop(stop) if self.open_stream_block.get(&message_id) == stop.index.as_ref() => {
                self.open_stream_block.remove(&message_id);
            }
            _ => {}
        }
    }

    /// A model call starts streaming: the one before it (if any) counts as done.
    fn start_call_usage(&mut self, message_id: String, usage: ApiUsage) {
        if let Some((previous, done)) = self.usage_current.take() {
            if previous != message_id {
                self.usage_done = add_usage(&self.usage_done, &normalized_usage(&done));
            }
        }
        self.usage_current = Some((message_id, usage));
    }

    /// A model call's `message_delta` with its usage (Anthropic's counts are cumulative per call):
    /// one `Usage` with the turn's total so far, so a host sees each model response once. The
    /// `result`'s usage stays the authoritative total.
    fn end_call_usage(&mut self, delta: &ApiUsage, out: &mut Vec<Event>) {
        let Some((_, current)) = self.usage_current.as_mut() else { return };
        let merge = |field: &mut Option<u64>, value: Option<u64>| {
            if value.is_some() {
                *field = value;
            }
        };
        merge(&mut current.input_tokens, delta.input_tokens);
        merge(&mut current.output_tokens, delta.output_tokens);
        merge(&mut current.cache_creation_input_tokens, delta.cache_creation_input_tokens);
        merge(&mut current.cache_read_input_tokens, delta.cache_read_input_tokens);
        if delta.output_tokens_details.is_some() {
            current.output_tokens_details.clone_from(&delta.output_tokens_details);
        }
        let call = LastCall {
            usage: normalized_usage(current),
            cache_write_tokens: current.cache_creation_input_tokens.unwrap_or(0),
            context_window: None,
        };
        let total = add_usage(&self.usage_done, &call.usage);
        self.push(out, Event::Usage(total));
        self.last_call = Some(call);
        self.push(out, Event::LastCall(call));
    }

    /// The streamed block `item_id`, created as `kind` when a delta arrives without its start.
    fn streamed_block(&mut self, item_id: &str, kind: BlockKind) -> &mut StreamedBlock {
        let position = match self.streamed_index.get(item_id) {
            Some(&position) => position,
            None => {
                self.streamed_index.insert(item_id.to_owned(), self.streamed.len());
                self.streamed.push((item_id.to_owned(), StreamedBlock { kind, text: String::new(), signature: None }));
                self.streamed.len() - 1
            }
        };
        &mut self.streamed[position].1
    }

    /// Finals for blocks that streamed but whose `assistant` line never came (an interrupted stream):
    /// the text shown is all there is.
    fn finalize_streamed(&mut self, out: &mut Vec<Event>) {
        let pending: Vec<(String, BlockKind, String, Option<String>)> = self
            .streamed
            .iter()
            .filter(|(id, b)| !self.finalized.contains(id) && !b.text.is_empty())
            .map(|(id, b)| (id.clone(), b.kind, b.text.clone(), b.signature.clone()))
            .collect();
        for (item_id, kind, text, signature) in pending {
            match kind {
                BlockKind::Text => self.finalize_text(item_id, text, out),
                BlockKind::Thinking => self.finalize_reasoning(item_id, text, signature, out),
                BlockKind::Other => {}
            }
        }
    }

    /// Announces a tool call unless it already started or finished.
    fn start_tool(&mut self, block: &ToolUseBlock, out: &mut Vec<Event>) {
        if block.id.is_empty()
            || self.finished_tools.contains(&block.id)
            || self.open_tools.iter().any(|c| c.call_id == block.id)
        {
            return;
        }
        let call = tool_call(block, self.host_server.as_deref());
        self.open_tools.push(call.clone());
        self.push(out, Event::ToolStarted(call));
    }

    fn on_user(&mut self, user: &UserMessage, out: &mut Vec<Event>) {
        if user.is_replay == Some(true) {
            return;
        }
        let results: Vec<&ToolResultBlock> = user.tool_results().collect();
        // `tool_use_result` is per line; it describes a result only when the line holds just one.
        let structured = if results.len() == 1 { user.tool_use_result.as_ref() } else { None };
        for result in results {
            let meta = user.meta_for(&result.tool_use_id);
            let rejected = meta.is_some_and(clawbridge_protocol::claude::ToolResultMeta::is_reject);
            let not_run = meta.is_some_and(clawbridge_protocol::claude::ToolResultMeta::never_started);
            let stopped = meta.is_some_and(clawbridge_protocol::claude::ToolResultMeta::stopped_while_running);
            self.finish_tool(result, structured, rejected, not_run, stopped, out);
        }
    }

    /// Emits the terminal of a call from its `tool_result`.
    fn finish_tool(
        &mut self,
        result: &ToolResultBlock,
        structured: Option<&Value>,
        rejected: bool,
        not_run: bool,
        stopped_while_running: bool,
        out: &mut Vec<Event>,
    ) {
        let Some(index) = self.open_tools.iter().position(|c| c.call_id == result.tool_use_id) else {
            // Finished already, or never started (then the host never heard of it either).
            return;
        };
        let mut call = self.open_tools.remove(index);
        let text = result.text();
        let denial = self.denied.remove(&call.call_id);
        let is_error = result.is_error == Some(true);
        let interrupted = stopped_while_running
            || structured.and_then(|s| s.get("interrupted")).and_then(Value::as_bool) == Some(true);
        let outcome = if denial.is_some() || rejected {
            let reason = denial.flatten().or_else(|| (!text.is_empty()).then(|| text.clone()));
            ToolOutcome::Declined { reason }
        } else if interrupted {
            ToolOutcome::Cancelled { reason: Some("the tool was interrupted".to_owned()) }
        } else if is_error {
            let error = if text.is_empty() { "the tool reported an error".to_owned() } else { text.clone() };
            ToolOutcome::Failure { error: Some(error), error_code: None, timed_out: false }
        } else {
            ToolOutcome::Success
        };
        let declined = matches!(outcome, ToolOutcome::Declined { .. });
        if declined && call.native {
            // A declined call did nothing: declined approvals report no mutation
            // (docs/peers/openclaw.md#observetoolterminal).
            call.native_mutation = Some(READ_ONLY);
        }
        let exit_code = structured
            .and_then(|s| s.get("exitCode").or_else(|| s.get("exit_code")))
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok());
        // Bounded like a host tool's images: what is left out is said in the text.
        let (images, left_out) = clawbridge_bridge::input::tool_images(result_images(&result.content));
        let text = match left_out {
            Some(note) if text.is_empty() => note,
            Some(note) => format!("{text}\n{note}"),
            None => text,
        };
        let output = (!text.is_empty() || !images.is_empty()).then(|| {
            let mut output = capped(&text);
            output.images = images;
            output
        });
        self.finished_tools.insert(call.call_id.clone());
        let finish = ToolFinish { call, outcome, exit_code, execution_started: !(declined || not_run), output };
        self.push(out, Event::ToolFinished(finish));
    }

    /// Finishes every open tool: a denied one as `Declined` and not started, the others with
    /// `outcome`, conservatively as started.
    fn close_open_tools(&mut self, outcome: &ToolOutcome, out: &mut Vec<Event>) {
        for mut call in std::mem::take(&mut self.open_tools) {
            self.finished_tools.insert(call.call_id.clone());
            let finish = match self.denied.remove(&call.call_id) {
                Some(reason) => {
                    if call.native {
                        call.native_mutation = Some(READ_ONLY);
                    }
                    let outcome = ToolOutcome::Declined { reason };
                    ToolFinish { call, outcome, exit_code: None, execution_started: false, output: None }
                }
                None => ToolFinish {
                    call,
                    outcome: outcome.clone(),
                    exit_code: None,
                    execution_started: true,
                    output: None,
                },
            };
            self.push(out, Event::ToolFinished(finish));
        }
    }

    fn on_result(&mut self, result: &ResultMessage, out: &mut Vec<Event>) {
        if self.continuations > 0 && !result.is_aborted() {
            // A part of the turn ended; a steered line's part follows.
            self.continuations -= 1;
            self.finalize_streamed(out);
            if let Some(usage) = &result.usage {
                self.usage_so_far = add_usage(&self.usage_so_far, &normalized_usage(usage));
                self.push(out, Event::Usage(self.usage_so_far));
            }
            return;
        }
        self.complete = true;
        if let Some(id) = result.session_id.as_deref().filter(|id| !id.is_empty()) {
            self.session_id = Some(id.to_owned());
        }
        self.announce(out);
        self.finalize_streamed(out);
        let aborted = result.is_aborted()
            || (self.interrupt_requested
                && result.is_failure()
                && matches!(result.subtype, Some(ResultSubtype::ErrorDuringExecution)));
        let (kind, message) = if aborted {
            (TerminalKind::Aborted, None)
        } else if result.is_failure() {
            (TerminalKind::Failed, Some(failure_message(result)))
        } else {
            (TerminalKind::Ok, None)
        };
        // The CLI's own class of an API failure; only a transport one is named (the host may then
        // finalize a settled tool turn instead of failing it).
        let cause =
            (kind == TerminalKind::Failed && result.is_transport_failure()).then_some(TerminalCause::ProviderTransport);
        // The result's text is the final answer; it stands in only when no assistant text was seen.
        if kind == TerminalKind::Ok && !self.assistant_final_seen {
            if let Some(text) = result.result.clone().filter(|t| !t.is_empty()) {
                self.finalize_text(format!("{}:result", self.turn_id), text, out);
            }
        }
        let outcome = ToolOutcome::left_open(kind);
        self.close_open_tools(&outcome, out);
        if let Some(usage) = &result.usage {
            self.push(out, Event::Usage(add_usage(&self.usage_so_far, &normalized_usage(usage))));
        }
        let window = result.model_usage.as_ref().and_then(|models| context_window(models, self.model.as_deref()));
        if let (Some(mut call), Some(window)) = (self.last_call, window) {
            call.context_window = Some(window);
            self.push(out, Event::LastCall(call));
        }
        self.terminate(kind, message, cause, out);
    }

    fn terminate(
        &mut self,
        kind: TerminalKind,
        message: Option<String>,
        cause: Option<TerminalCause>,
        out: &mut Vec<Event>,
    ) {
        self.terminated = true;
        self.push(out, Event::TurnTerminal(TurnTerminal { kind, message, cause }));
    }
}

/// What to tell the user about a failed result: the `errors[]`, else the `result` prose (an API
/// failure's `API Error: …` lands there), else the subtype.
fn failure_message(result: &ResultMessage) -> String {
    if let Some(errors) = result.error_text() {
        return errors;
    }
    if let Some(text) = result.result.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        return text.to_owned();
    }
    match &result.subtype {
        Some(subtype) => format!("the turn ended with {subtype}"),
        None => "the turn ended without a result subtype".to_owned(),
    }
}

/// The context window of the turn's model from the `result`'s `modelUsage` (model id →
/// `{contextWindow, …}`): the entry of `model` (the model in use), else the only entry. A turn that
/// also ran a helper model names several; without the model in use none is guessed.
fn context_window(model_usage: &Value, model: Option<&str>) -> Option<u64> {
    let models = model_usage.as_object()?;
    let entry = match model.and_then(|m| models.get(m)) {
        Some(entry) => entry,
        None if models.len() == 1 => models.values().next()?,
        None => return None,
    };
    entry.get("contextWindow").and_then(Value::as_u64).filter(|w| *w > 0)
}

/// The Anthropic usage in the normalized (OpenAI) convention: input counts every prompt token, the
/// cache reads included (Anthropic's `input_tokens` excludes both cache counts).
pub fn normalized_usage(usage: &ApiUsage) -> Usage {
    let input = usage.input_tokens.unwrap_or(0);
    let cache_write = usage.cache_creation_input_tokens.unwrap_or(0);
    let cache_read = usage.cache_read_input_tokens.unwrap_or(0);
    Usage {
        input_tokens: input.saturating_add(cache_write).saturating_add(cache_read),
        output_tokens: usage.output_tokens.unwrap_or(0),
        cached_input_tokens: cache_read,
        reasoning_tokens: usage.output_tokens_details.as_ref().and_then(|d| d.thinking_tokens).unwrap_or(0),
    }
}

/// The images of a `tool_result`'s content: Messages API `image` blocks (`source` base64), as
/// Claude passes an MCP tool's images on, or MCP's own `{type:"image", data, mimeType}`.
pub(crate) fn result_images(content: &Value) -> Vec<ToolImage> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("image"))
        .filter_map(|block| {
            let source = block.get("source").filter(|s| s.get("type").and_then(Value::as_str) == Some("base64"));
            let (data, mime_type) = match source {
                Some(source) => (source.get("data")?, source.get("media_type")?),
                None => (block.get("data")?, block.get("mimeType")?),
            };
            Some(ToolImage { data: data.as_str()?.to_owned(), mime_type: mime_type.as_str()?.to_owned() })
        })
        .collect()
}

/// `a + b`, field by field.
fn add_usage(a: &Usage, b: &Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens.saturating_add(b.input_tokens),
        output_tokens: a.output_tokens.saturating_add(b.output_tokens),
        cached_input_tokens: a.cached_input_tokens.saturating_add(b.cached_input_tokens),
        reasoning_tokens: a.reasoning_tokens.saturating_add(b.reasoning_tokens),
    }
}

/// Output text bounded like every tool output (events::CappedText defaults).
fn capped(text: &str) -> CappedOutput {
    let mut capped = CappedText::default();
    capped.push(text);
    capped.finish()
}

/// A person's line for a `system/api_retry`: `API error 500 (server_error); retry 1 of 10 in 1000 ms`.
fn describe_retry(retry: &clawbridge_protocol::claude::ApiRetry) -> String {
    let status = retry.error_status.map_or_else(|| "no response".to_owned(), |s| format!("API error {s}"));
    let category = retry.error.as_deref().map(|e| format!(" ({e})")).unwrap_or_default();
    let which = match (retry.attempt, retry.max_retries) {
        (Some(n), Some(max)) => format!("; retry {n} of {max}"),
        (Some(n), None) => format!("; retry {n}"),
        _ => "; retrying".to_owned(),
    };
    let delay = retry.retry_delay_ms.map(|ms| format!(" in {ms} ms")).unwrap_or_default();
    format!("{status}{category}{which}{delay}")
}
