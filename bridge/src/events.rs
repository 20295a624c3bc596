//! The backend-neutral event model: every adapter turns its native notifications into [`Event`]s, and
//! every sink (transcript mirror, host, `clawbridge run --json`) consumes only these.
//!
//! Events serialise as one JSON object each, tagged by `type`, with camelCase fields, so a line of
//! `clawbridge run --json` output and a message to the host plugin are the same bytes.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default bytes kept from the start of a tool's output.
pub const DEFAULT_HEAD_BYTES: usize = 64 * 1024;
/// Default bytes kept from the end of a tool's output (where errors and summaries usually are).
pub const DEFAULT_TAIL_BYTES: usize = 64 * 1024;

/// One thing that happened in a turn, in the order the backend reported it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Event {
    /// The backend accepted the prompt and started a turn.
    TurnStarted {
        /// The turn's id, the root of every transcript identity in it.
        turn_id: String,
    },
    /// A piece of assistant text while it streams.
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
        /// An opaque signature some backends attach to thinking, kept so the mirror can carry it.
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
    /// The turn ended; nothing follows for this turn.
    TurnTerminal(TurnTerminal),
    /// An event type this build does not know (written by a newer bridge); readers skip it.
    #[serde(other)]
    Unknown,
}

/// A plan the agent published.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// One step of a [`Plan`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// What the step does.
    pub step: String,
    /// How far it got.
    pub status: PlanStepStatus,
}

/// Progress of a [`PlanStep`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    #[serde(other)]
    Unknown,
}

/// A tool call as the backend dispatched it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The protocol's call id; `observeToolTerminal` and transcript identities are keyed by it.
    pub call_id: String,
    /// The canonical (OpenClaw) tool name, e.g. `exec`, `write`, `apply_patch`, so the host's tool
    /// policy and summaries see one vocabulary whatever the backend.
    pub tool_name: String,
    /// The arguments that reached (or will reach) the tool, as JSON.
    #[serde(default)]
    pub arguments: Value,
    /// True when the native agent executes the tool itself (no OpenClaw definition behind it), so the
    /// host relies on `native_mutation` instead of its own tool metadata.
    #[serde(default)]
    pub native: bool,
    /// Whether a native tool may change state, which the host needs to judge replay safety.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_mutation: Option<NativeMutation>,
}

/// Side-effect facts about a native tool, in the host's `nativeMutation` shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NativeMutation {
    /// The tool may change files, processes or the outside world.
    pub mutating_action: bool,
    /// Running the call again would be harmless.
    pub replay_safe: bool,
}

/// The terminal outcome of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFinish {
    /// The call (its final arguments when the backend reports them only at the end).
    pub call: ToolCall,
    /// How it ended.
    pub outcome: ToolOutcome,
    /// The process exit code, for command-like tools that report one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether dispatch may have happened; conservative (a timeout racing dispatch counts as
    /// started), because the host treats a started mutating call as a possible side effect.
    pub execution_started: bool,
    /// The (capped) output, when the backend reports it whole; otherwise sinks use the deltas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<CappedOutput>,
}

impl ToolFinish {
    /// Whether the call failed in any way (failure, declined, cancelled).
    pub fn is_error(&self) -> bool {
        !matches!(self.outcome, ToolOutcome::Success)
    }
}

/// How a tool call ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
        /// A machine code (`EACCES`, `timeout`, …), passed to the host as `failure.errorCode`.
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

impl ToolOutcome {
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
        }
    }
}

/// Token usage. Counts follow the OpenAI convention, which adapters normalise to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Every prompt token, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Every generated token, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// The part of `input_tokens` served from the provider's cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// The part of `output_tokens` spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input plus output.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

/// The end of a turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnTerminal {
    /// How it ended; maps onto the host's `terminal.kind`.
    pub kind: TerminalKind,
    /// What to tell the user when it did not end well.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// How a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// Text kept by a [`CappedText`], ready to send: the head, a marker saying how much was left out, and
/// the tail.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CappedOutput {
    /// The kept text, with an omission marker between head and tail when bytes were dropped.
    pub text: String,
    /// Bytes dropped from the middle; 0 when `text` is complete.
    #[serde(default)]
    pub omitted_bytes: u64,
}

/// Accumulates text of any size in bounded memory: the first `head` bytes and the last `tail` bytes
/// are kept, the middle is counted and dropped. A command that prints 1 GB costs about
/// `head + 2 * tail` bytes here.
#[derive(Clone, Debug)]
pub struct CappedText {
    /// Most bytes kept from the start.
    head_limit: usize,
    /// Most bytes kept from the end.
    tail_limit: usize,
    /// The start, up to `head_limit` bytes, cut at a character boundary.
    head: String,
    /// The newest bytes. It may grow to `2 * tail_limit` before its front is dropped, so dropping is
    /// amortised instead of a memmove on every small push.
    tail: String,
    /// Every byte pushed, to report how many were dropped.
    total: u64,
}

impl Default for CappedText {
    fn default() -> Self {
        Self::new(DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES)
    }
}

impl CappedText {
    /// Keeps at most `head` bytes from the start and `tail` bytes from the end.
    pub fn new(head: usize, tail: usize) -> Self {
        Self { head_limit: head, tail_limit: tail, head: String::new(), tail: String::new(), total: 0 }
    }

