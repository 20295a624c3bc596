//! Agent Client Protocol (ACP) v1 wire types: the subset a client that drives an ACP agent over stdio
//! needs (docs/peers/acp.md). The bridge is the *client*: it sends `initialize`, `session/*` and
//! `session/cancel`; the agent streams `session/update` notifications and asks
//! `session/request_permission` and `fs/*`.
//!
//! Written here rather than taken from `agent-client-protocol-schema` (README, dependency table: that
//! crate turns on `serde_json/preserve_order` for every crate of the build, which changes the member
//! order of every JSON object the bridge writes). Decoding is tolerant as the spec demands: unknown
//! fields are ignored, open string sets keep unknown values ([`ToolKind::Unknown`] …), and an
//! unknown `session/update` variant is kept whole ([`SessionUpdate::Unknown`]).

mod update;
mod version;

pub use update::{
    ContentChunk, PlanEntry, PlanUpdate, SessionNotification, SessionUpdate, ToolCallContent, ToolCallUpdate,
    UsageUpdate,
};
pub use version::{PROTOCOL_VERSION, VersionRefused, negotiated_version};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Method names.
pub mod methods {
    /// Client → agent: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Client → agent: log in with one of the agent's `authMethods`.
    pub const AUTHENTICATE: &str = "authenticate";
    /// Client → agent: a new session.
    pub const SESSION_NEW: &str = "session/new";
    /// Client → agent: an earlier session, its history replayed as `session/update`s.
    pub const SESSION_LOAD: &str = "session/load";
    /// Client → agent: an earlier session, without replay (`sessionCapabilities.resume`).
    pub const SESSION_RESUME: &str = "session/resume";
    /// Client → agent: one turn.
    pub const SESSION_PROMPT: &str = "session/prompt";
    /// Client → agent notification: stop the running turn.
    pub const SESSION_CANCEL: &str = "session/cancel";
    /// Agent → client notification: progress of a session.
    pub const SESSION_UPDATE: &str = "session/update";
    /// Agent → client: may this tool call run?
    pub const REQUEST_PERMISSION: &str = "session/request_permission";
    /// Agent → client: a text file as the client sees it.
    pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
    /// Agent → client: write a text file.
    pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
}

/// ACP's error codes beside JSON-RPC's own.
pub mod codes {
    /// The agent needs `authenticate` first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// The resource (a file, a session) does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

open_string_enum! {
    /// What a tool call does (`tool_call.kind`).
    pub enum ToolKind {
        /// Reads files or data.
        Read = "read",
        /// Changes files.
        Edit = "edit",
        /// Removes files.
        Delete = "delete",
        /// Moves or renames files.
        Move = "move",
        /// Searches.
        Search = "search",
        /// Runs a command.
        Execute = "execute",
        /// Thinks (a sub-agent, a plan).
        Think = "think",
        /// Fetches from the network.
        Fetch = "fetch",
        /// Changes the session's mode.
        SwitchMode = "switch_mode",
        /// Anything else.
        Other = "other",
    }
}

open_string_enum! {
    /// Where a tool call is (`tool_call.status`). v1 has no `cancelled`: the client marks calls it
    /// cancelled itself.
    pub enum ToolCallStatus {
        /// Its input streams in, or it awaits approval.
        Pending = "pending",
        /// It runs.
        InProgress = "in_progress",
        /// It succeeded.
        Completed = "completed",
        /// It failed.
        Failed = "failed",
    }
}

open_string_enum! {
    /// Why a turn stopped (`session/prompt` result).
    pub enum StopReason {
        /// The model finished.
        EndTurn = "end_turn",
        /// The model's token limit was reached.
        MaxTokens = "max_tokens",
        /// The agent's limit of model requests in one turn was reached.
        MaxTurnRequests = "max_turn_requests",
        /// The model refused.
        Refusal = "refusal",
        /// The client cancelled the turn.
        Cancelled = "cancelled",
    }
}

open_string_enum! {
    /// What choosing a permission option means.
    pub enum PermissionOptionKind {
        /// Allow this call.
        AllowOnce = "allow_once",
        /// Allow this call and similar ones from now on.
        AllowAlways = "allow_always",
        /// Refuse this call.
        RejectOnce = "reject_once",
        /// Refuse this call and similar ones from now on.
        RejectAlways = "reject_always",
    }
}

/// `initialize` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The newest version the client speaks.
    pub protocol_version: u16,
    /// What the client implements for the agent.
    pub client_capabilities: ClientCapabilities,
    /// Who the client is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
}

/// What the client offers the agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// `fs/*` methods.
    #[serde(default)]
    pub fs: FileSystemCapability,
    /// `terminal/*` methods.
    #[serde(default)]
    pub terminal: bool,
}

/// Which `fs/*` methods the client answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapability {
    /// `fs/read_text_file`.
    #[serde(default)]
    pub read_text_file: bool,
    /// `fs/write_text_file`.
    #[serde(default)]
    pub write_text_file: bool,
}

/// A program's name and version (`clientInfo`, `agentInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Its machine name.
    #[serde(default)]
    pub name: String,
    /// Its name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its version.
    #[serde(default)]
    pub version: String,
}

/// `initialize` result. `protocolVersion` stays raw: an agent may answer a string (a pre-1.0 date)
/// or a number out of range, which [`negotiated_version`] refuses by name.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version the agent chose.
    #[serde(default)]
    pub protocol_version: Value,
    /// What the agent supports.
    #[serde(default)]
    pub agent_capabilities: AgentCapabilities,
    /// Who the agent is.
    #[serde(default)]
    pub agent_info: Option<Implementation>,
    /// How one may log in, when the agent needs it.
    #[serde(default)]
    pub auth_methods: Vec<AuthMethod>,
}

