//! Tests of the Claude stream-json mapping: hand-written sequences for each rule, and every recorded
//! Claude session under `fixtures/recordings/claude/`.

use std::collections::HashMap;
use std::path::Path;

use clawbridge_bridge::events::{
    Event, LastCall, NativeMutation, TerminalCause, TerminalKind, ToolOutcome, TurnTerminal, Usage,
};
use clawbridge_protocol::claude::{
    CliMessage, ClientMessage, ControlRequestBody, ControlResponseBody, PermissionResult, SystemMessage,
};
use serde_json::{Value, json};

use super::mapping::{SHELL_TOOL_NAME, TurnMapper, canonical_tool_name};
use crate::test_support::{assert_well_formed, finishes, starts, terminal};

const TURN: &str = "turn-1";

/// Decodes a line, failing the test if it lands in a catch-all (a test that feeds `Unknown` by
/// accident would test nothing).
fn line(value: Value) -> CliMessage {
    let message = CliMessage::from_value(value);
    match &message {
        CliMessage::Unknown(u) => panic!("did not decode: {u:?}"),
        CliMessage::System(SystemMessage::Other(u)) if u.decode_error.is_some() => panic!("did not decode: {u:?}"),
        _ => message,
    }
}

fn init() -> CliMessage {
    line(json!({"type": "system", "subtype": "init", "session_id": "s-1", "claude_code_version": "2.1.328"}))
}

fn assistant(message_id: &str, block: Value) -> CliMessage {
    line(json!({"type": "assistant", "message": {"id": message_id, "role": "assistant", "content": [block],
        "stop_reason": null}, "parent_tool_use_id": null, "session_id": "s-1"}))
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn tool_result(id: &str, content: &str, is_error: bool, extra: Value) -> CliMessage {
    let mut value = json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}]},
        "parent_tool_use_id": null, "session_id": "s-1"});
    if let (Value::Object(v), Value::Object(e)) = (&mut value, extra) {
        v.extend(e);
    }
    line(value)
}

fn result(subtype: &str, is_error: bool, extra: Value) -> CliMessage {
    let mut value = json!({"type": "result", "subtype": subtype, "is_error": is_error, "session_id": "s-1",
        "result": "done", "usage": {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 30, "output_tokens_details": {"thinking_tokens": 7}}});
    if let (Value::Object(v), Value::Object(e)) = (&mut value, extra) {
        v.extend(e);
    }
    line(value)
}

fn stream(event: Value) -> CliMessage {
    line(json!({"type": "stream_event", "api_message_id": "msg_1", "event": event, "parent_tool_use_id": null}))
}

fn run(lines: &[CliMessage]) -> (TurnMapper, Vec<Event>) {
    let mut mapper = TurnMapper::new(TURN);
    let events = lines.iter().flat_map(|l| mapper.on_message(l)).collect();
    (mapper, events)
}

#[test]
fn plain_text_turn_with_usage_in_the_normalized_convention() {
    let (mapper, events) = run(&[init(), assistant("msg_1", text("Hello")), result("success", false, json!({}))]);
    assert_eq!(
        events,
        vec![
            Event::TurnStarted { turn_id: TURN.into() },
            Event::AssistantFinal { item_id: "msg_1:0".into(), text: "Hello".into() },
            // Input counts every prompt token: 100 uncached + 5 written + 30 read.
            Event::Usage(Usage { input_tokens: 135, output_tokens: 20, cached_input_tokens: 30, reasoning_tokens: 7 }),
            Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
        ]
    );
    assert!(mapper.is_complete());
    assert_eq!(mapper.session_id(), Some("s-1"));
}

/// A restarted CLI counts turns from 1 again, so the turn is named by the CLI's own fresh `uuid` of
/// the `system/init` that opens it (transcript keys derive from it); a later init renames nothing.
#[test]
fn the_opening_init_names_the_turn() {
    let named = |uuid: &str| line(json!({"type": "system", "subtype": "init", "session_id": "s-1", "uuid": uuid}));
    let (mapper, events) = run(&[
        named("u-first"),
        named("u-second"),
        assistant("msg_1", text("Hi")),
        result("success", false, json!({})),
    ]);
    assert_eq!(events[0], Event::TurnStarted { turn_id: "u-first".into() });
    assert_eq!(mapper.turn_id(), "u-first");
    let (mapper, events) = run(&[assistant("msg_1", text("Hi")), named("u-late"), result("success", false, json!({}))]);
    assert_eq!(events[0], Event::TurnStarted { turn_id: TURN.into() }, "the turn was already announced");
    assert_eq!(mapper.turn_id(), TURN);
}

#[test]
fn init_is_idempotent_and_nothing_follows_the_result() {
    let (mut mapper, events) =
        run(&[init(), init(), assistant("msg_1", text("Hi")), result("success", false, json!({}))]);
    assert_eq!(events.iter().filter(|e| matches!(e, Event::TurnStarted { .. })).count(), 1);
    assert_well_formed(&events);
    assert!(mapper.on_message(&assistant("msg_2", text("late"))).is_empty());
    assert!(mapper.on_message(&result("success", false, json!({}))).is_empty());
    assert!(mapper.abandon(TerminalKind::Failed, "gone".into()).is_empty());
}

