//! The mapping of ACP updates, without a process.

use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_protocol::acp::{PromptResponse, SessionUpdate, StopReason};
use serde_json::json;

use super::mapping::{Declined, TurnMapper};

fn update(value: serde_json::Value) -> SessionUpdate {
    SessionUpdate::decode(value)
}

fn answer(reason: StopReason) -> PromptResponse {
    PromptResponse { stop_reason: reason, usage: None }
}

#[test]
fn text_then_a_tool_then_text_are_separate_items_and_every_tool_ends_once() {
    let mut mapper = TurnMapper::new("t", Declined::default());
    let mut events = mapper.start();
    events.extend(mapper.on_update(update(
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
    )));
    events.extend(
        mapper.on_update(update(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
        )),
    );
    events.extend(mapper.on_update(update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute", "status": "in_progress", "rawInput": {"command": "ls"}}))));
    events.extend(mapper.on_update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": [{"type": "content", "content": {"type": "text", "text": "a"}}]}))));
    events.extend(mapper.on_update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "a\nb"}}]}))));
    events.extend(
        mapper.on_update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed"}))),
    );
    events.extend(mapper.on_update(update(
        json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "never ends", "kind": "read"}),
    )));
    events.extend(mapper.on_update(update(
        json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done"}}),
    )));
    events.extend(mapper.on_update(update(json!({"sessionUpdate": "brand_new", "x": 1}))));
    events.extend(mapper.finish(&answer(StopReason::EndTurn)));
    assert!(
        mapper
            .on_update(update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}})
            ))
            .is_empty()
    );

    assert!(matches!(&events[0], Event::TurnStarted { turn_id } if turn_id == "t"));
    let finals: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::AssistantFinal { text, .. } = e { Some(text.as_str()) } else { None })
        .collect();
    assert_eq!(finals, ["Hello", "Done"]);
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolOutputDelta { delta, .. } = e { Some(delta.as_str()) } else { None })
        .collect();
    assert_eq!(deltas, ["a", "\nb"]);
    let finished: Vec<_> =
        events.iter().filter_map(|e| if let Event::ToolFinished(f) = e { Some(f) } else { None }).collect();
    assert_eq!(finished.len(), 2, "each tool ends exactly once: {events:#?}");
    assert_eq!(finished[0].call.tool_name, "exec");
    assert_eq!(finished[0].outcome, ToolOutcome::Success);
    assert_eq!(finished[0].output.as_ref().unwrap().text, "a\nb");
    assert_eq!(finished[1].call.call_id, "c2");
    assert!(matches!(finished[1].outcome, ToolOutcome::Failure { .. }), "left open at the end: {:?}", finished[1]);
    assert!(matches!(events.last(), Some(Event::TurnTerminal(t)) if t.kind == TerminalKind::Ok));
}

#[test]
fn a_declined_tool_never_started_and_stop_reasons_name_their_terminal() {
    let declined = Declined::default();
    let mut mapper = TurnMapper::new("t", declined.clone());
    let mut events = mapper.start();
    events.extend(mapper.on_update(update(
        json!({"sessionUpdate": "tool_call", "toolCallId": "w", "kind": "edit", "status": "pending"}),
    )));
    declined.lock().unwrap().insert("w".into(), super::mapping::HOST_DECLINED.into());
    events.extend(
        mapper.on_update(update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "w", "status": "failed"}))),
    );
    events.extend(mapper.finish(&answer(StopReason::Refusal)));
    let Some(Event::ToolFinished(finish)) = events.iter().find(|e| matches!(e, Event::ToolFinished(_))) else {
        panic!()
    };
    assert!(matches!(finish.outcome, ToolOutcome::Declined { .. }));
    assert!(!finish.execution_started);
    let Some(Event::TurnTerminal(end)) = events.last() else { panic!() };
    assert_eq!(end.kind, TerminalKind::Failed);
    assert!(end.message.as_deref().unwrap().contains("refusal"));

    let mut cancelled = TurnMapper::new("t2", Declined::default());
    let mut events = cancelled.start();
    events.extend(cancelled.on_update(update(
        json!({"sessionUpdate": "tool_call", "toolCallId": "x", "kind": "execute", "status": "in_progress"}),
    )));
    events.extend(cancelled.finish(&answer(StopReason::Cancelled)));
    let Some(Event::ToolFinished(finish)) = events.iter().find(|e| matches!(e, Event::ToolFinished(_))) else {
        panic!()
    };
    assert!(matches!(finish.outcome, ToolOutcome::Cancelled { .. }));
    assert!(finish.execution_started, "it was running");
    assert!(matches!(events.last(), Some(Event::TurnTerminal(t)) if t.kind == TerminalKind::Aborted));
}

