//! Context window, prompt facts and workspace bootstrap files through the real host (issue #13):
//! openclaw 2026.9.6 runs a turn through the clawbridge plugin on the real codex app-server
//! 0.169.0 and on the real Claude Code 2.1.328, each against the scripted mock model.
//!
//! - Codex: an operator's per-model `contextTokens` cap reaches the thread's config
//!   (`model_context_window`), Codex reports the window it applies, and OpenClaw's session store
//!   keeps it as the session's `contextTokens` (source `runtime-configured`), with the last model
//!   call's prompt size as its `totalTokens`.
//! - Codex: the workspace's SOUL.md reaches the model request once, as system guidance; AGENTS.md
//!   reaches it once too (Codex reads it from its working directory itself, so the plugin does not
//!   add it again).
//! - Claude: the window Claude Code reports (`modelUsage[model].contextWindow`) is the session's
//!   `contextTokens` (source `runtime`).
//! - Claude: SOUL.md and USER.md reach the model once, in the system prompt (AGENTS.md too, which
//!   Claude Code reads itself); after USER.md is edited, the next turn (a new OpenClaw process and a
//!   new bridge) resumes the same Claude session, and the model sees the edited file, not the old
//!   one. (Codex keeps a thread's first developer instructions: docs/peers/codex.md.)

mod common;

use clawbridge_fixtures::mock_model::LoggedRequest;
use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::{OpenClawPeers, assert_exec_ok, describe_exec};
use serde_json::json;

/// The operator's cap on the mock model's context (its configured window is 128 000).
const CAP: u64 = 64_000;
/// The prompt size the mock reports for its answer.
const PROMPT_TOKENS: u64 = 4_321;

/// What SOUL.md and AGENTS.md say; each must reach the model exactly once.
const SOUL_MARKER: &str = "soul-marker-7f3a: answer like a lighthouse keeper";
const AGENTS_MARKER: &str = "agents-marker-91bd: keep the log tidy";

/// Writes the workspace's bootstrap files (OpenClaw keeps files that exist).
fn write_bootstrap_files(sandbox: &Sandbox) {
    std::fs::write(sandbox.work().join("SOUL.md"), format!("# Soul\n\n{SOUL_MARKER}\n")).unwrap();
    std::fs::write(sandbox.work().join("AGENTS.md"), format!("# Agents\n\n{AGENTS_MARKER}\n")).unwrap();
}

