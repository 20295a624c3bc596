//! Every recorded fixture of the real ACP agents (`fixtures/recordings/acp/<agent>/`), replayed
//! through the real `AcpSession` (the replay agent stands in for codex-acp / claude-agent-acp): the
//! transcript it mirrors, the tool terminals it reports and the attempt result must match the
//! checked-in golden files (`fixtures/golden/acp/<agent>/<scenario>.json`);
//! `CLAWBRIDGE_UPDATE_GOLDEN=1` rewrites them. Every tool call is reported exactly once.
//!
//! What the client does in each scenario (prompt, permission answer) comes from the same list the
//! fixtures were recorded with (`clawbridge_fixtures::peers::acp::scenarios`).

use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::acp::{AcpConfig, AcpSession};
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::backend::TurnInput;
use clawbridge_bridge::events::Event;
use clawbridge_fixtures::golden::{self, GoldenTranscript};
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::peers::acp::{AcpAgent, scenarios};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The folder of `agent`'s fixtures and goldens, below `recordings/` and `golden/`.
fn folder(agent: AcpAgent) -> String {
    format!("acp/{}", agent.name())
}

/// Replays `agent`'s `scenario`; returns the golden document.
async fn replay(agent: AcpAgent, scenario: &str) -> Value {
    let (_, _, prompt, approve) = scenarios(agent)
        .into_iter()
        .find(|(name, ..)| *name == scenario)
        .unwrap_or_else(|| panic!("{scenario} is not a scenario of peers::acp::scenarios()"));
    let fixture =
        clawbridge_fixtures::peers::record::recordings_dir().join(folder(agent)).join(format!("{scenario}.jsonl"));
    let decision = if approve { ApprovalDecision::Allow } else { ApprovalDecision::Deny { message: None } };
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let cwd = tempfile::tempdir().unwrap();
    let mut config = AcpConfig::new(
        clawbridge_fixtures::fixture_bin("replay-agent"),
        vec![fixture.display().to_string()],
        cwd.path().into(),
    );
    config.stop.after_stdin_close = Duration::from_secs(2);
    let mut session = AcpSession::connect(config, hooks, true)
        .await
        .unwrap_or_else(|e| panic!("{scenario}: the handshake replays: {e}"));
    let ready = session.new_session().await.unwrap_or_else(|e| panic!("{scenario}: session/new replays: {e}"));
    let mut transcript = GoldenTranscript::new(prompt);
    let mut turn_ids = Vec::new();
    let result = session
        .run_turn(
            &ready.session_id,
            &TurnInput::text(prompt),
            &mut |event: &Event| {
                if let Event::TurnStarted { turn_id } = event {
                    turn_ids.push(turn_id.clone());
                }
                transcript.on_event(event);
            },
            &CancellationToken::new(),
        )
        .await;
    let outcome = session.shutdown().await.expect("the replay agent was running");
    // The replay agent ignores stdin EOF as codex-acp does not, so the stop may need a signal; what
    // matters is that it never reported a deviation (exit status 3).
    assert!(
        !matches!(outcome.exit, Some(clawbridge_bridge::exit::ExitState::Code(3))),
        "{scenario}: the replay agent saw the recorded client lines"
    );
    let reports = observed.reports();
    let mut reported: Vec<&str> = reports.iter().map(|r| r.tool_call_id.as_str()).collect();
    reported.sort_unstable();
    let mut unique = reported.clone();
    unique.dedup();
    assert_eq!(reported, unique, "{}/{scenario}: every tool call is reported exactly once: {reports:#?}", agent.name());
    let mut document = golden::document(&transcript, reports, result);
    // The bridge names the turn itself (session id, clock and pid): the only unstable bytes.
    let mut text = document.to_string();
    for id in turn_ids {
        text = text.replace(&id, "<turn>");
    }
    document = serde_json::from_str(&text).unwrap_or(document);
    document
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acp_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let mut failures = Vec::new();
    for agent in AcpAgent::ALL {
        let fixtures = golden::recorded_fixtures(&folder(agent));
        assert_eq!(fixtures.len(), scenarios(agent).len(), "every {} scenario is recorded: {fixtures:?}", agent.name());
        let mut documents = Vec::new();
        for fixture in &fixtures {
            let scenario = golden::scenario_of(fixture);
            documents.push((scenario.clone(), replay(agent, &scenario).await));
        }
        failures.extend(golden::check(&folder(agent), &documents));
    }
    assert!(failures.is_empty(), "{failures:#?}\n(re-create with CLAWBRIDGE_UPDATE_GOLDEN=1 after checking the diff)");
}

/// The goldens say what the issue asks of each scenario, so a rewrite cannot quietly accept a
/// regression: the allowed call ran, the denied one never started, each has exactly one terminal.
#[test]
fn the_golden_files_hold_the_expected_tool_terminals() {
    for agent in AcpAgent::ALL {
        let golden = |scenario: &str| -> Value {
            let path = clawbridge_fixtures::peers::repo_root()
                .join("fixtures/golden")
                .join(folder(agent))
                .join(format!("{scenario}.json"));
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
                .unwrap()
        };
        let name = agent.name();
        let plain = golden("plain-text");
        assert_eq!(plain["toolTerminals"], serde_json::json!([]), "{name}: a text turn runs no tool");
        assert_eq!(plain["result"]["terminal"]["kind"], "ok", "{name}");
        let allowed = golden("tool-allowed");
        let terminals = allowed["toolTerminals"].as_array().expect("an array");
        assert_eq!(terminals.len(), 1, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["executionStarted"], true, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["outcome"], "success", "{name}: {terminals:#?}");
        let denied = golden("tool-denied");
        let terminals = denied["toolTerminals"].as_array().expect("an array");
        assert_eq!(terminals.len(), 1, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["executionStarted"], false, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["outcome"], "failure", "{name}: {terminals:#?}");
    }
}
