//! The stdio control protocol (docs/peers/claude.md#control-protocol): `control_request` / `control_response` /
//! `control_cancel_request` envelopes, which either side may originate on the same pipes as the
//! conversation. The CLI's requests (`can_use_tool`, `mcp_message`, `hook_callback`, …) must always be
//! answered or the CLI blocks; ours (`initialize`, `interrupt`, …) are answered by the CLI.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ClientMessage, Extra, lenient};

/// A `control_request` envelope.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlRequest {
    /// Any unique string (the CLI uses UUIDs, the SDKs `req_<n>_<hex>`); the answer echoes it.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub request_id: String,
    /// What is asked.
    #[serde(default)]
    pub request: ControlRequestBody,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ControlRequest {
    /// Our `initialize` request, with no hooks (the CLI then needs none answered).
    pub fn initialize(request_id: impl Into<String>) -> Self {
        Self::new(request_id, ControlRequestBody::Initialize(InitializeRequest::default()))
    }

    /// Our `interrupt` request: stops the running turn, whose `result` still follows.
    pub fn interrupt(request_id: impl Into<String>) -> Self {
        Self::new(request_id, ControlRequestBody::Interrupt(InterruptRequest::default()))
    }

    /// A request with `body`.
    pub fn new(request_id: impl Into<String>, body: ControlRequestBody) -> Self {
        Self { request_id: request_id.into(), request: body, extra: Extra::new() }
    }

    /// The whole stdin line as JSON (`type: control_request` included).
    pub fn to_line(&self) -> Value {
        ClientMessage::ControlRequest(self.clone()).to_value()
    }
}

tagged_enum! {
    /// The `request` of a `control_request`, by `subtype`. Host → CLI subtypes are the ones we send;
    /// CLI → host subtypes are the ones we must answer (an unknown one gets an `error` answer).
    pub enum ControlRequestBody, tag = "subtype", other = Other {
        /// CLI → host: may this tool call run? Answer with a [`PermissionResult`].
        CanUseTool(CanUseToolRequest) = "can_use_tool",
        /// CLI → host: a JSON-RPC message for an SDK MCP server the host serves.
        McpMessage(McpMessageRequest) = "mcp_message",
        /// CLI → host: a hook registered in `initialize` fired.
        HookCallback(HookCallbackRequest) = "hook_callback",
        /// CLI → host: an MCP elicitation (answer `{"action":"decline"}` unless supported).
        Elicitation(ElicitationRequest) = "elicitation",
        /// Host → CLI: the handshake (optional; sent before the first user line).
        Initialize(InitializeRequest) = "initialize",
        /// Host → CLI: stop the running turn.
        Interrupt(InterruptRequest) = "interrupt",
        /// Host → CLI: change the permission mode.
        SetPermissionMode(SetPermissionModeRequest) = "set_permission_mode",
        /// Host → CLI: change the model.
        SetModel(SetModelRequest) = "set_model",
    }
}

impl Default for ControlRequestBody {
    fn default() -> Self {
        ControlRequestBody::Other(Default::default())
    }
}

