//! The Codex session against the real `codex app-server` 0.169.0 and the scripted mock model:
//! approvals, tool terminals, the attempt result, and resuming a thread in a new process.
//! Skipped with a printed reason when the peers are not installed (failed when they are required).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_fixtures::hooks::{RecordingObserver, WeatherTool};
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Live {
    sandbox: Sandbox,
    mock: MockModel,
    codex: PathBuf,
}

async fn live(scenario: serde_json::Value) -> Option<Live> {
    let codex = peer_or_skip("codex")?;
    let sandbox = Sandbox::new().expect("a sandbox");
    let mock = start_mock(&scenario).await.expect("the mock starts");
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    Some(Live { sandbox, mock, codex })
}

impl Live {
    async fn connect(&self, decision: ApprovalDecision, observed: Arc<RecordingObserver>) -> CodexSession {
        let mut config = CodexConfig::new(&self.codex);
        config.codex_home = Some(self.sandbox.codex_home());
        config.env = self.sandbox.env();
        config.cwd = Some(self.sandbox.work());
        config.turn_idle_timeout = Duration::from_secs(60);
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(decision)),
            tools: Arc::new(NoHostTools),
            observer: observed,
        };
        CodexSession::connect(config, hooks).await.expect("the real codex passes the version gate")
    }

    fn options(&self) -> ThreadOptions {
        ThreadOptions { cwd: Some(self.sandbox.work().display().to_string()), ..ThreadOptions::default() }
    }
}

async fn turn(session: &mut CodexSession, thread: &str, prompt: &str) -> (AttemptResult, Vec<Event>) {
    let mut events = Vec::new();
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(thread, prompt, &mut |e: &Event| events.push(e.clone()), &CancellationToken::new()),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs");
    (result, events)
}

#[tokio::test]
async fn an_approved_command_runs_and_its_terminal_is_reported_once() {
    let Some(live) = live(command_mock(true)).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    assert_eq!(session.server_version().to_string(), "0.169.0");
    let thread = session.start_thread(&live.options()).await.unwrap();
    let (result, events) = turn(&mut session, &thread.thread_id, "Please run the live test command.").await;

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    assert_eq!(result.native_session_id.as_deref(), Some(thread.thread_id.as_str()));
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].tool_name, "bash");
    assert!(reports[0].execution_started);
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);
    assert!(!result.replay.replay_safe && result.replay.had_potential_side_effects);
    assert!(events.iter().any(|e| matches!(e, Event::ToolFinished(f) if f.outcome == ToolOutcome::Success)));
    let pid = session.pid().expect("spawned") as i32;
    session.shutdown().await;
    assert!(!group_alive(pid), "no orphan");
}

#[tokio::test]
async fn a_declined_command_never_starts_and_the_model_is_told() {
    let Some(live) = live(command_mock(true)).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Deny { message: None }, observed.clone()).await;
    let thread = session.start_thread(&live.options()).await.unwrap();
    let (result, _) = turn(&mut session, &thread.thread_id, "Please run the live test command.").await;

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "decline lets the turn go on");
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(!reports[0].execution_started, "a declined command never started");
    let rejection_reached_model = live
        .mock
        .model_requests()
        .iter()
        .any(|r| r.body.to_string().contains("function_call_output") && r.body.to_string().contains("rejected"));
    assert!(rejection_reached_model, "the model saw the rejection");
    session.shutdown().await;
}

#[tokio::test]
async fn an_aborted_approval_interrupts_the_turn() {
    let Some(live) = live(command_mock(true)).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Abort, observed.clone()).await;
    let thread = session.start_thread(&live.options()).await.unwrap();
    let (result, _) = turn(&mut session, &thread.thread_id, "Please run the live test command.").await;
    assert_eq!(result.terminal.kind, TerminalKind::Aborted, "{:?}", result.terminal);
    assert_eq!(observed.reports().len(), 1, "the cancelled call still gets its terminal");
    session.shutdown().await;
}