#[test]
fn blocks_of_one_message_get_their_index_and_reasoning_keeps_its_signature() {
    let (_, events) = run(&[
        init(),
        assistant("msg_1", json!({"type": "thinking", "thinking": "hm", "signature": "sig"})),
        assistant("msg_1", text("Answer")),
        assistant("msg_1", json!({"type": "redacted_thinking", "data": "xx"})),
        assistant("msg_2", text("More")),
        result("success", false, json!({})),
    ]);
    assert_eq!(
        events[1..4],
        [
            Event::ReasoningFinal { item_id: "msg_1:0".into(), text: "hm".into(), signature: Some("sig".into()) },
            Event::AssistantFinal { item_id: "msg_1:1".into(), text: "Answer".into() },
            Event::AssistantFinal { item_id: "msg_2:0".into(), text: "More".into() },
        ]
    );
}

#[test]
fn partial_deltas_share_the_final_items_id() {
    let (_, events) = run(&[
        init(),
        stream(json!({"type": "message_start", "message": {"id": "msg_1", "content": []}})),
        stream(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ),
        stream(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "a"}}),
        ),
        stream(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}}),
        ),
        assistant("msg_1", json!({"type": "thinking", "thinking": "a", "signature": "s"})),
        stream(json!({"type": "content_block_stop", "index": 0})),
        stream(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
        stream(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "He"}})),
        stream(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "llo"}})),
        assistant("msg_1", text("Hello")),
        // A late delta after the final would only duplicate it.
        stream(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "!"}})),
        stream(json!({"type": "content_block_stop", "index": 1})),
        stream(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}})),
        stream(json!({"type": "message_stop"})),
        result("success", false, json!({})),
    ]);
    assert_eq!(
        events[1..7],
        [
            Event::ModelCallStarted {},
            Event::ReasoningDelta { item_id: "msg_1:0".into(), delta: "a".into() },
            Event::ReasoningFinal { item_id: "msg_1:0".into(), text: "a".into(), signature: Some("s".into()) },
            Event::AssistantDelta { item_id: "msg_1:1".into(), delta: "He".into() },
            Event::AssistantDelta { item_id: "msg_1:1".into(), delta: "llo".into() },
            Event::AssistantFinal { item_id: "msg_1:1".into(), text: "Hello".into() },
        ]
    );
    assert!(matches!(events[7], Event::Usage(_)));
    assert_well_formed(&events);
}

#[test]
fn each_model_request_of_the_main_agent_starts_a_model_call() {
    let subagent =
        line(json!({"type": "stream_event", "api_message_id": "msg_sub", "parent_tool_use_id": "toolu_task",
        "event": {"type": "message_start", "message": {"id": "msg_sub", "content": []}}}));
    let (_, events) = run(&[
        init(),
        stream(json!({"type": "message_start", "message": {"id": "msg_1", "content": []}})),
        // A subagent's request is its own, not a model call of this turn's agent.
        subagent,
        stream(json!({"type": "message_start", "message": {"id": "msg_2", "content": []}})),
        result("success", false, json!({})),
    ]);
    let calls = events.iter().filter(|e| matches!(e, Event::ModelCallStarted {})).count();
    assert_eq!(calls, 2, "{events:#?}");
    assert!(matches!(events[0], Event::TurnStarted { .. }));
    assert_well_formed(&events);
}

#[test]
fn an_interrupted_stream_is_finalised_with_what_was_shown() {
    let mut mapper = TurnMapper::new(TURN);
    let mut events: Vec<Event> = [
        init(),
        stream(json!({"type": "message_start", "message": {"id": "msg_1"}})),
        stream(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
        stream(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}})),
    ]
    .iter()
    .flat_map(|l| mapper.on_message(l))
    .collect();
    mapper.note_interrupt_requested();
    events.extend(mapper.on_message(&result("error_during_execution", true, json!({"result": ""}))));
    assert!(events.contains(&Event::AssistantFinal { item_id: "msg_1:0".into(), text: "Half".into() }));
    assert_eq!(terminal(&events).kind, TerminalKind::Aborted, "an error after our interrupt is an abort");
}

#[test]
fn an_allowed_bash_call_succeeds_with_its_output() {
    let (_, events) = run(&[
        init(),
        assistant("msg_1", tool_use("toolu_1", "Bash", json!({"command": "echo hi | tee x"}))),
        tool_result(
            "toolu_1",
            "hi",
            false,
            json!({"tool_use_result": {"stdout": "hi", "interrupted": false},
            "tool_result_meta": [{"id": "toolu_1", "permission_decision": {"decision": "accept"}}]}),
        ),
        assistant("msg_2", text("It printed hi")),
        result("success", false, json!({})),
    ]);
    assert_well_formed(&events);
    let started = starts(&events);
    assert_eq!(started[0].tool_name, SHELL_TOOL_NAME);
    assert!(started[0].native);
    assert_eq!(started[0].native_mutation, Some(NativeMutation { mutating_action: true, replay_safe: false }));
    let f = finishes(&events)[0];
    assert_eq!(f.outcome, ToolOutcome::Success);
    assert!(f.execution_started);
    assert_eq!(f.output.as_ref().map(|o| o.text.as_str()), Some("hi"));
    assert_eq!(terminal(&events).kind, TerminalKind::Ok);
}

#[test]
fn a_call_the_host_denied_is_declined_and_never_started() {
    let mut mapper = TurnMapper::new(TURN);
    let mut events = mapper.on_message(&init());
    events.extend(mapper.on_message(&assistant("msg_1", tool_use("toolu_1", "Bash", json!({"command": "rm x"})))));
    mapper.note_denied("toolu_1", "The user declined this tool call.");
    events.extend(mapper.on_message(&tool_result("toolu_1", "The user declined this tool call.", true, json!({}))));
    events.extend(mapper.on_message(&result("success", false, json!({}))));
    assert_well_formed(&events);
    let f = finishes(&events)[0];
    assert_eq!(f.outcome, ToolOutcome::Declined { reason: Some("The user declined this tool call.".into()) });
    assert!(!f.execution_started);
    assert_eq!(f.call.native_mutation, Some(NativeMutation { mutating_action: false, replay_safe: true }));
    // A denial does not fail the turn.
    assert_eq!(terminal(&events).kind, TerminalKind::Ok);
}

