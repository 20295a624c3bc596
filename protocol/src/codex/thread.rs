//! Threads: `thread/start`, `thread/resume`, the `Thread` object and its status (docs/peers/codex.md#threads).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ApprovalPolicy, ApprovalsReviewer, Extra, SandboxMode, SandboxPolicy, Turn};

/// `thread/start` params. Every field is optional; unset ones are not sent (server defaults apply).
/// The result is a [`ThreadStartResponse`], followed by a `thread/started` notification.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartParams {
    /// Model slug overriding the config's `model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider id overriding the config's `model_provider`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Working directory of the thread (absolute path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// When Codex asks us before acting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Who answers approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_reviewer: Option<ApprovalsReviewer>,
    /// Sandbox mode (a kebab-case string here, unlike `turn/start.sandboxPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Dotted config overrides, e.g. `{"model_reasoning_effort":"low"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
    /// Replaces the built-in base prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Extra developer-role instructions added to the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// `true`: the thread is not persisted as a rollout (cannot be resumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Experimental (needs `capabilities.experimentalApi`): tools the client implements, called through
    /// `item/tool/call`. A resumed thread must keep the same definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_tools: Option<Vec<DynamicToolSpec>>,
    /// Experimental: also emit raw model events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental_raw_events: Option<bool>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread/resume` params: reopen a persisted thread, optionally overriding its settings. The result
/// has the [`ThreadStartResponse`] shape; no `thread/started` follows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadResumeParams {
    /// The thread to resume (from an earlier `thread/start` result).
    pub thread_id: String,
    /// `true`: do not hydrate the full turn history into the result (avoids a multi-MB response and the
    /// `deprecationNotice` about full-history hydration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_turns: Option<bool>,
    /// Model slug override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider id override; the provider must still resolve or the resume fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Working directory override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Approval policy override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Approval reviewer override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_reviewer: Option<ApprovalsReviewer>,
    /// Sandbox mode override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Dotted config overrides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Map<String, Value>>,
    /// Base prompt override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_instructions: Option<String>,
    /// Developer instructions override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ThreadResumeParams {
    /// Resume `thread_id` with no overrides.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Self { thread_id: thread_id.into(), ..Self::default() }
    }
}

/// `thread/fork` params: a new thread that starts with a copy of `threadId`'s history (the
/// source is left as it was), optionally overriding its settings. The result has the
/// [`ThreadStartResponse`] shape, followed by a `thread/started` notification.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadForkParams {
    /// The thread to copy.
    pub thread_id: String,
    /// `true`: the fork is not persisted as a rollout (cannot be resumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// `true`: return only the fork's metadata, not its copied turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_turns: Option<bool>,
    /// Model slug override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Working directory override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Approval policy override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Sandbox mode override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// Developer instructions override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub developer_instructions: Option<String>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `thread/start` (and `thread/resume`) result: the thread and the settings in effect.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartResponse {
    /// The thread; the connection is now subscribed to its notifications.
    pub thread: Thread,
    /// Model in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Provider in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Working directory in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Approval policy in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Approval reviewer in effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals_reviewer: Option<ApprovalsReviewer>,
    /// Sandbox in effect, as a `type`-tagged object (not the kebab-case string sent in the params).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxPolicy>,
    /// Reasoning effort in effect (a non-empty string advertised by the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Fields not modelled here (`thread/resume` adds paging cursors and the turn history page).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `thread/resume` result: the same shape as [`ThreadStartResponse`] (resume-only fields land in
/// `extra`).
pub type ThreadResumeResponse = ThreadStartResponse;

/// A thread (a conversation persisted as a rollout). 0.169 sends ~20 more fields than modelled here;
/// they are in `extra`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// Thread id (a UUIDv7); the `threadId` of every later call and notification.
    pub id: String,
    /// Loaded / idle / active state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ThreadStatus>,
    /// Rollout JSONL under `$CODEX_HOME/sessions/`; absent for ephemeral threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Working directory of the thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Codex version that *created* the thread (not the running server's version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_version: Option<String>,
    /// Provider the thread was created with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
    /// Whether the thread is not persisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<bool>,
    /// Creation time (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// Last update time (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
    /// Turn history: filled by `thread/resume` / `thread/read` without `excludeTurns`, `[]` on
    /// `thread/start`; `None` when the server left it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<Turn>>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread.status` and `thread/status/changed.status`, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ThreadStatus {
    /// Known but not loaded in this server process.
    NotLoaded,
    /// Loaded, no turn running.
    Idle,
    /// The thread hit a fatal error (e.g. the provider failed).
    SystemError,
    /// A turn is running.
    Active {
        /// What the turn waits on, if anything (empty while it works).
        #[serde(rename = "activeFlags", default)]
        active_flags: Vec<ThreadActiveFlag>,
    },
    /// A status these types do not know, kept as received.
    #[serde(untagged)]
    Unknown(Value),
}

open_string_enum! {
    /// Why an active thread is waiting.
    pub enum ThreadActiveFlag {
        /// A server request for approval is outstanding.
        WaitingOnApproval = "waitingOnApproval",
        /// A server request for user input is outstanding.
        WaitingOnUserInput = "waitingOnUserInput",
    }
}

/// One entry of `thread/start.dynamicTools`, tagged by `type`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum DynamicToolSpec {
    /// A single tool: `{"type":"function","name":…,"description":…,"inputSchema":{…}}`.
    Function(DynamicToolFunction),
    /// A named group of tools: `{"type":"namespace","name":…,"description":…,"tools":[…]}`.
    Namespace(DynamicToolNamespace),
    /// A spec these types do not know, kept as given.
    #[serde(untagged)]
    Unknown(Value),
}

/// A dynamic tool the client implements.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolFunction {
    /// Tool name the model calls; comes back as `tool` in `item/tool/call`.
    pub name: String,
    /// Description shown to the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    #[serde(default)]
    pub input_schema: Value,
    /// Whether the tool is only loaded into the prompt on demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A group of dynamic tools; its name comes back as `namespace` in `item/tool/call`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DynamicToolNamespace {
    /// Namespace name.
    pub name: String,
    /// Description shown to the model.
    #[serde(default)]
    pub description: String,
    /// The member tools (functions).
    #[serde(default)]
    pub tools: Vec<DynamicToolSpec>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
