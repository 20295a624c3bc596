//! The backend-neutral event model: every adapter turns its native notifications into [`Event`]s, and
//! every sink (transcript mirror, host, `clawbridge run --json`) consumes only these.
//!
//! Events serialise as one JSON object each, tagged by `type`, with camelCase fields, so a line of
//! `clawbridge run --json` output and the `event` of an `attempt/event` notification are the same
//! bytes. The bridge accumulates tool output (`CappedText`, which produces [`CappedOutput`]); these
//! are only the data.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One thing that happened in a turn, in the order the backend reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
// The host protocol's schema has always called it so.
#[schemars(rename = "AttemptEvent")]
// Exhaustive on purpose: the bridge's recorder and transcript mirror must each decide what a new event
// means for them; `Unknown` is what keeps decoding tolerant of a newer sender.
pub enum Event {
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
    /// (protocol version 3) The most recent model call: its own usage (its prompt size, its cache
    /// reads and writes) and the model's context window as the native runtime reports it (Codex
    /// `thread/tokenUsage/updated` `last` and `modelContextWindow`; Claude Code's streamed
    /// `message_delta` usage and the `result`'s `modelUsage[model].contextWindow`). Each event
    /// replaces the previous one.
    LastCall(LastCall),
    /// A model request failed and the native runtime retries it on its own (Codex `error` with
    /// `willRetry`, Claude `system/api_retry`): progress, not an outcome. The turn goes on.
    ModelRetry {
        /// The native runtime's words for what failed.
        message: String,
        /// Which retry this is, when the runtime numbers them (from 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        /// How many retries the runtime makes in all, when it says (Codex `Reconnecting... 2/5`,
        /// Claude `max_retries`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_attempts: Option<u32>,
        /// How long until the retry goes out, when the runtime says (Claude `retry_delay_ms`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
        /// The HTTP status of the failed request, when a response came (Codex `httpStatusCode`,
        /// Claude `error_status`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        http_status: Option<u16>,
    },
    /// The native runtime started a model request (Claude's streamed `message_start`, one per API
    /// call; Codex's `turn/started`, its turn's first request: its app-server announces no later
    /// sampling request). For the host's `model_call_started` execution phase.
    ModelCallStarted {},
    /// The attempt's budget (`timeoutMs`) stopped counting: a person is being asked (an approval or
    /// a question is outstanding with the host). Sent by `serve` only.
    BudgetPaused {
        /// What is left of the budget, in milliseconds; it counts again from `budgetResumed`.
        remaining_ms: u64,
    },
    /// The attempt's budget counts again (nothing is being asked any more). Sent by `serve` only.
    BudgetResumed {
        /// What is left of the budget from now, in milliseconds.
        remaining_ms: u64,
    },
    /// The turn ended; nothing follows for this turn (the `attempt/run` result comes next).
    TurnTerminal(TurnTerminal),
    /// The native runtime named the model that serves the turn (Codex's thread answer, Claude's
    /// `system/init` or an assistant message); transcript rows name it from then on.
    ModelInUse {
        /// The model id as the native runtime reports it.
        model: String,
    },
    /// The native runtime compacted the thread's context by itself during the turn (Codex's
    /// `contextCompaction` item, Claude Code's `compact_boundary`); the host counts it as an
    /// auto-compaction (`compactionCount`).
    ContextCompacted {
        /// The native item of the compaction.
        item_id: String,
        /// The context's size before, in tokens, when the native side said (protocol version 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_before: Option<u64>,
        /// The context's size after, in tokens, when the native side said (protocol version 3).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tokens_after: Option<u64>,
    },
    /// An event type this build does not know (sent by a newer bridge); readers skip it.
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// A plan the agent published.
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

impl Plan {
    /// The plan as plain text (one step per line), for the host's "planning-only" classification.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        if let Some(explanation) = &self.explanation {
            out.push_str(explanation);
            out.push('\n');
        }
        for step in &self.steps {
            let mark = match step.status {
                PlanStepStatus::Completed => "[x]",
                PlanStepStatus::InProgress => "[~]",
                PlanStepStatus::Pending | PlanStepStatus::Unknown => "[ ]",
            };
            out.push_str(mark);
            out.push(' ');
            out.push_str(&step.step);
            out.push('\n');
        }
        out
    }
}

/// One step of a `Plan`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// What the step does.
    pub step: String,
    /// How far it got.
    pub status: PlanStepStatus,
}

/// Progress of a `PlanStep`.
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

/// A tool call as the backend dispatched it.
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