#[test]
fn structured_rejections_and_auto_denials_are_declines_too() {
    let (_, events) = run(&[
        init(),
        assistant("msg_1", tool_use("toolu_1", "Write", json!({"file_path": "/x"}))),
        tool_result(
            "toolu_1",
            "no",
            true,
            json!({"tool_result_meta": [{"id": "toolu_1",
            "permission_decision": {"decision": "reject", "source": "user_reject"}, "non_execution_kind": "x"}]}),
        ),
        assistant("msg_1", tool_use("toolu_2", "Edit", json!({}))),
        line(json!({"type": "system", "subtype": "permission_denied", "tool_name": "Edit", "tool_use_id": "toolu_2",
            "message": "denied by rule"})),
        tool_result("toolu_2", "Permission denied", true, json!({})),
        result("success", false, json!({})),
    ]);
    assert_well_formed(&events);
    let f = finishes(&events);
    assert_eq!(f[0].outcome, ToolOutcome::Declined { reason: Some("no".into()) });
    assert_eq!(f[1].outcome, ToolOutcome::Declined { reason: Some("denied by rule".into()) });
    assert!(f.iter().all(|f| !f.execution_started));
}

#[test]
fn a_command_stopped_while_running_is_cancelled_and_counted_as_started() {
    // What claude 2.1.328 sends for a Bash call interrupted mid-run: `user-rejected` with no
    // permission decision (a refusal carries one), seen in `claude_live`'s interrupt test.
    let stopped = json!({
        "tool_use_result": "User rejected tool use",
        "tool_result_meta": [{"id": "toolu_1", "non_execution_kind": "user-rejected"}],
    });
    let (_, events) = run(&[
        init(),
        assistant("msg_1", tool_use("toolu_1", "Bash", json!({"command": "echo hello && sleep 30"}))),
        tool_result("toolu_1", "The user doesn't want to proceed with this tool use.", true, stopped),
        result("error_during_execution", true, json!({})),
    ]);
    assert_well_formed(&events);
    let f = finishes(&events);
    assert!(matches!(f[0].outcome, ToolOutcome::Cancelled { .. }), "{:?}", f[0].outcome);
    assert!(f[0].execution_started, "it may have run: the host must not replay it as never run");
}

#[test]
fn errors_and_interrupted_commands() {
    let (_, events) = run(&[
        init(),
        assistant("msg_1", tool_use("toolu_1", "Bash", json!({"command": "false"}))),
        tool_result("toolu_1", "Exit code 1", true, json!({})),
        assistant("msg_2", tool_use("toolu_2", "Bash", json!({"command": "sleep 9"}))),
        tool_result("toolu_2", "", false, json!({"tool_use_result": {"interrupted": true}})),
        result("success", false, json!({})),
    ]);
    assert_well_formed(&events);
    let f = finishes(&events);
    assert_eq!(
        f[0].outcome,
        ToolOutcome::Failure { error: Some("Exit code 1".into()), error_code: None, timed_out: false }
    );
    assert!(f[0].execution_started);
    assert!(matches!(f[1].outcome, ToolOutcome::Cancelled { .. }));
}

#[test]
fn a_tool_finishes_once_and_never_without_a_start() {
    let (_, events) = run(&[
        init(),
        // A result for a call never seen is dropped.
        tool_result("toolu_ghost", "x", false, json!({})),
        assistant("msg_1", tool_use("toolu_1", "Read", json!({"file_path": "/x"}))),
        assistant("msg_1", tool_use("toolu_1", "Read", json!({"file_path": "/x"}))),
        tool_result("toolu_1", "data", false, json!({})),
        tool_result("toolu_1", "data", false, json!({})),
        result("success", false, json!({})),
    ]);
    assert_well_formed(&events);
    assert_eq!(finishes(&events).len(), 1);
    assert_eq!(starts(&events)[0].native_mutation, Some(NativeMutation { mutating_action: false, replay_safe: true }));
}

#[test]
fn tools_left_open_get_a_terminal_when_the_result_arrives() {
    let mut mapper = TurnMapper::new(TURN);
    let mut events = mapper.on_message(&init());
    events.extend(mapper.on_message(&assistant("msg_1", tool_use("toolu_1", "Bash", json!({})))));
    events.extend(mapper.on_message(&assistant("msg_1", tool_use("toolu_2", "Bash", json!({})))));
    // Denied with `interrupt: true`: no tool_result comes, the turn ends aborted.
    mapper.note_denied("toolu_2", "no");
    events.extend(mapper.on_message(&result(
        "error_during_execution",
        true,
        json!({"terminal_reason": "aborted_tools"}),
    )));
    assert_well_formed(&events);
    let f = finishes(&events);
    assert!(matches!(f[0].outcome, ToolOutcome::Cancelled { .. }) && f[0].execution_started);
    assert!(matches!(f[1].outcome, ToolOutcome::Declined { .. }) && !f[1].execution_started);
    assert_eq!(terminal(&events).kind, TerminalKind::Aborted);
}