#[tokio::test]
async fn a_new_process_resumes_the_same_thread() {
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut first = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    let thread = first.start_thread(&live.options()).await.unwrap();
    turn(&mut first, &thread.thread_id, "Say hello.").await;
    first.shutdown().await;

    let mut second = live.connect(ApprovalDecision::Allow, observed).await;
    let resumed = second.resume_or_start(&thread.thread_id, &live.options()).await.unwrap();
    assert_eq!(resumed.resume_failure, None);
    assert!(resumed.resumed);
    assert_eq!(resumed.thread_id, thread.thread_id, "the same Codex thread");
    let (result, _) = turn(&mut second, &resumed.thread_id, "Say hello again.").await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok);
    second.shutdown().await;

    let mut third = live.connect(ApprovalDecision::Allow, Arc::new(RecordingObserver::default())).await;
    let fresh = third.resume_or_start("019a0000-0000-7000-8000-000000000000", &live.options()).await.unwrap();
    assert!(!fresh.resumed);
    assert!(fresh.resume_failure.is_some(), "a failed resume is reported, never silent");
    third.shutdown().await;
}

/// The prompt of the demo recording; replaced by a placeholder so the demo accepts any prompt.
const DEMO_PROMPT: &str = "Please run the live test command.";

/// Runs the demo scenario through `record-proxy` with the Codex session as the client, and returns
/// the normalised recording (prompt replaced by `<prompt>`).
async fn record_demo(live: &Live, out: &std::path::Path) -> String {
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("record-proxy"));
    let mut launcher: Vec<std::ffi::OsString> = vec![
        "--out".into(),
        out.into(),
        "--backend".into(),
        "codex".into(),
        "--peer-version".into(),
        "0.169.0".into(),
        "--scenario".into(),
        "demo".into(),
    ];
    for (value, name) in live.sandbox.all_literals() {
        launcher.push("--literal".into());
        launcher.push(format!("{value}={name}").into());
    }
    launcher.push("--".into());
    launcher.push(live.codex.clone().into());
    config.launcher_args = launcher;
    config.codex_home = Some(live.sandbox.codex_home());
    config.env = live.sandbox.env();
    config.cwd = Some(live.sandbox.work());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(RecordingObserver::default()),
    };
    let mut session = CodexSession::connect(config, hooks).await.expect("codex behind the recorder");
    let thread = session.start_thread(&live.options()).await.unwrap();
    let (result, _) = turn(&mut session, &thread.thread_id, DEMO_PROMPT).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok);
    session.shutdown().await;
    let text = std::fs::read_to_string(out).expect("the recorder wrote its file");
    text.replace(&format!("\"text\":\"{DEMO_PROMPT}\""), "\"text\":\"<prompt>\"")
}

/// The demo backend's bundled recording, checked against the real peer. With
/// `CLAWBRIDGE_RECORD_FIXTURES=1` it is re-recorded instead.
#[tokio::test]
async fn the_demo_recording_matches_the_real_codex() {
    let Some(live) = live(command_mock(true)).await else { return };
    let checked_in = clawbridge_fixtures::peers::repo_root().join("fixtures/recordings/demo/codex-demo.jsonl");
    let record = std::env::var_os("CLAWBRIDGE_RECORD_FIXTURES").is_some();
    let expected = if record { None } else { Some(std::fs::read_to_string(&checked_in).expect("checked in")) };
    // Under CPU load codex 0.169 may split a fast command's output into an extra delta; a real
    // change differs on every attempt, a race does not (the fixture tests use the same rule).
    let mut last = String::new();
    for _attempt in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let fresh = record_demo(&live, &dir.path().join("codex-demo.jsonl")).await;
        if record {
            std::fs::create_dir_all(checked_in.parent().unwrap()).unwrap();
            std::fs::write(&checked_in, &fresh).unwrap();
            std::fs::copy(dir.path().join("codex-demo.jsonl.timing"), checked_in.with_extension("jsonl.timing"))
                .unwrap();
            eprintln!("re-recorded {}", checked_in.display());
            return;
        }
        if expected.as_deref().is_some_and(|expected| same_per_direction(expected, &fresh)) {
            return;
        }
        last = fresh;
    }
    let expected = expected.unwrap_or_default();
    panic!("the real codex no longer matches {}:\n{}", checked_in.display(), first_difference(&expected, &last));
}

