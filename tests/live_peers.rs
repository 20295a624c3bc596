//! Live tests: the real pinned peers (Codex app-server, Claude Code) complete a tool-using turn
//! against the scripted mock model server (`clawbridge_fixtures::mock_model`), driven through the
//! bridge's own supervisor, transport and (for Codex) JSON-RPC peer.
//!
//! The peers come from `CLAWBRIDGE_CODEX_BIN` / `CLAWBRIDGE_CLAUDE_BIN`, else from the output of
//! `scripts/install-peers.sh agents`. When a peer is missing the test says so on stderr and
//! returns, unless `CLAWBRIDGE_REQUIRE_PEERS=1`, which turns that into a failure.
//!
//! Nothing here leaves the machine: the peers' only model endpoint is the mock on 127.0.0.1, and
//! each peer runs with a fresh temp HOME and TMPDIR and the switches that stop background traffic.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::rpc::{HandlerError, HandlerFailure, PeerConfig, PeerEvent, RequestHandler};
use clawbridge_bridge::supervisor::{
    ChildProcess, CommandSpec, EnvPolicy, SpawnOptions, StopOutcome, StopPolicy, StopStage, group_alive,
};
use clawbridge_bridge::transport::{DEFAULT_MAX_LINE_BYTES, Frame, LineSender, frame_reader, spawn_line_writer};
use clawbridge_fixtures::mock_model::{LoggedRequest, MockConfig, MockModel, Scenario};
use clawbridge_protocol::jsonrpc::{Dialect, ErrorObject, Notification, Request, codes};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// The whole turn (spawn to final event) must fit in this; the stop comes on top.
const TURN_LIMIT: Duration = Duration::from_secs(45);

/// Graces of the staged stop: both CLIs exit within a second of stdin EOF when healthy.
const STOP: StopPolicy = StopPolicy {
    after_stdin_close: Duration::from_secs(3),
    after_sigterm: Duration::from_secs(2),
    after_sigkill: Duration::from_secs(2),
};

/// Prints `$((6*7))` through a shell, so the expected `live-42` appears only if the command really
/// ran (it is not in the command text the model sent).
const MARKER: &str = "live-42";

// ---------------------------------------------------------------------------------------------
// Finding the peers

/// `name=path` lines printed by the installer, read once per test binary.
fn installer_output() -> &'static str {
    static OUTPUT: OnceLock<String> = OnceLock::new();
    OUTPUT.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        match std::process::Command::new("bash")
            .arg(root.join("scripts/install-peers.sh"))
            .arg("agents")
            .current_dir(root)
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            Ok(out) => {
                eprintln!(
                    "live_peers: scripts/install-peers.sh agents failed ({}): {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                String::new()
            }
            Err(e) => {
                eprintln!("live_peers: cannot run scripts/install-peers.sh: {e}");
                String::new()
            }
        }
    })
}

