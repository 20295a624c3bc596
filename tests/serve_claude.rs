//! The `clawbridge-claude` harness of `clawbridge serve` against the real claude 2.1.328 and the
//! scripted mock model, driven over stdio as the OpenClaw plugin would: a host tool served to the CLI
//! over SDK MCP (its result reaches the model), then, on the same session, a command approved by the
//! host in a second attempt that continues the same Claude session.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_bridge::rpc::{HandlerError, NoProcess, PeerConfig, PeerEvent, RequestHandler, RpcPeer};
use clawbridge_fixtures::peers::claude::{API_KEY, MARKER};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use clawbridge_protocol::jsonrpc::{Dialect, Request};
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// The host side: records every bridge → host request and every event; allows approvals, answers
/// the one host tool, acknowledges terminals and transcript rows.
#[derive(Default)]
struct Host {
    /// `(method, params)` of every request and notification, in arrival order.
    seen: Mutex<Vec<(String, Value)>>,
}

impl Host {
    fn seen(&self, method: &str) -> Vec<Value> {
        self.seen.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }
}

struct Answers(Arc<Host>);

impl RequestHandler for Answers {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let params = request.params_value().unwrap_or(Value::Null);
        self.0.seen.lock().unwrap().push((request.method.clone(), params.clone()));
        let answer = match request.method.as_str() {
            "host/approval/decide" => Ok(json!({"decision": "allow"})),
            "host/tool/execute" => {
                Ok(json!({"text": format!("Sunny in {}, 21 C", params["arguments"]["city"].as_str().unwrap_or("?")),
                          "isError": false}))
            }
            "host/toolTerminal/observe" => Ok(json!({})),
            "host/transcript/append" => {
                let rows = params["messages"].as_array().map_or(0, Vec::len);
                Ok(json!({"entries": vec![json!({"appended": true}); rows]}))
            }
            other => Err(HandlerError::Failed(format!("this host serves no {other}"))),
        };
        Box::pin(async move { answer })
    }
}

fn mock_scenario() -> Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The tool said:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "weather", "tool_offered": "mcp__openclaw__lookup_weather"},
         "reply": {"text": "Let me look that up.",
                   "tool_call": {"name": "mcp__openclaw__lookup_weather", "arguments": {"city": "Paris"}}}},
        {"when": {"last_user_text_contains": "run", "tool_offered": "Bash"},
         "reply": {"text": "I'll run that command.",
                   "run_command": {"command": "echo live-$((6*7)) | tee out.txt", "justification": "Write the marker"}}}
    ], "default": {"text": "Nothing to do."}})
}

/// Starts `clawbridge serve` in `cwd` with only `PATH`, the state dir and `env`, and connects a
/// host to it (`initialize` still to be sent).
fn serve(
    cwd: &std::path::Path,
    state: &std::path::Path,
    env: &[(&str, std::ffi::OsString)],
) -> (tokio::process::Child, RpcPeer, Arc<Host>) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .arg("serve")
        .current_dir(cwd)
        .env_clear()
        .envs(clawbridge_fixtures::no_user_config())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CLAWBRIDGE_STATE_DIR", state)
        .envs(env.iter().map(|(name, value)| (name, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("clawbridge serve starts");
    let host = Arc::new(Host::default());
    let (peer, mut events) = RpcPeer::start(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
        PeerConfig { dialect: Dialect::JsonRpc2, request_timeout: Duration::from_secs(120), ..PeerConfig::default() },
        Arc::new(Answers(host.clone())),
        Arc::new(NoProcess),
    );
    let notes = host.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let PeerEvent::Notification(note) = event {
                notes.seen.lock().unwrap().push((note.method.clone(), note.params_value().unwrap_or(Value::Null)));
            }
        }
    });
    (child, peer, host)
}

