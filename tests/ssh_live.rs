//! The launcher against a loopback `sshd` (Debian's OpenSSH, started by the test on 127.0.0.1 with
//! throw-away keys) and the real codex 0.169.0, claude 2.1.328 and codex-acp on the mock model: a full turn
//! with an approval runs through `ssh -T`, its provider key travels on stdin (never on a command
//! line), and a bridge SIGKILLed mid-turn leaves nothing of the remote session running. Skipped with a printed
//! reason when codex or OpenSSH is missing (failed when peers are required).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clawbridge_adapters::claude::Secret;
use clawbridge_adapters::codex::{CodexConfig, CodexError, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::remote::{Launcher, RemoteSpec};
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
use clawbridge_fixtures::peers::sshd::{LoopbackSshd, sshd_or_skip_with_env};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock, start_mock_requiring_key};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The variable codex's provider reads its key from in these tests.
const KEY_VAR: &str = "CLAWBRIDGE_TEST_MOCK_KEY";
/// The key: it must never show up on any process's command line.
const KEY: &str = "sk-ssh-live-7b1e0c";
/// How long the remote side gets to be gone after the bridge is killed (the wrapper's graces are
/// 2 s + 2 s after its stdin ends).
const GONE_LIMIT: Duration = Duration::from_secs(20);

/// `config.toml` for the mock, with the provider's key read from [`KEY_VAR`].
fn keyed_config(mock: &clawbridge_fixtures::mock_model::MockModel) -> String {
    config_toml(mock).replace("wire_api = \"responses\"", &format!("wire_api = \"responses\"\nenv_key = \"{KEY_VAR}\""))
}

/// Every process's pid, parent and command line (NULs as spaces), read from /proc now.
fn processes() -> BTreeMap<i32, (i32, String)> {
    clawbridge_fixtures::peers::live_processes()
        .filter_map(|(pid, state)| {
            // `state` is what follows the command's name: `S <ppid> …`.
            let ppid = state.split_whitespace().nth(1)?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            Some((pid, (ppid, cmdline)))
        })
        .collect()
}

/// The processes below `root` (not `root` itself), with their command lines.
fn descendants(root: i32) -> BTreeMap<i32, String> {
    let all = processes();
    let mut found = BTreeMap::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for (pid, (ppid, cmdline)) in &all {
            if *ppid == parent && found.insert(*pid, cmdline.clone()).is_none() {
                frontier.push(*pid);
            }
        }
    }
    found
}

/// Watches the processes below `root` (the sshd) until stopped; whether one's command line held `needle`.
fn watch_below(root: u32, needle: String) -> (Arc<AtomicBool>, std::thread::JoinHandle<bool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let watcher = std::thread::spawn(move || {
        let mut seen = false;
        while !flag.load(Ordering::Relaxed) && !seen {
            seen = descendants(root as i32).values().any(|c| c.contains(&needle));
            std::thread::sleep(Duration::from_millis(10));
        }
        seen
    });
    (stop, watcher)
}

