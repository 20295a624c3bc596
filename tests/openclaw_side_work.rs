//! Side work and the context engine with the real OpenClaw (2026.9.6), the real codex app-server
//! or the real Claude Code CLI, and the mock model, through one gateway on 127.0.0.1 and one
//! OpenClaw home per harness:
//!
//! - a context engine plugin (written here) that requires `assemble-before-prompt` and projects
//!   its context as `thread_bootstrap` with an epoch the test controls: its context reaches the
//!   model once per epoch (two turns of one epoch continue one native thread and carry it once; a
//!   new epoch starts a new thread that gets it again);
//! - a side question (`/btw`) is answered on an ephemeral copy of the session's thread (the model
//!   sees the conversation) and leaves the thread, the binding and the transcript as they were;
//! - an isolated completion (the dashboard's session title, `sessions.title.prepare`) runs on an
//!   ephemeral thread with no tools and leaves the user's thread and transcript untouched.
//!
//! Core also runs an isolated completion of its own after each turn (the progress narrator's
//! recap, a JSON prompt): those requests are told apart by their latest user text.

mod common;

use clawbridge_fixtures::mock_model::{LoggedRequest, RequestView};
use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Gateway, agent_turn, free_port, gateway_call, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

const SESSION: &str = "side-work-1";
/// The key OpenClaw gives the session `openclaw agent --session-id` names.
const SESSION_KEY: &str = "agent:main:explicit:side-work-1";
const TURN_ONE: &str = "First turn: remember the word heliotrope.";
const TURN_TWO: &str = "Second turn: and the word juniper.";
const TURN_THREE: &str = "Third turn: anything new?";
const TURN_FOUR: &str = "Fourth turn, a new context epoch.";
const BTW_QUESTION: &str = "which flower did I mention (btwq)?";
const BTW_ANSWER: &str = "You mentioned heliotrope.";
const TITLE_SOURCE: &str = "Plan the titlesrc garden beds for spring";
const TITLE: &str = "Garden bed planning";
/// The context engine's marker: `CTXMARK-<epoch>` is in the context it assembles.
fn marker(epoch: &str) -> String {
    format!("CTXMARK-{epoch}")
}

