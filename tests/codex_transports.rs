//! The Codex session over the real `codex app-server` 0.169.0's own listeners instead of a child's
//! stdio: a Unix socket and a loopback WebSocket with each auth mode, against the scripted mock
//! model. Each test starts `codex app-server --listen …` itself (in a sandbox, on 127.0.0.1) and
//! stops it after; the bridge only connects (or runs a local `codex app-server proxy` to the
//! socket), so its shutdown leaves the server running.
//! Skipped with a printed reason when the peers are not installed (failed when they are required).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexError, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_bridge::supervisor::{ChildProcess, CommandSpec, SpawnOptions, StopPolicy, StopStage, group_alive};
use clawbridge_bridge::transport::bearer::{BearerClaims, DEFAULT_TOKEN_LIFETIME, SecretSource, WsAuth};
use clawbridge_bridge::transport::endpoint::{ConnectError, Endpoint};
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use tokio_util::sync::CancellationToken;

const STOP: StopPolicy = StopPolicy {
    after_stdin_close: Duration::from_secs(2),
    after_sigterm: Duration::from_secs(2),
    after_sigkill: Duration::from_secs(2),
};

/// The sandbox, the mock, and an app-server listening in them.
struct Listening {
    sandbox: Sandbox,
    _mock: MockModel,
    server: ChildProcess,
    endpoint: Endpoint,
}

/// How long a fresh app-server may take to listen (it loads its config and starts its runtime).
const LISTEN_WITHIN: Duration = Duration::from_secs(30);

/// Starts `codex app-server --listen <listen> <extra…>` in a sandbox whose model is the mock, and
/// waits until it accepts connections.
async fn listening(codex: &Path, listen: impl Fn(&Sandbox) -> (String, Vec<String>)) -> Listening {
    listening_to(codex, &command_mock(true), listen).await
}

/// [`listening`], with the mock playing `scenario`.
async fn listening_to(
    codex: &Path,
    scenario: &serde_json::Value,
    listen: impl Fn(&Sandbox) -> (String, Vec<String>),
) -> Listening {
    let sandbox = Sandbox::new().expect("a sandbox");
    let mock = start_mock(scenario).await.expect("the mock starts");
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let (url, extra) = listen(&sandbox);
    let mut args: Vec<std::ffi::OsString> = vec!["app-server".into(), "--listen".into(), url.clone().into()];
    args.extend(extra.into_iter().map(Into::into));
    let spec = CommandSpec {
        program: codex.to_path_buf(),
        args,
        cwd: Some(sandbox.work()),
        env: sandbox.env().with_var("CODEX_HOME", sandbox.codex_home()),
    };
    let server = ChildProcess::spawn(&spec, SpawnOptions::default()).expect("the app-server starts");
    let endpoint: Endpoint = url.parse().expect("a valid endpoint");
    let deadline = tokio::time::Instant::now() + LISTEN_WITHIN;
    loop {
        let up = match &endpoint {
            Endpoint::Unix { path } => tokio::net::UnixStream::connect(path).await.is_ok(),
            Endpoint::WebSocket { host, port, .. } => {
                tokio::net::TcpStream::connect((host.as_str(), *port)).await.is_ok()
            }
            _ => unreachable!("only unix and ws endpoints are started here"),
        };
        if up {
            break;
        }
        assert!(server.try_exit().is_none(), "the app-server exited: {}", server.stderr().snapshot());
        assert!(
            tokio::time::Instant::now() < deadline,
            "the app-server did not listen: {}",
            server.stderr().snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Listening { sandbox, _mock: mock, server, endpoint }
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn write_secret(sandbox: &Sandbox, name: &str, value: &str) -> PathBuf {
    let path = sandbox.root().join(name);
    std::fs::write(&path, format!("{value}\n")).unwrap();
    path
}

impl Listening {
    fn config(&self, codex: &Path, auth: WsAuth) -> CodexConfig {
        let mut config = CodexConfig::new(codex);
        config.connect = Some(self.endpoint.clone());
        config.ws_auth = auth;
        config.turn_idle_timeout = Duration::from_secs(60);
        config.handshake_timeout = Duration::from_secs(20);
        config
    }

    async fn connect(
        &self,
        codex: &Path,
        auth: WsAuth,
        observed: Arc<RecordingObserver>,
    ) -> Result<CodexSession, CodexError> {
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
            tools: Arc::new(NoHostTools),
            observer: observed,
        };
        CodexSession::connect(self.config(codex, auth), hooks).await
    }

    fn options(&self) -> ThreadOptions {
        ThreadOptions { cwd: Some(self.sandbox.work().display().to_string()), ..ThreadOptions::default() }
    }

    /// Stops the server this test started and checks nothing of it is left.
    async fn stop(mut self) {
        let pid = self.server.pid() as i32;
        self.server.stop(STOP).await;
        assert!(!group_alive(pid), "the app-server's group is gone");
    }
}

async fn turn(session: &mut CodexSession, thread: &str) -> (AttemptResult, Vec<Event>) {
    let mut events = Vec::new();
    let prompt = "Please run the live test command.";
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(thread, prompt, &mut |e: &Event| events.push(e.clone()), &CancellationToken::new()),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs");
    (result, events)
}

/// A full turn with an approved command over `session`, and its shutdown, which must leave the
/// server (not ours) running.
async fn approved_turn_then_disconnect(listening: &Listening, mut session: CodexSession, observed: &RecordingObserver) {
    assert_eq!(session.server_version().to_string(), "0.169.0", "the version gate ran");
    assert_eq!(session.pid(), None, "a connection owns no process");
    let thread = session.start_thread(&listening.options()).await.unwrap();
    let (result, events) = turn(&mut session, &thread.thread_id).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "the tool terminal is reported once: {reports:?}");
    assert_eq!(reports[0].tool_name, "bash");
    assert!(reports[0].execution_started, "the approved command ran");
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);
    assert!(events.iter().any(|e| matches!(e, Event::ToolFinished(f) if f.outcome == ToolOutcome::Success)));
    let outcome = session.shutdown().await;
    assert_eq!(outcome.expect("its own connection").stage, StopStage::NotOwned);
    assert!(listening.server.try_exit().is_none(), "closing the connection leaves the server running");
}

