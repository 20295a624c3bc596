//! Warm shared `codex app-server`s against the real codex 0.169.0 and the scripted mock model: two
//! sessions on one server running turns at the same time, each request answered with its own
//! session's hooks; a server killed mid-turn failing only the turns on it, and the next attempt
//! getting a fresh server. Skipped with a printed reason when the peers are not installed (failed
//! when they are required).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_adapters::codex::shared::{ServerMode, ServerPool};
use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, HostToolCall, HostToolOutput, HostToolSpec, HostTools,
};
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_fixtures::hooks::{RecordingObserver, WeatherTool};
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::codex::config_toml;
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify};
use tokio_util::sync::CancellationToken;

/// Each session's turn: a command that needs an approval, then the host tool, then text. The
/// session's name travels in the prompt, the command and the tool's arguments, so a test can see
/// whose hooks answered what.
fn two_session_mock() -> Value {
    let mut rules = vec![json!({"when": {"last_tool_result_contains": "answered for"},
                                "reply": {"text": "The tool said:", "text_quoting_tool_result": true}})];
    for name in ["alpha", "beta"] {
        rules.push(
            json!({"when": {"last_user_text_contains": name, "last_tool_result_contains": format!("live-{name}")},
                          "reply": {"tool_call": {"name": "lookup_weather", "arguments": {"city": name}}}}),
        );
        rules.push(json!({"when": {"last_user_text_contains": name, "tool_offered": "exec_command"},
                          "reply": {"run_command": {"command": format!("echo live-{name}"), "escalated": true,
                                                    "justification": "Allow the live test command?",
                                                    "shell": "/bin/bash"}}}));
    }
    json!({"rules": rules, "default": {"text": "Nothing to do."}})
}

/// Keeps the commands it was asked to approve; allows each once every session has asked (so the
/// turns provably run at the same time), or holds it until released.
struct NamedApprover {
    /// The commands asked about, in order.
    asked: Mutex<Vec<String>>,
    /// Met by every session's first approval.
    together: Arc<Barrier>,
    /// Set: hold every decision until `release` is notified.
    hold: Option<Arc<Notify>>,
    /// Told when a request has been asked (for the kill test).
    asking: Arc<Notify>,
}

impl NamedApprover {
    fn new(together: Arc<Barrier>, hold: Option<Arc<Notify>>, asking: Arc<Notify>) -> Arc<Self> {
        Arc::new(NamedApprover { asked: Mutex::default(), together, hold, asking })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for NamedApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        self.asked.lock().unwrap().push(request.arguments["command"].to_string());
        let (together, hold, asking) = (self.together.clone(), self.hold.clone(), self.asking.clone());
        Box::pin(async move {
            asking.notify_one();
            together.wait().await;
            if let Some(hold) = hold {
                hold.notified().await;
            }
            Ok(ApprovalDecision::Allow)
        })
    }
}

/// The weather tool, keeping the calls it ran.
#[derive(Default)]
struct NamedTool {
    /// The arguments of every call, in order.
    calls: Mutex<Vec<Value>>,
}

impl HostTools for NamedTool {
    fn specs(&self) -> Vec<HostToolSpec> {
        WeatherTool.specs()
    }

    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
        self.calls.lock().unwrap().push(call.arguments.clone());
        WeatherTool.call(call)
    }
}

struct Live {
    sandbox: Sandbox,
    _mock: MockModel,
    codex: PathBuf,
}

async fn live(scenario: Value) -> Option<Live> {
    let codex = peer_or_skip("codex")?;
    let sandbox = Sandbox::new().expect("a sandbox");
    let mock = start_mock(&scenario).await.expect("the mock starts");
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    Some(Live { sandbox, _mock: mock, codex })
}

impl Live {
    fn config(&self) -> CodexConfig {
        let mut config = CodexConfig::new(&self.codex);
        config.codex_home = Some(self.sandbox.codex_home());
        // Codex's log on its stderr, so a crash report has a tail to show.
        config.env = self.sandbox.env().with_var("RUST_LOG", "info");
        config.cwd = Some(self.sandbox.work());
        config.turn_idle_timeout = Duration::from_secs(60);
        config
    }

    async fn session(&self, pool: &ServerPool, approver: Arc<NamedApprover>, tools: Arc<NamedTool>) -> CodexSession {
        self.session_with(pool, self.config(), approver, tools).await
    }