#[test]
fn failed_results_carry_their_message() {
    // An API failure as `success` + `is_error` (docs/peers/claude.md#error-results): the prose is
    // the message.
    let (_, events) = run(&[init(), result("success", true, json!({"result": "API Error: 500 overloaded"}))]);
    assert_eq!(terminal(&events).kind, TerminalKind::Failed);
    assert_eq!(terminal(&events).message.as_deref(), Some("API Error: 500 overloaded"));
    assert!(!events.iter().any(|e| matches!(e, Event::AssistantFinal { .. })), "error prose is no answer");
    let (_, events) = run(&[result("error_max_turns", true, json!({"result": null, "errors": ["max turns reached"]}))]);
    assert_eq!(terminal(&events).message.as_deref(), Some("max turns reached"));
    assert_well_formed(&events);
    let (_, events) = run(&[result("error_max_budget_usd", false, json!({"result": ""}))]);
    assert_eq!(terminal(&events).kind, TerminalKind::Failed, "an error subtype fails even without is_error");
    assert_eq!(terminal(&events).message.as_deref(), Some("the turn ended with error_max_budget_usd"));
}

#[test]
fn the_result_text_backfills_a_missing_answer() {
    let (_, events) = run(&[init(), result("success", false, json!({"result": "Only here"}))]);
    assert!(events.contains(&Event::AssistantFinal { item_id: format!("{TURN}:result"), text: "Only here".into() }));
}

#[test]
fn subagent_words_are_not_the_answer_but_its_tools_are_reported() {
    let sub = |block: Value| {
        line(
            json!({"type": "assistant", "message": {"id": "msg_s", "content": [block]}, "parent_tool_use_id": "toolu_task"}),
        )
    };
    let (_, events) = run(&[
        init(),
        assistant("msg_1", tool_use("toolu_task", "Task", json!({"prompt": "go"}))),
        sub(text("sub says")),
        sub(tool_use("toolu_sub", "Bash", json!({"command": "ls"}))),
        tool_result("toolu_sub", "a", false, json!({"parent_tool_use_id": "toolu_task"})),
        tool_result("toolu_task", "done", false, json!({})),
        assistant("msg_2", text("Main answer")),
        result("success", false, json!({})),
    ]);
    assert_well_formed(&events);
    let texts: Vec<_> = events
        .iter()
        .filter_map(|e| if let Event::AssistantFinal { text, .. } = e { Some(text) } else { None })
        .collect();
    assert_eq!(texts, ["Main answer"]);
    assert_eq!(finishes(&events).len(), 2);
}

#[test]
fn host_mcp_tools_are_host_tools() {
    let mut mapper = TurnMapper::new(TURN).with_host_mcp_server("openclaw");
    let events =
        mapper.on_message(&assistant("msg_1", tool_use("toolu_1", "mcp__openclaw__echo", json!({"text": "x"}))));
    let call = starts(&events)[0];
    assert_eq!((call.tool_name.as_str(), call.native, call.native_mutation), ("echo", false, None));
    let events = mapper.on_message(&assistant("msg_1", tool_use("toolu_2", "mcp__github__create_issue", json!({}))));
    let call = starts(&events)[0];
    assert_eq!((call.tool_name.as_str(), call.native), ("github.create_issue", true));
}

#[test]
fn abandon_closes_open_tools_then_the_turn() {
    let mut mapper = TurnMapper::new(TURN);
    let mut events = mapper.on_message(&init());
    events.extend(mapper.on_message(&assistant("msg_1", tool_use("toolu_1", "Bash", json!({})))));
    events.extend(mapper.abandon(TerminalKind::Timeout, "no result in time".into()));
    assert_well_formed(&events);
    let f = finishes(&events)[0];
    assert_eq!(
        f.outcome,
        ToolOutcome::Failure { error: Some("no result in time".into()), error_code: None, timed_out: true }
    );
    assert!(f.execution_started);
    assert_eq!(
        terminal(&events),
        &TurnTerminal { kind: TerminalKind::Timeout, message: Some("no result in time".into()), cause: None }
    );
    // A mapper that saw nothing still yields a well-formed turn.
    let events = TurnMapper::new(TURN).abandon(TerminalKind::Failed, "spawn failed".into());
    assert_well_formed(&events);
}