#[tokio::test]
async fn a_unix_socket_connection_runs_a_full_turn_with_an_approval() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let listening =
        listening(&codex, |sandbox| (format!("unix://{}", sandbox.root().join("app.sock").display()), vec![])).await;
    let observed = Arc::new(RecordingObserver::default());
    let session = listening.connect(&codex, WsAuth::None, observed.clone()).await.expect("connects over the socket");
    approved_turn_then_disconnect(&listening, session, &observed).await;
    listening.stop().await;
}

fn capability_listener(token: &'static str) -> impl Fn(&Sandbox) -> (String, Vec<String>) {
    move |sandbox| {
        let file = write_secret(sandbox, "server-token", token);
        let args = ["--ws-auth", "capability-token", "--ws-token-file"].map(String::from).to_vec();
        (format!("ws://127.0.0.1:{}", free_port()), [args, vec![file.display().to_string()]].concat())
    }
}

#[tokio::test]
async fn a_websocket_connection_with_a_capability_token_runs_a_full_turn_with_an_approval() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let listening = listening(&codex, capability_listener("the-right-token")).await;
    let token = write_secret(&listening.sandbox, "client-token", "the-right-token");
    let observed = Arc::new(RecordingObserver::default());
    let auth = WsAuth::CapabilityToken { token: SecretSource::File(token) };
    let session = listening.connect(&codex, auth, observed.clone()).await.expect("the token is accepted");
    approved_turn_then_disconnect(&listening, session, &observed).await;
    listening.stop().await;
}