async fn initialize(peer: &RpcPeer) -> Value {
    let params = json!({"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION, "host": {"name": "openclaw", "version": "2026.9.6"},
                        "capabilities": {"hostTools": true, "approvals": true, "toolTerminals": true,
                                         "transcriptAppend": true, "userInput": false}});
    peer.request("initialize", Some(&params)).await.expect("initialize succeeds")
}

/// Shuts the bridge down as the plugin does, and waits for it to exit cleanly.
async fn shut_down(peer: RpcPeer, mut child: tokio::process::Child) {
    let shutdown = peer.request("shutdown", Some(&json!({}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], 0);
    peer.close();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
}

/// Processes whose environment holds `needle` (the CLIs a bridge started, and their children, keep
/// its settings), with their parent pids.
fn processes_with(needle: &str) -> Vec<(u32, u32)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| String::from_utf8_lossy(&env).contains(needle))
        })
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // After the parenthesised command: state, then the parent pid.
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// The bridge's environment for a live Claude Code 2.1.328 behind the mock model.
fn live_env(
    sandbox: &Sandbox,
    claude: &std::path::Path,
    mock: &clawbridge_fixtures::mock_model::MockModel,
) -> [(&'static str, std::ffi::OsString); 6] {
    [
        ("HOME", sandbox.home().into_os_string()),
        ("TMPDIR", sandbox.tmp().into_os_string()),
        ("CLAWBRIDGE_CLAUDE_BIN", claude.as_os_str().to_owned()),
        ("ANTHROPIC_BASE_URL", mock.base_url().into()),
        ("ANTHROPIC_API_KEY", API_KEY.into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
    ]
}

/// The CLIs `bridge` runs (its children carrying `needle`).
fn clis_of(bridge: u32, needle: &str) -> Vec<u32> {
    processes_with(needle).into_iter().filter(|(_, ppid)| *ppid == bridge).map(|(pid, _)| pid).collect()
}

/// A recorded plain-text turn behind `CLAWBRIDGE_CLAUDE_BIN`: the harness is listed with the
/// recorded version, the attempt runs end to end, and the CLI parked warm after it is stopped when
/// the bridge shuts down.
#[tokio::test]
async fn a_replayed_claude_attempt_runs_and_its_warm_cli_stops_with_the_bridge() {
    let dir = tempfile::tempdir().unwrap();
    let claude = clawbridge_fixtures::replay_launcher(dir.path(), "claude", "plain-text.jsonl");
    // Marks the CLIs this bridge starts: the CLI keeps CLAUDE_CONFIG_DIR.
    let config_dir = dir.path().join("config");
    let env = [
        ("HOME", dir.path().join("home").into_os_string()),
        ("CLAWBRIDGE_CLAUDE_BIN", claude.into_os_string()),
        ("CLAUDE_CONFIG_DIR", config_dir.clone().into_os_string()),
    ];
    let (child, peer, host) = serve(dir.path(), &dir.path().join("state"), &env);
    let bridge = child.id().expect("a pid");
    let init = initialize(&peer).await;
    let backend = init["backends"].as_array().unwrap().iter().find(|b| b["id"] == "claude").unwrap().clone();
    assert_eq!(backend["available"], true, "{backend}");
    assert_eq!(backend["version"], "2.1.328", "the recorded CLI's version: {backend}");

    let params = json!({"attemptId": "r-1", "harnessId": "clawbridge-claude", "sessionId": "replayed", "runId": "r-1",
                        "prompt": "Say hello.", "workspaceDir": dir.path().display().to_string(),
                        "provider": "anthropic", "modelId": "", "modelApi": "anthropic-messages"});
    let result = peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert_eq!(result["assistantTexts"], json!(["Hello from the mock model."]));
    assert_eq!(result["transcriptOwned"], true, "{result:#}");
    let events: Vec<Value> = host.seen("attempt/event").into_iter().map(|e| e["event"]["type"].clone()).collect();
    assert_eq!(events.first(), Some(&json!("turnStarted")), "{events:?}");
    assert_eq!(events.last(), Some(&json!("turnTerminal")), "{events:?}");
    let cli = format!("CLAUDE_CONFIG_DIR={}\0", config_dir.display());
    assert_eq!(clis_of(bridge, &cli).len(), 1, "the CLI stays warm after the attempt");

    shut_down(peer, child).await;
    assert!(processes_with(&cli).is_empty(), "the warm CLI stopped with the bridge");
}

/// The host's prepared environment (`processEnv`) reaches the CLI of its attempt, and a warm CLI
/// started under one prepared environment never serves an attempt prepared with another: the
/// session's next attempt under other variables gets a CLI of its own.
#[tokio::test]
async fn a_warm_claude_cli_serves_only_attempts_with_the_environment_it_was_started_with() {
    let dir = tempfile::tempdir().unwrap();
    let claude = clawbridge_fixtures::replay_launcher(dir.path(), "claude", "plain-text.jsonl");
    let env = [("HOME", dir.path().join("home").into_os_string()), ("CLAWBRIDGE_CLAUDE_BIN", claude.into_os_string())];
    let (child, peer, _host) = serve(dir.path(), &dir.path().join("state"), &env);
    let bridge = child.id().expect("a pid");
    initialize(&peer).await;
    let attempt = |id: &str, identity: &str| {
        json!({"attemptId": id, "harnessId": "clawbridge-claude", "sessionId": "prepared", "runId": id,
               "prompt": "Say hello.", "workspaceDir": dir.path().display().to_string(),
               "provider": "anthropic", "modelId": "", "modelApi": "anthropic-messages",
               "processEnv": {"GIT_AUTHOR_NAME": identity}})
    };
    let first = "GIT_AUTHOR_NAME=First Person\0";
    let result = peer.request("attempt/run", Some(&attempt("pe-1", "First Person"))).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let warm = clis_of(bridge, first);
    assert_eq!(warm.len(), 1, "the CLI runs under the prepared variables and stays warm");

    let second = "GIT_AUTHOR_NAME=Second Person\0";
    let result = peer.request("attempt/run", Some(&attempt("pe-2", "Second Person"))).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let now = clis_of(bridge, second);
    assert_eq!(now.len(), 1, "a CLI under the second attempt's variables ran it");
    assert!(!warm.contains(&now[0]), "not the first attempt's warm CLI");
    shut_down(peer, child).await;
}

// The mock model serves from this runtime while the bridge runs: it needs threads of its own.
/// OpenClaw's system-prompt addition for the live Claude attempts (a marker the model request must carry).
const EXTRA_SYSTEM: &str = "CLAWBRIDGE-EXTRA-SYSTEM-4e1: answer as the clawbridge test agent.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_attempt_serves_host_tools_and_the_next_attempt_continues_the_claude_session() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&mock_scenario()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let env = live_env(&sandbox, &claude, &mock);
    let (child, peer, host) = serve(&sandbox.work(), state.path(), &env);
    let bridge = child.id().expect("a pid");
    // Only the CLIs this bridge started carry this mock's address in their environment.
    let cli = format!("ANTHROPIC_BASE_URL={}\0", mock.base_url());
    let init = initialize(&peer).await;
    let backend = init["backends"].as_array().unwrap().iter().find(|b| b["id"] == "claude").unwrap().clone();
    assert_eq!(backend["available"], true, "{backend}");
    assert_eq!(backend["version"], "2.1.328", "{backend}");
    let harness = init["harnesses"].as_array().unwrap().iter().find(|h| h["id"] == "clawbridge-claude").cloned();
    assert_eq!(harness.expect("the claude harness")["available"], true);

    let params = |attempt: &str, prompt: &str| {
        json!({"attemptId": attempt, "harnessId": "clawbridge-claude", "sessionId": "claude-live-1", "runId": attempt,
               "prompt": prompt, "workspaceDir": sandbox.work().display().to_string(),
               "provider": "anthropic", "modelId": "claude-opus-5-5", "modelApi": "anthropic-messages",
               "extraSystemPrompt": EXTRA_SYSTEM,
               "hostTools": [{"name": "lookup_weather", "description": "Looks up the weather in a city.",
                              "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                                              "required": ["city"]}}]})
    };
    let first = peer.request("attempt/run", Some(&params("c-1", "What is the weather in Paris?"))).await.unwrap();
    assert_eq!(first["terminal"]["kind"], "ok", "{first:#}");
    let calls = host.seen("host/tool/execute");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["toolName"], "lookup_weather");
    assert_eq!(calls[0]["arguments"]["city"], "Paris");
    // OpenClaw's extraSystemPrompt is the model's system prompt (`--append-system-prompt`), not
    // part of the user's message.
    let requests = mock.model_requests();
    assert!(!requests.is_empty());
    for request in &requests {
        assert!(request.body["system"].to_string().contains(EXTRA_SYSTEM), "system: {}", request.body["system"]);
        assert!(!request.body["messages"].to_string().contains(EXTRA_SYSTEM), "messages: {}", request.body["messages"]);
    }
    assert!(
        mock.model_requests().iter().any(|r| r.body.to_string().contains("Sunny in Paris, 21 C")),
        "the host tool's result reached the model"
    );
    let terminals = host.seen("host/toolTerminal/observe");
    assert_eq!(terminals.len(), 1, "{terminals:?}");
    assert_eq!(terminals[0]["toolName"], "lookup_weather");
    assert_eq!(first["transcriptOwned"], true, "{first:#}");
    let appended = host.seen("host/transcript/append");
    assert!(appended.iter().any(|a| a.to_string().contains("toolResult")), "{appended:?}");
    let native = first["nativeSessionId"].as_str().expect("a Claude session id").to_owned();
    let warm = clis_of(bridge, &cli);
    assert_eq!(warm.len(), 1, "the CLI stays warm after the attempt: {warm:?}");

    let second = peer.request("attempt/run", Some(&params("c-2", "Please run the live test command."))).await.unwrap();
    assert_eq!(second["terminal"]["kind"], "ok", "{second:#}");
    assert_eq!(second["nativeSessionId"], native.as_str(), "the second attempt continued the Claude session");
    let approvals = host.seen("host/approval/decide");
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["toolName"], "bash");
    assert!(std::fs::read_to_string(sandbox.work().join("out.txt")).unwrap_or_default().contains(MARKER));
    let last = mock.model_requests().last().map(|r| r.body.to_string()).unwrap_or_default();
    assert!(last.contains("Sunny in Paris"), "the resumed CLI replayed the first attempt to the model");
    let events: Vec<Value> = host
        .seen("attempt/event")
        .into_iter()
        .filter(|e| e["attemptId"] == "c-2")
        .map(|e| e["event"].clone())
        .collect();
    assert_eq!(events.first().map(|e| e["type"].clone()), Some(json!("turnStarted")), "{events:?}");
    assert_eq!(events.last().map(|e| e["type"].clone()), Some(json!("turnTerminal")), "{events:?}");

    assert_eq!(clis_of(bridge, &cli), warm, "the warm CLI ran the second attempt too");
    shut_down(peer, child).await;
    assert!(processes_with(&cli).is_empty(), "no CLI outlives the bridge");
}

/// `toolsAllow` without a shell tool on the real Claude Code 2.1.328: the model is never offered
/// `Bash` (so the mock's scripted command cannot run) or the web tools, while `Read` stays; the same
/// attempt without the allow list (a new session: the tool set is part of its fingerprint) gets
/// `Bash` and runs the command, so the check can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_attempt_without_a_shell_in_tools_allow_offers_and_runs_no_native_shell() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&mock_scenario()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let env = live_env(&sandbox, &claude, &mock);
    let (child, peer, host) = serve(&sandbox.work(), state.path(), &env);
    initialize(&peer).await;
    let params = |attempt: &str, session: &str| {
        json!({"attemptId": attempt, "harnessId": "clawbridge-claude", "sessionId": session, "runId": attempt,
               "prompt": "Please run the live test command.", "workspaceDir": sandbox.work().display().to_string(),
               "provider": "anthropic", "modelId": "claude-opus-5-5", "modelApi": "anthropic-messages"})
    };
    let offered = |from: usize| -> Vec<String> {
        mock.model_requests()[from..]
            .iter()
            .flat_map(|r| r.body["tools"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    };

    let mut restricted = params("cp-1", "cp-s-1");
    restricted["toolsAllow"] = json!(["read"]);
    let result = peer.request("attempt/run", Some(&restricted)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let tools = offered(0);
    assert!(tools.iter().any(|t| t == "Read"), "`read` keeps Claude's Read: {tools:?}");
    for gone in ["Bash", "Monitor", "Write", "Edit", "WebFetch", "WebSearch"] {
        assert!(!tools.iter().any(|t| t == gone), "{gone} offered: {tools:?}");
    }
    assert!(!result.to_string().contains("live-42"), "no command ran: {result:#}");
    assert!(!sandbox.work().join("out.txt").exists(), "nothing was written");
    assert!(host.seen("host/approval/decide").is_empty());
    let asked = mock.model_requests().len();

    let open = peer.request("attempt/run", Some(&params("cp-2", "cp-s-2"))).await.unwrap();
    assert_eq!(open["terminal"]["kind"], "ok", "{open:#}");
    assert!(offered(asked).iter().any(|t| t == "Bash"), "{:?}", offered(asked));
    assert!(open["assistantTexts"].to_string().contains("live-42"), "without the policy the command runs: {open:#}");
    shut_down(peer, child).await;
}

/// A command Claude Code runs in the background (Bash `run_in_background`) outlives its call but
/// not the attempt: the CLI that runs it is stopped with the attempt instead of kept warm, so no
/// native work goes on that the host no longer admits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_cli_that_started_background_work_stops_with_the_attempt() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let marker = format!("clawbridge-bg-{}", std::process::id());
    let command = format!("sleep 300 && echo {marker}");
    let scenario = json!({"rules": [
        {"when": {"last_input_is_tool_result": true}, "reply": {"text": "It runs in the background."}},
        {"when": {"last_user_text_contains": "background", "tool_offered": "Bash"},
         "reply": {"tool_call": {"name": "Bash", "arguments": {"command": command, "run_in_background": true,
                                                               "description": "wait in the background"}}}}
    ], "default": {"text": "Nothing to do."}});
    let mock = start_mock(&scenario).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let env = live_env(&sandbox, &claude, &mock);
    let (child, peer, _host) = serve(&sandbox.work(), state.path(), &env);
    let bridge = child.id().expect("a pid");
    let cli = format!("ANTHROPIC_BASE_URL={}\0", mock.base_url());
    initialize(&peer).await;
    let params = json!({"attemptId": "bg-1", "harnessId": "clawbridge-claude", "sessionId": "claude-bg", "runId": "bg-1",
                        "prompt": "Start a sleep in the background, please.",
                        "workspaceDir": sandbox.work().display().to_string(),
                        "provider": "anthropic", "modelId": "claude-opus-5-5", "modelApi": "anthropic-messages"});
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker.as_str()))
            })
            .count()
    };
    let result = peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let started = mock.model_requests().iter().any(|r| r.body.to_string().contains("running in background"));
    assert!(started, "Claude Code started the command in the background: {}", describe_requests(&mock.requests()));
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while running() > 0 || !clis_of(bridge, &cli).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background command or its CLI outlived the attempt: {} process(es), CLIs {:?}",
            running(),
            clis_of(bridge, &cli)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    shut_down(peer, child).await;
}

