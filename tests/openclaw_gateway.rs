//! People through a real OpenClaw gateway (openclaw 2026.9.6 on Node 24, issue #12 point 5): a
//! gateway on 127.0.0.1 (ephemeral port, token auth) runs the plugin and its one shared bridge;
//! a person answers at the gateway (an approval client, as the Control UI or the TUI would be).
//!
//! The regression: the bridge is started by the first client's turn, and the plugin used to run
//! every later `host/*` request in that first turn's async context, so once that client had
//! disconnected every approval was denied with "Gateway client authority closed before
//! dispatching plugin.approval.request". Here client 1 runs a turn and disconnects; client 2's
//! native command needs an approval, answered through the gateway, and runs; client 3's turn calls
//! OpenClaw's `ask_user`, whose question is answered through the gateway; client 4's turn has the
//! native agent ask its own question (Codex `request_user_input`, Claude Code `AskUserQuestion`),
//! answered through the gateway as well.

mod common;

use clawbridge_fixtures::peers::openclaw::{Harness, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Approver, Gateway, agent_turn, free_port, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, claude, codex, describe_requests, peer_or_skip, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

const HELLO: &str = "Hello from the mock.";
/// The answer the person gives to the `ask_user` question.
const ANSWER: &str = "teal";
/// The native agent's own question, and the answer the person gives to it.
const QUESTION: &str = "Which size should it be?";
const SIZE: &str = "large";
/// The command the Claude mock runs: `live-42` (`claude::MARKER`) is not in its text.
const CLAUDE_COMMAND: &str = "touch out.txt && printf 'live-%s\\n' 42";

/// The mock for `harness`: a plain answer, a shell command the harness asks approval for, or an
/// `ask_user` call (`ask_user_tool`: the name the harness offers OpenClaw's tool under), then a
/// reply quoting the tool's result.
fn scenario(mut scenario: Value, ask_user_tool: &str) -> Value {
    let rules = scenario["rules"].as_array_mut().expect("rules");
    rules.push(json!({"when": {"last_user_text_contains": "ask me", "tool_offered": ask_user_tool},
        "reply": {"tool_call": {"name": ask_user_tool, "arguments": {"questions": [
            {"id": "colour", "header": "Colour", "question": "Which colour should it be?",
             "options": [{"label": "blue"}, {"label": "teal"}]}], "timeoutSeconds": 120}}}}));
    scenario["default"] = json!({"text": HELLO});
    scenario
}

/// Client 1 runs a plain turn and leaves; client 2's command is approved at the gateway and runs
/// (`command` is what the person is shown, `marker` what only the running command prints);
/// client 3's `ask_user` question is answered at the gateway.
///
/// With `native_question`, client 4's turn has the native agent ask its own question, which goes
/// to the person through OpenClaw's gateway question helper.
async fn people_answer_through_the_gateway(
    harness: Harness,
    mock: Value,
    command: &str,
    marker: &str,
    native_question: bool,
) {
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&mock).await.unwrap();
    let home = peers.home(&sandbox, harness, &mock);
    let port = free_port();
    home.write_config(&with_gateway(home.config(), port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&home, port).await;
    let approver = Approver::start(&home, port, "allow-once", &json!({"colour": [ANSWER], QUESTION: [SIZE]})).await;
    let describe = |what: &Value| {
        format!(
            "{what:#}\napprover:\n{:#?}\nmock saw:\n{}\ngateway:\n{}",
            approver.lines(),
            describe_requests(&mock.requests()),
            gateway.output()
        )
    };

    // Client 1: a plain turn. It starts the shared bridge inside the gateway, then disconnects.
    let first = agent_turn(&home, "gateway-client-1", "Say hello.").await;
    assert_eq!(reply_text(&first), HELLO, "{}", describe(&first));

    // Client 2: the native command needs an approval; the person allows it at the gateway.
    let second = agent_turn(&home, "gateway-client-2", "Please run the live test command.").await;
    let text = reply_text(&second);
    assert!(text.contains(marker), "the approved command ran: {}", describe(&second));
    let approvals: Vec<Value> = approver.lines().into_iter().filter(|l| l.get("approval").is_some()).collect();
    assert_eq!(approvals.len(), 1, "one approval, asked through the gateway: {}", describe(&second));
    assert_eq!(approvals[0]["resolved"]["ok"], true, "{}", describe(&second));
    assert!(
        approvals[0]["description"].as_str().unwrap_or_default().contains(command),
        "the person saw the command: {}",
        describe(&second)
    );
    assert!(!gateway.output().contains("authority closed"), "{}", describe(&second));

    // Client 3: the model calls OpenClaw's ask_user; the person answers the question at the gateway.
    let third = agent_turn(&home, "gateway-client-3", "Please ask me which colour.").await;
    let questions: Vec<Value> = approver.lines().into_iter().filter(|l| l.get("question").is_some()).collect();
    assert_eq!(questions.len(), 1, "one question through the gateway: {}", describe(&third));
    assert_eq!(questions[0]["questions"][0]["question"], "Which colour should it be?", "{}", describe(&third));
    let text = reply_text(&third);
    assert!(text.contains(ANSWER), "the model got the person's answer: {}", describe(&third));

    if native_question {
        let fourth = agent_turn(&home, "gateway-client-4", "Please let me choose the size.").await;
        let questions: Vec<Value> = approver.lines().into_iter().filter(|l| l.get("question").is_some()).collect();
        assert_eq!(questions.len(), 2, "the native question went through the gateway: {}", describe(&fourth));
        assert_eq!(questions[1]["questions"][0]["question"], QUESTION, "{}", describe(&fourth));
        let text = reply_text(&fourth);
        assert!(text.contains(SIZE), "the native agent got the person's answer: {}", describe(&fourth));
    }

    approver.stop().await;
    gateway.stop().await;
    home.wait_until_gone().await;
}

/// The mock calls the native agent's own question tool when asked to "let me choose": Codex's
/// `request_user_input` (answers keyed by question id) or Claude Code's `AskUserQuestion` (keyed
/// by the question's text).
fn native_question(mut scenario: Value, tool: &str) -> Value {
    let options =
        json!([{"label": "small", "description": "Fits anywhere."}, {"label": "large", "description": "Needs room."}]);
    let question = match tool {
        "request_user_input" => json!({"id": "size", "header": "Size", "question": QUESTION, "options": options}),
        _ => json!({"header": "Size", "question": QUESTION, "options": options, "multiSelect": false}),
    };
    let rules = scenario["rules"].as_array_mut().expect("rules");
    rules.push(json!({"when": {"last_user_text_contains": "let me choose", "tool_offered": tool},
        "reply": {"tool_call": {"name": tool, "arguments": {"questions": [question]}}}}));
    scenario
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_approvals_and_questions_are_answered_through_the_gateway_after_the_first_client_left() {
    let Some(codex_bin) = peer_or_skip("codex") else { return };
    let mock = native_question(scenario(codex::command_mock(true), "ask_user"), "request_user_input");
    people_answer_through_the_gateway(Harness::Codex(codex_bin), mock, "echo live-$((6*7))", codex::MARKER, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_approvals_and_questions_are_answered_through_the_gateway_after_the_first_client_left() {
    let Some(claude_bin) = peer_or_skip("claude") else { return };
    // Claude Code offers the host's tools as the SDK MCP server `openclaw`. OpenClaw byte-binds a
    // native command before it is approved (`prepareMutableFileApproval`) and denies one it cannot
    // bind, as it does the shared mock's `echo live-$((6*7)) | tee out.txt` (an arithmetic
    // expansion and a pipeline; docs/peers/openclaw.md#native-command-approvals). This command
    // binds, still writes a file (so Claude Code asks), and prints the marker only when it runs.
    let mut bash = claude::bash_mock();
    for rule in bash["rules"].as_array_mut().expect("rules") {
        if let Some(command) = rule["reply"].get_mut("run_command") {
            command["command"] = json!(CLAUDE_COMMAND);
        }
    }
    let mock = native_question(scenario(bash, "mcp__openclaw__ask_user"), "AskUserQuestion");
    people_answer_through_the_gateway(Harness::Claude(claude_bin), mock, CLAUDE_COMMAND, claude::MARKER, true).await;
}