/// The executable of peer `name` (`codex` or `claude`), or `None` after saying why on stderr.
/// Panics instead when `CLAWBRIDGE_REQUIRE_PEERS=1`.
fn peer(name: &str) -> Option<PathBuf> {
    let var = format!("CLAWBRIDGE_{}_BIN", name.to_ascii_uppercase());
    let (found, why) = match std::env::var_os(&var) {
        Some(path) => {
            let path = PathBuf::from(path);
            let why = format!("{var} names {}, which is not a file", path.display());
            (Some(path).filter(|p| p.is_file()), why)
        }
        None => {
            let listed = installer_output()
                .lines()
                .find_map(|line| line.strip_prefix(&format!("{name}=")))
                .map(PathBuf::from)
                .filter(|p| p.is_file());
            let why = format!("the {name} peer is not installed (set {var} or run `scripts/install-peers.sh agents`)");
            (listed, why)
        }
    };
    if found.is_none() {
        if std::env::var("CLAWBRIDGE_REQUIRE_PEERS").as_deref() == Ok("1") {
            panic!("CLAWBRIDGE_REQUIRE_PEERS=1 but {why}");
        }
        eprintln!("skipped: peers not installed: {why}");
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Shared scaffolding

/// A test's private directories: the peer's HOME, TMPDIR and working directory.
struct Sandbox {
    /// Owns everything below; removed on drop.
    root: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let root = tempfile::tempdir().expect("a temp dir");
        for dir in ["home", "tmp", "work"] {
            std::fs::create_dir_all(root.path().join(dir)).expect("create sandbox dirs");
        }
        Sandbox { root }
    }

    fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    fn tmp(&self) -> PathBuf {
        self.root.path().join("tmp")
    }

    fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The environment every peer gets: only PATH from outside, everything else pinned here.
    fn env(&self) -> EnvPolicy {
        EnvPolicy { inherit: vec!["PATH".into()], set: Vec::new(), remove: Vec::new() }
            .with_var("HOME", self.home())
            .with_var("TMPDIR", self.tmp())
            .with_var("LANG", "C.UTF-8")
            .with_var("TERM", "dumb")
            .with_var("NO_COLOR", "1")
            .with_var("NO_PROXY", "127.0.0.1,localhost")
    }
}

async fn start_mock(scenario: Value) -> MockModel {
    let scenario = Scenario::from_json_str(&scenario.to_string()).expect("a valid scenario");
    MockModel::start(MockConfig { scenario, ..MockConfig::default() }).await.expect("the mock model starts")
}

/// The mock's request log, compact, for failure messages.
fn describe_requests(requests: &[LoggedRequest]) -> String {
    requests
        .iter()
        .map(|r| format!("  #{} {} {} -> {} (rule {:?})", r.seq, r.method, r.path, r.status, r.rule))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checks a staged stop left nothing behind.
fn assert_stopped(label: &str, pid: u32, outcome: &StopOutcome) {
    assert_ne!(outcome.stage, StopStage::Unkillable, "{label}: processes survived the stop");
    assert!(!group_alive(pid as i32), "{label}: process group {pid} still has members after the stop");
}

/// Every string anywhere inside `value`.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(s) => vec![s.as_str()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------------
// Codex app-server

/// The scenario both Codex tests share: an escalated command (so Codex asks for approval), then
/// a reply quoting the command's output.
fn codex_scenario() -> Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The command printed:", "text_quoting_tool_result": true,
                   "usage": {"input_tokens": 300, "output_tokens": 12}}},
        {"when": {"last_user_text_contains": "run", "tool_offered": "exec_command"},
         "reply": {"reasoning": "The user wants a command run outside the sandbox.",
                   "run_command": {"command": "echo live-$((6*7))", "escalated": true,
                                   "justification": "Allow the live test command?"}}}
    ]})
}

fn codex_config(mock: &MockModel) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
approval_policy = "on-request"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[model_providers.mock]
name = "Mock provider"
base_url = "{base}/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
supports_websockets = false

[analytics]
enabled = false
[feedback]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
tool_suggest = false
skill_mcp_dependency_install = false
"#,
        base = mock.base_url()
    )
}

/// Accepts command approvals and records every request Codex sends; refuses anything else.
struct ApproveCommands {
    /// What Codex asked, for the assertions.
    seen: Arc<Mutex<Vec<Request>>>,
}

impl RequestHandler for ApproveCommands {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let answer = match request.method.as_str() {
            "item/commandExecution/requestApproval" => Ok(json!({"decision": "accept"})),
            other => Err(HandlerError::Reply(ErrorObject::new(
                codes::METHOD_NOT_FOUND,
                format!("the live test does not handle `{other}`"),
            ))),
        };
        self.seen.lock().unwrap_or_else(|e| e.into_inner()).push(request);
        Box::pin(async move { answer })
    }

    fn fallback(&self, method: &str, _params: Option<&Value>, _failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        // The safe answer to an approval nobody could decide is "no".
        if method.ends_with("/requestApproval") {
            Ok(json!({"decision": "decline"}))
        } else {
            Err(ErrorObject::new(codes::INTERNAL_ERROR, "unhandled"))
        }
    }
}

