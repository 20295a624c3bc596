//! llm-core v4 transcript messages, in the shapes the OpenClaw host stores: what the bridge's
//! transcript mirror produces, what its JSONL sink writes inside `message` entries, and what
//! `host/transcript/append` carries.
//!
//! Message `timestamp`s are epoch milliseconds. Each message carries a stable `idempotencyKey` per
//! turn identity, so an append by identity is a no-op the second time.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Usage;

/// An llm-core message, tagged by `role`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "camelCase")]
// The host protocol's schema has always called these `Transcript…`.
#[schemars(rename = "TranscriptMessage")]
#[non_exhaustive]
pub enum Message {
    /// A user message (the bridge normally leaves the user row to core).
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TranscriptUserMessage")]
pub struct UserMessage {
    /// The prompt text.
    pub content: String,
    /// When it was sent, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a repeated append does not add the prompt twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// An assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TranscriptAssistantMessage")]
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
    /// What went wrong, when `stopReason` is `error` or `aborted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// When it was produced, epoch milliseconds.
    pub timestamp: u64,
    /// Stable identity, so a repeated append does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// The result of one tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TranscriptToolResultMessage")]
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
    /// Stable identity, so a repeated append does not add it twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A block of message content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// An image (in a `toolResult`: what the tool returned), OpenClaw's `ImageContent`.
    Image {
        /// Standard base64 of the image bytes.
        data: String,
        /// E.g. `image/png`.
        mime_type: String,
    },
}

/// Why an assistant message ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

/// Token usage in llm-core's shape (cached tokens counted apart from `input`).
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
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TranscriptCost")]
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

/// The host model a turn ran under, stamped on its assistant messages (`api`, `provider`, `model`);
/// the host renders and replays assistant messages by it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelLabel {
    /// The API family, e.g. `openai-completions`.
    pub api: String,
    /// The host provider id.
    pub provider: String,
    /// The host model id.
    pub model: String,
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
