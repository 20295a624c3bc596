//! The Claude session against the real `claude` 2.1.328 and the scripted mock model: permissions
//! through `can_use_tool`, tool terminals, interrupt, the warm process across turns, and the version
//! gate. Skipped with a printed reason when the peers are not installed (failed when required).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::claude::{ClaudeConfig, ClaudeError, ClaudeSession, Secret, SessionHooks};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::claude::{API_KEY, MARKER, bash_mock};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

struct Live {
    sandbox: Sandbox,
    mock: MockModel,
    claude: PathBuf,
}

async fn live(scenario: Value) -> Option<Live> {
    let claude = peer_or_skip("claude")?;
    let sandbox = Sandbox::new().expect("a sandbox");
    let mock = start_mock(&scenario).await.expect("the mock starts");
    Some(Live { sandbox, mock, claude })
}

impl Live {
    /// The same environment as the fixture driver (`fixtures/src/peers/claude.rs`), the key as a secret.
    fn config(&self) -> ClaudeConfig {
        let mut config = ClaudeConfig::new(&self.claude);
        config.env = self
            .sandbox
            .env()
            .with_var("ANTHROPIC_BASE_URL", self.mock.base_url())
            .with_var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        config.secret_env.push(("ANTHROPIC_API_KEY".into(), Secret::new(API_KEY)));
        config.cwd = Some(self.sandbox.work());
        config.turn_idle_timeout = Duration::from_secs(60);
        config.interrupt_grace = Duration::from_secs(10);
        config
    }

    async fn connect(&self, decision: ApprovalDecision, observed: Arc<RecordingObserver>) -> ClaudeSession {
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(decision)),
            tools: Arc::new(NoHostTools),
            observer: observed,
        };
        ClaudeSession::connect(self.config(), hooks).await.expect("the real claude passes the gate and handshake")
    }

    fn model_saw(&self, text: &str) -> bool {
        self.mock.model_requests().iter().any(|r| r.body.to_string().contains(text))
    }
}

async fn turn(session: &mut ClaudeSession, prompt: &str, cancel: &CancellationToken) -> (AttemptResult, Vec<Event>) {
    let mut events = Vec::new();
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(prompt, &mut |e: &Event| events.push(e.clone()), cancel),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs");
    (result, events)
}

#[tokio::test]
async fn an_allowed_bash_command_runs_and_the_model_sees_its_output() {
    let Some(live) = live(bash_mock()).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    assert_eq!(session.version().to_string(), "2.1.328");
    let (result, events) = turn(&mut session, "Please run the live test command.", &CancellationToken::new()).await;

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    assert!(result.native_session_id.is_some());
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "exactly one tool terminal: {reports:?}");
    assert_eq!(reports[0].tool_name, "bash");
    assert!(reports[0].execution_started);
    assert!(events.iter().any(|e| matches!(e, Event::ToolFinished(f) if f.outcome == ToolOutcome::Success)));
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);
    assert!(live.model_saw(MARKER), "the model saw the command's output");
    assert!(std::fs::read_to_string(live.sandbox.work().join("out.txt")).unwrap_or_default().contains(MARKER));
    let pid = session.pid().expect("a process") as i32;
    session.shutdown().await;
    assert!(!group_alive(pid), "no orphan");
}

#[tokio::test]
async fn a_denied_bash_command_never_starts_and_the_model_is_told() {
    let Some(live) = live(bash_mock()).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let why = "The host declined this tool call.";
    let mut session = live.connect(ApprovalDecision::Deny { message: Some(why.into()) }, observed.clone()).await;
    let (result, events) = turn(&mut session, "Please run the live test command.", &CancellationToken::new()).await;

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "a denial lets the turn go on: {:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert!(!reports[0].execution_started, "a denied command never started");
    assert!(
        events.iter().any(|e| matches!(e, Event::ToolFinished(f) if matches!(f.outcome, ToolOutcome::Declined { .. }))),
        "{events:?}"
    );
    assert!(live.model_saw(why), "the model saw the denial");
    assert!(!live.sandbox.work().join("out.txt").exists(), "the command did not run");
    session.shutdown().await;
}