#[tokio::test]
async fn a_wrong_capability_token_is_refused_with_an_error_naming_the_endpoint() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let listening = listening(&codex, capability_listener("the-right-token")).await;
    let observed = Arc::new(RecordingObserver::default());
    for (auth, what) in [
        (
            WsAuth::CapabilityToken {
                token: SecretSource::File(write_secret(&listening.sandbox, "wrong", "a-wrong-token")),
            },
            "capability token",
        ),
        (WsAuth::None, "connection (no token was configured)"),
    ] {
        let error = listening.connect(&codex, auth, observed.clone()).await.expect_err("refused");
        let message = error.to_string();
        assert!(matches!(&error, CodexError::Connect(ConnectError::Refused { status: 401, .. })), "{error:?}");
        assert!(!error.is_retryable(), "a refused credential stays refused");
        assert!(message.contains(&format!("the app-server at {} refused the {what}", listening.endpoint)), "{message}");
        assert!(message.contains("HTTP 401"), "{message}");
    }
    assert!(observed.reports().is_empty());
    listening.stop().await;
}

/// The signed-bearer-token test's shared secret (codex wants at least 32 bytes).
const SECRET: &str = "a-shared-secret-of-at-least-32-bytes!";

#[tokio::test]
async fn a_signed_bearer_token_is_accepted_and_one_signed_with_another_secret_is_refused() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let listening = listening(&codex, |sandbox| {
        let file = write_secret(sandbox, "server-secret", SECRET);
        let args =
            ["--ws-auth", "signed-bearer-token", "--ws-issuer", "clawbridge-test", "--ws-audience", "codex-test"];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.extend(["--ws-shared-secret-file".into(), file.display().to_string()]);
        (format!("ws://127.0.0.1:{}", free_port()), args)
    })
    .await;
    let claims = BearerClaims { issuer: Some("clawbridge-test".into()), audience: Some("codex-test".into()) };
    let signed = |name: &str, secret: &str| WsAuth::SignedBearerToken {
        secret: SecretSource::File(write_secret(&listening.sandbox, name, secret)),
        claims: claims.clone(),
        lifetime: DEFAULT_TOKEN_LIFETIME,
    };
    let observed = Arc::new(RecordingObserver::default());
    let mut session =
        listening.connect(&codex, signed("client-secret", SECRET), observed.clone()).await.expect("accepted");
    session.start_thread(&listening.options()).await.expect("a thread starts over the signed connection");
    assert_eq!(session.shutdown().await.expect("its own connection").stage, StopStage::NotOwned);

    let forged = signed("other-secret", "another-secret-that-is-also-32-bytes-long");
    let error = listening.connect(&codex, forged, observed.clone()).await.expect_err("a token of another secret");
    assert!(error.to_string().contains("refused the signed bearer token (HTTP 401"), "{error}");
    let wrong_audience = WsAuth::SignedBearerToken {
        secret: SecretSource::File(write_secret(&listening.sandbox, "client-secret-2", SECRET)),
        claims: BearerClaims { audience: Some("someone-else".into()), ..claims.clone() },
        lifetime: DEFAULT_TOKEN_LIFETIME,
    };
    let error = listening.connect(&codex, wrong_audience, observed).await.expect_err("another audience");
    assert!(error.to_string().contains("audience"), "the server's reason is kept: {error}");
    listening.stop().await;
}

#[tokio::test]
async fn a_missing_socket_fails_with_an_error_naming_it() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let dir = tempfile::tempdir().unwrap();
    let endpoint: Endpoint = format!("unix://{}", dir.path().join("nobody.sock").display()).parse().unwrap();
    let mut config = CodexConfig::new(&codex);
    config.connect = Some(endpoint.clone());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(RecordingObserver::default()),
    };
    let error = CodexSession::connect(config, hooks).await.expect_err("nothing listens");
    assert!(matches!(&error, CodexError::Connect(ConnectError::Unreachable { .. })), "{error:?}");
    assert!(error.to_string().contains(&format!("cannot reach the app-server at {endpoint}")), "{error}");
}