    async fn session_with(
        &self,
        pool: &ServerPool,
        config: CodexConfig,
        approver: Arc<NamedApprover>,
        tools: Arc<NamedTool>,
    ) -> CodexSession {
        let hooks = SessionHooks { approver, tools, observer: Arc::new(RecordingObserver::default()) };
        CodexSession::on_shared(pool, config, hooks).await.expect("a seat on a shared codex app-server")
    }

    fn options(&self) -> ThreadOptions {
        ThreadOptions { cwd: Some(self.sandbox.work().display().to_string()), ..ThreadOptions::default() }
    }
}

fn pool() -> Arc<ServerPool> {
    ServerPool::new(ServerMode::DEFAULT_LIMITS)
}

async fn turn(session: &mut CodexSession, thread: &str, prompt: &str) -> AttemptResult {
    tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(thread, prompt, &mut |_: &Event| {}, &CancellationToken::new()),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs")
}

#[tokio::test]
async fn two_sessions_share_one_server_and_each_request_reaches_its_own_sessions_hooks() {
    let Some(live) = live(two_session_mock()).await else { return };
    let pool = pool();
    let together = Arc::new(Barrier::new(2));
    let asking = Arc::new(Notify::new());
    let (approve_a, approve_b) =
        (NamedApprover::new(together.clone(), None, asking.clone()), NamedApprover::new(together, None, asking));
    let (tool_a, tool_b) = (Arc::new(NamedTool::default()), Arc::new(NamedTool::default()));
    let mut a = live.session(&pool, approve_a.clone(), tool_a.clone()).await;
    let mut b = live.session(&pool, approve_b.clone(), tool_b.clone()).await;
    assert_eq!(spawned_pid(&a), spawned_pid(&b), "both sessions are on one app-server");
    assert_eq!(pool.server_count(), 1);
    let thread_a = a.start_thread(&live.options()).await.unwrap().thread_id;
    let thread_b = b.start_thread(&live.options()).await.unwrap().thread_id;
    assert_ne!(thread_a, thread_b);

    // Each approver waits for the other's request: neither turn can end unless both run at once.
    let (result_a, result_b) = tokio::join!(
        turn(&mut a, &thread_a, "Session alpha: run the command, then look up the weather."),
        turn(&mut b, &thread_b, "Session beta: run the command, then look up the weather."),
    );
    for (name, result) in [("alpha", &result_a), ("beta", &result_b)] {
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "{name}: {:?}", result.terminal);
        let said = result.assistant_texts.join("\n");
        assert!(said.contains(&format!("lookup_weather answered for {{\"city\":\"{name}\"}}")), "{name}: {said}");
    }
    for (name, approver) in [("alpha", &approve_a), ("beta", &approve_b)] {
        let asked = approver.asked();
        // Codex words the command its own way (`/bin/bash -lc '…'`); it is the session's own.
        assert!(
            asked.len() == 1 && asked[0].contains(&format!("echo live-{name}'")),
            "{name}'s approver saw only {name}'s command: {asked:?}"
        );
    }
    assert_eq!(*tool_a.calls.lock().unwrap(), vec![json!({"city": "alpha"})], "alpha's tool ran only alpha's call");
    assert_eq!(*tool_b.calls.lock().unwrap(), vec![json!({"city": "beta"})], "beta's tool ran only beta's call");
    assert_eq!(pool.pids(), vec![spawned_pid(&a)], "still the one server");

    let pid = spawned_pid(&a) as i32;
    a.shutdown().await;
    b.shutdown().await;
    assert!(group_alive(pid), "leaving a shared server leaves it warm");
    pool.shutdown().await;
    assert!(!group_alive(pid), "the pool's shutdown stops it: no orphan");
}

