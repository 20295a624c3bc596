//! The host wire as docs/host-protocol.md states it, checked on raw lines: ids echoed byte for
//! byte, strict JSON-RPC 2.0, params by name only, per-method size caps, the attempts' input
//! budget, and a huge request of tiny values that leaves the connection serving. Driven in process
//! (`serve_on_with` over a pipe) with the demo as the only backend.

use std::time::Duration;

use clawbridge::serve::ServeLimits;
use clawbridge_protocol::host::limits;
use common::raw_host::{Connection, connect};
use serde_json::{Value, json};

mod common;

impl Connection {
    /// The next line the bridge writes that is not a notification, as written.
    async fn next_answer(&mut self) -> String {
        loop {
            let line = self.next_line().await;
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("method").is_none() {
                return line;
            }
        }
    }

    /// Reads answers until every id in `ids` has one; returns them in the order of `ids`.
    async fn answers_to(&mut self, ids: &[i64]) -> Vec<Value> {
        let mut seen: Vec<Value> = Vec::new();
        while !ids.iter().all(|id| seen.iter().any(|a| a["id"] == *id)) {
            seen.push(serde_json::from_str(&self.next_answer().await).unwrap());
        }
        ids.iter().map(|id| seen.iter().find(|a| a["id"] == *id).unwrap().clone()).collect()
    }

    /// Writes `line` and returns the answer, parsed.
    async fn ask(&mut self, line: &str) -> Value {
        self.write_line(line).await;
        serde_json::from_str(&self.next_answer().await).unwrap()
    }

    async fn initialize(&mut self) {
        let answer = self.ask(&initialize(1)).await;
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

fn initialize(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION, "host": {"name": "wire-test", "version": "0"}}})
    .to_string()
}

/// `initialize` for a host that decides approvals: the demo's turn asks for one and, while nobody
/// answers it, keeps running until it is cancelled.
fn initialize_with_approvals(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION, "host": {"name": "wire-test", "version": "0"},
                      "capabilities": {"approvals": true}}})
    .to_string()
}

fn run_params(attempt: &str, prompt: &str) -> Value {
    json!({"attemptId": attempt, "harnessId": "clawbridge-demo", "sessionId": format!("s-{attempt}"),
           "prompt": prompt, "workspaceDir": std::env::temp_dir().display().to_string()})
}

