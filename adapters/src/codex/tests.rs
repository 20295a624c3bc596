//! Tests of the Codex notification mapping: hand-written sequences for each rule, and every recorded
//! Codex session under `fixtures/recordings/codex/`.

use std::path::Path;

use clawbridge_bridge::events::{
    Event, LastCall, NativeMutation, PlanStepStatus, TerminalCause, TerminalKind, ToolOutcome, TurnTerminal, Usage,
};
use clawbridge_protocol::codex::{ServerNotification, ThreadItem};
use serde_json::{Value, json};

use super::mapping::{PATCH_TOOL_NAME, SHELL_TOOL_NAME, TurnMapper, WEB_SEARCH_TOOL_NAME, canonical_tool_name};
use crate::test_support::{assert_well_formed, finishes, starts, terminal};

const TH: &str = "th-1";
const TU: &str = "tu-1";

/// Decodes a notification, failing the test if the params do not fit the method's type (a test that
/// feeds `Unknown` by accident would test nothing).
fn note(method: &str, params: Value) -> ServerNotification {
    let n = ServerNotification::from_notification(method, Some(params));
    if let ServerNotification::Unknown { decode_error: Some(e), .. } = &n {
        panic!("{method} did not decode: {e}");
    }
    n
}

fn turn_started() -> ServerNotification {
    note("turn/started", json!({"threadId": TH, "turn": {"id": TU, "items": [], "status": "inProgress"}}))
}

fn turn_completed(status: &str, items: Value) -> ServerNotification {
    note("turn/completed", json!({"threadId": TH, "turn": {"id": TU, "items": items, "status": status, "error": null}}))
}

fn item_started(item: Value) -> ServerNotification {
    note("item/started", json!({"threadId": TH, "turnId": TU, "item": item}))
}

fn item_completed(item: Value) -> ServerNotification {
    note("item/completed", json!({"threadId": TH, "turnId": TU, "item": item}))
}

fn delta(method: &str, item_id: &str, text: &str) -> ServerNotification {
    note(method, json!({"threadId": TH, "turnId": TU, "itemId": item_id, "delta": text}))
}

fn command(id: &str, status: &str, exit_code: Value, output: Value) -> Value {
    json!({"type": "commandExecution", "id": id, "command": "/bin/bash -lc 'echo hi'", "cwd": "/w",
           "status": status, "exitCode": exit_code, "aggregatedOutput": output})
}

/// Feeds `notes` to a fresh mapper for `TH` and returns every event, in order.
fn run(notes: &[ServerNotification]) -> (TurnMapper, Vec<Event>) {
    let mut mapper = TurnMapper::new(TH);
    let events = notes.iter().flat_map(|n| mapper.on_notification(n)).collect();
    (mapper, events)
}

#[test]
fn plain_text_turn() {
    let (mapper, events) = run(&[
        turn_started(),
        item_started(json!({"type": "userMessage", "id": "um-1", "content": []})),
        item_completed(json!({"type": "userMessage", "id": "um-1", "content": []})),
        item_started(json!({"type": "agentMessage", "id": "msg_1", "text": ""})),
        delta("item/agentMessage/delta", "msg_1", "Hel"),
        delta("item/agentMessage/delta", "msg_1", "lo"),
        item_completed(json!({"type": "agentMessage", "id": "msg_1", "text": "Hello"})),
        // A late delta after the final text would only duplicate it.
        delta("item/agentMessage/delta", "msg_1", "!"),
        turn_completed("completed", json!([{"type": "agentMessage", "id": "msg_1", "text": "Hello"}])),
    ]);
    assert_eq!(
        events,
        vec![
            Event::TurnStarted { turn_id: TU.into() },
            Event::ModelCallStarted {},
            Event::AssistantDelta { item_id: "msg_1".into(), delta: "Hel".into() },
            Event::AssistantDelta { item_id: "msg_1".into(), delta: "lo".into() },
            Event::AssistantFinal { item_id: "msg_1".into(), text: "Hello".into() },
            Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
        ]
    );
    assert!(mapper.is_complete());
    assert_eq!(mapper.turn_id(), Some(TU));
}

#[test]
fn reasoning_parts_stream_with_the_separator_the_final_text_uses() {
    let summary = |index: u32, text: &str| {
        note(
            "item/reasoning/summaryTextDelta",
            json!({"threadId": TH, "turnId": TU, "itemId": "rs_1", "delta": text, "summaryIndex": index}),
        )
    };
    let (_, events) = run(&[
        turn_started(),
        item_started(json!({"type": "reasoning", "id": "rs_1", "summary": []})),
        note(
            "item/reasoning/summaryPartAdded",
            json!({"threadId": TH, "turnId": TU, "itemId": "rs_1", "summaryIndex": 0}),
        ),
        summary(0, "First."),
        summary(1, "Second"),
        summary(1, "."),
        item_completed(json!({"type": "reasoning", "id": "rs_1", "summary": ["First.", "Second."], "content": []})),
        // An empty (encrypted) reasoning item says nothing.
        item_completed(json!({"type": "reasoning", "id": "rs_2", "summary": [], "content": []})),
        turn_completed("completed", json!([])),
    ]);
    let streamed: String = events
        .iter()
        .filter_map(|e| if let Event::ReasoningDelta { delta, .. } = e { Some(delta.as_str()) } else { None })
        .collect();
    assert_eq!(streamed, "First.\n\nSecond.");
    let finals: Vec<_> = events.iter().filter(|e| matches!(e, Event::ReasoningFinal { .. })).collect();
    assert_eq!(
        finals,
        vec![&Event::ReasoningFinal { item_id: "rs_1".into(), text: "First.\n\nSecond.".into(), signature: None }]
    );
    assert_well_formed(&events);
}

