use std::collections::{BTreeMap, HashMap, HashSet};

// The result is wire data the host protocol carries as it is, so it is defined once, there.
pub use clawbridge_protocol::attempt::{AttemptResult, Classification, ItemLifecycle, ReplayMetadata, ToolMeta};
use serde_json::Value;

use super::hooks::ToolTerminalReport;
use crate::events::{Event, LastCall, TerminalCause, TerminalKind, ToolFinish, TurnTerminal, Usage};

/// Folds a turn's events into an [`AttemptResult`], and hands out each tool terminal exactly once.
#[derive(Debug, Default)]
pub struct AttemptRecorder {
    /// Assistant text per item: deltas until the final replaces them. Ordered by first appearance.
    assistant: Vec<(String, String)>,
    /// Index into `assistant` by item id: a long turn holds thousands of items, and every delta
    /// finds its own.
    assistant_index: HashMap<String, usize>,
    /// Which assistant items already have their final text.
    assistant_final: HashSet<String>,
    /// Reasoning with visible text was seen (for the classification: the host's rule counts only
    /// non-blank reasoning text).
    reasoning: bool,
    /// A plan with visible text was seen (likewise: an empty plan is no plan).
    plan: bool,
    /// Latest usage.
    usage: Option<Usage>,
    /// Latest model call.
    last_call: Option<LastCall>,
    /// Calls started, by id (ordered for a stable tool list).
    started: BTreeMap<String, usize>,
    /// Finished calls in finish order.
    finished: Vec<ToolMeta>,
    /// Call ids already reported, so a duplicate terminal is never reported twice.
    reported: HashSet<String>,
    /// A started call that may change state.
    side_effects: bool,
    /// An approval was granted (the call may have run even if its terminal never came).
    approval_accepted: bool,
    /// From the host's resolutions.
    last_tool_error: Option<Value>,
    /// The terminal event, once seen.
    terminal: Option<TurnTerminal>,
    /// A model response completed: an assistant message became final or the model asked for a tool.
    model_responded: bool,
}