#[tokio::test]
async fn an_interrupt_mid_turn_ends_aborted_without_orphans() {
    let slow = json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "Done."}},
        {"when": {"tool_offered": "Bash"},
         "reply": {"text": "Running a slow command.",
                   "run_command": {"command": "timeout 45 tail -f /dev/null; echo slow | tee slow.txt", "justification": "Wait"}}}
    ], "default": {"text": "Nothing to do."}});
    let Some(live) = live(slow).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed.clone()).await;
    let pid = session.pid().expect("a process") as i32;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut events = Vec::new();
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            "Please run the slow command.",
            &mut |e: &Event| {
                if matches!(e, Event::ToolStarted(_)) {
                    let trigger = trigger.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(3)).await;
                        trigger.cancel();
                    });
                }
                events.push(e.clone());
            },
            &cancel,
        ),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs");
    assert_eq!(result.terminal.kind, TerminalKind::Aborted, "{:?}\n{events:?}", result.terminal);
    assert!(started.elapsed() < Duration::from_secs(40), "the sleep did not run to its end");
    assert_eq!(observed.reports().len(), 1, "the interrupted call still gets its terminal");
    assert_eq!(session.pid(), Some(pid as u32), "the CLI ended the turn itself: the process stays warm");
    session.shutdown().await;
    assert!(!group_alive(pid), "no orphan");
    assert!(!live.sandbox.work().join("slow.txt").exists());
}

#[tokio::test]
async fn a_second_turn_reuses_the_warm_process() {
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let mut session = live.connect(ApprovalDecision::Allow, observed).await;
    let pid = session.pid();
    let (first, _) = turn(&mut session, "Say hello.", &CancellationToken::new()).await;
    let (second, _) = turn(&mut session, "Say hello again.", &CancellationToken::new()).await;
    assert_eq!(first.terminal.kind, TerminalKind::Ok, "{:?}", first.terminal);
    assert_eq!(second.terminal.kind, TerminalKind::Ok, "{:?}", second.terminal);
    assert_eq!(session.pid(), pid, "the same process ran both turns");
    assert_eq!(session.spawn_count(), 1);
    assert_eq!(first.native_session_id, second.native_session_id, "one native session");
    assert!(second.assistant_texts.iter().any(|t| t.contains("Hello from the mock model.")));
    // The second model request carries the first exchange: the session continued.
    let requests = live.mock.model_requests();
    assert!(requests.last().is_some_and(|r| r.body.to_string().contains("Say hello.")));
    let pid = pid.expect("a process") as i32;
    session.shutdown().await;
    assert!(!group_alive(pid));
}

#[tokio::test]
async fn an_old_cli_is_refused_before_anything_is_spawned() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("claude");
    let marker = dir.path().join("spawned");
    // Prints an old version; if it were ever run as a session it would leave a marker.
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.0.1 (Claude Code)'; exit 0; fi\ntouch '{}'\n",
        marker.display()
    );
    std::fs::write(&fake, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();

    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let Err(error) = ClaudeSession::connect(ClaudeConfig::new(&fake), hooks.clone()).await else {
        panic!("an old CLI must be refused");
    };
    assert!(matches!(error, ClaudeError::VersionRejected { .. }), "{error:?}");
    assert!(!error.is_retryable());
    assert!(error.to_string().contains("2.0.1"), "{error}");
    assert!(!marker.exists(), "nothing was spawned");

    // Garbage is refused too (fail closed).
    std::fs::write(&fake, "#!/bin/sh\necho 'claude version unknown'\n").unwrap();
    let Err(error) = ClaudeSession::connect(ClaudeConfig::new(&fake), hooks).await else {
        panic!("an unreadable version must be refused");
    };
    assert!(matches!(error, ClaudeError::VersionRejected { .. }), "{error:?}");
}

