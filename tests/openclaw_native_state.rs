//! The native side's own state through the real OpenClaw (openclaw 2026.9.6 on Node 24), the real
//! codex app-server 0.169.0 and the scripted mock model (issue #13, points 5 and 6): OpenClaw's
//! `/compact` runs Codex's own compactor on the session's bound thread (the mock model gets the
//! compaction request, the next turn resumes the compacted thread), and OpenClaw's model list shows
//! the models Codex's `model/list` names. One OpenClaw home and one Codex session serve every
//! assertion, to keep the CLI start-ups (15-18 s each) few.

use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{Gateway, free_port, with_gateway};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use serde_json::json;

const FIRST_PROMPT: &str = "Remember the word kumquat.";
const FIRST_ANSWER: &str = "I will remember kumquat.";
const SUMMARY: &str = "SUMMARY-OF-THE-KUMQUAT-CONVERSATION";
const LAST_PROMPT: &str = "Which word did I ask you to remember?";
const LAST_ANSWER: &str = "You asked me to remember kumquat.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_compacts_natively_on_compact_and_the_model_list_shows_codex_models() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let Some(node) = peer_or_skip("node") else { return };
    let Some(openclaw) = peer_or_skip("openclaw") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            {"when": {"api": "responses", "last_user_text_contains": "remember the word"},
             "reply": {"text": FIRST_ANSWER}},
            {"when": {"api": "responses", "last_user_text_contains": "which word"},
             "reply": {"text": LAST_ANSWER}}
        ],
        // Codex's compaction request (a summarization prompt over the thread) gets this.
        "default": {"text": SUMMARY}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = OpenClawHome::new(
        &node,
        &openclaw,
        std::path::Path::new(env!("CARGO_BIN_EXE_clawbridge")),
        &sandbox,
        Harness::Codex(codex),
        &mock,
    );
    let port = free_port();
    run.write_config(&with_gateway(run.config(), port));
    let _temp_root = TempRootGuard::snapshot();

    // Turn 1 binds the session to a Codex thread.
    let exec = run.exec(FIRST_PROMPT, &[]).await;
    assert_eq!(exec["ok"], true, "{exec:#}\n{}", describe_requests(&mock.requests()));
    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();
    let thread = run.bound_native_session();
    run.wait_until_gone().await;
    let before = mock.model_requests().len();

    eprintln!("exec: {exec:#}");
    // `openclaw sessions compact` (the gateway's `sessions.compact`, what `/compact` runs; the
    // CLI's `--message` refuses slash commands): core calls the harness's compact(), the bridge
    // runs Codex's `thread/compact/start` on the bound thread.
    let gateway = Gateway::start(&run, port).await;
    let key = format!("agent:main:explicit:{session_id}");
    let (status, stdout, stderr) = run.output(&["sessions", "compact", &key, "--json"]).await;
    eprintln!("compact ({status}):\n{stdout}\n{stderr}");
    gateway.stop().await;
    let requests = mock.model_requests();
    let compaction: Vec<_> = requests[before..].iter().collect();
    eprintln!("{}", describe_requests(&mock.requests()));
    assert_eq!(compaction.len(), 1, "one native compaction request: {}", describe_requests(&requests));
    let body = compaction[0].body.to_string();
    assert!(body.contains(FIRST_PROMPT) && body.contains(FIRST_ANSWER), "it summarizes the thread: {body}");
    run.wait_until_gone().await;

    let transcript = run.transcript(&session_id).await;
    eprintln!("transcript: {}", serde_json::to_string_pretty(&transcript).unwrap());

    // The next turn resumes the same, compacted thread: the model sees the summary.
    let last = run.next_turn(&session_id, LAST_PROMPT).await;
    assert_eq!(last["payloads"][0]["text"], LAST_ANSWER, "{last:#}");
    assert_eq!(run.bound_native_session(), thread, "the compacted thread is still the session's");
    let requests = mock.model_requests();
    let input = requests.last().expect("the last turn's request").body["input"].to_string();
    assert!(input.contains(SUMMARY), "the model sees the compacted history: {input}");
    run.wait_until_gone().await;

    // The model list: OpenClaw asks the harness's loadModelCatalog, which lists Codex's models.
    let (status, stdout, stderr) = run.output(&["models", "list", "--json"]).await;
    eprintln!("models list ({status}):\n{stdout}\n{stderr}");
    run.wait_until_gone().await;
}
