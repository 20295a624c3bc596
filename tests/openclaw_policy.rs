//! Tool policy on the real OpenClaw (openclaw 2026.9.6 on Node 24, issue #12 point 3): a chat whose
//! OpenClaw tool policy takes the shell away (`tools.deny: ["exec"]`) must not get a native shell
//! through a clawbridge harness. clawbridge does not certify `conversationToolPolicySupport:
//! "exact"`, so the real host refuses the attempt up front (a preflight error) before the harness
//! starts anything; the mock model scripts a shell call whenever a shell tool is offered, and its
//! marker would appear only if a native command really ran. (Allow lists that reach the harness,
//! `toolsAllow` / `disableTools`, are enforced natively: `clawbridge-bridge` `native_tools`, the
//! adapters' `tool_policy` modules and `tests/serve.rs`.)
//!
//! A tool *profile* that lacks the native surface (`tools.profile: "messaging"` or `"minimal"`, no
//! deny at all) is refused the same way: the native harnesses declare their surface's canonical
//! OpenClaw names (`conversationToolPolicyNativeTools`), and core checks them against the profile.

mod common;

use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard, parse_json_output};
use clawbridge_fixtures::peers::{Sandbox, claude, codex, describe_requests, peer_or_skip, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::json;

const PROMPT: &str = "Please run the live test command.";

/// One `agent exec` under the tool policy `tools` (merged into the config's `tools`) on `harness`,
/// with `scenario` as the model.
async fn refused_without_a_shell(
    harness: Harness,
    tools: serde_json::Value,
    scenario: serde_json::Value,
    label: &str,
    marker: &str,
) {
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, harness, &mock);
    let mut config = run.config();
    for (key, value) in tools.as_object().expect("a tools object") {
        config["tools"][key] = value.clone();
    }
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();
    let (config_path, state, cwd) =
        (run.config_path.display().to_string(), run.state.display().to_string(), sandbox.work().display().to_string());
    let (status, stdout, stderr) = run
        .output(&[
            "agent",
            "exec",
            "--config",
            &config_path,
            "--state-dir",
            &state,
            "--cwd",
            &cwd,
            "--json",
            "--timeout",
            "120",
            PROMPT,
        ])
        .await;
    let describe = || {
        format!("{status}\nstdout:\n{stdout}\nstderr:\n{stderr}\nmock saw:\n{}", describe_requests(&mock.requests()))
    };
    let exec = parse_json_output(&stdout).unwrap_or_else(|| panic!("no JSON: {}", describe()));
    assert_eq!(exec["ok"], false, "{}", describe());
    let message = exec["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(label) && message.contains("tool policy"), "refused up front, naming why: {}", describe());
    assert!(!status.success(), "{}", describe());
    assert!(mock.model_requests().is_empty(), "no model call, so no tool call at all: {}", describe());
    assert!(!stdout.contains(marker) && !stderr.contains(marker), "no command ran: {}", describe());
    assert!(!run.bridge_state.join("serve/bindings").exists(), "no native session was started: {}", describe());
    if let Some(session) = exec["sessionId"].as_str() {
        let rows = run.messages(session).await;
        assert!(rows.iter().all(|m| m["role"] != "toolResult" && m["role"] != "assistant"), "{rows:?}");
    }
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_policy_without_the_shell_runs_no_native_shell_on_codex() {
    let Some(codex_bin) = peer_or_skip("codex") else { return };
    refused_without_a_shell(
        Harness::Codex(codex_bin),
        json!({"deny": ["exec"]}),
        codex::command_mock(false),
        "Codex (clawbridge)",
        codex::MARKER,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_policy_without_the_shell_runs_no_native_shell_on_claude() {
    let Some(claude_bin) = peer_or_skip("claude") else { return };
    refused_without_a_shell(
        Harness::Claude(claude_bin),
        json!({"deny": ["exec"]}),
        claude::bash_mock(),
        "Claude Code (clawbridge)",
        claude::MARKER,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messaging_tool_profile_runs_no_native_shell_on_codex() {
    let Some(codex_bin) = peer_or_skip("codex") else { return };
    refused_without_a_shell(
        Harness::Codex(codex_bin),
        json!({"profile": "messaging"}),
        codex::command_mock(false),
        "Codex (clawbridge)",
        codex::MARKER,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minimal_tool_profile_runs_no_native_shell_on_claude() {
    let Some(claude_bin) = peer_or_skip("claude") else { return };
    refused_without_a_shell(
        Harness::Claude(claude_bin),
        json!({"profile": "minimal"}),
        claude::bash_mock(),
        "Claude Code (clawbridge)",
        claude::MARKER,
    )
    .await;
}
