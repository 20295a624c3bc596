//! Every recorded ACP fixture (`fixtures/recordings/acp/`, the scripted fake ACP agent recorded
//! through the record proxy), replayed through the real `AcpSession` with the replay agent standing
//! in for the agent: the transcript it mirrors, the tool terminals it reports (each call exactly
//! once) and the attempt result must match `fixtures/golden/acp/<scenario>.json`
//! (`CLAWBRIDGE_UPDATE_GOLDEN=1` rewrites them). The turn id carries the wall clock, so it is
//! normalised to `<turn>` in the documents.

use std::path::Path;
use std::sync::Arc;

use clawbridge_adapters::acp::{AcpConfig, AcpSession};
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::backend::TurnInput;
use clawbridge_bridge::events::Event;
use clawbridge_fixtures::golden::{self, GoldenTranscript};
use clawbridge_fixtures::hooks::RecordingObserver;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The prompt every ACP fixture was recorded with.
const PROMPT: &str = "Write hi to note.txt";

async fn replay(fixture: &Path, scenario: &str) -> Value {
    let decision =
        if scenario.contains("denied") { ApprovalDecision::Deny { message: None } } else { ApprovalDecision::Allow };
    let cwd = tempfile::tempdir().unwrap();
    let config = AcpConfig::new(
        clawbridge_fixtures::fixture_bin("replay-agent"),
        vec![fixture.display().to_string()],
        cwd.path().to_path_buf(),
    );
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = AcpSession::connect(config, hooks, true).await.expect("the recorded agent passes the gate");
    let ready = session.new_session().await.expect("session/new is recorded");
    let mut transcript = GoldenTranscript::new(PROMPT);
    let mut turn_id = String::new();
    let result = session
        .run_turn(
            &ready.session_id,
            &TurnInput::text(PROMPT),
            &mut |event: &Event| {
                if let Event::TurnStarted { turn_id: id } = event {
                    turn_id.clone_from(id);
                }
                transcript.on_event(event);
            },
            &CancellationToken::new(),
        )
        .await;
    let reports = observed.reports();
    let mut ids: Vec<&str> = reports.iter().map(|r| r.tool_call_id.as_str()).collect();
    let all = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), all, "{scenario}: each tool call reported once: {reports:?}");
    let outcome = session.shutdown().await.expect("the agent was running");
    assert_eq!(
        outcome.exit.map(clawbridge_bridge::exit::ExitState::success),
        Some(true),
        "{scenario}: the replay agent saw the recorded lines"
    );
    let document = golden::document(&transcript, reports, result);
    assert!(!turn_id.is_empty(), "{scenario}: the turn started");
    serde_json::from_str(&document.to_string().replace(&turn_id, "<turn>")).unwrap()
}

#[tokio::test]
async fn every_acp_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let mut documents = Vec::new();
    for fixture in golden::recorded_fixtures("acp") {
        let scenario = golden::scenario_of(&fixture);
        documents.push((scenario.clone(), replay(&fixture, &scenario).await));
    }
    assert!(documents.len() >= 2, "the allowed and denied recordings are checked in");
    let failures = golden::check("acp", &documents);
    assert!(failures.is_empty(), "{failures:#?}");
}
