//! Every recorded Claude Code fixture, replayed through the real `ClaudeSession` (the replay agent
//! stands in for the CLI, `--version` included): the transcript it mirrors, the tool terminals it
//! reports and the attempt result must match the checked-in golden files
//! (`fixtures/golden/claude/<scenario>.json`). `CLAWBRIDGE_UPDATE_GOLDEN=1` rewrites them.
//!
//! What the client does in each scenario (prompt, permission answer, resume) comes from the same
//! script the fixtures were recorded with (`clawbridge_fixtures::peers::claude::scenarios`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::claude::resume::project_dir_name;
use clawbridge_adapters::claude::{ClaudeConfig, ClaudeSession, SessionHooks};
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::binding::InvalidationReason;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_fixtures::golden::{self, GoldenTranscript};
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::peers::claude::{ClaudeScript, Permission, scenarios};
use clawbridge_fixtures::recording::{Direction, Recording};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The recorded client's script for `scenario`.
fn script(scenario: &str) -> ClaudeScript {
    scenarios()
        .into_iter()
        .find(|(name, _)| *name == scenario)
        .map(|(_, script)| script)
        .unwrap_or_else(|| panic!("{scenario} is not a scenario of peers::claude::scenarios()"))
}

/// The session id the recorded process used (what a resume of it names).
fn recorded_session_id(fixture: &Path) -> String {
    let recording = Recording::load(fixture).expect("a readable recording");
    recording
        .entries
        .iter()
        .filter(|e| e.dir == Direction::FromAgent)
        .filter_map(|e| e.json.as_ref()?.get("session_id")?.as_str().filter(|id| !id.is_empty()).map(str::to_owned))
        .next()
        .expect("the recording names its session")
}

/// A private HOME and working directory for one replay; with `session`, the CLI's session file of
/// that id exists there, as it would after an earlier turn.
struct Place {
    /// Owns the directories.
    _root: tempfile::TempDir,
    /// The replayed CLI's working directory.
    cwd: std::path::PathBuf,
    /// Its HOME.
    home: std::path::PathBuf,
}

impl Place {
    fn new(session: Option<&str>) -> Place {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("work");
        let home = root.path().join("home");
        std::fs::create_dir_all(&cwd).unwrap();
        if let Some(id) = session {
            let project = home.join(".claude/projects").join(project_dir_name(&std::fs::canonicalize(&cwd).unwrap()));
            std::fs::create_dir_all(&project).unwrap();
            std::fs::write(project.join(format!("{id}.jsonl")), "{}\n").unwrap();
        }
        Place { _root: root, cwd, home }
    }

    fn config(&self, fixture: &Path, resume: Option<String>) -> ClaudeConfig {
        let mut config = ClaudeConfig::new(clawbridge_fixtures::fixture_bin("replay-agent"));
        config.launcher_args = vec![fixture.into()];
        config.cwd = Some(self.cwd.clone());
        config.env = config.env.clone().with_var("HOME", &self.home);
        config.resume = resume;
        config.stop.after_stdin_close = Duration::from_secs(2);
        config
    }
}

/// Replays one fixture through the session; returns the golden document.
async fn replay(fixture: &Path, scenario: &str) -> Value {
    let script = script(scenario);
    let decision = match &script.permission {
        Permission::Allow => ApprovalDecision::Allow,
        Permission::Deny(message) => ApprovalDecision::Deny { message: Some(message.clone()) },
    };
    let resume = script.resume_after.is_some().then(|| recorded_session_id(fixture));
    let place = Place::new(resume.as_deref());
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = ClaudeSession::connect(place.config(fixture, resume.clone()), hooks)
        .await
        .unwrap_or_else(|e| panic!("{scenario}: the recorded CLI passes the gate and handshake: {e}"));
    assert_eq!(session.resume_failure(), None, "{scenario}: the session file exists, so it resumes");
    let mut transcript = GoldenTranscript::new(script.prompt.clone());
    let result = session
        .run_turn(&script.prompt, &mut |event: &Event| transcript.on_event(event), &CancellationToken::new())
        .await
        .expect("the replayed turn runs");
    if let Some(id) = &resume {
        assert_eq!(result.native_session_id.as_ref(), Some(id), "{scenario}: the resumed session keeps its id");
    }
    assert_eq!(session.spawn_count(), 1);
    let outcome = session.shutdown().await.expect("the process was running");
    assert_eq!(
        outcome.exit.map(clawbridge_bridge::exit::ExitState::success),
        Some(true),
        "{scenario}: the replay agent saw the recorded client lines"
    );
    golden::document(&transcript, observed.reports(), result)
}

