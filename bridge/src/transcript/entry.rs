//! OpenClaw v4 session entries, in the shapes the host stores (docs/peers/openclaw.md#the-v4-transcript): a `session`
//! header, then `message` entries chained by `parentId`, each holding one llm-core message.
//!
//! Entry `timestamp`s are ISO 8601 strings; message `timestamp`s are epoch milliseconds. The messages
//! themselves are wire data the host protocol carries too, defined in
//! `clawbridge_protocol::transcript` and re-exported here; the entries around them are the session
//! file's own.

use std::time::{SystemTime, UNIX_EPOCH};

pub use clawbridge_protocol::transcript::{
    AssistantMessage, ContentBlock, Cost, Message, StopReason, ToolResultMessage, TranscriptUsage, UserMessage,
};
use serde::{Deserialize, Serialize};

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
