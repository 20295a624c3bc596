//! The fault matrix (issue 7): one named test per fault, each proving the bridge ends the attempt,
//! loses nothing and leaves no process behind. The README's "Fault matrix" section lists these
//! tests together with the rows covered elsewhere (foundation, serve, codex_live).
//!
//! Mid-turn faults are played by the fake agent running a *script* (fixtures/src/bin/fake_agent.rs):
//! a real Codex 0.169.0 turn taken from a checked-in recording, with the misbehaviour spliced in.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, TerminalOutcome};
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::exit::ExitState;
use clawbridge_bridge::rpc::{PeerConfig, RejectAll};
use clawbridge_bridge::supervisor::{StopPolicy, StopStage, group_alive, group_members};
use clawbridge_bridge::transport::DEFAULT_MAX_LINE_BYTES;
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::peers::repo_root;
use clawbridge_fixtures::recording::{Direction, Recording};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod common;
use common::*;

/// The userAgent of the recorded codex 0.169.0, so the scripted fake passes the version gate.
const RECORDED_USER_AGENT: &str = "clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)";

/// For children that ignore stdin EOF and SIGTERM: short graces, so the test sees the escalation.
fn escalating_stop() -> StopPolicy {
    StopPolicy {
        after_stdin_close: Duration::from_millis(300),
        after_sigterm: Duration::from_millis(300),
        after_sigkill: Duration::from_secs(5),
    }
}

/// Whether `pid` is running (a zombie counts as gone: it holds nothing but a table slot).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            !matches!(stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()), Some('Z' | 'X'))
        }
        Err(_) => false,
    }
}

// ---------------------------------------------------------------------------------------------
// Scripted Codex turns
// ---------------------------------------------------------------------------------------------

/// A Codex turn as a recording has it: the server's answers to `thread/start` and `turn/start`,
/// and every line the server wrote after `turn/start`, in order (as fake-agent `send` steps).
struct RecordedTurn {
    /// Results by request method.
    answers: serde_json::Map<String, Value>,
    /// The turn's server lines.
    steps: Vec<Value>,
}

impl RecordedTurn {
    fn load(scenario: &str) -> RecordedTurn {
        let path = repo_root().join("fixtures/recordings/codex").join(format!("{scenario}.jsonl"));
        let recording = Recording::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut methods: HashMap<String, String> = HashMap::new();
        let mut answers = serde_json::Map::new();
        let mut steps = Vec::new();
        let mut in_turn = false;
        for entry in recording.entries {
            let Some(json) = entry.json else { continue };
            match entry.dir {
                Direction::ToAgent => {
                    if let (Some(id), Some(method)) = (json.get("id"), json["method"].as_str()) {
                        methods.insert(id.to_string(), method.to_string());
                        in_turn |= method == "turn/start";
                    }
                }
                Direction::FromAgent => {
                    if json.get("method").is_none() {
                        let method = json.get("id").and_then(|id| methods.get(&id.to_string()));
                        if let Some(method @ ("thread/start" | "turn/start")) = method.map(String::as_str) {
                            answers.insert(method.to_string(), json["result"].clone());
                            continue;
                        }
                    }
                    if in_turn {
                        steps.push(json!({"send": json}));
                    }
                }
            }
        }
        assert!(answers.contains_key("turn/start") && !steps.is_empty(), "{scenario} has no turn");
        RecordedTurn { answers, steps }
    }

    /// Index of the first step sending `method` whose item (if any) has type `item_type`.
    fn position(&self, method: &str, item_type: Option<&str>) -> usize {
        self.steps
            .iter()
            .position(|step| {
                let message = &step["send"];
                message["method"] == method
                    && item_type.is_none_or(|t| message["params"]["item"]["type"].as_str() == Some(t))
            })
            .unwrap_or_else(|| panic!("no {method} ({item_type:?}) in the recorded turn"))
    }

    /// Writes the fake agent's script for this turn followed by `tail` steps (after `steps[..cut]`).
    fn script(&self, dir: &Path, name: &str, cut: usize, tail: &[Value]) -> PathBuf {
        let mut steps: Vec<Value> = self.steps[..cut].to_vec();
        steps.extend_from_slice(tail);
        let script = json!({"answers": self.answers, "after": {"turn/start": steps}});
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(&script).unwrap()).unwrap();
        path
    }
}

fn scripted_args(script: &Path) -> Vec<std::ffi::OsString> {
    vec![
        "--dialect".into(),
        "codex".into(),
        "--user-agent".into(),
        RECORDED_USER_AGENT.into(),
        "--script".into(),
        script.into(),
    ]
}

/// A Codex session on the fake agent playing `script`; `idle` is the turn watchdog.
async fn scripted_session(script: &Path, idle: Duration, observer: Arc<RecordingObserver>) -> CodexSession {
    scripted_session_stopping(script, idle, observer, polite_stop()).await
}