/// A context engine plugin whose agent runs require `assemble-before-prompt` and whose context
/// names the epoch in `epoch.txt` beside it (`thread_bootstrap`); each `assemble` is logged.
fn write_engine(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        json!({"name": "marker-engine", "version": "0.0.1", "type": "module", "main": "./index.js",
               "openclaw": {"extensions": ["./index.js"]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("openclaw.plugin.json"),
        json!({"id": "marker-engine", "name": "marker-engine", "description": "A context engine for the side-work test",
               "kind": "context-engine", "activation": {"onStartup": true},
               "configSchema": {"type": "object", "additionalProperties": false, "properties": {}}})
        .to_string(),
    )
    .unwrap();
    let epoch_file = dir.join("epoch.txt");
    let log_file = dir.join("assembled.jsonl");
    std::fs::write(
        dir.join("index.js"),
        format!(
            r#"import fs from "node:fs";
const EPOCH = {epoch_file:?};
const LOG = {log_file:?};
export default {{ id: "marker-engine", name: "marker-engine", description: "A context engine for the side-work test",
  register(api) {{
    api.registerContextEngine("marker-engine", () => ({{
      info: {{ id: "marker-engine", name: "Marker engine",
        transcriptSemantics: {{ currentTurnFence: "before-current-turn-entry-v1",
          turnAdvancementIdempotency: "atomic-idempotent-v1" }},
        hostRequirements: {{ "agent-run": {{ requiredCapabilities: ["assemble-before-prompt"],
          unsupportedMessage: "The marker engine must assemble the prompt." }} }} }},
      async ingest() {{ return {{ ingested: false }}; }},
      async assemble({{ sessionId, prompt }}) {{
        const epoch = fs.readFileSync(EPOCH, "utf8").trim();
        fs.appendFileSync(LOG, JSON.stringify({{ sessionId, epoch, prompt }}) + "\n");
        return {{ messages: [], estimatedTokens: 8,
          systemPromptAddition: "Engine context CTXMARK-" + epoch + ".",
          contextProjection: {{ mode: "thread_bootstrap", epoch }} }};
      }},
      async compact() {{ return {{ ok: true, compacted: false }}; }},
      async commitTurn() {{ return {{ status: "committed" }}; }},
    }}));
  }} }};
"#
        ),
    )
    .unwrap();
}

/// How often `needle` occurs in the request's body.
fn count(request: &LoggedRequest, needle: &str) -> usize {
    request.body.to_string().matches(needle).count()
}

/// What the mock saw of a model request.
fn view(request: &LoggedRequest) -> Option<RequestView> {
    request.api.map(|api| RequestView::from_body(api, &request.body))
}

/// The one model request (after the first `from`) whose latest user text contains `needle`.
fn request_with<'r>(
    requests: &'r [LoggedRequest],
    from: usize,
    needle: &str,
    describe: &dyn Fn() -> String,
) -> &'r LoggedRequest {
    let asks = |r: &&LoggedRequest| view(r).and_then(|v| v.last_user_text).is_some_and(|text| text.ends_with(needle));
    let found: Vec<&LoggedRequest> = requests[from..].iter().filter(asks).collect();
    assert_eq!(found.len(), 1, "one model request asks {needle:?}: {}", describe());
    found[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_side_work_leaves_no_trace_and_the_context_engine_reaches_the_model_once_per_epoch() {
    let Some(codex) = peer_or_skip("codex") else { return };
    side_work_and_context_engine(Harness::Codex(codex)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_side_work_leaves_no_trace_and_the_context_engine_reaches_the_model_once_per_epoch() {
    let Some(claude) = peer_or_skip("claude") else { return };
    side_work_and_context_engine(Harness::Claude(claude)).await;
}

/// The whole story on one harness: two turns of an epoch, a side question, a session title, a
/// third turn, a new epoch.
async fn side_work_and_context_engine(harness: Harness) {
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let codex = matches!(harness, Harness::Codex(_));

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            {"when": {"last_user_text_contains": "btwq"}, "reply": {"text": BTW_ANSWER}},
            {"when": {"last_user_text_contains": "titlesrc"}, "reply": {"text": TITLE}}
        ],
        "default": {"text": "Noted."}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, harness, &mock);
    let engine = sandbox.root().join("marker-engine");
    write_engine(&engine);
    std::fs::write(engine.join("epoch.txt"), "e1").unwrap();
    let mut config = run.config();
    config["plugins"]["load"]["paths"].as_array_mut().unwrap().push(json!(engine));
    config["plugins"]["entries"]["marker-engine"] = json!({"enabled": true});
    config["plugins"]["slots"] = json!({"contextEngine": "marker-engine"});
    // The session title runs on the utility model, a second model of the same harness (the
    // dashboard skips a utility model that is the session's own).
    let harness = run.harness.id();
    config["agents"]["defaults"]["utilityModel"] = json!("mock/mock-utility");
    config["agents"]["defaults"]["models"]["mock/mock-utility"] =
        json!({"alias": "Utility", "agentRuntime": {"id": harness}});
    let mut utility = config["models"]["providers"]["mock"]["models"][0].clone();
    utility["id"] = json!("mock-utility");
    utility["name"] = json!("Mock utility");
    config["models"]["providers"]["mock"]["models"].as_array_mut().unwrap().push(utility);
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&run, port).await;
    let describe = || {
        let asked: Vec<String> = mock
            .model_requests()
            .iter()
            .map(|r| {
                let v = view(r);
                let keys: Vec<&String> = r.body.as_object().map(|o| o.keys().collect()).unwrap_or_default();
                format!(
                    "  #{} asks {:?} tools {:?} keys {keys:?}",
                    r.seq,
                    v.as_ref().and_then(|v| v.last_user_text.clone()),
                    v.map(|v| if v.tools.len() < 20 { v.tools.join(",") } else { v.tools.len().to_string() })
                )
            })
            .collect();
        format!(
            "mock saw:\n{}\n{}\nassembled:\n{}\ngateway:\n{}",
            describe_requests(&mock.model_requests()),
            asked.join("\n"),
            std::fs::read_to_string(engine.join("assembled.jsonl")).unwrap_or_default(),
            gateway.output()
        )
    };

    // Epoch e1, two turns: one native thread, the engine's context in it once.
    let one = agent_turn(&run, SESSION, TURN_ONE).await;
    assert_eq!(reply_text(&one).trim(), "Noted.", "{one:#}\n{}", describe());
    let thread = run.bound_native_session();
    let two = agent_turn(&run, SESSION, TURN_TWO).await;
    assert_eq!(reply_text(&two).trim(), "Noted.", "{two:#}\n{}", describe());
    assert_eq!(run.bound_native_session(), thread, "the epoch holds: the thread is continued: {}", describe());
    let requests = mock.model_requests();
    let first = request_with(&requests, 0, TURN_ONE, &describe);
    assert_eq!(count(first, &marker("e1")), 1, "the epoch's first turn gets the context: {}", first.body);
    let second = request_with(&requests, 0, TURN_TWO, &describe);
    assert!(second.body.to_string().contains(TURN_ONE), "the second turn continues the thread: {}", second.body);
    assert_eq!(count(second, &marker("e1")), 1, "the context is not injected again in its epoch: {}", second.body);

    // A side question: answered on a copy of the thread, nothing of it kept.
    let transcript = run.messages(SESSION).await;
    let before = mock.model_requests().len();
    // `/btw` is a chat command: sent the way a chat client sends it, answered as a side result.
    let send = json!({"sessionKey": SESSION_KEY, "message": format!("/btw {BTW_QUESTION}"), "idempotencyKey": "btw-1"});
    let btw = gateway_call(&run, port, "chat.send", &send, Some("chat.side_result")).await;
    assert_eq!(btw["event"]["kind"], json!("btw"), "a side result: {btw}\n{}", describe());
    assert!(
        btw["event"]["text"].as_str().unwrap_or("").contains(BTW_ANSWER),
        "the side question is answered: {btw}\n{}",
        describe()
    );
    let requests = mock.model_requests();
    let side = request_with(&requests, before, BTW_QUESTION, &describe);
    assert!(
        side.body.to_string().contains(TURN_ONE) && side.body.to_string().contains(TURN_TWO),
        "the side question sees the conversation: {}",
        side.body
    );
    assert_eq!(run.bound_native_session(), thread, "the side question does not replace the binding");
    assert_eq!(run.messages(SESSION).await, transcript, "the side question writes nothing to the transcript");

    // An isolated completion: the dashboard's title for a new chat's first message.
    let before = mock.model_requests().len();
    let title =
        gateway_call(&run, port, "sessions.title.prepare", &json!({"agentId": "main", "message": TITLE_SOURCE}), None)
            .await;
    assert_eq!(
        title["result"]["title"],
        json!(TITLE),
        "the title comes from the isolated completion: {title}\n{}",
        describe()
    );
    let requests = mock.model_requests();
    let titled = request_with(&requests, before, TITLE_SOURCE, &describe);
    let body = titled.body.to_string();
    assert!(!body.contains(TURN_ONE), "the completion knows nothing of the user's session: {body}");
    assert!(!body.contains("CTXMARK"), "nor of its context engine: {body}");
    // Every tool is taken away but Codex 0.169's `request_user_input`, which no setting removes;
    // with nobody to ask, Codex answers it itself as unavailable (docs/peers/codex.md#side-work).
    let tools = view(titled).map(|v| v.tools).unwrap_or_default();
    let allowed = |t: &String| codex && t == "request_user_input";
    assert!(tools.iter().all(allowed), "the completion offers the model no tools: {tools:?}");
    assert_eq!(run.bound_native_session(), thread);
    assert_eq!(run.messages(SESSION).await, transcript, "the completion writes nothing to the transcript");

    // The next user turn: the same thread, no trace of the side work, the context still once.
    let three = agent_turn(&run, SESSION, TURN_THREE).await;
    assert_eq!(reply_text(&three).trim(), "Noted.", "{three:#}\n{}", describe());
    let requests = mock.model_requests();
    let third = request_with(&requests, 0, TURN_THREE, &describe);
    let body = third.body.to_string();
    assert!(body.contains(TURN_TWO), "the user's thread continues: {body}");
    assert!(!body.contains("btwq") && !body.contains(BTW_ANSWER), "no trace of the side question: {body}");
    assert!(!body.contains("titlesrc") && !body.contains(TITLE), "no trace of the title: {body}");
    assert_eq!(count(third, &marker("e1")), 1, "{body}");
    assert_eq!(run.bound_native_session(), thread);

    // A new epoch: a new thread, bootstrapped with the new context.
    std::fs::write(engine.join("epoch.txt"), "e2").unwrap();
    let four = agent_turn(&run, SESSION, TURN_FOUR).await;
    assert_eq!(reply_text(&four).trim(), "Noted.", "{four:#}\n{}", describe());
    let requests = mock.model_requests();
    let fourth = request_with(&requests, 0, TURN_FOUR, &describe);
    assert_eq!(count(fourth, &marker("e2")), 1, "the new epoch gets its context: {}", fourth.body);
    assert_eq!(count(fourth, &marker("e1")), 0, "on a new thread, not the old epoch's: {}", fourth.body);
    assert_ne!(run.bound_native_session(), thread, "a new epoch starts a new native thread");
    let assembled: Vec<Value> = std::fs::read_to_string(engine.join("assembled.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert!(assembled.len() >= 4, "the engine assembled before each user turn: {assembled:?}");
    gateway.stop().await;
}
