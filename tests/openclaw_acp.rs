//! A real OpenClaw turn on an ACP agent: `openclaw agent exec` (openclaw 2026.9.6 on Node 24) loads
//! the plugin from `openclaw-plugin/`, selects `clawbridge-acp` for a model whose
//! `agentRuntime.id` names it, and runs one turn through `clawbridge serve` → the real codex-acp
//! 0.16.0 (the cheaper of the two agents to start) → the scripted mock model. The reply must be in
//! the exec's answer and in OpenClaw's own transcript.

mod common;

use clawbridge_fixtures::peers::acp::{AcpAgent, AcpSandbox, text_mock};
use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard, text_of};
use clawbridge_fixtures::peers::peers_required;
use common::openclaw::{OpenClawPeers, assert_exec_ok, describe_exec};

const PROMPT: &str = "Say hello.";
const ANSWER: &str = "Hello from the mock model.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaw_runs_a_turn_on_codex_acp_through_the_plugin() {
    let agent = AcpAgent::CodexAcp;
    if let Err(why) = agent.available() {
        assert!(!peers_required(), "CLAWBRIDGE_REQUIRE_PEERS=1 but {why}");
        eprintln!("skipped: peers not installed: {why}");
        return;
    }
    let Some(peers) = OpenClawPeers::or_skip() else { return };

    let acp = AcpSandbox::new(agent, &text_mock()).await.unwrap();
    let run = peers.home(&acp.sandbox, Harness::acp(&acp), &acp.mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec(PROMPT, &[]).await;
    let describe = || describe_exec(&exec, &acp.mock);
    assert_exec_ok(&exec, &acp.mock);
    assert!(exec["final"].as_str().unwrap_or("").contains(ANSWER), "{}", describe());
    assert_eq!(acp.mock.model_requests().len(), 1, "one model call: {}", describe());

    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();
    let messages = run.messages(&session_id).await;
    let summary = || serde_json::to_string_pretty(&messages).unwrap();
    let users: Vec<_> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{}", summary());
    assert_eq!(text_of(users[0]), PROMPT, "{}", summary());
    let replies: Vec<_> = messages.iter().filter(|m| m["role"] == "assistant").collect();
    assert!(
        replies.iter().any(|m| text_of(m).contains(ANSWER)),
        "the reply is in OpenClaw's transcript: {}",
        summary()
    );
}