    /// Adds text at the end.
    pub fn push(&mut self, mut text: &str) {
        self.total = self.total.saturating_add(text.len() as u64);
        if self.tail.is_empty() && self.head.len() < self.head_limit {
            let room = self.head_limit - self.head.len();
            let cut = floor_char_boundary(text, room.min(text.len()));
            self.head.push_str(&text[..cut]);
            text = &text[cut..];
        }
        if text.is_empty() {
            return;
        }
        if text.len() >= self.tail_limit {
            // A big push replaces the tail entirely; only its end can survive.
            self.tail.clear();
            let start = ceil_char_boundary(text, text.len() - self.tail_limit);
            self.tail.push_str(&text[start..]);
            return;
        }
        self.tail.push_str(text);
        if self.tail.len() > self.tail_limit.saturating_mul(2) {
            self.trim_tail();
        }
    }

    /// Bytes pushed in total.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Bytes of memory the kept text currently occupies (its buffers' capacity).
    pub fn held_capacity(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    /// The kept text and the count of dropped bytes.
    pub fn snapshot(&self) -> CappedOutput {
        let tail = &self.tail[ceil_char_boundary(&self.tail, self.tail.len().saturating_sub(self.tail_limit))..];
        let kept = self.head.len() as u64 + tail.len() as u64;
        let omitted = self.total.saturating_sub(kept);
        let mut text = String::with_capacity(self.head.len() + tail.len() + 64);
        text.push_str(&self.head);
        if omitted > 0 {
            text.push_str(&format!("\n[… {omitted} bytes omitted …]\n"));
        }
        text.push_str(tail);
        CappedOutput { text, omitted_bytes: omitted }
    }

    /// Consumes the accumulator, returning what [`snapshot`](Self::snapshot) would.
    pub fn finish(self) -> CappedOutput {
        self.snapshot()
    }

    fn trim_tail(&mut self) {
        let start = ceil_char_boundary(&self.tail, self.tail.len() - self.tail_limit);
        self.tail.drain(..start);
    }
}

/// The largest character boundary at or below `at` (`str::floor_char_boundary` is newer than our MSRV).
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary at or above `at`.
fn ceil_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_text_is_kept_whole() {
        let mut text = CappedText::new(8, 8);
        text.push("hello ");
        text.push("world");
        let out = text.snapshot();
        assert_eq!(out, CappedOutput { text: "hello world".into(), omitted_bytes: 0 });
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let mut text = CappedText::new(4, 4);
        for chunk in ["abcd", "efgh", "ijkl", "mnop"] {
            text.push(chunk);
        }
        let out = text.finish();
        assert_eq!(out.omitted_bytes, 8);
        assert_eq!(out.text, "abcd\n[… 8 bytes omitted …]\nmnop");
    }

    #[test]
    fn never_splits_a_character() {
        let mut text = CappedText::new(5, 5);
        text.push(&"é".repeat(100));
        let out = text.snapshot();
        // 5-byte caps hold two 2-byte characters each.
        assert!(out.text.starts_with("éé\n"), "{:?}", out.text);
        assert!(out.text.ends_with("\néé"), "{:?}", out.text);
        assert_eq!(out.omitted_bytes, 200 - 8);
    }

    #[test]
    fn a_gigabyte_in_big_chunks_costs_bounded_memory() {
        let chunk = "x".repeat(1024 * 1024);
        let mut text = CappedText::default();
        for _ in 0..1024 {
            text.push(&chunk);
        }
        text.push("THE END");
        assert!(text.held_capacity() <= DEFAULT_HEAD_BYTES + 2 * DEFAULT_TAIL_BYTES + 1024 * 1024);
        let out = text.finish();
        assert_eq!(text_total(&out), 1024 * 1024 * 1024 + 7);
        assert!(out.text.ends_with("THE END"));
        assert!(out.text.len() < DEFAULT_HEAD_BYTES + DEFAULT_TAIL_BYTES + 64);
    }

    #[test]
    fn many_small_pushes_stay_bounded() {
        let mut text = CappedText::new(1024, 1024);
        let line = "0123456789abcdef\n";
        for _ in 0..200_000 {
            text.push(line);
        }
        // Buffers grow by doubling, so allow twice the kept bytes, never anything like the 3.4 MB pushed.
        assert!(text.held_capacity() <= 2 * (1024 + 2 * 1024 + 17), "{}", text.held_capacity());
        let out = text.snapshot();
        assert_eq!(out.omitted_bytes + out.text.len() as u64 - marker_len(&out), 200_000 * 17);
        assert!(out.text.ends_with(line));
    }

    fn marker_len(out: &CappedOutput) -> u64 {
        format!("\n[… {} bytes omitted …]\n", out.omitted_bytes).len() as u64
    }

    fn text_total(out: &CappedOutput) -> u64 {
        out.omitted_bytes + out.text.len() as u64 - marker_len(out)
    }

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
            output: Some(CappedOutput { text: "hi".into(), omitted_bytes: 0 }),
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
        let end =
            serde_json::to_value(Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None })).unwrap();
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
