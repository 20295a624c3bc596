//! The Codex session's handshake and version gate, against the fake agent speaking the Codex
//! dialect with a chosen userAgent; and its recovery from server faults (a lost `turn/completed`, an
//! overloaded server), replayed from recordings derived from a real one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexError, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_protocol::codex::policy::{ApprovalPolicy, SandboxMode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn config(user_agent: &str) -> CodexConfig {
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("fake-agent"));
    // The fake agent takes its flags after the `app-server` subcommand the config adds.
    config.config_overrides = Vec::new();
    config.handshake_timeout = Duration::from_secs(20);
    config.stop.after_stdin_close = Duration::from_secs(2);
    config.env = config.env.with_var("FAKE_AGENT_USER_AGENT", user_agent).with_var("FAKE_AGENT_DIALECT", "codex");
    config
}

fn hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

async fn connect(user_agent: &str) -> Result<CodexSession, CodexError> {
    CodexSession::connect(config(user_agent), hooks()).await
}

#[tokio::test]
async fn old_unversioned_and_prerelease_servers_are_refused_and_stopped() {
    for user_agent in [
        "codex_cli_rs/0.100.0 (linux; test)",
        "missing-version",
        "Codex Desktop/0.124",
        "clawbridge/0.149.0-alpha.1 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)",
    ] {
        let error = connect(user_agent).await.err().unwrap_or_else(|| panic!("{user_agent} was accepted"));
        assert!(matches!(error, CodexError::VersionRejected { .. }), "{user_agent}: {error}");
        assert!(!error.is_retryable());
        let message = error.to_string();
        assert!(message.contains("0.149.0"), "names the required version: {message}");
        assert_eq!(running_with_user_agent(user_agent), Vec::<i32>::new(), "the refused server was stopped");
    }
}

#[tokio::test]
async fn the_floor_and_newer_than_tested_servers_are_accepted() {
    for (user_agent, version) in [
        ("clawbridge/0.149.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)", "0.149.0"),
        ("Codex Desktop/0.170.0 (Mac OS 15; arm64) xterm (clawbridge; 0.1.0)", "0.170.0"),
    ] {
        let session = connect(user_agent).await.unwrap_or_else(|e| panic!("{user_agent} refused: {e}"));
        assert_eq!(session.server_version().to_string(), version);
        let pid = session.pid().expect("spawned") as i32;
        assert_eq!(running_with_user_agent(user_agent), vec![pid], "the probe finds a live server");
        session.shutdown().await;
        assert_eq!(running_with_user_agent(user_agent), Vec::<i32>::new());
        assert!(!group_alive(pid));
    }
}

/// Live fake agents started with this userAgent (each test case uses its own).
fn running_with_user_agent(user_agent: &str) -> Vec<i32> {
    clawbridge_fixtures::peers::processes_with_env(&format!("FAKE_AGENT_USER_AGENT={user_agent}\0"))
}

/// The recorded plain-text turn, changed by `edit` (which sees every recorded line as JSON) and written
/// to a temp file for the replay agent. Derived at test time, so a re-recording updates these too.
fn derived_recording(dir: &tempfile::TempDir, mut edit: impl FnMut(Value) -> Vec<Value>) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recordings/codex/plain-text.jsonl");
    let text = std::fs::read_to_string(source).expect("the plain-text recording is checked in");
    let mut lines = text.lines();
    let mut out = vec![lines.next().expect("a header").to_string()];
    for line in lines {
        for entry in edit(serde_json::from_str(line).expect("a recorded line is JSON")) {
            out.push(entry.to_string());
        }
    }
    let path = dir.path().join("derived.jsonl");
    std::fs::write(&path, out.join("\n") + "\n").unwrap();
    path
}

fn method_of(entry: &Value) -> Option<&str> {
    entry["json"]["method"].as_str()
}

