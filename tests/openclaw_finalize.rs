//! `before_agent_finalize` with the real OpenClaw (2026.9.6) and the real codex app-server: a second
//! plugin, loaded beside clawbridge, asks for a revision of the first answer. OpenClaw's run loop
//! must then run the revision as a new attempt (its revision prompt), the bridge must run it as a
//! follow-up turn on the same Codex thread, and the revised answer is the one OpenClaw delivers.
//! One `openclaw agent` turn through a gateway on 127.0.0.1: `openclaw agent exec` initialises no
//! global hook runner for a plugin harness's hooks (docs/peers/openclaw.md#before_agent_finalize).

mod common;

use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{Gateway, agent_turn, free_port, reply_text, with_gateway};
use clawbridge_fixtures::peers::{Sandbox, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::json;

const PROMPT: &str = "Summarise the plan.";
const FIRST_ANSWER: &str = "Draft answer.";
const REVISED_ANSWER: &str = "Revised answer with the test results.";
/// What the reviewing plugin asks for; OpenClaw puts it into the revision prompt.
const REVISION: &str = "Mention the test results.";
/// The start of OpenClaw's revision prompt (its run loop words it).
const REVISION_PROMPT: &str = "Before accepting the previous final answer";

/// A plugin whose `before_agent_finalize` hook asks once for a revision of the draft.
fn write_reviewer(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("package.json"),
        json!({"name": "finalize-reviewer", "version": "0.0.1", "type": "module", "main": "./index.js",
               "openclaw": {"extensions": ["./index.js"]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("openclaw.plugin.json"),
        json!({"id": "finalize-reviewer", "name": "finalize-reviewer", "description": "Asks for one revision",
               "activation": {"onStartup": true},
               "configSchema": {"type": "object", "additionalProperties": false, "properties": {}}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("index.js"),
        format!(
            "export default {{ id: 'finalize-reviewer', name: 'finalize-reviewer', description: 'Asks for one revision',\n\
             register(api) {{ api.on('before_agent_finalize', (event) =>\n\
               String(event.lastAssistantMessage ?? '').includes({FIRST_ANSWER:?}) ? {{ action: 'revise', reason: {REVISION:?} }} : {{ action: 'continue' }}); }} }};\n",
        ),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_revision_before_agent_finalize_asks_for_runs_as_a_follow_up_turn_on_the_same_thread() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [{"when": {"last_user_text_contains": REVISION_PROMPT}, "reply": {"text": REVISED_ANSWER}}],
        "default": {"text": FIRST_ANSWER}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let reviewer = sandbox.root().join("finalize-reviewer");
    write_reviewer(&reviewer);
    let mut config = run.config();
    config["plugins"]["load"]["paths"].as_array_mut().unwrap().push(json!(reviewer));
    config["plugins"]["entries"]["finalize-reviewer"] =
        json!({"enabled": true, "hooks": {"allowConversationAccess": true}});
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&run, port).await;

    let exec = agent_turn(&run, "finalize-1", PROMPT).await;
    let requests = mock.model_requests();
    let describe = || {
        format!(
            "agent: {exec:#}\nmock saw:\n{}\ngateway:\n{}",
            clawbridge_fixtures::peers::describe_requests(&requests),
            gateway.output()
        )
    };
    assert_eq!(reply_text(&exec).trim(), REVISED_ANSWER, "the revised answer is delivered: {}", describe());
    assert_eq!(requests.len(), 2, "the draft, then the revision: {}", describe());
    let revision = requests[1].body.to_string();
    assert!(revision.contains(REVISION_PROMPT) && revision.contains(REVISION), "{}", describe());
    // A follow-up turn on the same native thread: the model sees the draft in its context.
    assert!(revision.contains(FIRST_ANSWER), "the revision turn continues the thread: {revision}");
    assert!(!requests[0].body.to_string().contains(REVISION_PROMPT));
    gateway.stop().await;
}
