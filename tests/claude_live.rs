//! The Claude session against the real `claude` 2.1.328 and the scripted mock model: permissions
//! through `can_use_tool`, tool terminals, interrupt, the warm process across turns, and the version
//! gate. Skipped with a printed reason when the peers are not installed (failed when required).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::claude::{ClaudeConfig, ClaudeError, ClaudeSession, Secret, SessionHooks};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::binding::{Binding, InvalidationReason, sidecar_path};
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
    // Stopped while running, not refused: it may have run, so a host must not replay it blindly.
    assert!(observed.reports()[0].execution_started, "{:?}", observed.reports());
    assert!(result.replay.had_potential_side_effects && !result.replay.replay_safe, "{:?}", result.replay);
    assert_eq!(session.pid(), Some(pid as u32), "the CLI ended the turn itself: the process stays warm");
    session.shutdown().await;
    assert!(!group_alive(pid), "no orphan");
    assert!(!live.sandbox.work().join("slow.txt").exists());
}

/// A lightweight turn's CLI reads none of the working directory's instruction files; an ordinary
/// one reads them (the control: each marker can reach the model in this sandbox).
#[tokio::test]
async fn a_cli_told_to_skip_project_docs_sends_the_model_neither_agents_md_nor_claude_md() {
    const AGENTS_MARKER: &str = "agents-marker-3d17: keep the log tidy";
    const CLAUDE_MARKER: &str = "claude-marker-b4e0: speak in haiku";
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    // AGENTS.md is read where a project has no CLAUDE.md of its own, so each file has its own dir.
    let agents_dir = live.sandbox.work().join("agents");
    let claude_dir = live.sandbox.work().join("claude");
    for (dir, file, marker) in [(&agents_dir, "AGENTS.md", AGENTS_MARKER), (&claude_dir, "CLAUDE.md", CLAUDE_MARKER)] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(file), format!("# Instructions\n\n{marker}\n")).unwrap();
    }
    let hooks = || SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let cancel = CancellationToken::new();
    for (dir, marker) in [(&agents_dir, AGENTS_MARKER), (&claude_dir, CLAUDE_MARKER)] {
        for skip in [false, true] {
            let mut config = live.config();
            config.skip_project_docs = skip;
            config.cwd = Some(dir.clone());
            let mut session = ClaudeSession::connect(config, hooks()).await.expect("the real claude starts");
            let prompt = format!("Say hello ({}, skip: {skip}).", dir.display());
            let (result, _) = turn(&mut session, &prompt, &cancel).await;
            assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
            session.shutdown().await;
            let requests = live.mock.model_bodies_with(&prompt);
            assert!(!requests.is_empty(), "the turn asked the model");
            let saw = requests.iter().any(|body| body.contains(marker));
            assert_eq!(saw, !skip, "{marker:?} reached the model iff not skipped (skip: {skip}): {requests:?}");
        }
    }
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
    std::fs::set_permissions(&fake, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .unwrap();

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
/// its argv to `argv.log` next to itself and, like the CLI, writes its session file (session `s-1`)
/// under `$HOME/.claude/projects/<cwd slug>/` when a turn starts — except in the `nofile` modes.
/// Run it with [`fake_config`]. `None` (skip) when no Python is available.
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
import json, os, re, sys
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
        if "nofile" not in mode:
            project = os.path.join(os.environ["HOME"], ".claude", "projects",
                                   re.sub("[^a-zA-Z0-9]", "-", os.path.realpath(os.getcwd())))
            os.makedirs(project, exist_ok=True)
            open(os.path.join(project, "s-1.jsonl"), "a").close()
        out({{"type": "system", "subtype": "init", "session_id": "s-1", "claude_code_version": "2.1.328"}})
        if mode.startswith("die") and turns == 1 and "--resume" not in sys.argv:
            out({{"type": "assistant", "message": {{"id": "m0", "role": "assistant",
                 "content": [{{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {{"command": "x"}}}}]}}}})
            sys.stderr.write("fake crash\n")
            if "grandchild" in mode:
                import subprocess
                subprocess.Popen(["sleep", "600"])  # inherits stdout and holds it open
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
    std::fs::set_permissions(&path, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .ok()?;
    Some(path)
}

/// The fake CLI's config: its directory as HOME and working directory (never the real HOME).
fn fake_config(dir: &std::path::Path, fake: &std::path::Path) -> ClaudeConfig {
    let mut config = ClaudeConfig::new(fake);
    config.env = config.env.clone().with_var("HOME", dir);
    config.cwd = Some(dir.to_path_buf());
    config
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
    let mut session = ClaudeSession::connect(fake_config(dir.path(), &fake), fake_hooks()).await.expect("connects");
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
    let mut session = ClaudeSession::connect(fake_config(dir.path(), &fake), hooks).await.expect("connects");
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
    assert_eq!(session.resume_failure(), None);
    session.shutdown().await;
}

/// The same crash while a grandchild (a background job) still holds the CLI's stdout: EOF never comes,
/// yet the turn fails with the crash, not at the idle watchdog (fault matrix: grandchild + crash).
#[tokio::test]
async fn a_crash_while_a_grandchild_holds_stdout_fails_the_turn_not_the_watchdog() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "die-grandchild") else { return };
    let mut session = ClaudeSession::connect(fake_config(dir.path(), &fake), fake_hooks()).await.expect("connects");
    // A hang detector, not a speed target: without the exit watch this waits for the grandchild.
    let (result, _) =
        tokio::time::timeout(std::time::Duration::from_secs(120), turn(&mut session, "hi", &CancellationToken::new()))
            .await
            .expect("the turn ends although the pipe is held open");
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    let message = result.terminal.message.clone().unwrap_or_default();
    assert!(message.contains("fake crash"), "the stderr tail is in the message: {message}");
    session.shutdown().await;
    let holders = std::process::Command::new("pgrep").args(["-f", "^sleep 600$"]).output().unwrap();
    assert!(!holders.status.success(), "the grandchild was stopped with the CLI's process group");
}

