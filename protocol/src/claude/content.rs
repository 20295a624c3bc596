//! Anthropic Messages-API content as the CLI relays it: the message inside `assistant` lines and
//! `message_start` events, its content blocks, and its token usage.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Extra, lenient};

/// An Anthropic message (`assistant` lines' `message`, `message_start`'s `message`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiMessage {
    /// The API message id (`msg_…`). The CLI writes one `assistant` line per content block, all
    /// sharing this id, so it is what ties a block to its message (and to `stream_event`s).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that produced it.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `assistant` (or `user` inside `user` lines).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The blocks of this line (one per `assistant` line on 2.1.328).
    #[serde(default)]
    pub content: MessageContent,
    /// `null` on `assistant` lines (the CLI sends them before the stop is known); set in `message_delta`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The `message_start` usage (its `output_tokens` is a placeholder); the turn's real usage is only
    /// in the `result`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub usage: Option<ApiUsage>,
    /// Everything else (`type`, `stop_sequence`, `context_management`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A message's `content`: Anthropic allows a plain string or an array of blocks.
///
/// Decoded by its JSON kind in one step (a string, an array, anything else), not as an untagged
/// enum, which would buffer the value and try each variant in turn: inside a strict decode a block
/// that does not fit must fail the line, not turn the whole array into [`MessageContent::Other`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// A plain string (user prompts may be written this way).
    Text(String),
    /// Content blocks; in the tolerant decode each decodes (into [`ContentBlock::Unknown`] at
    /// worst), so any array fits (the strict pass gives up on a block that does not fit instead).
    Blocks(Vec<ContentBlock>),
    /// Anything else (`null`, an object), kept as received.
    Other(Value),
}

impl<'de> Deserialize<'de> for MessageContent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MessageContentVisitor)
    }
}

/// Sorts a `content` value by its JSON kind.
struct MessageContentVisitor;

impl<'de> serde::de::Visitor<'de> for MessageContentVisitor {
    type Value = MessageContent;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("message content")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MessageContent::Text(v.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(MessageContent::Text(v))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Vec::<ContentBlock>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(MessageContent::Blocks)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Value::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MessageContent::Other)
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::Null))
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::Null))
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::Bool(v)))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::from(v)))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::from(v)))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(MessageContent::Other(Value::from(v)))
    }
}

impl Default for MessageContent {
    fn default() -> Self {
        MessageContent::Blocks(Vec::new())
    }
}

impl MessageContent {
    /// The blocks; none for a plain string or other content (use [`text`](Self::text) for text).
    pub fn blocks(&self) -> &[ContentBlock] {
        match self {
            MessageContent::Blocks(blocks) => blocks,
            _ => &[],
        }
    }

    /// The plain text: the string itself, or the `text` blocks joined by newlines.
    pub fn text(&self) -> String {
        match self {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| if let ContentBlock::Text(t) = b { Some(t.text.as_str()) } else { None })
                .collect::<Vec<_>>()
                .join("\n"),
            MessageContent::Other(_) => String::new(),
        }
    }
}

tagged_enum! {
    /// One content block (`type` tagged). Blocks the CLI may add later (`server_tool_use`,
    /// `mcp_tool_use`, `image`, …) land in [`ContentBlock::Unknown`] with their JSON.
    pub enum ContentBlock, tag = "type", other = Unknown {
        /// Assistant (or user) text.
        Text(TextBlock) = "text",
        /// Visible reasoning, with the signature the API uses to verify it on the next request.
        Thinking(ThinkingBlock) = "thinking",
        /// Reasoning the API returned encrypted only.
        RedactedThinking(RedactedThinkingBlock) = "redacted_thinking",
        /// A tool call the model made.
        ToolUse(ToolUseBlock) = "tool_use",
        /// A tool's result (in `user` lines).
        ToolResult(ToolResultBlock) = "tool_result",
    }
}

impl Default for ContentBlock {
    fn default() -> Self {
        ContentBlock::Unknown(Default::default())
    }
}

/// A `text` block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text (empty in a `content_block_start`; the deltas fill it).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub text: String,
    /// Everything else (`citations`, `cache_control`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `thinking` block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThinkingBlock {
    /// The reasoning text (possibly summarised by the API).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub thinking: String,
    /// Opaque signature; kept so the transcript can carry the block faithfully.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `redacted_thinking` block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning; opaque to everyone but the API.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `tool_use` block: the model asks for a tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolUseBlock {
    /// The call id (`toolu_…`); `can_use_tool`, `tool_result` and `permission_denials` refer to it.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub id: String,
    /// The tool's name as the CLI knows it (`Bash`, `Edit`, `mcp__server__tool`, …).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: String,
    /// The arguments (`{}` in a `content_block_start`; `input_json_delta`s fill it).
    #[serde(default)]
    pub input: Value,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `tool_result` block: what a tool returned to the model.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResultBlock {
    /// The `tool_use` id it answers.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub tool_use_id: String,
    /// The result: a string or an array of content blocks (text, images); `null` when absent.
    #[serde(default)]
    pub content: Value,
    /// The CLI's structured failure flag (also set for a denied call). Absent means success.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Everything else (`cache_control`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResultBlock {
    /// The result as text: the string itself, or the `text` parts of a block array joined by newlines
    /// (other parts, such as images, are left out).
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

/// Token usage as the Messages API and the CLI's `result` report it. Unlike the normalized usage,
/// `input_tokens` here excludes cached tokens: the three input counts add up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiUsage {
    /// Uncached prompt tokens.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Generated tokens (thinking included).
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Prompt tokens written to the cache.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// The thinking share of `output_tokens`, when the CLI breaks it out (`result` on 2.1.328).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// Everything else (`service_tier`, `server_tool_use`, `iterations`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `usage.output_tokens_details`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OutputTokensDetails {
    /// Tokens spent thinking.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}