/// What one Codex turn produced.
struct CodexTurn {
    /// The `initialize` result.
    init: Value,
    /// Every notification up to and including `turn/completed`.
    notes: Vec<Notification>,
}

async fn codex_turn(
    conn: &AgentConnection,
    events: &mut tokio::sync::mpsc::Receiver<PeerEvent>,
    cwd: &Path,
    prompt: &str,
) -> Result<CodexTurn, String> {
    let peer = conn.peer();
    let init = peer
        .request(
            "initialize",
            Some(&json!({"clientInfo": {"name": "clawbridge", "title": "clawbridge", "version": "0.1.0"},
                         "capabilities": {"experimentalApi": false}})),
        )
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    peer.notify::<Value>("initialized", None).await.map_err(|e| format!("initialized: {e}"))?;
    let thread = peer
        .request("thread/start", Some(&json!({"cwd": cwd, "approvalPolicy": "on-request", "sandbox": "read-only"})))
        .await
        .map_err(|e| format!("thread/start: {e}"))?;
    let thread_id = thread["thread"]["id"]
        .as_str()
        .ok_or_else(|| format!("thread/start result without thread.id: {thread}"))?
        .to_owned();
    peer.request(
        "turn/start",
        Some(&json!({"threadId": thread_id,
                     "input": [{"type": "text", "text": prompt, "text_elements": []}]})),
    )
    .await
    .map_err(|e| format!("turn/start: {e}"))?;
    let mut notes = Vec::new();
    loop {
        match events.recv().await {
            Some(PeerEvent::Notification(note)) => {
                let done = note.method == "turn/completed";
                notes.push(note);
                if done {
                    return Ok(CodexTurn { init, notes });
                }
            }
            Some(PeerEvent::Problem(problem)) => eprintln!("codex stream problem: {problem}"),
            Some(PeerEvent::Closed(gone)) => return Err(format!("codex went away: {gone}")),
            Some(_) => {}
            None => return Err("the event channel closed".into()),
        }
    }
}

/// The handle, event stream and request record of a freshly spawned `codex app-server`.
type CodexSession = (AgentConnection, tokio::sync::mpsc::Receiver<PeerEvent>, Arc<Mutex<Vec<Request>>>);

/// Spawns `codex app-server` configured to use `mock` as its only model provider.
fn spawn_codex(codex: PathBuf, sandbox: &Sandbox, mock: &MockModel) -> CodexSession {
    let codex_home = sandbox.root.path().join("codex_home");
    std::fs::create_dir_all(&codex_home).expect("create CODEX_HOME");
    std::fs::write(codex_home.join("config.toml"), codex_config(mock)).expect("write config");

    // The originator override would change the userAgent that version parsing relies on.
    let env = sandbox
        .env()
        .with_var("CODEX_HOME", &codex_home)
        .with_var("RUST_LOG", "warn")
        .without("CODEX_INTERNAL_ORIGINATOR_OVERRIDE");
    let spec = CommandSpec { program: codex, args: vec!["app-server".into()], cwd: Some(sandbox.work()), env };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(ApproveCommands { seen: seen.clone() });
    let config = PeerConfig {
        dialect: Dialect::Codex,
        request_timeout: Duration::from_secs(30),
        handler_timeout: Duration::from_secs(10),
        label: "codex".into(),
        ..PeerConfig::default()
    };
    let (conn, events) =
        AgentConnection::spawn(&spec, SpawnOptions::default(), config, handler).expect("codex app-server spawns");
    (conn, events, seen)
}