async fn scripted_session_stopping(
    script: &Path,
    idle: Duration,
    observer: Arc<RecordingObserver>,
    stop: StopPolicy,
) -> CodexSession {
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("fake-agent"));
    config.launcher_args = scripted_args(script);
    config.turn_idle_timeout = idle;
    config.stop = stop;
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer,
    };
    CodexSession::connect(config, hooks).await.expect("the scripted fake passes the handshake")
}

/// Runs one turn of a scripted session to its end, with the events it produced.
async fn scripted_turn(session: &mut CodexSession) -> (AttemptResult, Vec<Event>) {
    let thread = session.start_thread(&ThreadOptions::default()).await.expect("thread/start is scripted");
    let mut events = Vec::new();
    let result = session
        .run_turn(&thread.thread_id, "Say hello.", &mut |e: &Event| events.push(e.clone()), &CancellationToken::new())
        .await
        .expect("the turn ends with a result");
    (result, events)
}

fn assistant_text(result: &AttemptResult) -> String {
    result.assistant_texts.concat()
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/// Row: crash mid-turn. The server dies while its command runs: the attempt fails at once with the
/// exit status and the stderr tail, the started tool gets a failed terminal, nothing survives.
#[tokio::test]
async fn crash_mid_turn_fails_the_attempt_with_exit_status_and_stderr_tail() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let turn = RecordedTurn::load("command-auto");
        let cut = turn.position("item/started", Some("commandExecution")) + 1;
        let crash = json!({"crash": {"code": 101, "stderr": "thread 'main' panicked: fake crash mid-turn"}});
        let script = turn.script(dir.path(), "crash", cut, &[crash]);
        let observer = Arc::new(RecordingObserver::default());
        // A long watchdog: the crash itself must end the turn, not the idle timer.
        let mut session = scripted_session(&script, Duration::from_secs(300), observer.clone()).await;
        let pgid = session.pid().expect("spawned") as i32;
        let started = Instant::now();
        let (result, _) = scripted_turn(&mut session).await;
        assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
        let message = result.terminal.message.clone().unwrap_or_default();
        assert!(message.contains("exit code 101"), "{message}");
        assert!(message.contains("fake crash mid-turn"), "the stderr tail is attached: {message}");
        assert!(!result.replay.replay_safe, "a tool had started");
        let reports = observer.reports();
        assert_eq!(reports.len(), 1, "the started command still gets its terminal: {reports:?}");
        assert_eq!(reports[0].outcome, TerminalOutcome::Failure);
        assert_eq!(session.shutdown().await.map(|stop| stop.stage), Some(StopStage::AlreadyExited));
        assert!(!group_alive(pgid));
    })
    .await;
}

/// Row: hang after `item/completed` without `turn/completed`. The server stays alive and quiet
/// (docs/peers/codex.md#missing-turncompleted): the idle watchdog ends the attempt as a timeout, keeping its answer.
#[tokio::test]
async fn a_turn_without_turn_completed_after_item_completed_ends_as_timeout() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let turn = RecordedTurn::load("plain-text");
        let cut = turn.position("item/completed", Some("agentMessage")) + 1;
        let script = turn.script(dir.path(), "hang", cut, &[]);
        let observer = Arc::new(RecordingObserver::default());
        let idle = Duration::from_secs(1);
        let mut session = scripted_session(&script, idle, observer).await;
        let started = Instant::now();
        let (result, events) = scripted_turn(&mut session).await;
        assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
        assert_eq!(result.terminal.kind, TerminalKind::Timeout, "{:?}", result.terminal);
        assert_eq!(assistant_text(&result), "Hello from the mock model.", "the completed item is kept");
        assert!(matches!(events.last(), Some(Event::TurnTerminal(_))), "the turn is closed: {events:?}");
        // The server is still alive and answers: the session stays usable and stops cleanly.
        let pid = session.pid().expect("spawned") as i32;
        assert!(group_alive(pid));
        assert_eq!(session.shutdown().await.map(|stop| stop.stage), Some(StopStage::StdinClosed));
    })
    .await;
}

/// Row: garbage and oversize lines mid-turn. Non-JSON, non-JSON-RPC, invalid UTF-8, a torn JSON
/// line, an answer nobody asked for and a line over the 64 MiB cap arrive between two deltas; each
/// is reported and skipped, and the turn completes with the whole answer.
#[tokio::test]
async fn garbage_and_oversize_lines_mid_turn_are_skipped_and_the_turn_completes() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let turn = RecordedTurn::load("plain-text");
        let cut = turn.position("item/agentMessage/delta", None) + 2;
        let garbage = [
            json!({"raw": "not json at all"}),
            json!({"raw": "[1,2,3]"}),
            json!({"invalid_utf8": true}),
            json!({"raw": "{\"method\":\"item/agentMessage/delta\",\"params\":{\"delta\":"}),
            json!({"raw": "{\"id\":4242,\"result\":{}}"}),
            json!({"raw": "{\"method\":\"item/completed\",\"params\":{\"item\":42}}"}),
            json!({"oversize": DEFAULT_MAX_LINE_BYTES + 1}),
        ];
        let mut tail = garbage.to_vec();
        tail.extend_from_slice(&turn.steps[cut..]);
        let script = turn.script(dir.path(), "garbage", cut, &tail);
        let mut session = scripted_session(&script, Duration::from_secs(60), Arc::default()).await;
        let (result, _) = scripted_turn(&mut session).await;
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
        assert_eq!(assistant_text(&result), "Hello from the mock model.");
        assert_eq!(session.shutdown().await.map(|stop| stop.stage), Some(StopStage::StdinClosed));
    })
    .await;
}