fn request(id: i64, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_echoed_exactly_as_written() {
    let mut conn = connect(ServeLimits::from_env());
    for id in ["18446744073709551616", "1e2", "-0", "1.0", "-12.5E-3", r#""x""#, r#""\u00e9\n""#, "null"] {
        // Before `initialize`, so each is answered at once with `notInitialized`.
        conn.write_line(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"harness/list"}}"#)).await;
        let answer = conn.next_answer().await;
        assert!(answer.contains(&format!(r#""id":{id}"#)), "id {id} came back as {answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(code(&answer), -32011, "{answer}");
    }
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_that_are_objects_arrays_or_booleans_are_invalid_requests_answered_with_a_null_id() {
    let mut conn = connect(ServeLimits::from_env());
    for id in [r#"{"a":1}"#, "[1]", "true", "false"] {
        let answer = conn.ask(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"harness/list"}}"#)).await;
        assert_eq!(code(&answer), -32600, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
    }
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_without_jsonrpc_2_0_is_an_invalid_request_answered_with_its_id() {
    let mut conn = connect(ServeLimits::from_env());
    let params = &format!(r#""params":{{"protocolVersion":{}}}"#, clawbridge_protocol::host::PROTOCOL_VERSION);
    for (id, version) in
        [(7, None), (8, Some(r#""1.0""#)), (9, Some("2.0")), (10, Some("null")), (11, Some(r#""2.00""#))]
    {
        let version = version.map(|v| format!(r#""jsonrpc":{v},"#)).unwrap_or_default();
        let answer = conn.ask(&format!(r#"{{{version}"id":{id},"method":"initialize",{params}}}"#)).await;
        assert_eq!(code(&answer), -32600, "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("jsonrpc"), "{answer}");
    }
    // None of them initialized the connection: a proper `initialize` still succeeds.
    conn.initialize().await;
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_by_position_are_invalid_params_for_every_host_method_before_and_after_initialize() {
    let schema_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/host-protocol.schema.json");
    let schema = clawbridge_fixtures::host_fuzz::Schema::load(&schema_path).unwrap();
    let methods: Vec<&str> = schema
        .methods()
        .iter()
        .filter(|m| m.sender == "host" && m.kind == "request")
        .map(|m| m.name.as_str())
        .collect();
    assert!(methods.len() >= 8, "the schema lists the host's requests: {methods:?}");
    let mut conn = connect(ServeLimits::from_env());
    let mut id = 0;
    for initialized in [false, true] {
        if initialized {
            conn.initialize().await;
        }
        for method in &methods {
            for params in [r#"["a-1"]"#, "[1]", "[]", r#""x""#, "5", "true"] {
                id += 1;
                let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
                let answer = conn.ask(&line).await;
                assert_eq!(code(&answer), -32602, "initialized: {initialized}, {line}: {answer}");
            }
        }
    }
    // Nothing of them took effect: the connection is initialized once and still serves.
    let answer = conn.ask(&request(1000, "harness/list", &json!({}))).await;
    assert!(answer.get("result").is_some(), "{answer}");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_its_methods_cap_is_refused_naming_it_and_an_attempt_under_its_cap_is_served() {
    let mut conn = connect(ServeLimits::from_env());
    // The attempt below waits on its unanswered approval, so its cancel always finds it running.
    let answer = conn.ask(&initialize_with_approvals(1)).await;
    assert!(answer.get("result").is_some(), "{answer}");
    let padding = "x".repeat(limits::DEFAULT_REQUEST_MAX_BYTES);
    let answer = conn.ask(&request(2, "harness/list", &json!({"padding": padding}))).await;
    assert_eq!(code(&answer), -32014, "{answer}");
    assert_eq!(answer["id"], 2);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("harness/list"), "{message}");
    assert!(message.contains(&limits::DEFAULT_REQUEST_MAX_BYTES.to_string()), "{message}");
    assert_eq!(answer["error"]["data"]["method"], "harness/list");
    assert_eq!(answer["error"]["data"]["limit"], limits::DEFAULT_REQUEST_MAX_BYTES);
    assert!(answer["error"]["data"]["bytes"].as_u64().unwrap() > limits::DEFAULT_REQUEST_MAX_BYTES as u64);

    // The same size is fine for `attempt/run`: it is admitted and cancelled like any attempt.
    let run = request(3, "attempt/run", &run_params("big", &padding));
    let cancel = request(4, "attempt/cancel", &json!({"attemptId": "big"}));
    conn.write_line(&format!("{run}\n{cancel}")).await;
    let [run, cancel] = <[Value; 2]>::try_from(conn.answers_to(&[3, 4]).await).unwrap();
    assert_eq!(cancel["result"]["status"], "cancelling", "the attempt was not admitted: {cancel} / {run}");
    assert!(run.get("result").is_some(), "{run}");
    // Nothing else was lost: the connection goes on.
    let list = conn.ask(&request(5, "harness/list", &json!({}))).await;
    assert!(list["result"]["harnesses"].is_array(), "{list}");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_past_the_input_budget_is_refused_and_the_budget_comes_back_when_attempts_end() {
    const BUDGET: usize = 1024 * 1024;
    let mut conn = connect(ServeLimits { input_budget_bytes: BUDGET, ..ServeLimits::from_env() });
    // Approvals are never answered (`next_answer` skips the bridge's requests), so each attempt runs
    // until its cancel, however fast the machine reads the next line.
    let answer = conn.ask(&initialize_with_approvals(1)).await;
    assert!(answer.get("result").is_some(), "{answer}");
    let prompt = "p".repeat(BUDGET * 6 / 10);
    let first = request(2, "attempt/run", &run_params("first", &prompt));
    let second = request(3, "attempt/run", &run_params("second", &prompt));
    // Written together, with the first's cancel: the first is admitted (and running) before the
    // second is read, and the cancel finds it.
    let cancel = request(4, "attempt/cancel", &json!({"attemptId": "first"}));
    conn.write_line(&format!("{first}\n{second}\n{cancel}")).await;
    let [first, refused, cancel] = <[Value; 3]>::try_from(conn.answers_to(&[2, 3, 4]).await).unwrap();
    assert_eq!(code(&refused), -32035, "{refused}");
    assert_eq!(refused["error"]["data"]["limit"], BUDGET);
    assert!(refused["error"]["data"]["inUse"].as_u64().unwrap() >= prompt.len() as u64, "{refused}");
    assert_eq!(cancel["result"]["status"], "cancelling", "{cancel}");
    assert!(first.get("result").is_some(), "{first}");

    // Its bytes were given back when it ended: the same attempt fits again.
    let again = request(5, "attempt/run", &run_params("again", &prompt));
    let cancel = request(6, "attempt/cancel", &json!({"attemptId": "again"}));
    conn.write_line(&format!("{again}\n{cancel}")).await;
    let [again, cancel] = <[Value; 2]>::try_from(conn.answers_to(&[5, 6]).await).unwrap();
    assert_eq!(cancel["result"]["status"], "cancelling", "the budget was not given back: {cancel} / {again}");
    assert!(again.get("result").is_some(), "{again}");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_60_mb_request_of_tiny_values_the_connection_still_answers() {
    let mut conn = connect(ServeLimits::from_env());
    conn.initialize().await;
    let values = "1,".repeat(30_000_000);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"attempt/run","params":{{"unknown":[{values}1],"attemptId":""}}}}"#
    );
    assert!(line.len() > 60_000_000 && line.len() < limits::ATTEMPT_RUN_MAX_BYTES);
    let answer = conn.ask(&line).await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(answer.get("error").is_some(), "an attempt without its fields is refused: {answer}");
    let list = conn.ask(&request(3, "harness/list", &json!({}))).await;
    assert!(list["result"]["harnesses"].is_array(), "{list}");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_with_a_malformed_error_fails_closed_at_once_and_is_refused_with_a_null_id() {
    let malformed = [r#""error":null"#, r#""error":{"code":"x","message":5}"#, r#""error":{"code":-32603}"#];
    for (n, member) in malformed.iter().enumerate() {
        let mut conn = connect(ServeLimits::from_env());
        let answer = conn.ask(&initialize_with_approvals(1)).await;
        assert!(answer.get("result").is_some(), "{answer}");
        conn.write_line(&request(2, "attempt/run", &run_params(&format!("a-{n}"), "go"))).await;
        let (mut asked, mut refused, mut result) = (false, false, None);
        // Without the fix the approval waits for its 600 s deadline: the read below gives up first.
        while result.is_none() {
            let line = tokio::time::timeout(Duration::from_secs(60), conn.from_bridge.next_line())
                .await
                .unwrap_or_else(|_| panic!("{member}: the attempt still waits"))
                .unwrap()
                .expect("the bridge is still there");
            let value: Value = serde_json::from_str(&line).unwrap();
            match value["method"].as_str() {
                Some("host/approval/decide") => {
                    asked = true;
                    conn.write_line(&format!(r#"{{"jsonrpc":"2.0","id":{},{member}}}"#, value["id"])).await;
                }
                Some(method) if method.starts_with("host/") => {
                    conn.write_line(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, value["id"])).await;
                }
                Some(_) => {}
                None if value["id"].is_null() => {
                    assert_eq!(code(&value), -32600, "{member}: {value}");
                    refused = true;
                }
                None => result = Some(value),
            }
        }
        assert!(asked, "{member}: the demo's turn asks for an approval");
        assert!(refused, "{member}: the malformed answer is refused with `id: null`");
        let result = result.unwrap();
        assert_eq!(result["id"], 2, "{result}");
        assert!(result.get("result").is_some(), "{member}: the attempt ended with its result: {result}");
        conn.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_with_a_list_past_its_count_is_invalid_params_naming_the_member() {
    let mut conn = connect(ServeLimits::from_env());
    conn.initialize().await;
    let mut params = run_params("many", "p");
    params["toolsAllow"] = json!(vec![""; limits::MAX_TOOL_NAMES + 1]);
    let answer = conn.ask(&request(2, "attempt/run", &params)).await;
    assert_eq!(code(&answer), -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("toolsAllow") && message.contains(&limits::MAX_TOOL_NAMES.to_string()), "{message}");
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_whose_host_tool_schema_cannot_be_read_is_invalid_params_naming_the_tool() {
    let mut conn = connect(ServeLimits::from_env());
    conn.initialize().await;
    let schema = format!("{}{}", "[".repeat(300), "]".repeat(300));
    let params = run_params("deep", "p").to_string();
    let params =
        format!(r#"{},"hostTools":[{{"name":"deep-tool","inputSchema":{schema}}}]}}"#, &params[..params.len() - 1]);
    let line = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"attempt/run","params":{params}}}"#);
    let answer = conn.ask(&line).await;
    assert_eq!(code(&answer), -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("deep-tool"), "{message}");
    conn.close().await;
}

#[test]
fn a_host_that_closes_its_input_right_after_writing_still_gets_every_answer() {
    // A host may pipeline its requests and close its side at once (`printf … | clawbridge serve`):
    // the answers already owed — the peer's own and those of unusable lines — are still written.
    // The real binary over real pipes: in process, the answers happen to win the race.
    use std::io::{Read, Write};
    let lines = [
        initialize(1),
        r#"{"jsonrpc":"2.0","id":false,"method":"session/reset","params":{}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":{"a":1},"method":"harness/list"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":null,"method":"session/reset","params":{"sessionKey":"k"}}"#.to_owned(),
        "[]".to_owned(),
        "null".to_owned(),
        "not json".to_owned(),
        r#"{"jsonrpc":"2.0","id":7,"method":"harness/list"}"#.to_owned(),
    ];
    for round in 0..5 {
        let state = tempfile::tempdir().unwrap();
        let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_clawbridge"))
            .arg("--state-dir")
            .arg(state.path())
            .arg("serve")
            .env_clear()
            .envs(clawbridge_fixtures::no_user_config())
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut input = serve.stdin.take().unwrap();
        input.write_all(format!("{}\n", lines.join("\n")).as_bytes()).unwrap();
        drop(input);
        let mut output = String::new();
        serve.stdout.take().unwrap().read_to_string(&mut output).unwrap();
        assert!(serve.wait().unwrap().success());
        let answers =
            output.lines().filter(|line| serde_json::from_str::<Value>(line).unwrap().get("method").is_none()).count();
        assert_eq!(answers, lines.len(), "round {round}: one answer per line written:\n{output}");
    }
}