/// Watches every command line on the machine until stopped; the ones that held `secret`.
fn watch_argv_for(secret: &'static str) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<String>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let watcher = std::thread::spawn(move || {
        let mut seen = Vec::new();
        while !flag.load(Ordering::Relaxed) {
            seen.extend(processes().into_values().map(|(_, cmdline)| cmdline).filter(|c| c.contains(secret)));
            std::thread::sleep(Duration::from_millis(10));
        }
        seen
    });
    (stop, watcher)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_with_an_approval_runs_through_ssh_and_its_key_never_reaches_a_command_line() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    // The far side's HOME is its own: the sandbox's, not the account's real one.
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &sandbox.home())]) else { return };
    // The mock answers only the key: a turn that works proves the key reached the remote codex.
    let mock = start_mock_requiring_key(&command_mock(true), KEY).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), keyed_config(&mock)).unwrap();

    let launcher = Launcher::new(sshd.launcher()).unwrap();
    let mut config = CodexConfig::new(clawbridge_bridge::backend::find_program("ssh".as_ref()).unwrap());
    config.remote = Some(RemoteSpec { launcher, program: codex.clone().into_os_string() });
    config.codex_home = Some(sandbox.codex_home());
    config.env = sandbox.env();
    config.secret_env.push((KEY_VAR.into(), Secret::new(KEY)));
    config.cwd = Some(sandbox.work());
    config.turn_idle_timeout = Duration::from_secs(60);
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };

    let (stop_watch, watcher) = watch_argv_for(KEY);
    let mut session = CodexSession::connect(config, hooks).await.expect("codex over ssh passes the version gate");
    assert_eq!(session.server_version().to_string(), "0.169.0");
    let remote = descendants(sshd.pid() as i32);
    assert!(
        remote.values().any(|c| c.contains("clawbridge-remote")) && remote.values().any(|c| c.contains("app-server")),
        "codex runs under the wrapper on the sshd side: {remote:?}"
    );
    let result = live_command_turn(&mut session, &sandbox.work()).await;
    stop_watch.store(true, Ordering::Relaxed);
    let leaked = watcher.join().unwrap();

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}\n{}", result.terminal, mock_log(&mock));
    assert_eq!(observed.reports().len(), 1, "the approved command's terminal, once");
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);
    assert!(leaked.is_empty(), "the key was on a command line: {leaked:?}");

    let stop = session.shutdown().await.expect("its own app-server (through ssh)");
    assert!(
        stop.exit.is_some_and(clawbridge_bridge::exit::ExitState::success),
        "ssh ended with the remote codex's clean exit: {stop:?}"
    );
    assert_remote_gone(&sshd, &remote);
}