/// Row: EOF mid-line. The server exits in the middle of writing a delta: the torn line is
/// dropped, and the attempt fails at once naming the exit, with what was streamed before it.
#[tokio::test]
async fn eof_mid_line_mid_turn_fails_the_attempt_without_a_hang() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let turn = RecordedTurn::load("plain-text");
        let cut = turn.position("item/agentMessage/delta", None) + 2;
        // The cut-off line is even whole JSON: only its newline is missing. A line without its
        // newline may be anything and is never delivered (a naive `lines()` reader would).
        let mut torn = turn.steps[cut]["send"].clone();
        torn["params"]["delta"] = json!("torn ");
        let torn = json!({"eof_mid_line": torn.to_string()});
        let script = turn.script(dir.path(), "eof", cut, &[torn]);
        let mut session = scripted_session(&script, Duration::from_secs(300), Arc::default()).await;
        let pgid = session.pid().expect("spawned") as i32;
        let started = Instant::now();
        let (result, events) = scripted_turn(&mut session).await;
        assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
        let message = result.terminal.message.clone().unwrap_or_default();
        assert!(message.contains("exit code 0"), "{message}");
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                Event::AssistantDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, "Hello from ", "the deltas before the torn line arrived, the torn one did not");
        session.shutdown().await;
        assert!(!group_alive(pgid));
    })
    .await;
}

/// Row: 1 GB stderr flood. Moved here from foundation.rs (the one place this costs ~2 s).
#[tokio::test]
async fn a_1_gb_stderr_flood_does_not_stall_the_child_and_only_a_bounded_tail_is_kept() {
    within(async {
        let config = PeerConfig { request_timeout: Duration::from_secs(100), ..PeerConfig::default() };
        let (agent, _events) = spawn_with(fake_agent(&[]), config, Arc::new(RejectAll));
        let bytes: u64 = 1 << 30;
        // The child answers only after writing everything: an answer proves it never blocked for good.
        let answer = agent.peer().request("fake/stderr", Some(&json!({"bytes": bytes}))).await.unwrap();
        assert_eq!(answer, json!({"written": bytes}));
        let stderr = agent.process().expect("spawned").stderr();
        eventually("the flood is drained", || stderr.total_bytes() > bytes).await;
        assert!(stderr.held_bytes() <= 64 * 1024, "tail holds {} bytes", stderr.held_bytes());
        assert!(stderr.snapshot().ends_with("fake-agent: flood done\n"));
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

/// Row: grandchild holding the pipes (stop). Moved here from foundation.rs.
#[tokio::test]
async fn a_grandchild_holding_the_pipes_is_stopped_with_the_group() {
    within(async {
        let (agent, _events) = spawn(&[]);
        let grandchild = agent.peer().request("fake/spawn_grandchild", None::<&Value>).await.unwrap()["pid"]
            .as_i64()
            .unwrap() as i32;
        let pgid = agent.process().expect("spawned").pid() as i32;
        assert_eq!(group_members(pgid).len(), 2);
        let outcome = agent.shutdown(StopPolicy { after_stdin_close: Duration::from_secs(3), ..polite_stop() }).await;
        // The child exits on stdin EOF, but its grandchild keeps the group alive until SIGTERM.
        assert_eq!(outcome.stage, StopStage::Terminated);
        assert_eq!(outcome.exit, Some(ExitState::Code(0)));
        assert!(!running(grandchild));
        assert!(group_members(pgid).is_empty());
    })
    .await;
}

/// Row: grandchild holding the pipes (crash mid-turn). The server dies mid-turn but a grandchild
/// keeps its stdout open, so no EOF ever comes: the attempt must still fail promptly on the exit,
/// not wait for the idle watchdog.
#[tokio::test]
async fn a_crash_mid_turn_while_a_grandchild_holds_the_pipes_fails_the_attempt_promptly() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let turn = RecordedTurn::load("plain-text");
        let cut = turn.position("item/agentMessage/delta", None) + 1;
        let tail = [
            json!({"spawn_grandchild": true}),
            json!({"crash": {"code": 9, "stderr": "fake crash with a grandchild"}}),
        ];
        let script = turn.script(dir.path(), "crash-grandchild", cut, &tail);
        // The orphaned grandchild ignores stdin EOF: don't wait long for it before SIGTERM.
        let stop = StopPolicy { after_stdin_close: Duration::from_millis(300), ..polite_stop() };
        let mut session = scripted_session_stopping(&script, Duration::from_secs(300), Arc::default(), stop).await;
        let pgid = session.pid().expect("spawned") as i32;
        let started = Instant::now();
        let (result, _) = scripted_turn(&mut session).await;
        assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
        let message = result.terminal.message.clone().unwrap_or_default();
        assert!(message.contains("exit code 9"), "{message}");
        session.shutdown().await;
        assert!(!group_alive(pgid), "the grandchild went with the group");
    })
    .await;
}

