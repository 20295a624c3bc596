//! `host/transcript/append`: the bridge mirrors a turn's assistant and tool rows into the OpenClaw
//! session transcript through the host, which owns the transcript store (core persists only the user
//! message for a plugin harness).
//!
//! The messages are the crate's llm-core v4 [`Message`]s as the bridge's mirror produces them. Each
//! carries a stable `idempotencyKey` per turn identity, so the host appends with
//! `appendSessionTranscriptMessagesByIdentity` and a repeated append is a no-op.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::transcript::Message;

/// A message of a `host/transcript/append`, under the name the host protocol gives it.
pub type TranscriptMessage = Message;

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
    pub messages: Vec<Message>,
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
