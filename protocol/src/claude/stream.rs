//! `stream_event` lines (only with `--include-partial-messages`): the raw Messages-API SSE events of
//! each model call, so text and thinking can be shown while they stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ApiMessage, ApiUsage, ContentBlock, Extra, lenient};

/// A `stream_event` line: one SSE event plus where it belongs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamEventMessage {
    /// The SSE event.
    #[serde(default)]
    pub event: StreamEvent,
    /// The API message the event belongs to (the same id as the `assistant` lines' `message.id`), so
    /// deltas and final blocks can share an item id even though `content_block_delta` carries no id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub api_message_id: Option<String>,
    /// `null` for the main agent; the spawning `Task` call's id for a subagent's stream.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// The session.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else (`ttft_ms`, `thinking_display`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

tagged_enum! {
    /// A Messages-API SSE event (`type` tagged).
    pub enum StreamEvent, tag = "type", other = Unknown {
        /// A model call began; carries the message id and the initial usage.
        MessageStart(MessageStart) = "message_start",
        /// A content block opened at `index` (its text/input starts empty).
        ContentBlockStart(ContentBlockStart) = "content_block_start",
        /// A piece of the block at `index`.
        ContentBlockDelta(ContentBlockDelta) = "content_block_delta",
        /// The block at `index` is complete.
        ContentBlockStop(ContentBlockStop) = "content_block_stop",
        /// The stop reason and the output usage of the call.
        MessageDelta(MessageDelta) = "message_delta",
        /// The model call ended.
        MessageStop(MessageStop) = "message_stop",
        /// Keep-alive.
        Ping(MessageStop) = "ping",
        /// An error event inside the stream.
        Error(StreamError) = "error",
    }
}

impl Default for StreamEvent {
    fn default() -> Self {
        StreamEvent::Unknown(Default::default())
    }
}

/// `message_start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageStart {
    /// The message so far (no content yet).
    #[serde(default)]
    pub message: ApiMessage,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_start`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockStart {
    /// The block's position in the message; deltas and the stop refer to it.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The block as it starts (empty text / thinking, a `tool_use` with its id and name).
    #[serde(default)]
    pub content_block: ContentBlock,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_delta`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockDelta {
    /// The block the piece belongs to.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The piece.
    #[serde(default)]
    pub delta: BlockDelta,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

tagged_enum! {
    /// The `delta` of a `content_block_delta` (`type` tagged).
    pub enum BlockDelta, tag = "type", other = Unknown {
        /// More text of a `text` block.
        TextDelta(TextDelta) = "text_delta",
        /// More reasoning of a `thinking` block.
        ThinkingDelta(ThinkingDelta) = "thinking_delta",
        /// More of a `tool_use` block's input, as a fragment of JSON text.
        InputJsonDelta(InputJsonDelta) = "input_json_delta",
        /// The signature of a `thinking` block (sent whole, once).
        SignatureDelta(SignatureDelta) = "signature_delta",
    }
}

impl Default for BlockDelta {
    fn default() -> Self {
        BlockDelta::Unknown(Default::default())
    }
}

/// `text_delta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TextDelta {
    /// The new text.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub text: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thinking_delta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThinkingDelta {
    /// The new reasoning text.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub thinking: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `input_json_delta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InputJsonDelta {
    /// A fragment of the input's JSON text; only the concatenation parses.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub partial_json: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `signature_delta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SignatureDelta {
    /// The thinking block's signature.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub signature: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `content_block_stop`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentBlockStop {
    /// The block that is complete.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `message_delta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageDelta {
    /// `{stop_reason, stop_sequence}` of the call, as received.
    #[serde(default)]
    pub delta: Value,
    /// The call's output usage so far.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub usage: Option<ApiUsage>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl MessageDelta {
    /// `delta.stop_reason` (`end_turn`, `tool_use`, `max_tokens`, …).
    pub fn stop_reason(&self) -> Option<&str> {
        self.delta.get("stop_reason").and_then(Value::as_str)
    }
}

/// An event with no fields of its own (`message_stop`, `ping`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageStop {
    /// Whatever it carries anyway.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `error`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamError {
    /// `{type, message}` as received.
    #[serde(default)]
    pub error: Value,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}
