//! `clawbridge serve` driven as the OpenClaw plugin would: over its stdio, with the bridge's own
//! `RpcPeer` as the host (answering the bridge's `host/*` requests).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_bridge::rpc::{HandlerError, NoProcess, PeerConfig, PeerEvent, RequestHandler, RpcError, RpcPeer};
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_protocol::host::PROTOCOL_VERSION;
use clawbridge_protocol::jsonrpc::{Dialect, Request};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

mod common;
use common::children_of;

/// What the fake host saw and how it answers.
#[derive(Default)]
struct HostLog {
    /// Every bridge → host request, in arrival order.
    requests: Mutex<Vec<(String, Value)>>,
    /// Every `attempt/event` params.
    events: Mutex<Vec<Value>>,
    /// Never answer approvals (to keep an attempt mid-turn).
    hold_approvals: bool,
    /// Answer approvals only after this long (a person taking their time).
    approval_delay: Duration,
}

impl HostLog {
    fn requests_named(&self, method: &str) -> Vec<Value> {
        self.requests.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }

    fn events_of(&self, attempt: &str) -> Vec<Value> {
        self.events.lock().unwrap().iter().filter(|e| e["attemptId"] == attempt).cloned().collect()
    }
}

struct HostHandler(Arc<HostLog>);

/// The `lastToolError` the fake host hands back, to see it carried into the result unchanged.
fn sentinel_error() -> Value {
    json!({"toolName": "exec", "error": "sentinel", "mutatingAction": false})
}

impl RequestHandler for HostHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let log = self.0.clone();
        Box::pin(async move {
            let params = request.params_value().unwrap_or(Value::Null);
            log.requests.lock().unwrap().push((request.method.clone(), params.clone()));
            match request.method.as_str() {
                "host/approval/decide" if log.hold_approvals => futures::future::pending().await,
                "host/approval/decide" => {
                    tokio::time::sleep(log.approval_delay).await;
                    Ok(json!({"decision": "allow"}))
                }
                "host/toolTerminal/observe" => Ok(json!({"lastToolError": sentinel_error()})),
                "host/transcript/append" => {
                    let n = params["messages"].as_array().map_or(0, Vec::len);
                    Ok(json!({"entries": (0..n).map(|_| json!({"appended": true})).collect::<Vec<_>>()}))
                }
                "host/tool/execute" => Ok(json!({"text": "ok", "isError": false})),
                "host/userInput/request" => Ok(json!({"answers": {"color": {"answers": ["blue"]}}})),
                other => Err(HandlerError::Failed(format!("unexpected {other}"))),
            }
        })
    }
}

/// A running `clawbridge serve` and the host side of its connection.
struct Bridge {
    child: Child,
    peer: RpcPeer,
    log: Arc<HostLog>,
    _state: tempfile::TempDir,
}

fn command(state: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .envs(clawbridge_fixtures::no_user_config())
        .arg("serve")
        .env("CLAWBRIDGE_STATE_DIR", state)
        .env_remove("CLAWBRIDGE_CODEX_BIN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    command
}

fn start(hold_approvals: bool) -> Bridge {
    start_host(HostLog { hold_approvals, ..HostLog::default() })
}

fn start_host(log: HostLog) -> Bridge {
    let state = tempfile::tempdir().unwrap();
    let mut child = command(state.path()).spawn().expect("clawbridge serve starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let log = Arc::new(log);
    let config = PeerConfig {
        dialect: Dialect::JsonRpc2,
        request_timeout: Duration::from_secs(120),
        label: "test-host".into(),
        ..PeerConfig::default()
    };
    let (peer, mut events) =
        RpcPeer::start(stdout, stdin, config, Arc::new(HostHandler(log.clone())), Arc::new(NoProcess));
    let sink = log.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            match event {
                PeerEvent::Notification(note) if note.method == "attempt/event" => {
                    sink.events.lock().unwrap().push(note.params_value().unwrap_or(Value::Null));
                }
                PeerEvent::Closed(_) => break,
                _ => {}
            }
        }
    });
    Bridge { child, peer, log, _state: state }
}

/// `clawbridge serve` for a live codex behind the mock: only PATH from outside, the sandbox's
/// HOME, TMPDIR and CODEX_HOME, the state dir and the codex binary.
fn live_codex_command(
    sandbox: &clawbridge_fixtures::peers::Sandbox,
    state: &std::path::Path,
    codex: &std::path::Path,
) -> Command {
    let mut command = command(state);
    command
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CODEX_HOME", sandbox.codex_home())
        .env("CLAWBRIDGE_STATE_DIR", state)
        .env("CLAWBRIDGE_CODEX_BIN", codex)
        // The fake agents play one scripted thread per process.
        .env("CLAWBRIDGE_CODEX_SERVER", "per-attempt");
    command
}

fn init_params(version: u32) -> Value {
    json!({
        "protocolVersion": version,
        "host": {"name": "openclaw", "version": "2026.9.6"},
        "capabilities": {"hostTools": true, "approvals": true, "toolTerminals": true, "transcriptAppend": true, "userInput": false}
    })
}

fn error_code(result: Result<Value, RpcError>) -> (i64, String, Option<Value>) {
    match result {
        Err(RpcError::Remote { error, .. }) => {
            let data = error.data_value();
            (error.code, error.message, data)
        }
        other => panic!("expected an error answer, got {other:?}"),
    }
}

async fn initialize(bridge: &Bridge) -> Value {
    bridge.peer.request("initialize", Some(&init_params(PROTOCOL_VERSION))).await.expect("initialize succeeds")
}

fn attempt_params(attempt: &str, session: &str) -> Value {
    json!({
        "attemptId": attempt,
        "harnessId": "clawbridge-demo",
        "sessionId": session,
        "runId": format!("run-{attempt}"),
        "prompt": "Run echo hi",
        "workspaceDir": std::env::temp_dir().display().to_string(),
        "provider": "mock",
        "modelId": "mock-1",
        "modelApi": "openai-completions",
        "disableTools": false
    })
}

/// Checks one attempt's event stream: seq from 0 without gaps, started and terminal.
fn check_events(events: &[Value], attempt: &str) {
    assert!(!events.is_empty(), "{attempt}: no events");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["seq"], json!(i), "{attempt}: seq gap in {events:#?}");
    }
    assert_eq!(events[0]["event"]["type"], "turnStarted", "{attempt}");
    assert_eq!(events.last().unwrap()["event"]["type"], "turnTerminal", "{attempt}");
}