/// A new thread in `cwd` and, on it, the turn that runs the live test command.
async fn live_command_turn(session: &mut CodexSession, cwd: &std::path::Path) -> AttemptResult {
    let options = ThreadOptions { cwd: Some(cwd.display().to_string()), ..ThreadOptions::default() };
    let thread = session.start_thread(&options).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(
            &thread.thread_id,
            "Please run the live test command.",
            &mut |_: &Event| {},
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs")
}

/// The processes below `sshd` once `ready` holds for them; fails with the bridge's stderr if the
/// bridge ends first, or after 60 s naming `what` never started.
async fn wait_for_remote(
    sshd: &LoopbackSshd,
    bridge: &mut std::process::Child,
    mock: &clawbridge_fixtures::mock_model::MockModel,
    what: &str,
    ready: impl Fn(&BTreeMap<i32, String>) -> bool,
) -> BTreeMap<i32, String> {
    let started = Instant::now();
    loop {
        let remote = descendants(sshd.pid() as i32);
        if ready(&remote) {
            return remote;
        }
        if let Ok(Some(status)) = bridge.try_wait() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut bridge.stderr.take().unwrap(), &mut stderr).unwrap();
            panic!("the bridge ended before {what} ran ({status}): {stderr}\n{}", mock_log(mock));
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{what} never started: {remote:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn mock_log(mock: &clawbridge_fixtures::mock_model::MockModel) -> String {
    clawbridge_fixtures::peers::describe_requests(&mock.requests())
}

/// Waits until none of `remote` (processes of the sshd side, by pid and command line) is alive,
/// and no process at all is left below the daemon.
fn assert_remote_gone(sshd: &LoopbackSshd, remote: &BTreeMap<i32, String>) {
    let started = Instant::now();
    loop {
        let now = processes();
        let left: Vec<(i32, String)> = remote
            .iter()
            .filter(|(pid, cmdline)| now.get(pid).is_some_and(|(_, now_cmdline)| now_cmdline == *cmdline))
            .map(|(pid, cmdline)| (*pid, cmdline.clone()))
            .chain(descendants(sshd.pid() as i32))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(started.elapsed() < GONE_LIMIT, "left behind on the remote side: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A mock that runs a command that outlives any turn, one part of it detached in a session of its
/// own (as a tool command may do), which codex's own cleanup of its commands does not reach.
fn slow_command_mock(tag: &str) -> serde_json::Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "done"}},
        {"when": {"last_user_text_contains": "run", "tool_offered": "exec_command"},
         "reply": {"run_command": {"command": format!(
                   "setsid sh -c 'sleep 600; echo {tag}-detached' </dev/null >/dev/null 2>&1 & sleep 600; echo {tag}"), "escalated": true,
                                   "justification": "Allow the slow command?", "shell": "/bin/bash"}}}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_killed_mid_turn_leaves_nothing_running_on_the_remote_side() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    // The far side's HOME is its own: the sandbox's, not the account's real one.
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &sandbox.home())]) else { return };
    let tag = format!("clawbridge-ssh-kill-{}", std::process::id());
    let mock = start_mock(&slow_command_mock(&tag)).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let launcher: Vec<String> = sshd.launcher().into_iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let bridge_config = sandbox.root().join("clawbridge.toml");
    std::fs::write(
        &bridge_config,
        format!(
            "[codex]\nlauncher = {launcher:?}\nbin = {codex:?}\nhome = {home:?}\n",
            codex = codex.display().to_string(),
            home = sandbox.codex_home().display().to_string()
        ),
    )
    .unwrap();

    let mut bridge = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "codex", "--json", "--approve", "Please run the slow command."])
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CLAWBRIDGE_CONFIG", &bridge_config)
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();

    // Wait until the approved command runs on the remote side.
    // The detached part itself (not the shell line that names it) is running.
    let remote = wait_for_remote(&sshd, &mut bridge, &mock, "the slow command", |remote| {
        remote.values().any(|c| c.starts_with("sh -c sleep 600") && c.contains(&tag))
    })
    .await;
    assert!(remote.values().any(|c| c.contains("clawbridge-remote")), "the wrapper runs there: {remote:?}");
    assert!(remote.values().any(|c| c.contains("app-server")), "codex runs there: {remote:?}");
    let key_path = sshd.client_key().display().to_string();
    let local = descendants(bridge.id() as i32);
    assert!(local.values().any(|c| c.contains(&key_path)), "the bridge runs ssh: {local:?}");

    bridge.kill().unwrap();
    bridge.wait().unwrap();

    assert_remote_gone(&sshd, &remote);
    // The launcher (the bridge's child) went with it.
    let ssh_left: Vec<String> =
        processes().into_values().map(|(_, cmdline)| cmdline).filter(|c| c.contains(&key_path)).collect();
    assert!(ssh_left.is_empty(), "the local ssh survived the bridge: {ssh_left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_turn_with_an_approved_command_runs_through_ssh_and_its_key_never_reaches_a_command_line() {
    use clawbridge_fixtures::peers::claude;
    let Some(claude_bin) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    // The far side's HOME is its own (no local default travels): the sandbox's, so the CLI's
    // files land there and not in the account's real home.
    let home = sandbox.home();
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &home)]) else { return };
    let mock = start_mock_requiring_key(&claude::bash_mock(), claude::API_KEY).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let launcher: Vec<String> = sshd.launcher().into_iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let bridge_config = sandbox.root().join("clawbridge.toml");
    std::fs::write(
        &bridge_config,
        format!("[claude]\nlauncher = {launcher:?}\nbin = {:?}\n", claude_bin.display().to_string()),
    )
    .unwrap();

    let (stop_watch, watcher) = watch_argv_for(claude::API_KEY);
    let (stop_below, below) = watch_below(sshd.pid(), claude_bin.display().to_string());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "claude", "--json", "--approve", "Please run the live test command."])
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", claude::API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAWBRIDGE_CONFIG", &bridge_config)
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    stop_watch.store(true, Ordering::Relaxed);
    let leaked = watcher.join().unwrap();
    stop_below.store(true, Ordering::Relaxed);
    assert!(below.join().unwrap(), "claude ran below the sshd, not here");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), mock_log(&mock));
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(result["result"]["terminal"]["kind"], "ok", "{result}");
    assert_eq!(result["result"]["tools"][0]["toolName"], "bash", "{result}");
    // The command ran on the far side, in the session's directory there.
    let written = std::fs::read_to_string(sandbox.work().join("out.txt")).unwrap_or_default();
    assert!(written.contains(claude::MARKER), "{written:?}");
    assert!(leaked.is_empty(), "the key was on a command line: {leaked:?}");
    assert_remote_gone(&sshd, &BTreeMap::new());
}

