//! OpenClaw v4 session entries, in the shapes the host stores (docs/peers/openclaw.md#the-v4-transcript): a `session`
//! header, then `message` entries chained by `parentId`, each holding one llm-core message.
//!
//! Entry `timestamp`s are ISO 8601 strings; message `timestamp`s are epoch milliseconds.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::Usage;

/// The session format version these entries follow.
pub const SESSION_VERSION: u32 = 4;

/// One line of a session transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Entry {
    /// The header, first in every transcript.
    Session(SessionHeader),
    /// A message in the conversation tree (boxed: it is far larger than a header).
    Message(Box<MessageEntry>),
}

/// The transcript header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionHeader {
    /// Always [`SESSION_VERSION`]; readers pick their parser by it.
    pub version: u32,
    /// The OpenClaw session id.
    pub id: String,
    /// When the session was created (ISO 8601, UTC, milliseconds).
    pub timestamp: String,
    /// The working directory the session runs in.
    pub cwd: String,
}

impl SessionHeader {
    /// A header for `session_id` in `cwd`, stamped now.
    pub fn new(session_id: impl Into<String>, cwd: impl Into<String>) -> Self {
        Self { version: SESSION_VERSION, id: session_id.into(), timestamp: iso_now(), cwd: cwd.into() }
    }
}

/// A `message` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageEntry {
    /// The entry's id, unique within the transcript; children name it as their parent.
    pub id: String,
    /// The entry this one follows (`null` for the first message), which makes the transcript a tree.
    pub parent_id: Option<String>,
    /// When the entry was appended (ISO 8601, UTC, milliseconds).
    pub timestamp: String,
    /// The message itself.
    pub message: Message,
}

/// An llm-core message, tagged by `role`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Message {
    /// The user's prompt.
    User(UserMessage),
    /// Model output: thinking, text and tool calls.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// The stable identity key that makes appending this message idempotent.
    pub fn idempotency_key(&self) -> Option<&str> {
        match self {
            Message::User(m) => m.idempotency_key.as_deref(),
            Message::Assistant(m) => m.idempotency_key.as_deref(),
            Message::ToolResult(m) => m.idempotency_key.as_deref(),
        }
    }
}

/// A user message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The prompt text.
    pub content: String,
    /// When it was sent, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a re-run mirror does not add the prompt twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// An assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
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
    /// What went wrong, when `stop_reason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// When it was produced, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a re-run mirror does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The result of one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
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
    /// Stable identity, so a re-run mirror does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A block of message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[non_exhaustive]
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

/// Why an assistant message ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
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

/// Token usage in llm-core's shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    pub cost: Cost,
}

impl From<Usage> for TranscriptUsage {
    fn from(usage: Usage) -> Self {
        // llm-core counts cached tokens apart from `input`; OpenAI-style usage includes them.
        let cache_read = usage.cached_input_tokens.min(usage.input_tokens);
        let input = usage.input_tokens - cache_read;
        Self {
            input,
            output: usage.output_tokens,
            cache_read,
            cache_write: 0,
            total_tokens: input.saturating_add(usage.output_tokens).saturating_add(cache_read),
            cost: Cost::default(),
        }
    }
}

/// Cost in dollars, per llm-core's usage shape.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
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

/// Now as epoch milliseconds (0 if the clock is before 1970).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Now as ISO 8601 UTC with milliseconds, e.g. `2026-11-30T02:16:49.728Z`.
pub(crate) fn iso_now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_have_the_host_shapes() {
        let iso = iso_now();
        assert_eq!(iso.len(), "2026-11-30T02:16:49.728Z".len(), "{iso}");
        assert!(iso.ends_with('Z') && iso.as_bytes()[10] == b'T', "{iso}");
        assert!(now_ms() > 1_700_000_000_000);
    }

    #[test]
    fn usage_separates_cached_input() {
        let usage = TranscriptUsage::from(Usage {
            input_tokens: 10,
            output_tokens: 5,
            cached_input_tokens: 4,
            reasoning_tokens: 2,
        });
        assert_eq!((usage.input, usage.cache_read, usage.output, usage.total_tokens), (6, 4, 5, 15));
    }

    #[test]
    fn header_serialises_as_a_v4_session_entry() {
        let mut header = SessionHeader::new("s1", "/home/dev/demo");
        header.timestamp = "2026-11-30T02:16:49.728Z".into();
        assert_eq!(
            serde_json::to_value(Entry::Session(header)).unwrap(),
            json!({"type": "session", "version": 4, "id": "s1", "timestamp": "2026-11-30T02:16:49.728Z",
                   "cwd": "/home/dev/demo"})
        );
    }
}
