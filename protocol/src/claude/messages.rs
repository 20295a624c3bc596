//! The line-level enums — [`CliMessage`] (stdout) and [`ClientMessage`] (stdin) — and the
//! conversation lines: `assistant`, `user`, `result`, and the user line the client writes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    ApiMessage, ApiUsage, ContentBlock, ControlCancelRequest, ControlRequest, ControlResponse, Extra, MessageContent,
    StreamEventMessage, SystemMessage, lenient,
};

tagged_enum! {
    /// One line the CLI writes on stdout, by `type`. Decode with [`CliMessage::from_value`], which never
    /// fails. [`CliMessage::Unknown`] holds types the CLI may send that carry nothing for a turn
    /// (`rate_limit_event`, `tool_progress`, `keep_alive`, …; see [`CliMessage::is_known_skip`]) as
    /// well as genuinely new ones.
    pub enum CliMessage, tag = "type", other = Unknown {
        /// Session facts, status, auto-denials and other notices.
        System(SystemMessage) = "system",
        /// One content block of an assistant message.
        Assistant(AssistantMessage) = "assistant",
        /// Tool results (and replayed or synthetic user messages).
        User(UserMessage) = "user",
        /// A raw SSE event (partial messages only).
        StreamEvent(StreamEventMessage) = "stream_event",
        /// The end of the turn; exactly one per user line, and authoritative.
        Result(ResultMessage) = "result",
        /// A request the host must answer.
        ControlRequest(ControlRequest) = "control_request",
        /// The CLI's answer to one of our control requests.
        ControlResponse(ControlResponse) = "control_response",
        /// The CLI withdrew one of its requests.
        ControlCancelRequest(ControlCancelRequest) = "control_cancel_request",
    }
}

impl CliMessage {
    /// Types safe to skip (docs/peers/claude.md#stdout-message-types): no answer needed, no event.
    pub const KNOWN_SKIPS: &'static [&'static str] =
        &["rate_limit_event", "tool_progress", "tool_use_summary", "auth_status", "prompt_suggestion", "keep_alive"];

    /// Whether this is an `Unknown` line of a type listed in [`KNOWN_SKIPS`](Self::KNOWN_SKIPS) (so a
    /// caller can log only the surprising ones).
    pub fn is_known_skip(&self) -> bool {
        match self {
            CliMessage::Unknown(u) if u.decode_error.is_none() => {
                u.get_str("type").is_some_and(|t| Self::KNOWN_SKIPS.contains(&t))
            }
            _ => false,
        }
    }

    /// The session the line names, if any.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            CliMessage::System(m) => m.session_id(),
            CliMessage::Assistant(m) => m.session_id.as_deref(),
            CliMessage::User(m) => m.session_id.as_deref(),
            CliMessage::StreamEvent(m) => m.session_id.as_deref(),
            CliMessage::Result(m) => m.session_id.as_deref(),
            CliMessage::ControlRequest(_) | CliMessage::ControlResponse(_) | CliMessage::ControlCancelRequest(_) => {
                None
            }
            CliMessage::Unknown(u) => u.get_str("session_id"),
        }
    }
}

tagged_enum! {
    /// One line the client writes on stdin, by `type` (one object per line, from a single writer).
    pub enum ClientMessage, tag = "type", other = Unknown {
        /// A user turn.
        User(UserLine) = "user",
        /// A control request (ours) .
        ControlRequest(ControlRequest) = "control_request",
        /// An answer to one of the CLI's control requests.
        ControlResponse(ControlResponse) = "control_response",
        /// We withdraw one of our requests.
        ControlCancelRequest(ControlCancelRequest) = "control_cancel_request",
    }
}

/// An `assistant` line: one content block of a model message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The message, with (on 2.1.328) exactly one block in `content`.
    #[serde(default)]
    pub message: ApiMessage,
    /// `null` for the main agent; the spawning `Task` call's id for a subagent's message.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// The session.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// An API error newer CLIs attach to a synthetic assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// The message is the CLI's own report of a failed API request (model `<synthetic>`, its text
    /// `API Error: …`), not the model's words; the `result` that follows carries the failure.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub is_api_error_message: Option<bool>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else (`timestamp`, `thinking_display`, `aborted`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A `user` line from the CLI: tool results, a replayed prompt, or a synthetic notice.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// `{role: "user", content}`; tool results are `tool_result` blocks in `content`.
    #[serde(default)]
    pub message: UserContent,
    /// `null` for the main agent; the spawning `Task` call's id inside a subagent.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub parent_tool_use_id: Option<String>,
    /// The session.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Structured, tool-specific result (Bash: `{stdout, stderr, interrupted, …}`; a string on errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_result: Option<Value>,
    /// Per call: how its permission was decided and whether it ran.
    #[serde(default, deserialize_with = "lenient::vec")]
    pub tool_result_meta: Vec<ToolResultMeta>,
    /// Set on echoes of our own user lines (`--replay-user-messages`).
    #[serde(default, rename = "isReplay", deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub is_replay: Option<bool>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else (`timestamp`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