/// Asserts that each bootstrap marker reached the (one) model request exactly once.
fn assert_bootstrap_reached_the_model(requests: &[LoggedRequest]) {
    assert_eq!(requests.len(), 1, "one model request: {}", describe_requests(requests));
    let body = requests[0].body.to_string();
    assert_eq!(body.matches(SOUL_MARKER).count(), 1, "SOUL.md once: {body}");
    assert_eq!(body.matches(AGENTS_MARKER).count(), 1, "AGENTS.md once, never twice: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_the_operators_context_cap_reaches_codex_and_its_window_and_prompt_size_reach_the_session_store() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({"default": {"text": "Budget answer.",
                                      "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": 9}}});
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let mut config = run.config();
    config["models"]["providers"]["mock"]["models"][0]["contextTokens"] = json!(CAP);
    run.write_config(&config);
    write_bootstrap_files(&sandbox);
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec("Say something within budget.", &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    let session_id = exec["sessionId"].as_str().expect("a session id");
    let entry = run.session_entry(session_id).await;
    let entry_text = || format!("{entry:#}\n{}", describe());
    // Codex 0.169.0 applies 95% of its configured `model_context_window` and reports that: the
    // operator's cap reached the thread's config (OpenClaw alone would store the cap itself, or
    // the model's 128 000).
    assert_eq!(entry["contextTokens"], json!(CAP * 95 / 100), "{}", entry_text());
    assert_eq!(entry["contextTokensSource"], "runtime-configured", "{}", entry_text());
    // The last model call's prompt size (promptCache.lastCallUsage) is the session's context use.
    assert_eq!(entry["totalTokens"], json!(PROMPT_TOKENS), "{}", entry_text());
    assert_eq!(entry["agentHarnessId"], "clawbridge-codex", "{}", entry_text());
    assert_bootstrap_reached_the_model(&mock.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_the_window_claude_code_reports_and_its_prompt_size_reach_the_session_store() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({"default": {"text": "Budget answer.",
                                      "usage": {"input_tokens": PROMPT_TOKENS, "output_tokens": 9}}});
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec("Say something within budget.", &[]).await;
    let describe = || describe_exec(&exec, &mock);
    assert_exec_ok(&exec, &mock);
    let session_id = exec["sessionId"].as_str().expect("a session id");
    let entry = run.session_entry(session_id).await;
    // Claude Code 2.1.328 reports a 1 000 000-token window for the mock's model in its result's
    // `modelUsage`; OpenClaw's own resolution would be the configured 128 000.
    assert_eq!(entry["contextTokens"], json!(1_000_000), "{entry:#}\n{}", describe());
    assert_eq!(entry["contextTokensSource"], "runtime", "{entry:#}\n{}", describe());
    assert_eq!(entry["totalTokens"], json!(PROMPT_TOKENS), "{entry:#}\n{}", describe());
}

/// The OpenClaw session of the two-turn edit, and its two prompts.
const SESSION: &str = "bootstrap-edit";
const FIRST: &str = "First turn: who am I talking to?";
const SECOND: &str = "Second turn: and now?";

/// What USER.md says before and after the user edits it between two turns.
const USER_BEFORE: &str = "user-marker-0c41: call me Sam";
const USER_AFTER: &str = "user-marker-5e92: call me Alex";

/// The one model request that carried `prompt` (Claude Code may ask the model other things too).
fn request_with(requests: &[LoggedRequest], prompt: &str) -> String {
    let carrying: Vec<String> =
        requests.iter().map(|r| r.body.to_string()).filter(|body| body.contains(prompt)).collect();
    assert_eq!(carrying.len(), 1, "one request carried {prompt:?}: {}", describe_requests(requests));
    carrying.into_iter().next().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_the_bootstrap_files_reach_the_model_once_and_an_edit_keeps_the_claude_session() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };

    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"default": {"text": "Noted."}})).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    run.write_config(&run.config());
    write_bootstrap_files(&sandbox);
    let user_md = sandbox.work().join("USER.md");
    std::fs::write(&user_md, format!("# User\n\n{USER_BEFORE}\n")).unwrap();
    let _temp_root = TempRootGuard::snapshot();

    // Both turns as `openclaw agent --local` (a new OpenClaw process and bridge each): `agent exec`
    // lends a narrower tool set, and another tool set is rightly another Claude session.
    let first_turn = run.next_turn(SESSION, FIRST).await;
    let describe = || format!("first: {first_turn:#}\nmock saw:\n{}", describe_requests(&mock.requests()));
    assert!(first_turn.to_string().contains("Noted."), "the first turn answered: {}", describe());
    let first = request_with(&mock.model_requests(), FIRST);
    assert_eq!(first.matches(SOUL_MARKER).count(), 1, "SOUL.md once: {first}");
    assert_eq!(first.matches(USER_BEFORE).count(), 1, "USER.md once: {first}");
    assert_eq!(first.matches(AGENTS_MARKER).count(), 1, "AGENTS.md once, never twice: {first}");
    let claude_session = run.bound_native_session();

    std::fs::write(&user_md, format!("# User\n\n{USER_AFTER}\n")).unwrap();
    let next = run.next_turn(SESSION, SECOND).await;
    let describe = || format!("next: {next:#}\nmock saw:\n{}", describe_requests(&mock.requests()));
    assert!(next.to_string().contains("Noted."), "the second turn answered: {}", describe());
    let second = request_with(&mock.model_requests(), SECOND);
    // The same conversation (the first prompt is in it) under the files as they are now.
    assert!(second.contains(FIRST), "the second turn continues the first: {second}");
    assert_eq!(second.matches(USER_AFTER).count(), 1, "the edited USER.md, once: {second}");
    assert_eq!(second.matches(USER_BEFORE).count(), 0, "not the old USER.md: {second}");
    assert_eq!(second.matches(SOUL_MARKER).count(), 1, "SOUL.md once: {second}");
    let log = || std::fs::read_to_string(run.bridge_state.join("logs/clawbridge.log")).unwrap_or_default();
    assert_eq!(run.bound_native_session(), claude_session, "the edit kept the Claude session: {}", log());
    run.wait_until_gone().await;
}