#[test]
fn plan_updates_and_plan_items_become_plans() {
    let (_, events) = run(&[
        turn_started(),
        note(
            "turn/plan/updated",
            json!({"threadId": TH, "turnId": TU, "explanation": "why",
                   "plan": [{"step": "a", "status": "completed"}, {"step": "b", "status": "inProgress"},
                            {"step": "c", "status": "pending"}, {"step": "d", "status": "blocked"}, {"step": "e"}]}),
        ),
        item_completed(json!({"type": "plan", "id": "p1", "text": "1. do it"})),
        turn_completed("completed", json!([])),
    ]);
    let plans: Vec<_> = events.iter().filter_map(|e| if let Event::Plan(p) = e { Some(p) } else { None }).collect();
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[0].explanation.as_deref(), Some("why"));
    let statuses: Vec<_> = plans[0].steps.iter().map(|s| s.status).collect();
    let expected = [
        PlanStepStatus::Completed,
        PlanStepStatus::InProgress,
        PlanStepStatus::Pending,
        PlanStepStatus::Unknown,
        PlanStepStatus::Unknown,
    ];
    assert_eq!(statuses, expected);
    assert_eq!(plans[1].to_text(), "1. do it\n");
}

#[test]
fn the_last_call_is_codex_s_last_breakdown_with_the_window_it_applies() {
    let report = note(
        "thread/tokenUsage/updated",
        json!({"threadId": TH, "turnId": TU, "tokenUsage": {
            "total": {"inputTokens": 900, "outputTokens": 50, "cachedInputTokens": 300, "totalTokens": 950},
            "last": {"inputTokens": 600, "outputTokens": 30, "cachedInputTokens": 200, "cacheWriteInputTokens": 100,
                     "reasoningOutputTokens": 4, "totalTokens": 630},
            "modelContextWindow": 60800}}),
    );
    let (_, events) = run(&[turn_started(), report, turn_completed("completed", json!([]))]);
    let calls: Vec<LastCall> =
        events.iter().filter_map(|e| if let Event::LastCall(c) = e { Some(*c) } else { None }).collect();
    let usage = Usage { input_tokens: 600, output_tokens: 30, cached_input_tokens: 200, reasoning_tokens: 4 };
    assert_eq!(calls, [LastCall { usage, cache_write_tokens: 100, context_window: Some(60800) }]);
}

#[test]
fn usage_is_the_turns_growth_of_the_thread_total() {
    let usage = |turn: &str, total: (u64, u64), last: (u64, u64)| {
        note(
            "thread/tokenUsage/updated",
            json!({"threadId": TH, "turnId": turn, "tokenUsage": {
                "total": {"inputTokens": total.0, "outputTokens": total.1, "cachedInputTokens": 10,
                          "reasoningOutputTokens": 5, "totalTokens": total.0 + total.1},
                "last": {"inputTokens": last.0, "outputTokens": last.1, "cachedInputTokens": 10,
                         "reasoningOutputTokens": 5, "totalTokens": last.0 + last.1}}}),
        )
    };
    let (_, events) = run(&[
        // On resume Codex replays the previous turn's usage before the new turn starts.
        usage("tu-0", (100, 20), (100, 20)),
        turn_started(),
        usage(TU, (200, 40), (100, 20)),
        usage(TU, (500, 52), (300, 12)),
        // A repeated report changes nothing.
        usage(TU, (500, 52), (300, 12)),
        turn_completed("completed", json!([])),
    ]);
    let reported: Vec<_> =
        events.iter().filter_map(|e| if let Event::Usage(u) = e { Some(*u) } else { None }).collect();
    let u = |input, output, cached, reasoning| Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    };
    // Cached and reasoning counts are 10/5 per call: the first call's are the turn's, later ones add 0
    // because the test keeps their totals flat.
    assert_eq!(reported, [u(100, 20, 10, 5), u(400, 32, 10, 5), u(400, 32, 10, 5)]);
}

