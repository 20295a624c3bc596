//! `clawbridge run --backend acp` against the real pinned ACP agents (codex-acp, claude-agent-acp)
//! and the mock model: a text turn and a second bridge process resuming it with `session/load`, a
//! shell tool call allowed and denied, a cancel in the middle of a running tool (SIGINT, as a
//! person's Ctrl-C), and a write
//! outside the working directory refused, and a host tool the model calls through the bridge's
//! MCP server. Each check runs once per agent; the agents' tests run in
//! parallel (each has its own sandbox, mock model and state directory).
//!
//! Neither agent writes files through the client's `fs/write_text_file` (docs/peers/acp.md): Claude
//! Code writes with its own `Write` tool and Codex with its shell. A write outside the working
//! directory therefore reaches the bridge as a permission request, and the refusal proven here is
//! that one: refused, nothing written, the tool reported as never run.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use clawbridge_fixtures::peers::acp::{
    AcpAgent, AcpSandbox, MARKER, SECOND_REPLY, command_mock, long_command, marker_command, two_replies_mock,
    write_outside_mock,
};
use clawbridge_fixtures::peers::{describe_requests, peers_required, strings};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The whole of one bridge run (the agent's start-up, one or two model calls, the stop).
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// Whether `agent` can run here; a missing agent skips, or fails under `CLAWBRIDGE_REQUIRE_PEERS=1`.
fn available(agent: AcpAgent) -> bool {
    match agent.available() {
        Ok(()) => true,
        Err(why) if peers_required() => panic!("CLAWBRIDGE_REQUIRE_PEERS=1 but {why}"),
        Err(why) => {
            eprintln!("skipped: peers not installed: {why}");
            false
        }
    }
}

/// `clawbridge run --backend acp` in the sandbox with `args`, its state in `state`.
fn bridge(acp: &AcpSandbox, state: &Path, args: &[&str]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .args(["run", "--backend", "acp", "--json"])
        .args(args)
        .current_dir(acp.work())
        .env_clear()
        .envs(acp.bridge_env())
        .env("CLAWBRIDGE_STATE_DIR", state)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Runs the bridge to its end.
async fn run(acp: &AcpSandbox, state: &Path, args: &[&str]) -> Output {
    let child =
        bridge(acp, state, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("clawbridge runs");
    tokio::time::timeout(RUN_LIMIT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{}: clawbridge did not finish within {RUN_LIMIT:?}", acp.agent.name()))
        .expect("clawbridge's output")
}

/// The run's events and its attempt result (the last line).
fn events_and_result(out: &Output) -> (Vec<Value>, Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}\n{}", describe(out))))
        .collect();
    let Some((last, events)) = lines.split_last() else { panic!("no output\n{}", describe(out)) };
    assert_eq!(last["type"], "result", "{}", describe(out));
    (events.to_vec(), last["result"].clone())
}

/// The run's output for failure messages.
fn describe(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `toolFinished` events: the tool terminals.
fn tool_terminals(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "toolFinished").collect()
}

/// Every tool call the run started has exactly one terminal, and the calls are those terminals.
fn assert_one_terminal_per_call(agent: AcpAgent, events: &[Value]) {
    let started: Vec<&Value> = events.iter().filter(|e| e["type"] == "toolStarted").map(|e| &e["callId"]).collect();
    let finished: Vec<&Value> = tool_terminals(events).iter().map(|e| &e["call"]["callId"]).collect();
    assert_eq!(started, finished, "{}: each started call ends once, in order: {events:#?}", agent.name());
}

/// The assistant's texts of the result, joined.
fn assistant_text(result: &Value) -> String {
    result["assistantTexts"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

macro_rules! per_agent {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        mod $name {
            use super::*;
            // The mock model serves from this runtime while the bridge runs: it needs threads.
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn codex_acp() {
                if available(AcpAgent::CodexAcp) {
                    super::$name(AcpAgent::CodexAcp).await;
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn claude_agent_acp() {
                if available(AcpAgent::ClaudeAgentAcp) {
                    super::$name(AcpAgent::ClaudeAgentAcp).await;
                }
            }
        }
    };
}

per_agent!(
    /// A text turn, then a second bridge process on the same session: it loads the agent's session
    /// (`session/load`), so the model's second request carries the first turn. Then, with the
    /// agent's stored sessions deleted, a third process names why it could not resume.
    a_text_turn_and_a_new_process_resuming_it);
async fn a_text_turn_and_a_new_process_resuming_it(agent: AcpAgent) {
    let acp = AcpSandbox::new(agent, &two_replies_mock()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let first = run(&acp, state.path(), &["--session", "s1", "Say hello."]).await;
    assert!(first.status.success(), "{}", describe(&first));
    let (events, result) = events_and_result(&first);
    assert_eq!(result["terminal"]["kind"], "ok", "{}", describe(&first));
    assert!(assistant_text(&result).contains("Hello from the mock model."), "{}", describe(&first));
    assert!(events.iter().any(|e| e["type"] == "assistantDelta"), "the text streams: {events:#?}");
    let session = result["nativeSessionId"].as_str().expect("the agent's session id").to_owned();

    let second = run(&acp, state.path(), &["--session", "s1", "Say it again."]).await;
    assert!(second.status.success(), "{}", describe(&second));
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!stderr.contains("could not resume"), "{}: the session loads: {stderr}", agent.name());
    let (events, result) = events_and_result(&second);
    assert_eq!(result["nativeSessionId"], session.as_str(), "the same session: {}", describe(&second));
    // The load replays the first turn; none of it is mirrored as this turn's.
    // Only this turn's reply (codex-acp puts Codex's warning about the mock's model name before
    // it, docs/peers/acp.md).
    let text = assistant_text(&result);
    let before = text.strip_suffix(SECOND_REPLY).unwrap_or_else(|| panic!("{}: {}", agent.name(), describe(&second)));
    assert!(
        before.is_empty() || (agent == AcpAgent::CodexAcp && before.starts_with("Model metadata for `mock-model`")),
        "{}: only this turn's text: {}",
        agent.name(),
        describe(&second)
    );
    for replayed in ["Say hello.", "Hello from the mock model."] {
        let mirrored: Vec<&Value> = events.iter().filter(|e| strings(e).iter().any(|s| s.contains(replayed))).collect();
        assert!(mirrored.is_empty(), "{}: the replayed {replayed:?} was mirrored: {mirrored:#?}", agent.name());
    }
    let requests = acp.mock.model_requests();
    let last = requests.last().expect("model requests");
    let texts = strings(&last.body);
    for (what, text) in [
        ("first prompt", "Say hello."),
        ("first answer", "Hello from the mock model."),
        ("new prompt", "Say it again."),
    ] {
        assert!(
            texts.iter().any(|s| s.contains(text)),
            "{}: the model's second request carries the {what}:\n{}",
            agent.name(),
            describe_requests(&requests)
        );
    }
    // The replayed history is the agent's, not a new turn: no extra model call on load.
    assert_eq!(requests.len(), 2, "{}: one model call per turn:\n{}", agent.name(), describe_requests(&requests));

    // The agent's stored session is gone: the bridge says why it could not resume, starts a new
    // session, and the turn still runs.
    acp.forget_sessions().unwrap();
    let third = run(&acp, state.path(), &["--session", "s1", "Say hello."]).await;
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(stderr.contains("could not resume"), "{}: a named invalidation: {}", agent.name(), describe(&third));
    assert!(stderr.contains(&session), "{}: it names the session it could not load: {stderr}", agent.name());
    let (_, result) = events_and_result(&third);
    assert_eq!(result["terminal"]["kind"], "ok", "{}", describe(&third));
    assert_ne!(result["nativeSessionId"], session.as_str(), "{}: a new session", describe(&third));
}

per_agent!(
    /// A shell tool call, approved: it runs (its output reaches the model and the reply) and has one
    /// terminal with `executionStarted: true`.
    a_tool_call_allowed);
async fn a_tool_call_allowed(agent: AcpAgent) {
    let acp = AcpSandbox::new(agent, &command_mock(agent, marker_command(agent))).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = run(&acp, state.path(), &["--approve", "Please run the live test command."]).await;
    let (events, result) = events_and_result(&out);
    assert_eq!(result["terminal"]["kind"], "ok", "{}", describe(&out));
    assert_one_terminal_per_call(agent, &events);
    let terminals = tool_terminals(&events);
    assert_eq!(terminals.len(), 1, "{}", describe(&out));
    assert_eq!(terminals[0]["executionStarted"], true, "{}", describe(&out));
    assert_eq!(terminals[0]["outcome"]["kind"], "success", "{}", describe(&out));
    assert!(assistant_text(&result).contains(MARKER), "the command ran and the model quoted it: {}", describe(&out));
}

per_agent!(
    /// The same call, denied: its one terminal says it never ran (`executionStarted: false`), and
    /// nothing it would have printed appears.
    a_tool_call_denied);
async fn a_tool_call_denied(agent: AcpAgent) {
    let acp = AcpSandbox::new(agent, &command_mock(agent, marker_command(agent))).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let out = run(&acp, state.path(), &["--deny", "Please run the live test command."]).await;
    let (events, result) = events_and_result(&out);
    assert_one_terminal_per_call(agent, &events);
    let terminals = tool_terminals(&events);
    assert_eq!(terminals.len(), 1, "the denied call has its terminal: {}", describe(&out));
    assert_eq!(terminals[0]["executionStarted"], false, "{}", describe(&out));
    assert_eq!(terminals[0]["outcome"]["kind"], "declined", "{}", describe(&out));
    assert!(!assistant_text(&result).contains(MARKER), "the command did not run: {}", describe(&out));
    assert!(!acp.work().join("out.txt").exists(), "the command did not run");
    // codex-acp ends the turn itself (`cancelled`) after a refusal: a failure naming why, not an
    // abort nobody asked for; Claude Code tells the model and finishes its answer.
    let (kind, message) = match agent {
        AcpAgent::CodexAcp => ("failed", "declined permission"),
        AcpAgent::ClaudeAgentAcp => ("ok", ""),
    };
    assert_eq!(result["terminal"]["kind"], kind, "{}: {}", agent.name(), describe(&out));
    let said = result["terminal"]["message"].as_str().unwrap_or_default();
    assert!(said.contains(message), "{}: {}", agent.name(), describe(&out));
}

per_agent!(
    /// SIGINT while an approved tool runs: the turn ends `cancelled`, the running tool gets its one
    /// terminal, and no process of the sandbox is left (agent, CLI, tool).
    a_cancel_in_the_middle_of_a_tool);
async fn a_cancel_in_the_middle_of_a_tool(agent: AcpAgent) {
    let acp = AcpSandbox::new(agent, &command_mock(agent, long_command(agent))).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut child = bridge(&acp, state.path(), &["--approve", "Please run the live test command."])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("clawbridge runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    let started = tokio::time::timeout(RUN_LIMIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            let running = line.contains("\"toolStarted\"");
            seen.push(line);
            if running {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(started, Ok(true), "{}: the tool never started: {seen:#?}", agent.name());
    // The tool was announced running; wait (bounded) until its process exists, so the cancel
    // provably stops a running command rather than racing its spawn.
    let tool = tokio::time::timeout(RUN_LIMIT, async {
        loop {
            if let Some(pid) = acp.processes().into_iter().find(|pid| is_the_long_tool(*pid)) {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{}: the tool's process never ran: {seen:#?}", agent.name()));
    let pid = child.id().expect("the bridge runs") as i32;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGINT).unwrap();
    let rest = tokio::time::timeout(RUN_LIMIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            seen.push(line);
        }
        child.wait().await
    })
    .await
    .unwrap_or_else(|_| panic!("{}: the bridge did not end after SIGINT: {seen:#?}", agent.name()))
    .expect("the bridge's status");
    let events: Vec<Value> = seen.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let result = events.last().map(|e| e["result"].clone()).unwrap_or_default();
    // A turn the host cancelled ends `aborted` with the cause `cancelled` (the protocol's terminal
    // kinds have no `cancelled` of their own).
    assert_eq!(result["terminal"]["kind"], "aborted", "{}: {rest}: {seen:#?}", agent.name());
    assert_eq!(result["terminal"]["cause"], "cancelled", "{}: {rest}: {seen:#?}", agent.name());
    let terminals = tool_terminals(&events);
    assert_eq!(terminals.len(), 1, "{}: {seen:#?}", agent.name());
    assert_eq!(terminals[0]["outcome"]["kind"], "cancelled", "{}: {seen:#?}", agent.name());
    // The host approved it and the agent ran it: it may have had effects.
    assert_eq!(terminals[0]["executionStarted"], true, "{}: {seen:#?}", agent.name());
    assert_one_terminal_per_call(agent, &events[..events.len() - 1]);
    let left = acp.processes();
    assert!(!left.contains(&tool), "{}: the tool's process {tool} survived the cancel", agent.name());
    assert!(left.is_empty(), "{}: processes of the sandbox are left: {left:?}", agent.name());
}

/// Whether `pid` is the long command's `tail` (by its argv in /proc; a vanished process is not).
fn is_the_long_tool(pid: i32) -> bool {
    let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut words = argv.split(|b| *b == 0);
    words.next().is_some_and(|program| program.ends_with(b"tail")) && words.next() == Some(b"-f".as_slice())
}

per_agent!(
    /// The model writes a file outside the working directory with the agent's own tool; nothing is
    /// written, and the tool's one terminal says it never ran. claude-agent-acp runs with the host
    /// approving everything: its `Write` request names the path (`locations`, `rawInput.file_path`),
    /// and the bridge's confinement refuses it without asking the host. codex-acp's escalated shell
    /// command names no path the bridge can check (a command line), so there only the host's refusal
    /// (and Codex's own sandbox) stand in the way (docs/peers/acp.md).
    a_write_outside_the_cwd_is_refused);
async fn a_write_outside_the_cwd_is_refused(agent: AcpAgent) {
    // A directory of its own, so the path is outside the sandbox's cwd whatever the agent.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join(format!("{}.txt", agent.name()));
    let acp = AcpSandbox::new(agent, &write_outside_mock(agent, &target)).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let decision = match agent {
        AcpAgent::ClaudeAgentAcp => "--approve",
        AcpAgent::CodexAcp => "--deny",
    };
    let out = run(&acp, state.path(), &[decision, "Please write the file."]).await;
    let (events, _) = events_and_result(&out);
    assert!(!target.exists(), "{}: the file outside the cwd was written: {}", agent.name(), describe(&out));
    assert_one_terminal_per_call(agent, &events);
    let terminals = tool_terminals(&events);
    assert_eq!(terminals.len(), 1, "{}", describe(&out));
    assert_eq!(terminals[0]["executionStarted"], false, "{}", describe(&out));
    assert_eq!(terminals[0]["outcome"]["kind"], "declined", "{}", describe(&out));
    if agent == AcpAgent::ClaudeAgentAcp {
        let reason = terminals[0]["outcome"]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("outside the session's directory"), "refused by confinement: {}", describe(&out));
    }
    let requests = acp.mock.model_requests();
    assert!(!requests.is_empty(), "the model asked for the write:\n{}", describe_requests(&requests));
}

/// Re-records the ACP fixtures (`fixtures/recordings/acp/<agent>/<scenario>.*`) through the bridge:
/// the bridge is the client, `record-proxy` sits between it and the real agent.
///
/// ```sh
/// cargo test -p clawbridge --test acp_live -- --ignored --test-threads=1 record_the_acp_fixtures
/// ```
///
/// Ignored in the suite: it rewrites checked-in files. `tests/acp_replay.rs` replays what it wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "rewrites fixtures/recordings/acp; run by hand after a peer upgrade"]
async fn record_the_acp_fixtures() {
    for agent in AcpAgent::ALL {
        assert!(available(agent), "{} is installed", agent.name());
        let dir = clawbridge_fixtures::peers::acp::recordings_dir(agent);
        std::fs::create_dir_all(&dir).unwrap();
        for (scenario, mock, prompt, approve) in clawbridge_fixtures::peers::acp::scenarios(agent) {
            let acp = AcpSandbox::new(agent, &mock).await.unwrap();
            let record = clawbridge_fixtures::peers::acp::record_to(agent, scenario, &dir);
            let state = tempfile::tempdir().unwrap();
            let decision = if approve { "--approve" } else { "--deny" };
            let child = bridge(&acp, state.path(), &[decision, prompt])
                .env_clear()
                .envs(acp.bridge_env_with_line(acp.recorded_agent_line(&record)))
                .env("CLAWBRIDGE_STATE_DIR", state.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let out = tokio::time::timeout(RUN_LIMIT, child.wait_with_output()).await.unwrap().unwrap();
            let (_, result) = events_and_result(&out);
            assert!(record.out.is_file(), "{}/{scenario}: no recording: {}", agent.name(), describe(&out));
            let log = clawbridge_fixtures::peers::record::model_log(&acp.mock.model_requests(), &acp.all_literals());
            std::fs::write(dir.join(format!("{scenario}.model.jsonl")), log).unwrap();
            eprintln!("recorded {}/{scenario}: {}", agent.name(), result["terminal"]);
        }
    }
}

/// A host tool that counts its calls and keeps their arguments.
#[derive(Debug, Default)]
struct CountingWeather {
    /// The arguments of each call, in order.
    calls: std::sync::Mutex<Vec<Value>>,
}

/// What [`CountingWeather`] answers: a fixed text the model can only have seen through the tool.
const WEATHER: &str = "Sunny in the live test, 21 degrees";

impl clawbridge_bridge::attempt::hooks::HostTools for CountingWeather {
    fn specs(&self) -> Vec<clawbridge_bridge::attempt::hooks::HostToolSpec> {
        clawbridge_fixtures::hooks::WeatherTool.specs()
    }

    fn call(
        &self,
        call: clawbridge_bridge::attempt::hooks::HostToolCall,
    ) -> futures::future::BoxFuture<'static, Result<clawbridge_bridge::attempt::hooks::HostToolOutput, String>> {
        self.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(call.arguments);
        Box::pin(async {
            Ok(clawbridge_bridge::attempt::hooks::HostToolOutput {
                text: WEATHER.to_owned(),
                is_error: false,
                images: Vec::new(),
            })
        })
    }
}

/// Allows everything and keeps what it was asked.
#[derive(Debug, Default)]
struct RecordingApprover {
    /// The requests, in order.
    asked: std::sync::Mutex<Vec<String>>,
}

impl clawbridge_bridge::attempt::hooks::Approver for RecordingApprover {
    fn decide(
        &self,
        request: clawbridge_bridge::attempt::hooks::ApprovalRequest,
    ) -> futures::future::BoxFuture<'static, Result<clawbridge_bridge::attempt::hooks::ApprovalDecision, String>> {
        self.asked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(format!("{request:?}"));
        Box::pin(async { Ok(clawbridge_bridge::attempt::hooks::ApprovalDecision::Allow) })
    }
}

per_agent!(
    /// The model calls the attempt's host tool through the bridge's MCP server: the tool runs once
    /// with the model's arguments, its text reaches the model's next request, and the observer sees
    /// one terminal.
    a_host_tool_called_through_mcp);
async fn a_host_tool_called_through_mcp(agent: AcpAgent) {
    use clawbridge_adapters::acp::{AcpConfig, AcpSession};
    use clawbridge_bridge::attempt::SessionHooks;
    use clawbridge_bridge::events::{Event, TerminalKind};
    use std::sync::Arc;

    // Claude Code names an MCP tool `mcp__<server>__<tool>`.
    let name = "mcp__clawbridge__lookup_weather".to_owned();
    // Codex offers an MCP server's tools as one Responses `namespace` tool named after the server.
    // The call names the tool inside that namespace.
    let (offered, call) = match agent {
        AcpAgent::CodexAcp => (
            "mcp__clawbridge".to_owned(),
            serde_json::json!({"name": "lookup_weather", "namespace": "mcp__clawbridge", "arguments": {"city": "Paris"}}),
        ),
        AcpAgent::ClaudeAgentAcp => (name.clone(), serde_json::json!({"name": name, "arguments": {"city": "Paris"}})),
    };
    let mock = serde_json::json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The tool said:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "weather", "tool_offered": offered},
         "reply": {"tool_call": call}}
    ], "default": {"text": "Nothing to do."}});
    let acp = AcpSandbox::new(agent, &mock).await.unwrap();
    let spec = acp.spec();
    let mut config = AcpConfig::new(
        spec.program.clone(),
        spec.args.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
        acp.work(),
    );
    // Claude Code defers MCP tools behind its `ToolSearch` unless told not to; the scripted model
    // calls the tool directly.
    config.env = spec.env.clone().with_var("ENABLE_TOOL_SEARCH", "false");
    let tools = Arc::new(CountingWeather::default());
    let approver = Arc::new(RecordingApprover::default());
    let observed = Arc::new(clawbridge_fixtures::hooks::RecordingObserver::default());
    let hooks = SessionHooks { approver: approver.clone(), tools: tools.clone(), observer: observed.clone() };
    let mut session = AcpSession::connect(config, hooks, true).await.expect("the agent starts");
    let ready = session.new_session().await.expect("session/new");
    let mut events = Vec::new();
    let result = tokio::time::timeout(
        RUN_LIMIT,
        session.run_turn(
            &ready.session_id,
            &clawbridge_bridge::backend::TurnInput::text("What is the weather in Paris?"),
            &mut |e: &Event| events.push(e.clone()),
            &tokio_util::sync::CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn ends");
    let requests = acp.mock.model_requests();
    let asked = approver.asked.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    eprintln!("{}: permission requests: {asked:#?}", agent.name());
    let offered: Vec<Vec<String>> = requests.iter().map(|r| offered_tools(&r.body)).collect();
    eprintln!("{}: tools offered per request: {offered:?}", agent.name());
    let context = format!("{result:?}\nevents: {events:#?}\nrequests:\n{}", describe_requests(&requests));
    let _ = session.shutdown().await;

    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{}: {context}", agent.name());
    let calls = tools.calls.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(calls, vec![serde_json::json!({"city": "Paris"})], "{}: {context}", agent.name());
    let last = requests.last().expect("model requests");
    assert!(
        strings(&last.body).iter().any(|s| s.contains(WEATHER)),
        "{}: the tool's text reaches the model: {context}",
        agent.name()
    );
    assert!(
        asked.is_empty(),
        "{}: the host's own tool is not put to the approver a second time: {asked:#?}",
        agent.name()
    );
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "{}: one terminal: {reports:#?}\n{context}", agent.name());
    eprintln!("{}: terminal: {:?}", agent.name(), reports[0]);
    // One tool item in the event stream too (the agent's call, not a second one for the MCP call).
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolStarted(call) = e { Some(call.call_id.as_str()) } else { None })
        .collect();
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| if let Event::ToolFinished(finish) = e { Some(finish.call.call_id.as_str()) } else { None })
        .collect();
    assert_eq!(started, [reports[0].tool_call_id.as_str()], "{}: {context}", agent.name());
    // Reported as the host's tool, under its own name and with the model's arguments.
    let call = events
        .iter()
        .find_map(|e| if let Event::ToolStarted(call) = e { Some(call) } else { None })
        .expect("a tool call");
    assert_eq!(call.tool_name, "lookup_weather", "{}: {context}", agent.name());
    // (claude-agent-acp announces the call before its input streamed: the terminal has the input.)
    assert_eq!(reports[0].tool_name, "lookup_weather", "{}: {context}", agent.name());
    assert_eq!(reports[0].arguments, serde_json::json!({"city": "Paris"}), "{}: {context}", agent.name());
    assert!(
        !call.native && call.native_mutation.is_none(),
        "{}: a host tool, not a native one: {call:?}",
        agent.name()
    );
    assert_eq!(finished, started, "{}: {context}", agent.name());
}

/// The tool names a model request offers (Responses `tools[].name`, Messages `tools[].name`).
fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}
