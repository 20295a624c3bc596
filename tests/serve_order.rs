//! Requests of one connection take effect in the order they were written, even when written
//! together: nothing overtakes `initialize`, and a `cancel` never overtakes its `run`. Driven in
//! process (`serve_on` over a pipe) with the demo as the only backend, so each round is quick.

use std::collections::HashMap;
use std::time::Duration;

use clawbridge::serve::ServeLimits;
use common::raw_host::Connection;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

mod common;

fn connect() -> Connection {
    common::raw_host::connect(ServeLimits::from_env())
}

impl Connection {
    /// Reads until the answers to every id in `ids` arrived (notifications are skipped).
    async fn answers(&mut self, ids: &[i64]) -> HashMap<i64, Value> {
        let mut answers = HashMap::new();
        while answers.len() < ids.len() {
            let line = self.next_line().await;
            let value: Value = serde_json::from_str(&line).unwrap();
            if let Some(id) = value.get("id").and_then(Value::as_i64).filter(|id| ids.contains(id)) {
                answers.insert(id, value);
            }
        }
        answers
    }
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn initialize(id: i64) -> Value {
    request(
        id,
        "initialize",
        json!({"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION, "host": {"name": "order-test", "version": "0"},
               "capabilities": {"hostTools": false, "approvals": false, "toolTerminals": false,
                                "transcriptAppend": false, "userInput": false}}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_written_with_initialize_is_served_after_it_every_time() {
    for round in 0..200 {
        let mut conn = connect();
        conn.write_together(&[initialize(1), request(2, "harness/list", json!({}))]).await;
        let answers = conn.answers(&[1, 2]).await;
        assert!(answers[&1].get("result").is_some(), "round {round}: {}", answers[&1]);
        let list = &answers[&2];
        assert!(list["result"]["harnesses"].is_array(), "round {round}: harness/list overtook initialize: {list}");
        conn.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_written_with_its_run_always_finds_the_attempt() {
    let mut conn = connect();
    conn.write_together(&[initialize(1)]).await;
    conn.answers(&[1]).await;
    let workspace = std::env::temp_dir().display().to_string();
    for round in 0..40i64 {
        let (run_id, cancel_id) = (100 + 2 * round, 101 + 2 * round);
        let attempt = format!("a-{round}");
        let run = request(
            run_id,
            "attempt/run",
            json!({"attemptId": attempt, "harnessId": "clawbridge-demo", "sessionId": format!("s-{round}"),
                   "prompt": "Run echo hi", "workspaceDir": workspace}),
        );
        let cancel = request(cancel_id, "attempt/cancel", json!({"attemptId": attempt}));
        conn.write_together(&[run, cancel]).await;
        let answers = conn.answers(&[run_id, cancel_id]).await;
        let status = &answers[&cancel_id]["result"]["status"];
        assert_eq!(status, "cancelling", "round {round}: the cancel overtook its run: {}", answers[&cancel_id]);
        let kind = &answers[&run_id]["result"]["terminal"]["kind"];
        assert_eq!(kind, "aborted", "round {round}: the cancelled attempt ran on: {}", answers[&run_id]);
    }
    conn.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_unusable_line_of_a_burst_is_answered() {
    let mut conn = connect();
    let mut burst = "not json {\n".repeat(5000);
    burst.push_str(&initialize(1).to_string());
    burst.push('\n');
    let writer = {
        let mut to_bridge = conn.to_bridge;
        tokio::spawn(async move {
            to_bridge.write_all(burst.as_bytes()).await.unwrap();
            to_bridge
        })
    };
    // The error answers and the bridge's own answers reach stdout by two queues, so their relative
    // order is not promised; their count is.
    let (mut parse_errors, mut initialized) = (0, false);
    while parse_errors < 5000 || !initialized {
        let line = tokio::time::timeout(Duration::from_secs(30), conn.from_bridge.next_line())
            .await
            .unwrap_or_else(|_| panic!("answers stopped after {parse_errors} parse errors"))
            .unwrap()
            .expect("the bridge is still there");
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["id"] == 1 {
            assert!(value.get("result").is_some(), "{value}");
            initialized = true;
        } else {
            assert_eq!(value["error"]["code"], -32700, "{value}");
            parse_errors += 1;
        }
    }
    conn.to_bridge = writer.await.unwrap();
    conn.close().await;
}