async fn replayed_turn(recording: &Path, adjust: impl FnOnce(&mut CodexConfig)) -> AttemptResult {
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("replay-agent"));
    config.launcher_args = vec![recording.into()];
    config.stop.after_stdin_close = Duration::from_secs(2);
    adjust(&mut config);
    let mut session = CodexSession::connect(config, hooks()).await.expect("the recorded server passes the gate");
    let options = ThreadOptions {
        cwd: Some("/replay/cwd".into()),
        approval_policy: Some(ApprovalPolicy::OnRequest),
        sandbox: Some(SandboxMode::ReadOnly),
        ..ThreadOptions::default()
    };
    let thread = session.start_thread(&options).await.expect("thread/start");
    let result = session
        .run_turn(&thread.thread_id, "Say hello.", &mut |_: &Event| {}, &CancellationToken::new())
        .await
        .expect("the turn runs");
    let outcome = session.shutdown().await.expect("the session had its own app-server");
    assert_eq!(
        outcome.exit.map(clawbridge_bridge::exit::ExitState::success),
        Some(true),
        "the replay agent saw every recorded client line"
    );
    result
}

#[tokio::test]
async fn a_turn_whose_turn_completed_never_comes_is_reconciled_from_the_turn_list() {
    let dir = tempfile::tempdir().unwrap();
    // The server goes idle and never sends turn/completed; asked, it lists the turn as completed.
    let recording = derived_recording(&dir, |entry| match method_of(&entry) {
        Some("turn/completed") => {
            let turn = entry["json"]["params"]["turn"].clone();
            vec![
                json!({"dir": "to_agent", "json": {"id": 90, "method": "thread/turns/list",
                       "params": {"threadId": "<uuid-2>", "limit": 5}}}),
                json!({"dir": "from_agent", "json": {"id": 90, "result": {"data": [turn], "nextCursor": null}}}),
            ]
        }
        _ => vec![entry],
    });
    let result = replayed_turn(&recording, |config| {
        config.reconcile_after_idle = Duration::from_millis(200);
        // Long enough that only the reconcile can end the turn as ok.
        config.turn_idle_timeout = Duration::from_secs(60);
    })
    .await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{result:?}");
    assert_eq!(result.assistant_texts, vec!["Hello from the mock model.".to_string()]);
}

#[tokio::test]
async fn an_overloaded_turn_start_is_retried_after_a_backoff() {
    let dir = tempfile::tempdir().unwrap();
    // turn/start (recorded id 3) is refused as overloaded once; the retry (id 4) gets the real answer.
    let recording = derived_recording(&dir, |entry| {
        if method_of(&entry) == Some("turn/start") {
            let mut retry = entry.clone();
            retry["json"]["id"] = json!(4);
            return vec![
                entry,
                json!({"dir": "from_agent", "json": {"id": 3, "error": {"code": -32001,
                       "message": "Server overloaded; retry later."}}}),
                retry,
            ];
        }
        if entry["dir"] == "from_agent" && entry["json"]["id"] == json!(3) && entry["json"].get("result").is_some() {
            let mut answer = entry.clone();
            answer["json"]["id"] = json!(4);
            return vec![answer];
        }
        vec![entry]
    });
    let result = replayed_turn(&recording, |_| {}).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{result:?}");
    assert_eq!(result.assistant_texts, vec!["Hello from the mock model.".to_string()]);

    // Without retries the refusal ends the turn as failed, naming the overload; the recording ends there.
    let mut refused = false;
    let recording = derived_recording(&dir, |entry| {
        if refused {
            return vec![];
        }
        if method_of(&entry) == Some("turn/start") {
            refused = true;
            return vec![
                entry,
                json!({"dir": "from_agent", "json": {"id": 3, "error": {"code": -32001,
                       "message": "Server overloaded; retry later."}}}),
            ];
        }
        vec![entry]
    });
    let result = replayed_turn(&recording, |config| config.overload_retry.retries = 0).await;
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{result:?}");
    let message = result.terminal.message.unwrap_or_default();
    assert!(message.contains("overloaded"), "{message}");
}
