//! `session/update`: the agent's progress, one variant per `params.update.sessionUpdate`.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::decode::{Peeked, error_text, peek_tag};

use super::{ContentBlock, ToolCallStatus, ToolKind};

/// `session/update` params, decoded without ever failing: see [`SessionNotification::decode`].
#[derive(Clone, Debug, PartialEq)]
pub struct SessionNotification {
    /// The session it belongs to (empty when the agent left it out).
    pub session_id: String,
    /// What happened.
    pub update: SessionUpdate,
}

/// One update of a session.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SessionUpdate {
    /// The user's message (a replay of history, or the prompt echoed).
    UserMessageChunk(ContentChunk),
    /// A piece of the agent's answer.
    AgentMessageChunk(ContentChunk),
    /// A piece of the agent's reasoning.
    AgentThoughtChunk(ContentChunk),
    /// A tool call was announced.
    ToolCall(ToolCallUpdate),
    /// A tool call changed; every field present replaces the earlier value.
    ToolCallUpdate(ToolCallUpdate),
    /// The agent's plan, whole.
    Plan(PlanUpdate),
    /// Context window use.
    Usage(UsageUpdate),
    /// Metadata the bridge has no event for (`available_commands_update`, `current_mode_update`,
    /// `config_option_update`, `session_info_update`): named, the payload kept.
    Metadata {
        /// The `sessionUpdate` value.
        kind: String,
        /// The update as received.
        raw: Value,
    },
    /// A variant these types do not know, or a known one whose payload did not decode: kept whole.
    Unknown {
        /// The `sessionUpdate` value (empty when missing).
        kind: String,
        /// The update as received.
        raw: Value,
        /// Why a known variant did not decode; `None` for an unknown one.
        decode_error: Option<String>,
    },
}

/// The metadata variants: known, with no event of their own.
const METADATA: &[&str] =
    &["available_commands_update", "current_mode_update", "config_option_update", "session_info_update"];

impl SessionNotification {
    /// Decodes `session/update` params; never fails (anything unusable is [`SessionUpdate::Unknown`]).
    pub fn decode(params: Option<Value>) -> SessionNotification {
        let mut params = params.unwrap_or(Value::Null);
        let session_id = params.get("sessionId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let raw = params.get_mut("update").map(Value::take).unwrap_or(Value::Null);
        SessionNotification { session_id, update: SessionUpdate::decode(raw) }
    }
}

impl SessionNotification {
    /// Decodes `session/update` params from the text the agent wrote, in one pass: a borrowed peek
    /// at `sessionId` and `update`, then the update straight into its type. Never fails, and gives
    /// what [`decode`](Self::decode) gives for the same JSON.
    pub fn decode_raw(params: Option<&RawValue>) -> SessionNotification {
        let Some(params) = params else { return Self::decode(None) };
        let peeked =
            params.get().trim_start().starts_with('{').then(|| serde_json::from_str::<Members<'_>>(params.get()));
        let Some(Ok(members)) = peeked else {
            // Not an object, or one with a member twice: what a `Value` makes of it.
            return Self::decode(serde_json::from_str(params.get()).ok());
        };
        let session_id = match members.session_id {
            Some(raw) if raw.get().starts_with('"') => serde_json::from_str(raw.get()).unwrap_or_default(),
            _ => String::new(),
        };
        let update = match members.update {
            Some(raw) => SessionUpdate::decode_raw(raw),
            None => SessionUpdate::decode(Value::Null),
        };
        SessionNotification { session_id, update }
    }
}

/// The members of `session/update` params that are read, borrowed from the line.
#[derive(Deserialize)]
struct Members<'a> {
    /// `sessionId`, as written.
    #[serde(default, borrow, rename = "sessionId", deserialize_with = "present")]
    session_id: Option<&'a RawValue>,
    /// `update`, as written.
    #[serde(default, borrow, deserialize_with = "present")]
    update: Option<&'a RawValue>,
}

/// A member that is there, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

impl SessionUpdate {
    /// Decodes one update from its text by its `sessionUpdate` tag (peeked, borrowed), straight into
    /// the variant's type; never fails, and gives what [`decode`](Self::decode) gives for the same
    /// JSON (a `Value` is built only for what the catch-alls keep).
    pub fn decode_raw(raw: &RawValue) -> SessionUpdate {
        let text = raw.get();
        let kind = match peek_tag(text, "sessionUpdate") {
            Peeked::Tag(kind) => kind,
            Peeked::NoTag | Peeked::NotAnObject => return Self::decode(serde_json::from_str(text).unwrap_or_default()),
        };
        let decoded = match kind.as_ref() {
            "user_message_chunk" => typed_text(text).map(SessionUpdate::UserMessageChunk),
            "agent_message_chunk" => typed_text(text).map(SessionUpdate::AgentMessageChunk),
            "agent_thought_chunk" => typed_text(text).map(SessionUpdate::AgentThoughtChunk),
            "tool_call" => typed_text(text).map(SessionUpdate::ToolCall),
            "tool_call_update" => typed_text(text).map(SessionUpdate::ToolCallUpdate),
            "plan" => typed_text(text).map(SessionUpdate::Plan),
            "usage_update" => typed_text(text).map(SessionUpdate::Usage),
            _ => return Self::decode(serde_json::from_str(text).unwrap_or_default()),
        };
        decoded.unwrap_or_else(|error| SessionUpdate::Unknown {
            kind: kind.into_owned(),
            raw: serde_json::from_str(text).unwrap_or_default(),
            decode_error: Some(error),
        })
    }