/// Needs no peers: `run --launcher` reaches the backend, which looks for the launcher here (not
/// for codex) and names it when it is missing; an empty one is refused by the flag itself.
#[test]
fn run_launcher_flag_is_the_program_looked_up_here() {
    let state = tempfile::tempdir().unwrap();
    let run = |launcher: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
            .envs(clawbridge_fixtures::no_user_config())
            .args(["run", "--backend", "codex", "--launcher", launcher, "hi"])
            .env("CLAWBRIDGE_STATE_DIR", state.path())
            .env("CLAWBRIDGE_CODEX_BIN", "/far/side/codex")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let missing = run("/nonexistent/launcher -T box");
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(stderr.contains("the launcher `/nonexistent/launcher -T box` is not found on PATH"), "{stderr}");
    let empty = run("");
    let stderr = String::from_utf8_lossy(&empty.stderr);
    assert!(!empty.status.success());
    assert!(stderr.contains("a launcher command line"), "{stderr}");
}

/// An ACP agent (codex-acp) through the loopback sshd: the agent's command line runs on the far
/// side, its approved command too, and nothing of the session is left there afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_turn_with_an_approved_command_runs_through_ssh() {
    use clawbridge_fixtures::peers::acp::{AcpAgent, AcpSandbox, command_mock, marker_command};
    let agent = AcpAgent::CodexAcp;
    if let Err(why) = agent.available() {
        assert!(!clawbridge_fixtures::peers::peers_required(), "CLAWBRIDGE_REQUIRE_PEERS=1 but {why}");
        eprintln!("skipped: peers not installed: {why}");
        return;
    }
    let acp = AcpSandbox::new(agent, &command_mock(agent, marker_command(agent))).await.unwrap();
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &acp.sandbox.home())]) else { return };
    let launcher: Vec<String> = sshd.launcher().into_iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let state = tempfile::tempdir().unwrap();
    let (stop_below, below) = watch_below(sshd.pid(), "codex-acp".into());
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "acp", "--json", "--approve", "Please run the live test command."])
        .current_dir(acp.work())
        .env_clear()
        .envs(acp.bridge_env())
        .env("CLAWBRIDGE_ACP_LAUNCHER", shell_words::join(&launcher))
        .env("CLAWBRIDGE_CONFIG", clawbridge_fixtures::no_user_config()[0].1.clone())
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), out).await.expect("the run ends").unwrap();
    stop_below.store(true, Ordering::Relaxed);
    assert!(below.join().unwrap(), "codex-acp ran below the sshd, not here");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{}", mock_log(&acp.mock));
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(result["result"]["terminal"]["kind"], "ok", "{result}\n{stderr}");
    let texts = result["result"]["assistantTexts"].to_string();
    assert!(texts.contains(MARKER), "the command ran and the model quoted it: {texts}\n{stderr}");
    assert_remote_gone(&sshd, &BTreeMap::new());
}

/// The graces the test's own daemon is stopped with.
const DAEMON_STOP: clawbridge_bridge::supervisor::StopPolicy = clawbridge_bridge::supervisor::StopPolicy {
    after_stdin_close: Duration::from_secs(2),
    after_sigterm: Duration::from_secs(2),
    after_sigkill: Duration::from_secs(2),
};

/// The managed daemon's stand-in on the "remote" side (the same machine, outside the sshd):
/// `codex app-server --listen unix://SOCKET` in the sandbox's CODEX_HOME, started by the test,
/// not by a session. (`codex app-server daemon start` would copy the 290 MB binary into the
/// home and leave a helper `daemon stop` does not end: docs/peers/codex.md.) The proxy reaches
/// both the same way, through a Unix socket that speaks WebSocket.
struct Daemon {
    /// The server, in a process group of its own; killed with its group if the test fails.
    process: clawbridge_bridge::supervisor::ChildProcess,
    /// Where it listens.
    socket: std::path::PathBuf,
}

