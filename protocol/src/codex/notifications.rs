//! Server → client notifications (docs/peers/codex.md#handshake, #the-notification-stream-of-a-turn).
//!
//! Every notification also carries a top-level `"emittedAtMs"` next to `method` / `params`; it is part
//! of the envelope, not of the params typed here, and is never required.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::{Extra, FileUpdateChange, Thread, ThreadItem, ThreadStatus, Turn, TurnError};
use crate::jsonrpc::RequestId;

method_enum! {
    /// A server → client notification, decoded by method. Methods without a variant (e.g.
    /// `account/rateLimits/updated`, `mcpServer/startupStatus/updated`, `thread/goal/*`, `hook/*`) land
    /// in [`ServerNotification::Unknown`]; ignore what you do not need.
    pub enum ServerNotification, decode = from_notification {
        /// A thread was started or forked (not on resume); may arrive after the `thread/start` result.
        ThreadStarted(ThreadStartedNotification) = "thread/started",
        /// The thread went idle / active (with flags) / systemError.
        ThreadStatusChanged(ThreadStatusChangedNotification) = "thread/status/changed",
        /// Token counts after every model response; the only source of usage.
        ThreadTokenUsageUpdated(ThreadTokenUsageUpdatedNotification) = "thread/tokenUsage/updated",
        /// The thread's history was compacted.
        ThreadCompacted(ContextCompactedNotification) = "thread/compacted",
        /// A turn began; may arrive before or after the `turn/start` result.
        TurnStarted(TurnStartedNotification) = "turn/started",
        /// A turn ended: the terminal event of a turn (`completed`, `interrupted` or `failed`).
        TurnCompleted(TurnCompletedNotification) = "turn/completed",
        /// The turn's aggregated diff (can be several MiB).
        TurnDiffUpdated(TurnDiffUpdatedNotification) = "turn/diff/updated",
        /// The model's step plan changed.
        TurnPlanUpdated(TurnPlanUpdatedNotification) = "turn/plan/updated",
        /// An item began.
        ItemStarted(ItemStartedNotification) = "item/started",
        /// An item finished; authoritative over any deltas.
        ItemCompleted(ItemCompletedNotification) = "item/completed",
        /// A chunk of an `agentMessage` item's text.
        AgentMessageDelta(ItemDeltaNotification) = "item/agentMessage/delta",
        /// A chunk of a `plan` item's text.
        PlanDelta(ItemDeltaNotification) = "item/plan/delta",
        /// A chunk of a reasoning summary part.
        ReasoningSummaryTextDelta(ReasoningSummaryTextDeltaNotification) = "item/reasoning/summaryTextDelta",
        /// A new reasoning summary part begins.
        ReasoningSummaryPartAdded(ReasoningSummaryPartAddedNotification) = "item/reasoning/summaryPartAdded",
        /// A chunk of raw reasoning text.
        ReasoningTextDelta(ReasoningTextDeltaNotification) = "item/reasoning/textDelta",
        /// A chunk of a command's output (often none for fast commands; use `aggregatedOutput`).
        CommandExecutionOutputDelta(ItemDeltaNotification) = "item/commandExecution/outputDelta",
        /// Input written to a running command's stdin.
        CommandExecutionTerminalInteraction(TerminalInteractionNotification) =
            "item/commandExecution/terminalInteraction",
        /// A chunk of a file change's output.
        FileChangeOutputDelta(ItemDeltaNotification) = "item/fileChange/outputDelta",
        /// A `fileChange` item's patch changed.
        FileChangePatchUpdated(FileChangePatchUpdatedNotification) = "item/fileChange/patchUpdated",
        /// Progress message of a running MCP tool call.
        McpToolCallProgress(McpToolCallProgressNotification) = "item/mcpToolCall/progress",
        /// A server request was answered (or dropped at turn end); later replies to it are ignored.
        ServerRequestResolved(ServerRequestResolvedNotification) = "serverRequest/resolved",
        /// A turn error; `willRetry:true` means transient (the turn goes on).
        Error(ErrorNotification) = "error",
        /// A non-fatal warning (e.g. unknown model metadata).
        Warning(WarningNotification) = "warning",
        /// A configuration problem (e.g. bubblewrap not on PATH); may arrive before `initialized`.
        ConfigWarning(ConfigWarningNotification) = "configWarning",
        /// A deprecated behaviour was used (e.g. full-history hydration on resume).
        DeprecationNotice(DeprecationNoticeNotification) = "deprecationNotice",
    }
}

