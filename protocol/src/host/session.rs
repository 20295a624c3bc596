//! `session/reset`, `session/delete`, `session/contextReset` and `shutdown`: connection- and
//! session-level control.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session/reset` params: drop the native thread binding of an OpenClaw session (the host's
/// `reset(params)`), so the next attempt starts a fresh native thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResetParams {
    /// The session whose binding is dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session key, used when the host has no session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The agent the session belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Why the host resets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ResetReason>,
}

/// The host's reset reasons (`AgentHarnessResetParams.reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ResetReason {
    /// A new session replaced it.
    New,
    /// The user reset it.
    Reset,
    /// It idled out.
    Idle,
    /// The daily rollover.
    Daily,
    /// The host compacted it.
    Compaction,
    /// It was deleted.
    Deleted,
    /// `unknown`, or a reason this build does not know.
    #[serde(other)]
    Unknown,
}

impl ResetReason {
    /// Whether a reset for this reason keeps the session's native thread: only `compaction` does
    /// (the host compacted its side of the same session; the native thread holds the context it
    /// must keep). Every other reason retires the session the binding served, so the binding is
    /// dropped and the next attempt starts a fresh native session (docs/host-protocol.md, the
    /// reason table).
    pub fn keeps_native_session(self) -> bool {
        matches!(self, ResetReason::Compaction)
    }
}

/// What `session/reset` did with the session's binding (protocol version 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ResetAction {
    /// The binding was dropped: the next attempt starts a fresh native session.
    Dropped,
    /// The binding was kept (`compaction`): the next attempt continues the native session.
    Kept,
    /// The session had no binding; nothing to do (not an error).
    #[default]
    #[serde(other)]
    Unbound,
}

/// `session/reset` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResetResponse {
    /// Whether a binding existed and was dropped (false: nothing to do or kept, which is not an
    /// error).
    pub dropped: bool,
    /// What was done with the binding, by reason (protocol version 2).
    #[serde(default)]
    pub action: ResetAction,
    /// The attempt that was running on the session when the reset arrived: the reset took effect
    /// after it ended, and was answered then (protocol version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_attempt: Option<String>,
}

/// `session/delete` params: OpenClaw deleted the session (`withSessionDeletion`, after its commit);
/// the bridge forgets its native binding so the native thread is never resumed (protocol version 2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleteParams {
    /// The deleted session.
    pub session_id: String,
    /// Its session key, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The agent it belonged to, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// `session/delete` result (protocol version 2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleteResponse {
    /// Whether a binding existed and was forgotten (false: nothing to do, not an error).
    pub forgotten: bool,
    /// Whether the native session was archived too (Codex `thread/archive`); false when there was
    /// nothing to archive, the backend keeps no archive, or archiving failed (the log says why).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
    /// The attempt that was running on the session: the deletion took effect after it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_attempt: Option<String>,
}

/// `session/contextReset` params: OpenClaw cut the session's history under the same key (a rewind
/// or a branch switch, `withSessionContextReset`, after its commit), so the native thread no longer
/// holds the history the user sees; the bridge invalidates it (protocol version 2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionContextResetParams {
    /// The session whose history was cut (its id before the cut).
    pub session_id: String,
    /// The session's recorded predecessor, which may still own native context after an
    /// interrupted compaction; its binding is invalidated too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_id: Option<String>,
    /// Its session key, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The agent it belongs to, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// `session/contextReset` result (protocol version 2).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionContextResetResponse {
    /// The session ids whose binding was dropped (empty: none had one, not an error).
    #[serde(default)]
    pub invalidated: Vec<String>,
    /// The attempt that was running on one of the sessions: the reset took effect after it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_attempt: Option<String>,
}

/// `shutdown` params: stop accepting attempts, cancel running ones, stop every native process.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownParams {
    /// Why, for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `shutdown` result, sent once every running attempt has sent its result and every native process
/// is stopped; the bridge then exits when the host closes its stdin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownResponse {
    /// Attempts that were still running and were cancelled.
    pub cancelled_attempts: u32,
}
