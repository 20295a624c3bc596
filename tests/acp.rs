//! The ACP backend through `clawbridge run --backend acp --agent "<command>"`, against the scripted
//! fake ACP agent (fixtures `fake-acp-agent`): turns, permissions, cancel, resume, files, the
//! version gate and auth.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

/// One test's directories: the bridge's state, the session's cwd, and the agent's script.
struct Place {
    _dir: tempfile::TempDir,
    state: PathBuf,
    cwd: PathBuf,
    root: PathBuf,
}

impl Place {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (state, cwd) = (root.join("state"), root.join("work"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(root.join("history")).unwrap();
        Place { _dir: dir, state, cwd, root }
    }

    /// The agent command line playing `script` (its history kept in this place).
    fn agent(&self, script: Value) -> String {
        self.agent_named(&format!("script-{}", fastrand_suffix()), script)
    }

    /// [`agent`](Self::agent) with its script at a name of the caller's: a second script at the same
    /// name keeps the agent's command line (and so the session's fingerprint).
    fn agent_named(&self, name: &str, mut script: Value) -> String {
        script["historyDir"] = json!(self.root.join("history"));
        let path = self.root.join(format!("{name}.json"));
        std::fs::write(&path, script.to_string()).unwrap();
        let bin = clawbridge_fixtures::fixture_bin("fake-acp-agent");
        format!("{} --script {}", bin.display(), path.display())
    }

    fn command(&self, agent: &str, extra: &[&str], prompt: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
        command
            .envs(clawbridge_fixtures::no_user_config())
            .args(["run", "--json", "--backend", "acp", "--agent", agent])
            .args(extra)
            .arg(prompt)
            .current_dir(&self.cwd)
            .env("CLAWBRIDGE_STATE_DIR", &self.state)
            .env_remove("CLAWBRIDGE_ACP_AGENT")
            .env_remove("CLAWBRIDGE_ACP_AUTH_METHOD");
        command
    }

    fn run(&self, agent: &str, extra: &[&str], prompt: &str) -> Output {
        self.command(agent, extra, prompt).output().expect("clawbridge runs")
    }
}

/// A distinct name per script in one place.
fn fastrand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The events of a `--json` run and its result (the last line).
fn parse(out: &Output) -> (Vec<Value>, Value) {
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines: Vec<Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{l}"))).collect();
    let result = lines.pop().unwrap_or(Value::Null);
    assert_eq!(result["type"], "result", "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    (lines, result["result"].clone())
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

fn terminal(events: &[Value]) -> &Value {
    let terminals = of_type(events, "turnTerminal");
    assert_eq!(terminals.len(), 1, "{events:#?}");
    terminals[0]
}

fn assistant_text(events: &[Value]) -> String {
    of_type(events, "assistantFinal").iter().map(|e| e["text"].as_str().unwrap_or_default()).collect()
}

fn transcript(place: &Place, session: &str) -> Vec<Value> {
    let path = place.state.join("sessions").join(session).join("transcript.jsonl");
    std::fs::read_to_string(path).unwrap().lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only its parent has not reaped it yet.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
}

fn pid_in(path: &Path) -> u32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

#[test]
fn a_text_turn_streams_the_answer_and_writes_the_transcript() {
    let place = Place::new();
    let agent = place.agent(json!({"turns": [[{"think": "let me see"}, {"say": "Hello, "}, {"say": "world"}]]}));
    let out = place.run(&agent, &["--session", "t"], "greet me");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (events, result) = parse(&out);
    assert_eq!(events[0]["type"], "turnStarted");
    assert_eq!(terminal(&events)["kind"], "ok");
    assert_eq!(assistant_text(&events), "Hello, world");
    assert_eq!(of_type(&events, "reasoningFinal")[0]["text"], "let me see");
    assert!(result["nativeSessionId"].as_str().unwrap().starts_with("fake-acp-"), "{result}");
    let rows = transcript(&place, "t");
    let roles: Vec<&str> = rows.iter().map(|r| r["message"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"], "{rows:#?}");
}

fn tool_script() -> Value {
    json!({"turns": [[
        {"tool": {"id": "w1", "kind": "edit", "title": "Write notes.txt", "rawInput": {"path": "notes.txt"}}},
        {"permission": {"id": "w1", "kind": "edit", "title": "Write notes.txt"},
         "allowed": [{"toolUpdate": {"id": "w1", "status": "in_progress"}}, {"toolUpdate": {"id": "w1", "status": "completed", "text": "written"}}],
         "rejected": [{"toolUpdate": {"id": "w1", "status": "failed", "text": "rejected by the user"}}]},
        {"say": "done"}
    ]]})
}

#[test]
fn a_tool_call_runs_when_allowed_and_never_starts_when_denied() {
    let place = Place::new();
    let agent = place.agent(tool_script());
    let allowed = place.run(&agent, &["--approve"], "write notes");
    let (events, result) = parse(&allowed);
    let finished = of_type(&events, "toolFinished");
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(finished[0]["outcome"]["kind"], "success");
    assert_eq!(finished[0]["executionStarted"], true);
    assert_eq!(finished[0]["call"]["toolName"], "edit");
    assert!(assistant_text(&events).contains("optionId\":\"once"), "allow picks allow_once: {events:#?}");
    assert_eq!(result["tools"].as_array().map(Vec::len), Some(1), "{result}");

    let denied = place.run(&agent, &["--deny"], "write notes");
    let (events, _) = parse(&denied);
    let finished = of_type(&events, "toolFinished");
    assert_eq!(finished.len(), 1, "{events:#?}");
    assert_eq!(finished[0]["outcome"]["kind"], "declined");
    assert_eq!(finished[0]["executionStarted"], false);
    assert!(assistant_text(&events).contains("optionId\":\"no"), "deny picks reject_once: {events:#?}");
    assert_eq!(terminal(&events)["kind"], "ok");
}

#[test]
fn a_cancel_mid_tool_ends_the_turn_cancelled_with_the_tool_closed_and_no_process_left() {
    let place = Place::new();
    let sleeper = place.root.join("sleeper.pid");
    let agent_pid = place.root.join("agent.pid");
    let agent = place.agent(json!({"pidFile": agent_pid, "turns": [[
        {"tool": {"id": "x1", "kind": "execute", "title": "sleep", "status": "in_progress"}},
        {"spawn": {"argv": ["sleep", "300"], "pidFile": sleeper}},
        {"waitCancel": true}
    ]]}));
    let mut child =
        place.command(&agent, &[], "run something long").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // The tool runs once its process exists.
    while !sleeper.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its tool started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sleeper_pid = pid_in(&sleeper);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    let (events, _) = parse(&out);
    let end = terminal(&events);
    assert_eq!(end["kind"], "aborted", "{events:#?}");
    assert_eq!(end["cause"], "cancelled");
    assert!(
        end["message"].as_str().unwrap_or_default().contains("stopReason cancelled"),
        "the agent answered the cancel: {end}"
    );
    let finished = of_type(&events, "toolFinished");
    assert_eq!(finished.len(), 1, "the running tool got its terminal: {events:#?}");
    assert_eq!(finished[0]["outcome"]["kind"], "cancelled");
    assert!(!alive(pid_in(&agent_pid)), "the agent was stopped");
    assert!(!alive(sleeper_pid), "the agent's tool process was stopped with it");
}

#[test]
fn a_second_run_loads_the_session_without_mirroring_its_replayed_history() {
    let place = Place::new();
    // A long history, so a replay that leaked past the load's answer would be seen.
    let mut first_turn = vec![json!({"say": "first answer"})];
    first_turn.extend((0..300).map(|i| json!({"say": format!(" part {i}")})));
    let agent = place.agent_named("loads", json!({"loadSession": true, "turns": [first_turn]}));
    let first = place.run(&agent, &["--session", "r"], "first question");
    let (_, first_result) = parse(&first);
    // A new bridge process and a new agent process: the agent replays the history on session/load.
    let agent = place.agent_named("loads", json!({"loadSession": true, "turns": [[{"say": "second answer"}]]}));
    let second = place.run(&agent, &["--session", "r"], "second question");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!stderr.contains("could not resume"), "{stderr}");
    let (events, result) = parse(&second);
    assert_eq!(result["nativeSessionId"], first_result["nativeSessionId"], "the same session continued");
    assert_eq!(assistant_text(&events), "second answer", "the replay is not this turn's: {events:#?}");
    let rows = transcript(&place, "r");
    let texts: Vec<String> = rows.iter().map(|r| r["message"]["content"].to_string()).collect();
    assert_eq!(rows.len(), 4, "two turns of two rows, nothing replayed: {texts:#?}");
    assert_eq!(texts.iter().filter(|t| t.contains("first answer")).count(), 1, "{texts:#?}");
}

#[test]
fn an_agent_that_cannot_continue_a_session_gets_a_new_one_and_says_why() {
    let place = Place::new();
    let agent = place.agent(json!({"loadSession": false, "turns": [[{"say": "hi"}]]}));
    let first = place.run(&agent, &["--session", "n"], "one");
    let (_, first_result) = parse(&first);
    let second = place.run(&agent, &["--session", "n"], "two");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("could not resume") && stderr.contains("neither session/load nor session/resume"),
        "{stderr}"
    );
    let (_, result) = parse(&second);
    assert_ne!(result["nativeSessionId"], first_result["nativeSessionId"]);

    // An agent that offers session/resume continues without a replay.
    let agent = place.agent(json!({"resume": true, "turns": [[{"say": "hi"}]]}));
    let first = place.run(&agent, &["--session", "m"], "one");
    let (_, first_result) = parse(&first);
    let second = place.run(&agent, &["--session", "m"], "two");
    assert!(!String::from_utf8_lossy(&second.stderr).contains("could not resume"));
    assert_eq!(parse(&second).1["nativeSessionId"], first_result["nativeSessionId"]);
}

#[test]
fn file_requests_stay_inside_the_session_directory_and_other_requests_are_refused() {
    let place = Place::new();
    let outside = place.root.join("outside.txt");
    let inside = place.cwd.join("inside.txt");
    std::fs::write(place.cwd.join("lines.txt"), "a\nb\nc\n").unwrap();
    let agent = place.agent(json!({"turns": [[
        {"write": {"path": outside, "content": "escaped"}},
        {"write": {"path": format!("{}/../outside.txt", place.cwd.display()), "content": "escaped"}},
        {"write": {"path": inside, "content": "kept"}},
        {"read": {"path": place.cwd.join("lines.txt"), "line": 2, "limit": 1}},
        {"read": {"path": "/etc/hostname"}},
        {"call": {"method": "terminal/create", "params": {"sessionId": "s", "command": "ls"}}},
        {"call": {"method": "fs/write_text_file", "params": {"path": 5}}}
    ]]}));
    let out = place.run(&agent, &[], "touch files");
    let (events, _) = parse(&out);
    let text = assistant_text(&events);
    assert_eq!(text.matches("[write error -32602").count(), 2, "{text}");
    assert!(text.contains("outside the session's directory"), "{text}");
    assert!(text.contains("[write ok]"), "{text}");
    assert!(text.contains("[read ok: b\n]"), "{text}");
    assert!(text.contains("[read error -32602"), "reads are confined too: {text}");
    assert!(text.contains("[terminal/create error -32601"), "no terminals are offered: {text}");
    assert!(text.contains("[fs/write_text_file error -32602"), "params that do not fit are refused: {text}");
    assert!(!outside.exists(), "nothing was written outside");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "kept");
}

#[test]
fn an_agent_of_another_protocol_version_is_refused_naming_both_and_stopped() {
    for answered in [json!(2), json!("1.0")] {
        let place = Place::new();
        let pid = place.root.join("agent.pid");
        let agent = place.agent(json!({"protocolVersion": answered, "pidFile": pid}));
        let out = place.run(&agent, &[], "hi");
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("protocol version {answered}")) && stderr.contains("speaks version 1"),
            "{stderr}"
        );
        assert!(!alive(pid_in(&pid)), "the refused agent was stopped");
    }
}

#[test]
fn an_initialize_answer_of_an_unknown_shape_is_refused_for_its_version_or_its_shape() {
    // Another version in a shape this decoder does not know: refused for the version it names.
    let place = Place::new();
    let pid = place.root.join("agent.pid");
    let agent = place.agent(json!({"protocolVersion": 2, "authMethods": "a string", "pidFile": pid}));
    let out = place.run(&agent, &[], "hi");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("protocol version 2") && stderr.contains("speaks version 1"), "{stderr}");
    assert!(!alive(pid_in(&pid)), "the refused agent was stopped");
    // Version 1 that does not decode: a handshake error with the decoder's reason.
    let place = Place::new();
    let pid = place.root.join("agent.pid");
    let agent = place.agent(json!({"authMethods": "a string", "pidFile": pid}));
    let out = place.run(&agent, &[], "hi");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("initialize answer does not decode") && stderr.contains("invalid type"), "{stderr}");
    assert!(!alive(pid_in(&pid)), "the agent was stopped");
}

