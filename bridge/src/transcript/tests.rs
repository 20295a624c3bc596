use serde_json::{Value, json};

use super::*;
use crate::events::{
    CappedOutput, Event, NativeMutation, TerminalKind, ToolCall, ToolFinish, ToolOutcome, TurnTerminal, Usage,
};

fn model() -> ModelLabel {
    ModelLabel { api: "openai-completions".into(), provider: "mock".into(), model: "mock-1".into() }
}

fn exec_call(id: &str) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        tool_name: "exec".into(),
        arguments: json!({"command": "echo hi"}),
        native: true,
        native_mutation: Some(NativeMutation { mutating_action: false, replay_safe: true }),
    }
}

/// A turn as in docs/peers/openclaw.md#who-writes-what: thinking, text, one `exec` call, its result, a final answer.
fn turn_events() -> Vec<Event> {
    vec![
        Event::TurnStarted { turn_id: "tu-1".into() },
        Event::ReasoningDelta { item_id: "r1".into(), delta: "I should ".into() },
        Event::ReasoningFinal { item_id: "r1".into(), text: "I should run a command.".into(), signature: None },
        Event::AssistantDelta { item_id: "m1".into(), delta: "Running".into() },
        Event::AssistantFinal { item_id: "m1".into(), text: "Running a command.".into() },
        Event::ToolStarted(exec_call("call_1")),
        Event::ToolOutputDelta { call_id: "call_1".into(), delta: "hi".into() },
        Event::ToolFinished(ToolFinish {
            call: exec_call("call_1"),
            outcome: ToolOutcome::Success,
            exit_code: Some(0),
            execution_started: true,
            output: None,
        }),
        Event::AssistantFinal { item_id: "m2".into(), text: "Done.".into() },
        Event::Usage(Usage { input_tokens: 3, output_tokens: 5, cached_input_tokens: 0, reasoning_tokens: 0 }),
        Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
    ]
}

/// Mirrors `events` as turn `tu-1` (prompt first) into `sink`.
async fn mirror_turn(sink: &mut dyn TranscriptSink, events: &[Event]) -> Vec<AppendOutcome> {
    let mut mirror = TranscriptMirror::new("clawbridge:run-1", "tu-1", model());
    let mut outcomes = sink.append(vec![mirror.prompt("Run echo hi")]).await.unwrap();
    for event in events {
        let messages = mirror.on_event(event);
        if !messages.is_empty() {
            outcomes.extend(sink.append(messages).await.unwrap());
        }
    }
    sink.sync().await.unwrap();
    outcomes
}

/// An entry as JSON without its timestamps, which differ between runs.
fn stable(entry: &MessageEntry) -> Value {
    let mut value = serde_json::to_value(Entry::Message(Box::new(entry.clone()))).unwrap();
    value.as_object_mut().unwrap().remove("timestamp");
    value["message"].as_object_mut().unwrap().remove("timestamp");
    value
}

fn header() -> SessionHeader {
    SessionHeader::new("sess-1", "/home/dev/demo")
}

#[tokio::test]
async fn a_turn_becomes_v4_entries_chained_by_parent_id() {
    let mut sink = MemorySink::with_header(header());
    let outcomes = mirror_turn(&mut sink, &turn_events()).await;
    assert!(outcomes.iter().all(AppendOutcome::is_new));
    let entries = sink.entries();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[0].parent_id, None);
    for pair in entries.windows(2) {
        assert_eq!(pair[1].parent_id.as_deref(), Some(pair[0].id.as_str()));
    }
    let zero_usage = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}});
    let e = |i: usize| entries[i].id.clone();
    assert_eq!(
        stable(&entries[0]),
        json!({"type": "message", "id": e(0), "parentId": null, "message": {
            "role": "user", "content": "Run echo hi", "idempotencyKey": "clawbridge:run-1:tu-1:prompt"}})
    );
    assert_eq!(
        stable(&entries[1]),
        json!({"type": "message", "id": e(1), "parentId": e(0), "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I should run a command."},
                {"type": "text", "text": "Running a command."},
                {"type": "toolCall", "id": "call_1", "name": "exec", "arguments": {"command": "echo hi"}}
            ],
            "api": "openai-completions", "provider": "mock", "model": "mock-1", "usage": zero_usage,
            "stopReason": "toolUse", "idempotencyKey": "clawbridge:run-1:tu-1:tool:call_1:call"}})
    );
    assert_eq!(
        stable(&entries[2]),
        json!({"type": "message", "id": e(2), "parentId": e(1), "message": {
            "role": "toolResult", "toolCallId": "call_1", "toolName": "exec",
            "content": [{"type": "text", "text": "hi"}], "details": {"exitCode": 0}, "isError": false,
            "idempotencyKey": "clawbridge:run-1:tu-1:tool:call_1:result"}})
    );
    assert_eq!(
        stable(&entries[3]),
        json!({"type": "message", "id": e(3), "parentId": e(2), "message": {
            "role": "assistant", "content": [{"type": "text", "text": "Done."}],
            "api": "openai-completions", "provider": "mock", "model": "mock-1",
            "usage": {"input": 3, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 8,
                      "cost": {"input": 0.0, "output": 0.0, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.0}},
            "stopReason": "stop", "idempotencyKey": "clawbridge:run-1:tu-1:assistant"}})
    );
    assert_eq!(sink.sync_count(), 1);
}