/// `can_use_tool`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CanUseToolRequest {
    /// The tool as the CLI names it (`Bash`, `mcp__server__tool`, …).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub tool_name: String,
    /// The call this decision is about; ties the prompt to its `tool_use` and `tool_result`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The arguments the call would run with (echoed back, possibly edited, in an allow).
    #[serde(default)]
    pub input: Value,
    /// A name for people.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the call does, for people.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Rules the user could add to stop being asked (`addRules`, `addDirectories`, `setMode`).
    #[serde(default, deserialize_with = "lenient::vec")]
    pub permission_suggestions: Vec<Value>,
    /// Why the CLI asks, as a machine class.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub decision_reason_type: Option<String>,
    /// The path outside the allowed directories that triggered the prompt, if that was why.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub blocked_path: Option<String>,
    /// Everything else (`mcp_server`, `server_policy_ask_only`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `mcp_message`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct McpMessageRequest {
    /// The SDK MCP server addressed (as declared in `--mcp-config` / `initialize`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub server_name: String,
    /// The JSON-RPC 2.0 MCP message; answer with `{"mcp_response": <response>}`.
    #[serde(default)]
    pub message: Value,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `hook_callback`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookCallbackRequest {
    /// The `hookCallbackIds` entry registered in `initialize`.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub callback_id: String,
    /// The hook input (`hook_event_name`, `tool_name`, `tool_input`, …).
    #[serde(default)]
    pub input: Value,
    /// The call the hook is about, for tool hooks.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `elicitation` (fields kept raw: clawbridge declines them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ElicitationRequest {
    /// Everything it carries.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `initialize`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InitializeRequest {
    /// Hook registrations (`{Event: [{matcher?, hookCallbackIds, timeout?}]}`); written as `null` when
    /// there are none, as the SDKs do (and as the recordings expect).
    #[serde(default)]
    pub hooks: Option<Value>,
    /// Everything else (`agents`, `appendSystemPrompt`, `sdkMcpServers`, …), written as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `interrupt`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InterruptRequest {
    /// Also drop user lines queued behind the running turn.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub cancel_queued: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `set_permission_mode`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetPermissionModeRequest {
    /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, …
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub mode: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `set_model`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetModelRequest {
    /// The model; `None` returns to the default.
    #[serde(default, deserialize_with = "lenient::opt")]
    pub model: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `control_response` envelope.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlResponse {
    /// The answer.
    #[serde(default)]
    pub response: ControlResponseBody,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ControlResponse {
    /// A success answer to `request_id` carrying `response` (e.g. a [`PermissionResult`]'s value).
    pub fn success(request_id: impl Into<String>, response: Value) -> Self {
        let body = ControlSuccess { request_id: request_id.into(), response, extra: Extra::new() };
        Self { response: ControlResponseBody::Success(body), extra: Extra::new() }
    }

    /// An error answer to `request_id` (for requests we cannot or will not serve).
    pub fn error(request_id: impl Into<String>, message: impl Into<String>) -> Self {
        let body = ControlError { request_id: request_id.into(), error: message.into(), extra: Extra::new() };
        Self { response: ControlResponseBody::Error(body), extra: Extra::new() }
    }

    /// The request this answers.
    pub fn request_id(&self) -> Option<&str> {
        match &self.response {
            ControlResponseBody::Success(s) => Some(&s.request_id),
            ControlResponseBody::Error(e) => Some(&e.request_id),
            ControlResponseBody::Other(u) => u.get_str("request_id"),
        }
    }

    /// The whole stdin line as JSON (`type: control_response` included).
    pub fn to_line(&self) -> Value {
        ClientMessage::ControlResponse(self.clone()).to_value()
    }
}

tagged_enum! {
    /// The `response` of a `control_response`, by `subtype`.
    pub enum ControlResponseBody, tag = "subtype", other = Other {
        /// The request succeeded.
        Success(ControlSuccess) = "success",
        /// The request failed.
        Error(ControlError) = "error",
    }
}

impl Default for ControlResponseBody {
    fn default() -> Self {
        ControlResponseBody::Other(Default::default())
    }
}

/// A `success` answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlSuccess {
    /// The request answered.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub request_id: String,
    /// The result (`{}` when there is nothing to say); for `initialize`, an [`InitializeResponse`].
    #[serde(default)]
    pub response: Value,
    /// Everything else (`pending_permission_requests`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// An `error` answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlError {
    /// The request answered.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub request_id: String,
    /// What went wrong.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub error: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The CLI's answer to `initialize` (decode it from [`ControlSuccess::response`]). It also holds
/// `account` (personal data): it stays in `extra` and must never be logged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InitializeResponse {
    /// The CLI's version, cross-checked against `claude --version`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub claude_code_version: Option<String>,
    /// The permission mode in force.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub current_permission_mode: Option<String>,
    /// Feature flags.
    #[serde(default, deserialize_with = "lenient::vec")]
    pub capabilities: Vec<String>,
    /// The CLI's process id.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// Everything else (`commands`, `agents`, `models`, `account`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `control_cancel_request`: the CLI withdrew one of its requests; abort its handler and send no
/// answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ControlCancelRequest {
    /// The withdrawn request.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub request_id: String,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

tagged_enum! {
    /// The answer to `can_use_tool` (the `response` of a success envelope), by `behavior`.
    pub enum PermissionResult, tag = "behavior", other = Other {
        /// Run it.
        Allow(PermissionAllow) = "allow",
        /// Do not run it; the model sees `message` as the tool's (error) result.
        Deny(PermissionDeny) = "deny",
    }
}

impl PermissionResult {
    /// Allow the call with `input` (the original or an edited one: the CLI runs what it gets back).
    pub fn allow(input: Value) -> Self {
        PermissionResult::Allow(PermissionAllow {
            updated_input: input,
            updated_permissions: None,
            extra: Extra::new(),
        })
    }

    /// Deny the call; the turn goes on and the model reads `message`.
    pub fn deny(message: impl Into<String>) -> Self {
        PermissionResult::Deny(PermissionDeny { message: message.into(), interrupt: None, extra: Extra::new() })
    }

    /// Deny the call and stop the turn.
    pub fn deny_and_interrupt(message: impl Into<String>) -> Self {
        PermissionResult::Deny(PermissionDeny { message: message.into(), interrupt: Some(true), extra: Extra::new() })
    }
}

/// `behavior: allow`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionAllow {
    /// The input the tool runs with (required by the CLI; echo the request's `input` to keep it).
    #[serde(default, rename = "updatedInput")]
    pub updated_input: Value,
    /// Permission rules to add (from the request's `permission_suggestions`).
    #[serde(default, rename = "updatedPermissions", skip_serializing_if = "Option::is_none")]
    pub updated_permissions: Option<Vec<Value>>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `behavior: deny`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionDeny {
    /// Why; becomes the tool's error result for the model.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub message: String,
    /// `true` also interrupts the turn.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<bool>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The answer to an `elicitation` clawbridge does not support.
pub fn decline_elicitation() -> Value {
    json!({"action": "decline"})
}