impl UserMessage {
    /// The `tool_result` blocks.
    pub fn tool_results(&self) -> impl Iterator<Item = &super::ToolResultBlock> {
        self.message
            .content
            .blocks()
            .iter()
            .filter_map(|b| if let ContentBlock::ToolResult(r) = b { Some(r) } else { None })
    }

    /// The meta entry for `tool_use_id`.
    pub fn meta_for(&self, tool_use_id: &str) -> Option<&ToolResultMeta> {
        self.tool_result_meta.iter().find(|m| m.id.as_deref() == Some(tool_use_id))
    }
}

/// The `message` of a user line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserContent {
    /// Always `user`.
    #[serde(default = "user_role")]
    pub role: String,
    /// A plain string or content blocks.
    #[serde(default)]
    pub content: MessageContent,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Default for UserContent {
    fn default() -> Self {
        Self { role: user_role(), content: MessageContent::default(), extra: Extra::new() }
    }
}

fn user_role() -> String {
    "user".to_owned()
}

/// One `tool_result_meta` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolResultMeta {
    /// The call.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `{decision: "accept" | "reject", source}`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<PermissionDecision>,
    /// Set when the call did not complete as asked: `permission-rule` (refused before it ran, with a
    /// `reject` decision), `user-rejected` (with no permission decision: stopped while running by an
    /// interrupt, so it may have run in part or in full; see [`ToolResultMeta::stopped_while_running`]).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub non_execution_kind: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tool_result_meta[].permission_decision`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionDecision {
    /// `accept` or `reject`.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// Who decided (`user_temporary`, `user_reject`, a rule, …).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ToolResultMeta {
    /// Whether the permission decision was a rejection.
    pub fn is_reject(&self) -> bool {
        self.permission_decision.as_ref().and_then(|d| d.decision.as_deref()) == Some("reject")
    }

    /// Whether the call was stopped while it ran (an interrupt), rather than refused before it ran:
    /// Claude Code 2.1.328 tags both `non_execution_kind`, but only a refusal carries a permission
    /// decision (docs/peers/claude.md#declined-tool-calls).
    pub fn stopped_while_running(&self) -> bool {
        self.non_execution_kind.as_deref() == Some("user-rejected") && self.permission_decision.is_none()
    }

    /// Whether the call never started: a non-execution kind that is not an interrupt of a running call.
    pub fn never_started(&self) -> bool {
        self.non_execution_kind.is_some() && !self.stopped_while_running()
    }
}

open_string_enum! {
    /// `result.subtype`.
    pub enum ResultSubtype {
        /// The turn completed (check `is_error` anyway: API failures come as `success` too).
        Success = "success",
        /// `--max-turns` was reached.
        ErrorMaxTurns = "error_max_turns",
        /// The turn failed while running (also what an interrupt produces).
        ErrorDuringExecution = "error_during_execution",
        /// The cost budget ran out.
        ErrorMaxBudgetUsd = "error_max_budget_usd",
        /// Structured output could not be produced.
        ErrorMaxStructuredOutputRetries = "error_max_structured_output_retries",
    }
}

