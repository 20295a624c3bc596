//! `session/reset` and `shutdown`: connection- and session-level control.

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

/// The host's reset reasons.
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

/// `session/reset` result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionResetResponse {
    /// Whether a binding existed and was dropped (false: nothing to do, which is not an error).
    pub dropped: bool,
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
