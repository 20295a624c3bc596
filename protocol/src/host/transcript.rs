//! `host/transcript/append`: the bridge mirrors a turn's assistant and tool rows into the OpenClaw
//! session transcript through the host, which owns the transcript store (core persists only the user
//! message for a plugin harness, openclaw-host.md §7).
//!
//! The message shapes mirror `clawbridge_bridge::transcript::entry::Message` (llm-core v4 messages).
//! Each message carries a stable `idempotencyKey` per turn identity, so the host appends with
//! `appendSessionTranscriptMessagesByIdentity` and a repeated append is a no-op.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `host/transcript/append` params: messages to append to one session's transcript as one group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptAppendParams {
    /// The attempt that produced the messages.
    pub attempt_id: String,
    /// The OpenClaw session the messages belong to (the attempt's `sessionId`), repeated so the host
    /// need not look the attempt up to find the transcript.
    pub session_id: String,
    /// The messages, in order. The host appends them atomically (all or none), parent ids chained.
    pub messages: Vec<TranscriptMessage>,
}

/// `host/transcript/append` result: what happened to each message, in the order sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptAppendResponse {
    /// One entry per message sent. A host may send fewer (or none); the bridge only needs the
    /// acknowledgement itself, the entries are for diagnostics.
    #[serde(default)]
    pub entries: Vec<TranscriptAppendEntry>,
}

/// The host's outcome for one appended message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptAppendEntry {
    /// The message's idempotency key, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// False when a message with the same key was already there (a replayed append).
    #[serde(default)]
    pub appended: bool,
    /// The transcript entry id that holds the message, when the host reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// An llm-core message, tagged by `role`. Mirrors the bridge's transcript `Message`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum TranscriptMessage {
    /// A user message (the bridge normally leaves the user row to core).
    User(TranscriptUserMessage),
    /// Model output: thinking, text and tool calls.
    Assistant(TranscriptAssistantMessage),
    /// The result of one tool call.
    ToolResult(TranscriptToolResultMessage),
}

/// A user message. Mirrors the bridge's `UserMessage`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptUserMessage {
    /// The prompt text.
    pub content: String,
    /// When it was sent, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a repeated append does not add the prompt twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// An assistant message. Mirrors the bridge's `AssistantMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptAssistantMessage {
    /// Thinking, text and tool-call blocks in the order they happened.
    pub content: Vec<ContentBlock>,
    /// The host model's API family (e.g. `openai-completions`); the host renders and replays by it.
    pub api: String,
    /// The host provider id the turn ran under.
    pub provider: String,
    /// The host model id the turn ran under.
    pub model: String,
    /// Tokens spent producing this message.
    pub usage: TranscriptUsage,
    /// Why the message ended.
    pub stop_reason: StopReason,
    /// What went wrong, when `stopReason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// When it was produced, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a repeated append does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The result of one tool call. Mirrors the bridge's `ToolResultMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptToolResultMessage {
    /// The call this answers (the `id` of a `toolCall` block).
    pub tool_call_id: String,
    /// The tool's name, repeated so a reader need not find the call.
    pub tool_name: String,
    /// The output, as text blocks.
    pub content: Vec<ContentBlock>,
    /// Structured extras (exit code, omitted bytes) for UIs; not sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Whether the call failed, was declined or cancelled.
    pub is_error: bool,
    /// When the result arrived, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a repeated append does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A block of message content. Mirrors the bridge's `ContentBlock`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum ContentBlock {
    /// Visible text.
    Text {
        /// The text.
        text: String,
    },
    /// Reasoning.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's opaque signature, when it gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thinking_signature: Option<String>,
    },
    /// A tool call.
    ToolCall {
        /// The call id, matched by a later `toolResult`.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as JSON.
        arguments: Value,
    },
}

/// Why an assistant message ended. Mirrors the bridge's `StopReason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished.
    Stop,
    /// The model hit its output limit.
    Length,
    /// The model called a tool.
    ToolUse,
    /// The turn failed.
    Error,
    /// The turn was interrupted or timed out.
    Aborted,
}

/// Token usage in llm-core's shape (cached tokens counted apart from `input`). Mirrors the bridge's
/// `TranscriptUsage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptUsage {
    /// Uncached prompt tokens.
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
    /// Prompt tokens served from cache.
    pub cache_read: u64,
    /// Prompt tokens written to cache.
    pub cache_write: u64,
    /// The sum of the four counts above.
    pub total_tokens: u64,
    /// Cost in dollars; the bridge does not price tokens, so zero.
    pub cost: TranscriptCost,
}

/// Cost in dollars, per llm-core's usage shape. Mirrors the bridge's `Cost`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptCost {
    /// For uncached input.
    pub input: f64,
    /// For output.
    pub output: f64,
    /// For cache reads.
    pub cache_read: f64,
    /// For cache writes.
    pub cache_write: f64,
    /// The sum.
    pub total: f64,
}
