//! Server → client requests and the replies clawbridge sends (docs/peers/codex.md#server-to-client-requests).
//! Every one must be answered; [`ServerRequest::fallback_reply`] is the safe answer when nothing else decides.
//!
//! The server numbers its requests from 0 in its own id space (overlapping ours), and re-sends pending
//! ones after `thread/resume`: dedupe tool calls by `(threadId, turnId, callId)` and approvals by
//! `(threadId, itemId)` (docs/peers/codex.md#re-sent-server-requests).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{DynamicToolContentItem, Extra};
use crate::jsonrpc::{ErrorObject, codes};

method_enum! {
    /// A server → client request, decoded by method. Unknown methods land in
    /// [`ServerRequest::Unknown`] and should get a JSON-RPC error reply (see
    /// [`ServerRequest::fallback_reply`]).
    pub enum ServerRequest, decode = from_request {
        /// Approve a shell command before it runs.
        CommandExecutionApproval(CommandExecutionRequestApprovalParams) = "item/commandExecution/requestApproval",
        /// Approve a patch before it is applied.
        FileChangeApproval(FileChangeRequestApprovalParams) = "item/fileChange/requestApproval",
        /// Grant extra permissions (network, filesystem) for the turn or session.
        PermissionsApproval(PermissionsRequestApprovalParams) = "item/permissions/requestApproval",
        /// Experimental: run a client-implemented (dynamic) tool.
        DynamicToolCall(DynamicToolCallParams) = "item/tool/call",
        /// Ask the user questions.
        ToolRequestUserInput(ToolRequestUserInputParams) = "item/tool/requestUserInput",
        /// An MCP server asks for user input (form or URL).
        McpServerElicitation(McpServerElicitationRequestParams) = "mcpServer/elicitation/request",
    }
}

impl ServerRequest {
    /// The reply to send when nothing else can decide (handler failure, panic, timeout, unknown
    /// method): approvals → `decline`, tool call → `success:false` with a text, user input →
    /// `{answers:{}}`, permissions → nothing granted for the turn, elicitation → `decline`, unknown
    /// method → `-32601` error. Fails closed: never grants anything.
    pub fn fallback_reply(&self) -> Result<Value, ErrorObject> {
        fn encode<T: Serialize>(reply: T) -> Result<Value, ErrorObject> {
            serde_json::to_value(reply).map_err(|e| ErrorObject::new(codes::INTERNAL_ERROR, e.to_string()))
        }
        match self {
            ServerRequest::CommandExecutionApproval(_) => {
                encode(CommandExecutionRequestApprovalResponse { decision: CommandExecutionApprovalDecision::Decline })
            }
            ServerRequest::FileChangeApproval(_) => {
                encode(FileChangeRequestApprovalResponse { decision: FileChangeApprovalDecision::Decline })
            }
            ServerRequest::PermissionsApproval(_) => encode(PermissionsRequestApprovalResponse::deny()),
            ServerRequest::DynamicToolCall(_) => {
                encode(DynamicToolCallResponse::failure("the client could not run this tool"))
            }
            ServerRequest::ToolRequestUserInput(_) => encode(ToolRequestUserInputResponse::default()),
            ServerRequest::McpServerElicitation(_) => {
                encode(McpServerElicitationRequestResponse { action: ElicitationAction::Decline, content: None })
            }
            ServerRequest::Unknown { method, .. } => {
                Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("unsupported server request `{method}`")))
            }
        }
    }

    /// The thread the request is about, when it names one.
    pub fn thread_id(&self) -> Option<&str> {
        match self {
            ServerRequest::CommandExecutionApproval(p) => Some(&p.thread_id),
            ServerRequest::FileChangeApproval(p) => Some(&p.thread_id),
            ServerRequest::PermissionsApproval(p) => Some(&p.thread_id),
            ServerRequest::DynamicToolCall(p) => Some(&p.thread_id),
            ServerRequest::ToolRequestUserInput(p) => Some(&p.thread_id),
            ServerRequest::McpServerElicitation(p) => p.thread_id.as_deref(),
            ServerRequest::Unknown { params, .. } => params.get("threadId").and_then(Value::as_str),
        }
    }
}