/// Row: SIGTERM ignored. Moved here from foundation.rs.
#[tokio::test]
async fn a_child_ignoring_sigterm_is_killed_with_its_grandchild() {
    within(async {
        let (agent, _events) = spawn(&["--ignore-sigterm", "--grandchild", "--keep-running-on-eof"]);
        let pgid = agent.process().expect("spawned").pid() as i32;
        eventually("the grandchild started", || group_members(pgid).len() == 2).await;
        let outcome = agent.shutdown(escalating_stop()).await;
        assert_eq!(outcome.stage, StopStage::Killed);
        assert_eq!(outcome.exit, Some(ExitState::Signal(9)));
        assert!(group_members(pgid).is_empty(), "no process of the group survives");
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Whole-process rows: `clawbridge serve` and `clawbridge run` as child processes
// ---------------------------------------------------------------------------------------------

/// Row: host disconnect mid-attempt. The host dies while two attempts wait on its approvals: both
/// of `serve`'s pipes close at once (stdin EOF, stdout broken). The server must stop every agent
/// group and exit. (tests/serve.rs covers the polite variant, stdin EOF with stdout still read.)
#[tokio::test]
async fn host_disconnect_mid_attempt_stops_every_agent_and_the_server_exits() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    within(async {
        let state = tempfile::tempdir().unwrap();
        let mut serve = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
            .envs(clawbridge_fixtures::no_user_config())
            .arg("serve")
            .env("CLAWBRIDGE_STATE_DIR", state.path())
            .env_remove("CLAWBRIDGE_CODEX_BIN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("clawbridge serve starts");
        let mut to_bridge = serve.stdin.take().unwrap();
        let mut from_bridge = tokio::io::BufReader::new(serve.stdout.take().unwrap()).lines();
        let mut send = async |message: Value| {
            let mut line = serde_json::to_vec(&message).unwrap();
            line.push(b'\n');
            to_bridge.write_all(&line).await.unwrap();
        };
        send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION,
            "host": {"name": "openclaw", "version": "2026.9.6"},
            "capabilities": {"hostTools": true, "approvals": true, "toolTerminals": true, "transcriptAppend": true, "userInput": false}
        }}))
        .await;
        // Read until `pred` holds for a line (the bridge also sends events and other requests).
        let mut wait_for = async |what: &str, count: usize, pred: &dyn Fn(&Value) -> bool| {
            let mut seen = 0;
            while seen < count {
                let line = from_bridge.next_line().await.unwrap().unwrap_or_else(|| panic!("serve ended before {what}"));
                if pred(&serde_json::from_str(&line).unwrap()) {
                    seen += 1;
                }
            }
        };
        wait_for("initialize was answered", 1, &|m| m["id"] == 1 && m.get("result").is_some()).await;
        for i in 0..2 {
            send(json!({"jsonrpc": "2.0", "id": 10 + i, "method": "attempt/run", "params": {
                "attemptId": format!("d-{i}"),
                "harnessId": "clawbridge-demo",
                "sessionId": format!("s-d{i}"),
                "runId": format!("run-d-{i}"),
                "prompt": "Run echo hi",
                "workspaceDir": std::env::temp_dir().display().to_string(),
                "provider": "mock",
                "modelId": "mock-1",
                "modelApi": "openai-completions",
                "disableTools": false
            }}))
            .await;
        }
        // Both attempts now wait on an approval the host will never give.
        wait_for("both approvals were asked", 2, &|m| m["method"] == "host/approval/decide").await;
        let agents = children_of(serve.id().unwrap());
        assert_eq!(agents.len(), 2, "one demo agent per attempt: {agents:?}");
        assert!(agents.iter().all(|&pid| group_alive(pid)));

        // The host is gone: both ends close at once.
        drop(to_bridge);
        drop(from_bridge);
        let status = tokio::time::timeout(Duration::from_secs(20), serve.wait())
            .await
            .expect("clawbridge serve exits after the host disconnected")
            .unwrap();
        assert!(status.code().is_some(), "exited by itself, not by a signal: {status}");
        for pid in agents {
            assert!(!group_alive(pid), "agent group {pid} outlived the host");
        }
    })
    .await;
}