#[tokio::test]
async fn handshake_negotiates_and_refuses_other_versions() {
    let bridge = start(false);
    let (code, message, _) = error_code(bridge.peer.request("harness/list", Some(&json!({}))).await);
    assert_eq!(code, -32011, "{message}");

    // An older host (a version-1 plugin) and a newer one are both refused, naming both versions.
    for requested in [PROTOCOL_VERSION - 1, PROTOCOL_VERSION + 1] {
        let (code, message, data) = error_code(bridge.peer.request("initialize", Some(&init_params(requested))).await);
        assert_eq!(code, -32010);
        assert!(
            message.contains(&format!("version {requested} "))
                && message.contains(&format!("speaks version {PROTOCOL_VERSION}")),
            "{message}"
        );
        assert!(message.contains(env!("CARGO_PKG_VERSION")), "{message}");
        let data = data.expect("data");
        assert_eq!(data["requestedVersion"], requested);
        assert_eq!(data["supportedVersions"], json!({"min": PROTOCOL_VERSION, "max": PROTOCOL_VERSION}));
    }

    let (code, _, _) = error_code(bridge.peer.request("initialize", Some(&json!({"host": {}}))).await);
    assert_eq!(code, -32602, "a missing protocolVersion is invalid params");

    let init = initialize(&bridge).await;
    assert_eq!(init["protocolVersion"], PROTOCOL_VERSION);
    assert_eq!(init["bridge"]["name"], "clawbridge");
    let harnesses = init["harnesses"].as_array().unwrap();
    let demo = harnesses.iter().find(|h| h["id"] == "clawbridge-demo").expect("the demo harness");
    assert_eq!(demo["available"], true);
    let codex = harnesses.iter().find(|h| h["id"] == "clawbridge-codex").expect("the codex harness");
    assert!(codex["available"].is_boolean());
    let backends: Vec<&str> = init["backends"].as_array().unwrap().iter().filter_map(|b| b["id"].as_str()).collect();
    assert_eq!(backends, ["demo", "codex", "claude"]);

    let (code, _, _) = error_code(bridge.peer.request("initialize", Some(&init_params(PROTOCOL_VERSION))).await);
    assert_eq!(code, -32012);

    let list = bridge.peer.request("harness/list", None::<&Value>).await.unwrap();
    assert_eq!(list["harnesses"], init["harnesses"]);

    // harness/supports: compatibleIds decide; overrides refuse; nothing claims every route.
    let supports = |params: Value| {
        let peer = bridge.peer.clone();
        async move { peer.request("harness/supports", Some(&params)).await.unwrap() }
    };
    let yes = supports(json!({"harnessId": "clawbridge-demo", "provider": "mock",
        "modelProvider": {"runtimePolicy": {"compatibleIds": ["clawbridge-demo"]}}}))
    .await;
    assert_eq!(yes["supported"], true, "{yes}");
    let other = supports(json!({"harnessId": "clawbridge-demo", "provider": "mock",
        "modelProvider": {"runtimePolicy": {"compatibleIds": ["clawbridge-codex"]}}}))
    .await;
    assert_eq!(other["supported"], false, "{other}");
    let overrides =
        supports(json!({"harnessId": "clawbridge-demo", "provider": "mock", "requestedRuntime": "clawbridge-demo",
        "modelProvider": {"requestTransportOverrides": "present"}}))
        .await;
    assert_eq!(overrides["supported"], false, "{overrides}");
    let any = supports(json!({"harnessId": "clawbridge-demo", "provider": "openai"})).await;
    assert_eq!(any["supported"], false, "{any}");
    let unknown = supports(json!({"harnessId": "nope", "provider": "openai"})).await;
    assert_eq!(unknown["supported"], false, "{unknown}");

    let shutdown = bridge.peer.request("shutdown", Some(&json!({"reason": "test"}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], 0);
    bridge.peer.close();
    let mut child = bridge.child;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn bad_input_gets_errors_and_the_server_keeps_serving() {
    let state = tempfile::tempdir().unwrap();
    let mut child = command(state.path()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut exchange = async |line: &str| -> Value {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(20), lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&answer).unwrap()
    };
    let garbage = exchange("this is not json {").await;
    assert_eq!(garbage["error"]["code"], -32700, "{garbage}");
    assert_eq!(garbage["id"], Value::Null);
    let not_rpc = exchange(r#"{"hello":"world"}"#).await;
    assert_eq!(not_rpc["error"]["code"], -32600, "{not_rpc}");
    let init = exchange(
        &json!({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": init_params(PROTOCOL_VERSION)})
            .to_string(),
    )
    .await;
    assert_eq!(init["id"], "i");
    assert_eq!(init["result"]["protocolVersion"], PROTOCOL_VERSION, "{init}");
    let unknown = exchange(r#"{"jsonrpc":"2.0","id":7,"method":"no/such","params":{}}"#).await;
    assert_eq!(unknown["id"], 7);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad_params = exchange(r#"{"jsonrpc":"2.0","id":8,"method":"attempt/run","params":{"attemptId":3}}"#).await;
    assert_eq!(bad_params["error"]["code"], -32602, "{bad_params}");
    let unknown_harness = exchange(
        &json!({"jsonrpc": "2.0", "id": 9, "method": "attempt/run",
        "params": {"attemptId": "x", "harnessId": "nope", "sessionId": "s", "prompt": "p", "workspaceDir": "/"}})
        .to_string(),
    )
    .await;
    assert_eq!(unknown_harness["error"]["code"], -32020, "{unknown_harness}");
    let cancel = exchange(r#"{"jsonrpc":"2.0","id":10,"method":"attempt/cancel","params":{"attemptId":"none"}}"#).await;
    assert_eq!(cancel["result"]["status"], "notRunning", "{cancel}");
    let reset = exchange(r#"{"jsonrpc":"2.0","id":11,"method":"session/reset","params":{"sessionId":"none"}}"#).await;
    assert_eq!(reset["result"]["dropped"], false, "{reset}");
    let list = exchange(r#"{"jsonrpc":"2.0","id":12,"method":"harness/list"}"#).await;
    assert!(list["result"]["harnesses"].is_array(), "{list}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exits on EOF").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn an_attempt_whose_working_directory_is_unusable_fails_preflight_naming_it() {
    let bridge = start(false);
    initialize(&bridge).await;
    let file = tempfile::NamedTempFile::new().unwrap();
    let cases = [
        ("workspaceDir", json!("/nonexistent/clawbridge-workspace"), "/nonexistent/clawbridge-workspace"),
        ("workspaceDir", json!("relative/dir"), "not an absolute path"),
        ("workspaceDir", json!(""), "is empty"),
        ("cwd", json!(file.path().display().to_string()), "not a directory"),
    ];
    for (i, (field, value, named)) in cases.into_iter().enumerate() {
        let mut params = attempt_params(&format!("wd-{i}"), &format!("wd-s-{i}"));
        params[field] = value;
        let (code, message, data) = error_code(bridge.peer.request("attempt/run", Some(&params)).await);
        assert_eq!(code, -32034, "{field}: {message}");
        assert!(message.contains(field) && message.contains(named), "{message}");
        assert!(data.is_some_and(|d| d["userMessage"].as_str().is_some_and(|m| m.contains(named))), "{message}");
    }
    // The server keeps serving: a good attempt still runs.
    let ok = bridge.peer.request("attempt/run", Some(&attempt_params("wd-ok", "wd-s-ok"))).await.unwrap();
    assert_eq!(ok["terminal"]["kind"], "ok", "{ok}");
}

#[tokio::test]
async fn a_demo_attempt_runs_end_to_end() {
    let bridge = start(false);
    initialize(&bridge).await;
    let result = bridge.peer.request("attempt/run", Some(&attempt_params("a-1", "s-1"))).await.expect("a result");
    assert_eq!(result["attemptId"], "a-1");
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert!(!result["assistantTexts"].as_array().unwrap().is_empty(), "{result:#}");
    assert_eq!(result["transcriptOwned"], true, "{result:#}");
    let key = result["transcriptIdempotencyKey"].as_str().expect("a key");
    assert!(key.starts_with("clawbridge:run-a-1:") && key.ends_with(":assistant"), "{key}");
    assert_eq!(result["lastToolError"], sentinel_error(), "the observed lastToolError is carried unchanged");
    assert_eq!(result["itemLifecycle"]["activeCount"], 0);
    assert!(result["nativeSessionId"].is_string());

    check_events(&bridge.log.events_of("a-1"), "a-1");
    let approvals = bridge.log.requests_named("host/approval/decide");
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert_eq!(approvals[0]["attemptId"], "a-1");
    assert_eq!(approvals[0]["kind"], "command");
    let observed = bridge.log.requests_named("host/toolTerminal/observe");
    assert_eq!(observed.len(), result["tools"].as_array().unwrap().len(), "one observe per tool call");
    assert!(observed.iter().all(|o| o["attemptId"] == "a-1"));
    let appends = bridge.log.requests_named("host/transcript/append");
    assert!(!appends.is_empty());
    let messages: Vec<&Value> = appends.iter().flat_map(|a| a["messages"].as_array().unwrap()).collect();
    assert!(appends.iter().all(|a| a["attemptId"] == "a-1" && a["sessionId"] == "s-1"));
    assert!(messages.iter().all(|m| m["role"] != "user"), "core writes the prompt itself");
    assert_eq!(messages.last().unwrap()["idempotencyKey"], key, "the final row is the result's key");

    // The session is bound now: reset drops it once.
    let reset = bridge.peer.request("session/reset", Some(&json!({"sessionId": "s-1"}))).await.unwrap();
    assert_eq!(reset["dropped"], true);
    let reset = bridge.peer.request("session/reset", Some(&json!({"sessionId": "s-1"}))).await.unwrap();
    assert_eq!(reset["dropped"], false);
}

/// The session binding files under a bridge's state dir.
fn binding_files(bridge: &Bridge) -> usize {
    std::fs::read_dir(bridge._state.path().join("serve/bindings"))
        .map(|dir| dir.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "json")).count())
        .unwrap_or(0)
}

async fn reset_for(bridge: &Bridge, session: &str, reason: &str) -> Value {
    let params = json!({"sessionId": session, "reason": reason});
    bridge.peer.request("session/reset", Some(&params)).await.expect("a reset answer")
}

async fn run_ok(bridge: &Bridge, attempt: &str, session: &str) -> Value {
    let result = bridge.peer.request("attempt/run", Some(&attempt_params(attempt, session))).await.expect("a result");
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    result
}

/// `session/reset` by reason (docs/host-protocol.md, the reason table): `compaction` keeps the
/// native binding, every other reason (and one this build does not know) drops it; `session/delete`
/// forgets it; `session/contextReset` drops the session's and its recorded predecessor's.
#[tokio::test]
async fn each_reset_reason_drops_or_keeps_the_binding_and_delete_and_context_reset_forget_it() {
    let bridge = start(false);
    initialize(&bridge).await;
    for (i, reason) in ["new", "reset", "idle", "daily", "deleted", "unknown", "someFutureReason"].iter().enumerate() {
        let session = format!("s-{reason}");
        run_ok(&bridge, &format!("r-{i}"), &session).await;
        assert_eq!(binding_files(&bridge), 1, "{reason}: bound");
        let reset = reset_for(&bridge, &session, reason).await;
        assert_eq!(reset["action"], "dropped", "{reason}: {reset:#}");
        assert_eq!(reset["dropped"], true, "{reason}");
        assert!(reset.get("afterAttempt").is_none(), "{reason}: nothing was running");
        assert_eq!(binding_files(&bridge), 0, "{reason}: the binding file is gone");
    }

    run_ok(&bridge, "c-1", "s-compact").await;
    for _ in 0..2 {
        let reset = reset_for(&bridge, "s-compact", "compaction").await;
        assert_eq!(reset["action"], "kept", "{reset:#}");
        assert_eq!(reset["dropped"], false);
        assert_eq!(binding_files(&bridge), 1, "compaction keeps the native thread's binding");
    }
    assert_eq!(reset_for(&bridge, "s-compact", "reset").await["action"], "dropped");
    assert_eq!(reset_for(&bridge, "s-compact", "compaction").await["action"], "unbound", "nothing left to keep");

    run_ok(&bridge, "d-1", "s-del").await;
    let params = json!({"sessionId": "s-del", "sessionKey": "k"});
    assert_eq!(bridge.peer.request("session/delete", Some(&params)).await.unwrap(), json!({"forgotten": true}));
    assert_eq!(binding_files(&bridge), 0);
    let params = json!({"sessionId": "s-del"});
    assert_eq!(bridge.peer.request("session/delete", Some(&params)).await.unwrap(), json!({"forgotten": false}));
    let (code, _, _) = error_code(bridge.peer.request("session/delete", Some(&json!({}))).await);
    assert_eq!(code, -32602, "a deletion names its session");

    run_ok(&bridge, "x-1", "s-before").await;
    run_ok(&bridge, "x-2", "s-cut").await;
    run_ok(&bridge, "x-3", "s-other").await;
    let params = json!({"sessionId": "s-cut", "previousSessionId": "s-before"});
    let cut = bridge.peer.request("session/contextReset", Some(&params)).await.unwrap();
    assert_eq!(cut, json!({"invalidated": ["s-cut", "s-before"]}));
    assert_eq!(binding_files(&bridge), 1, "only the other session keeps its binding");
    assert_eq!(reset_for(&bridge, "s-other", "compaction").await["action"], "kept");
}

/// The runtime artifact (OpenClaw's `AgentHarnessRuntimeArtifactBinding`): each available harness
/// names it in `initialize`; an attempt that asks (`captureRuntimeArtifact`) gets it in its result;
/// an attempt that expects another one is refused before anything runs.
#[tokio::test]
async fn the_runtime_artifact_is_captured_on_request_and_a_different_expected_one_is_refused() {
    let bridge = start(false);
    let init = initialize(&bridge).await;
    let demo = init["harnesses"].as_array().unwrap().iter().find(|h| h["id"] == "clawbridge-demo").unwrap().clone();
    let artifact = demo["runtimeArtifact"].clone();
    assert!(artifact["id"].as_str().unwrap().starts_with("clawbridge-demo@clawbridge-"), "{demo:#}");
    assert_eq!(artifact["fingerprint"].as_str().unwrap().len(), 64, "{demo:#}");
    for harness in init["harnesses"].as_array().unwrap() {
        assert_eq!(harness["available"] == true, harness.get("runtimeArtifact").is_some(), "{harness:#}");
    }

    let plain = run_ok(&bridge, "ra-1", "s-ra").await;
    assert!(plain.get("runtimeArtifact").is_none(), "only when asked: {plain:#}");
    let mut params = attempt_params("ra-2", "s-ra");
    params["captureRuntimeArtifact"] = json!(true);
    params["expectedRuntimeArtifact"] = artifact.clone();
    let captured = bridge.peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(captured["terminal"]["kind"], "ok", "{captured:#}");
    assert_eq!(captured["runtimeArtifact"], artifact, "the artifact that ran it");

    let mut params = attempt_params("ra-3", "s-ra");
    params["expectedRuntimeArtifact"] = json!({"id": artifact["id"], "fingerprint": "0".repeat(64)});
    let (code, message, data) = error_code(bridge.peer.request("attempt/run", Some(&params)).await);
    assert_eq!(code, -32034, "{message}");
    assert!(message.contains("not the runtime artifact"), "{message}");
    assert!(data.unwrap()["userMessage"].as_str().unwrap().contains("start a new session"));
    assert!(bridge.log.events_of("ra-3").is_empty(), "nothing ran");
}

/// A reset written while an attempt runs on the session takes effect after that attempt has stored
/// its binding, and is answered then (never refused, never lost, never overtaken by the binding).
#[tokio::test]
async fn a_reset_sent_while_an_attempt_runs_takes_effect_after_it() {
    let bridge = start_host(HostLog { approval_delay: Duration::from_millis(1500), ..HostLog::default() });
    initialize(&bridge).await;
    let peer = bridge.peer.clone();
    let running = tokio::spawn(async move { peer.request("attempt/run", Some(&attempt_params("o-1", "s-o"))).await });
    wait_for(|| !bridge.log.requests_named("host/approval/decide").is_empty()).await;
    let peer = bridge.peer.clone();
    let reset = tokio::spawn(async move {
        peer.request("session/reset", Some(&json!({"sessionId": "s-o", "reason": "reset"}))).await
    });
    // A second attempt on the session written now is still refused as busy, as before.
    let (code, _, _) = error_code(bridge.peer.request("attempt/run", Some(&attempt_params("o-2", "s-o"))).await);
    assert_eq!(code, -32032);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!reset.is_finished(), "the reset is answered only once the attempt ended");

    let reset = reset.await.unwrap().expect("the reset's answer");
    assert_eq!(reset["afterAttempt"], "o-1", "{reset:#}");
    assert_eq!(reset["action"], "dropped", "the binding the attempt stored was dropped: {reset:#}");
    assert_eq!(binding_files(&bridge), 0, "nothing re-bound the session after the reset");
    let result = running.await.unwrap().expect("the attempt's result");
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert_eq!(reset_for(&bridge, "s-o", "reset").await["action"], "unbound");
    // Once answered, the session is free: the next attempt starts (and binds) at once.
    run_ok(&bridge, "o-3", "s-o").await;
    assert_eq!(binding_files(&bridge), 1);
}

#[tokio::test]
async fn many_concurrent_demo_attempts_share_one_connection() {
    const N: usize = 20;
    let bridge = start(false);
    initialize(&bridge).await;
    let runs = (0..N).map(|i| {
        let peer = bridge.peer.clone();
        async move {
            let id = format!("c-{i}");
            let result = peer.request("attempt/run", Some(&attempt_params(&id, &format!("s-{i}")))).await;
            (id, result)
        }
    });
    let results =
        tokio::time::timeout(Duration::from_secs(120), futures::future::join_all(runs)).await.expect("all finish");
    for (id, result) in results {
        let result = result.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(result["attemptId"], id);
        assert_eq!(result["terminal"]["kind"], "ok", "{id}: {result:#}");
        assert_eq!(result["transcriptOwned"], true, "{id}");
        check_events(&bridge.log.events_of(&id), &id);
        let approvals = bridge.log.requests_named("host/approval/decide");
        assert_eq!(approvals.iter().filter(|a| a["attemptId"] == id).count(), 1, "{id}");
    }
}

#[tokio::test]
async fn busy_sessions_and_duplicate_ids_are_refused_and_shutdown_cancels() {
    let bridge = start(true);
    initialize(&bridge).await;
    let peer = bridge.peer.clone();
    let running = tokio::spawn(async move { peer.request("attempt/run", Some(&attempt_params("b-1", "s-b"))).await });
    wait_for(|| !bridge.log.requests_named("host/approval/decide").is_empty()).await;

    let (code, _, _) = error_code(bridge.peer.request("attempt/run", Some(&attempt_params("b-2", "s-b"))).await);
    assert_eq!(code, -32032, "same session");
    let (code, _, _) = error_code(bridge.peer.request("attempt/run", Some(&attempt_params("b-1", "s-other"))).await);
    assert_eq!(code, -32031, "same attempt id");
    // A reset while the session runs is not refused: it waits for the attempt (here, its cancel).
    let peer = bridge.peer.clone();
    let reset = tokio::spawn(async move { peer.request("session/reset", Some(&json!({"sessionId": "s-b"}))).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!reset.is_finished(), "the reset waits for the running attempt");
    // At most 32 changes wait for one attempt; past that they are refused, visibly.
    // Queued (so written) in this order, before the one that must be refused.
    let deletion = json!({"sessionId": "s-b"});
    let mut waiting = Vec::new();
    for _ in 1..32 {
        waiting
            .push(bridge.peer.send_request("session/delete", Some(&deletion), Duration::from_secs(120)).await.unwrap());
    }
    let (code, message, _) = error_code(bridge.peer.request("session/reset", Some(&json!({"sessionId": "s-b"}))).await);
    assert_eq!(code, -32032, "{message}");
    assert!(message.contains("32 session changes already wait"), "{message}");

    let shutdown = bridge.peer.request("shutdown", Some(&json!({}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], 1);
    let result = running.await.unwrap().expect("the cancelled attempt still gets its result");
    assert_ne!(result["terminal"]["kind"], "ok", "{result:#}");
    let reset = reset.await.unwrap().expect("the reset is answered once the attempt ended");
    assert_eq!(reset["afterAttempt"], "b-1", "{reset:#}");
    for deletion in waiting {
        let deletion = deletion.await.expect("every waiting change is answered");
        let deletion: Value = serde_json::from_str(deletion.get()).unwrap();
        assert_eq!(deletion["afterAttempt"], "b-1", "{deletion:#}");
    }
    let (code, _, _) = error_code(bridge.peer.request("attempt/run", Some(&attempt_params("b-3", "s-c"))).await);
    assert_eq!(code, -32013, "no attempts after shutdown");
    bridge.peer.close();
    let mut child = bridge.child;
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn the_budget_does_not_run_out_while_an_approval_is_pending_past_it() {
    // The person takes longer than the whole budget; the rest of the demo turn takes far less.
    let bridge = start_host(HostLog { approval_delay: Duration::from_millis(2500), ..HostLog::default() });
    initialize(&bridge).await;
    let mut params = attempt_params("p-1", "s-p");
    params["timeoutMs"] = json!(1500);
    let result = bridge.peer.request("attempt/run", Some(&params)).await.expect("a result");
    assert_eq!(result["terminal"]["kind"], "ok", "the budget fired while the host decided: {result:#}");
    assert_eq!(bridge.log.requests_named("host/approval/decide").len(), 1);

    let events = bridge.log.events_of("p-1");
    check_events(&events, "p-1");
    let budget: Vec<&Value> = events
        .iter()
        .map(|e| &e["event"])
        .filter(|e| e["type"].as_str().is_some_and(|t| t.starts_with("budget")))
        .collect();
    assert_eq!(budget.len(), 2, "one pause, one resume: {budget:#?}");
    assert_eq!(budget[0]["type"], "budgetPaused");
    assert_eq!(budget[1]["type"], "budgetResumed");
    let left = budget[0]["remainingMs"].as_u64().expect("remainingMs");
    assert!(left > 0 && left <= 1500, "{left}");
    assert_eq!(budget[1]["remainingMs"], budget[0]["remainingMs"], "no time passed on the budget while paused");
}

#[tokio::test]
async fn attempt_cancel_interrupts_a_running_attempt() {
    let bridge = start(true);
    initialize(&bridge).await;
    let peer = bridge.peer.clone();
    let running = tokio::spawn(async move { peer.request("attempt/run", Some(&attempt_params("x-1", "s-x"))).await });
    wait_for(|| !bridge.log.requests_named("host/approval/decide").is_empty()).await;
    let cancel =
        bridge.peer.request("attempt/cancel", Some(&json!({"attemptId": "x-1", "reason": "stop"}))).await.unwrap();
    assert_eq!(cancel["status"], "cancelling");
    let result = tokio::time::timeout(Duration::from_secs(30), running).await.expect("ends").unwrap().unwrap();
    assert_eq!(result["attemptId"], "x-1");
    assert_ne!(result["terminal"]["kind"], "ok", "{result:#}");
    let events = bridge.log.events_of("x-1");
    check_events(&events, "x-1");
    let cancel = bridge.peer.request("attempt/cancel", Some(&json!({"attemptId": "x-1"}))).await.unwrap();
    assert_eq!(cancel["status"], "notRunning");
}

#[tokio::test]
async fn stdin_eof_mid_attempt_stops_everything_and_exits() {
    let bridge = start(true);
    initialize(&bridge).await;
    let mut running = Vec::new();
    for i in 0..3 {
        let peer = bridge.peer.clone();
        running.push(tokio::spawn(async move {
            peer.request("attempt/run", Some(&attempt_params(&format!("e-{i}"), &format!("s-e{i}")))).await
        }));
    }
    wait_for(|| bridge.log.requests_named("host/approval/decide").len() == 3).await;
    let server = bridge.child.id().expect("running");
    let agents = children_of(server);
    assert_eq!(agents.len(), 3, "one demo agent per attempt: {agents:?}");
    assert!(agents.iter().all(|&pid| group_alive(pid)), "each agent leads its own process group");

    bridge.peer.close();
    let mut child = bridge.child;
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("the server exits").unwrap();
    assert!(status.success(), "{status}");
    for pid in agents {
        assert!(!group_alive(pid), "process group {pid} outlived the server");
    }
}

async fn wait_for(mut ready: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// OpenClaw's system-prompt addition for the live Codex attempts (a marker the model request must carry).
const EXTRA_SYSTEM: &str = "CLAWBRIDGE-EXTRA-SYSTEM-7c2: answer as the clawbridge test agent.";

/// The real codex 0.169.0 and the scripted mock model behind `serve`: an approved command, its
/// terminal observed, the transcript mirrored, the session's thread resumed by a second attempt,
/// and OpenClaw's `extraSystemPrompt` in the model's developer instructions.
// The mock model serves from this runtime while the bridge runs: it needs threads of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_codex_attempt_runs_and_the_session_resumes_its_thread() {
    use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
    use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};

    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&command_mock(true)).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut command = live_codex_command(&sandbox, state.path(), &codex);
    let mut child = command.spawn().unwrap();
    let log = Arc::new(HostLog::default());
    let (peer, mut events) = RpcPeer::start(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
        PeerConfig { dialect: Dialect::JsonRpc2, request_timeout: Duration::from_secs(120), ..PeerConfig::default() },
        Arc::new(HostHandler(log.clone())),
        Arc::new(NoProcess),
    );
    let sink = log.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let PeerEvent::Notification(note) = event {
                sink.events.lock().unwrap().push(note.params_value().unwrap_or(Value::Null));
            }
        }
    });
    let init = peer.request("initialize", Some(&init_params(PROTOCOL_VERSION))).await.unwrap();
    let backend = init["backends"].as_array().unwrap().iter().find(|b| b["id"] == "codex").unwrap().clone();
    assert_eq!(backend["available"], true, "{backend}");
    assert_eq!(backend["version"], "0.169.0", "{backend}");

    let params = |attempt: &str| {
        json!({"attemptId": attempt, "harnessId": "clawbridge-codex", "sessionId": "live-1", "runId": attempt,
               "prompt": "Please run the live test command.", "workspaceDir": sandbox.work().display().to_string(),
               "provider": "mock", "modelId": "mock-model", "modelApi": "openai-responses",
               "extraSystemPrompt": EXTRA_SYSTEM})
    };
    let first = peer.request("attempt/run", Some(&params("l-1"))).await.unwrap();
    assert_eq!(first["terminal"]["kind"], "ok", "{first:#}");
    assert!(first["assistantTexts"].as_array().unwrap().iter().any(|t| t.as_str().unwrap_or("").contains(MARKER)));
    assert_eq!(first["transcriptOwned"], true);
    assert_eq!(first["lastToolError"], sentinel_error());
    check_events(&log.events_of("l-1"), "l-1");
    assert_eq!(log.requests_named("host/approval/decide").len(), 1);
    assert_eq!(log.requests_named("host/toolTerminal/observe").len(), 1);
    // OpenClaw's extraSystemPrompt reaches the model as Codex's developer instructions: a
    // developer message of every request, never the user's.
    let requests = mock.model_requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let items = request.body["input"].as_array().cloned().unwrap_or_default();
        let carries =
            |role: &str| items.iter().any(|i| i["role"] == role && i["content"].to_string().contains(EXTRA_SYSTEM));
        assert!(carries("developer"), "no developer message carries it: {}", request.body["input"]);
        assert!(!carries("user"), "the user message carries it: {}", request.body["input"]);
    }

    let second = peer.request("attempt/run", Some(&params("l-2"))).await.unwrap();
    assert_eq!(second["terminal"]["kind"], "ok", "{second:#}");
    assert_eq!(second["nativeSessionId"], first["nativeSessionId"], "the session resumed its thread");

    let shutdown = peer.request("shutdown", Some(&json!({}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], 0);
    peer.close();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait()).await.expect("exits").unwrap();
    assert!(status.success(), "{status}");
}

/// A launcher for `CLAWBRIDGE_CODEX_BIN`: the scripted fake agent playing the recorded plain-text
/// turn (fixtures/recordings/codex/plain-text.jsonl), or, with `until_interrupted`, a turn that
/// only ends (as interrupted) on `turn/interrupt`. It answers the bridge's `--version` probe and
/// sets the fake's variables itself (the bridge gives Codex a scrubbed environment).
fn fake_codex(dir: &std::path::Path, until_interrupted: bool) -> std::path::PathBuf {
    let recording = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/recordings/codex/plain-text.jsonl"),
    )
    .unwrap();
    let entries: Vec<Value> =
        recording.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["json"].clone()).collect();
    let dirs: Vec<String> = recording
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["dir"].as_str().unwrap_or("").to_string())
        .collect();
    let mut answers = serde_json::Map::new();
    let mut after_turn_start = Vec::new();
    let mut turn_started = false;
    for (i, message) in entries.iter().enumerate() {
        let method = message["method"].as_str();
        if dirs[i] == "to_agent" && method.is_some() && message.get("id").is_some() {
            let answer = entries[i + 1..]
                .iter()
                .zip(&dirs[i + 1..])
                .find(|(e, d)| *d == "from_agent" && e["id"] == message["id"] && e.get("result").is_some());
            if let (Some((answer, _)), Some(method)) = (answer, method) {
                if method != "initialize" {
                    answers.insert(method.to_string(), answer["result"].clone());
                }
            }
            turn_started |= method == Some("turn/start");
        } else if turn_started && dirs[i] == "from_agent" && method.is_some() && message.get("id").is_none() {
            after_turn_start.push(json!({"send": message}));
        }
    }
    let mut after = serde_json::Map::new();
    if until_interrupted {
        let started = after_turn_start.iter().find(|s| s["send"]["method"] == "turn/started").unwrap().clone();
        let mut completed = after_turn_start.iter().find(|s| s["send"]["method"] == "turn/completed").unwrap().clone();
        completed["send"]["params"]["turn"]["status"] = json!("interrupted");
        completed["send"]["params"]["turn"]["items"] = json!([]);
        after.insert("turn/start".into(), json!([started]));
        answers.insert("turn/interrupt".into(), json!({}));
        after.insert("turn/interrupt".into(), json!([completed]));
    } else {
        after.insert("turn/start".into(), Value::Array(after_turn_start));
    }
    let script = dir.join(if until_interrupted { "hold.json" } else { "turn.json" });
    std::fs::write(&script, json!({"answers": answers, "after": after}).to_string()).unwrap();
    clawbridge_fixtures::peers::codex::fake_codex_launcher(
        dir,
        if until_interrupted { "hold.sh" } else { "turn.sh" },
        &script,
    )
}

/// A bridge whose Codex harness runs `codex`.
fn start_with_codex(codex: &std::path::Path) -> Bridge {
    start_with_codex_env(codex, &[])
}

/// [`start_with_codex`] with more variables in the bridge's environment.
fn start_with_codex_env(codex: &std::path::Path, env: &[(&str, &str)]) -> Bridge {
    let state = tempfile::tempdir().unwrap();
    let mut command = command(state.path());
    // The fake agents play one scripted thread per process.
    command.env("CLAWBRIDGE_CODEX_BIN", codex).env("CLAWBRIDGE_CODEX_SERVER", "per-attempt").envs(env.iter().copied());
    let mut child = command.spawn().expect("clawbridge serve starts");
    let log = Arc::new(HostLog::default());
    let (peer, mut events) = RpcPeer::start(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
        PeerConfig { dialect: Dialect::JsonRpc2, request_timeout: Duration::from_secs(300), ..PeerConfig::default() },
        Arc::new(HostHandler(log.clone())),
        Arc::new(NoProcess),
    );
    let sink = log.clone();
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if let PeerEvent::Notification(note) = event {
                sink.events.lock().unwrap().push(note.params_value().unwrap_or(Value::Null));
            }
        }
    });
    Bridge { child, peer, log, _state: state }
}