/// Side-effect facts about a native tool, in the host's `nativeMutation` shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NativeMutation {
    /// The tool may change files, processes or the outside world.
    pub mutating_action: bool,
    /// Running the call again would be harmless.
    pub replay_safe: bool,
}

/// The terminal outcome of a tool call.
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

impl ToolFinish {
    /// Whether the call failed in any way (failure, declined, cancelled); a command still running
    /// in the background has not failed.
    pub fn is_error(&self) -> bool {
        !matches!(self.outcome, ToolOutcome::Success | ToolOutcome::Backgrounded { .. })
    }
}

/// How a tool call ended.
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
    /// It started and keeps running in the background after the turn ended (a Codex unified-exec
    /// command past its yield time): not a failure, and its end is not part of this turn.
    Backgrounded {
        /// What the native side said about it, when it said something.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
}

impl ToolOutcome {
    /// The outcome of a tool still open when its turn ended with `kind` without the native side's
    /// own terminal: `Cancelled` for an abort, a timed-out `Failure` for a timeout, a `Failure`
    /// otherwise, each naming `message`.
    pub fn abandoned(kind: TerminalKind, message: &str) -> ToolOutcome {
        let error = Some(message.to_string());
        match kind {
            TerminalKind::Aborted => ToolOutcome::Cancelled { reason: error },
            TerminalKind::Timeout => ToolOutcome::Failure { error, error_code: None, timed_out: true },
            _ => ToolOutcome::Failure { error, error_code: None, timed_out: false },
        }
    }

    /// The outcome of a tool the native turn ended on (with its own terminal `kind`) without ever
    /// reporting the tool's end: `Cancelled` when the turn was interrupted, else a `Failure`.
    pub fn left_open(kind: TerminalKind) -> ToolOutcome {
        match kind {
            TerminalKind::Aborted => ToolOutcome::Cancelled { reason: Some("the turn was interrupted".to_owned()) },
            _ => ToolOutcome::Failure {
                error: Some("the turn ended before the tool reported an outcome".to_owned()),
                error_code: None,
                timed_out: false,
            },
        }
    }

    /// A one-line description for a result that has no output of its own.
    pub fn describe(&self) -> String {
        match self {
            ToolOutcome::Success => "succeeded".to_string(),
            ToolOutcome::Failure { error: Some(e), .. } => format!("failed: {e}"),
            ToolOutcome::Failure { timed_out: true, .. } => "timed out".to_string(),
            ToolOutcome::Failure { .. } => "failed".to_string(),
            ToolOutcome::Declined { reason: Some(r) } => format!("declined: {r}"),
            ToolOutcome::Declined { reason: None } => "declined".to_string(),
            ToolOutcome::Cancelled { reason: Some(r) } => format!("cancelled: {r}"),
            ToolOutcome::Cancelled { reason: None } => "cancelled".to_string(),
            ToolOutcome::Backgrounded { detail: Some(d) } => format!("running in the background: {d}"),
            ToolOutcome::Backgrounded { detail: None } => "running in the background".to_string(),
        }
    }
}

/// Text kept from a tool's output: head, an omission marker, tail; and the images it returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CappedOutput {
    /// The kept text, with an omission marker between head and tail when bytes were dropped.
    pub text: String,
    /// Bytes dropped from the middle; 0 when `text` is complete.
    #[serde(default)]
    pub omitted_bytes: u64,
    /// Images the tool returned (a host tool's screenshot, say), kept as images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

/// An image a tool returned, in OpenClaw's `ImageContent` shape minus `type`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolImage {
    /// Standard base64 of the image bytes.
    pub data: String,
    /// E.g. `image/png`.
    pub mime_type: String,
}

/// Token usage, OpenAI convention (cached and reasoning tokens are parts of the totals).
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

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The most recent model call of a turn, as the native runtime reported it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastCall {
    /// That call's usage alone (`inputTokens` is its prompt size, cached tokens included).
    #[serde(default)]
    pub usage: Usage,
    /// The part of that call's prompt written to the provider's cache, when the runtime says.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// The model's context window in tokens as the native runtime applies it, when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

// serde's `skip_serializing_if` passes a reference.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The end of a turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnTerminal {
    /// How it ended; maps onto the host's `terminal.kind`.
    pub kind: TerminalKind,
    /// What to tell the user when it did not end well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Which of the bridge's reasons ended the turn, when it knows one. The host's terminal union
    /// tells an idle watchdog from the run budget and a crash from a provider error; `kind` alone
    /// cannot. Absent from older bridges (a host then reads `kind` alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<TerminalCause>,
}