impl Daemon {
    async fn start(codex: &std::path::Path, sandbox: &Sandbox) -> Daemon {
        use clawbridge_bridge::supervisor::{ChildProcess, CommandSpec, SpawnOptions};
        let socket = sandbox.root().join("daemon.sock");
        let spec = CommandSpec {
            program: codex.to_path_buf(),
            args: vec!["app-server".into(), "--listen".into(), format!("unix://{}", socket.display()).into()],
            cwd: Some(sandbox.work()),
            env: sandbox.env().with_var("CODEX_HOME", sandbox.codex_home()),
        };
        let process = ChildProcess::spawn(&spec, SpawnOptions::default()).expect("the daemon starts");
        let started = Instant::now();
        while tokio::net::UnixStream::connect(&socket).await.is_err() {
            assert!(process.try_exit().is_none(), "the daemon exited: {}", process.stderr().snapshot());
            assert!(started.elapsed() < Duration::from_secs(30), "no socket: {}", process.stderr().snapshot());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Daemon { process, socket }
    }

    fn running(&self) -> bool {
        self.process.try_exit().is_none()
    }

    /// Stops it and checks nothing of its group is left.
    async fn stop(&mut self) {
        let pid = self.process.pid() as i32;
        self.process.stop(DAEMON_STOP).await;
        assert!(!clawbridge_bridge::supervisor::group_alive(pid), "the daemon's group is gone");
    }
}

/// A session's config that reaches `daemon` through `ssh … codex app-server proxy --sock …`.
fn proxy_config(sshd: &LoopbackSshd, codex: &std::path::Path, sandbox: &Sandbox, daemon: &Daemon) -> CodexConfig {
    let launcher = Launcher::new(sshd.launcher()).unwrap();
    let mut config = CodexConfig::new(clawbridge_bridge::backend::find_program("ssh".as_ref()).unwrap());
    config.remote = Some(RemoteSpec { launcher, program: codex.to_path_buf().into_os_string() });
    config.connect = Some(format!("proxy://{}", daemon.socket.display()).parse().unwrap());
    config.codex_home = Some(sandbox.codex_home());
    config.env = sandbox.env();
    config.cwd = Some(sandbox.work());
    config.turn_idle_timeout = Duration::from_secs(60);
    config.handshake_timeout = Duration::from_secs(30);
    config
}

fn allow_all(observer: Arc<RecordingObserver>) -> SessionHooks {
    SessionHooks { approver: Arc::new(FixedApprover(ApprovalDecision::Allow)), tools: Arc::new(NoHostTools), observer }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_turn_with_an_approval_reaches_a_daemon_through_app_server_proxy_over_ssh() {
    use clawbridge_bridge::connection::PipeError;
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &sandbox.home())]) else { return };
    let mock = start_mock(&command_mock(true)).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let mut daemon = Daemon::start(&codex, &sandbox).await;
    let config = proxy_config(&sshd, &codex, &sandbox, &daemon);

    let observed = Arc::new(RecordingObserver::default());
    let mut session =
        CodexSession::connect(config.clone(), allow_all(observed.clone())).await.expect("the proxy reaches the daemon");
    assert_eq!(session.server_version().to_string(), "0.169.0", "the daemon's own userAgent passed the gate");
    let remote = descendants(sshd.pid() as i32);
    assert!(
        remote.values().any(|c| c.contains("clawbridge-remote"))
            && remote.values().any(|c| c.contains("app-server proxy")),
        "the proxy runs under the wrapper on the sshd side: {remote:?}"
    );
    assert!(!remote.values().any(|c| c.contains("--listen")), "the daemon is not the session's: {remote:?}");
    let result = live_command_turn(&mut session, &sandbox.work()).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}\n{}", result.terminal, mock_log(&mock));
    assert_eq!(observed.reports().len(), 1, "the approved command's terminal, once");
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);

    let stop = session.shutdown().await.expect("the session owns its proxy (through ssh)");
    assert!(
        stop.exit.is_some_and(clawbridge_bridge::exit::ExitState::success),
        "the proxy ended cleanly on its stdin's end: {stop:?}"
    );
    assert_remote_gone(&sshd, &remote);
    assert!(daemon.running(), "the daemon is the user's: it outlives the session");

    daemon.stop().await;
    let Err(error) = CodexSession::connect(config, allow_all(Arc::default())).await else {
        panic!("reached a stopped daemon");
    };
    let message = error.to_string();
    assert!(matches!(error, CodexError::Pipe(PipeError::Ended { .. })), "{error:?}");
    assert!(
        message.contains(&daemon.socket.display().to_string()) && message.contains("ssh -F /dev/null -T"),
        "names the socket and the launcher: {message}"
    );
    assert!(message.contains("failed to connect to socket"), "carries the proxy's reason: {message}");
    assert!(!message.contains("<unknown>"), "without the backtrace: {message}");
    assert_remote_gone(&sshd, &BTreeMap::new());
}