    /// Decodes one update by its `sessionUpdate` tag; never fails.
    pub fn decode(raw: Value) -> SessionUpdate {
        let kind = raw.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default().to_owned();
        let decoded = match kind.as_str() {
            "user_message_chunk" => typed(&raw).map(SessionUpdate::UserMessageChunk),
            "agent_message_chunk" => typed(&raw).map(SessionUpdate::AgentMessageChunk),
            "agent_thought_chunk" => typed(&raw).map(SessionUpdate::AgentThoughtChunk),
            "tool_call" => typed(&raw).map(SessionUpdate::ToolCall),
            "tool_call_update" => typed(&raw).map(SessionUpdate::ToolCallUpdate),
            "plan" => typed(&raw).map(SessionUpdate::Plan),
            "usage_update" => typed(&raw).map(SessionUpdate::Usage),
            known if METADATA.contains(&known) => return SessionUpdate::Metadata { kind, raw },
            _ => return SessionUpdate::Unknown { kind, raw, decode_error: None },
        };
        decoded.unwrap_or_else(|error| SessionUpdate::Unknown { kind, raw, decode_error: Some(error) })
    }
}

/// `text` decoded as `T`, or why not (worded as from a `Value`).
fn typed_text<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| error_text(&e))
}

/// `raw` decoded as `T`, or why not.
fn typed<T: serde::de::DeserializeOwned>(raw: &Value) -> Result<T, String> {
    T::deserialize(raw).map_err(|e| e.to_string())
}

/// `user_message_chunk`, `agent_message_chunk`, `agent_thought_chunk`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    /// The piece.
    pub content: ContentBlock,
    /// The message it belongs to, from agents that number them.
    #[serde(default)]
    pub message_id: Option<String>,
}

/// `tool_call` and `tool_call_update` (and the `toolCall` of a permission request): every field but
/// the id is optional, and a present one replaces the earlier value.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    /// The call's id, unique in the session.
    pub tool_call_id: String,
    /// What a person reads.
    #[serde(default)]
    pub title: Option<String>,
    /// What it does.
    #[serde(default)]
    pub kind: Option<ToolKind>,
    /// Where it is.
    #[serde(default)]
    pub status: Option<ToolCallStatus>,
    /// What it produced (text, diffs, terminals).
    #[serde(default)]
    pub content: Option<Vec<ToolCallContent>>,
    /// Files it touches.
    #[serde(default)]
    pub locations: Option<Vec<Value>>,
    /// Its input as the agent's tool took it.
    #[serde(default)]
    pub raw_input: Option<Value>,
    /// Its output as the agent's tool gave it.
    #[serde(default)]
    pub raw_output: Option<Value>,
}

/// One item of a tool call's content.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ToolCallContent {
    /// A content block (mostly text).
    Content {
        /// The block.
        content: ContentBlock,
    },
    /// A file change.
    Diff {
        /// The file.
        path: String,
        /// Its text before (`null`: a new file).
        #[serde(default)]
        old_text: Option<String>,
        /// Its text after.
        #[serde(default)]
        new_text: String,
    },
    /// A terminal the client runs (the bridge offers none, so this is only named).
    Terminal {
        /// The terminal.
        terminal_id: String,
    },
    /// Another item type.
    #[serde(other)]
    Other,
}

impl ToolCallContent {
    /// The item as text a person reads: a block's text, a diff as `path` and its new text.
    pub fn text(&self) -> Option<String> {
        match self {
            ToolCallContent::Content { content } => content.text().map(str::to_owned),
            ToolCallContent::Diff { path, new_text, .. } => Some(format!("{path}\n{new_text}")),
            ToolCallContent::Terminal { terminal_id } => Some(format!("[terminal {terminal_id}]")),
            ToolCallContent::Other => None,
        }
    }
}

/// `plan`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanUpdate {
    /// The whole plan.
    #[serde(default)]
    pub entries: Vec<PlanEntry>,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanEntry {
    /// What the step does.
    #[serde(default)]
    pub content: String,
    /// `pending`, `in_progress`, `completed` (others kept).
    #[serde(default)]
    pub status: String,
}

/// `usage_update`: how full the context window is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageUpdate {
    /// Tokens in use.
    #[serde(default)]
    pub used: u64,
    /// The window's size.
    #[serde(default)]
    pub size: u64,
}
