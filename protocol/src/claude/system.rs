//! `system` lines (`subtype` tagged): the per-turn `init`, request status, auto-denied permissions,
//! API retries, compaction boundaries, and a catch-all for the many others (`thinking_tokens`,
//! `hook_*`, `task_*`, …) that carry nothing a turn's events need.

use serde::{Deserialize, Serialize};

use super::{Extra, lenient};

tagged_enum! {
    /// A `system` line, by `subtype`. Unknown subtypes are expected (the CLI adds them freely) and land
    /// in [`SystemMessage::Other`], which is not a decode problem.
    pub enum SystemMessage, tag = "subtype", other = Other {
        /// Session facts; re-sent every turn (docs/peers/claude.md#stdout-message-types): handle it idempotently.
        Init(SystemInit) = "init",
        /// Progress such as `requesting` (before each model call) or `compacting`.
        Status(SystemStatus) = "status",
        /// A tool call the CLI denied by itself (no `can_use_tool` was asked).
        PermissionDenied(PermissionDenied) = "permission_denied",
        /// A model request failed and the CLI retries it after a delay.
        ApiRetry(ApiRetry) = "api_retry",
        /// The CLI compacted the conversation (`/compact`, or its own auto-compaction).
        CompactBoundary(CompactBoundary) = "compact_boundary",
    }
}

impl SystemMessage {
    /// The session the line belongs to, whatever its subtype.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            SystemMessage::Init(m) => m.session_id.as_deref(),
            SystemMessage::Status(m) => m.session_id.as_deref(),
            SystemMessage::PermissionDenied(m) => m.session_id.as_deref(),
            SystemMessage::ApiRetry(m) => m.session_id.as_deref(),
            SystemMessage::CompactBoundary(m) => m.session_id.as_deref(),
            SystemMessage::Other(u) => u.get_str("session_id"),
        }
    }
}

/// `system/init`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemInit {
    /// The resume handle (`--resume <id>`); the same on every turn of a process.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The CLI's version, cross-checked against `claude --version` (docs/peers/claude.md#version-mismatch).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub claude_code_version: Option<String>,
    /// The working directory the CLI runs in.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The model in use.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The tool names the model is offered (differs by permission mode and prompt tool).
    #[serde(default, deserialize_with = "lenient::vec")]
    pub tools: Vec<String>,
    /// MCP servers and whether they connected (an SDK server that `failed` silently loses its tools).
    #[serde(default, deserialize_with = "lenient::vec")]
    pub mcp_servers: Vec<McpServerStatus>,
    /// The permission mode in force (`default`, `acceptEdits`, …).
    #[serde(
        default,
        rename = "permissionMode",
        deserialize_with = "lenient::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub permission_mode: Option<String>,
    /// Where the API key came from (`ANTHROPIC_API_KEY`, …); never the key itself.
    #[serde(
        default,
        rename = "apiKeySource",
        deserialize_with = "lenient::opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_key_source: Option<String>,
    /// Feature flags for feature detection (`interrupt_receipt_v1`, …); unknown values are ignored.
    #[serde(default, deserialize_with = "lenient::vec")]
    pub capabilities: Vec<String>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else (`slash_commands`, `agents`, `skills`, `plugins`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// One entry of `system/init.mcp_servers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct McpServerStatus {
    /// The server's name (the `server` in `mcp__server__tool`).
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub name: String,
    /// `connected`, `pending`, `failed`, …
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `system/status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemStatus {
    /// `requesting`, `compacting`, … (`null` when a status ends).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The session.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `system/permission_denied`: the CLI denied a call by rule or mode, without asking the host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionDenied {
    /// The denied tool.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The denied call; its `tool_result` follows with `is_error: true`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Why, as a machine class.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub decision_reason_type: Option<String>,
    /// Why, for people.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The session.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `system/api_retry`: the CLI's model request failed and it tries again after `retry_delay_ms`
/// (Claude Code 2.1.328 sends `attempt`, `max_retries`, `retry_delay_ms`, `error_status`, `error`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiRetry {
    /// Which retry this is, from 1.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// How many retries the CLI makes in all.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// How long until the retry.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub retry_delay_ms: Option<u64>,
    /// The HTTP status of the failed request (`null` when none came).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub error_status: Option<u16>,
    /// The CLI's category of the failure (`rate_limit`, `server_error`, …).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The session the line belongs to.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Everything else (`uuid`, `no_response`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `system/compact_boundary`: the conversation was compacted; what follows continues from the
/// summary (Claude Code 2.1.328 sends `compact_metadata` with `trigger`, `pre_tokens`,
/// `post_tokens`, `cumulative_dropped_tokens`, `duration_ms`; an auto-compaction also names the
/// preserved messages).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactBoundary {
    /// What the compaction did.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub compact_metadata: Option<CompactMetadata>,
    /// The session the line belongs to (absent on some auto-compaction boundaries).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else (`logical_parent_uuid`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `compact_boundary.compact_metadata`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactMetadata {
    /// `manual` (`/compact`) or `auto` (the CLI's own, past its auto-compact threshold).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The context's size before, in tokens.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub pre_tokens: Option<u64>,
    /// The context's size after, in tokens.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub post_tokens: Option<u64>,
    /// Everything else (`cumulative_dropped_tokens`, `duration_ms`, `preserved_segment`, …).
    #[serde(flatten)]
    pub extra: Extra,
}