#[tokio::test]
async fn every_claude_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let fixtures = golden::recorded_fixtures("claude");
    assert_eq!(fixtures.len(), scenarios().len(), "every Claude scenario is recorded: {fixtures:?}");
    let mut documents = Vec::new();
    for fixture in &fixtures {
        let scenario = golden::scenario_of(fixture);
        documents.push((scenario.clone(), replay(fixture, &scenario).await));
    }
    let failures = golden::check("claude", &documents);
    assert!(failures.is_empty(), "{failures:#?}\n(re-create with CLAWBRIDGE_UPDATE_GOLDEN=1 after checking the diff)");
}

/// The goldens say what the issue asks of each scenario, so a rewrite cannot quietly accept a
/// regression: a denied call never started, an allowed one did, every call has its terminal.
#[test]
fn the_golden_files_hold_the_expected_tool_terminals() {
    let golden = |scenario: &str| -> Value {
        let path = clawbridge_fixtures::peers::repo_root().join(format!("fixtures/golden/claude/{scenario}.json"));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
            .unwrap()
    };
    let allowed = golden("bash-allowed");
    let terminals = allowed["toolTerminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 1, "{terminals:?}");
    assert_eq!(terminals[0]["toolName"], "bash");
    assert_eq!(terminals[0]["executionStarted"], true);
    let denied = golden("bash-denied");
    let terminals = denied["toolTerminals"].as_array().unwrap();
    assert_eq!(terminals.len(), 1, "{terminals:?}");
    assert_eq!(terminals[0]["executionStarted"], false, "a denied call never started");
    let text = denied["transcript"].to_string();
    assert!(text.contains("The user declined this tool call."), "the denial reached the transcript");
    for scenario in ["plain-text", "thinking-text", "partial-messages", "resume"] {
        assert_eq!(golden(scenario)["toolTerminals"], serde_json::json!([]), "{scenario}");
    }
    for scenario in ["bash-allowed", "bash-denied", "plain-text", "thinking-text", "partial-messages", "resume"] {
        assert_eq!(golden(scenario)["result"]["terminal"]["kind"], "ok", "{scenario}");
    }
    assert!(golden("thinking-text")["transcript"].to_string().contains("thinking"), "the thinking block is kept");
}

/// A binding whose CLI session file is gone is not resumed: the session starts fresh (no
/// `--resume`) and says why. The recording still plays, since the replay ignores the arguments.
#[tokio::test]
async fn a_resume_whose_session_file_is_gone_starts_fresh_and_names_why() {
    let fixture = clawbridge_fixtures::peers::repo_root().join("fixtures/recordings/claude/resume.jsonl");
    let id = recorded_session_id(&fixture);
    let place = Place::new(None);
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(RecordingObserver::default()),
    };
    let mut session = ClaudeSession::connect(place.config(&fixture, Some(id.clone())), hooks).await.unwrap();
    match session.resume_failure() {
        Some(InvalidationReason::NativeSessionMissing { id: missing, location }) => {
            assert_eq!(missing, &id);
            assert!(location.contains(".claude/projects/"), "{location}");
        }
        other => panic!("expected a missing session file, got {other:?}"),
    }
    assert_eq!(session.session_id(), None, "the stale id is dropped");
    let result = session.run_turn("Say hello again.", &mut |_| {}, &CancellationToken::new()).await.unwrap();
    assert_eq!(result.terminal.kind, TerminalKind::Ok);
    session.shutdown().await;
}