/// `item/commandExecution/requestApproval` params. The `commandExecution` item (same `itemId`) was
/// already announced by `item/started`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalParams {
    /// What is under review (`command`, `writeStdin`, `humanCommand`); absent means `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `commandExecution` item (= the model's call id).
    pub item_id: String,
    /// Distinct callback id when several approvals belong to one item (zsh-exec subcommands, stdin);
    /// route by it when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The model's justification for the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The command to run (wrapped, `/bin/bash -lc '…'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Best-effort parse of the command for display, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_actions: Option<Vec<Value>>,
    /// A rule (argv prefix) that would allow similar commands without asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_execpolicy_amendment: Option<Vec<String>>,
    /// The decisions to offer. May omit `decline`; `decline` is accepted anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_decisions: Option<Vec<CommandExecutionApprovalDecision>>,
    /// Environment the command would run in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    /// When the request was raised (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// Fields not modelled here (network approval context, additional permissions, …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl CommandExecutionRequestApprovalParams {
    /// The id to route and dedupe the answer by: `approvalId` when present, else `itemId`.
    pub fn approval_key(&self) -> &str {
        self.approval_id.as_deref().unwrap_or(&self.item_id)
    }
}

/// A command approval decision: a string, or a one-key object for the amendment forms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommandExecutionApprovalDecision {
    /// Run it.
    Accept,
    /// Run it and approve the same command for the rest of the session.
    AcceptForSession,
    /// Run it and persist an exec-policy rule allowing commands with this argv prefix.
    AcceptWithExecpolicyAmendment {
        /// The argv prefix (snake_case key on the wire).
        execpolicy_amendment: Vec<String>,
    },
    /// Apply a network policy amendment (allow/deny a host), kept as JSON.
    ApplyNetworkPolicyAmendment {
        /// The amendment (snake_case key on the wire).
        network_policy_amendment: Value,
    },
    /// Do not run it; the model is told and the turn **continues**.
    Decline,
    /// Do not run it and **interrupt** the turn.
    Cancel,
    /// A decision these types do not know (only ever received, in `availableDecisions`).
    #[serde(untagged)]
    Unknown(Value),
}

/// The reply to `item/commandExecution/requestApproval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandExecutionRequestApprovalResponse {
    /// The decision. An undecodable reply counts as `decline` on the server.
    pub decision: CommandExecutionApprovalDecision,
}

/// `item/fileChange/requestApproval` params. The diff is in the preceding `item/started` (`fileChange`
/// item with the same `itemId`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The `fileChange` item.
    pub item_id: String,
    /// The model's justification, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A directory the change would make writable for the session, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_root: Option<String>,
    /// When the request was raised (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A file change approval decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileChangeApprovalDecision {
    /// Apply it.
    Accept,
    /// Apply it and approve further changes for the session.
    AcceptForSession,
    /// Do not apply it; the turn continues.
    Decline,
    /// Do not apply it and interrupt the turn.
    Cancel,
    /// A decision these types do not know.
    #[serde(untagged)]
    Unknown(Value),
}

/// The reply to `item/fileChange/requestApproval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangeRequestApprovalResponse {
    /// The decision.
    pub decision: FileChangeApprovalDecision,
}

/// `item/permissions/requestApproval` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsRequestApprovalParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item asking.
    pub item_id: String,
    /// Working directory the permissions are relative to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Why they are needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What is asked for.
    #[serde(default)]
    pub permissions: PermissionProfile,
    /// Environment concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
    /// When the request was raised (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A set of permissions, requested or granted; an absent part is not requested / not granted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionProfile {
    /// Network access (`{enabled?}`), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Value>,
    /// Filesystem access (`{read?, write?, entries?, …}`), kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_system: Option<Value>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The reply to `item/permissions/requestApproval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionsRequestApprovalResponse {
    /// The granted subset of what was asked; what is omitted is denied.
    pub permissions: PermissionProfile,
    /// How long the grant lasts.
    pub scope: PermissionGrantScope,
}