/// Runs one turn on a spawned Codex, then stops it and checks nothing is left. Returns the turn
/// and Codex's stderr tail.
async fn drive_codex(
    conn: AgentConnection,
    mut events: tokio::sync::mpsc::Receiver<PeerEvent>,
    cwd: &Path,
    prompt: &str,
) -> (Result<CodexTurn, String>, String) {
    let pid = conn.process().pid();
    let turn = tokio::time::timeout(TURN_LIMIT, codex_turn(&conn, &mut events, cwd, prompt))
        .await
        .unwrap_or_else(|_| Err(format!("no turn/completed within {TURN_LIMIT:?}")));
    let stderr = conn.process().stderr().snapshot();
    let outcome = conn.shutdown(STOP).await;
    assert_stopped("codex", pid, &outcome);
    (turn, stderr)
}

fn notes_named<'a>(notes: &'a [Notification], method: &str) -> Vec<&'a Value> {
    notes.iter().filter(|n| n.method == method).filter_map(|n| n.params.as_ref()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_an_approved_command_against_the_mock() {
    let Some(codex) = peer("codex") else {
        return;
    };
    let sandbox = Sandbox::new();
    let mock = start_mock(codex_scenario()).await;
    let (conn, events, seen) = spawn_codex(codex, &sandbox, &mock);
    let (turn, stderr) = drive_codex(conn, events, &sandbox.work(), "Please run the live test command.").await;
    let requests = mock.requests();
    eprintln!("codex: mock saw\n{}", describe_requests(&requests));
    let turn = turn.unwrap_or_else(|e| {
        panic!("codex turn failed: {e}\nmock saw:\n{}\ncodex stderr:\n{stderr}", describe_requests(&requests))
    });
    let context = || {
        format!(
            "mock saw:\n{}\nnotifications: {:?}",
            describe_requests(&requests),
            turn.notes.iter().map(|n| &n.method).collect::<Vec<_>>()
        )
    };

    let user_agent = turn.init["userAgent"].as_str().unwrap_or_default();
    assert!(user_agent.starts_with("clawbridge/0."), "unexpected userAgent {user_agent:?}");

    let approvals: Vec<Request> = seen.lock().unwrap().clone();
    assert_eq!(
        approvals.iter().filter(|r| r.method == "item/commandExecution/requestApproval").count(),
        1,
        "exactly one command approval expected, got {approvals:?}"
    );
    let approval = approvals[0].params.clone().unwrap_or_default();
    assert_eq!(approval["reason"], "Allow the live test command?");

    let completed = notes_named(&turn.notes, "item/completed");
    let command = completed
        .iter()
        .map(|p| &p["item"])
        .find(|item| item["type"] == "commandExecution")
        .unwrap_or_else(|| panic!("no completed commandExecution item\n{}", context()));
    assert_eq!(command["status"], "completed", "{command}");
    assert_eq!(command["exitCode"], 0, "{command}");
    assert!(
        command["aggregatedOutput"].as_str().is_some_and(|out| out.contains(MARKER)),
        "the command's output lacks {MARKER:?}: {command}"
    );
    let message = completed
        .iter()
        .map(|p| &p["item"])
        .find(|item| item["type"] == "agentMessage")
        .unwrap_or_else(|| panic!("no agentMessage item\n{}", context()));
    assert!(
        message["text"].as_str().is_some_and(|t| t.contains(MARKER)),
        "the agent message does not quote the output: {message}"
    );
    assert!(
        completed.iter().any(|p| p["item"]["type"] == "reasoning"),
        "the scripted reasoning did not surface as an item\n{}",
        context()
    );

    let finished = notes_named(&turn.notes, "turn/completed");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["turn"]["status"], "completed", "{}", finished[0]);

    let model_calls: Vec<&LoggedRequest> = requests.iter().filter(|r| r.api.is_some()).collect();
    assert_eq!(model_calls.len(), 2, "{}", context());
    let follow_up = &model_calls[1].body;
    let output_reached_model = follow_up["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .any(|item| strings(&item["output"]).iter().any(|s| s.contains(MARKER)));
    assert!(output_reached_model, "the tool output never reached the model\n{}", context());
    assert!(requests.iter().all(|r| r.status < 400), "the mock answered an error\n{}", context());
}

// ---------------------------------------------------------------------------------------------
// Claude Code (stream-json; not JSON-RPC, so it is driven with the transport directly)

fn claude_scenario() -> Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The command printed:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "run", "tool_offered": "Bash"},
         // A writing command: read-only ones are auto-allowed and would never reach can_use_tool.
         "reply": {"reasoning": "The user wants a command run.",
                   "text": "I'll run that command.",
                   "run_command": {"command": "echo live-$((6*7)) | tee out.txt",
                                   "justification": "Write the live marker"}}}
    ], "default": {"text": "Nothing to do."}})
}