#[tokio::test]
async fn mirroring_a_turn_twice_adds_no_rows() {
    let mut sink = MemorySink::new();
    mirror_turn(&mut sink, &turn_events()).await;
    let before: Vec<Value> = sink.entries().iter().map(stable).collect();
    let again = mirror_turn(&mut sink, &turn_events()).await;
    assert!(again.iter().all(|o| !o.is_new()), "{again:?}");
    let after: Vec<Value> = sink.entries().iter().map(stable).collect();
    assert_eq!(before, after);
}

#[tokio::test]
async fn an_unmatched_call_gets_a_synthetic_failed_result() {
    let mut sink = MemorySink::new();
    let events = vec![
        Event::ToolStarted(exec_call("call_1")),
        Event::ToolStarted(exec_call("call_2")),
        Event::ToolFinished(ToolFinish {
            call: exec_call("call_2"),
            outcome: ToolOutcome::Declined { reason: None },
            exit_code: None,
            execution_started: false,
            output: None,
        }),
        Event::TurnTerminal(TurnTerminal {
            kind: TerminalKind::Aborted,
            message: Some("user pressed stop".into()),
            cause: None,
        }),
    ];
    mirror_turn(&mut sink, &events).await;
    let messages: Vec<&Message> = sink.entries().iter().map(|e| &e.message).collect();
    // prompt, call_1, call_2, result_2 (declined), synthetic result_1, final assistant
    assert_eq!(messages.len(), 6);
    let Message::ToolResult(declined) = messages[3] else { panic!("{:?}", messages[3]) };
    assert_eq!((declined.tool_call_id.as_str(), declined.is_error), ("call_2", true));
    assert_eq!(declined.content, vec![ContentBlock::Text { text: "Tool call declined.".into() }]);
    let Message::ToolResult(synthetic) = messages[4] else { panic!("{:?}", messages[4]) };
    assert_eq!(synthetic.tool_call_id, "call_1");
    assert!(synthetic.is_error);
    assert_eq!(synthetic.idempotency_key.as_deref(), Some("clawbridge:run-1:tu-1:tool:call_1:result"));
    let ContentBlock::Text { text } = &synthetic.content[0] else { panic!() };
    assert!(text.contains("aborted: user pressed stop"), "{text}");
    let Message::Assistant(last) = messages[5] else { panic!("{:?}", messages[5]) };
    assert_eq!(last.stop_reason, StopReason::Aborted);
    assert_eq!(last.error_message.as_deref(), Some("user pressed stop"));
}