#[test]
fn an_agent_that_needs_a_login_names_its_methods_and_one_can_be_chosen() {
    let place = Place::new();
    let methods = json!([{"id": "api-key", "name": "API key"}, {"id": "chatgpt", "name": "ChatGPT"}]);
    let agent = place.agent(json!({"requireAuth": true, "authMethods": methods, "turns": [[{"say": "in"}]]}));
    let out = place.run(&agent, &[], "hi");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("requires authentication") && stderr.contains("[api-key, chatgpt]"), "{stderr}");

    let out = place.command(&agent, &[], "hi").env("CLAWBRIDGE_ACP_AUTH_METHOD", "api-key").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(assistant_text(&parse(&out).0), "in");
}

/// The harness under `serve`: listed with the agent's name and version from its `initialize` (and
/// its image support), an attempt runs a turn, the next attempt of the host session continues the
/// ACP session, and an attached image reaches the agent's prompt.
#[tokio::test]
async fn serve_offers_clawbridge_acp_and_binds_its_session() {
    use std::sync::Arc;

    use clawbridge_adapters::acp::{AcpBackend, AgentCommand};
    use clawbridge_bridge::rpc::{NoProcess, PeerConfig, RejectAll, RpcPeer};

    let place = Place::new();
    let agent = place
        .agent(json!({"loadSession": true, "image": true, "agentInfo": {"name": "fake-acp-agent", "version": "9.8.7"},
        "turns": [[{"say": "served"}]]}));
    let registry = clawbridge::demo::registry()
        .with(Arc::new(AcpBackend::from_env().with_agent(AgentCommand::parse(&agent).unwrap())));
    let (host_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let state_dir = place.state.clone();
    let server =
        tokio::spawn(async move { clawbridge::serve::serve_on(bridge_in, bridge_out, &state_dir, registry).await });
    let (host_in, host_out) = tokio::io::split(host_side);
    let (host, _events) =
        RpcPeer::start(host_in, host_out, PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
    let init = json!({
        "protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION,
        "host": {"name": "test-host", "version": "0"},
        "capabilities": {"hostTools": false, "approvals": false, "toolTerminals": false, "transcriptAppend": false, "userInput": false}
    });
    let answer = host.request("initialize", Some(&init)).await.expect("initialize");
    let harness = answer["harnesses"].as_array().unwrap().iter().find(|h| h["id"] == "clawbridge-acp").cloned();
    let harness = harness.unwrap_or_else(|| panic!("no clawbridge-acp in {answer}"));
    assert_eq!(harness["available"], true, "{harness}");
    assert_eq!(harness["inputs"]["images"], true, "the agent's promptCapabilities.image: {harness}");
    let backend = answer["backends"].as_array().unwrap().iter().find(|b| b["id"] == "acp").cloned().unwrap();
    assert_eq!(backend["version"], "fake-acp-agent 9.8.7", "the agent's name and version from initialize: {backend}");

    let run = |attempt: &str| {
        json!({"attemptId": attempt, "harnessId": "clawbridge-acp", "sessionId": "host-session",
               "prompt": "hello", "workspaceDir": place.cwd.display().to_string()})
    };
    let first = host.request("attempt/run", Some(&run("a-1"))).await.expect("attempt/run answers");
    assert_eq!(first["terminal"]["kind"], "ok", "{first}");
    assert_eq!(first["assistantTexts"], json!(["served"]), "{first}");
    let second = host.request("attempt/run", Some(&run("a-2"))).await.expect("attempt/run answers");
    assert_eq!(second["nativeSessionId"], first["nativeSessionId"], "the bound session continued: {second}");
    assert_eq!(second["assistantTexts"], json!(["served"]), "the replayed history is not this attempt's: {second}");
    let mut with_image = run("a-3");
    with_image["images"] = json!([{"data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "mimeType": "image/png"}]);
    let third = host.request("attempt/run", Some(&with_image)).await.expect("attempt/run answers");
    assert_eq!(third["assistantTexts"], json!(["[1 image(s)]served"]), "the image reached the agent's prompt: {third}");

    host.request("shutdown", Some(&json!({}))).await.expect("shutdown");
    host.close();
    tokio::time::timeout(Duration::from_secs(30), server).await.expect("serve ends").unwrap().expect("serve ok");
}

#[test]
fn the_agent_sees_the_variables_agent_env_names_and_no_others() {
    let place = Place::new();
    let env_file = place.root.join("agent.env");
    let agent = place.agent(json!({"envFile": env_file, "turns": [[{"say": "ok"}]]}));
    let out = place
        .command(&agent, &["--agent-env", "ACP_TEST_NAMED"], "hi")
        .env("ACP_TEST_NAMED", "by-flag")
        .env("ACP_TEST_LISTED", "by-list")
        .env("CLAWBRIDGE_ACP_AGENT_ENV", "ACP_TEST_LISTED, ACP_TEST_ABSENT")
        .env("ACP_TEST_HIDDEN", "never")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let env = std::fs::read_to_string(&env_file).unwrap();
    let lines: Vec<&str> = env.lines().collect();
    assert!(lines.contains(&"ACP_TEST_NAMED=by-flag"), "{env}");
    assert!(lines.contains(&"ACP_TEST_LISTED=by-list"), "{env}");
    assert!(!env.contains("ACP_TEST_HIDDEN"), "only named variables pass: {env}");
    assert!(!env.contains("ACP_TEST_ABSENT"), "{env}");
}

/// The `[acp]` area of the config file names the agent, the variables it sees and the auth method;
/// `--agent` wins over `CLAWBRIDGE_ACP_AGENT`, which wins over the file.
#[test]
fn the_config_files_acp_area_names_the_agent_and_the_variables_and_flags_win() {
    let place = Place::new();
    let env_file = place.root.join("agent.env");
    let agent = place.agent(json!({"envFile": env_file, "turns": [[{"say": "from the file"}]]}));
    let config = place.root.join("config.toml");
    let toml_string = |s: &str| serde_json::to_string(s).unwrap();
    let text = format!("[acp]\nagent = {}\nagent-env = \"ACP_TEST_FROM_FILE\"\n", toml_string(&agent));
    std::fs::write(&config, text).unwrap();
    let run = |extra: &[&str], env_agent: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
        command
            .envs(clawbridge_fixtures::no_user_config())
            .args(["--config", config.to_str().unwrap(), "run", "--json", "--backend", "acp"])
            .args(extra)
            .arg("hi")
            .current_dir(&place.cwd)
            .env("CLAWBRIDGE_STATE_DIR", &place.state)
            .env("ACP_TEST_FROM_FILE", "seen")
            .env_remove("CLAWBRIDGE_ACP_AGENT")
            .env_remove("CLAWBRIDGE_ACP_AGENT_ENV")
            .env_remove("CLAWBRIDGE_ACP_AUTH_METHOD");
        if let Some(line) = env_agent {
            command.env("CLAWBRIDGE_ACP_AGENT", line);
        }
        command.output().expect("clawbridge runs")
    };
    let out = run(&[], None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(assistant_text(&parse(&out).0), "from the file");
    let env = std::fs::read_to_string(&env_file).unwrap();
    assert!(env.lines().any(|l| l == "ACP_TEST_FROM_FILE=seen"), "the file's agent-env: {env}");

    let missing = place.root.join("no-such-agent");
    let out = run(&[], Some(missing.to_str().unwrap()));
    assert!(!out.status.success(), "the variable wins over the file");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-agent"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["--agent", &agent], Some(missing.to_str().unwrap()));
    assert!(out.status.success(), "--agent wins: {}", String::from_utf8_lossy(&out.stderr));
}