#[test]
fn control_traffic_and_unknown_lines_map_to_nothing() {
    let mut mapper = TurnMapper::new(TURN);
    for value in [
        json!({"type": "control_request", "request_id": "c", "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}),
        json!({"type": "control_cancel_request", "request_id": "c"}),
        json!({"type": "rate_limit_event"}),
        json!({"type": "system", "subtype": "thinking_tokens", "estimated_tokens": 3}),
        json!({"type": "user", "isReplay": true, "message": {"role": "user", "content": "hi"}}),
        json!(42),
    ] {
        assert!(mapper.on_message(&CliMessage::from_value(value.clone())).is_empty(), "{value}");
    }
}

#[test]
fn canonical_names() {
    for (name, canonical) in [
        ("Bash", "bash"),
        ("Edit", "edit"),
        ("MultiEdit", "multi_edit"),
        ("NotebookEdit", "notebook_edit"),
        ("WebSearch", "web_search"),
        ("TodoWrite", "todo_write"),
        ("HTTPFetch", "http_fetch"),
        ("already_snake", "already_snake"),
        ("mcp__github__create_issue", "github.create_issue"),
        ("mcp__srv__tool__with__parts", "srv.tool__with__parts"),
        ("mcp__broken", "mcp__broken"),
        ("", ""),
    ] {
        assert_eq!(canonical_tool_name(name), canonical, "{name}");
    }
}

/// `system` subtypes the recordings hold that have no variant of their own, because they carry nothing
/// for a turn's events (`thinking_tokens`: a running estimate while the model thinks).
const TOLERATED_SYSTEM_SUBTYPES: &[&str] = &["thinking_tokens"];

/// One recorded turn's events and how it ended.
struct RecordedTurn {
    /// Every event, in order.
    events: Vec<Event>,
    /// The `result` was seen.
    complete: bool,
    /// Denials the client's `can_use_tool` answers reported to the mapper.
    denials_noted: usize,
}

/// Plays a recording through a mapper per user line the client sent (as the bridge will), telling it
/// about the denials in the client's `can_use_tool` answers.
fn play(path: &Path) -> Vec<RecordedTurn> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut turns: Vec<RecordedTurn> = Vec::new();
    let mut mapper: Option<TurnMapper> = None;
    // can_use_tool request id → tool_use id, to apply the client's answer.
    let mut permission_requests: HashMap<String, String> = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let Ok(record) = serde_json::from_str::<Value>(raw) else { panic!("{}:{}: not JSON", path.display(), n + 1) };
        let Some(message) = record.get("json").cloned() else { continue };
        match record["dir"].as_str() {
            Some("to_agent") => match ClientMessage::from_value(message) {
                ClientMessage::User(_) => {
                    if let Some(mut previous) = mapper.take() {
                        let events = previous.abandon(TerminalKind::Failed, "superseded".into());
                        turns.last_mut().expect("a turn").events.extend(events);
                    }
                    mapper = Some(TurnMapper::new(format!("turn-{}", turns.len() + 1)));
                    turns.push(RecordedTurn { events: Vec::new(), complete: false, denials_noted: 0 });
                }
                ClientMessage::ControlResponse(answer) => {
                    let ControlResponseBody::Success(success) = answer.response else { continue };
                    let Some(tool_use_id) = permission_requests.get(&success.request_id) else { continue };
                    if let (Some(m), PermissionResult::Deny(deny)) =
                        (mapper.as_mut(), PermissionResult::from_value(success.response))
                    {
                        m.note_denied(tool_use_id, deny.message);
                        turns.last_mut().expect("a turn").denials_noted += 1;
                    }
                }
                _ => {}
            },
            Some("from_agent") => {
                let decoded = CliMessage::from_value(message);
                match &decoded {
                    CliMessage::Unknown(u) if !decoded.is_known_skip() => {
                        panic!("{}:{}: unknown line {u:?}", path.display(), n + 1)
                    }
                    // System subtypes without a variant must be listed as tolerated; a decode error never is.
                    CliMessage::System(SystemMessage::Other(u)) => {
                        assert_eq!(u.decode_error, None, "{}:{}", path.display(), n + 1);
                        let subtype = u.get_str("subtype").unwrap_or_default();
                        assert!(
                            TOLERATED_SYSTEM_SUBTYPES.contains(&subtype),
                            "{}:{}: {subtype}",
                            path.display(),
                            n + 1
                        );
                    }
                    CliMessage::ControlRequest(r) => {
                        if let ControlRequestBody::CanUseTool(c) = &r.request {
                            permission_requests.insert(r.request_id.clone(), c.tool_use_id.clone().unwrap_or_default());
                        }
                    }
                    _ => {}
                }
                if let Some(m) = mapper.as_mut() {
                    let events = m.on_message(&decoded);
                    let turn = turns.last_mut().expect("a turn");
                    turn.events.extend(events);
                    turn.complete = m.is_complete();
                }
            }
            other => panic!("{}:{}: dir {other:?}", path.display(), n + 1),
        }
    }
    turns
}