#[test]
fn replays_late_finals_and_events_after_the_end_are_ignored() {
    let mut mirror = TranscriptMirror::new("", "t", model());
    assert_eq!(mirror.on_event(&Event::ToolStarted(exec_call("c"))).len(), 1);
    assert!(mirror.on_event(&Event::ToolStarted(exec_call("c"))).is_empty(), "a replayed call is mirrored once");
    // A finish without a start writes the call first.
    let finish = ToolFinish {
        call: exec_call("d"),
        outcome: ToolOutcome::Success,
        exit_code: None,
        execution_started: true,
        output: Some(CappedOutput { text: "out".into(), omitted_bytes: 10, images: Vec::new() }),
    };
    let out = mirror.on_event(&Event::ToolFinished(finish.clone()));
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].idempotency_key(), Some("t:tool:d:call"));
    let Message::ToolResult(result) = &out[1] else { panic!() };
    assert_eq!(result.details, Some(json!({"omittedBytes": 10})));
    assert!(mirror.on_event(&Event::ToolFinished(finish)).is_empty(), "one result per call");
    let end = TurnTerminal { kind: TerminalKind::Failed, message: None, cause: None };
    let last = mirror.finish(&end);
    assert_eq!(last.len(), 2, "synthetic result for c, then the assistant");
    assert!(mirror.is_finished());
    assert!(mirror.finish(&end).is_empty());
    assert!(mirror.on_event(&Event::AssistantFinal { item_id: "x".into(), text: "late".into() }).is_empty());
    assert_eq!(mirror.unresolved_calls().count(), 0);
}

#[test]
fn deltas_stand_in_for_a_missing_final() {
    let mut mirror = TranscriptMirror::new("", "t", model());
    mirror.on_event(&Event::AssistantDelta { item_id: "m".into(), delta: "Hal".into() });
    mirror.on_event(&Event::AssistantDelta { item_id: "m".into(), delta: "f".into() });
    let out = mirror.finish(&TurnTerminal { kind: TerminalKind::Timeout, message: None, cause: None });
    let Message::Assistant(message) = &out[0] else { panic!() };
    assert_eq!(message.content, vec![ContentBlock::Text { text: "Half".into() }]);
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(message.error_message.as_deref(), Some("the turn ended (timeout)"));
}

#[tokio::test]
async fn jsonl_file_is_idempotent_across_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    {
        let mut sink = JsonlSink::open(&path, &header()).unwrap();
        mirror_turn(&mut sink, &turn_events()).await;
    }
    let first = std::fs::read_to_string(&path).unwrap();
    assert_eq!(first.lines().count(), 5, "header + 4 entries");
    let head: Value = serde_json::from_str(first.lines().next().unwrap()).unwrap();
    assert_eq!((head["type"].as_str(), head["version"].as_u64()), (Some("session"), Some(4)));
    {
        let mut sink = JsonlSink::open(&path, &header()).unwrap();
        assert!(sink.contains_key("clawbridge:run-1:tu-1:assistant"));
        let again = mirror_turn(&mut sink, &turn_events()).await;
        assert!(again.iter().all(|o| !o.is_new()));
    }
    assert_eq!(std::fs::read_to_string(&path).unwrap(), first, "the re-run added nothing");

    // A new turn chains to the last entry already in the file.
    let last_id = serde_json::from_str::<Value>(first.lines().last().unwrap()).unwrap()["id"].clone();
    let mut sink = JsonlSink::open(&path, &header()).unwrap();
    let mirror = TranscriptMirror::new("clawbridge:run-1", "tu-2", model());
    let outcome = sink.append(vec![mirror.prompt("next")]).await.unwrap();
    let AppendOutcome::Appended { parent_id, .. } = &outcome[0] else { panic!("{outcome:?}") };
    assert_eq!(parent_id.as_deref(), last_id.as_str());
}

/// A transcript in a fresh dir holding its header and one prompt: the dir, the file, the turn's
/// mirror and the prompt.
fn transcript_with_a_prompt() -> (tempfile::TempDir, std::path::PathBuf, TranscriptMirror, Message) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mirror = TranscriptMirror::new("", "t", model());
    let prompt = mirror.prompt("hello");
    {
        let sink = JsonlSink::open(&path, &header()).unwrap();
        sink.append_blocking(vec![prompt.clone()]).unwrap();
    }
    (dir, path, mirror, prompt)
}