/// The same crash, but the CLI never wrote its session file: the respawn must not `--resume` an id
/// the CLI cannot find (docs/peers/claude.md#missing-session-file); it starts a fresh session and names why.
#[tokio::test]
async fn a_respawn_without_a_session_file_starts_fresh_and_names_why() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "die-nofile") else { return };
    let mut session = ClaudeSession::connect(fake_config(dir.path(), &fake), fake_hooks()).await.expect("connects");
    let (result, _) = turn(&mut session, "hi", &CancellationToken::new()).await;
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    assert_eq!(session.session_id(), Some("s-1"));

    let (again, _) = turn(&mut session, "hi again", &CancellationToken::new()).await;
    assert_eq!(session.spawn_count(), 2);
    let argv = std::fs::read_to_string(dir.path().join("argv.log")).unwrap();
    let last: Vec<String> = serde_json::from_str(argv.lines().last().unwrap()).unwrap();
    assert!(!last.iter().any(|a| a == "--resume"), "{last:?}");
    assert!(
        matches!(session.resume_failure(), Some(InvalidationReason::NativeSessionMissing { id, .. }) if id == "s-1"),
        "{:?}",
        session.resume_failure()
    );
    // The fake dies on its first turn without --resume: the fresh process is a fresh session.
    assert_eq!(again.terminal.kind, TerminalKind::Failed, "{:?}", again.terminal);
    session.shutdown().await;
}