#[test]
fn recorded_claude_sessions_map_to_well_formed_turns() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/recordings/claude"));
    let Ok(entries) = std::fs::read_dir(dir) else {
        eprintln!("no recordings at {}; skipped", dir.display());
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            // `*.model.jsonl` are the mock model's request logs, not CLI sessions.
            name.ends_with(".jsonl") && !name.ends_with(".model.jsonl")
        })
        .collect();
    paths.sort();
    let mut seen = Vec::new();
    for path in &paths {
        let scenario = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().trim_end_matches(".jsonl");
        let turns = play(path);
        assert!(!turns.is_empty(), "{scenario}: no turn");
        for turn in &turns {
            assert!(turn.complete, "{scenario}: result not seen: {:#?}", turn.events);
            assert_well_formed(&turn.events);
            assert!(turn.events.iter().any(|e| matches!(e, Event::Usage(u) if u.input_tokens > 0)), "{scenario}");
        }
        let events = &turns.last().expect("a turn").events;
        let finished = finishes(events);
        let finals: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e, Event::AssistantFinal { .. } | Event::ReasoningFinal { .. }))
            .collect();
        let kind = terminal(events).kind;
        assert_eq!(kind, TerminalKind::Ok, "{scenario}");
        let shell_finish = || {
            assert_eq!(finished.len(), 1, "{scenario}: {events:#?}");
            assert_eq!(finished[0].call.tool_name, SHELL_TOOL_NAME, "{scenario}");
            finished[0]
        };
        match scenario {
            "plain-text" | "resume" => {
                assert!(finals.iter().any(|e| matches!(e, Event::AssistantFinal { text, .. } if !text.is_empty())));
                assert!(starts(events).is_empty(), "{scenario}: {events:#?}");
            }
            "bash-allowed" => {
                let f = shell_finish();
                assert_eq!(f.outcome, ToolOutcome::Success, "{scenario}");
                assert!(f.execution_started, "{scenario}");
                assert!(f.output.as_ref().is_some_and(|o| o.text.contains("live-42")), "{scenario}: {f:?}");
            }
            "bash-denied" => {
                let noted = turns.last().map_or(0, |t| t.denials_noted);
                assert_eq!(noted, 1, "{scenario}: the client's deny answer must reach the mapper");
                let f = shell_finish();
                assert!(matches!(f.outcome, ToolOutcome::Declined { .. }), "{scenario}: {f:?}");
                assert!(!f.execution_started, "{scenario}");
            }
            "thinking-text" => {
                assert!(
                    matches!(
                        finals[..],
                        [Event::ReasoningFinal { signature: Some(_), .. }, Event::AssistantFinal { .. }]
                    ),
                    "{scenario}: {finals:#?}"
                );
            }
            "partial-messages" => {
                // For each streamed item, the deltas add up to its final text.
                let mut checked = 0;
                for event in &finals {
                    let (Event::AssistantFinal { item_id: item, text }
                    | Event::ReasoningFinal { item_id: item, text, .. }) = event
                    else {
                        continue;
                    };
                    let streamed: String = events
                        .iter()
                        .filter_map(|e| match e {
                            Event::AssistantDelta { item_id, delta } | Event::ReasoningDelta { item_id, delta }
                                if item_id == item =>
                            {
                                Some(delta.as_str())
                            }
                            _ => None,
                        })
                        .collect();
                    assert_eq!(&streamed, text, "{scenario}: {item}");
                    checked += 1;
                }
                assert_eq!(checked, 2, "{scenario}: a thinking and a text item: {finals:#?}");
            }
            _ => {}
        }
        seen.push(scenario.to_owned());
        eprintln!("{scenario}: {} turn(s), {} events in the last", turns.len(), events.len());
    }
    if !paths.is_empty() {
        for expected in ["plain-text", "bash-allowed", "bash-denied", "thinking-text", "partial-messages", "resume"] {
            assert!(seen.iter().any(|s| s == expected), "recording {expected} missing");
        }
    }
}

/// Every recorded line with one field (top level, or inside `message` / `event` / `request`) replaced
/// by a value of the wrong type still decodes and maps without a panic, and the turn still ends well
/// formed when abandoned.
#[test]
fn drifted_fields_never_panic() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../fixtures/recordings/claude"));
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut lines = Vec::new();
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if !name.ends_with(".jsonl") || name.ends_with(".model.jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for raw in text.lines() {
            let Ok(record) = serde_json::from_str::<Value>(raw) else { continue };
            if record["dir"] == "from_agent" {
                lines.push(record["json"].clone());
            }
        }
    }
    let replacements = [Value::Null, json!(7), json!("x"), json!([]), json!({}), json!(-1.5)];
    let mut variants = 0;
    for original in &lines {
        let mut paths: Vec<Vec<String>> = Vec::new();
        if let Some(map) = original.as_object() {
            for (key, value) in map {
                paths.push(vec![key.clone()]);
                if let Some(inner) = value.as_object() {
                    paths.extend(inner.keys().map(|k| vec![key.clone(), k.clone()]));
                }
            }
        }
        for path in &paths {
            for replacement in &replacements {
                let mut value = original.clone();
                let mut slot = &mut value;
                for key in path {
                    slot = &mut slot[key.as_str()];
                }
                *slot = replacement.clone();
                let mut mapper = TurnMapper::new(TURN);
                let mut events = mapper.on_message(&CliMessage::from_value(value));
                events.extend(mapper.abandon(TerminalKind::Failed, "end".into()));
                assert_well_formed(&events);
                variants += 1;
            }
        }
    }
    eprintln!("{variants} drifted lines mapped");
}

#[test]
fn a_turn_the_cli_failed_on_its_transport_says_so_and_a_provider_status_does_not() {
    // Claude Code 2.1.328 after its retries of a dropped connection (the mock's `drop`).
    let dropped = |api_error: &str, status: Value| {
        line(json!({"type": "result", "subtype": "success", "is_error": true, "terminal_reason": "api_error",
            "result": "API Error: Connection dropped (ECONNRESET).", "api_error": api_error,
            "api_error_status": status, "session_id": "s-1"}))
    };
    // The CLI's `<synthetic>` report of the failure before the result is no answer of the model's.
    let report =
        line(json!({"type": "assistant", "message": {"id": "m-err", "model": "<synthetic>", "role": "assistant",
        "content": [{"type": "text", "text": "API Error: Connection dropped (ECONNRESET)."}]},
        "session_id": "s-1", "error": "server_error", "is_api_error_message": true, "api_error": "connection_failed"}));
    let (_, events) = run(&[init(), report, dropped("connection_failed", Value::Null)]);
    assert!(
        !events.iter().any(|e| matches!(e, Event::AssistantFinal { .. } | Event::AssistantDelta { .. })),
        "{events:?}"
    );
    let ended = terminal(&events);
    assert_eq!(ended.kind, TerminalKind::Failed);
    assert_eq!(ended.cause, Some(TerminalCause::ProviderTransport));
    assert!(ended.message.as_deref().is_some_and(|m| m.contains("ECONNRESET")), "{ended:?}");
    let (_, events) = run(&[init(), dropped("stream_idle_timeout", Value::Null)]);
    assert_eq!(terminal(&events).cause, Some(TerminalCause::ProviderTransport));
    // The provider answered (a status), or the class is not a transport's: the CLI's own failure.
    for (class, status) in [("connection_failed", json!(502)), ("server_error", Value::Null), ("", Value::Null)] {
        let (_, events) = run(&[init(), dropped(class, status.clone())]);
        assert_eq!(terminal(&events).cause, None, "{class} {status}");
    }
    let ok = line(json!({"type": "result", "subtype": "success", "is_error": false, "result": "fine",
        "api_error": "connection_failed", "session_id": "s-1"}));
    let (_, events) = run(&[init(), ok]);
    assert_eq!((terminal(&events).kind, terminal(&events).cause), (TerminalKind::Ok, None));
}

