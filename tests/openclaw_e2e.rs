//! The real end to end (issue #5): `openclaw agent exec` (openclaw 2026.9.6 on Node 24) loads the
//! plugin from `openclaw-plugin/`, selects the clawbridge Codex harness for a model whose
//! `agentRuntime.id` names it, and runs a turn through `clawbridge serve` → the real codex
//! app-server 0.169.0 → the scripted mock model, which runs one command. Then OpenClaw's own SQLite
//! transcript is read back, and a second turn on the same OpenClaw session
//! (`openclaw agent --local --session-id …`, a new OpenClaw process and a new bridge) must resume
//! the same Codex thread.

mod common;

use std::collections::BTreeSet;

use clawbridge_fixtures::peers::codex::{MARKER, command_mock};
use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard, text_of, tool_calls};
use clawbridge_fixtures::peers::{Sandbox, start_mock};
use common::openclaw::{OpenClawPeers, assert_exec_ok, describe_exec};
use serde_json::json;

const FIRST_PROMPT: &str = "Please run the live test command.";
const SECOND_PROMPT: &str = "Say hello again.";
const SECOND_ANSWER: &str = "Hello again from the mock.";
const HARNESS: &str = "clawbridge-codex";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaw_runs_a_codex_turn_through_the_plugin_and_the_next_turn_resumes_the_thread() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };

    let sandbox = Sandbox::new().unwrap();
    let mut scenario = command_mock(false);
    scenario["default"] = json!({"text": SECOND_ANSWER});
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();

    // Turn 1: agent exec.
    let exec = run.exec(FIRST_PROMPT, &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    assert!(exec["final"].as_str().unwrap_or("").contains(MARKER), "{}", describe());
    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();

    let messages = run.messages(&session_id).await;
    let summary = || serde_json::to_string_pretty(&messages).unwrap();
    let users: Vec<_> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{}", summary());
    assert_eq!(text_of(users[0]), FIRST_PROMPT);
    let calls: Vec<_> = messages.iter().filter(|m| m["role"] == "assistant" && tool_calls(m).len() == 1).collect();
    assert_eq!(calls.len(), 1, "one assistant row with the toolCall: {}", summary());
    let call = &tool_calls(calls[0])[0];
    let tool_name = call["name"].as_str().expect("a tool name").to_string();
    let results: Vec<_> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", summary());
    assert_eq!(results[0]["toolCallId"], call["id"]);
    assert!(text_of(results[0]).contains(MARKER), "the command really ran: {}", summary());
    let finals: Vec<_> = messages
        .iter()
        .filter(|m| m["role"] == "assistant" && tool_calls(m).is_empty() && !text_of(m).is_empty())
        .collect();
    assert_eq!(finals.len(), 1, "{}", summary());
    assert!(text_of(finals[0]).contains(MARKER));
    assert_eq!(messages.len(), 4, "user, toolCall, toolResult, answer and nothing else: {}", summary());
    let keys: BTreeSet<&str> = messages.iter().filter_map(|m| m["idempotencyKey"].as_str()).collect();
    assert_eq!(keys.len(), 4, "every row keyed, no key twice: {}", summary());

    // observeToolTerminal reached OpenClaw: its tool summary names the tool.
    let tools = &exec["toolSummary"];
    assert_eq!(tools["calls"], 1, "{}", describe());
    assert_eq!(tools["tools"], json!([tool_name]), "{}", describe());
    assert_eq!(tools["failures"], 0, "{}", describe());
    // attemptUsage reached the host (the mock's scripted token counts, summed over both requests).
    assert!(exec["usage"]["total"].as_u64().unwrap_or(0) > 0, "{}", describe());

    let thread = run.bound_native_session();
    run.wait_until_gone().await;
    let model_requests_before = mock.model_requests().len();

    // Turn 2: a new OpenClaw process (and with it a new bridge) on the same session.
    let second = run.next_turn(&session_id, SECOND_PROMPT).await;
    let payload_text = second["payloads"][0]["text"].as_str().unwrap_or("");
    assert_eq!(payload_text, SECOND_ANSWER, "{second:#}");
    let meta = &second["meta"]["agentMeta"];
    assert_eq!(meta["sessionId"], session_id.as_str(), "{second:#}");
    assert_eq!(meta["agentHarnessId"], HARNESS, "{second:#}");
    assert_eq!(run.bound_native_session(), thread, "the session is still bound to the same Codex thread");
    // The resumed thread carries turn 1: the model saw the first prompt and answer again.
    let resumed = mock.model_requests();
    let turn2 = &resumed[model_requests_before..];
    assert_eq!(turn2.len(), 1, "{}", clawbridge_fixtures::peers::describe_requests(&resumed));
    let input = turn2[0].body["input"].to_string();
    assert!(input.contains(FIRST_PROMPT) && input.contains(MARKER) && input.contains(SECOND_PROMPT), "{input}");

    let messages = run.messages(&session_id).await;
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "user").count(),
        2,
        "{}",
        serde_json::to_string_pretty(&messages).unwrap()
    );
    assert_eq!(messages.iter().filter(|m| text_of(m) == SECOND_ANSWER).count(), 1);
    assert_eq!(messages.len(), 6);
    run.wait_until_gone().await;
}