/// `isolation: "settle"` (the final answer of a settled tool turn, protocol version 3) starts from
/// the transcript's history: without it the attempt is refused before a CLI is started; with it the
/// CLI's first prompt is the history, then the host's instruction (the result's projection says
/// why), and the session gets no binding.
#[tokio::test]
async fn a_settle_run_is_seeded_with_the_history_and_refused_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let claude = clawbridge_fixtures::replay_launcher(dir.path(), "claude", "plain-text.jsonl");
    // Every start of the CLI (but its `--version` probe) leaves a line: what proves none was started.
    let starts = dir.path().join("starts.log");
    let counting = dir.path().join("counting-claude");
    let script = format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec '{}' \"$@\"\n", starts.display(), claude.display());
    std::fs::write(&counting, script).unwrap();
    std::fs::set_permissions(&counting, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cli_starts = || {
        let log = std::fs::read_to_string(&starts).unwrap_or_default();
        log.lines().filter(|line| !line.contains("--version")).count()
    };
    let config_dir = dir.path().join("config");
    let env = [
        ("HOME", dir.path().join("home").into_os_string()),
        ("CLAWBRIDGE_CLAUDE_BIN", counting.into_os_string()),
        ("CLAUDE_CONFIG_DIR", config_dir.clone().into_os_string()),
    ];
    let state = dir.path().join("state");
    let (child, peer, _host) = serve(dir.path(), &state, &env);
    initialize(&peer).await;
    let before = cli_starts();
    let mut params = json!({"attemptId": "st-1", "harnessId": "clawbridge-claude", "sessionId": "settled", "runId": "run-s",
                            "prompt": "Produce the final answer now.", "workspaceDir": dir.path().display().to_string(),
                            "provider": "anthropic", "modelId": "", "modelApi": "anthropic-messages",
                            "disableTools": true, "isolation": "settle"});
    match peer.request("attempt/run", Some(&params)).await {
        Err(clawbridge_bridge::rpc::RpcError::Remote { error, .. }) => {
            assert_eq!(error.code, -32034, "{}", error.message);
            assert!(error.message.contains("no transcript history"), "{}", error.message);
        }
        other => panic!("a settle run without history must be refused: {other:?}"),
    }
    assert_eq!(cli_starts(), before, "no CLI was started for it");

    params["attemptId"] = json!("st-2");
    params["history"] = json!({"entries": [
        {"role": "user", "text": "Run the check.", "key": "run-s:prompt"},
        {"role": "toolResult", "text": "[tool result of bash] settled-42", "key": "clawbridge:run-s:t1:tool:c1:result"}
    ], "omitted": 0});
    let result = peer.request("attempt/run", Some(&params)).await.unwrap();
    // The recorded CLI expects another first prompt, so it stops at this one and names what it
    // received: the history, then the host's instruction.
    let received = result["terminal"]["message"].as_str().unwrap_or("");
    assert!(received.contains("deviated from the recording"), "{result:#}");
    assert!(
        received.contains(
            "<conversation_history>\\n[user]\\nRun the check.\\n[toolResult]\\n[tool result of bash] settled-42"
        ) && received.contains("</conversation_history>\\n\\nProduce the final answer now."),
        "the CLI got the seeded prompt: {result:#}"
    );
    assert_eq!(result["transcriptOwned"], false, "side work mirrors no rows: {result:#}");
    assert_eq!(result["projection"]["entries"], 2, "the history seeded the session: {result:#}");
    assert_eq!(cli_starts(), before + 1, "the seeded run started its CLI (the count sees starts)");
    assert!(result["projection"]["reason"].as_str().unwrap_or("").contains("settled tool turn"), "{result:#}");
    let bindings = state.join("serve/bindings");
    let bound = std::fs::read_dir(&bindings).map(Iterator::count).unwrap_or(0);
    assert_eq!(bound, 0, "the settle run binds nothing: {}", bindings.display());
    shut_down(peer, child).await;
}