#[test]
fn an_api_retry_is_progress_that_names_the_failure() {
    let retry = line(json!({"type": "system", "subtype": "api_retry", "attempt": 2, "max_retries": 10,
        "retry_delay_ms": 1200, "error_status": 500, "error": "server_error", "session_id": "s-1"}));
    let (mapper, events) = run(&[init(), retry]);
    let retries: Vec<_> = events.iter().filter(|e| matches!(e, Event::ModelRetry { .. })).collect();
    assert_eq!(
        retries,
        [&Event::ModelRetry {
            message: "API error 500 (server_error); retry 2 of 10 in 1200 ms".into(),
            attempt: Some(2),
            max_attempts: Some(10),
            retry_in_ms: Some(1200),
            http_status: Some(500),
        }]
    );
    assert!(!mapper.is_complete(), "the turn goes on");
    let mut mapper = mapper;
    let ended = mapper.abandon(TerminalKind::Timeout, "no progress from claude for 300s".into());
    assert_eq!(
        terminal(&ended).message.as_deref(),
        Some(
            "no progress from claude for 300s; the model request was being retried: API error 500 (server_error); retry 2 of 10 in 1200 ms"
        )
    );
    let silent = line(json!({"type": "system", "subtype": "api_retry", "error_status": null}));
    let (_, events) = run(&[init(), silent]);
    let no_numbers = Event::ModelRetry {
        message: "no response; retrying".into(),
        attempt: None,
        max_attempts: None,
        retry_in_ms: None,
        http_status: None,
    };
    assert!(events.contains(&no_numbers), "{events:?}");
}

#[test]
fn the_model_the_cli_names_is_reported_once_per_change() {
    let init_with_model =
        line(json!({"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-sonnet-4-5"}));
    let named = |model: &str, id: &str| {
        line(json!({"type": "assistant", "session_id": "s-1",
                    "message": {"id": id, "model": model, "role": "assistant", "content": [text("hi")]}}))
    };
    let (_, events) = run(&[
        init_with_model.clone(),
        init_with_model,
        named("claude-sonnet-4-5", "m1"),
        named("<synthetic>", "m2"),
        named("claude-opus-4-1", "m3"),
        result("success", false, json!({})),
    ]);
    let models: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelInUse { model } => Some(model.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(models, ["claude-sonnet-4-5", "claude-opus-4-1"], "{events:#?}");
    assert!(matches!(events[0], Event::TurnStarted { .. }), "the turn is announced first: {events:#?}");
}

#[test]
fn a_tool_result_s_images_are_read_in_both_shapes() {
    let content = serde_json::json!([
        {"type": "text", "text": "shot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "data": "BBBB", "mimeType": "image/jpeg"},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}
    ]);
    let images = super::mapping::result_images(&content);
    let pairs: Vec<(&str, &str)> = images.iter().map(|i| (i.mime_type.as_str(), i.data.as_str())).collect();
    assert_eq!(pairs, [("image/png", "AAAA"), ("image/jpeg", "BBBB")]);
    assert!(super::mapping::result_images(&serde_json::json!("text only")).is_empty());
}

#[test]
fn each_streamed_model_call_reports_the_turns_usage_so_far_and_the_result_has_the_last_word() {
    let call = |id: &str, event: Value| {
        line(json!({"type": "stream_event", "api_message_id": id, "event": event, "parent_tool_use_id": null}))
    };
    let start = |id: &str, input: u64| {
        call(
            id,
            json!({"type": "message_start", "message": {"id": id, "role": "assistant", "content": [],
            "usage": {"input_tokens": input, "cache_read_input_tokens": 10, "output_tokens": 1}}}),
        )
    };
    let delta = |id: &str, output: u64| {
        call(
            id,
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": output}}),
        )
    };
    let (_, events) = run(&[
        init(),
        start("msg_1", 100),
        delta("msg_1", 12),
        start("msg_2", 150),
        delta("msg_2", 8),
        result("success", false, json!({})),
    ]);
    let usages: Vec<Usage> = events
        .iter()
        .filter_map(|e| match e {
            Event::Usage(u) => Some(*u),
            _ => None,
        })
        .collect();
    assert_eq!(usages.len(), 3, "one per model call, then the result's: {events:#?}");
    assert_eq!((usages[0].input_tokens, usages[0].output_tokens, usages[0].cached_input_tokens), (110, 12, 10));
    assert_eq!((usages[1].input_tokens, usages[1].output_tokens, usages[1].cached_input_tokens), (270, 20, 20));
    assert_eq!(usages[2].output_tokens, 20, "the result's own total (this fixture's) comes last");
}

#[test]
fn the_last_streamed_call_is_the_last_call_and_the_result_adds_the_models_context_window() {
    let call = |id: &str, event: Value| {
        line(json!({"type": "stream_event", "api_message_id": id, "event": event, "parent_tool_use_id": null}))
    };
    let start = |id: &str, input: u64| {
        call(
            id,
            json!({"type": "message_start", "message": {"id": id, "role": "assistant", "content": [],
            "usage": {"input_tokens": input, "cache_read_input_tokens": 40, "cache_creation_input_tokens": 7,
                      "output_tokens": 1}}}),
        )
    };
    let delta = |id: &str, output: u64| {
        call(
            id,
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": output}}),
        )
    };
    let model_usage = json!({"modelUsage": {"claude-opus-5-5": {"contextWindow": 1_000_000, "inputTokens": 400}}});
    let (_, events) = run(&[
        init(),
        start("msg_1", 100),
        delta("msg_1", 12),
        start("msg_2", 300),
        delta("msg_2", 8),
        result("success", false, model_usage),
    ]);
    let calls: Vec<LastCall> =
        events.iter().filter_map(|e| if let Event::LastCall(c) = e { Some(*c) } else { None }).collect();
    assert_eq!(calls.len(), 3, "one per model call, then the result's window: {events:#?}");
    // The second call alone: 300 uncached + 7 written + 40 read, 8 out.
    let second = Usage { input_tokens: 347, output_tokens: 8, cached_input_tokens: 40, reasoning_tokens: 0 };
    assert_eq!(calls[1], LastCall { usage: second, cache_write_tokens: 7, context_window: None });
    assert_eq!(calls[2], LastCall { usage: second, cache_write_tokens: 7, context_window: Some(1_000_000) });
    // A result whose modelUsage names several models and not the one in use guesses no window.
    let two = json!({"modelUsage": {"a": {"contextWindow": 1}, "b": {"contextWindow": 2}}});
    let (_, events) = run(&[start("msg_1", 100), delta("msg_1", 12), result("success", false, two)]);
    assert!(events.iter().filter(|e| matches!(e, Event::LastCall(c) if c.context_window.is_some())).count() == 0);
}

#[test]
fn a_native_tool_result_s_images_are_bounded_like_a_host_tool_s() {
    let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}});
    let content: Vec<Value> = std::iter::once(json!({"type": "text", "text": "shots"}))
        .chain(std::iter::repeat_n(image, clawbridge_bridge::input::MAX_IMAGES + 1))
        .collect();
    let results = line(json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": content, "is_error": false}]},
        "parent_tool_use_id": null, "session_id": "s-1"}));
    let (_, events) =
        run(&[init(), assistant("m1", tool_use("toolu_1", "Read", json!({"file_path": "/w/a.png"}))), results]);
    let finish = events
        .iter()
        .find_map(|e| match e {
            Event::ToolFinished(finish) => Some(finish),
            _ => None,
        })
        .expect("the tool finished");
    let output = finish.output.as_ref().expect("an output");
    assert_eq!(output.images.len(), clawbridge_bridge::input::MAX_IMAGES);
    assert!(output.text.starts_with("shots\n[1 image(s) of this result were left out"), "{}", output.text);
}

