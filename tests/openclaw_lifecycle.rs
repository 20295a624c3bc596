//! Session lifecycle through a real OpenClaw gateway (openclaw 2026.9.6 on Node 24, issue #13
//! points 1 and 2): the gateway runs the plugin and its one shared bridge, the real codex
//! app-server 0.169.0 runs every turn against the scripted mock model, and an operator client calls
//! the gateway's own session RPCs (`sessions.reset`, `sessions.delete`), which reach the harness as
//! core's `reset(params)` and `withSessionDeletion`.
//!
//! One gateway, one session key, in order: two turns (the second resumes the Codex thread: the
//! model sees turn 1); `sessions.reset` (the binding is dropped, the next turn's model request
//! lacks the earlier turns and runs on a fresh thread); a `sessions.reset` sent while a slow turn
//! runs (the attempt is cancelled and ends, then the binding it stored is dropped); `sessions.delete`
//! (the binding file is gone, the deletion reached the bridge after core's commit and the Codex
//! thread is archived); then, on a second key, `sessions.rewind` (withSessionContextReset: the cut
//! session's binding is invalidated, and the next turn's model request lacks the rewound-away turn).

mod common;

use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Gateway, agent_turn_on_key, free_port, gateway_call, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

const KEY: &str = "agent:main:life-one";
const HELLO: &str = "Hello from the mock.";
/// What turn 1 says, and what only a native thread that still holds turn 1 can show the model.
const REMEMBER: &str = "Remember the word LIFE-ALPHA-31.";
const WORD: &str = "LIFE-ALPHA-31";
const SLOW: &str = "Answer slowly, please.";
const SLOW_ANSWER: &str = "A slow answer from the mock.";
const REWIND_KEY: &str = "agent:main:life-two";
/// The turn a rewind removes, and the word only a thread that still holds it can show the model.
const CUT: &str = "Remember the word LIFE-CUT-9.";
const CUT_WORD: &str = "LIFE-CUT-9";

fn scenario() -> Value {
    // The slow answer takes about half a minute (3 s before each of its events): the reset that
    // interrupts it starts an `openclaw gateway call` process once the request is seen, which took
    // longer than a 700 ms spacing's whole answer on a loaded CI run. The reset ends it early.
    json!({"rules": [
        {"when": {"last_user_text_contains": "slowly"}, "reply": {"text": SLOW_ANSWER, "delay_ms": 3000}}
    ], "default": {"text": HELLO}})
}

/// The bridge's binding files (one per bound OpenClaw session id).
fn binding_files(home: &OpenClawHome<'_>) -> usize {
    std::fs::read_dir(home.bridge_state.join("serve/bindings"))
        .map(|dir| dir.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "json")).count())
        .unwrap_or(0)
}

/// The file names under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            names.extend(walk(&path));
        } else {
            names.push(path.display().to_string());
        }
    }
    names
}