/// Quotes `text` for `/bin/sh`.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// An executable `codex` for `clawbridge run --codex`: a shell script that execs `command`
/// (followed by the arguments the session passes, `app-server` and `-c …`, which the fakes ignore).
fn codex_wrapper(dir: &Path, name: &str, command: &[std::ffi::OsString]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let mut text = String::from("#!/bin/sh\nexec");
    for arg in command {
        text.push(' ');
        text.push_str(&shell_quote(arg.to_str().expect("test paths are UTF-8")));
    }
    text.push_str(" \"$@\"\n");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The fake agent playing `script`, plus `extra` flags, as a command line.
fn scripted_fake(script: &Path, extra: &[&str]) -> Vec<std::ffi::OsString> {
    let mut command = vec![clawbridge_fixtures::fixture_bin("fake-agent").into_os_string()];
    command.extend(scripted_args(script));
    command.extend(extra.iter().map(Into::into));
    command
}

/// `clawbridge run` on the Codex backend with `codex` as the app-server, in a state dir of its own.
fn clawbridge_run(state: &Path, codex: &Path, session: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "codex", "--approve", "--json", "--session", session, "--program"])
        .arg(codex)
        .arg("Please run the live test command.")
        .env("CLAWBRIDGE_STATE_DIR", state)
        .env_remove("CLAWBRIDGE_CODEX_BIN")
        .env_remove("CODEX_HOME")
        .stdin(Stdio::null());
    command
}

/// Every line of a transcript, parsed; panics on a line that is not whole JSON.
fn transcript_rows(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "the transcript ends with a whole line");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line}", i + 1))
        })
        .collect()
}

fn idempotency_keys(rows: &[Value]) -> Vec<String> {
    rows.iter().filter_map(|row| row["message"]["idempotencyKey"].as_str().map(str::to_string)).collect()
}

/// Process-group ids recorded in a pid registry directory (each record's `pid`).
fn registered_groups(registry: &Path) -> Vec<i32> {
    std::fs::read_dir(registry)
        .map(|dir| {
            dir.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok()?["pid"].as_i64())
                .map(|pid| pid as i32)
                .collect()
        })
        .unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Row: `agents.turn-idle-timeout-ms` in the config file ends a stalled `clawbridge run` turn, not
/// only serve's: the timeout names the configured limit (1s), not the backend's own (300s).
#[test]
fn run_ends_a_stalled_turn_at_the_config_files_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let turn = RecordedTurn::load("plain-text");
    let cut = turn.position("item/completed", Some("agentMessage")) + 1;
    let hang = turn.script(dir.path(), "hang", cut, &[]);
    let codex = codex_wrapper(dir.path(), "codex-hang", &scripted_fake(&hang, &[]));
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[agents]\nturn-idle-timeout-ms = 1000\n").unwrap();
    let out = clawbridge_run(&state, &codex, "idle")
        .env("CLAWBRIDGE_CONFIG", &config)
        .env_remove("CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS")
        .output()
        .expect("clawbridge run starts");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(said.contains("no progress from codex for 1s"), "{said}");
}

/// Row: the bridge SIGKILLed mid-turn, then restarted. The killed `clawbridge run` leaves a frozen
/// server's grandchild behind and a transcript cut mid-turn (plus, worst case, a torn last line).
/// The rerun of the same session reaps the orphan, repairs the transcript, and re-delivers the
/// turn without duplicating a single row: every row keeps its identity (idempotency key).
#[test]
fn a_bridge_sigkilled_mid_turn_is_restarted_reaping_orphans_without_duplicate_rows() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let turn = RecordedTurn::load("command-auto");
    let cut = turn.position("item/completed", Some("commandExecution")) + 1;
    let stalled = turn.script(dir.path(), "stalled", cut, &[json!({"freeze": true})]);
    let full = turn.script(dir.path(), "full", turn.steps.len(), &[]);
    let stalled_codex = codex_wrapper(dir.path(), "codex-stalled", &scripted_fake(&stalled, &["--grandchild"]));
    let full_codex = codex_wrapper(dir.path(), "codex-full", &scripted_fake(&full, &[]));
    let transcript = state.join("sessions/killed/transcript.jsonl");
    let registry = state.join("pids");

    let mut first = clawbridge_run(&state, &stalled_codex, "killed")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("clawbridge run starts");
    // Mid-turn: the command's result is mirrored, the server is frozen before its answer.
    wait_until("the tool result is in the transcript", Duration::from_secs(60), || {
        std::fs::read_to_string(&transcript).is_ok_and(|t| t.contains("\"toolResult\""))
    });
    let groups = registered_groups(&registry);
    assert_eq!(groups.len(), 1, "the running server is registered: {groups:?}");
    let pgid = groups[0];
    assert_eq!(group_members(pgid).len(), 2, "the server and its grandchild");
    first.kill().unwrap(); // SIGKILL: no destructor, no staged stop
    first.wait().unwrap();
    // The server dies with its bridge (PR_SET_PDEATHSIG); the grandchild it left is an orphan.
    wait_until("only the orphaned grandchild is left", Duration::from_secs(10), || group_members(pgid).len() == 1);

    let before = transcript_rows(&transcript);
    assert_eq!(before[0]["type"], "session", "the header survives");
    let keys_before = idempotency_keys(&before);
    assert_eq!(keys_before.len(), before.len() - 1, "every message row has an identity");
    // The kill could have landed mid-write: leave the worst case, a torn last line.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap()
        .write_all(b"{\"type\":\"message\",\"id\":\"torn-by-the-kil")
        .unwrap();

    let second = clawbridge_run(&state, &full_codex, "killed").output().expect("clawbridge run starts again");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "the rerun completes: {stderr}");
    assert!(stderr.contains(&format!("stopped process group {pgid} left behind by a crashed run")), "{stderr}");
    assert!(!group_alive(pgid), "the orphan was reaped");
    assert!(registered_groups(&registry).is_empty(), "no stale pid records");

    let after = transcript_rows(&transcript);
    assert_eq!(after[..before.len()], before[..], "the rows written before the kill are kept as they were");
    let keys_after = idempotency_keys(&after);
    let unique: HashSet<&String> = keys_after.iter().collect();
    assert_eq!(unique.len(), keys_after.len(), "no row was written twice: {keys_after:#?}");
    let prompts: Vec<&Value> = after.iter().filter(|row| row["message"]["role"] == "user").collect();
    assert_eq!(prompts.len(), 1, "one turn, one prompt row, however often it is run: {prompts:#?}");
    let added: Vec<&Value> = after[before.len()..].iter().collect();
    assert!(!added.is_empty(), "the rerun completed the turn");
    assert!(
        added.iter().any(|row| row["message"]["role"] == "assistant" && row.to_string().contains("live-42")),
        "the answer the killed run never saw is added: {added:#?}"
    );
}