impl ServerNotification {
    /// The thread this notification is about, when it names one.
    pub fn thread_id(&self) -> Option<&str> {
        use ServerNotification as N;
        Some(match self {
            N::ThreadStarted(n) => &n.thread.id,
            N::ThreadStatusChanged(n) => &n.thread_id,
            N::ThreadTokenUsageUpdated(n) => &n.thread_id,
            N::ThreadCompacted(n) => &n.thread_id,
            N::TurnStarted(n) => &n.thread_id,
            N::TurnCompleted(n) => &n.thread_id,
            N::TurnDiffUpdated(n) => &n.thread_id,
            N::TurnPlanUpdated(n) => &n.thread_id,
            N::ItemStarted(n) => &n.thread_id,
            N::ItemCompleted(n) => &n.thread_id,
            N::AgentMessageDelta(n)
            | N::PlanDelta(n)
            | N::CommandExecutionOutputDelta(n)
            | N::FileChangeOutputDelta(n) => &n.thread_id,
            N::ReasoningSummaryTextDelta(n) => &n.thread_id,
            N::ReasoningSummaryPartAdded(n) => &n.thread_id,
            N::ReasoningTextDelta(n) => &n.thread_id,
            N::CommandExecutionTerminalInteraction(n) => &n.thread_id,
            N::FileChangePatchUpdated(n) => &n.thread_id,
            N::McpToolCallProgress(n) => &n.thread_id,
            N::ServerRequestResolved(n) => &n.thread_id,
            N::Error(n) => return n.thread_id.as_deref(),
            N::Warning(n) => return n.thread_id.as_deref(),
            N::ConfigWarning(_) | N::DeprecationNotice(_) => return None,
            N::Unknown { params, .. } => return params.get("threadId").and_then(serde_json::Value::as_str),
        })
    }
}

/// The thread a notification's params name — `threadId`, or else `thread.id` (`thread/started`) —
/// read from their text without decoding the rest (borrowed when written without escapes), so a
/// router can pick the notification's session before anyone decodes it. `None` when neither is a
/// string (a present `threadId` that is no string names no thread, as in a `Value`).
pub fn thread_id_of(params: &serde_json::value::RawValue) -> Option<Cow<'_, str>> {
    let text = params.get();
    let peeked = text.trim_start().starts_with('{').then(|| serde_json::from_str::<ThreadNamed<'_>>(text));
    let Some(Ok(members)) = peeked else {
        // Not an object, or a member twice: read as a `Value` does.
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        let thread = value.get("threadId").or_else(|| value.get("thread").and_then(|t| t.get("id")));
        return thread.and_then(serde_json::Value::as_str).map(|id| Cow::Owned(id.to_owned()));
    };
    let raw = match members.thread_id {
        Some(raw) => raw,
        None => {
            let thread = members.thread.filter(|t| t.get().starts_with('{'))?;
            serde_json::from_str::<ThreadNamed<'_>>(thread.get()).ok()?.id?
        }
    };
    let text = raw.get();
    if !text.starts_with('"') {
        return None;
    }
    match text.contains('\\') {
        false => Some(Cow::Borrowed(&text[1..text.len() - 1])),
        true => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// The members that name a thread, borrowed from the params' text (`id` is the member of `thread`).
#[derive(Deserialize)]
struct ThreadNamed<'a> {
    /// `threadId`, as written (present even when `null`).
    #[serde(default, borrow, rename = "threadId", deserialize_with = "present")]
    thread_id: Option<&'a serde_json::value::RawValue>,
    /// `thread`, as written.
    #[serde(default, borrow)]
    thread: Option<&'a serde_json::value::RawValue>,
    /// `id`, as written (read on `thread`).
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a serde_json::value::RawValue>,
}

/// A member that is there, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de serde_json::value::RawValue>, D::Error> {
    <&'de serde_json::value::RawValue>::deserialize(deserializer).map(Some)
}

/// `thread/started` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStartedNotification {
    /// The new thread.
    pub thread: Thread,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread/status/changed` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadStatusChangedNotification {
    /// The thread.
    pub thread_id: String,
    /// Its new status. `idle` without a `turn/completed` is the cue to reconcile
    /// (docs/peers/codex.md#missing-turncompleted).
    pub status: ThreadStatus,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/started` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn (`inProgress`, no items).
    pub turn: Turn,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/completed` params: the turn's terminal record.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The finished turn: `status`, `error`, `durationMs` and a summary of `items`.
    pub turn: Turn,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/started` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemStartedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn the item belongs to.
    pub turn_id: String,
    /// The item as it starts (tool items: `inProgress`; messages: empty text).
    pub item: ThreadItem,
    /// When it started (Unix ms); required by the 0.169 schema, absent in normalised recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/completed` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemCompletedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn the item belongs to.
    pub turn_id: String,
    /// The final item; authoritative (full text, `aggregatedOutput`, `exitCode`, status).
    pub item: ThreadItem,
    /// When it completed (Unix ms); required by the 0.169 schema, absent in normalised recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Params of the plain text deltas: `item/agentMessage/delta`, `item/plan/delta`,