fn codex_params(attempt: &str, session: &str) -> Value {
    json!({"attemptId": attempt, "harnessId": "clawbridge-codex", "sessionId": session, "runId": attempt,
           "prompt": "Say hello.", "workspaceDir": std::env::temp_dir().display().to_string(),
           "provider": "mock", "modelId": "mock-model"})
}

/// A Codex app-server that stops reading its stdin mid-turn (it sends 20 000 requests right after
/// `turn/start` and freezes without reading an answer) fails the attempt within the write timeout
/// (short here), naming the cause, instead of holding it until the idle watchdog.
#[tokio::test]
async fn an_attempt_whose_codex_stops_reading_its_stdin_fails_naming_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), false);
    let script_path = dir.path().join("turn.json");
    let mut script: Value = serde_json::from_str(&std::fs::read_to_string(&script_path).unwrap()).unwrap();
    let mut deaf: Vec<Value> = (0..20_000)
        .map(|n| json!({"send": {"id": 900_000 + n, "method": "fake/unanswerable", "params": {"n": n}}}))
        .collect();
    deaf.push(json!({"freeze": true}));
    script["after"]["turn/start"] = Value::Array(deaf);
    std::fs::write(&script_path, script.to_string()).unwrap();
    let bridge = start_with_codex_env(&codex, &[("CLAWBRIDGE_WRITE_TIMEOUT_MS", "500")]);
    initialize(&bridge).await;
    let result = bridge.peer.request("attempt/run", Some(&codex_params("deaf-1", "deaf-s"))).await.expect("answered");
    assert_eq!(result["terminal"]["kind"], "failed", "{result:#}");
    let message = result["terminal"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped reading its stdin for 500ms"), "the cause is named: {result:#}");
    assert_eq!(result["terminal"]["cause"], "backendExited", "its stream ended: {result:#}");
}

/// `sessionPersistence: "detached"` writes nothing durable for the session: no transcript rows, no
/// native binding in the state dir; the same session run durably afterwards mirrors and binds (so
/// the first half would fail if detached changed nothing).
#[tokio::test]
async fn a_detached_attempt_mirrors_no_rows_and_stores_no_binding() {
    let dir = tempfile::tempdir().unwrap();
    let bridge = start_with_codex(&fake_codex(dir.path(), false));
    initialize(&bridge).await;
    let bindings = bridge._state.path().join("serve").join("bindings");
    let stored = || std::fs::read_dir(&bindings).map(Iterator::count).unwrap_or(0);

    let mut detached = codex_params("det-1", "det-s");
    detached["sessionPersistence"] = json!("detached");
    let result = bridge.peer.request("attempt/run", Some(&detached)).await.expect("the detached attempt runs");
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert_eq!(result["assistantTexts"], json!(["Hello from the mock model."]));
    assert_eq!(result["transcriptOwned"], false, "{result:#}");
    assert!(bridge.log.requests_named("host/transcript/append").is_empty(), "no rows for a detached run");
    assert_eq!(stored(), 0, "no binding for a detached run");

    let result = bridge.peer.request("attempt/run", Some(&codex_params("det-2", "det-s"))).await.expect("runs");
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert_eq!(result["transcriptOwned"], true, "{result:#}");
    assert!(!bridge.log.requests_named("host/transcript/append").is_empty());
    assert_eq!(stored(), 1, "the durable run binds the session");
}

/// The concurrency target of issue #5: 64 attempts at once over one connection, each on its own
/// (fake) Codex app-server, all with their own correct result, events and transcript rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_concurrent_codex_attempts_over_one_connection_all_complete() {
    const N: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let bridge = start_with_codex(&fake_codex(dir.path(), false));
    let init = initialize(&bridge).await;
    assert_eq!(init["capabilities"]["maxConcurrentAttempts"], N, "{init}");
    let codex = init["harnesses"].as_array().unwrap().iter().find(|h| h["id"] == "clawbridge-codex").unwrap().clone();
    assert_eq!(codex["available"], true, "{codex}");

    let runs = (0..N).map(|i| {
        let peer = bridge.peer.clone();
        async move {
            let id = format!("k-{i}");
            (id.clone(), peer.request("attempt/run", Some(&codex_params(&id, &format!("ks-{i}")))).await)
        }
    });
    let results =
        tokio::time::timeout(Duration::from_secs(240), futures::future::join_all(runs)).await.expect("all finish");
    let appends = bridge.log.requests_named("host/transcript/append");
    for (id, result) in results {
        let result = result.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(result["attemptId"], id);
        assert_eq!(result["terminal"]["kind"], "ok", "{id}: {result:#}");
        assert_eq!(result["assistantTexts"], json!(["Hello from the mock model."]), "{id}");
        assert_eq!(result["transcriptOwned"], true, "{id}");
        check_events(&bridge.log.events_of(&id), &id);
        let mine: Vec<&Value> = appends.iter().filter(|a| a["attemptId"] == id).collect();
        let last = mine.last().and_then(|a| a["messages"].as_array()).and_then(|m| m.last()).expect("rows");
        assert_eq!(last["idempotencyKey"], result["transcriptIdempotencyKey"], "{id}");
        assert!(mine.iter().all(|a| a["sessionId"] == format!("ks-{}", &id[2..])), "{id}: rows on its own session");
    }
    let shutdown = bridge.peer.request("shutdown", Some(&json!({}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], 0);
}

/// `maxConcurrentAttempts` is exact: 64 running attempts are accepted, the 65th is refused with
/// `bridgeBusy` and harms none of them, and a slot freed by a cancel is usable again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_limit_refuses_exactly_the_attempt_past_it() {
    const N: usize = 64;
    let dir = tempfile::tempdir().unwrap();
    let bridge = start_with_codex(&fake_codex(dir.path(), true));
    initialize(&bridge).await;
    let mut running = Vec::new();
    for i in 0..N {
        let peer = bridge.peer.clone();
        running.push(tokio::spawn(async move {
            peer.request("attempt/run", Some(&codex_params(&format!("h-{i}"), &format!("hs-{i}")))).await
        }));
    }
    // Every attempt has its turn running once each has streamed `turnStarted`.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    while (0..N).any(|i| bridge.log.events_of(&format!("h-{i}")).is_empty()) {
        assert!(tokio::time::Instant::now() < deadline, "not all {N} attempts started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (code, message, _) =
        error_code(bridge.peer.request("attempt/run", Some(&codex_params("h-over", "hs-over"))).await);
    assert_eq!(code, -32033, "{message}");
    assert!(message.contains("64"), "{message}");

    let cancel = bridge.peer.request("attempt/cancel", Some(&json!({"attemptId": "h-0"}))).await.unwrap();
    assert_eq!(cancel["status"], "cancelling");
    let first = running.remove(0).await.unwrap().expect("the cancelled attempt's result");
    assert_eq!(first["terminal"]["kind"], "aborted", "{first:#}");
    // The freed slot takes a new attempt.
    let peer = bridge.peer.clone();
    let again =
        tokio::spawn(async move { peer.request("attempt/run", Some(&codex_params("h-again", "hs-again"))).await });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while bridge.log.events_of("h-again").is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the freed slot was not usable");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let shutdown = bridge.peer.request("shutdown", Some(&json!({}))).await.unwrap();
    assert_eq!(shutdown["cancelledAttempts"], N as u64);
    for handle in running.into_iter().chain([again]) {
        let result = handle.await.unwrap().expect("every attempt gets its result");
        assert_eq!(result["terminal"]["kind"], "aborted", "{result:#}");
    }
}

/// Codex's questions for the user (`item/tool/requestUserInput`) reach a host that declared
/// `userInput` as `host/userInput/request`, with the attempt id and the questions; a host that did not
/// declare it is never asked.
#[tokio::test]
async fn codex_questions_reach_a_host_that_takes_user_input() {
    let question = json!({"id": 900, "method": "item/tool/requestUserInput", "params": {
        "threadId": "<uuid-2>", "turnId": "<uuid-3>", "itemId": "ask_1", "questions": [
            {"id": "color", "header": "Colour", "question": "Which colour?", "isOther": false, "isSecret": false,
             "options": [{"label": "blue", "description": "calm"}]}]}});
    for user_input in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let launcher = fake_codex(dir.path(), false);
        // Ask right after turn/start, and give the answer time to arrive before the turn ends.
        let script_path = dir.path().join("turn.json");
        let mut script: Value = serde_json::from_str(&std::fs::read_to_string(&script_path).unwrap()).unwrap();
        let steps = script["after"]["turn/start"].as_array_mut().unwrap();
        steps.insert(0, json!({"sleep_ms": 500}));
        steps.insert(0, json!({"send": question}));
        std::fs::write(&script_path, script.to_string()).unwrap();

        let bridge = start_with_codex(&launcher);
        let mut init = init_params(PROTOCOL_VERSION);
        init["capabilities"]["userInput"] = json!(user_input);
        bridge.peer.request("initialize", Some(&init)).await.expect("initialize");
        let mut params = codex_params("q-1", "qs-1");
        params["timeoutMs"] = json!(60_000);
        let result = bridge.peer.request("attempt/run", Some(&params)).await.unwrap();
        assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
        // The question held the budget: paused while the host's user was asked, then resumed.
        let budget: Vec<Value> = bridge
            .log
            .events_of("q-1")
            .iter()
            .map(|e| e["event"]["type"].clone())
            .filter(|t| t.as_str().is_some_and(|t| t.starts_with("budget")))
            .collect();
        let expected = if user_input { vec![json!("budgetPaused"), json!("budgetResumed")] } else { Vec::new() };
        assert_eq!(budget, expected, "userInput {user_input}");
        let asked = bridge.log.requests_named("host/userInput/request");
        if user_input {
            assert_eq!(asked.len(), 1, "{asked:#?}");
            assert_eq!(asked[0]["attemptId"], "q-1");
            assert_eq!(asked[0]["callId"], "ask_1");
            assert_eq!(asked[0]["questions"][0]["id"], "color");
            assert_eq!(asked[0]["questions"][0]["options"][0]["label"], "blue");
        } else {
            assert!(asked.is_empty(), "a host without userInput was asked: {asked:#?}");
        }
    }
}