#[tokio::test]
async fn a_server_killed_mid_turn_fails_only_its_turns_and_the_next_attempt_gets_a_fresh_one() {
    let Some(live) = live(two_session_mock()).await else { return };
    let pool = pool();
    let together = Arc::new(Barrier::new(2));
    let (hold, asking) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let approve_a = NamedApprover::new(together.clone(), Some(hold.clone()), asking.clone());
    let approve_b = NamedApprover::new(together, Some(hold.clone()), asking.clone());
    let mut a = live.session(&pool, approve_a.clone(), Arc::default()).await;
    let mut b = live.session(&pool, approve_b.clone(), Arc::default()).await;
    let thread_a = a.start_thread(&live.options()).await.unwrap().thread_id;
    let thread_b = b.start_thread(&live.options()).await.unwrap().thread_id;
    let pid = spawned_pid(&a);
    // A session whose settings differ (one more variable in the child's environment) gets a server
    // of its own, which the kill must leave alone.
    let mut elsewhere = live.config();
    elsewhere.env = elsewhere.env.with_var("CLAWBRIDGE_TEST_OTHER_SERVER", "1");
    let approve_other = NamedApprover::new(Arc::new(Barrier::new(1)), None, Arc::new(Notify::new()));
    let tool_other = Arc::new(NamedTool::default());
    let mut other = live.session_with(&pool, elsewhere, approve_other, tool_other.clone()).await;
    assert_ne!(spawned_pid(&other), pid, "other settings, another server");
    assert_eq!(pool.server_count(), 2);
    let thread_other = other.start_thread(&live.options()).await.unwrap().thread_id;

    let killer = async {
        // Both turns wait for their approval: kill the server's whole process group then.
        while approve_a.asked().is_empty() || approve_b.asked().is_empty() {
            asking.notified().await;
        }
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL)
            .expect("the server's group is there to kill");
    };
    let (result_a, result_b, ()) = tokio::join!(
        turn(&mut a, &thread_a, "Session alpha: run the command, then look up the weather."),
        turn(&mut b, &thread_b, "Session beta: run the command, then look up the weather."),
        killer,
    );
    hold.notify_waiters();
    for (name, result) in [("alpha", &result_a), ("beta", &result_b)] {
        assert_eq!(result.terminal.kind, TerminalKind::Failed, "{name}: {:?}", result.terminal);
        let why = result.terminal.message.clone().unwrap_or_default();
        assert!(why.contains("killed by signal 9"), "{name} names the exit status: {why}");
        assert!(why.contains("stderr ends with:"), "{name} carries the stderr tail: {why}");
    }
    a.shutdown().await;
    b.shutdown().await;

    // The other server's session never noticed.
    let result_other =
        turn(&mut other, &thread_other, "Session beta: run the command, then look up the weather.").await;
    assert_eq!(result_other.terminal.kind, TerminalKind::Ok, "{:?}", result_other.terminal);
    assert_eq!(*tool_other.calls.lock().unwrap(), vec![json!({"city": "beta"})]);
    let other_pid = spawned_pid(&other) as i32;
    other.shutdown().await;

    // The next attempt is not handed the dead server: a fresh one runs its turn.
    let together = Arc::new(Barrier::new(1));
    let approve_c = NamedApprover::new(together, None, Arc::new(Notify::new()));
    let tool_c = Arc::new(NamedTool::default());
    let mut c = live.session(&pool, approve_c.clone(), tool_c.clone()).await;
    assert_ne!(spawned_pid(&c), pid, "a fresh server");
    let thread_c = c.start_thread(&live.options()).await.unwrap().thread_id;
    let result_c = turn(&mut c, &thread_c, "Session alpha: run the command, then look up the weather.").await;
    assert_eq!(result_c.terminal.kind, TerminalKind::Ok, "{:?}", result_c.terminal);
    assert_eq!(*tool_c.calls.lock().unwrap(), vec![json!({"city": "alpha"})]);
    let mut pids = pool.pids();
    pids.sort_unstable();
    let mut expected = vec![spawned_pid(&c), other_pid as u32];
    expected.sort_unstable();
    assert_eq!(pids, expected, "the dead server left the pool; the other one stayed");
    let fresh = spawned_pid(&c) as i32;
    c.shutdown().await;
    pool.shutdown().await;
    assert!(!group_alive(pid as i32) && !group_alive(fresh) && !group_alive(other_pid), "no orphan of any server");
}