#[test]
fn a_torn_last_line_is_cut_on_open_and_its_entry_rewritten() {
    let (_dir, path, mirror, prompt) = transcript_with_a_prompt();
    let intact = std::fs::read(&path).unwrap();
    // A crash mid-write: half of a second line, no newline.
    let torn = [&intact[..], br#"{"type":"message","id":"ab","parentId":"#].concat();
    std::fs::write(&path, &torn).unwrap();
    let sink = JsonlSink::open(&path, &header()).unwrap();
    assert_eq!(sink.repaired_bytes(), (torn.len() - intact.len()) as u64);
    assert_eq!(std::fs::read(&path).unwrap(), intact);
    // The prompt survived; a message that was torn away is appended again.
    assert!(!sink.append_blocking(vec![prompt]).unwrap()[0].is_new());
    assert!(sink.append_blocking(vec![mirror.finish_for_test()]).unwrap()[0].is_new());
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
}

#[test]
fn a_complete_last_row_without_its_newline_is_kept_and_terminated() {
    let (_dir, path, _mirror, prompt) = transcript_with_a_prompt();
    let whole = std::fs::read(&path).unwrap();
    // The writer died between a row and its newline: the row is whole.
    std::fs::write(&path, &whole[..whole.len() - 1]).unwrap();
    let sink = JsonlSink::open(&path, &header()).unwrap();
    assert_eq!(sink.repaired_bytes(), 0, "nothing parseable is cut");
    assert_eq!(std::fs::read(&path).unwrap(), whole, "the row is kept and its newline added");
    assert!(!sink.append_blocking(vec![prompt]).unwrap()[0].is_new(), "and it still counts as written");
}

#[test]
fn a_transcript_replaced_by_a_symlink_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("precious");
    std::fs::write(&target, b"not a transcript, no newline").unwrap();
    let path = dir.path().join("s.jsonl");
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(JsonlSink::open(&path, &header()).is_err(), "a planted link is not followed");
    assert_eq!(std::fs::read(&target).unwrap(), b"not a transcript, no newline");
}

#[test]
fn a_second_writer_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let first = JsonlSink::open(&path, &header()).unwrap();
    let err = JsonlSink::open(&path, &header()).unwrap_err();
    match &err {
        TranscriptError::Locked { path: p, lock_path } => {
            assert_eq!(p, &path);
            assert_eq!(lock_path.file_name().unwrap(), "s.jsonl.lock");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(err.to_string().contains("already open for writing"), "{err}");
    drop(first);
    JsonlSink::open(&path, &header()).unwrap();
}

#[test]
fn a_lock_released_while_opening_waits_is_taken() {
    // A writer that has just closed may still hold the lock for a moment through a child forked
    // before it closed (the child holds the open file until it execs).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let first = JsonlSink::open(&path, &header()).unwrap();
    let closer = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drop(first);
    });
    JsonlSink::open(&path, &header()).expect("the lock, once released, is taken");
    closer.join().unwrap();
}

#[test]
fn foreign_and_garbled_lines_are_kept_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let host_rows = concat!(
        r#"{"type":"session","version":4,"id":"s","timestamp":"2026-11-30T02:16:49.728Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","id":"e1","parentId":null,"timestamp":"x","message":{"role":"user","content":"hi","timestamp":1,"idempotencyKey":"u:user"}}"#,
        "\n",
        "not json\n",
        r#"{"type":"model_change","id":"e2","parentId":"e1","timestamp":"x","modelId":"m"}"#,
        "\n",
    );
    std::fs::write(&path, host_rows).unwrap();
    let sink = JsonlSink::open(&path, &header()).unwrap();
    assert_eq!(sink.repaired_bytes(), 0);
    assert!(sink.contains_key("u:user"));
    let mirror = TranscriptMirror::new("", "t", model());
    let out = sink.append_blocking(vec![mirror.prompt("again")]).unwrap();
    let AppendOutcome::Appended { parent_id, .. } = &out[0] else { panic!() };
    assert_eq!(parent_id.as_deref(), Some("e2"));
    assert!(std::fs::read_to_string(&path).unwrap().starts_with(host_rows), "existing rows untouched");
}

impl TranscriptMirror {
    /// The final assistant message of an otherwise empty turn.
    fn finish_for_test(&self) -> Message {
        let mut copy = TranscriptMirror::new("", self.turn_id(), model());
        copy.finish(&TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }).remove(0)
    }
}

#[test]
fn rows_name_the_model_the_native_runtime_reported() {
    let mut mirror = TranscriptMirror::new("clawbridge:run-1", "tu-1", ModelLabel { model: String::new(), ..model() });
    let mut rows = Vec::new();
    for event in [
        Event::TurnStarted { turn_id: "tu-1".into() },
        Event::ModelInUse { model: "gpt-5-codex".into() },
        Event::ModelInUse { model: "  ".into() },
        Event::AssistantFinal { item_id: "m1".into(), text: "Done.".into() },
        Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
    ] {
        rows.extend(mirror.on_event(&event));
    }
    let json = serde_json::to_value(&rows).unwrap();
    let assistant: Vec<&Value> = json.as_array().unwrap().iter().filter(|r| r["role"] == "assistant").collect();
    assert!(!assistant.is_empty(), "{json:#}");
    for row in assistant {
        assert_eq!(row["model"], "gpt-5-codex", "a blank name changes nothing: {row:#}");
        assert_eq!((&row["api"], &row["provider"]), (&json!("openai-completions"), &json!("mock")));
    }
}