/// What the agent supports.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `session/load`.
    #[serde(default)]
    pub load_session: bool,
    /// What a prompt may hold beyond text.
    #[serde(default)]
    pub prompt_capabilities: PromptCapabilities,
    /// Session methods beyond new/load.
    #[serde(default)]
    pub session_capabilities: SessionCapabilities,
    /// Which MCP transports `session/new`'s `mcpServers` may name (stdio is always allowed).
    #[serde(default)]
    pub mcp_capabilities: McpCapabilities,
}

/// `agentCapabilities.mcpCapabilities`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpCapabilities {
    /// Streamable-HTTP servers.
    #[serde(default)]
    pub http: bool,
    /// Legacy SSE servers.
    #[serde(default)]
    pub sse: bool,
}

/// What a prompt may hold beyond text and resource links.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    /// Image blocks.
    #[serde(default)]
    pub image: bool,
    /// Audio blocks.
    #[serde(default)]
    pub audio: bool,
    /// Embedded resources.
    #[serde(default)]
    pub embedded_context: bool,
}

/// Session methods beyond new/load; each is present (an object) when supported.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCapabilities {
    /// `session/resume`.
    #[serde(default)]
    pub resume: Option<Value>,
}

impl SessionCapabilities {
    /// Whether `session/resume` is offered (`resume: {}`; a `null` is no offer).
    pub fn can_resume(&self) -> bool {
        self.resume.as_ref().is_some_and(|v| !v.is_null())
    }
}

/// One way to log in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    /// What `authenticate` names.
    #[serde(default)]
    pub id: String,
    /// For people.
    #[serde(default)]
    pub name: String,
}

/// `authenticate` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateParams {
    /// One of the agent's `authMethods[].id`.
    pub method_id: String,
}

/// `session/new` params.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionParams {
    /// The session's working directory (absolute).
    pub cwd: String,
    /// MCP servers the agent should connect to (the bridge's own, or none).
    pub mcp_servers: Vec<crate::mcp::McpServer>,
}

/// `session/new` result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    /// The new session's id.
    pub session_id: String,
}

/// `session/load` and `session/resume` params.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionParams {
    /// The earlier session.
    pub session_id: String,
    /// Its working directory.
    pub cwd: String,
    /// MCP servers the agent should connect to (the bridge's own, or none).
    pub mcp_servers: Vec<crate::mcp::McpServer>,
}

/// A piece of a prompt or of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A base64 image.
    Image {
        /// Standard base64 of the bytes.
        data: String,
        /// E.g. `image/png`.
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// Where it is.
        uri: String,
        /// What it is called.
        #[serde(default)]
        name: String,
    },
    /// Any other block (audio, an embedded resource, a newer type): not shown.
    #[serde(other)]
    Other,
}

impl ContentBlock {
    /// The text a person would read of this block (a link as its uri), if any.
    pub fn text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::ResourceLink { uri, .. } => Some(uri),
            ContentBlock::Image { .. } | ContentBlock::Other => None,
        }
    }
}

/// `session/prompt` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    /// The session.
    pub session_id: String,
    /// The user's message.
    pub prompt: Vec<ContentBlock>,
}

/// `session/prompt` result.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    /// Why the turn stopped.
    pub stop_reason: StopReason,
    /// Token counts of the turn, from agents that send them.
    #[serde(default)]
    pub usage: Option<TurnUsage>,
}

/// Token counts of a turn (an extension some agents send with the `session/prompt` result).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Reasoning tokens.
    #[serde(default)]
    pub thought_tokens: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default)]
    pub cached_read_tokens: Option<u64>,
}

/// `session/cancel` params.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelNotification {
    /// The session whose turn stops.
    pub session_id: String,
}

/// `session/request_permission` params.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionParams {
    /// The session.
    #[serde(default)]
    pub session_id: String,
    /// The call it gates (announced earlier by `tool_call`; fields here refine it).
    pub tool_call: ToolCallUpdate,
    /// What the client may choose.
    #[serde(default)]
    pub options: Vec<PermissionOption>,
}

/// One choice of a permission request.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// What the answer names.
    pub option_id: String,
    /// For people.
    #[serde(default)]
    pub name: String,
    /// What choosing it means.
    pub kind: PermissionOptionKind,
}

/// `session/request_permission` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionResponse {
    /// The choice.
    pub outcome: PermissionOutcome,
}

/// The client's choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum PermissionOutcome {
    /// One of the options.
    Selected {
        /// Its `optionId`.
        option_id: String,
    },
    /// The turn was cancelled before a choice was made.
    Cancelled,
}

/// `fs/read_text_file` params.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileParams {
    /// The session.
    #[serde(default)]
    pub session_id: String,
    /// The file (absolute).
    pub path: String,
    /// The first line to return, from 1.
    #[serde(default)]
    pub line: Option<u32>,
    /// How many lines to return.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// `fs/read_text_file` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileResponse {
    /// The text.
    pub content: String,
}

/// `fs/write_text_file` params.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileParams {
    /// The session.
    #[serde(default)]
    pub session_id: String,
    /// The file (absolute); created when missing.
    pub path: String,
    /// Its whole new text.
    pub content: String,
}

#[cfg(test)]
mod tests;