/// Whether both recordings have the same client lines in order and the same server lines in order.
/// How the two directions interleave depends on scheduling (codex sends connection notifications
/// while our `initialized` is in flight), so it is not compared; the replay accepts either order.
fn same_per_direction(expected: &str, actual: &str) -> bool {
    let split = |text: &str| -> (Vec<String>, Vec<String>) {
        text.lines().map(str::to_string).partition(|line| line.starts_with("{\"dir\":\"to_agent\""))
    };
    split(expected) == split(actual)
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  checked in: {e}\n  recorded:   {a}", i + 1);
        }
    }
    format!("{} lines checked in, {} recorded", expected.lines().count(), actual.lines().count())
}

#[tokio::test]
async fn a_dynamic_tool_is_run_by_the_host_executor_and_its_result_reaches_the_model() {
    let scenario = json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The tool said:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "weather", "tool_offered": "lookup_weather"},
         "reply": {"tool_call": {"name": "lookup_weather", "arguments": {"city": "Paris"}}}}
    ]});
    let Some(live) = live(scenario).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut config = CodexConfig::new(&live.codex);
    config.codex_home = Some(live.sandbox.codex_home());
    config.env = live.sandbox.env();
    config.cwd = Some(live.sandbox.work());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(WeatherTool),
        observer: observed.clone(),
    };
    let mut session = CodexSession::connect(config, hooks).await.unwrap();
    let thread = session.start_thread(&live.options()).await.unwrap();
    let (result, _) = turn(&mut session, &thread.thread_id, "What is the weather in Paris?").await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].tool_name, "lookup_weather");
    assert!(reports[0].execution_started);
    assert!(
        live.mock.model_requests().iter().any(|r| r.body.to_string().contains("lookup_weather answered for")),
        "the host tool's output reached the model"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn an_app_server_killed_mid_turn_fails_the_attempt_without_a_hang_or_an_orphan() {
    let scenario = json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "done"}},
        {"when": {"last_user_text_contains": "run"},
         "reply": {"run_command": {"command": "sleep 30", "escalated": true, "justification": "wait"}}}
    ]});
    let Some(live) = live(scenario).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    let thread = session.start_thread(&live.options()).await.unwrap();
    let pgid = session.pid().expect("spawned") as i32;
    let mut events = Vec::new();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &thread.thread_id,
            "Please run the slow command.",
            &mut |e: &Event| {
                if matches!(e, Event::ToolStarted(_)) {
                    // The server dies while its command runs.
                    let _ =
                        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
                }
                events.push(e.clone());
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("no hang")
    .expect("the attempt ends with a result");
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    assert!(!result.replay.replay_safe, "a tool had started");
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "the interrupted tool still gets its terminal: {reports:?}");
    assert_eq!(reports[0].outcome, clawbridge_bridge::attempt::hooks::TerminalOutcome::Failure);
    assert!(reports[0].execution_started, "conservatively started");
    session.shutdown().await;
    assert!(!group_alive(pgid), "no orphan of the killed server survives");

    // The transcript mirror closes the call with a failed result.
    let mut mirror = clawbridge_bridge::transcript::TranscriptMirror::new(
        "test",
        "turn",
        clawbridge_bridge::transcript::ModelLabel::default(),
    );
    let messages: Vec<_> = events.iter().flat_map(|e| mirror.on_event(e)).collect();
    let failed_result = messages.iter().any(|m| {
        let v = serde_json::to_value(m).unwrap();
        v["role"] == "toolResult" && v["isError"] == true
    });
    assert!(failed_result, "{messages:?}");
}

/// A scenario whose command runs for `seconds`, then a short answer.
fn slow_command(seconds: u32) -> serde_json::Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "done"}},
        {"when": {"last_user_text_contains": "run"},
         "reply": {"run_command": {"command": format!("sleep {seconds}"), "escalated": true, "justification": "wait"}}}
    ]})
}