/// What one Claude turn produced.
#[derive(Default)]
struct ClaudeTurn {
    /// The reply to our `initialize` control request.
    init: Option<Value>,
    /// `can_use_tool` requests the CLI sent.
    permission_requests: Vec<Value>,
    /// Every stdout line, parsed.
    lines: Vec<Value>,
    /// The `result` line.
    result: Option<Value>,
    /// Why the turn could not be completed, if it could not; the fields above hold what came first.
    failure: Option<String>,
}

impl ClaudeTurn {
    /// Ends the turn as failed, keeping what was seen for the failure message.
    fn failed(mut self, why: String) -> ClaudeTurn {
        self.failure = Some(why);
        self
    }
}

fn control_success(request_id: &str, response: Value) -> Value {
    json!({"type": "control_response",
           "response": {"subtype": "success", "request_id": request_id, "response": response}})
}

async fn claude_turn(
    frames: &mut (impl futures::Stream<Item = std::io::Result<Frame>> + Unpin),
    out: &LineSender,
    prompt: &str,
) -> ClaudeTurn {
    let mut turn = ClaudeTurn::default();
    let init = json!({"type": "control_request", "request_id": "req_1_init",
                      "request": {"subtype": "initialize", "hooks": null}});
    if let Err(e) = out.send_json(&init).await {
        return turn.failed(format!("cannot send initialize: {e}"));
    }
    loop {
        let line = match frames.next().await {
            Some(Ok(Frame::Line(line))) => line,
            Some(Ok(other)) => {
                eprintln!("claude stream problem: {other:?}");
                continue;
            }
            Some(Err(e)) => return turn.failed(format!("reading claude's stdout: {e}")),
            None => return turn.failed("claude's stdout closed before a result".into()),
        };
        // Some builds print non-JSON debug lines on stdout; only `{` lines are protocol.
        if !line.starts_with('{') {
            continue;
        }
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(e) => return turn.failed(format!("bad JSON line from claude ({e}): {line}")),
        };
        turn.lines.push(message.clone());
        let reply = match message["type"].as_str() {
            Some("control_response") if message["response"]["request_id"] == "req_1_init" && turn.init.is_none() => {
                if message["response"]["subtype"] != "success" {
                    return turn.failed(format!("initialize failed: {message}"));
                }
                turn.init = Some(message["response"]["response"].clone());
                Some(json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
                            "message": {"role": "user",
                                        "content": [{"type": "text", "text": prompt}]}}))
            }
            Some("control_request") => {
                let id = message["request_id"].as_str().unwrap_or_default();
                let request = &message["request"];
                if request["subtype"] == "can_use_tool" {
                    turn.permission_requests.push(request.clone());
                    Some(control_success(id, json!({"behavior": "allow", "updatedInput": request["input"]})))
                } else {
                    Some(json!({"type": "control_response",
                                "response": {"subtype": "error", "request_id": id,
                                             "error": "not supported by the live test"}}))
                }
            }
            Some("result") => {
                turn.result = Some(message);
                return turn;
            }
            _ => None,
        };
        if let Some(reply) = reply {
            if let Err(e) = out.send_json(&reply).await {
                return turn.failed(format!("cannot write to claude: {e}"));
            }
        }
    }
}