/// Through the seam as `serve` opens attempts: with `server = shared` the backend's second attempt
/// runs on the first one's server (no new process) and resumes the very thread still loaded in it;
/// `Backend::shutdown` stops the server.
#[tokio::test]
async fn the_backends_next_attempt_resumes_its_thread_on_the_same_warm_server() {
    use clawbridge_adapters::codex::CodexBackend;
    use clawbridge_bridge::attempt::hooks::{FixedApprover, NoHostTools, NoObserver};
    use clawbridge_bridge::backend::{Backend, OpenSettings, TurnInput, TurnRequest};

    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let backend = CodexBackend::native()
        .configured(clawbridge_adapters::AgentOptions::default(), Some(live.sandbox.codex_home()))
        .with_servers(ServerMode::Shared(ServerMode::DEFAULT_LIMITS));
    let mut thread: Option<String> = None;
    let mut pids = Vec::new();
    for n in 0..2 {
        let settings = OpenSettings {
            program: live.codex.clone(),
            session_key: "shared-seam".into(),
            cwd: Some(live.sandbox.work()),
            resume: thread.clone(),
            ..OpenSettings::default()
        };
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
            tools: Arc::new(NoHostTools),
            observer: Arc::new(NoObserver),
        };
        let mut native = backend.open(settings, hooks).await.expect("the attempt opens");
        assert_eq!(native.resume_failure(), None, "attempt {n} resumed without a failure");
        let (input, cancel) = (TurnInput::text("Say hello."), CancellationToken::new());
        let mut sink = |_: &Event| {};
        let result = native.run_turn(TurnRequest { input: &input, sink: &mut sink, cancel: &cancel }).await.unwrap();
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "attempt {n}: {:?}", result.terminal);
        if let Some(previous) = &thread {
            assert_eq!(native.native_id().as_ref(), Some(previous), "the same Codex thread");
        }
        thread = native.native_id();
        native.shutdown().await;
        pids.extend(backend.server_pool().expect("a shared pool").pids());
    }
    assert_eq!(pids.len(), 2);
    assert_eq!(pids[0], pids[1], "both attempts ran on one warm server");
    backend.shutdown().await;
    assert!(!group_alive(pids[0] as i32), "Backend::shutdown stopped it");
}

/// A session that continues a thread its shared server still has loaded and idle, under the same
/// settings, sends no `thread/resume` (`still_loaded`), and the real codex runs the turn on it;
/// other settings resume it (so they apply), and from then on those settings are the ones matched.
#[tokio::test]
async fn a_thread_still_loaded_on_the_warm_server_is_continued_without_a_resume_unless_its_settings_changed() {
    use clawbridge_bridge::attempt::hooks::{FixedApprover, NoHostTools};

    let Some(live) = live(json!({"default": {"text": "Hello from the mock model."}})).await else { return };
    let pool = pool();
    let open = || async {
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
            tools: Arc::new(NoHostTools),
            observer: Arc::new(RecordingObserver::default()),
        };
        CodexSession::on_shared(&pool, live.config(), hooks).await.expect("a seat on a shared codex app-server")
    };
    let mut first = open().await;
    let thread = first.start_thread(&live.options()).await.unwrap().thread_id;
    assert_eq!(turn(&mut first, &thread, "Say hello.").await.terminal.kind, TerminalKind::Ok);
    let pid = spawned_pid(&first);
    first.shutdown().await;

    let instructed = ThreadOptions { developer_instructions: Some("Answer briefly.".into()), ..live.options() };
    for (n, options, still_loaded) in
        [(1, live.options(), true), (2, instructed.clone(), false), (3, instructed.clone(), true)]
    {
        let mut session = open().await;
        assert_eq!(spawned_pid(&session), pid, "attempt {n}: the same warm server");
        let ready = session.resume_or_start(&thread, &options).await.unwrap();
        assert_eq!(ready.thread_id, thread, "attempt {n}: the same thread");
        assert_eq!(ready.resume_failure, None);
        assert_eq!(ready.still_loaded, still_loaded, "attempt {n}: a resume only when the settings changed");
        let result = turn(&mut session, &thread, "Say hello again.").await;
        assert_eq!(result.terminal.kind, TerminalKind::Ok, "attempt {n}: {:?}", result.terminal);
        assert!(result.assistant_texts.join("\n").contains("Hello from the mock model."), "attempt {n}");
        session.shutdown().await;
    }
    pool.shutdown().await;
    assert!(!group_alive(pid as i32), "the pool's shutdown stops it: no orphan");
}

/// The pid of the app-server a session runs on; these sessions' servers are spawned by the bridge.
fn spawned_pid(session: &CodexSession) -> u32 {
    session.pid().expect("a server the bridge spawned")
}
