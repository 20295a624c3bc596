//! Thread items: what `item/started` / `item/completed` carry and turn snapshots list
//! (docs/peers/codex.md#items). `item/completed` is authoritative; deltas are only a preview.
//!
//! Every item also carries `startedAtMs` / `completedAtMs` in 0.169; they are optional here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Extra, UserInput};

/// A thread item, tagged by `type`. Item types these types do not model (`imageView`,
/// `imageGeneration`, `collabAgentToolCall`, `contextCompaction`, `hookPrompt`, …), and known types
/// whose fields do not decode, are kept whole in [`ThreadItem::Unknown`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadItem {
    /// `userMessage`: the user's input as recorded in the thread.
    UserMessage(UserMessageItem),
    /// `agentMessage`: assistant text.
    AgentMessage(AgentMessageItem),
    /// `reasoning`: reasoning summary / content.
    Reasoning(ReasoningItem),
    /// `plan`: a plan text.
    Plan(PlanItem),
    /// `commandExecution`: a shell command (mutating).
    CommandExecution(CommandExecutionItem),
    /// `fileChange`: a patch to files (mutating).
    FileChange(FileChangeItem),
    /// `mcpToolCall`: a call to an MCP server's tool (mutating).
    McpToolCall(McpToolCallItem),
    /// `dynamicToolCall`: a call to a client-implemented tool, answered through `item/tool/call`.
    DynamicToolCall(DynamicToolCallItem),
    /// `webSearch`: a web search by the model.
    WebSearch(WebSearchItem),
    /// Any other item, kept as received (read its `type` with [`ThreadItem::item_type`]).
    #[serde(untagged)]
    Unknown(Value),
}

impl ThreadItem {
    /// The wire `type` (`None` only for an unknown item without a string `type`).
    pub fn item_type(&self) -> Option<&str> {
        Some(match self {
            ThreadItem::UserMessage(_) => "userMessage",
            ThreadItem::AgentMessage(_) => "agentMessage",
            ThreadItem::Reasoning(_) => "reasoning",
            ThreadItem::Plan(_) => "plan",
            ThreadItem::CommandExecution(_) => "commandExecution",
            ThreadItem::FileChange(_) => "fileChange",
            ThreadItem::McpToolCall(_) => "mcpToolCall",
            ThreadItem::DynamicToolCall(_) => "dynamicToolCall",
            ThreadItem::WebSearch(_) => "webSearch",
            ThreadItem::Unknown(raw) => return raw.get("type").and_then(Value::as_str),
        })
    }

    /// The item id (for tool items, the model's call id).
    pub fn id(&self) -> Option<&str> {
        Some(match self {
            ThreadItem::UserMessage(i) => &i.id,
            ThreadItem::AgentMessage(i) => &i.id,
            ThreadItem::Reasoning(i) => &i.id,
            ThreadItem::Plan(i) => &i.id,
            ThreadItem::CommandExecution(i) => &i.id,
            ThreadItem::FileChange(i) => &i.id,
            ThreadItem::McpToolCall(i) => &i.id,
            ThreadItem::DynamicToolCall(i) => &i.id,
            ThreadItem::WebSearch(i) => &i.id,
            ThreadItem::Unknown(raw) => return raw.get("id").and_then(Value::as_str),
        })
    }

    /// The status of a tool item (`None` for other items, or when the server sent none).
    pub fn status(&self) -> Option<&ItemStatus> {
        match self {
            ThreadItem::CommandExecution(i) => i.status.as_ref(),
            ThreadItem::FileChange(i) => i.status.as_ref(),
            ThreadItem::McpToolCall(i) => i.status.as_ref(),
            ThreadItem::DynamicToolCall(i) => i.status.as_ref(),
            _ => None,
        }
    }
}

open_string_enum! {
    /// Status of a tool item. `commandExecution` and `fileChange` use all four values;
    /// `mcpToolCall` and `dynamicToolCall` never `declined`. A completed item whose status is missing or
    /// unknown must be treated as "unknown", not as success.
    pub enum ItemStatus {
        /// Running (or waiting for approval).
        InProgress = "inProgress",
        /// Ran to completion (for a command, see `exitCode` for its own success).
        Completed = "completed",
        /// Failed (including after a JSON-RPC error reply to its approval).
        Failed = "failed",
        /// Not run: the approval was declined or cancelled.
        Declined = "declined",
    }
}

/// `userMessage` item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessageItem {
    /// Server-generated id (a UUIDv7).
    pub id: String,
    /// The input as sent in `turn/start` / `turn/steer`.
    #[serde(default)]
    pub content: Vec<UserInput>,
    /// Client-chosen message id, when the client gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `agentMessage` item: `text` is empty on `item/started`, grows through `item/agentMessage/delta` and
/// is complete on `item/completed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMessageItem {
    /// Item id (the model's message id).
    pub id: String,
    /// The message text.
    #[serde(default)]
    pub text: String,
    /// What kind of message this is; `null` for an ordinary answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<MessagePhase>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

