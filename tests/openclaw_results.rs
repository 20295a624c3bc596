//! exploratory
use clawbridge_fixtures::peers::codex::command_mock;
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explore_codex() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let Some(node) = peer_or_skip("node") else { return };
    let Some(openclaw) = peer_or_skip("openclaw") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mut scenario = command_mock(false);
    scenario["rules"].as_array_mut().unwrap().insert(0, json!({"when": {"last_user_text_contains": "fail"}, "reply": {"error": {"status": 500, "message": "scripted outage"}}}));
    let mock = start_mock(&scenario).await.unwrap();
    let run = OpenClawHome::new(&node, &openclaw, std::path::Path::new(env!("CARGO_BIN_EXE_clawbridge")), &sandbox, Harness::Codex(codex), &mock);
    run.write_config(&run.config());
    let _t = TempRootGuard::snapshot();
    let (status, json, stderr) = run.exec_output("Please run the live test command.", &[]).await;
    eprintln!("STATUS {status}\nJSON {json:#?}\nSTDERR {stderr}");
    let sid = json.as_ref().unwrap()["sessionId"].as_str().unwrap().to_string();
    eprintln!("ROWS {:#?}", run.messages(&sid).await);
    let (status, json, stderr) = run.exec_output("Please fail now.", &[]).await;
    eprintln!("STATUS {status}\nJSON {json:#?}\nSTDERR {stderr}");
    run.wait_until_gone().await;
}