/// Spawns Claude Code in bidirectional stream-json mode with `mock` as its API endpoint and
/// permission prompts routed to us as `can_use_tool` control requests.
fn spawn_claude(claude: PathBuf, sandbox: &Sandbox, mock: &MockModel) -> ChildProcess {
    let env = sandbox
        .env()
        .with_var("ANTHROPIC_BASE_URL", mock.base_url())
        .with_var("ANTHROPIC_API_KEY", "sk-test")
        .with_var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    // CLI >= 2.1.39 refuses to start inside another Claude Code session.
    let env = env.without("CLAUDECODE");
    let spec = CommandSpec {
        program: claude,
        args: [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-prompt-tool",
            "stdio",
            "--permission-mode",
            "default",
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
        cwd: Some(sandbox.work()),
        env,
    };
    ChildProcess::spawn(&spec, SpawnOptions::default()).expect("claude spawns")
}

/// Runs one turn on a spawned Claude (initialize, one user line, answer its control requests
/// until the `result`), then stops it and checks nothing is left. Returns the turn and stderr.
async fn drive_claude(mut process: ChildProcess, prompt: &str) -> (ClaudeTurn, String) {
    let pid = process.pid();
    let stdin = process.take_stdin().expect("stdin is piped");
    let stdout = process.take_stdout().expect("stdout is piped");
    let (out, _writer) = spawn_line_writer(stdin, 64);
    let mut frames = frame_reader(stdout, DEFAULT_MAX_LINE_BYTES);
    let turn = tokio::time::timeout(TURN_LIMIT, claude_turn(&mut frames, &out, prompt))
        .await
        .unwrap_or_else(|_| ClaudeTurn::default().failed(format!("no result within {TURN_LIMIT:?}")));
    // Closing stdin is the first stage of the stop; the writer owns the pipe.
    out.close();
    let stderr = process.stderr().snapshot();
    let outcome = process.stop(STOP).await;
    assert_stopped("claude", pid, &outcome);
    (turn, stderr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_an_allowed_bash_call_against_the_mock() {
    let Some(claude) = peer("claude") else {
        return;
    };
    let sandbox = Sandbox::new();
    let mock = start_mock(claude_scenario()).await;
    let process = spawn_claude(claude, &sandbox, &mock);
    let (turn, stderr) = drive_claude(process, "Please run the live test command.").await;
    let requests = mock.requests();
    eprintln!("claude: mock saw\n{}", describe_requests(&requests));
    if let Some(e) = &turn.failure {
        panic!(
            "claude turn failed: {e}\nmock saw:\n{}\nlines: {:#?}\nclaude stderr:\n{stderr}",
            describe_requests(&requests),
            turn.lines.iter().map(|l| l.to_string()).collect::<Vec<_>>()
        )
    }
    let context = || format!("mock saw:\n{}", describe_requests(&requests));

    let init = turn.init.as_ref().expect("initialize was answered");
    assert!(init.is_object(), "initialize reply: {init}");

    assert_eq!(turn.permission_requests.len(), 1, "exactly one can_use_tool expected: {:?}", turn.permission_requests);
    assert_eq!(turn.permission_requests[0]["tool_name"], "Bash");

    let tool_results: Vec<&Value> = turn
        .lines
        .iter()
        .filter(|l| l["type"] == "user")
        .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_result")
        .collect();
    assert!(
        tool_results.iter().any(|b| b["is_error"] != true && strings(&b["content"]).iter().any(|s| s.contains(MARKER))),
        "no successful tool_result with {MARKER:?}: {tool_results:?}"
    );
    let written = std::fs::read_to_string(sandbox.work().join("out.txt")).unwrap_or_default();
    assert!(written.contains(MARKER), "out.txt holds {written:?}");

    let result = turn.result.as_ref().expect("a result line");
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["result"].as_str().is_some_and(|t| t.contains(MARKER)),
        "the final text does not quote the output: {result}"
    );

    let model_calls: Vec<&LoggedRequest> = requests.iter().filter(|r| r.route() == "/v1/messages").collect();
    assert!(model_calls.len() >= 2, "{}", context());
    let reached_model = model_calls.iter().any(|r| {
        r.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "user")
            .flat_map(|m| m["content"].as_array().into_iter().flatten())
            .filter(|block| block["type"] == "tool_result")
            .any(|block| strings(&block["content"]).iter().any(|s| s.contains(MARKER)))
    });
    assert!(reached_model, "the tool_result never reached the model\n{}", context());
    assert!(requests.iter().all(|r| r.status < 400), "the mock answered an error\n{}", context());
}

// ---------------------------------------------------------------------------------------------
// Scripted model errors: each CLI must report them as a failed turn, promptly.

/// An HTTP 500 the CLIs must not retry (`x-should-retry: false`; Codex also has retries off).
fn failing_scenario() -> Value {
    json!({"rules": [{"reply": {"error": {"status": 500, "message": "scripted outage"}}}]})
}

/// Runs a plain prompt on Codex against `scenario`; `None` when Codex is not installed.
async fn codex_failed_turn(scenario: Value) -> Option<(CodexTurn, Vec<LoggedRequest>)> {
    let codex = peer("codex")?;
    let sandbox = Sandbox::new();
    let mock = start_mock(scenario).await;
    let (conn, events, _seen) = spawn_codex(codex, &sandbox, &mock);
    let (turn, stderr) = drive_codex(conn, events, &sandbox.work(), "Say hello.").await;
    let requests = mock.requests();
    eprintln!("codex: mock saw\n{}", describe_requests(&requests));
    let turn = turn.unwrap_or_else(|e| panic!("codex turn failed: {e}\ncodex stderr:\n{stderr}"));
    let finished = notes_named(&turn.notes, "turn/completed");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["turn"]["status"], "failed", "{}", finished[0]);
    let model_calls = requests.iter().filter(|r| r.api.is_some()).count();
    assert_eq!(model_calls, 1, "Codex retried despite retries being off");
    Some((turn, requests))
}