open_string_enum! {
    /// `agentMessage.phase`.
    pub enum MessagePhase {
        /// Commentary while working (not the answer).
        Commentary = "commentary",
        /// The final answer of the turn.
        FinalAnswer = "final_answer",
        /// Part of an answer still being produced.
        PartialAnswer = "partial_answer",
    }
}

/// `reasoning` item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningItem {
    /// Item id.
    pub id: String,
    /// Summary parts (indexed by `summaryIndex` in the deltas).
    #[serde(default)]
    pub summary: Vec<String>,
    /// Raw reasoning parts, when the provider exposes them (indexed by `contentIndex`).
    #[serde(default)]
    pub content: Vec<String>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `plan` item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanItem {
    /// Item id.
    pub id: String,
    /// The plan text (grows through `item/plan/delta`).
    #[serde(default)]
    pub text: String,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `commandExecution` item: a shell command. Take the output from `aggregated_output` on
/// `item/completed`, not from the deltas (the first chunk is sometimes never sent as a delta).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionItem {
    /// Item id = the model's `call_id`; the `itemId` of the approval request.
    pub id: String,
    /// The command as run, wrapped (`/bin/bash -lc '…'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Process (or unified-exec session) id, a string; `null` until started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_id: Option<String>,
    /// What started the command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<CommandExecutionSource>,
    /// Where it stands; see [`ItemStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    /// Best-effort parse of the command for display (`[{type, command, …}]`), kept as JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_actions: Vec<Value>,
    /// stdout + stderr as captured; authoritative on `item/completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated_output: Option<String>,
    /// Exit code; `null` while running and when it never ran (declined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

open_string_enum! {
    /// `commandExecution.source`: what started the command.
    pub enum CommandExecutionSource {
        /// The model.
        Agent = "agent",
        /// The user's own shell command.
        UserShell = "userShell",
        /// The start of a unified-exec session (what a model command reports once it ran).
        UnifiedExecStartup = "unifiedExecStartup",
        /// Input to a running unified-exec session.
        UnifiedExecInteraction = "unifiedExecInteraction",
    }
}

/// `fileChange` item: a patch. Its diff arrives here (on `item/started`) before the approval request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeItem {
    /// Item id (= call id); the `itemId` of the approval request.
    pub id: String,
    /// One entry per file.
    #[serde(default)]
    pub changes: Vec<FileUpdateChange>,
    /// Where it stands; see [`ItemStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One file of a `fileChange` item (also in `item/fileChange/patchUpdated`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileUpdateChange {
    /// The file.
    #[serde(default)]
    pub path: String,
    /// Add, delete or update (with an optional move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<PatchChangeKind>,
    /// Unified diff of the change.
    #[serde(default)]
    pub diff: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `fileChange.changes[].kind`, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum PatchChangeKind {
    /// A new file.
    Add,
    /// A removed file.
    Delete,
    /// A modified file.
    Update {
        /// New path when the file is also moved (snake_case on the wire).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        move_path: Option<String>,
    },
    /// A kind these types do not know, kept as received.
    #[serde(untagged)]
    Unknown(Value),
}

/// `mcpToolCall` item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallItem {
    /// Item id.
    pub id: String,
    /// MCP server name (from the config).
    #[serde(default)]
    pub server: String,
    /// Tool name on that server.
    #[serde(default)]
    pub tool: String,
    /// Where it stands; see [`ItemStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    /// The arguments the model passed.
    #[serde(default)]
    pub arguments: Value,
    /// The MCP result (`{content, structuredContent?, _meta?}`), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Why the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<McpToolCallError>,
    /// Run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `mcpToolCall.error`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallError {
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `dynamicToolCall` item: started before the `item/tool/call` request, completed with the client's
/// reply (`contentItems`, `success`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallItem {
    /// Item id = the request's `callId`.
    pub id: String,
    /// Namespace of the tool, when it was declared in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Tool name.
    #[serde(default)]
    pub tool: String,
    /// The arguments the model passed.
    #[serde(default)]
    pub arguments: Value,
    /// Where it stands; see [`ItemStatus`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    /// The client's output, once answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_items: Option<Vec<DynamicToolContentItem>>,
    /// The client's `success`, once answered (`false` after an error reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// Run time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One output piece of a dynamic tool call, tagged by `type` (reply `contentItems` and the item's
/// `contentItems`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolContentItem {
    /// `{"type":"inputText","text":…}`.
    InputText {
        /// The text given back to the model.
        text: String,
    },
    /// `{"type":"inputImage","imageUrl":…}`.
    InputImage {
        /// Image URL (`https:` or `data:`).
        #[serde(rename = "imageUrl")]
        image_url: String,
    },
    /// A content kind these types do not know (e.g. `inputAudio`), kept as received.
    #[serde(untagged)]
    Unknown(Value),
}

impl DynamicToolContentItem {
    /// A text content item.
    pub fn text(text: impl Into<String>) -> Self {
        DynamicToolContentItem::InputText { text: text.into() }
    }
}

/// `webSearch` item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchItem {
    /// Item id.
    pub id: String,
    /// The search query.
    #[serde(default)]
    pub query: String,
    /// What the search did (`{type:"search"|"openPage"|"findInPage"|"other", …}`), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Value>,
    /// When the item started (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// When the item completed (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
