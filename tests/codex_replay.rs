//! Every recorded Codex fixture, replayed through the real Codex session: the transcript it mirrors
//! and the tool terminals it reports must match the checked-in golden files
//! (`fixtures/golden/codex/<scenario>.json`). `CLAWBRIDGE_UPDATE_GOLDEN=1` rewrites them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, HostTools, NoHostTools};
use clawbridge_bridge::events::Event;
use clawbridge_fixtures::golden::{self, GoldenTranscript};
use clawbridge_fixtures::hooks::{RecordingObserver, WeatherTool};
use clawbridge_protocol::codex::policy::{ApprovalPolicy, SandboxMode};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// How each scenario's client behaves (what the recording's client did).
fn client(scenario: &str) -> (ApprovalDecision, Arc<dyn HostTools>, &'static str, Option<&'static str>) {
    let approve = ApprovalDecision::Allow;
    match scenario {
        "command-approved" | "command-auto" => {
            (approve, Arc::new(NoHostTools), "Please run the live test command.", None)
        }
        "command-declined" => {
            (ApprovalDecision::Deny { message: None }, Arc::new(NoHostTools), "Please run the live test command.", None)
        }
        "command-cancelled" => {
            (ApprovalDecision::Abort, Arc::new(NoHostTools), "Please run the live test command.", None)
        }
        "dynamic-tool" => (approve, Arc::new(WeatherTool), "What is the weather in Paris?", None),
        "resume" => (approve, Arc::new(NoHostTools), "Say hello again.", Some("<uuid-2>")),
        _ => (approve, Arc::new(NoHostTools), "Say hello.", None),
    }
}

/// Replays one fixture through the session; returns the golden document.
async fn replay(fixture: &Path, scenario: &str) -> Value {
    let (decision, tools, prompt, resume) = client(scenario);
    let observed = Arc::new(RecordingObserver::default());
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("replay-agent"));
    config.launcher_args = vec![fixture.into()];
    config.stop.after_stdin_close = Duration::from_secs(2);
    let hooks = SessionHooks { approver: Arc::new(FixedApprover(decision)), tools, observer: observed.clone() };
    let mut session = CodexSession::connect(config, hooks).await.expect("the recorded server passes the gate");
    let options = ThreadOptions {
        cwd: Some("/replay/cwd".into()),
        approval_policy: Some(ApprovalPolicy::OnRequest),
        sandbox: Some(SandboxMode::ReadOnly),
        ..ThreadOptions::default()
    };
    let thread = match resume {
        Some(id) => session.resume_or_start(id, &options).await.unwrap(),
        None => session.start_thread(&options).await.unwrap(),
    };
    assert_eq!(thread.resume_failure, None);
    let mut transcript = GoldenTranscript::new(prompt);
    let result = session
        .run_turn(&thread.thread_id, prompt, &mut |event: &Event| transcript.on_event(event), &CancellationToken::new())
        .await
        .expect("the replayed turn runs");
    let outcome = session.shutdown().await.expect("the session had its own app-server");
    assert_eq!(
        outcome.exit.map(clawbridge_bridge::exit::ExitState::success),
        Some(true),
        "the replay agent saw the recorded client lines"
    );
    golden::document(&transcript, observed.reports(), result)
}

#[tokio::test]
async fn every_codex_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let fixtures = golden::recorded_fixtures("codex");
    assert!(fixtures.len() >= 8, "all Codex scenarios are recorded: {fixtures:?}");
    let mut documents = Vec::new();
    for fixture in &fixtures {
        let scenario = golden::scenario_of(fixture);
        documents.push((scenario.clone(), replay(fixture, &scenario).await));
    }
    let failures = golden::check("codex", &documents);
    assert!(failures.is_empty(), "{failures:#?}\n(re-create with CLAWBRIDGE_UPDATE_GOLDEN=1 after checking the diff)");
}

/// A server that goes quiet after the command finished, still `active`, and never sends
/// `turn/completed` (docs/peers/codex.md#missing-turncompleted; with `idle` the session would reconcile instead, see
/// `tests/codex_session.rs`): the watchdog ends the attempt as `timeout`, and since a tool ran it is
/// not safe to replay.
#[tokio::test]
async fn a_turn_that_never_completes_ends_as_timeout_and_replay_unsafe() {
    let source = std::fs::read_to_string(repo().join("fixtures/recordings/codex/command-approved.jsonl")).unwrap();
    let mut kept = Vec::new();
    for line in source.lines() {
        let goes_idle = line.contains("\"method\":\"thread/status/changed\"") && line.contains("\"type\":\"idle\"");
        if goes_idle || line.contains("\"method\":\"turn/completed\"") {
            break;
        }
        kept.push(line);
    }
    assert!(kept.len() < source.lines().count(), "the recording had a turn/completed to drop");
    let dir = tempfile::tempdir().unwrap();
    let hung = dir.path().join("hung.jsonl");
    std::fs::write(&hung, kept.join("\n") + "\n").unwrap();

    let observed = Arc::new(RecordingObserver::default());
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("replay-agent"));
    config.launcher_args = vec![hung.clone().into()];
    config.turn_idle_timeout = Duration::from_secs(2);
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = CodexSession::connect(config, hooks).await.unwrap();
    let options = ThreadOptions {
        cwd: Some("/replay/cwd".into()),
        approval_policy: Some(ApprovalPolicy::OnRequest),
        sandbox: Some(SandboxMode::ReadOnly),
        ..ThreadOptions::default()
    };
    let thread = session.start_thread(&options).await.unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(30),
        session.run_turn(
            &thread.thread_id,
            "Please run the live test command.",
            &mut |_| {},
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the watchdog fires; no hang")
    .unwrap();
    assert_eq!(result.terminal.kind, clawbridge_bridge::events::TerminalKind::Timeout, "{:?}", result.terminal);
    assert!(!result.replay.replay_safe, "a tool ran before the silence");
    assert_eq!(observed.reports().len(), 1, "the finished command was still reported");
    session.shutdown().await;
}