#[tokio::test]
async fn cancelling_interrupts_a_running_turn() {
    let Some(live) = live(slow_command(30)).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    let thread = session.start_thread(&live.options()).await.unwrap();
    let cancel = CancellationToken::new();
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &thread.thread_id,
            "Please run the slow command.",
            &mut |e: &Event| {
                if matches!(e, Event::ToolStarted(_)) {
                    cancel.cancel();
                }
            },
            &cancel,
        ),
    )
    .await
    .expect("no hang")
    .unwrap();
    assert_eq!(result.terminal.kind, TerminalKind::Aborted, "{:?}", result.terminal);
    assert!(started.elapsed() < Duration::from_secs(25), "the 30 s command did not have to finish");
    assert_eq!(observed.reports().len(), 1, "the interrupted command still gets its terminal");
    let pid = session.pid().expect("spawned") as i32;
    session.shutdown().await;
    assert!(!group_alive(pid), "the interrupted command is gone with its server");
}

#[tokio::test]
async fn steering_adds_input_to_the_running_turn() {
    let Some(live) = live(slow_command(2)).await else { return };
    let mut session = live.connect(ApprovalDecision::Allow, Arc::new(RecordingObserver::default())).await;
    let thread = session.start_thread(&live.options()).await.unwrap();
    let steering = session.steering();
    let steered = Arc::new(Mutex::new(None));
    let (thread_id, mut turn) = (thread.thread_id.clone(), String::new());
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &thread.thread_id,
            "Please run the slow command.",
            &mut |e: &Event| match e {
                Event::TurnStarted { turn_id } => turn = turn_id.clone(),
                // The command runs for 2 s: the turn is surely active.
                Event::ToolStarted(_) => {
                    let (steering, thread_id, turn_id, steered) =
                        (steering.clone(), thread_id.clone(), turn.clone(), steered.clone());
                    tokio::spawn(async move {
                        let answer = steering.steer(&thread_id, &turn_id, "also mention steered-input-77").await;
                        *steered.lock().unwrap() = Some(answer.map(|id| id == turn_id).map_err(|e| e.to_string()));
                    });
                }
                _ => {}
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("no hang")
    .unwrap();
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    assert_eq!(*steered.lock().unwrap(), Some(Ok(true)), "codex took the input into the running turn");
    assert!(
        live.mock.model_requests().iter().any(|r| r.body.to_string().contains("steered-input-77")),
        "the steered input reached the model"
    );
    session.shutdown().await;
}

/// A thread whose config sets `project_doc_max_bytes = 0` (what a lightweight turn asks for) sends
/// the model none of the working directory's AGENTS.md; a thread without it does (the control).
#[tokio::test]
async fn a_thread_with_no_project_doc_budget_sends_the_model_no_agents_md() {
    const AGENTS_MARKER: &str = "agents-marker-6c02: keep the log tidy";
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    std::fs::write(live.sandbox.work().join("AGENTS.md"), format!("# Agents\n\n{AGENTS_MARKER}\n")).unwrap();
    let mut session = live.connect(ApprovalDecision::Allow, Arc::new(RecordingObserver::default())).await;
    for skip in [false, true] {
        let mut options = live.options();
        if skip {
            let config = json!({"project_doc_max_bytes": 0});
            options.config = config.as_object().cloned();
        }
        let thread = session.start_thread(&options).await.unwrap();
        let prompt = format!("Say hello (skip: {skip}).");
        let (result, _) = turn(&mut session, &thread.thread_id, &prompt).await;
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
        let requests = live.mock.model_bodies_with(&prompt);
        assert!(!requests.is_empty(), "the turn asked the model");
        let saw = requests.iter().any(|body| body.contains(AGENTS_MARKER));
        assert_eq!(saw, !skip, "AGENTS.md reached the model iff not skipped (skip: {skip}): {requests:?}");
    }
    session.shutdown().await;
}
