//! Calls the agent only asked permission for (codex-acp announces an approval-gated call nowhere
//! else) and approved calls the agent never reports `in_progress` (claude-agent-acp): the mapping
//! still gives each its one terminal, with `executionStarted` as the host's answer implies.

use clawbridge_bridge::events::{Event, ToolOutcome};
use clawbridge_protocol::acp::{PromptResponse, SessionUpdate, StopReason, ToolCallUpdate};
use serde_json::json;

use super::mapping::{Asked, AskedCall, Declined, TurnMapper};

fn asked(id: &str, allowed: bool) -> AskedCall {
    let update: ToolCallUpdate = serde_json::from_value(json!({"toolCallId": id, "kind": "execute",
        "title": "echo hi", "rawInput": {"command": ["/bin/bash", "-lc", "echo hi"]}}))
    .unwrap();
    AskedCall { update, allowed }
}

fn terminals(events: &[Event]) -> Vec<(String, bool, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished(f) => {
                Some((f.call.call_id.clone(), f.execution_started, matches!(f.outcome, ToolOutcome::Declined { .. })))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_call_only_asked_about_gets_its_start_and_one_terminal_at_the_turns_end() {
    let (declined, asked_calls) = (Declined::default(), Asked::default());
    let mut mapper = TurnMapper::new("t", declined.clone()).with_asked(asked_calls.clone());
    let mut events = mapper.start();
    // What the handler records when the host refuses a call the agent announced nowhere else.
    declined.lock().unwrap().insert("refused".into(), super::mapping::HOST_DECLINED.into());
    asked_calls.lock().unwrap().push(asked("refused", false));
    events.extend(mapper.finish(&PromptResponse { stop_reason: StopReason::Cancelled, usage: None }));
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolStarted(call) => Some(call.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["refused"]);
    assert_eq!(terminals(&events), [("refused".to_owned(), false, true)], "declined, never started: {events:#?}");
}

#[test]
fn an_approved_call_the_agent_never_said_was_running_counts_as_started() {
    let asked_calls = Asked::default();
    let mut mapper = TurnMapper::new("t", Declined::default()).with_asked(asked_calls.clone());
    let mut events = mapper.start();
    events.extend(mapper.on_update(SessionUpdate::decode(
        json!({"sessionUpdate": "tool_call", "toolCallId": "ok", "kind": "execute", "status": "pending"}),
    )));
    asked_calls.lock().unwrap().push(asked("ok", true));
    // The host cancels while the approved command runs: the agent never sent `in_progress`.
    events.extend(mapper.finish(&PromptResponse { stop_reason: StopReason::Cancelled, usage: None }));
    assert_eq!(terminals(&events), [("ok".to_owned(), true, false)], "{events:#?}");
    // Reported once: an asked call the agent did announce is not opened a second time.
    let started = events.iter().filter(|e| matches!(e, Event::ToolStarted(_))).count();
    assert_eq!(started, 1, "{events:#?}");
}