// The mock model serves from this runtime while the CLI runs: it needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_with_connect_drives_a_turn_on_the_listening_server_and_leaves_it_running() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let scenario = serde_json::json!({"default": {"text": "Hello over the socket."}});
    let listening = listening_to(&codex, &scenario, |sandbox| {
        (format!("unix://{}", sandbox.root().join("run.sock").display()), vec![])
    })
    .await;
    let state = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "codex", "--connect"])
        .arg(listening.endpoint.to_string())
        .args(["--json", "Say hello."])
        .current_dir(listening.sandbox.work())
        .env_clear()
        // No codex on PATH and no CODEX_HOME: everything of codex is the server's.
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", listening.sandbox.home())
        .env("CLAWBRIDGE_STATE_DIR", state.path());
    let out = tokio::task::spawn_blocking(move || command.output().expect("clawbridge runs")).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let last: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("a result line");
    assert_eq!(last["result"]["terminal"]["kind"], "ok", "{stdout}");
    assert_eq!(last["result"]["assistantTexts"], serde_json::json!(["Hello over the socket."]));
    assert!(listening.server.try_exit().is_none(), "the bridge's exit leaves the server running");

    // The same flag for another backend is refused before anything runs.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "claude", "--connect"])
        .arg(listening.endpoint.to_string())
        .arg("hi")
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--connect is for --backend codex"));
    listening.stop().await;
}

#[tokio::test]
async fn a_listening_server_killed_mid_turn_fails_the_attempt_over_the_connection_without_a_hang() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let scenario = serde_json::json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "done"}},
        {"when": {"last_user_text_contains": "run"},
         "reply": {"run_command": {"command": "sleep 30", "escalated": true, "justification": "wait"}}}
    ]});
    // Loopback ws:// without --ws-auth: codex accepts any upgrade there.
    let listening = listening_to(&codex, &scenario, |_| (format!("ws://127.0.0.1:{}", free_port()), vec![])).await;
    let observed = Arc::new(RecordingObserver::default());
    let mut session = listening.connect(&codex, WsAuth::None, observed.clone()).await.expect("connects");
    let thread = session.start_thread(&listening.options()).await.unwrap();
    let pgid = listening.server.pid() as i32;
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &thread.thread_id,
            "Please run the slow command.",
            &mut |e: &Event| {
                if matches!(e, Event::ToolStarted(_)) {
                    // The server dies while its command runs: the socket closes under the turn.
                    let _ =
                        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
                }
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("no hang")
    .expect("the attempt ends with a result");
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "the interrupted tool still gets its terminal: {reports:?}");
    assert_eq!(reports[0].outcome, clawbridge_bridge::attempt::hooks::TerminalOutcome::Failure);
    assert_eq!(session.shutdown().await.expect("its own connection").stage, StopStage::NotOwned);
    listening.stop().await;
}

/// The token the logging test looks for.
const TOKEN: &str = "tok-must-never-be-logged-8c1f";

// The mock model serves from this runtime while the CLI runs: it needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_never_reaches_a_log_even_at_trace_level() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let scenario = serde_json::json!({"default": {"text": "Hello with a token."}});
    let listening = listening_to(&codex, &scenario, capability_listener(TOKEN)).await;
    let token_file = write_secret(&listening.sandbox, "client-token", TOKEN);
    let config = listening.sandbox.root().join("clawbridge.toml");
    let text = format!(
        "[codex]\nconnect = \"{}\"\nws-auth = \"capability-token\"\nws-token-file = \"{}\"\n",
        listening.endpoint,
        token_file.display()
    );
    std::fs::write(&config, text).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .arg("--config")
        .arg(&config)
        .args(["run", "--backend", "codex", "--json", "Say hello."])
        .current_dir(listening.sandbox.work())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", listening.sandbox.home())
        .env("CLAWBRIDGE_LOG", "trace")
        .env("CLAWBRIDGE_STATE_DIR", state.path());
    let out = tokio::task::spawn_blocking(move || command.output().expect("clawbridge runs")).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}\n{stdout}");
    assert!(stdout.contains("Hello with a token."), "{stdout}");
    // The handshake was logged (so the check below looks at a log that saw it), without its bearer.
    assert!(stderr.contains("handshake") || stderr.contains("Handshake"), "no handshake in the trace log");
    assert!(!stderr.contains(TOKEN) && !stdout.contains(TOKEN), "the token leaked into the output");
    let mut logs = String::new();
    for entry in std::fs::read_dir(state.path().join("logs")).unwrap() {
        logs.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
    }
    assert!(!logs.contains(TOKEN), "the token leaked into the log file");
    listening.stop().await;
}