/// Claude Code 2.1.328's own auto-compaction before a query (the line as it wrote it, with an
/// `auto` trigger and the sizes before and after), and `/compact`'s `manual` boundary: each is one
/// `ContextCompacted` event carrying the CLI's token counts; the status lines around it map to
/// nothing.
#[test]
fn a_compact_boundary_is_one_context_compacted_event_with_the_clis_token_counts() {
    let compacting = line(json!({"type": "system", "subtype": "status", "status": "compacting",
        "compact_output_chars": 0, "session_id": "s-1", "uuid": "st-1"}));
    let compacted = line(json!({"type": "system", "subtype": "status", "status": null,
        "compact_result": "success", "session_id": "s-1", "uuid": "st-2"}));
    let auto = line(json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb-auto",
        "compact_metadata": {"trigger": "auto", "pre_tokens": 190_008, "post_tokens": 2597,
            "cumulative_dropped_tokens": 187_411, "duration_ms": 29,
            "preserved_segment": {"head_uuid": "h", "anchor_uuid": "a", "tail_uuid": "t"}},
        "logical_parent_uuid": "p"}));
    let (_, events) = run(&[
        init(),
        compacting,
        compacted,
        auto,
        assistant("msg_1", text("Hi")),
        result("success", false, json!({})),
    ]);
    let found: Vec<_> = events.iter().filter(|e| matches!(e, Event::ContextCompacted { .. })).collect();
    assert_eq!(
        found,
        [&Event::ContextCompacted {
            item_id: "cb-auto".into(),
            tokens_before: Some(190_008),
            tokens_after: Some(2597)
        }],
        "{events:?}"
    );
    assert_well_formed(&events);

    let manual = line(json!({"type": "system", "subtype": "compact_boundary", "session_id": "s-1", "uuid": "cb-1",
        "compact_metadata": {"trigger": "manual", "pre_tokens": 120, "post_tokens": 2532}}));
    let (_, events) = run(&[init(), manual, result("success", false, json!({"num_turns": 0}))]);
    assert!(
        events.contains(&Event::ContextCompacted {
            item_id: "cb-1".into(),
            tokens_before: Some(120),
            tokens_after: Some(2532)
        }),
        "{events:?}"
    );
    // A boundary without metadata still counts, with no sizes.
    let bare = line(json!({"type": "system", "subtype": "compact_boundary", "uuid": "cb-2"}));
    let (_, events) = run(&[init(), bare, result("success", false, json!({}))]);
    assert!(
        events.contains(&Event::ContextCompacted { item_id: "cb-2".into(), tokens_before: None, tokens_after: None }),
        "{events:?}"
    );
}