#[tokio::test]
async fn a_tool_policy_a_backend_cannot_enforce_is_refused_up_front() {
    let bridge = start(false);
    initialize(&bridge).await;
    // The demo replays a recorded shell command as recorded: it cannot take the shell away.
    for (i, (disable, allow)) in [(true, None), (false, Some(json!(["read"])))].into_iter().enumerate() {
        let mut params = attempt_params(&format!("tp-{i}"), &format!("tp-s-{i}"));
        params["disableTools"] = json!(disable);
        if let Some(allow) = allow {
            params["toolsAllow"] = allow;
        }
        let (code, message, data) = error_code(bridge.peer.request("attempt/run", Some(&params)).await);
        assert_eq!(code, -32034, "{message}");
        assert!(message.contains("shell commands") && message.contains("tool policy"), "{message}");
        assert!(data.is_some_and(|d| d["userMessage"].as_str().is_some_and(|m| m.contains("tool restrictions"))));
    }
    // An allow list that grants every class is no restriction: the demo runs.
    let mut params = attempt_params("tp-ok", "tp-s-ok");
    params["toolsAllow"] = json!(["*"]);
    let ok = bridge.peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(ok["terminal"]["kind"], "ok", "{ok}");
}

/// `toolExecutionAllow` restricts the native classes as `toolsAllow` does, on top of it: a class
/// runs only when both allow it, so a backend that cannot take the shell away refuses the attempt.
#[tokio::test]
async fn tool_execution_allow_restricts_the_native_tools_on_top_of_tools_allow() {
    let bridge = start(false);
    initialize(&bridge).await;
    for (i, allow) in [None, Some(json!(["*"]))].into_iter().enumerate() {
        let mut params = attempt_params(&format!("tea-{i}"), &format!("tea-s-{i}"));
        params["toolExecutionAllow"] = json!(["read", "web_search"]);
        if let Some(allow) = allow {
            params["toolsAllow"] = allow;
        }
        let (code, message, _) = error_code(bridge.peer.request("attempt/run", Some(&params)).await);
        assert_eq!(code, -32034, "{message}");
        assert!(message.contains("shell commands") && message.contains("tool policy"), "{message}");
    }
    // Both lists granting every class is no restriction: the demo runs.
    let mut params = attempt_params("tea-ok", "tea-s-ok");
    params["toolExecutionAllow"] = json!(["*"]);
    params["toolsAllow"] = json!(["*"]);
    let ok = bridge.peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(ok["terminal"]["kind"], "ok", "{ok}");
}