#[test]
fn auto_approved_command_succeeds_with_its_output() {
    let (_, events) = run(&[
        turn_started(),
        item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
        delta("item/commandExecution/outputDelta", "call_1", "h"),
        item_completed(command("call_1", "completed", json!(0), json!("hi\n"))),
        // Output of a finished call has nowhere to go.
        delta("item/commandExecution/outputDelta", "call_1", "late"),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let call = starts(&events)[0];
    assert_eq!(call.tool_name, SHELL_TOOL_NAME);
    assert_eq!(call.arguments, json!({"command": "/bin/bash -lc 'echo hi'", "cwd": "/w"}));
    assert!(call.native);
    assert_eq!(call.native_mutation, Some(NativeMutation { mutating_action: true, replay_safe: false }));
    let deltas: Vec<_> = events.iter().filter(|e| matches!(e, Event::ToolOutputDelta { .. })).collect();
    assert_eq!(deltas, [&Event::ToolOutputDelta { call_id: "call_1".into(), delta: "h".into() }]);
    let finish = finishes(&events)[0];
    assert_eq!(finish.outcome, ToolOutcome::Success);
    assert_eq!(finish.exit_code, Some(0));
    assert!(finish.execution_started);
    assert_eq!(finish.output.as_ref().map(|o| o.text.as_str()), Some("hi\n"));
    assert_eq!(&finish.call, call);
}

#[test]
fn command_outcome_follows_status_and_exit_code() {
    let outcome = |item: Value| {
        let (_, events) = run(&[turn_started(), item_completed(item), turn_completed("completed", json!([]))]);
        assert_well_formed(&events);
        let f = finishes(&events)[0].clone();
        (f.outcome, f.exit_code, f.execution_started)
    };
    let failure = |e: &str| ToolOutcome::Failure { error: Some(e.into()), error_code: None, timed_out: false };

    assert_eq!(
        outcome(command("c", "completed", json!(2), json!("boom"))),
        (failure("command exited with code 2"), Some(2), true)
    );
    assert_eq!(outcome(command("c", "failed", json!(1), Value::Null)), (failure("exit code 1"), Some(1), true));
    assert_eq!(outcome(command("c", "failed", Value::Null, Value::Null)), (failure("failed"), None, true));
    // Missing or unknown statuses are failures that may have run, whatever the output says.
    let mut no_status = command("c", "x", json!(0), json!("all good, success!"));
    no_status.as_object_mut().unwrap().remove("status");
    assert_eq!(outcome(no_status), (failure("unknown status"), Some(0), true));
    assert_eq!(
        outcome(command("c", "paused", json!(0), Value::Null)),
        (failure("unknown status: paused"), Some(0), true)
    );
    assert_eq!(
        outcome(command("c", "inProgress", Value::Null, Value::Null)),
        (failure("unknown status: inProgress"), None, true)
    );
}

#[test]
fn declined_command_never_started_and_the_turn_goes_on() {
    let (_, events) = run(&[
        turn_started(),
        item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
        item_completed(command("call_1", "declined", Value::Null, Value::Null)),
        item_completed(json!({"type": "agentMessage", "id": "m", "text": "ok, I won't"})),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let finish = finishes(&events)[0];
    assert_eq!(finish.outcome, ToolOutcome::Declined { reason: None });
    assert!(!finish.execution_started);
    assert!(finish.is_error());
    // A declined native call reports no mutation (docs/peers/openclaw.md#observetoolterminal).
    assert_eq!(finish.call.native_mutation, Some(NativeMutation { mutating_action: false, replay_safe: true }));
    assert_eq!(terminal(&events).kind, TerminalKind::Ok);
}

#[test]
fn file_change_reports_the_patch_that_was_applied() {
    let change = |diff: &str| json!([{"path": "a.txt", "kind": {"type": "update", "move_path": null}, "diff": diff}]);
    let (_, events) = run(&[
        turn_started(),
        item_started(json!({"type": "fileChange", "id": "fc_1", "changes": change("-a\n+b"), "status": "inProgress"})),
        note(
            "item/fileChange/patchUpdated",
            json!({"threadId": TH, "turnId": TU, "itemId": "fc_1", "changes": change("-a\n+c")}),
        ),
        // The completed item repeats no changes: the updated patch stands.
        item_completed(json!({"type": "fileChange", "id": "fc_1", "changes": [], "status": "completed"})),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let start = starts(&events)[0];
    assert_eq!(start.tool_name, PATCH_TOOL_NAME);
    assert_eq!(start.arguments["changes"][0]["diff"], "-a\n+b");
    let finish = finishes(&events)[0];
    assert_eq!(finish.outcome, ToolOutcome::Success);
    assert_eq!(finish.call.arguments["changes"][0]["diff"], "-a\n+c");
    assert_eq!(finish.call.native_mutation, Some(NativeMutation { mutating_action: true, replay_safe: false }));
}

#[test]
fn mcp_calls_are_named_server_dot_tool_and_fail_on_structured_errors() {
    let mcp = |id: &str, status: &str, result: Value, error: Value| {
        json!({"type": "mcpToolCall", "id": id, "server": "docs", "tool": "search", "status": status,
               "arguments": {"q": "x"}, "result": result, "error": error})
    };
    let text = |t: &str, is_error: bool| json!({"content": [{"type": "text", "text": t}], "isError": is_error});
    let (_, events) = run(&[
        turn_started(),
        item_started(mcp("m1", "inProgress", Value::Null, Value::Null)),
        item_completed(mcp("m1", "completed", text("found it", false), Value::Null)),
        item_completed(mcp("m2", "completed", text("no such index", true), Value::Null)),
        item_completed(mcp("m3", "failed", Value::Null, json!({"message": "server crashed"}))),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let start = starts(&events)[0];
    assert_eq!((start.tool_name.as_str(), &start.arguments, start.native), ("docs.search", &json!({"q": "x"}), true));
    assert_eq!(start.native_mutation, Some(NativeMutation { mutating_action: true, replay_safe: false }));
    let f = finishes(&events);
    assert_eq!(f[0].outcome, ToolOutcome::Success);
    assert_eq!(f[0].output.as_ref().unwrap().text, "found it");
    assert_eq!(
        f[1].outcome,
        ToolOutcome::Failure { error: Some("the tool reported an error".into()), error_code: None, timed_out: false }
    );
    assert_eq!(f[1].output.as_ref().unwrap().text, "no such index");
    assert_eq!(
        f[2].outcome,
        ToolOutcome::Failure { error: Some("server crashed".into()), error_code: None, timed_out: false }
    );
}

#[test]
fn web_search_is_read_only_and_has_no_status() {
    let search = json!({"type": "webSearch", "id": "ws_1", "query": "rust", "action": {"type": "search"}});
    let (_, events) = run(&[
        turn_started(),
        item_started(search.clone()),
        item_completed(search),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let finish = finishes(&events)[0];
    assert_eq!(finish.call.tool_name, WEB_SEARCH_TOOL_NAME);
    assert_eq!(finish.call.arguments, json!({"query": "rust", "action": {"type": "search"}}));
    assert_eq!(finish.call.native_mutation, Some(NativeMutation { mutating_action: false, replay_safe: true }));
    assert_eq!(finish.outcome, ToolOutcome::Success);
}

#[test]
fn dynamic_tools_are_host_tools_and_success_false_fails() {
    let dynamic = |id: &str, status: &str, success: Value| {
        json!({"type": "dynamicToolCall", "id": id, "namespace": null, "tool": "lookup_weather",
               "arguments": {"city": "Paris"}, "status": status, "success": success,
               "contentItems": [{"type": "inputText", "text": "sunny"}, {"type": "inputImage", "imageUrl": "data:x"}]})
    };
    let (_, events) = run(&[
        turn_started(),
        item_started(dynamic("d1", "inProgress", Value::Null)),
        item_completed(dynamic("d1", "completed", json!(true))),
        item_completed(dynamic("d2", "completed", json!(false))),
        item_completed(dynamic("d3", "failed", json!(false))),
        turn_completed("completed", json!([])),
    ]);
    assert_well_formed(&events);
    let f = finishes(&events);
    assert_eq!(f[0].call.tool_name, "lookup_weather");
    assert_eq!(f[0].call.arguments, json!({"city": "Paris"}));
    assert!(!f[0].call.native);
    assert_eq!(f[0].call.native_mutation, None);
    assert_eq!(f[0].outcome, ToolOutcome::Success);
    assert_eq!(f[0].output.as_ref().unwrap().text, "sunny");
    assert!(matches!(f[1].outcome, ToolOutcome::Failure { .. }));
    assert!(matches!(f[2].outcome, ToolOutcome::Failure { .. }));
}

#[test]
fn a_tool_finishes_once_and_never_without_a_start() {
    let done = command("call_1", "completed", json!(0), json!("hi\n"));
    let (_, events) = run(&[
        turn_started(),
        // item/started was missed: the start is synthesized from the completed item.
        item_completed(done.clone()),
        // Codex re-sends items (resume); neither may produce a second start or terminal.
        item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
        item_completed(done.clone()),
        turn_completed("completed", json!([done])),
    ]);
    assert_well_formed(&events);
    assert_eq!(starts(&events).len(), 1);
    assert_eq!(finishes(&events).len(), 1);
    assert!(matches!(events[2], Event::ToolStarted(_)));
    assert!(matches!(events[3], Event::ToolFinished(_)));
}

#[test]
fn turn_completed_backfills_missed_items() {
    let (_, events) = run(&[
        turn_started(),
        item_started(json!({"type": "agentMessage", "id": "msg_1", "text": ""})),
        delta("item/agentMessage/delta", "msg_1", "The out"),
        item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
        // A full items view: the message and the command finished, but their item/completed were lost.
        turn_completed(
            "completed",
            json!([{"type": "userMessage", "id": "um", "content": []},
                   command("call_1", "completed", json!(0), json!("x")),
                   {"type": "agentMessage", "id": "msg_1", "text": "The output was x"}]),
        ),
    ]);
    assert_well_formed(&events);
    assert_eq!(finishes(&events)[0].outcome, ToolOutcome::Success);
    assert!(events.contains(&Event::AssistantFinal { item_id: "msg_1".into(), text: "The output was x".into() }));
    assert_eq!(terminal(&events).kind, TerminalKind::Ok);
}

#[test]
fn tools_left_open_get_a_terminal_when_the_turn_ends() {
    let open = || item_started(command("call_1", "inProgress", Value::Null, Value::Null));
    let (_, interrupted) = run(&[turn_started(), open(), turn_completed("interrupted", json!([]))]);
    assert_well_formed(&interrupted);
    let finish = finishes(&interrupted)[0];
    assert!(matches!(finish.outcome, ToolOutcome::Cancelled { .. }));
    assert!(finish.execution_started);
    assert_eq!(terminal(&interrupted), &TurnTerminal { kind: TerminalKind::Aborted, message: None, cause: None });

    // A completed turn left a tool other than a shell command open: it never reported its end.
    // (A shell command left open is backgrounded: see the test after this one.)
    let open_mcp = item_started(json!({"type": "mcpToolCall", "id": "call_2", "server": "s", "tool": "t",
                                       "status": "inProgress", "arguments": {}}));
    let (_, completed) = run(&[turn_started(), open_mcp, turn_completed("completed", json!([]))]);
    assert_well_formed(&completed);
    assert!(matches!(finishes(&completed)[0].outcome, ToolOutcome::Failure { .. }));
    assert!(finishes(&completed)[0].execution_started);
}

/// Real codex 0.169.0 lines (its model endpoint answering 503, `stream_max_retries = 2`): each
/// retry numbers itself in its message and carries the HTTP status; no delay is given.
#[test]
fn a_retry_as_codex_sends_it_names_its_number_its_limit_and_the_status() {
    let reconnecting = |n: u32| {
        note(
            "error",
            json!({"error": {"message": format!("Reconnecting... {n}/2"),
                             "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 503}},
                             "additionalDetails": "unexpected status 503 Service Unavailable: scripted outage, url: http://127.0.0.1:39755/v1/responses",
                             "misalignment": null},
                   "willRetry": true, "threadId": TH, "turnId": TU}),
        )
    };
    let (_, events) = run(&[turn_started(), reconnecting(1), reconnecting(2)]);
    let retries: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelRetry { attempt, max_attempts, retry_in_ms, http_status, .. } => {
                Some((*attempt, *max_attempts, *retry_in_ms, *http_status))
            }
            _ => None,
        })
        .collect();
    assert_eq!(retries, [(Some(1), Some(2), None, Some(503)), (Some(2), Some(2), None, Some(503))]);
}

#[test]
fn failed_turns_carry_the_error_and_retries_are_not_terminal() {
    let error = |message: &str, will_retry: bool| {
        note(
            "error",
            json!({"threadId": TH, "turnId": TU, "willRetry": will_retry,
                   "error": {"message": message, "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 502}}}}),
        )
    };
    let (mut mapper, events) = run(&[turn_started(), error("transient", true), error("stream broke", false)]);
    let retry = |attempt: u32| Event::ModelRetry {
        message: r#"transient [{"httpConnectionFailed":{"httpStatusCode":502}}]"#.into(),
        attempt: Some(attempt),
        max_attempts: None,
        retry_in_ms: None,
        http_status: Some(502),
    };
    assert_eq!(
        events,
        [Event::TurnStarted { turn_id: TU.into() }, Event::ModelCallStarted {}, retry(1)],
        "a retry is progress, not an end"
    );
    assert!(!mapper.is_complete());
    // A turn abandoned while retrying (the watchdog, a cancel) says what it was waiting on.
    let retried = mapper.on_notification(&error("transient", true));
    assert_eq!(retried, [retry(2)]);
    let ended = mapper.abandon(TerminalKind::Timeout, "no progress from codex for 300s".into());
    assert_eq!(
        terminal(&ended).message.as_deref(),
        Some(
            r#"no progress from codex for 300s; the model request had failed 2 time(s), last: transient [{"httpConnectionFailed":{"httpStatusCode":502}}]"#
        )
    );

    // turn.error missing: the final error notification explains the failure.
    let (_, events) = run(&[turn_started(), error("stream broke", false), turn_completed("failed", json!([]))]);
    assert_eq!(
        terminal(&events),
        &TurnTerminal {
            kind: TerminalKind::Failed,
            message: Some(r#"stream broke [{"httpConnectionFailed":{"httpStatusCode":502}}]"#.into()),
            cause: None,
        }
    );

    // turn.error present: it wins.
    let failed = note(
        "turn/completed",
        json!({"threadId": TH, "turn": {"id": TU, "items": [], "status": "failed",
               "error": {"message": "high demand", "codexErrorInfo": "internalServerError", "additionalDetails": "try later"}}}),
    );
    let (_, events) = run(&[turn_started(), error("stream broke", false), failed]);
    assert_eq!(terminal(&events).message.as_deref(), Some("high demand [internalServerError]: try later"));

    // A terminal record without a terminal status is not a success.
    for status in [json!("inProgress"), json!("weird"), Value::Null] {
        let n = note("turn/completed", json!({"threadId": TH, "turn": {"id": TU, "items": [], "status": status}}));
        let (_, events) = run(&[turn_started(), n]);
        assert_eq!(terminal(&events).kind, TerminalKind::Failed, "status {status}");
    }
}

#[test]
fn a_turn_codex_failed_on_its_transport_says_so_and_a_provider_error_does_not() {
    let failed = |info: Value| {
        note(
            "turn/completed",
            json!({"threadId": TH, "turn": {"id": TU, "items": [], "status": "failed",
                   "error": {"message": "stream disconnected before completion", "codexErrorInfo": info}}}),
        )
    };
    // No connection (no HTTP status: no response came) or a stream that broke off: the transport.
    for info in [
        json!({"responseStreamDisconnected": {"httpStatusCode": null}}),
        json!({"responseStreamDisconnected": {}}),
        json!({"httpConnectionFailed": {}}),
        json!({"responseStreamConnectionFailed": {"httpStatusCode": null}}),
    ] {
        let (_, events) = run(&[turn_started(), failed(info.clone())]);
        assert_eq!(terminal(&events).kind, TerminalKind::Failed, "{info}");
        assert_eq!(terminal(&events).cause, Some(TerminalCause::ProviderTransport), "{info}");
    }
    // The provider answered (a status), a 5xx class, exhausted retries or no class: not the transport.
    for info in [
        json!({"httpConnectionFailed": {"httpStatusCode": 502}}),
        json!({"responseStreamConnectionFailed": {"httpStatusCode": 429}}),
        json!({"responseStreamDisconnected": {"httpStatusCode": 503}}),
        json!({"responseTooManyFailedAttempts": {}}),
        json!("internalServerError"),
        json!("brandNewThing"),
        Value::Null,
    ] {
        let (_, events) = run(&[turn_started(), failed(info.clone())]);
        assert_eq!(terminal(&events).kind, TerminalKind::Failed, "{info}");
        assert_eq!(terminal(&events).cause, None, "{info}");
    }
    // Without turn.error, the final error notification's class decides.
    let disconnected = note(
        "error",
        json!({"threadId": TH, "turnId": TU, "willRetry": false,
               "error": {"message": "stream disconnected", "codexErrorInfo": {"responseStreamDisconnected": {}}}}),
    );
    let (_, events) = run(&[turn_started(), disconnected, turn_completed("failed", json!([]))]);
    assert_eq!(terminal(&events).cause, Some(TerminalCause::ProviderTransport));
    // Codex 0.169 when its stream retries run out: each retry is `responseStreamDisconnected` with
    // the failure as its detail; the final error repeats that detail, classed `other`.
    let retried = |details: &str| {
        note(
            "error",
            json!({"threadId": TH, "turnId": TU, "willRetry": true,
                   "error": {"message": "Reconnecting... 2/2", "codexErrorInfo": {"responseStreamDisconnected": {}},
                             "additionalDetails": details}}),
        )
    };
    let gave_up = note(
        "turn/completed",
        json!({"threadId": TH, "turn": {"id": TU, "items": [], "status": "failed",
               "error": {"message": "stream disconnected before completion: stream closed before response.completed",
                         "codexErrorInfo": "other"}}}),
    );
    let detail = "stream disconnected before completion: stream closed before response.completed";
    let (_, events) = run(&[turn_started(), retried(detail), gave_up.clone()]);
    assert_eq!(terminal(&events).cause, Some(TerminalCause::ProviderTransport));
    // `other` after another retried failure, or with no retry at all, is not the transport.
    let (_, events) = run(&[turn_started(), retried("something else"), gave_up.clone()]);
    assert_eq!(terminal(&events).cause, None);
    // A retried 503 (0.169 classes it `responseStreamDisconnected` with the status) is no transport.
    let retried_503 = note(
        "error",
        json!({"threadId": TH, "turnId": TU, "willRetry": true,
               "error": {"message": "Reconnecting... 2/2", "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 503}},
                         "additionalDetails": detail}}),
    );
    let (_, events) = run(&[turn_started(), retried_503, gave_up.clone()]);
    assert_eq!(terminal(&events).cause, None);
    let (_, events) = run(&[turn_started(), gave_up]);
    assert_eq!(terminal(&events).cause, None);
    // A transport failure Codex still retries is progress, not the turn's class.
    let retrying = note(
        "error",
        json!({"threadId": TH, "turnId": TU, "willRetry": true,
               "error": {"message": "Reconnecting... 1/5", "codexErrorInfo": {"responseStreamDisconnected": {}}}}),
    );
    let (_, events) = run(&[turn_started(), retrying, turn_completed("failed", json!([]))]);
    assert_eq!(terminal(&events).cause, None);
}

#[test]
fn other_threads_turns_and_unknown_methods_are_ignored() {
    let other_thread =
        note("item/agentMessage/delta", json!({"threadId": "th-2", "turnId": TU, "itemId": "m", "delta": "x"}));
    let other_turn =
        note("item/agentMessage/delta", json!({"threadId": TH, "turnId": "tu-2", "itemId": "m", "delta": "x"}));
    let before_turn = delta("item/agentMessage/delta", "m", "early");
    let unknown = ServerNotification::from_notification("hook/started", Some(json!({"threadId": TH, "turnId": TU})));
    let another_turn_started = note("turn/started", json!({"threadId": TH, "turn": {"id": "tu-2"}}));
    let another_turn_completed =
        note("turn/completed", json!({"threadId": TH, "turn": {"id": "tu-2", "status": "completed"}}));
    let warning = note("configWarning", json!({"summary": "no bubblewrap"}));
    let (mapper, events) = run(&[
        before_turn,
        turn_started(),
        other_thread,
        other_turn,
        unknown,
        another_turn_started,
        another_turn_completed,
        warning,
    ]);
    // Another turn's `turn/started` is not a model call of this one.
    assert_eq!(events, [Event::TurnStarted { turn_id: TU.into() }, Event::ModelCallStarted {}]);
    assert!(!mapper.is_complete());
}

#[test]
fn nothing_follows_the_terminal() {
    let (mut mapper, events) = run(&[turn_started(), turn_completed("completed", json!([]))]);
    assert_eq!(events.len(), 3);
    assert!(mapper.on_notification(&item_completed(command("c", "completed", json!(0), Value::Null))).is_empty());
    assert!(mapper.on_notification(&turn_completed("completed", json!([]))).is_empty());
    assert!(mapper.abandon(TerminalKind::Failed, "peer died".into()).is_empty());
}

#[test]
fn abandon_closes_open_tools_then_the_turn() {
    for (kind, expected) in [
        (TerminalKind::Failed, ToolOutcome::Failure { error: Some("why".into()), error_code: None, timed_out: false }),
        (TerminalKind::Timeout, ToolOutcome::Failure { error: Some("why".into()), error_code: None, timed_out: true }),
        (TerminalKind::Aborted, ToolOutcome::Cancelled { reason: Some("why".into()) }),
    ] {
        let (mut mapper, mut events) = run(&[
            turn_started(),
            item_started(command("a", "inProgress", Value::Null, Value::Null)),
            item_started(command("b", "inProgress", Value::Null, Value::Null)),
            item_completed(command("b", "completed", json!(0), Value::Null)),
            item_started(command("c", "inProgress", Value::Null, Value::Null)),
        ]);
        events.extend(mapper.abandon(kind, "why".into()));
        assert_well_formed(&events);
        let f = finishes(&events);
        let closed: Vec<_> =
            f[1..].iter().map(|f| (f.call.call_id.as_str(), &f.outcome, f.execution_started)).collect();
        assert_eq!(closed, [("a", &expected, true), ("c", &expected, true)]);
        assert_eq!(terminal(&events), &TurnTerminal { kind, message: Some("why".into()), cause: None });
        assert!(!mapper.is_complete());
        assert!(mapper.abandon(kind, "again".into()).is_empty());
    }
    // Before the turn even started there is no id to announce: only the terminal.
    let mut mapper = TurnMapper::new(TH);
    assert_eq!(
        mapper.abandon(TerminalKind::Failed, "spawn failed".into()),
        [Event::TurnTerminal(TurnTerminal {
            kind: TerminalKind::Failed,
            message: Some("spawn failed".into()),
            cause: None
        })]
    );
}

#[test]
fn a_turn_id_pinned_by_the_turn_start_result_is_announced_once() {
    let mut mapper = TurnMapper::new(TH);
    assert!(mapper.expect_turn(TU));
    assert!(!mapper.expect_turn("tu-other"));
    let mut events = mapper.on_notification(&delta("item/agentMessage/delta", "m", "hi"));
    events.extend(mapper.on_notification(&turn_started()));
    events.extend(mapper.on_notification(&turn_completed("completed", json!([]))));
    assert_eq!(
        events,
        [
            Event::TurnStarted { turn_id: TU.into() },
            Event::AssistantDelta { item_id: "m".into(), delta: "hi".into() },
            Event::ModelCallStarted {},
            Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
        ]
    );
}

#[test]
fn canonical_names() {
    let item = |v: Value| serde_json::from_value::<ThreadItem>(v).unwrap();
    let name = |v: Value| canonical_tool_name(&item(v));
    assert_eq!(name(json!({"type": "commandExecution", "id": "c"})).as_deref(), Some(SHELL_TOOL_NAME));
    assert_eq!(name(json!({"type": "fileChange", "id": "f"})).as_deref(), Some("apply_patch"));
    assert_eq!(name(json!({"type": "mcpToolCall", "id": "m", "server": "s", "tool": "t"})).as_deref(), Some("s.t"));
    assert_eq!(name(json!({"type": "mcpToolCall", "id": "m", "tool": "t"})).as_deref(), Some("t"));
    assert_eq!(name(json!({"type": "webSearch", "id": "w"})).as_deref(), Some("web_search"));
    assert_eq!(
        name(json!({"type": "dynamicToolCall", "id": "d", "namespace": "ns", "tool": "t"})).as_deref(),
        Some("t")
    );
    assert_eq!(name(json!({"type": "agentMessage", "id": "a", "text": ""})), None);
    assert_eq!(name(json!({"type": "imageGeneration", "id": "i"})), None);
}

/// One recorded turn's events and how it ended.
struct RecordedTurn {
    events: Vec<Event>,
    complete: bool,
}

/// Plays a recording's notifications through a mapper per turn, created when the client sends
/// `turn/start` (as the bridge does) and pinned by the `turn/start` result.
fn play(path: &Path) -> Vec<RecordedTurn> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut turns: Vec<RecordedTurn> = Vec::new();
    let mut mapper: Option<TurnMapper> = None;
    let mut turn_start_id: Option<Value> = None;
    for (n, line) in text.lines().enumerate() {
        let Ok(record) = serde_json::from_str::<Value>(line) else { panic!("{}:{}: not JSON", path.display(), n + 1) };
        let message = &record["json"];
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id");
        match (record["dir"].as_str(), method, id) {
            (Some("to_agent"), Some("turn/start"), Some(id)) => {
                if let Some(mut previous) = mapper.take() {
                    let events = previous.abandon(TerminalKind::Failed, "superseded".into());
                    turns.last_mut().expect("a turn").events.extend(events);
                }
                let thread = message["params"]["threadId"].as_str().unwrap_or_default();
                mapper = Some(TurnMapper::new(thread));
                turn_start_id = Some(id.clone());
                turns.push(RecordedTurn { events: Vec::new(), complete: false });
            }
            (Some("from_agent"), None, Some(id)) if Some(id) == turn_start_id.as_ref() => {
                if let (Some(m), Some(turn)) = (mapper.as_mut(), message["result"]["turn"]["id"].as_str()) {
                    assert!(m.expect_turn(turn));
                }
            }
            (Some("from_agent"), Some(method), None) => {
                let notification = ServerNotification::from_notification(method, message.get("params").cloned());
                if let ServerNotification::Unknown { decode_error: Some(e), .. } = &notification {
                    panic!("{}:{}: {method} did not decode: {e}", path.display(), n + 1);
                }
                if let Some(m) = mapper.as_mut() {
                    let events = m.on_notification(&notification);
                    let turn = turns.last_mut().expect("a turn");
                    turn.events.extend(events);
                    turn.complete = m.is_complete();
                }
            }
            _ => {}
        }
    }
    turns
}

#[test]
fn recorded_codex_sessions_map_to_well_formed_turns() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/recordings/codex"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("no recordings at {}; skipped", dir.display());
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            // `*.model.jsonl` are the mock model's request logs, not peer sessions.
            name.ends_with(".jsonl") && !name.ends_with(".model.jsonl")
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        eprintln!("no recordings in {}; skipped", dir.display());
    }
    for path in &paths {
        let scenario = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().trim_end_matches(".jsonl");
        let turns = play(path);
        assert!(!turns.is_empty(), "{scenario}: no turn");
        for turn in &turns {
            assert!(turn.complete, "{scenario}: turn/completed not seen: {:#?}", turn.events);
            assert_well_formed(&turn.events);
        }
        let events = &turns.last().expect("a turn").events;
        let finished = finishes(events);
        let assistant_final =
            events.iter().any(|e| matches!(e, Event::AssistantFinal { text, .. } if !text.is_empty()));
        let kind = terminal(events).kind;
        let shell_finish = || {
            assert_eq!(finished.len(), 1, "{scenario}: {events:#?}");
            assert_eq!(finished[0].call.tool_name, SHELL_TOOL_NAME, "{scenario}");
            finished[0]
        };
        match scenario {
            "plain-text" | "resume" => {
                assert!(assistant_final, "{scenario}: {events:#?}");
                assert_eq!(kind, TerminalKind::Ok, "{scenario}");
                assert!(starts(events).is_empty(), "{scenario}: {events:#?}");
            }
            "command-auto" | "command-approved" => {
                let f = shell_finish();
                assert_eq!(f.outcome, ToolOutcome::Success, "{scenario}");
                assert!(f.execution_started, "{scenario}");
                assert_eq!(f.exit_code, Some(0), "{scenario}");
                assert!(f.output.as_ref().is_some_and(|o| !o.text.is_empty()), "{scenario}");
                assert_eq!(kind, TerminalKind::Ok, "{scenario}");
                assert!(assistant_final, "{scenario}");
            }
            "command-declined" => {
                let f = shell_finish();
                assert!(matches!(f.outcome, ToolOutcome::Declined { .. }), "{scenario}: {f:?}");
                assert!(!f.execution_started, "{scenario}");
                assert_eq!(kind, TerminalKind::Ok, "{scenario}");
            }
            "command-cancelled" => {
                let f = shell_finish();
                assert!(matches!(f.outcome, ToolOutcome::Declined { .. }), "{scenario}: {f:?}");
                assert!(!f.execution_started, "{scenario}");
                assert_eq!(kind, TerminalKind::Aborted, "{scenario}");
            }
            "dynamic-tool" => {
                assert!(
                    finished.iter().any(|f| !f.call.native && f.outcome == ToolOutcome::Success),
                    "{scenario}: {events:#?}"
                );
                assert_eq!(kind, TerminalKind::Ok, "{scenario}");
            }
            "model-error" => {
                assert_eq!(kind, TerminalKind::Failed, "{scenario}");
                let message = terminal(events).message.clone().unwrap_or_default();
                assert!(message.contains("internalServerError"), "{scenario}: {message}");
            }
            _ => {}
        }
        if scenario == "resume" {
            // Only the resumed turn's tokens, not the history replayed before it started.
            let last_usage = events.iter().rev().find_map(|e| if let Event::Usage(u) = e { Some(*u) } else { None });
            let usage = last_usage.expect("usage");
            assert!(usage.input_tokens > 0 && usage.input_tokens <= 100, "{usage:?}");
        }
        eprintln!("{scenario}: {} turn(s), {} events in the last", turns.len(), events.len());
    }
}

#[test]
fn a_command_still_running_when_the_turn_completes_is_backgrounded_not_failed() {
    let notes = [
        turn_started(),
        item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
        delta("item/commandExecution/outputDelta", "call_1", "Process running with session ID 7"),
        turn_completed("completed", json!([])),
    ];
    let (_, events) = run(&notes);
    let finished: Vec<&clawbridge_bridge::events::ToolFinish> =
        events.iter().filter_map(|e| if let Event::ToolFinished(f) = e { Some(f) } else { None }).collect();
    assert_eq!(finished.len(), 1, "{events:?}");
    assert_eq!(finished[0].outcome, ToolOutcome::Backgrounded { detail: None });
    assert!(!finished[0].is_error());
    let report = clawbridge_bridge::attempt::hooks::ToolTerminalReport::from_finish(finished[0]);
    assert_eq!(report.outcome, clawbridge_bridge::attempt::hooks::TerminalOutcome::Success);
    assert_eq!(report.meta.as_deref(), Some("running in the background"));

    // The same open command on an interrupted or failed turn did not survive it.
    for (status, backgrounded) in [("interrupted", false), ("failed", false)] {
        let notes = [
            turn_started(),
            item_started(command("call_1", "inProgress", Value::Null, Value::Null)),
            turn_completed(status, json!([])),
        ];
        let (_, events) = run(&notes);
        let outcome =
            events.iter().find_map(|e| if let Event::ToolFinished(f) = e { Some(f.outcome.clone()) } else { None });
        assert_eq!(matches!(outcome, Some(ToolOutcome::Backgrounded { .. })), backgrounded, "{status}: {outcome:?}");
    }
}

#[test]
fn a_dynamic_tool_s_images_stay_in_its_output() {
    let item = |status: &str| {
        json!({"type": "dynamicToolCall", "id": "call_9", "tool": "screenshot", "arguments": {}, "status": status,
               "success": true,
               "contentItems": [{"type": "inputText", "text": "shot"},
                                {"type": "inputImage", "imageUrl": "data:image/png;base64,iVBORw0KGgo="},
                                {"type": "inputImage", "imageUrl": "https://example.com/remote.png"}]})
    };
    let (_, events) = run(&[turn_started(), item_started(item("inProgress")), item_completed(item("completed"))]);
    let output = finishes(&events)[0].output.clone().expect("an output");
    assert_eq!(output.text, "shot");
    assert_eq!(
        output.images,
        [clawbridge_bridge::events::ToolImage { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() }],
        "only inline images: a remote URL is no image bytes"
    );
}

#[test]
fn codex_s_own_compaction_in_a_turn_is_one_context_compacted_event() {
    let (_, events) = run(&[
        turn_started(),
        item_started(json!({"type": "contextCompaction", "id": "cc-1"})),
        item_completed(json!({"type": "contextCompaction", "id": "cc-1"})),
        note("thread/compacted", json!({"threadId": TH, "turnId": TU})),
        item_completed(json!({"type": "agentMessage", "id": "msg_1", "text": "Done"})),
        turn_completed("completed", json!([])),
    ]);
    let compacted: Vec<_> = events.iter().filter(|e| matches!(e, Event::ContextCompacted { .. })).collect();
    assert_eq!(
        compacted,
        [&Event::ContextCompacted { item_id: "cc-1".into(), tokens_before: None, tokens_after: None }],
        "{events:?}"
    );
    assert!(events.contains(&Event::AssistantFinal { item_id: "msg_1".into(), text: "Done".into() }));
}