/// A mock whose "slowly" turn streams its answer ten minutes late (a turn the bridge is killed in),
/// and whose command turn runs the approved live test command.
fn slow_or_command_mock() -> serde_json::Value {
    let mut scenario = command_mock(true);
    let slow = json!({"when": {"last_user_text_contains": "slowly"}, "reply": {"text": "late", "delay_ms": 600_000}});
    scenario["rules"].as_array_mut().unwrap().insert(0, slow);
    scenario
}

/// `clawbridge run` with `config` (and nothing of the account's), its output piped.
fn bridge_run(
    sandbox: &Sandbox,
    config: &std::path::Path,
    state: &std::path::Path,
    args: &[&str],
) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .args(args)
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CLAWBRIDGE_CONFIG", config)
        .env("CLAWBRIDGE_STATE_DIR", state)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_killed_on_a_proxied_daemon_leaves_nothing_remote_and_the_daemon_serves_the_next() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let Some(sshd) = sshd_or_skip_with_env(&[("HOME", &sandbox.home())]) else { return };
    let mock = start_mock(&slow_or_command_mock()).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let mut daemon = Daemon::start(&codex, &sandbox).await;
    let state = tempfile::tempdir().unwrap();
    let launcher: Vec<String> = sshd.launcher().into_iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let bridge_config = sandbox.root().join("clawbridge.toml");
    std::fs::write(
        &bridge_config,
        format!(
            "[codex]\nlauncher = {launcher:?}\nbin = {codex:?}\nhome = {home:?}\nconnect = {connect:?}\n",
            codex = codex.display().to_string(),
            home = sandbox.codex_home().display().to_string(),
            connect = format!("proxy://{}", daemon.socket.display()),
        ),
    )
    .unwrap();

    let mut bridge = bridge_run(
        &sandbox,
        &bridge_config,
        state.path(),
        &["run", "--backend", "codex", "--json", "Please answer slowly."],
    )
    .stdout(std::process::Stdio::null())
    .spawn()
    .unwrap();
    // Wait until the turn runs: the proxy is up on the far side and the daemon asked the model.
    let remote = wait_for_remote(&sshd, &mut bridge, &mock, "the turn", |remote| {
        remote.values().any(|c| c.contains("app-server proxy")) && !mock.requests().is_empty()
    })
    .await;
    assert!(remote.values().any(|c| c.contains("clawbridge-remote")), "the wrapper runs there: {remote:?}");
    let key_path = sshd.client_key().display().to_string();
    assert!(descendants(bridge.id() as i32).values().any(|c| c.contains(&key_path)), "the bridge runs ssh");

    bridge.kill().unwrap();
    bridge.wait().unwrap();
    assert_remote_gone(&sshd, &remote);
    let ssh_left: Vec<String> =
        processes().into_values().map(|(_, cmdline)| cmdline).filter(|c| c.contains(&key_path)).collect();
    assert!(ssh_left.is_empty(), "the local ssh survived the bridge: {ssh_left:?}");
    assert!(daemon.running(), "the daemon survives the bridge that used it");

    let out = bridge_run(
        &sandbox,
        &bridge_config,
        state.path(),
        &["run", "--backend", "codex", "--json", "--approve", "Please run the live test command."],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stderr), mock_log(&mock));
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();
    assert_eq!(result["result"]["terminal"]["kind"], "ok", "{result}");
    assert!(result["result"]["assistantTexts"].to_string().contains(MARKER), "{result}");
    assert_remote_gone(&sshd, &BTreeMap::new());
    assert!(daemon.running(), "and it still runs");

    // Stopped, the daemon is reported by the doctor as an endpoint nothing listens on is.
    daemon.stop().await;
    let out = bridge_run(&sandbox, &bridge_config, state.path(), &["doctor", "--backend", "codex"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&daemon.socket.display().to_string()) && stdout.contains("failed to connect to socket"),
        "{stdout}"
    );
    assert!(stdout.contains("codex app-server daemon start"), "says how to start one: {stdout}");
    assert_remote_gone(&sshd, &BTreeMap::new());
}