/// What the bridge logged so far (its log file under its state dir).
fn bridge_log(home: &OpenClawHome<'_>) -> String {
    std::fs::read_to_string(home.bridge_state.join("logs/clawbridge.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_session_reset_delete_and_rewind_through_the_gateway_reach_the_native_binding_in_order() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&scenario()).await.unwrap();
    let home = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let port = free_port();
    home.write_config(&with_gateway(home.config(), port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&home, port).await;
    let describe = |what: &Value| {
        format!(
            "{what:#}\nmock saw:\n{}\nbridge log:\n{}\ngateway:\n{}",
            describe_requests(&mock.requests()),
            bridge_log(&home),
            gateway.output()
        )
    };
    let last_input = || mock.model_requests().last().map(|r| r.body["input"].to_string()).unwrap_or_default();

    // Two turns on the key: the second resumes the Codex thread, so its model request carries turn 1.
    let first = agent_turn_on_key(&home, KEY, REMEMBER).await;
    assert_eq!(reply_text(&first), HELLO, "{}", describe(&first));
    let second = agent_turn_on_key(&home, KEY, "Second turn.").await;
    assert_eq!(reply_text(&second), HELLO, "{}", describe(&second));
    assert!(last_input().contains(WORD), "the thread was resumed: {}", describe(&second));
    assert_eq!(binding_files(&home), 1, "{}", describe(&second));
    let thread = home.bound_native_session();

    // `sessions.reset`: core calls reset(reason "reset"); the binding is dropped, the next turn
    // runs on a fresh Codex thread and the model no longer sees the earlier turns.
    let reset = gateway_call(&home, port, "sessions.reset", &json!({"key": KEY, "reason": "reset"}), None).await;
    assert!(reset.get("result").is_some(), "{}", describe(&reset));
    assert_eq!(binding_files(&home), 0, "the reset dropped the binding: {}", describe(&reset));
    assert!(bridge_log(&home).contains("reason=Reset action=Dropped"), "{}", describe(&reset));
    let third = agent_turn_on_key(&home, KEY, "Third turn, after the reset.").await;
    assert_eq!(reply_text(&third), HELLO, "{}", describe(&third));
    let input = last_input();
    assert!(input.contains("Third turn") && !input.contains(WORD), "a fresh thread: {input}\n{}", describe(&third));
    assert_ne!(home.bound_native_session(), thread, "a new Codex thread: {}", describe(&third));

    // A reset sent while a (slow) turn runs on the session. Core's `sessions.reset` aborts the
    // session's active run and waits for it before it calls reset() (the CLI's turn ends in an
    // error, as OpenClaw shows an interrupted run): the bridge gets the cancel, the attempt ends
    // and stores its binding, then the reset drops it. (A reset that does reach the bridge while
    // the attempt runs waits for it: tests/serve.rs.)
    let requests_before = mock.model_requests().len();
    let slow_args = ["agent", "--session-key", KEY, "-m", SLOW, "--json", "--timeout", "120"];
    let (slow, reset) = tokio::join!(home.output(&slow_args), async {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while mock.model_requests().len() == requests_before {
            assert!(std::time::Instant::now() < deadline, "the slow turn never reached the model");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        gateway_call(&home, port, "sessions.reset", &json!({"key": KEY, "reason": "new"}), None).await
    });
    let slow = json!({"status": slow.0.to_string(), "stdout": slow.1, "stderr": slow.2});
    assert!(reset.get("result").is_some(), "{}\n{slow:#}", describe(&reset));
    assert!(!slow["stdout"].as_str().unwrap_or_default().contains(SLOW_ANSWER), "the run was interrupted: {slow:#}");
    let log = bridge_log(&home);
    let cancelled = log.rfind("cancelling attempt=").unwrap_or_else(|| panic!("no cancel: {}", describe(&slow)));
    assert!(
        log[cancelled..].contains("reason=Reset action=Dropped"),
        "the reset dropped the binding the interrupted attempt stored, after it: {}",
        describe(&reset)
    );
    assert_eq!(binding_files(&home), 0, "{}", describe(&slow));

    // `sessions.delete`: withSessionDeletion tells the bridge after core's commit; no binding is left.
    let fourth = agent_turn_on_key(&home, KEY, "Fourth turn.").await;
    assert_eq!(reply_text(&fourth), HELLO, "{}", describe(&fourth));
    assert_eq!(binding_files(&home), 1, "{}", describe(&fourth));
    let doomed = home.bound_native_session();
    let rollouts = |dir: &str| -> Vec<String> {
        walk(&sandbox.codex_home().join(dir)).into_iter().filter(|name| name.contains(&doomed)).collect()
    };
    assert_eq!(rollouts("sessions").len(), 1, "the thread's rollout is live: {:?}", walk(&sandbox.codex_home()));
    let deleted = gateway_call(&home, port, "sessions.delete", &json!({"key": KEY}), None).await;
    assert!(deleted.get("result").is_some(), "{}", describe(&deleted));
    assert_eq!(binding_files(&home), 0, "the binding file is gone: {}", describe(&deleted));
    let log = bridge_log(&home);
    assert!(
        log.contains("session deleted: binding forgotten"),
        "withSessionDeletion reached the bridge: {}",
        describe(&deleted)
    );
    assert!(log.contains(&format!("native={doomed} archived=true")), "{}", describe(&deleted));
    assert!(rollouts("sessions").is_empty(), "Codex archived the thread: {:?}", walk(&sandbox.codex_home()));
    assert_eq!(rollouts("archived_sessions").len(), 1, "{:?}", walk(&sandbox.codex_home()));

    // `sessions.rewind` (a same-key history cut): withSessionContextReset reaches the bridge after
    // core's commit; the cut session's binding is invalidated and the next turn does not resume the
    // stale thread (the model does not see the rewound-away turn).
    let keep = agent_turn_on_key(&home, REWIND_KEY, "Keep the word LIFE-KEEP-7.").await;
    assert_eq!(reply_text(&keep), HELLO, "{}", describe(&keep));
    let cut = agent_turn_on_key(&home, REWIND_KEY, CUT).await;
    assert_eq!(reply_text(&cut), HELLO, "{}", describe(&cut));
    let cut_session = session_id_of(&cut);
    assert_eq!(binding_files(&home), 1, "{}", describe(&cut));
    let entries = home.transcript(&cut_session).await;
    let cut_entry = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user" && e.to_string().contains(CUT_WORD))
        .and_then(|e| e["id"].as_str())
        .unwrap_or_else(|| panic!("no user entry for the cut turn: {entries:#?}"))
        .to_string();
    let rewound =
        gateway_call(&home, port, "sessions.rewind", &json!({"sessionKey": REWIND_KEY, "entryId": cut_entry}), None)
            .await;
    assert!(rewound.get("result").is_some(), "{}", describe(&rewound));
    let log = bridge_log(&home);
    assert!(
        log.lines().any(|l| l.contains("history was cut") && l.contains(&format!("invalidated=[\"{cut_session}\"]"))),
        "withSessionContextReset invalidated the cut session's binding: {}",
        describe(&rewound)
    );
    assert_eq!(binding_files(&home), 0, "{}", describe(&rewound));
    let after = agent_turn_on_key(&home, REWIND_KEY, "After the rewind.").await;
    assert_eq!(reply_text(&after), HELLO, "{}", describe(&after));
    let input = last_input();
    assert!(
        input.contains("After the rewind") && !input.contains(CUT_WORD),
        "the stale thread was not resumed: {input}"
    );
    assert_ne!(session_id_of(&after), cut_session, "the cut moved the key to a new session id");

    gateway.stop().await;
    home.wait_until_gone().await;
}

/// The OpenClaw session id a gateway turn ran on.
fn session_id_of(result: &Value) -> String {
    let meta = &result["result"]["meta"]["agentMeta"];
    meta["sessionId"].as_str().unwrap_or_else(|| panic!("no session id in {result:#}")).to_string()
}