/// Row: a server that stops reading its stdin. Right after `turn/start` it sends 20 000 requests
/// and freezes without reading a single answer: once the pipe is full, a line cannot be written
/// within the write timeout (short here, `CLAWBRIDGE_WRITE_TIMEOUT_MS`), the turn fails naming
/// the cause instead of waiting for the idle watchdog, and the server is stopped.
#[test]
fn a_server_that_stops_reading_its_stdin_fails_the_turn_naming_the_cause_and_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let turn = RecordedTurn::load("command-auto");
    let mut tail: Vec<Value> = (0..20_000)
        .map(|n| json!({"send": {"id": 900_000 + n, "method": "fake/unanswerable", "params": {"n": n}}}))
        .collect();
    tail.push(json!({"freeze": true}));
    let deaf = turn.script(dir.path(), "deaf", 0, &tail);
    let codex = codex_wrapper(dir.path(), "codex-deaf", &scripted_fake(&deaf, &[]));
    let out = clawbridge_run(&state, &codex, "deaf")
        .env("CLAWBRIDGE_WRITE_TIMEOUT_MS", "500")
        .output()
        .expect("clawbridge run starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let result = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| line.get("result").cloned())
        .unwrap_or_else(|| panic!("a result: {stdout} {stderr}"));
    assert_eq!(result["terminal"]["kind"], "failed", "{result}");
    let message = result["terminal"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped reading its stdin for 500ms"), "the cause is named: {message}");
    assert!(registered_groups(&state.join("pids")).is_empty(), "the server was stopped");
}

/// Row: 1000 spawn/stop cycles. Counting this process's open fds and zombie children only means
/// something when no other test runs in it, so the test re-runs itself alone in a child process.
#[test]
fn a_thousand_spawn_stop_cycles_leak_no_fd_and_leave_no_zombie() {
    const ALONE: &str = "CLAWBRIDGE_FAULT_MATRIX_ALONE";
    if std::env::var_os(ALONE).is_none() {
        let status = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_thousand_spawn_stop_cycles_leak_no_fd_and_leave_no_zombie", "--test-threads=1"])
            .env(ALONE, "1")
            .status()
            .unwrap();
        assert!(status.success(), "the isolated run failed: {status}");
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(within(async {
        async fn cycle(n: u64) {
            let (agent, _events) = spawn(&[]);
            let echo = agent.peer().request("fake/echo", Some(&json!({"cycle": n}))).await.unwrap();
            assert_eq!(echo["cycle"], n);
            assert_eq!(agent.shutdown(polite_stop()).await.stage, StopStage::StdinClosed);
        }
        // Warm-up: the first spawn opens the runtime's process-reaping machinery for good.
        cycle(0).await;
        let baseline = open_fds();
        for n in 1..=1000 {
            cycle(n).await;
        }
        // The last connection's reader and stderr tasks may still be closing their pipes.
        let mut now = open_fds();
        for _ in 0..500 {
            if now.len() <= baseline.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            now = open_fds();
        }
        assert!(now.len() <= baseline.len(), "fds leaked: {} before, {} after: {now:?}", baseline.len(), now.len());
        let me = std::process::id();
        let left: Vec<i32> = children_of(me);
        assert_eq!(left, Vec::<i32>::new(), "no child, zombie or live, is left");
    }));
}

/// This process's open file descriptors, with what they point to.
fn open_fds() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            format!(
                "{}->{}",
                e.file_name().to_string_lossy(),
                std::fs::read_link(e.path()).unwrap_or_default().display()
            )
        })
        .collect()
}