/// A scripted stand-in for the CLI (Python), for what the real one cannot be made to do on demand:
/// a line over 1 MiB, dying mid-turn, an in-band version that contradicts `--version`. It appends
/// its argv to `argv.log` next to itself. `None` (skip) when no Python is available.
fn fake_cli(dir: &std::path::Path, mode: &str) -> Option<PathBuf> {
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|p| !p.is_empty());
    let Some(python) = python else {
        eprintln!("skipped: no python3 for the fake CLI");
        return None;
    };
    let script = format!(
        r#"#!{python}
import json, os, sys
if "--version" in sys.argv:
    print("2.1.328 (Claude Code)")
    sys.exit(0)
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "argv.log"), "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
mode = "{mode}"
def out(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()
turns = 0
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "control_request" and message["request"].get("subtype") == "initialize":
        version = "2.1.400" if mode == "mismatch" else "2.1.328"
        out({{"type": "control_response", "response": {{"subtype": "success", "request_id": message["request_id"],
             "response": {{"claude_code_version": version}}}}}})
    elif message.get("type") == "user":
        turns += 1
        out({{"type": "system", "subtype": "init", "session_id": "s-1", "claude_code_version": "2.1.328"}})
        if mode == "die" and turns == 1 and "--resume" not in sys.argv:
            out({{"type": "assistant", "message": {{"id": "m0", "role": "assistant",
                 "content": [{{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {{"command": "x"}}}}]}}}})
            sys.stderr.write("fake crash\n")
            sys.exit(3)
        big = "x" * (2 * 1024 * 1024)
        out({{"type": "assistant", "session_id": "s-1", "message": {{"id": "m%d" % turns, "role": "assistant",
             "content": [{{"type": "text", "text": big}}]}}}})
        out({{"type": "result", "subtype": "success", "is_error": False, "session_id": "s-1", "result": big,
             "usage": {{"input_tokens": 1, "output_tokens": 2}}}})
"#
    );
    let path = dir.join("claude");
    std::fs::write(&path, script).ok()?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).ok()?;
    Some(path)
}

fn fake_hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

#[tokio::test]
async fn a_line_over_one_mib_passes_intact() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "big") else { return };
    let mut session = ClaudeSession::connect(ClaudeConfig::new(&fake), fake_hooks()).await.expect("connects");
    let (result, _) = turn(&mut session, "hi", &CancellationToken::new()).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    assert_eq!(result.assistant_texts.len(), 1);
    assert_eq!(result.assistant_texts[0].len(), 2 * 1024 * 1024);
    assert_eq!(result.native_session_id.as_deref(), Some("s-1"));
    session.shutdown().await;
}

#[tokio::test]
async fn a_dying_process_fails_the_turn_and_the_next_turn_resumes_in_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "die") else { return };
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks { observer: observed.clone(), ..fake_hooks() };
    let mut session = ClaudeSession::connect(ClaudeConfig::new(&fake), hooks).await.expect("connects");
    let (result, _) = turn(&mut session, "hi", &CancellationToken::new()).await;
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    let message = result.terminal.message.clone().unwrap_or_default();
    assert!(message.contains("fake crash"), "the stderr tail is in the message: {message}");
    assert_eq!(observed.reports().len(), 1, "the open tool still gets its terminal");
    assert!(observed.reports()[0].execution_started, "it may have run");

    let (again, _) = turn(&mut session, "hi again", &CancellationToken::new()).await;
    assert_eq!(again.terminal.kind, TerminalKind::Ok, "{:?}", again.terminal);
    assert_eq!(session.spawn_count(), 2);
    let argv = std::fs::read_to_string(dir.path().join("argv.log")).unwrap();
    let last: Vec<String> = serde_json::from_str(argv.lines().last().unwrap()).unwrap();
    assert!(last.windows(2).any(|w| w[0] == "--resume" && w[1] == "s-1"), "{last:?}");
    session.shutdown().await;
}

#[tokio::test]
async fn an_in_band_version_that_contradicts_the_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "mismatch") else { return };
    let Err(error) = ClaudeSession::connect(ClaudeConfig::new(&fake), fake_hooks()).await else {
        panic!("a mismatch must be refused");
    };
    assert!(matches!(error, ClaudeError::VersionMismatch { .. }), "{error:?}");
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn a_host_tool_is_served_over_sdk_mcp() {
    let scenario = json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The tool said:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "weather", "tool_offered": "mcp__openclaw__lookup_weather"},
         "reply": {"text": "Let me look that up.",
                   "tool_call": {"name": "mcp__openclaw__lookup_weather", "arguments": {"city": "Paris"}}}}
    ], "default": {"text": "No weather tool was offered."}});
    let Some(live) = live(scenario).await else { return };
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(clawbridge_fixtures::hooks::WeatherTool),
        observer: observed.clone(),
    };
    let mut session = ClaudeSession::connect(live.config(), hooks).await.expect("connects");
    let (result, _) = turn(&mut session, "What is the weather in Paris?", &CancellationToken::new()).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].tool_name, "lookup_weather", "a host tool keeps its bare name");
    assert!(reports[0].execution_started);
    assert!(
        result.assistant_texts.iter().any(|t| t.contains("lookup_weather answered")),
        "{:?}",
        result.assistant_texts
    );
    session.shutdown().await;
}