impl AttemptRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one event. For a call's first terminal, returns the report to send to the host.
    pub fn record(&mut self, event: &Event) -> Option<ToolTerminalReport> {
        match event {
            Event::AssistantDelta { item_id, delta } => {
                if !self.assistant_final.contains(item_id) {
                    self.assistant_text(item_id).push_str(delta);
                }
            }
            Event::AssistantFinal { item_id, text } => {
                *self.assistant_text(item_id) = text.clone();
                self.assistant_final.insert(item_id.clone());
                self.model_responded = true;
            }
            Event::ReasoningDelta { delta: text, .. } | Event::ReasoningFinal { text, .. } => {
                self.reasoning |= !text.trim().is_empty();
            }
            Event::Plan(plan) => self.plan |= !plan.to_text().trim().is_empty(),
            Event::Usage(usage) => self.usage = Some(*usage),
            Event::LastCall(call) => self.last_call = Some(*call),
            Event::ToolStarted(call) => {
                self.model_responded = true;
                let next = self.started.len();
                self.started.entry(call.call_id.clone()).or_insert(next);
            }
            Event::ToolFinished(finish) => return self.finish_tool(finish),
            Event::TurnTerminal(terminal) => {
                if self.terminal.is_none() {
                    self.terminal = Some(terminal.clone());
                }
            }
            Event::TurnStarted { .. }
            | Event::ToolOutputDelta { .. }
            | Event::ModelRetry { .. }
            | Event::ModelCallStarted {}
            | Event::BudgetPaused { .. }
            | Event::BudgetResumed { .. }
            | Event::ModelInUse { .. }
            | Event::ContextCompacted { .. }
            | Event::Unknown => {}
        }
        None
    }

    fn assistant_text(&mut self, item_id: &str) -> &mut String {
        let index = match self.assistant_index.get(item_id) {
            Some(&index) => index,
            None => {
                self.assistant_index.insert(item_id.to_string(), self.assistant.len());
                self.assistant.push((item_id.to_string(), String::new()));
                self.assistant.len() - 1
            }
        };
        &mut self.assistant[index].1
    }

    fn finish_tool(&mut self, finish: &ToolFinish) -> Option<ToolTerminalReport> {
        let call = &finish.call;
        if !self.reported.insert(call.call_id.clone()) {
            return None;
        }
        let next = self.started.len();
        self.started.entry(call.call_id.clone()).or_insert(next);
        let report = ToolTerminalReport::from_finish(finish);
        if report.execution_started {
            let mutating = report.native_mutation.map_or(!call.native, |m| m.mutating_action);
            self.side_effects |= mutating;
        }
        self.finished.push(ToolMeta {
            tool_name: call.tool_name.clone(),
            tool_call_id: call.call_id.clone(),
            is_error: finish.is_error(),
        });
        Some(report)
    }

    /// Notes that the host granted an approval: the attempt is no longer safe to replay.
    pub fn approval_accepted(&mut self) {
        self.approval_accepted = true;
    }

    /// Carries the host's answer to a terminal report into the result.
    pub fn set_last_tool_error(&mut self, error: Option<Value>) {
        if error.is_some() {
            self.last_tool_error = error;
        }
    }

    /// Whether the terminal event was seen.
    pub fn is_terminal(&self) -> bool {
        self.terminal.is_some()
    }

    /// The result. `native_session_id` is the thread/session the turn ran in.
    pub fn finish(self, native_session_id: Option<String>) -> AttemptResult {
        let terminal = self.terminal.unwrap_or(TurnTerminal {
            kind: TerminalKind::Failed,
            message: Some("the turn ended without a terminal event".into()),
            cause: Some(TerminalCause::BackendExited),
        });
        let assistant_texts: Vec<String> =
            self.assistant.into_iter().map(|(_, text)| text).filter(|t| !t.trim().is_empty()).collect();
        let classification = match (terminal.kind, assistant_texts.is_empty()) {
            (TerminalKind::Ok, true) if self.plan => Some(Classification::PlanningOnly),
            (TerminalKind::Ok, true) if self.reasoning => Some(Classification::ReasoningOnly),
            (TerminalKind::Ok, true) => Some(Classification::Empty),
            _ => None,
        };
        let started_count = self.started.len() as u32;
        let completed_count = self.finished.len() as u32;
        let replay_safe = started_count == 0 && !self.approval_accepted && assistant_texts.is_empty();
        AttemptResult {
            terminal,
            native_session_id,
            assistant_texts,
            usage: self.usage,
            last_call: self.last_call,
            classification,
            replay: ReplayMetadata { had_potential_side_effects: self.side_effects, replay_safe },
            tools: self.finished,
            last_tool_error: self.last_tool_error,
            item_lifecycle: ItemLifecycle {
                started_count,
                completed_count,
                active_count: started_count.saturating_sub(completed_count),
            },
            model_responded: self.model_responded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attempt::hooks::TerminalOutcome;
    use crate::events::{NativeMutation, ToolCall, ToolOutcome};
    use serde_json::json;

    fn bash(call_id: &str) -> ToolCall {
        ToolCall {
            call_id: call_id.into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "rm -rf build"}),
            native: true,
            native_mutation: Some(NativeMutation { mutating_action: true, replay_safe: false }),
        }
    }

    fn finished(call: ToolCall, outcome: ToolOutcome, started: bool) -> Event {
        Event::ToolFinished(ToolFinish { call, outcome, exit_code: None, execution_started: started, output: None })
    }

    fn ok() -> Event {
        Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None })
    }

    #[test]
    fn each_terminal_is_reported_once_and_declines_never_started() {
        let mut recorder = AttemptRecorder::new();
        recorder.record(&Event::ToolStarted(bash("c1")));
        let declined = finished(bash("c1"), ToolOutcome::Declined { reason: None }, true);
        let report = recorder.record(&declined).expect("first terminal is reported");
        assert!(!report.execution_started);
        assert_eq!(report.outcome, TerminalOutcome::Failure);
        assert_eq!(report.native_mutation, Some(NativeMutation { mutating_action: false, replay_safe: true }));
        assert!(recorder.record(&declined).is_none(), "a replayed terminal is not reported again");
        recorder.record(&ok());
        let result = recorder.finish(Some("th-1".into()));
        assert!(!result.replay.had_potential_side_effects, "a declined command changed nothing");
        assert!(!result.replay.replay_safe, "a tool started, so the host must not replay blindly");
        assert_eq!(
            result.tools,
            vec![ToolMeta { tool_name: "bash".into(), tool_call_id: "c1".into(), is_error: true }]
        );
        assert_eq!(result.item_lifecycle, ItemLifecycle { started_count: 1, completed_count: 1, active_count: 0 });
    }

    #[test]
    fn finals_replace_deltas_and_classification_follows_the_host_rules() {
        let mut recorder = AttemptRecorder::new();
        for delta in ["Hel", "lo"] {
            recorder.record(&Event::AssistantDelta { item_id: "m1".into(), delta: delta.into() });
        }
        recorder.record(&Event::AssistantFinal { item_id: "m1".into(), text: "Hello!".into() });
        recorder.record(&Event::AssistantDelta { item_id: "m1".into(), delta: " late".into() });
        recorder.record(&ok());
        let result = recorder.finish(None);
        assert_eq!(result.assistant_texts, vec!["Hello!"]);
        assert_eq!(result.classification, None);
        assert!(!result.replay.replay_safe, "assistant output was shown");

        let mut reasoning_only = AttemptRecorder::new();
        reasoning_only.record(&Event::ReasoningFinal { item_id: "r".into(), text: "hmm".into(), signature: None });
        reasoning_only.record(&ok());
        let result = reasoning_only.finish(None);
        assert_eq!(result.classification, Some(Classification::ReasoningOnly));
        assert!(result.replay.replay_safe);

        let mut empty = AttemptRecorder::new();
        empty.record(&ok());
        assert_eq!(empty.finish(None).classification, Some(Classification::Empty));
    }

    #[test]
    fn only_visible_plan_and_reasoning_text_classify_a_silent_turn() {
        // The host's classifyAgentHarnessTerminalOutcome counts non-blank text only: an empty plan
        // or blank reasoning leaves the turn "empty".
        let mut blank = AttemptRecorder::new();
        blank.record(&Event::Plan(crate::events::Plan { explanation: Some("  ".into()), steps: Vec::new() }));
        blank.record(&Event::ReasoningDelta { item_id: "r".into(), delta: "\n".into() });
        blank.record(&ok());
        assert_eq!(blank.finish(None).classification, Some(Classification::Empty));

        let mut planned = AttemptRecorder::new();
        planned.record(&Event::ReasoningFinal { item_id: "r".into(), text: "hmm".into(), signature: None });
        planned.record(&Event::Plan(crate::events::Plan {
            explanation: Some("Read, then fix".into()),
            steps: Vec::new(),
        }));
        planned.record(&ok());
        assert_eq!(planned.finish(None).classification, Some(Classification::PlanningOnly));
    }

    #[test]
    fn a_turn_without_a_terminal_is_a_backend_that_went_away() {
        let result = AttemptRecorder::new().finish(None);
        assert_eq!(result.terminal.kind, TerminalKind::Failed);
        assert_eq!(result.terminal.cause, Some(TerminalCause::BackendExited));
    }

    #[test]
    fn a_successful_mutation_and_an_accepted_approval_make_the_attempt_unsafe() {
        let mut recorder = AttemptRecorder::new();
        recorder.approval_accepted();
        recorder.record(&finished(bash("c2"), ToolOutcome::Success, true));
        recorder.set_last_tool_error(Some(json!({"toolName": "bash"})));
        let result = recorder.finish(None);
        assert!(result.replay.had_potential_side_effects);
        assert!(!result.replay.replay_safe);
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "no terminal event means failed");
        assert_eq!(result.last_tool_error, Some(json!({"toolName": "bash"})));
    }

    #[test]
    fn a_model_response_before_a_failure_still_counts_and_reasoning_alone_does_not() {
        let failed = || Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Failed, message: None, cause: None });
        let mut answered = AttemptRecorder::new();
        answered.record(&Event::AssistantFinal { item_id: "m1".into(), text: "Working on it.".into() });
        answered.record(&failed());
        assert!(answered.finish(None).model_responded, "an answer, then a failure");

        let mut called = AttemptRecorder::new();
        called.record(&Event::ToolStarted(bash("c1")));
        called.record(&failed());
        assert!(called.finish(None).model_responded, "the model asked for a tool");

        let mut thought = AttemptRecorder::new();
        thought.record(&Event::AssistantDelta { item_id: "m1".into(), delta: "Work".into() });
        thought.record(&Event::ReasoningFinal { item_id: "r1".into(), text: "hmm".into(), signature: None });
        thought.record(&failed());
        assert!(!thought.finish(None).model_responded, "a streamed fragment and reasoning are no completed response");
    }
}