/// Row: a canary secret in the backend env. One secret travels in an allowlisted variable (a proxy
/// URL with credentials, as real setups have) and reaches the backend; another, not allowlisted,
/// must not even reach it. With logging at `trace`, neither may appear in any log line, in the
/// events on stdout, in any file under the state dir (transcript, binding, pid records), or in the
/// recording of the session's stdio.
#[test]
fn a_canary_secret_in_the_backend_env_appears_in_no_log_transcript_or_recording() {
    const PASSED: &str = "canary-passed-5e1f0c77";
    const WITHHELD: &str = "canary-withheld-9b7d2a41";
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let env_dump = dir.path().join("agent-env.txt");
    let recording = dir.path().join("canary.jsonl");
    let turn = RecordedTurn::load("command-auto");
    let mut steps = vec![json!({"write_env": env_dump.display().to_string()})];
    steps.extend_from_slice(&turn.steps);
    let script = turn.script(dir.path(), "canary", 0, &steps);
    let mut command: Vec<std::ffi::OsString> = vec![
        clawbridge_fixtures::fixture_bin("record-proxy").into_os_string(),
        "--out".into(),
        recording.clone().into_os_string(),
        "--backend".into(),
        "codex".into(),
        "--peer-version".into(),
        "0.169.0".into(),
        "--scenario".into(),
        "canary".into(),
        "--".into(),
    ];
    command.extend(scripted_fake(&script, &[]));
    let codex = codex_wrapper(dir.path(), "codex-recorded", &command);

    let output = clawbridge_run(&state, &codex, "canary")
        .env("HTTPS_PROXY", format!("http://clawbridge:{PASSED}@127.0.0.1:9"))
        .env("OPENAI_API_KEY", WITHHELD)
        .env("CLAWBRIDGE_LOG", "trace")
        .output()
        .expect("clawbridge run starts");
    let logs = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{logs}");
    assert!(logs.contains("spawned child in its own process group"), "trace logging is on: {logs}");

    // The positive control: the passed secret was really in the backend's environment.
    let env = std::fs::read_to_string(&env_dump).expect("the agent dumped its environment");
    assert!(env.contains(PASSED), "the allowlisted variable reached the backend");
    assert!(!env.contains(WITHHELD), "a variable off the allowlist reached the backend");

    let mut places: Vec<(String, Vec<u8>)> =
        vec![("the log (stderr)".into(), output.stderr.clone()), ("the events (stdout)".into(), output.stdout.clone())];
    let mut timing = recording.clone().into_os_string();
    timing.push(".timing");
    for file in [recording.clone(), PathBuf::from(timing)] {
        places.push((file.display().to_string(), std::fs::read(&file).expect("the recording was written")));
    }
    let mut stack = vec![state.clone()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().flatten().map(|e| e.path()));
        } else {
            places.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    assert!(places.iter().any(|(p, _)| p.ends_with("transcript.jsonl")), "the transcript is checked");
    for (place, bytes) in &places {
        let text = String::from_utf8_lossy(bytes);
        for secret in [PASSED, WITHHELD] {
            assert!(!text.contains(secret), "{secret} leaked into {place}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rows for an ACP agent (the scripted fake-acp-agent): crash, hang, garbage, an ignored cancel
// ---------------------------------------------------------------------------------------------

/// An ACP session on the fake ACP agent playing `turn` (its steps), with these limits.
async fn acp_session(
    dir: &Path,
    turn: Value,
    idle: Duration,
    grace: Duration,
    observer: Arc<RecordingObserver>,
) -> (clawbridge_adapters::acp::AcpSession, String) {
    let script = dir.join("acp-script.json");
    std::fs::write(&script, json!({"turns": [turn]}).to_string()).unwrap();
    let program = clawbridge_fixtures::fixture_bin("fake-acp-agent");
    let args = vec!["--script".to_owned(), script.display().to_string()];
    let mut config = clawbridge_adapters::acp::AcpConfig::new(program, args, dir.to_path_buf());
    config.turn_idle_timeout = idle;
    config.interrupt_grace = grace;
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer,
    };
    let mut session = clawbridge_adapters::acp::AcpSession::connect(config, hooks, true).await.expect("initialize");
    let ready = session.new_session().await.expect("session/new");
    (session, ready.session_id)
}

async fn acp_turn(
    session: &mut clawbridge_adapters::acp::AcpSession,
    id: &str,
    cancel: &CancellationToken,
) -> (AttemptResult, Vec<Event>) {
    let mut events = Vec::new();
    let input = clawbridge_bridge::backend::TurnInput::text("go");
    let result = session.run_turn(id, &input, &mut |e: &Event| events.push(e.clone()), cancel).await;
    (result, events)
}

/// Row (ACP): crash mid-turn. The agent dies while its tool runs: the attempt fails with the exit
/// status and stderr tail, the tool gets its terminal, nothing survives.
#[tokio::test]
async fn an_acp_agent_crashing_mid_turn_fails_the_attempt_and_closes_its_tool() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let observer = Arc::new(RecordingObserver::default());
        let turn = json!([{"say": "working"}, {"tool": {"id": "t1", "kind": "execute", "status": "in_progress"}}, {"crash": 7}]);
        let (mut session, id) = acp_session(dir.path(), turn, Duration::from_secs(300), Duration::from_secs(5), observer.clone()).await;
        let pgid = session.pid().unwrap() as i32;
        let (result, _) = acp_turn(&mut session, &id, &CancellationToken::new()).await;
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
        let message = result.terminal.message.clone().unwrap_or_default();
        assert!(message.contains("exit code 7"), "{message}");
        assert!(message.contains("crashing as scripted"), "the stderr tail is attached: {message}");
        assert_eq!(assistant_text(&result), "working");
        let reports = observer.reports();
        assert_eq!(reports.len(), 1, "the running tool got its terminal: {reports:?}");
        session.shutdown().await;
        assert!(!group_alive(pgid));
    })
    .await;
}

