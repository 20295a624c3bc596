//! `attempt/event`: the normalized events of a running attempt, streamed bridge → host.
//!
//! These mirror `clawbridge_bridge::events::Event` and its payload types field for field (same tags,
//! same camelCase names), so a line of `clawbridge run --json` and the `event` of an `attempt/event`
//! notification are the same JSON. They are defined again here, not imported, because the protocol
//! crate must not depend on the bridge; a bridge test converts through JSON to keep the two in step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `attempt/event` params: one event of one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptEventParams {
    /// The attempt the event belongs to (as given in `attempt/run`); many attempts share a connection.
    pub attempt_id: String,
    /// Position of the event within its attempt, from 0 without gaps, so a host that fans events out to
    /// several consumers can restore order and notice a loss.
    pub seq: u64,
    /// The event.
    pub event: AttemptEvent,
}

/// One thing that happened in a turn, in the order the backend reported it. Mirrors the bridge's `Event`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum AttemptEvent {
    /// The backend accepted the prompt and started a turn.
    TurnStarted {
        /// The turn's id, the root of every transcript identity in it.
        turn_id: String,
    },
    /// A piece of assistant text while it streams (for `onPartialReply`).
    AssistantDelta {
        /// The native item (message) the text belongs to; a turn may hold several.
        item_id: String,
        /// The new text.
        delta: String,
    },
    /// The complete text of an assistant item; replaces its deltas (deltas may have been dropped).
    AssistantFinal {
        /// The native item the text belongs to.
        item_id: String,
        /// The whole text.
        text: String,
    },
    /// A piece of reasoning (thinking) text while it streams.
    ReasoningDelta {
        /// The native reasoning item.
        item_id: String,
        /// The new text.
        delta: String,
    },
    /// The complete text of a reasoning item; replaces its deltas.
    ReasoningFinal {
        /// The native reasoning item.
        item_id: String,
        /// The whole (possibly summarised) reasoning text.
        text: String,
        /// An opaque signature some backends attach to thinking.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// The agent's current plan; each event replaces the previous one.
    Plan(Plan),
    /// A tool call was dispatched (or is about to be: its approval may still be pending).
    ToolStarted(ToolCall),
    /// A piece of a running tool's output.
    ToolOutputDelta {
        /// The call the output belongs to.
        call_id: String,
        /// The new output.
        delta: String,
    },
    /// A tool call reached its terminal outcome; exactly one per call.
    ToolFinished(ToolFinish),
    /// Token usage of the turn so far; each event replaces the previous one.
    Usage(Usage),
    /// The turn ended; nothing follows for this turn (the `attempt/run` result comes next).
    TurnTerminal(TurnTerminal),
    /// An event type this build does not know (sent by a newer bridge); readers skip it.
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// A plan the agent published. Mirrors the bridge's `Plan`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// Why the plan looks this way, when the agent said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// The steps in order.
    #[serde(default)]
    pub steps: Vec<PlanStep>,
}

/// One step of a `Plan`. Mirrors the bridge's `PlanStep`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// What the step does.
    pub step: String,
    /// How far it got.
    pub status: PlanStepStatus,
}

/// Progress of a `PlanStep`. Mirrors the bridge's `PlanStepStatus`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum PlanStepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
    /// A status this build does not know; shown as pending.
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// A tool call as the backend dispatched it. Mirrors the bridge's `ToolCall`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The protocol's call id; `host/toolTerminal/observe` and transcript identities are keyed by it.
    pub call_id: String,
    /// The canonical (OpenClaw) tool name, e.g. `exec`, `write`, `apply_patch`, so the host's tool
    /// policy and summaries see one vocabulary whatever the backend.
    pub tool_name: String,
    /// The arguments that reached (or will reach) the tool.
    #[serde(default)]
    pub arguments: Value,
    /// True when the native agent executes the tool itself (no OpenClaw definition behind it).
    #[serde(default)]
    pub native: bool,
    /// Whether a native tool may change state, which the host needs to judge replay safety.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_mutation: Option<NativeMutation>,
}

/// Side-effect facts about a native tool, in the host's `nativeMutation` shape. Mirrors the bridge's
/// `NativeMutation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NativeMutation {
    /// The tool may change files, processes or the outside world.
    pub mutating_action: bool,
    /// Running the call again would be harmless.
    pub replay_safe: bool,
}

/// The terminal outcome of a tool call. Mirrors the bridge's `ToolFinish`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFinish {
    /// The call (its final arguments when the backend reports them only at the end).
    pub call: ToolCall,
    /// How it ended.
    pub outcome: ToolOutcome,
    /// The process exit code, for command-like tools that report one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether dispatch may have happened; conservative, because the host treats a started mutating
    /// call as a possible side effect.
    pub execution_started: bool,
    /// The (capped) output, when the backend reports it whole; otherwise the deltas are the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<CappedOutput>,
}

/// How a tool call ended. Mirrors the bridge's `ToolOutcome`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum ToolOutcome {
    /// It ran and succeeded.
    Success,
    /// It ran (or tried to) and failed.
    Failure {
        /// What went wrong, for people.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// A machine code (`EACCES`, `timeout`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_code: Option<String>,
        /// It was stopped because it ran too long.
        #[serde(default)]
        timed_out: bool,
    },
    /// An approval was refused; the tool never ran.
    Declined {
        /// Why, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The turn was interrupted before or while the tool ran.
    Cancelled {
        /// Why, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// Text kept from a tool's output: head, an omission marker, tail. Mirrors the bridge's `CappedOutput`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CappedOutput {
    /// The kept text, with an omission marker between head and tail when bytes were dropped.
    pub text: String,
    /// Bytes dropped from the middle; 0 when `text` is complete.
    #[serde(default)]
    pub omitted_bytes: u64,
}

/// Token usage, OpenAI convention (cached and reasoning tokens are parts of the totals). Mirrors the
/// bridge's `Usage`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Every prompt token, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Every generated token, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// The part of `inputTokens` served from the provider's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// The part of `outputTokens` spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// The end of a turn. Mirrors the bridge's `TurnTerminal`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnTerminal {
    /// How it ended; maps onto the host's `terminal.kind`.
    pub kind: TerminalKind,
    /// What to tell the user when it did not end well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a turn ended. Mirrors the bridge's `TerminalKind` and the host's `terminal.kind` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TerminalKind {
    /// It completed.
    Ok,
    /// It was interrupted (by the user, the host or the runtime).
    Aborted,
    /// A deadline passed before it completed.
    Timeout,
    /// The backend reported an error, or the connection died.
    Failed,
}