/// The final (`willRetry:false`) `error` notifications of a turn.
fn final_errors(turn: &CodexTurn) -> Vec<&Value> {
    notes_named(&turn.notes, "error").into_iter().filter(|e| e["willRetry"] == false).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reports_an_http_500_as_a_failed_turn() {
    let Some((turn, _)) = codex_failed_turn(failing_scenario()).await else {
        return;
    };
    // Codex replaces the body of a 5xx with its own canned text; only the category survives.
    let errors = final_errors(&turn);
    assert!(
        errors.iter().any(|e| e["error"]["codexErrorInfo"] == "internalServerError"),
        "no final internalServerError notification: {errors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reports_an_in_stream_failure_with_its_message() {
    let scenario = json!({"rules": [{"reply": {"error": {"in_stream": true, "message": "scripted outage"}}}]});
    let Some((turn, _)) = codex_failed_turn(scenario).await else {
        return;
    };
    let errors = final_errors(&turn);
    assert!(
        errors.iter().any(|e| strings(&e["error"]).iter().any(|s| s.contains("scripted outage"))),
        "no final error notification carrying the model's message: {errors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_reports_a_model_error_as_an_error_result() {
    let Some(claude) = peer("claude") else {
        return;
    };
    let sandbox = Sandbox::new();
    let mock = start_mock(failing_scenario()).await;
    let process = spawn_claude(claude, &sandbox, &mock);
    let (turn, stderr) = drive_claude(process, "Say hello.").await;
    let requests = mock.requests();
    eprintln!("claude: mock saw\n{}", describe_requests(&requests));
    if let Some(e) = &turn.failure {
        panic!("claude turn failed: {e}\nclaude stderr:\n{stderr}");
    }

    let result = turn.result.as_ref().expect("a result line");
    // An API failure may come as subtype "success": `is_error` is the authoritative flag.
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["result"].as_str().is_some_and(|t| t.contains("scripted outage")),
        "the result does not carry the model's message: {result}"
    );
    let model_calls = requests.iter().filter(|r| r.api.is_some()).count();
    assert_eq!(model_calls, 1, "Claude retried despite x-should-retry: false");
}