#[test]
fn a_tool_s_images_stay_images_in_its_result_row_and_a_backgrounded_command_says_it_runs_on() {
    let mut mirror = TranscriptMirror::new("", "t", model());
    let image = crate::events::ToolImage { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() };
    let finish = ToolFinish {
        call: exec_call("shot"),
        outcome: ToolOutcome::Success,
        exit_code: None,
        execution_started: true,
        output: Some(CappedOutput { text: String::new(), omitted_bytes: 0, images: vec![image] }),
    };
    let out = mirror.on_event(&Event::ToolFinished(finish));
    let Message::ToolResult(result) = &out[1] else { panic!("{out:?}") };
    assert_eq!(
        result.content,
        vec![
            ContentBlock::Text { text: String::new() },
            ContentBlock::Image { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() }
        ]
    );
    assert_eq!(
        serde_json::to_value(&result.content[1]).unwrap(),
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
        "OpenClaw's ImageContent shape"
    );
    assert!(!result.is_error);

    let running = ToolFinish {
        call: exec_call("bg"),
        outcome: ToolOutcome::Backgrounded { detail: None },
        exit_code: None,
        execution_started: true,
        output: None,
    };
    let out = mirror.on_event(&Event::ToolFinished(running));
    let Message::ToolResult(result) = &out[1] else { panic!("{out:?}") };
    assert!(!result.is_error, "a command running on has not failed");
    assert_eq!(result.content, vec![ContentBlock::Text { text: "[running in the background]".into() }]);
    assert_eq!(result.details.as_ref().map(|d| d["outcome"]["kind"].clone()), Some(json!("backgrounded")));
}

#[test]
fn the_prompt_history_names_the_last_prompt_until_its_turn_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let header = SessionHeader::new("s", "/");
    let sink = JsonlSink::open(&path, &header).unwrap();
    assert_eq!(sink.prompt_history(), PromptHistory::default());
    let mirror = TranscriptMirror::new("s", "turn-1", model());
    sink.append_blocking(vec![mirror.prompt("first")]).unwrap();
    let unanswered = |text: &str| {
        Some(UnansweredPrompt { key: idempotency_key("s", "turn-1", EntryRole::Prompt), text: text.into() })
    };
    assert_eq!(sink.prompt_history(), PromptHistory { prompts: 1, unanswered: unanswered("first") });
    drop(sink);

    // Read back on open, and still unanswered after a tool call (the turn goes on).
    let sink = JsonlSink::open(&path, &header).unwrap();
    assert_eq!(sink.prompt_history(), PromptHistory { prompts: 1, unanswered: unanswered("first") });
    let mut tool_call = final_assistant("calling");
    tool_call.stop_reason = StopReason::ToolUse;
    sink.append_blocking(vec![Message::Assistant(tool_call)]).unwrap();
    drop(sink);
    let sink = JsonlSink::open(&path, &header).unwrap();
    assert_eq!(sink.prompt_history().unanswered, unanswered("first"));

    // A final assistant row answers it, read back or just written.
    sink.append_blocking(vec![Message::Assistant(final_assistant("done"))]).unwrap();
    assert_eq!(sink.prompt_history(), PromptHistory { prompts: 1, unanswered: None });
    drop(sink);
    let sink = JsonlSink::open(&path, &header).unwrap();
    assert_eq!(sink.prompt_history(), PromptHistory { prompts: 1, unanswered: None });
}

fn final_assistant(text: &str) -> AssistantMessage {
    AssistantMessage {
        content: vec![ContentBlock::Text { text: text.into() }],
        api: "a".into(),
        provider: "p".into(),
        model: "m".into(),
        usage: TranscriptUsage::default(),
        stop_reason: StopReason::Stop,
        error_message: None,
        timestamp: 0,
        idempotency_key: None,
    }
}