#[test]
fn a_turn_tracks_a_bounded_number_of_tool_calls_and_each_reported_one_ends_once() {
    use super::mapping::MAX_TOOLS_PER_TURN;
    let mut mapper = TurnMapper::new("t", Declined::default());
    let mut events = mapper.start();
    for n in 0..MAX_TOOLS_PER_TURN + 10 {
        let id = format!("c{n}");
        events
            .extend(mapper.on_update(update(json!({"sessionUpdate": "tool_call", "toolCallId": id, "kind": "read"}))));
        // Every other call ends at once; the rest stay open until the turn's end.
        if n % 2 == 0 {
            events.extend(mapper.on_update(update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed"}),
            )));
        }
    }
    events.extend(mapper.finish(&answer(StopReason::EndTurn)));
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolStarted(c) = e { Some(c.call_id.as_str()) } else { None })
        .collect();
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolFinished(f) = e { Some(f.call.call_id.as_str()) } else { None })
        .collect();
    assert_eq!(started.len(), MAX_TOOLS_PER_TURN);
    let (mut started, mut finished) = (started, finished);
    started.sort_unstable();
    finished.sort_unstable();
    assert_eq!(started, finished, "each reported call ends exactly once");
}

#[test]
fn codex_acps_argv_command_is_shown_as_one_shell_quoted_line() {
    // The shape fixtures/recordings/acp/codex-acp/tool-allowed.jsonl records.
    let mut mapper = TurnMapper::new("t", Declined::default());
    let mut events = mapper.start();
    events.extend(mapper.on_update(update(json!({"sessionUpdate": "tool_call", "toolCallId": "call_1",
        "title": "Run echo", "kind": "execute", "status": "in_progress",
        "rawInput": {"call_id": "call_1", "command": ["/bin/bash", "-lc", "echo live-$((6*7))"], "cwd": "/w"}}))));
    let started = events
        .iter()
        .find_map(|e| match e {
            Event::ToolStarted(call) => Some(call),
            _ => None,
        })
        .expect("the call started");
    assert_eq!(started.arguments["command"], "/bin/bash -lc 'echo live-$((6*7))'");
    assert_eq!(started.arguments["cwd"], "/w", "the other fields are kept");
}

/// The `agentCapabilities` of the first `initialize` answer in a recording.
fn recorded_capabilities(path: &str) -> clawbridge_protocol::acp::AgentCapabilities {
    let text =
        std::fs::read_to_string(format!("{}/../fixtures/recordings/acp/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let answer = text
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|line| {
            let found = line.pointer("/json/result/agentCapabilities");
            found.cloned()
        })
        .expect("an initialize answer");
    serde_json::from_value(answer).unwrap()
}

#[test]
fn host_tools_go_over_mcp_only_to_an_agent_that_takes_http_servers_and_only_when_there_are_tools() {
    use super::session::offers_mcp;
    for agent in ["claude-agent-acp", "codex-acp"] {
        let capabilities = recorded_capabilities(&format!("{agent}/plain-text.jsonl"));
        assert!(capabilities.mcp_capabilities.http, "{agent} advertises HTTP MCP");
        assert!(offers_mcp(&capabilities, 1));
        assert!(!offers_mcp(&capabilities, 0), "no tools, no server");
    }
    let without: clawbridge_protocol::acp::AgentCapabilities =
        serde_json::from_value(json!({"loadSession": true, "mcpCapabilities": {"http": false, "sse": true}})).unwrap();
    assert!(!offers_mcp(&without, 3), "an agent without HTTP MCP gets mcpServers: []");
    let silent: clawbridge_protocol::acp::AgentCapabilities = serde_json::from_value(json!({})).unwrap();
    assert!(!offers_mcp(&silent, 3));
}

#[test]
fn a_call_of_the_bridges_mcp_server_is_reported_as_the_host_tool_with_the_models_arguments() {
    use super::mapping::tool_call;
    use clawbridge_protocol::acp::{ToolCallUpdate, ToolKind};
    // claude-agent-acp: the tool's MCP name as title, the tool's arguments as raw input.
    let claude = ToolCallUpdate {
        tool_call_id: "toolu_1".into(),
        title: Some("mcp__clawbridge__lookup_weather".into()),
        raw_input: Some(json!({"city": "Paris"})),
        ..ToolCallUpdate::default()
    };
    // codex-acp: server, tool and arguments in the raw input.
    let codex = ToolCallUpdate {
        tool_call_id: "call_1".into(),
        title: Some("Tool: clawbridge/lookup_weather".into()),
        kind: Some(ToolKind::Other),
        raw_input: Some(json!({"server": "clawbridge", "tool": "lookup_weather", "arguments": {"city": "Paris"}})),
        ..ToolCallUpdate::default()
    };
    for update in [claude, codex] {
        let call = tool_call(&update);
        assert_eq!((call.tool_name.as_str(), &call.arguments), ("lookup_weather", &json!({"city": "Paris"})));
        assert!(!call.native && call.native_mutation.is_none(), "{call:?}");
        assert_eq!(call.call_id, update.tool_call_id);
    }
    // Another server's tool stays a native call under its kind's name.
    let other = ToolCallUpdate {
        tool_call_id: "c".into(),
        title: Some("mcp__github__search".into()),
        raw_input: Some(json!({"server": "github", "tool": "search"})),
        ..ToolCallUpdate::default()
    };
    let call = tool_call(&other);
    assert_eq!(call.tool_name, "tool");
    assert!(call.native);
}