/// `connect = "proxy:///…"` without a launcher: the local `codex app-server proxy --sock …` is the
/// session's child, the WebSocket runs over its stdio, and the session's stop ends the proxy on
/// its stdin's end (not by a signal) while the listening server runs on.
#[tokio::test]
async fn a_local_app_server_proxy_carries_a_full_turn_and_its_stop_ends_only_the_proxy() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let listening =
        listening(&codex, |sandbox| (format!("unix://{}", sandbox.root().join("app.sock").display()), vec![])).await;
    let Endpoint::Unix { path } = &listening.endpoint else { unreachable!("a unix listener") };
    let mut config = listening.config(&codex, WsAuth::None);
    config.connect = Some(Endpoint::Proxy { socket: Some(path.clone()) });
    config.codex_home = Some(listening.sandbox.codex_home());
    config.env = listening.sandbox.env();
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = CodexSession::connect(config, hooks).await.expect("the proxy reaches the listener");
    assert_eq!(session.server_version().to_string(), "0.169.0", "the server's own userAgent passed the gate");
    let proxy = session.pid().expect("the session owns its proxy");
    let cmdline = std::fs::read(format!("/proc/{proxy}/cmdline")).unwrap();
    assert!(String::from_utf8_lossy(&cmdline).replace('\0', " ").contains("app-server proxy --sock"), "{cmdline:?}");
    let thread = session.start_thread(&listening.options()).await.unwrap();
    let (result, _events) = turn(&mut session, &thread.thread_id).await;
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    assert_eq!(observed.reports().len(), 1, "the approved command's terminal, once");
    assert!(result.assistant_texts.iter().any(|t| t.contains(MARKER)), "{:?}", result.assistant_texts);
    let outcome = session.shutdown().await.expect("its own proxy");
    assert_eq!(outcome.stage, StopStage::StdinClosed, "the proxy ended on its input's end: {outcome:?}");
    assert!(!group_alive(proxy as i32), "the proxy's group is gone");
    assert!(listening.server.try_exit().is_none(), "the server is not the session's");
    listening.stop().await;
}

/// A daemon that dies behind `codex app-server proxy` is noticed by the connection's keepalive:
/// the proxy only learns of it when it next copies bytes to the daemon, and the bridge's ping is
/// such bytes. The turn's idle watchdog is set far beyond the test's limit, so only the connection
/// can end this turn in time.
#[tokio::test]
async fn a_daemon_killed_behind_a_proxy_mid_turn_is_noticed_by_the_keepalive_not_the_idle_watchdog() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let scenario = serde_json::json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "done"}},
        {"when": {"last_user_text_contains": "run"},
         "reply": {"run_command": {"command": "sleep 30", "escalated": true, "justification": "wait"}}}
    ]});
    let listening = listening_to(&codex, &scenario, |sandbox| {
        (format!("unix://{}", sandbox.root().join("app.sock").display()), vec![])
    })
    .await;
    let Endpoint::Unix { path } = &listening.endpoint else { unreachable!("a unix listener") };
    let mut config = listening.config(&codex, WsAuth::None);
    config.connect = Some(Endpoint::Proxy { socket: Some(path.clone()) });
    config.codex_home = Some(listening.sandbox.codex_home());
    config.env = listening.sandbox.env();
    config.turn_idle_timeout = Duration::from_secs(600);
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = CodexSession::connect(config, hooks).await.expect("the proxy reaches the listener");
    let proxy = session.pid().expect("the session owns its proxy");
    let thread = session.start_thread(&listening.options()).await.unwrap();
    let pgid = listening.server.pid() as i32;
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &thread.thread_id,
            "Please run the slow command.",
            &mut |e: &Event| {
                if matches!(e, Event::ToolStarted(_)) {
                    let _ =
                        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
                }
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the daemon's death ends the turn long before the idle watchdog")
    .expect("the attempt ends with a result");
    assert_eq!(result.terminal.kind, TerminalKind::Failed, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "the interrupted tool still gets its terminal: {reports:?}");
    let _ = session.shutdown().await;
    assert!(!group_alive(proxy as i32), "the proxy is gone with its daemon");
    listening.stop().await;
}