/// `processEnv` (OpenClaw's prepared environment) is set for that attempt's native process only:
/// the next attempt on the same bridge starts its app-server without it, and a variable that would
/// inject code is refused up front.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_env_reaches_only_the_attempts_own_native_process() {
    let dir = tempfile::tempdir().unwrap();
    let turn = fake_codex(dir.path(), false);
    let dumps = dir.path().join("dumps");
    std::fs::create_dir(&dumps).unwrap();
    let launcher = dir.path().join("env.sh");
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh
if [ \"$1\" != \"--version\" ]; then env > '{}/env.'$$; fi\nexec '{}' \"$@\"\n",
            dumps.display(),
            turn.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
        .unwrap();
    let bridge = start_with_codex(&launcher);
    initialize(&bridge).await;
    let mut params = codex_params("pe-1", "pe-s-1");
    params["processEnv"] = json!({"GIT_AUTHOR_NAME": "Policy Person", "GH_TOKEN": ""});
    let result = bridge.peer.request("attempt/run", Some(&params)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let result = bridge.peer.request("attempt/run", Some(&codex_params("pe-2", "pe-s-1"))).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let envs: Vec<String> =
        std::fs::read_dir(&dumps).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
    assert_eq!(envs.len(), 2, "one app-server per attempt: {envs:#?}");
    let with: Vec<_> = envs.iter().filter(|env| env.lines().any(|l| l == "GIT_AUTHOR_NAME=Policy Person")).collect();
    assert_eq!(with.len(), 1, "only the first attempt's process has the variable: {envs:#?}");
    assert!(with[0].lines().any(|l| l == "GH_TOKEN="), "the scrub sets the credential empty: {}", with[0]);
    assert!(envs.iter().all(|env| !env.lines().any(|l| l.starts_with("GH_TOKEN=") && l != "GH_TOKEN=")));

    let mut params = codex_params("pe-3", "pe-s-3");
    params["processEnv"] = json!({"LD_PRELOAD": "/tmp/x.so"});
    let (code, message, _) = error_code(bridge.peer.request("attempt/run", Some(&params)).await);
    assert_eq!(code, -32034, "{message}");
    assert!(message.contains("processEnv") && message.contains("LD_PRELOAD"), "{message}");
    assert_eq!(std::fs::read_dir(&dumps).unwrap().count(), 2, "the refused attempt started nothing");
}

/// `toolsAllow` without a shell tool on the real codex 0.169.0: the model is never offered Codex's
/// shell (so the mock's scripted command cannot run) or its web search; the same attempt without
/// the allow list gets the shell and runs the command, so the check can fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_codex_attempt_without_a_shell_in_tools_allow_offers_and_runs_no_native_shell() {
    use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
    use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};

    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&command_mock(false)).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut command = live_codex_command(&sandbox, state.path(), &codex);
    let mut child = command.spawn().unwrap();
    let log = Arc::new(HostLog::default());
    let (peer, _events) = RpcPeer::start(
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
        PeerConfig { dialect: Dialect::JsonRpc2, request_timeout: Duration::from_secs(120), ..PeerConfig::default() },
        Arc::new(HostHandler(log.clone())),
        Arc::new(NoProcess),
    );
    peer.request("initialize", Some(&init_params(PROTOCOL_VERSION))).await.unwrap();
    let params = |attempt: &str, session: &str| {
        json!({"attemptId": attempt, "harnessId": "clawbridge-codex", "sessionId": session, "runId": attempt,
               "prompt": "Please run the live test command.", "workspaceDir": sandbox.work().display().to_string(),
               "provider": "mock", "modelId": "mock-model"})
    };
    let offered = |from: usize| -> Vec<String> {
        mock.model_requests()[from..]
            .iter()
            .flat_map(|r| r.body["tools"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t["name"].as_str().or(t["type"].as_str()).map(str::to_string))
            .collect()
    };

    let mut restricted = params("np-1", "np-s-1");
    restricted["toolsAllow"] = json!(["read"]);
    let result = peer.request("attempt/run", Some(&restricted)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    let tools = offered(0);
    assert!(!tools.is_empty(), "the model was asked");
    for gone in ["exec_command", "write_stdin", "web_search"] {
        assert!(!tools.iter().any(|t| t == gone), "{gone} offered: {tools:?}");
    }
    assert!(tools.iter().any(|t| t == "view_image"), "`read` keeps Codex's file reader: {tools:?}");
    assert!(!result.to_string().contains(MARKER), "no command ran: {result:#}");
    assert!(log.requests_named("host/approval/decide").is_empty());
    let asked = mock.model_requests().len();

    let open = peer.request("attempt/run", Some(&params("np-2", "np-s-2"))).await.unwrap();
    assert_eq!(open["terminal"]["kind"], "ok", "{open:#}");
    assert!(offered(asked).iter().any(|t| t == "exec_command"), "{:?}", offered(asked));
    assert!(open["assistantTexts"].to_string().contains(MARKER), "without the policy the command runs: {open:#}");
    peer.request("shutdown", Some(&json!({}))).await.unwrap();
    drop(peer);
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
}

/// Issue #13 (projection): a binding records the transcript position it was made at. The next
/// attempt whose `history` still ends with that attempt's row resumes the thread; one whose history
/// moved (another runtime answered last) starts a new thread seeded with the history and says why in
/// `projection`; a history over the byte cap is refused.
#[tokio::test]
async fn a_moved_transcript_is_reprojected_into_a_new_thread_and_an_oversized_history_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let codex = fake_codex(dir.path(), false);
    // The recorded thread also answers a resume, as a real app-server does for a thread it has.
    let script_path = dir.path().join("turn.json");
    let mut script: Value = serde_json::from_str(&std::fs::read_to_string(&script_path).unwrap()).unwrap();
    script["answers"]["thread/resume"] = script["answers"]["thread/start"].clone();
    std::fs::write(&script_path, script.to_string()).unwrap();
    // Everything the bridge writes to its (fake) app-servers, in order.
    let stdin_log = dir.path().join("stdin.log");
    let logged = dir.path().join("logged.sh");
    std::fs::write(&logged, format!("#!/bin/sh\ntee -a '{}' | '{}' \"$@\"\n", stdin_log.display(), codex.display()))
        .unwrap();
    std::fs::set_permissions(&logged, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let bridge = start_with_codex(&logged);
    initialize(&bridge).await;
    let written = || std::fs::read_to_string(&stdin_log).unwrap_or_default();

    let first = bridge.peer.request("attempt/run", Some(&codex_params("p-1", "ps"))).await.unwrap();
    assert_eq!(first["terminal"]["kind"], "ok", "{first:#}");
    assert!(first.get("projection").is_none(), "nothing to project on a first turn: {first:#}");
    let bindings = bridge._state.path().join("serve").join("bindings");
    let binding: Value = std::fs::read_dir(&bindings)
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .expect("a binding");
    assert_eq!(binding["transcriptPosition"], "clawbridge:p-1", "{binding:#}");

    // The transcript ends with the bound attempt's row: the thread is resumed, nothing seeded.
    let mut second = codex_params("p-2", "ps");
    second["history"] = json!({"entries": [
        {"role": "user", "text": "Say hello."},
        {"role": "assistant", "text": "Hello from the mock model.", "key": "clawbridge:p-1:assistant:final"}
    ]});
    let before = written().len();
    let result = bridge.peer.request("attempt/run", Some(&second)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert!(result.get("projection").is_none(), "{result:#}");
    let lines = written()[before..].to_string();
    assert!(lines.contains("\"thread/resume\"") && !lines.contains("conversation_history"), "{lines}");

    // OpenClaw's own runtime answered after p-2: the thread is stale, a new one gets the history.
    let mut third = codex_params("p-3", "ps");
    third["history"] = json!({"entries": [
        {"role": "user", "text": "Say hello."},
        {"role": "assistant", "text": "Hello from the mock model.", "key": "clawbridge:p-2:assistant:final"},
        {"role": "user", "text": "Note walrus-three."},
        {"role": "assistant", "text": "Noted by the embedded runner."}
    ], "omitted": 2});
    let before = written().len();
    let result = bridge.peer.request("attempt/run", Some(&third)).await.unwrap();
    assert_eq!(result["terminal"]["kind"], "ok", "{result:#}");
    assert_eq!(result["projection"]["entries"], 4, "{result:#}");
    assert_eq!(result["projection"]["omitted"], 2, "{result:#}");
    let reason = result["projection"]["reason"].as_str().unwrap_or("");
    assert!(reason.contains("was not written by the attempt that last ran"), "{reason}");
    let lines = written()[before..].to_string();
    assert!(!lines.contains("\"thread/resume\""), "a stale thread is not resumed: {lines}");
    assert!(lines.contains("\"thread/start\""), "{lines}");
    assert!(
        lines.contains("(2 older entries left out)")
            && lines.contains("[user]\\nNote walrus-three.\\n[assistant]\\nNoted by the embedded runner.\\n</conversation_history>\\n\\nSay hello."),
        "the first turn of the new thread carries the history, then the prompt: {lines}"
    );

    // A history over the cap is refused before anything runs.
    let mut huge = codex_params("p-4", "ps");
    huge["history"] = json!({"entries": [{"role": "user", "text": "x".repeat(512 * 1024)}]});
    let (code, message, _) = error_code(bridge.peer.request("attempt/run", Some(&huge)).await);
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("over the cap of 524288 bytes"), "{message}");
}