/// Row (ACP): hang mid-turn. The agent stops writing and never answers the prompt: the idle
/// watchdog ends the attempt as a timeout and the agent, still working on it, is stopped.
#[tokio::test]
async fn an_acp_agent_hanging_mid_turn_times_out_and_is_stopped() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let observer = Arc::new(RecordingObserver::default());
        let turn = json!([{"say": "almost"}, {"hang": true}]);
        let (mut session, id) =
            acp_session(dir.path(), turn, Duration::from_secs(1), Duration::from_secs(1), observer).await;
        let pgid = session.pid().unwrap() as i32;
        let (result, events) = acp_turn(&mut session, &id, &CancellationToken::new()).await;
        assert_eq!(result.terminal.kind, TerminalKind::Timeout, "{:?}", result.terminal);
        assert_eq!(assistant_text(&result), "almost", "what streamed is kept");
        assert!(matches!(events.last(), Some(Event::TurnTerminal(_))), "{events:?}");
        assert!(session.is_stopped(), "the hanging agent was stopped");
        assert!(!group_alive(pgid));
    })
    .await;
}

/// Row (ACP): garbage lines mid-turn. Non-JSON, a JSON-RPC answer nobody asked for and an update of
/// another session arrive between two chunks; each is skipped and the turn completes whole.
#[tokio::test]
async fn garbage_lines_from_an_acp_agent_are_skipped_and_the_turn_completes() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let observer = Arc::new(RecordingObserver::default());
        let turn = json!([
            {"say": "Hello, "},
            {"garbage": "not json at all"},
            {"garbage": "{\"jsonrpc\":\"2.0\",\"id\":424242,\"result\":{}}"},
            {"garbage": "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"other\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"WRONG\"}}}}"},
            {"garbage": "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":7}}}"},
            {"say": "world"}
        ]);
        let (mut session, id) = acp_session(dir.path(), turn, Duration::from_secs(300), Duration::from_secs(5), observer).await;
        let (result, _) = acp_turn(&mut session, &id, &CancellationToken::new()).await;
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
        assert_eq!(assistant_text(&result), "Hello, world");
        session.shutdown().await;
    })
    .await;
}

/// Row (ACP): a cancel the agent ignores. `session/cancel` goes out, no `cancelled` answer comes:
/// after the grace the attempt ends aborted, the running tool cancelled, and the agent is stopped.
#[tokio::test]
async fn an_acp_agent_ignoring_a_cancel_is_stopped_after_the_grace() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let observer = Arc::new(RecordingObserver::default());
        let turn = json!([{"ignoreCancel": true}, {"tool": {"id": "t1", "kind": "execute", "status": "in_progress"}}, {"waitCancel": true}]);
        let (mut session, id) = acp_session(dir.path(), turn, Duration::from_secs(300), Duration::from_secs(1), observer.clone()).await;
        let pgid = session.pid().unwrap() as i32;
        let cancel = CancellationToken::new();
        let mut events = Vec::new();
        let input = clawbridge_bridge::backend::TurnInput::text("go");
        // Cancelled once the tool is announced.
        let mut sink = |e: &Event| {
            if matches!(e, Event::ToolStarted(_)) {
                cancel.cancel();
            }
            events.push(e.clone());
        };
        let result = session.run_turn(&id, &input, &mut sink, &cancel).await;
        assert_eq!(result.terminal.kind, TerminalKind::Aborted, "{:?}", result.terminal);
        let finished: Vec<_> = events.iter().filter(|e| matches!(e, Event::ToolFinished(_))).collect();
        assert_eq!(finished.len(), 1, "{events:?}");
        assert_eq!(observer.reports().len(), 1, "the host saw the cancelled tool end");
        assert!(matches!(finished[0], Event::ToolFinished(f) if matches!(f.outcome, clawbridge_bridge::events::ToolOutcome::Cancelled { .. })));
        assert!(session.is_stopped());
        assert!(!group_alive(pgid));
    })
    .await;
}
