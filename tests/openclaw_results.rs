//! The attempt result as the real OpenClaw (2026.9.6) reads it, for both harnesses (issue #12,
//! points 2, 6 and 7), with the real codex and claude against the scripted mock model. Four CLI runs
//! per harness, and a fifth:
//!
//! 1. a turn whose native process is SIGKILLed after its tool ran: OpenClaw reports the failure the
//!    bridge named (the process went away), and the transcript holds whole rows only (the tool
//!    call with its result, the turn closed), every key once;
//! 2. the next turn on that session: it completes, its rows name the model the native runtime used,
//!    its usage reaches OpenClaw, no key is stored twice, and OpenClaw prints no `dispose hook
//!    failed` warning;
//! 3. a turn that makes no progress past `CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS`: OpenClaw reports the
//!    *idle* timeout (its text for `terminal.source: "idle"`);
//! 4. a turn past its run budget (`--timeout`): OpenClaw reports a timeout that is not the idle one
//!    (OpenClaw words `run_budget` and `external` alike, and its own watchdog races the bridge's
//!    budget at the same deadline, so the CLI cannot tell those two apart; the plugin tests through
//!    the real bridge assert the exact `run_budget` terminal);
//! 5. Codex: the bridge itself is SIGKILLed while a tool runs, and the plugin closes the call with a
//!    synthetic failed result (the repair is the plugin's, the same for every harness); Claude:
//!    OpenClaw is interrupted mid-turn (an external abort) and the turn closes as aborted.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard, processes_with_env, tool_calls};
use clawbridge_fixtures::peers::{Sandbox, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

/// The text OpenClaw prints for a timeout whose terminal says `source: "idle"`.
const IDLE_TEXT: &str = "before the model idle timeout";
/// The text OpenClaw prints for any other timeout of a prompt.
const TIMEOUT_TEXT: &str = "Request timed out before a response was generated";
/// What OpenClaw logged on every run while the harness declared a `dispose` (see
/// docs/peers/openclaw.md#reset-and-dispose).
const DISPOSE_WARNINGS: [&str; 2] = ["dispose hook failed", "was reloaded or disabled"];
const CRASH_PROMPT: &str = "Please run the live test command.";
const NEXT_PROMPT: &str = "Say hello again.";
const NEXT_ANSWER: &str = "Hello again from the mock.";
const SLOW_PROMPT: &str = "Say something slowly.";
const LONG_PROMPT: &str = "Please start the long command.";

/// One harness under test: its peer binary's name, how OpenClaw's runner selects it, and the
/// native shell tool the mock's command rule waits for.
struct Peer {
    name: &'static str,
    harness: fn(PathBuf) -> Harness,
    shell_tool: &'static str,
    /// Also kill the bridge itself while a tool runs (the plugin's own repair; harness-neutral, so
    /// one harness runs it), else interrupt OpenClaw (an external abort).
    bridge_kill: bool,
}

/// The mock's script: a command for the crash prompt whose follow-up answer is slow (the test kills
/// the native process while the model "thinks"), a slow answer for the timeout prompts, a quick one
/// for the next turn.
fn scenario(shell_tool: &str) -> Value {
    json!({"rules": [
        // First: a next turn that starts a new native session carries the earlier prompts in its
        // seeded history (docs/host-protocol.md#transcript-history), which the rules below match.
        {"when": {"last_user_text_contains": NEXT_PROMPT},
         "reply": {"text": NEXT_ANSWER, "usage": {"input_tokens": 30, "output_tokens": 7}}},
        {"when": {"last_user_text_contains": "slowly"},
         "reply": {"text": "A very slow answer.", "delay_ms": 8000}},
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The command printed:", "text_quoting_tool_result": true, "delay_ms": 8000}},
        {"when": {"last_user_text_contains": "long command", "tool_offered": shell_tool},
         "reply": {"run_command": {"command": "sleep 6; echo long-$((6*7))", "shell": "/bin/bash",
                                   "justification": "Run the long command"}}},
        {"when": {"last_user_text_contains": "run", "tool_offered": shell_tool},
         "reply": {"run_command": {"command": "echo live-$((6*7))", "shell": "/bin/bash",
                                   "justification": "Run the live test command"}}}
    ], "default": {"text": NEXT_ANSWER, "usage": {"input_tokens": 30, "output_tokens": 7}}})
}

/// The processes whose parent is one of `parents`.
fn children_of(parents: &[i32]) -> Vec<i32> {
    clawbridge_fixtures::peers::live_processes()
        .filter(|(_, state)| {
            // `<state> <ppid> …` after the command name.
            state
                .split(' ')
                .nth(1)
                .and_then(|ppid| ppid.parse::<i32>().ok())
                .is_some_and(|ppid| parents.contains(&ppid))
        })
        .map(|(pid, _)| pid)
        .collect()
}

/// Once the mock has seen the request that follows the tool result (the tool ran and its result
/// reached the model), SIGKILLs the bridge's native processes; returns what it killed.
async fn kill_native_after_the_tool(run: &OpenClawHome<'_>, mock: &MockModel) -> Vec<i32> {
    let needle = format!("CLAWBRIDGE_STATE_DIR={}\0", run.bridge_state.display());
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let after_tool = mock.model_requests().iter().any(|r| r.body.to_string().contains("live-42"));
        if !after_tool {
            continue;
        }
        let native = children_of(&processes_with_env(&needle));
        for pid in &native {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        return native;
    }
    Vec::new()
}

fn no_dispose_warning(stderr: &str) {
    for warning in DISPOSE_WARNINGS {
        assert!(!stderr.contains(warning), "OpenClaw warned {warning:?}:\n{stderr}");
    }
}

/// Every message row's idempotency key, asserting none is stored twice.
fn unique_keys(messages: &[Value]) -> BTreeSet<String> {
    let keys: Vec<String> = messages.iter().filter_map(|m| m["idempotencyKey"].as_str().map(str::to_string)).collect();
    let unique: BTreeSet<String> = keys.iter().cloned().collect();
    assert_eq!(unique.len(), keys.len(), "a key stored twice: {keys:#?}");
    unique
}

/// Every toolCall has its toolResult, right after it: no orphan call, no result without its call.
fn whole_tool_rows(messages: &[Value]) {
    for (index, message) in messages.iter().enumerate() {
        for call in tool_calls(message) {
            let next = messages.get(index + 1).unwrap_or(&Value::Null);
            assert_eq!(next["role"], "toolResult", "the call {call} has no result after it: {messages:#?}");
            assert_eq!(next["toolCallId"], call["id"], "{messages:#?}");
        }
        if message["role"] == "toolResult" {
            let previous = index.checked_sub(1).map(|i| &messages[i]).unwrap_or(&Value::Null);
            assert!(
                tool_calls(previous).iter().any(|c| c["id"] == message["toolCallId"]),
                "a result without its call: {messages:#?}"
            );
        }
    }
}

async fn check(peer: Peer) {
    let Some((binary, peers)) = OpenClawPeers::with_peer(peer.name) else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&scenario(peer.shell_tool)).await.unwrap();
    let run = peers.home(&sandbox, (peer.harness)(binary), &mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();
    let label = peer.name;

    // 1. The native process dies mid-turn, after its tool ran.
    let ((status, crashed, stderr), killed) =
        tokio::join!(run.exec_output(CRASH_PROMPT, &[]), kill_native_after_the_tool(&run, &mock));
    assert!(!killed.is_empty(), "{label}: the native process was never seen after its tool ran");
    let crashed = crashed.unwrap_or_else(|| panic!("{label}: no JSON ({status}):\n{stderr}"));
    assert_eq!(crashed["ok"], false, "{label}: {crashed:#}");
    // OpenClaw throws a failed terminal's `error` (an Error: its message is the bridge's).
    let message = crashed["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("went away") && message.contains("SIGKILL"), "{label}: {crashed:#}");
    let sessions = run.session_ids().await;
    assert_eq!(sessions.len(), 1, "{label}: one session so far: {sessions:?}");
    let session_id = sessions[0].clone();
    let messages = run.messages(&session_id).await;
    whole_tool_rows(&messages);
    let keys_after_crash = unique_keys(&messages);
    assert_eq!(messages.iter().filter(|m| !tool_calls(m).is_empty()).count(), 1, "{label}: {messages:#?}");
    run.wait_until_gone().await;

    // 2. The next turn on the same session heals it: it completes, nothing is stored twice.
    let before = mock.model_requests().len();
    let (status, stdout, stderr) = run
        .output(&["agent", "--local", "--agent", "main", "--session-id", &session_id, "-m", NEXT_PROMPT, "--json"])
        .await;
    no_dispose_warning(&stderr);
    let next = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout)
        .unwrap_or_else(|| panic!("{label}: no JSON ({status}):\n{stdout}\n{stderr}"));
    assert_eq!(next["payloads"][0]["text"], NEXT_ANSWER, "{label}: {next:#}");
    let messages = run.messages(&session_id).await;
    whole_tool_rows(&messages);
    let keys = unique_keys(&messages);
    assert!(keys.is_superset(&keys_after_crash), "{label}: the crashed turn's rows stay");
    // The rows of the new turn name the model the native runtime sent to the model API.
    let used: BTreeSet<String> =
        mock.model_requests()[before..].iter().filter_map(|r| r.body["model"].as_str().map(str::to_string)).collect();
    assert_eq!(used.len(), 1, "{label}: {used:?}");
    let answer = messages.iter().rev().find(|m| m["role"] == "assistant").expect("an answer row");
    assert_eq!(answer["model"].as_str(), used.iter().next().map(String::as_str), "{label}: {answer:#}");
    assert!(!answer["provider"].as_str().unwrap_or("").is_empty() && !answer["api"].as_str().unwrap_or("").is_empty());
    // Usage reached OpenClaw (attemptUsage: the mock's scripted counts).
    let usage = &next["meta"]["agentMeta"]["usage"];
    assert!(usage["output"].as_u64().unwrap_or(0) >= 7, "{label}: {next:#}");
    run.wait_until_gone().await;

    // 3. No progress past the bridge's idle limit: OpenClaw reads an idle timeout.
    let mut config = run.config();
    config["plugins"]["entries"]["clawbridge"]["config"]["env"]["CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS"] = json!("2500");
    run.write_config(&config);
    let (status, idle, stderr) = run.exec_output(SLOW_PROMPT, &[]).await;
    no_dispose_warning(&stderr);
    let idle = idle.unwrap_or_else(|| panic!("{label}: no JSON ({status}):\n{stderr}"));
    assert_eq!(idle["status"], "timeout", "{label}: {idle:#}");
    assert_eq!(idle["error"]["kind"], "timeout", "{label}: {idle:#}");
    assert!(idle["error"]["message"].as_str().unwrap_or("").contains(IDLE_TEXT), "{label}: {idle:#}");
    run.wait_until_gone().await;

    // 4. Past the run budget: a timeout, not the idle one.
    run.write_config(&run.config());
    let (status, budget, stderr) = run.exec_output(SLOW_PROMPT, &["--timeout", "4"]).await;
    no_dispose_warning(&stderr);
    let budget = budget.unwrap_or_else(|| panic!("{label}: no JSON ({status}):\n{stderr}"));
    assert_eq!(budget["status"], "timeout", "{label}: {budget:#}");
    let text = budget["error"]["message"].as_str().unwrap_or("");
    assert!(text.contains(TIMEOUT_TEXT) && !text.contains(IDLE_TEXT), "{label}: {budget:#}");
    run.wait_until_gone().await;

    if peer.bridge_kill {
        check_bridge_kill(&run, label).await;
    } else {
        check_external_abort(&run, &mock, label).await;
    }
}

/// 5. (the other harness) OpenClaw is interrupted (SIGINT) mid-turn: its abortSignal fires, the
///    plugin cancels the attempt, the native turn is interrupted and the turn's rows close as
///    aborted; nothing outlives OpenClaw. (The CLI prints no JSON for an interrupted run; its log
///    names the caller's abort.)
async fn check_external_abort(run: &OpenClawHome<'_>, mock: &MockModel, label: &str) {
    let session_id = "44444444-4444-4444-8444-444444444444";
    let before = mock.model_requests().len();
    let child = run
        .command(&["agent", "--local", "--agent", "main", "--session-id", session_id, "-m", SLOW_PROMPT, "--json"])
        .spawn()
        .expect("openclaw starts");
    let pid = child.id().expect("a pid");
    let output = tokio::spawn(child.wait_with_output());
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while mock.model_requests().len() == before && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(mock.model_requests().len() > before, "{label}: the turn never reached the model");
    let _ = std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("OpenClaw ends after the interrupt")
        .expect("joined")
        .expect("waited");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("caller_signal_aborted"), "{label}: {stderr}");
    no_dispose_warning(&stderr);
    let messages = run.messages(session_id).await;
    whole_tool_rows(&messages);
    unique_keys(&messages);
    let last = messages.last().expect("rows");
    assert_eq!(
        (&last["role"], &last["stopReason"]),
        (&json!("assistant"), &json!("aborted")),
        "{label}: {messages:#?}"
    );
    run.wait_until_gone().await;
}

/// Once the transcript holds the long command's toolCall (the tool is running), SIGKILLs the bridge
/// itself; returns what it killed.
async fn kill_bridge_while_the_tool_runs(run: &OpenClawHome<'_>, known: &[String]) -> Vec<i32> {
    let needle = format!("CLAWBRIDGE_STATE_DIR={}\0", run.bridge_state.display());
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let Some(session) = run.session_ids().await.into_iter().find(|s| !known.contains(s)) else { continue };
        if !run.messages(&session).await.iter().any(|m| !tool_calls(m).is_empty()) {
            continue;
        }
        let bridges = processes_with_env(&needle);
        for pid in &bridges {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        return bridges;
    }
    Vec::new()
}

/// 5. (one harness) The bridge dies while a tool runs: the plugin closes the call it mirrored with
///    a synthetic failed result under the key the bridge would have used.
async fn check_bridge_kill(run: &OpenClawHome<'_>, label: &str) {
    let known = run.session_ids().await;
    let ((status, killed_run, stderr), killed) =
        tokio::join!(run.exec_output(LONG_PROMPT, &[]), kill_bridge_while_the_tool_runs(run, &known));
    assert!(!killed.is_empty(), "{label}: the bridge was never killed");
    let killed_run = killed_run.unwrap_or_else(|| panic!("{label}: no JSON ({status}):\n{stderr}"));
    assert_eq!(killed_run["ok"], false, "{label}: {killed_run:#}");
    let session = run.session_ids().await.into_iter().find(|s| !known.contains(s)).expect("the new session");
    let messages = run.messages(&session).await;
    whole_tool_rows(&messages);
    unique_keys(&messages);
    let result = messages.iter().find(|m| m["role"] == "toolResult").expect("the call's result");
    assert_eq!(result["isError"], true, "{label}: {messages:#?}");
    assert_eq!(result["details"]["synthetic"], true, "{label}: {messages:#?}");
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_failures_reach_openclaw_as_their_own_terminal_and_the_transcript_heals() {
    check(Peer { name: "codex", harness: Harness::Codex, shell_tool: "exec_command", bridge_kill: true }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_failures_reach_openclaw_as_their_own_terminal_and_the_transcript_heals() {
    check(Peer { name: "claude", harness: Harness::Claude, shell_tool: "Bash", bridge_kill: false }).await;
}