impl TurnTerminal {
    /// A terminal of `kind` with an optional message and no cause yet (the turn driver adds it).
    pub fn new(kind: TerminalKind, message: Option<String>) -> Self {
        TurnTerminal { kind, message, cause: None }
    }
}

/// What ended a turn, as the bridge saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum TerminalCause {
    /// The native runtime ended the turn with its own terminal: it completed, or it reported the
    /// failure itself (a provider or model error), or it stopped on its own.
    Native,
    /// The bridge's idle watchdog: the turn made no progress for the idle limit.
    IdleTimeout,
    /// The attempt's own budget (`timeoutMs`) ran out.
    RunBudget,
    /// The attempt was cancelled (`attempt/cancel`, `shutdown`, the host leaving) and the turn
    /// stopped for it.
    Cancelled,
    /// The native process went away or its stream ended before the turn's own terminal (a crash).
    BackendExited,
    /// The native side refused or failed the turn before it produced one (a request it rejected).
    BackendError,
    /// The native runtime failed the turn itself, and classified the failure as its transport to
    /// the model provider: the connection could not be made or the response stream broke off, after
    /// its own retries (Codex: `codexErrorInfo` `httpConnectionFailed`,
    /// `responseStreamConnectionFailed` or `responseStreamDisconnected` without an HTTP status;
    /// Claude Code: `api_error` `connection_failed`, `stream_idle_timeout` or `computer_slept` with
    /// no `api_error_status`).
    /// Protocol version 3; a reader that does not know it treats it as `Native`'s failure.
    ProviderTransport,
    /// A cause this build does not know (sent by a newer bridge).
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// How a turn ended: the host's `terminal.kind` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
// Exhaustive on purpose: the host knows these four, and the transcript mirror maps each to a stop reason.
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

impl std::fmt::Display for TerminalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TerminalKind::Ok => "ok",
            TerminalKind::Aborted => "aborted",
            TerminalKind::Timeout => "timeout",
            TerminalKind::Failed => "failed",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_tagged_camel_case_json() {
        let event = Event::ToolFinished(ToolFinish {
            call: ToolCall {
                call_id: "call_1".into(),
                tool_name: "exec".into(),
                arguments: json!({"command": "echo hi"}),
                native: true,
                native_mutation: Some(NativeMutation { mutating_action: false, replay_safe: true }),
            },
            outcome: ToolOutcome::Failure { error: Some("boom".into()), error_code: None, timed_out: false },
            exit_code: Some(2),
            execution_started: true,
            output: Some(CappedOutput { text: "hi".into(), omitted_bytes: 0, images: Vec::new() }),
        });
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value,
            json!({
                "type": "toolFinished",
                "call": {"callId": "call_1", "toolName": "exec", "arguments": {"command": "echo hi"},
                         "native": true, "nativeMutation": {"mutatingAction": false, "replaySafe": true}},
                "outcome": {"kind": "failure", "error": "boom", "timedOut": false},
                "exitCode": 2,
                "executionStarted": true,
                "output": {"text": "hi", "omittedBytes": 0}
            })
        );
        let back: Event = serde_json::from_value(value).unwrap();
        assert_eq!(back, event);

        let delta = serde_json::to_value(Event::AssistantDelta { item_id: "m1".into(), delta: "Hi".into() }).unwrap();
        assert_eq!(delta, json!({"type": "assistantDelta", "itemId": "m1", "delta": "Hi"}));
        let end = serde_json::to_value(Event::TurnTerminal(TurnTerminal {
            kind: TerminalKind::Ok,
            message: None,
            cause: None,
        }))
        .unwrap();
        assert_eq!(end, json!({"type": "turnTerminal", "kind": "ok"}));
    }

    #[test]
    fn unknown_event_types_and_statuses_are_tolerated() {
        let event: Event = serde_json::from_value(json!({"type": "fromTheFuture", "x": 1})).unwrap();
        assert_eq!(event, Event::Unknown);
        let plan: Event = serde_json::from_value(json!({
            "type": "plan", "steps": [{"step": "a", "status": "blocked"}, {"step": "b", "status": "inProgress"}],
            "extra": true
        }))
        .unwrap();
        let Event::Plan(plan) = plan else { panic!("not a plan: {plan:?}") };
        assert_eq!(plan.steps[0].status, PlanStepStatus::Unknown);
        assert_eq!(plan.to_text(), "[ ] a\n[~] b\n");
    }
}