#[tokio::test]
async fn an_in_band_version_that_contradicts_the_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fake) = fake_cli(dir.path(), "mismatch") else { return };
    let Err(error) = ClaudeSession::connect(fake_config(dir.path(), &fake), fake_hooks()).await else {
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

/// Waits until the process group `pid` has no live member (a SIGKILLed CLI is gone at once; this
/// only waits for the kernel), then briefly for the session's reader to see the exit.
async fn wait_gone(pid: i32) {
    for _ in 0..100 {
        if !group_alive(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!group_alive(pid), "the killed CLI is gone");
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// The warm process is killed from outside (a crash, an OOM kill): the next turn spawns a new CLI
/// with `--resume`, which continues the same Claude session — same id, and the model sees the
/// earlier exchange again.
#[tokio::test]
async fn a_turn_after_a_killed_process_resumes_the_same_claude_session() {
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let mut session = live.connect(ApprovalDecision::Allow, Arc::new(RecordingObserver::default())).await;
    let (first, _) = turn(&mut session, "Remember the word pomegranate.", &CancellationToken::new()).await;
    assert_eq!(first.terminal.kind, TerminalKind::Ok, "{:?}", first.terminal);
    let id = first.native_session_id.clone().expect("a session id");
    let pid = session.pid().expect("a warm process") as i32;
    nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
    wait_gone(pid).await;

    let before = live.mock.model_requests().len();
    let (second, _) = turn(&mut session, "Say hello again.", &CancellationToken::new()).await;
    assert_eq!(second.terminal.kind, TerminalKind::Ok, "{:?}", second.terminal);
    assert_eq!(session.spawn_count(), 2, "a new process ran the second turn");
    assert_ne!(session.pid(), Some(pid as u32));
    assert_eq!(session.resume_failure(), None);
    assert_eq!(second.native_session_id.as_deref(), Some(id.as_str()), "the same Claude session continued");
    let requests = live.mock.model_requests();
    assert!(
        requests[before..].iter().any(|r| r.body.to_string().contains("pomegranate")),
        "the resumed CLI replayed the first exchange to the model"
    );
    let pid = session.pid().expect("a process") as i32;
    session.shutdown().await;
    assert!(!group_alive(pid));
}

/// A new `ClaudeSession` (a restarted bridge) resumes from the stored binding: the fingerprints
/// match, the CLI's session file exists, and the turn continues the same Claude session. Once the
/// CLI's session file is gone, the next one starts fresh and names why.
#[tokio::test]
async fn a_new_session_resumes_from_the_binding_and_not_once_the_session_file_is_gone() {
    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let binding_path = sidecar_path(&live.sandbox.root().join("transcript.jsonl"));
    let fingerprints = live.config().fingerprints(&[], "test:default");

    let mut first = live.connect(ApprovalDecision::Allow, Arc::new(RecordingObserver::default())).await;
    let (result, _) = turn(&mut first, "Remember the word pomegranate.", &CancellationToken::new()).await;
    let id = result.native_session_id.clone().expect("a session id");
    Binding::new(&id, &fingerprints).save(&binding_path).unwrap();
    let pid = first.pid().expect("a process") as i32;
    first.shutdown().await;
    assert!(!group_alive(pid));

    let binding = Binding::load(&binding_path).unwrap().expect("the binding was saved");
    let mut config = live.config();
    assert_eq!(binding.check(&config.fingerprints(&[], "test:default")), Ok(()));
    let session_file = config.session_file(&binding.native_session_id).expect("the CLI wrote its session file");
    config.resume = Some(binding.native_session_id.clone());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let mut second = ClaudeSession::connect(config.clone(), hooks.clone()).await.expect("connects");
    assert_eq!(second.resume_failure(), None);
    let before = live.mock.model_requests().len();
    let (resumed, _) = turn(&mut second, "Say hello again.", &CancellationToken::new()).await;
    assert_eq!(resumed.terminal.kind, TerminalKind::Ok, "{:?}", resumed.terminal);
    assert_eq!(resumed.native_session_id.as_deref(), Some(id.as_str()), "the same Claude session continued");
    assert!(live.mock.model_requests()[before..].iter().any(|r| r.body.to_string().contains("pomegranate")));
    second.shutdown().await;

    std::fs::remove_file(&session_file).unwrap();
    let mut third = ClaudeSession::connect(config, hooks).await.expect("connects");
    assert!(
        matches!(third.resume_failure(), Some(InvalidationReason::NativeSessionMissing { id: missing, .. }) if *missing == id),
        "{:?}",
        third.resume_failure()
    );
    let before = live.mock.model_requests().len();
    let (fresh, _) = turn(&mut third, "Say hello again.", &CancellationToken::new()).await;
    assert_eq!(fresh.terminal.kind, TerminalKind::Ok, "{:?}", fresh.terminal);
    assert_ne!(fresh.native_session_id.as_deref(), Some(id.as_str()), "a fresh session");
    assert!(!live.mock.model_requests()[before..].iter().any(|r| r.body.to_string().contains("pomegranate")));
    third.shutdown().await;
}
