//! Turns one turn's normalized events into transcript messages, the way the official Codex harness
//! mirrors a turn: each tool call becomes an assistant message (`stopReason: "toolUse"`, carrying
//! the thinking and text that preceded it) followed by its `toolResult`; the rest of the turn's
//! output becomes one final assistant message. Every message carries a key derived from the turn id
//! and its role (docs/peers/openclaw.md#idempotency-keys), never from its position or content.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

pub use clawbridge_protocol::transcript::ModelLabel;

use super::entry::{
    AssistantMessage, ContentBlock, Message, StopReason, ToolResultMessage, TranscriptUsage, UserMessage, now_ms,
};
use crate::events::{CappedText, Event, TerminalKind, ToolCall, ToolFinish, ToolOutcome, TurnTerminal, Usage};

/// Most streamed assistant or reasoning text kept per item (head and tail each) until its final
/// text arrives; a final text replaces it.
const STREAM_KEEP_BYTES: usize = 1024 * 1024;

/// Which message of a turn an identity names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntryRole<'a> {
    /// The user's prompt.
    Prompt,
    /// The assistant message carrying tool call `call_id`.
    ToolCall(&'a str),
    /// The result of tool call `call_id`.
    ToolResult(&'a str),
    /// The turn's final assistant message.
    Assistant,
}

/// The idempotency key of a turn's message: `<scope>:<turnId>:prompt`, `…:tool:<callId>:call`,
/// `…:tool:<callId>:result`, `…:assistant`. `scope` (e.g. `clawbridge:<runId>`) keeps keys of
/// different writers apart; an empty scope adds no prefix.
pub fn idempotency_key(scope: &str, turn_id: &str, role: EntryRole<'_>) -> String {
    let identity = match role {
        EntryRole::Prompt => format!("{turn_id}:prompt"),
        EntryRole::ToolCall(call) => format!("{turn_id}:tool:{call}:call"),
        EntryRole::ToolResult(call) => format!("{turn_id}:tool:{call}:result"),
        EntryRole::Assistant => format!("{turn_id}:assistant"),
    };
    if scope.is_empty() { identity } else { format!("{scope}:{identity}") }
}

/// Consumes one turn's events and produces the messages to append.
#[derive(Debug)]
pub struct TranscriptMirror {
    /// Prefix of every key.
    scope: String,
    /// The turn mirrored; the root of every identity.
    turn_id: String,
    /// Stamped on assistant messages.
    model: ModelLabel,
    /// Thinking and text not yet written, in order of first appearance.
    pending: Vec<PendingBlock>,
    /// Items already written into a message, so a late final for one is not written twice.
    flushed: HashSet<(BlockKind, String)>,
    /// Tool calls seen, in start order.
    calls: Vec<CallState>,
    /// Index into `calls` by call id: a turn may hold thousands of calls, and each output delta
    /// finds its call.
    call_index: HashMap<String, usize>,
    /// The turn's latest usage, put on the final assistant message.
    usage: Option<Usage>,
    /// Set once the turn's end was mirrored; later events are ignored.
    finished: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum BlockKind {
    Text,
    Thinking,
}

#[derive(Debug)]
struct PendingBlock {
    kind: BlockKind,
    /// The native item the text belongs to.
    item_id: String,
    /// Streamed text so far, used when no final text arrives (an interrupted turn).
    streamed: CappedText,
    /// The item's final text, which wins over the deltas.
    final_text: Option<String>,
    /// A thinking signature, when the backend gave one.
    signature: Option<String>,
}

#[derive(Debug)]
struct CallState {
    call_id: String,
    tool_name: String,
    /// Streamed output, used when the finish event carries none.
    output: CappedText,
    /// Whether its result was written.
    resolved: bool,
}

impl TranscriptMirror {
    /// Names `model` on the rows written from now on: the native runtime said which model serves
    /// the turn, which may differ from the one the host asked for (an alias, a default). A blank
    /// name changes nothing.
    pub fn name_model(&mut self, model: &str) {
        if !model.trim().is_empty() {
            self.model.model = model.to_string();
        }
    }

    /// A mirror for turn `turn_id`, keys prefixed by `scope`.
    pub fn new(scope: impl Into<String>, turn_id: impl Into<String>, model: ModelLabel) -> Self {
        Self {
            scope: scope.into(),
            turn_id: turn_id.into(),
            model,
            pending: Vec::new(),
            flushed: HashSet::new(),
            calls: Vec::new(),
            call_index: HashMap::new(),
            usage: None,
            finished: false,
        }
    }

    /// The turn mirrored.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The key of this turn's message with `role`.
    pub fn key(&self, role: EntryRole<'_>) -> String {
        idempotency_key(&self.scope, &self.turn_id, role)
    }

    /// The final assistant message's key, for the host's `assistantTranscriptIdempotencyKey`.
    pub fn assistant_key(&self) -> String {
        self.key(EntryRole::Assistant)
    }

    /// Whether the turn's end was mirrored.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Calls started but without a result yet, in start order.
    pub fn unresolved_calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.calls.iter().filter(|c| !c.resolved).map(|c| (c.call_id.as_str(), c.tool_name.as_str()))
    }

    /// The user's prompt as a message. Under OpenClaw core writes the prompt itself; standalone runs
    /// mirror it early, before any output, so it is never lost.
    pub fn prompt(&self, text: impl Into<String>) -> Message {
        Message::User(UserMessage {
            content: text.into(),
            timestamp: now_ms(),
            idempotency_key: Some(self.key(EntryRole::Prompt)),
        })
    }

    /// Feeds one event; returns the messages that became complete (to append now, in order).
    pub fn on_event(&mut self, event: &Event) -> Vec<Message> {
        if self.finished {
            return Vec::new();
        }
        match event {
            Event::AssistantDelta { item_id, delta } => self.stream(BlockKind::Text, item_id, delta),
            Event::AssistantFinal { item_id, text } => self.complete(BlockKind::Text, item_id, text, None),
            Event::ReasoningDelta { item_id, delta } => self.stream(BlockKind::Thinking, item_id, delta),
            Event::ReasoningFinal { item_id, text, signature } => {
                self.complete(BlockKind::Thinking, item_id, text, signature.clone());
            }
            Event::ToolStarted(call) => return self.start_call(call).into_iter().collect(),
            Event::ToolOutputDelta { call_id, delta } => {
                if let Some(call) = self.call_index.get(call_id).map(|&i| &mut self.calls[i]) {
                    call.output.push(delta);
                }
            }
            Event::ToolFinished(finish) => return self.finish_call(finish),
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::TurnTerminal(terminal) => return self.finish(terminal),
            // Plans have no v4 message shape of their own; they reach the host as events.
            Event::ModelInUse { model } => self.name_model(model),
            Event::TurnStarted { .. }
            | Event::Plan(_)
            | Event::ModelRetry { .. }
            | Event::ModelCallStarted {}
            | Event::BudgetPaused { .. }
            | Event::BudgetResumed { .. }
            // The last call's facts go into the attempt result, not the transcript.
            | Event::LastCall(_)
            // A compaction has no v4 message shape; the host counts it from the event.
            | Event::ContextCompacted { .. }
            | Event::Unknown => {}
        }
        Vec::new()
    }

    /// Ends the turn: a failed `toolResult` for every call that never got one
    /// (docs/peers/openclaw.md#tool-call-without-a-result), then the final assistant message with the
    /// turn's usage and stop reason. Idempotent; only the first call produces messages.
    pub fn finish(&mut self, terminal: &TurnTerminal) -> Vec<Message> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let ended = match &terminal.message {
            Some(message) => format!("the turn ended ({}: {message})", terminal.kind),
            None => format!("the turn ended ({})", terminal.kind),
        };
        let now = now_ms();
        let mut out = Vec::new();
        for call in self.calls.iter_mut().filter(|c| !c.resolved) {
            call.resolved = true;
            out.push(Message::ToolResult(ToolResultMessage {
                tool_call_id: call.call_id.clone(),
                tool_name: call.tool_name.clone(),
                content: vec![ContentBlock::Text {
                    text: format!("No result was received for this tool call: {ended}."),
                }],
                details: Some(json!({"synthetic": true})),
                is_error: true,
                timestamp: now,
                idempotency_key: Some(idempotency_key(
                    &self.scope,
                    &self.turn_id,
                    EntryRole::ToolResult(&call.call_id),
                )),
            }));
        }
        let (stop_reason, error_message) = match terminal.kind {
            TerminalKind::Ok => (StopReason::Stop, None),
            TerminalKind::Aborted | TerminalKind::Timeout => {
                (StopReason::Aborted, Some(terminal.message.clone().unwrap_or_else(|| ended.clone())))
            }
            TerminalKind::Failed => (StopReason::Error, Some(terminal.message.clone().unwrap_or(ended))),
        };
        let content = self.take_pending();
        let usage = self.usage.map(TranscriptUsage::from).unwrap_or_default();
        out.push(self.assistant(content, usage, stop_reason, error_message, EntryRole::Assistant));
        out
    }

    fn stream(&mut self, kind: BlockKind, item_id: &str, delta: &str) {
        if let Some(block) = self.block_mut(kind, item_id)
            && block.final_text.is_none()
        {
            block.streamed.push(delta);
        }
    }

    fn complete(&mut self, kind: BlockKind, item_id: &str, text: &str, signature: Option<String>) {
        if let Some(block) = self.block_mut(kind, item_id) {
            block.final_text = Some(text.to_string());
            block.signature = signature;
        }
    }

    /// The pending block for an item, created on first sight; `None` once the item was written.
    fn block_mut(&mut self, kind: BlockKind, item_id: &str) -> Option<&mut PendingBlock> {
        if self.flushed.contains(&(kind, item_id.to_string())) {
            return None;
        }
        let index = match self.pending.iter().position(|b| b.kind == kind && b.item_id == item_id) {
            Some(index) => index,
            None => {
                self.pending.push(PendingBlock {
                    kind,
                    item_id: item_id.to_string(),
                    streamed: CappedText::new(STREAM_KEEP_BYTES, STREAM_KEEP_BYTES),
                    final_text: None,
                    signature: None,
                });
                self.pending.len() - 1
            }
        };
        self.pending.get_mut(index)
    }

    fn start_call(&mut self, call: &ToolCall) -> Option<Message> {
        // A backend may replay a pending call (docs/peers/codex.md#re-sent-server-requests); it is mirrored once.
        if self.call_index.contains_key(&call.call_id) {
            return None;
        }
        self.call_index.insert(call.call_id.clone(), self.calls.len());
        self.calls.push(CallState {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            output: CappedText::default(),
            resolved: false,
        });
        let mut content = self.take_pending();
        content.push(ContentBlock::ToolCall {
            id: call.call_id.clone(),
            name: call.tool_name.clone(),
            arguments: call.arguments.clone(),
        });
        Some(self.assistant(
            content,
            TranscriptUsage::default(),
            StopReason::ToolUse,
            None,
            EntryRole::ToolCall(&call.call_id),
        ))
    }

    fn finish_call(&mut self, finish: &ToolFinish) -> Vec<Message> {
        // A finish without a start still gets its call written first, so the result has a parent call.
        let mut out: Vec<Message> = self.start_call(&finish.call).into_iter().collect();
        let Some(call) = self.call_index.get(&finish.call.call_id).map(|&i| &mut self.calls[i]) else {
            return out;
        };
        if call.resolved {
            return out;
        }
        call.resolved = true;
        let output = match &finish.output {
            Some(output) => output.clone(),
            None => call.output.snapshot(),
        };
        let backgrounded = matches!(finish.outcome, ToolOutcome::Backgrounded { .. });
        let text = if backgrounded {
            // Said in the row: a reader must not take the output so far for the command's end.
            let note = format!("[{}]", finish.outcome.describe());
            if output.text.is_empty() { note } else { format!("{}\n{note}", output.text) }
        } else if output.text.is_empty() && finish.is_error() {
            format!("Tool call {}.", finish.outcome.describe())
        } else {
            output.text
        };
        let mut details = Map::new();
        if finish.is_error() || backgrounded {
            details.insert("outcome".into(), serde_json::to_value(&finish.outcome).unwrap_or(Value::Null));
            details.insert("executionStarted".into(), Value::Bool(finish.execution_started));
        }
        if let Some(code) = finish.exit_code {
            details.insert("exitCode".into(), code.into());
        }
        if output.omitted_bytes > 0 {
            details.insert("omittedBytes".into(), output.omitted_bytes.into());
        }
        // The tool's images stay images (OpenClaw's `ImageContent` blocks after the text).
        let mut content = vec![ContentBlock::Text { text }];
        content.extend(
            output.images.into_iter().map(|image| ContentBlock::Image { data: image.data, mime_type: image.mime_type }),
        );
        out.push(Message::ToolResult(ToolResultMessage {
            tool_call_id: finish.call.call_id.clone(),
            tool_name: finish.call.tool_name.clone(),
            content,
            details: (!details.is_empty()).then_some(Value::Object(details)),
            is_error: finish.is_error(),
            timestamp: now_ms(),
            idempotency_key: Some(self.key(EntryRole::ToolResult(&finish.call.call_id))),
        }));
        out
    }

    /// Pending thinking and text as content blocks, oldest first; empty blocks are dropped.
    fn take_pending(&mut self) -> Vec<ContentBlock> {
        let mut content = Vec::new();
        for block in std::mem::take(&mut self.pending) {
            self.flushed.insert((block.kind, block.item_id));
            let text = block.final_text.unwrap_or_else(|| block.streamed.finish().text);
            if text.is_empty() {
                continue;
            }
            content.push(match block.kind {
                BlockKind::Text => ContentBlock::Text { text },
                BlockKind::Thinking => ContentBlock::Thinking { thinking: text, thinking_signature: block.signature },
            });
        }
        content
    }

    fn assistant(
        &self,
        content: Vec<ContentBlock>,
        usage: TranscriptUsage,
        stop_reason: StopReason,
        error_message: Option<String>,
        role: EntryRole<'_>,
    ) -> Message {
        Message::Assistant(AssistantMessage {
            content,
            api: self.model.api.clone(),
            provider: self.model.provider.clone(),
            model: self.model.model.clone(),
            usage,
            stop_reason,
            error_message,
            timestamp: now_ms(),
            idempotency_key: Some(self.key(role)),
        })
    }
}