impl PermissionsRequestApprovalResponse {
    /// Grant nothing (`{"permissions":{},"scope":"turn"}`).
    pub fn deny() -> Self {
        Self { permissions: PermissionProfile::default(), scope: PermissionGrantScope::Turn }
    }
}

/// How long a permission grant lasts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionGrantScope {
    /// The current turn.
    Turn,
    /// The rest of the session.
    Session,
}

/// `item/tool/call` params (experimental): run a dynamic tool declared on `thread/start`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The call id (= the `dynamicToolCall` item id); dedupe key with thread and turn.
    pub call_id: String,
    /// The namespace the tool was declared in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The tool name.
    pub tool: String,
    /// The arguments the model passed.
    #[serde(default)]
    pub arguments: Value,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The reply to `item/tool/call`: `{"contentItems":[…],"success":…}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolCallResponse {
    /// Output given back to the model.
    pub content_items: Vec<DynamicToolContentItem>,
    /// Whether the tool succeeded.
    pub success: bool,
}

impl DynamicToolCallResponse {
    /// A successful call returning `text`.
    pub fn success(text: impl Into<String>) -> Self {
        Self { content_items: vec![DynamicToolContentItem::text(text)], success: true }
    }

    /// A failed call explained by `text` (also the answer on a watchdog timeout).
    pub fn failure(text: impl Into<String>) -> Self {
        Self { content_items: vec![DynamicToolContentItem::text(text)], success: false }
    }
}

/// `item/tool/requestUserInput` params: questions for the user.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestUserInputParams {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    pub turn_id: String,
    /// The item asking.
    pub item_id: String,
    /// The questions.
    #[serde(default)]
    pub questions: Vec<UserInputQuestion>,
    /// Whether the turn waits for the answer (required by the 0.169 schema; not seen in recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_blocking: Option<bool>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One question of `item/tool/requestUserInput`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestion {
    /// Question id; the key of its answer.
    pub id: String,
    /// Short header.
    #[serde(default)]
    pub header: String,
    /// The question text.
    #[serde(default)]
    pub question: String,
    /// Whether a free-form "other" answer is allowed.
    #[serde(default)]
    pub is_other: bool,
    /// Whether the answer is secret (do not log or echo it).
    #[serde(default)]
    pub is_secret: bool,
    /// Choices, when the question has them (`[{label, description}]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<UserInputOption>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A choice of a [`UserInputQuestion`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputOption {
    /// The choice as shown and answered.
    #[serde(default)]
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The reply to `item/tool/requestUserInput`: `{"answers":{"<questionId>":{"answers":["…"]}}}`; an
/// empty map answers nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolRequestUserInputResponse {
    /// Answers by question id.
    pub answers: BTreeMap<String, UserInputAnswer>,
}

/// The answer to one question.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserInputAnswer {
    /// The chosen labels or free text.
    pub answers: Vec<String>,
}

/// `mcpServer/elicitation/request` params: an MCP server asks the user for input.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestParams {
    /// The MCP server asking.
    #[serde(default)]
    pub server_name: String,
    /// The thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The turn, when the request belongs to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// `form` or `url` (plus OpenAI-specific modes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// What the server asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Mode-specific fields (`requestedSchema`, `url`, `elicitationId`, `_meta`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The reply to `mcpServer/elicitation/request`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerElicitationRequestResponse {
    /// What the user did.
    pub action: ElicitationAction,
    /// The form content, with `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

/// An elicitation outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ElicitationAction {
    /// The user provided the input.
    Accept,
    /// The user refused.
    Decline,
    /// The user dismissed the request.
    Cancel,
}