/// `item/commandExecution/outputDelta`, `item/fileChange/outputDelta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The item the chunk belongs to.
    pub item_id: String,
    /// The chunk, to append.
    #[serde(default)]
    pub delta: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/reasoning/summaryTextDelta` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// The chunk, to append to summary part `summary_index`.
    #[serde(default)]
    pub delta: String,
    /// Which summary part the chunk extends.
    #[serde(default)]
    pub summary_index: u32,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/reasoning/summaryPartAdded` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningSummaryPartAddedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// Index of the new summary part.
    #[serde(default)]
    pub summary_index: u32,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/reasoning/textDelta` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningTextDeltaNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The reasoning item.
    pub item_id: String,
    /// The chunk, to append to content part `content_index`.
    #[serde(default)]
    pub delta: String,
    /// Which content part the chunk extends.
    #[serde(default)]
    pub content_index: u32,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/commandExecution/terminalInteraction` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalInteractionNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The command item.
    pub item_id: String,
    /// The process written to.
    #[serde(default)]
    pub process_id: String,
    /// What was written.
    #[serde(default)]
    pub stdin: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/fileChange/patchUpdated` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChangePatchUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The `fileChange` item.
    pub item_id: String,
    /// The patch as it now stands.
    #[serde(default)]
    pub changes: Vec<FileUpdateChange>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `item/mcpToolCall/progress` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolCallProgressNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// The `mcpToolCall` item.
    pub item_id: String,
    /// Progress text from the MCP server.
    #[serde(default)]
    pub message: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread/tokenUsage/updated` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn that caused the model call.
    #[serde(default)]
    pub turn_id: String,
    /// Totals and the last call's usage.
    pub token_usage: ThreadTokenUsage,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `tokenUsage`: cumulative and last-call token counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// Cumulative over the thread.
    #[serde(default)]
    pub total: TokenUsageBreakdown,
    /// The most recent model call.
    #[serde(default)]
    pub last: TokenUsageBreakdown,
    /// The model's context window, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context_window: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A token count breakdown; counts the server leaves out are 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// All tokens.
    #[serde(default)]
    pub total_tokens: u64,
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Prompt tokens served from the cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Prompt tokens written to the cache.
    #[serde(default)]
    pub cache_write_input_tokens: u64,
    /// Completion tokens, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// Completion tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_output_tokens: u64,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread/compacted` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextCompactedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn during which it was compacted.
    #[serde(default)]
    pub turn_id: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/diff/updated` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiffUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// Unified diff of everything the turn changed so far.
    #[serde(default)]
    pub diff: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/plan/updated` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn.
    #[serde(default)]
    pub turn_id: String,
    /// Why the plan changed, when the model said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps.
    #[serde(default)]
    pub plan: Vec<TurnPlanStep>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One step of `turn/plan/updated.plan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPlanStep {
    /// Step text.
    #[serde(default)]
    pub step: String,
    /// Step status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PlanStepStatus>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

open_string_enum! {
    /// Status of a plan step.
    pub enum PlanStepStatus {
        /// Not begun.
        Pending = "pending",
        /// Being worked on.
        InProgress = "inProgress",
        /// Done.
        Completed = "completed",
    }
}

/// `serverRequest/resolved` params: sent after each answer, and for pending requests when a turn ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerRequestResolvedNotification {
    /// The thread.
    pub thread_id: String,
    /// The server request's id (in the server's own id space, starting at 0).
    pub request_id: RequestId,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `error` params: an error during a turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorNotification {
    /// The error (`message`, `codexErrorInfo`).
    #[serde(default)]
    pub error: TurnError,
    /// `true`: transient, Codex retries and the turn continues; `false` (or absent): final, a `failed`
    /// `turn/completed` follows.
    #[serde(default)]
    pub will_retry: bool,
    /// The thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// The turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `warning` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WarningNotification {
    /// The warning text.
    #[serde(default)]
    pub message: String,
    /// The thread, when thread-specific.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `configWarning` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigWarningNotification {
    /// One-line summary.
    #[serde(default)]
    pub summary: String,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Fields not modelled here (`path`, `range`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `deprecationNotice` params.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeprecationNoticeNotification {
    /// One-line summary.
    #[serde(default)]
    pub summary: String,
    /// More detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