/// A `result` line: the end of a turn and the only place with the turn's final usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultMessage {
    /// How the turn ended.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub subtype: Option<ResultSubtype>,
    /// The authoritative failure flag (docs/peers/claude.md#error-results).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// The final text (or the error prose on an API failure).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// The resume handle.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Model calls in the turn.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub num_turns: Option<u64>,
    /// Wall time of the turn.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Time spent in the API.
    #[serde(default, deserialize_with = "lenient::count", skip_serializing_if = "Option::is_none")]
    pub duration_api_ms: Option<u64>,
    /// The last model call's stop reason.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Why the turn ended (`completed`, `aborted_streaming`, `aborted_tools`, `max_turns`, …).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
    /// The turn's token usage (Anthropic convention: input excludes cached tokens).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub usage: Option<ApiUsage>,
    /// The CLI's own cost estimate.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub total_cost_usd: Option<f64>,
    /// Per-model usage and cost, as received.
    #[serde(default, rename = "modelUsage", skip_serializing_if = "Option::is_none")]
    pub model_usage: Option<Value>,
    /// Calls denied in this turn (by the host or by rule).
    #[serde(default, deserialize_with = "lenient::vec")]
    pub permission_denials: Vec<PermissionDenial>,
    /// Error details (strings or objects, as received); often empty even on failure.
    #[serde(default, deserialize_with = "lenient::vec")]
    pub errors: Vec<Value>,
    /// The line's own id.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// On a turn the API failed (`terminal_reason` `api_error`): the CLI's class of the failure,
    /// such as `connection_failed` (docs/peers/claude.md#error-results).
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub api_error: Option<String>,
    /// On a turn the API failed: the HTTP status the provider answered, `null` when none came.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub api_error_status: Option<u16>,
    /// Everything else (`structured_output`, `ttft_ms`, …).
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `api_error` classes of Claude Code 2.1.328 that say the transport to the provider failed:
/// the connection was lost or could not be made, the stream stopped arriving, the machine slept
/// mid-request.
const TRANSPORT_API_ERRORS: [&str; 3] = ["connection_failed", "stream_idle_timeout", "computer_slept"];

impl ResultMessage {
    /// Whether the CLI failed the turn on its transport to the provider, after its own retries: an
    /// API failure of a transport class with no HTTP status (no response came). A status the
    /// provider answered (a 5xx, a 429) is the provider's failure, not the transport's.
    pub fn is_transport_failure(&self) -> bool {
        self.is_failure()
            && self.api_error_status.is_none()
            && self.api_error.as_deref().is_some_and(|class| TRANSPORT_API_ERRORS.contains(&class))
    }

    /// Whether the turn failed: `is_error`, or any subtype but `success` (and no subtype at all).
    pub fn is_failure(&self) -> bool {
        self.is_error == Some(true) || !matches!(self.subtype, Some(ResultSubtype::Success))
    }

    /// Whether the turn was interrupted (`terminal_reason` `aborted_*`).
    pub fn is_aborted(&self) -> bool {
        self.terminal_reason.as_deref().is_some_and(|r| r.starts_with("aborted"))
    }

    /// The error details as one line: `errors[]` joined (strings as is, objects by their `message`).
    pub fn error_text(&self) -> Option<String> {
        let parts: Vec<String> = self
            .errors
            .iter()
            .filter_map(|e| match e {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => {
                    Some(other.get("message").and_then(Value::as_str).map_or_else(|| other.to_string(), str::to_owned))
                }
            })
            .filter(|s| !s.trim().is_empty())
            .collect();
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// One `permission_denials` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionDenial {
    /// The tool.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The call.
    #[serde(default, deserialize_with = "lenient::opt", skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// Its input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<Value>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The user line the client writes to start a turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserLine {
    /// Ignored by the CLI (it uses its own), but part of the shape the SDKs write; `""`.
    #[serde(default)]
    pub session_id: String,
    /// `null` for a main-agent prompt.
    #[serde(default)]
    pub parent_tool_use_id: Option<String>,
    /// The prompt.
    #[serde(default)]
    pub message: UserContent,
    /// An optional id the CLI echoes on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Everything else.
    #[serde(flatten)]
    pub extra: Extra,
}

impl UserLine {
    /// A prompt of one text block (the shape the SDKs and the recordings use).
    pub fn text(prompt: impl Into<String>) -> Self {
        let block = ContentBlock::Text(super::TextBlock { text: prompt.into(), extra: Extra::new() });
        Self {
            session_id: String::new(),
            parent_tool_use_id: None,
            message: UserContent {
                role: user_role(),
                content: MessageContent::Blocks(vec![block]),
                extra: Extra::new(),
            },
            uuid: None,
            extra: Extra::new(),
        }
    }

    /// The whole stdin line as JSON (`type: user` included).
    pub fn to_line(&self) -> Value {
        ClientMessage::User(self.clone()).to_value()
    }
}
