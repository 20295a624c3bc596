//! History stays one history (issue #13, points 2 and 3) with the real OpenClaw (2026.9.6), the real
//! peers and the mock model: the plugin sends the session's transcript with each attempt
//! (`attempt/run` `history`); when the session's native thread cannot be resumed (Claude's session
//! file is gone) or the transcript moved without it (a turn ran on OpenClaw's own runtime), the bridge
//! seeds a new native session with that history, the host is told why, and the binding is replaced.
//! What the model received is read from the mock's request log.

mod common;

use std::path::{Path, PathBuf};

use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard, text_of};
use clawbridge_fixtures::peers::openclaw_gateway::{Gateway, free_port, with_gateway};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

const FIRST_PROMPT: &str = "Remember the code word pelican-seven.";
const SECOND_PROMPT: &str = "What was the code word?";
const REWOUND_PROMPT: &str = "Replace the code word with albatross-nine.";
const EMBEDDED_PROMPT: &str = "Note the second code word walrus-three.";
const ANSWER: &str = "Noted from the mock.";
/// What the plugin logs when the bridge reports a projection (openclaw-plugin/src/history.js).
const NOTICE: &str = "a new native session was started with";

/// `openclaw agent --local` on `session_id`: its JSON result and everything it printed.
async fn turn(run: &OpenClawHome<'_>, session_id: &str, prompt: &str) -> (Value, String) {
    let args = ["agent", "--local", "--agent", "main", "--session-id", session_id, "-m", prompt, "--json"];
    let (status, stdout, stderr) = run.output(&args).await;
    let parsed = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout);
    match parsed {
        Some(value) if status.success() => (value, format!("{stdout}\n{stderr}")),
        _ => panic!("openclaw agent failed ({status}):\nstdout:\n{stdout}\nstderr:\n{stderr}"),
    }
}

/// What OpenClaw printed and logged (its log file holds the plugin's warnings too).
fn told(run: &OpenClawHome<'_>, printed: &str) -> String {
    let log = std::fs::read_to_string(run.sandbox.root().join("openclaw.log")).unwrap_or_default();
    format!("{printed}\n{log}")
}

/// The native session ids of every binding the bridge keeps.
fn bound_sessions(run: &OpenClawHome<'_>) -> Vec<String> {
    let dir = run.bridge_state.join("serve/bindings");
    std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).ok()?).ok())
        .filter_map(|b| b["nativeSessionId"].as_str().map(String::from))
        .collect()
}

/// Every file named `name` under `dir`.
fn find_files(dir: &Path, name: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_files(&path, name, out);
        } else if path.file_name().is_some_and(|n| n == name) {
            out.push(path);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_a_deleted_session_file_is_reseeded_with_the_transcript_and_the_host_is_told() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"rules": [], "default": {"text": ANSWER}})).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();

    // Every turn through `openclaw agent --local`: `agent exec` offers another tool set, and a
    // changed tool set alone starts a new Claude session (its fingerprint), which is not this test.
    let session_id = "3f6d2a8e-1c4b-4e7a-9d2f-5b8c0a1e7d42";
    let (first, _) = turn(&run, session_id, FIRST_PROMPT).await;
    assert_eq!(first["payloads"][0]["text"], ANSWER, "{first:#}\n{}", describe_requests(&mock.requests()));
    let first_native = run.bound_native_session();
    run.wait_until_gone().await;

    // Claude's retention cleanup (or a person) removes the session file.
    let mut files = Vec::new();
    find_files(&sandbox.home().join(".claude"), &format!("{first_native}.jsonl"), &mut files);
    assert_eq!(files.len(), 1, "Claude wrote one session file for {first_native}: {files:?}");
    std::fs::remove_file(&files[0]).unwrap();

    let before = mock.model_requests().len();
    let (second, printed) = turn(&run, session_id, SECOND_PROMPT).await;
    assert_eq!(second["payloads"][0]["text"], ANSWER, "{second:#}");
    let requests = mock.model_requests();
    let turn2: Vec<String> = requests[before..].iter().map(|r| r.body["messages"].to_string()).collect();
    assert!(!turn2.is_empty(), "{}", describe_requests(&requests));
    // The new Claude session's first request carries the earlier turn, then the prompt.
    let body = &turn2[0];
    assert!(body.contains(FIRST_PROMPT) && body.contains(ANSWER) && body.contains(SECOND_PROMPT), "{body}");
    assert!(body.contains("<conversation_history>"), "{body}");
    // The host was told why, and the binding names the new session, never the dead one.
    let told = told(&run, &printed);
    assert!(told.contains(NOTICE) && told.contains("session file"), "{told}");
    let second_native = run.bound_native_session();
    assert_ne!(second_native, first_native);
    run.wait_until_gone().await;

    // The next turn resumes the new session: no second projection.
    let before = mock.model_requests().len();
    let (third, printed) = turn(&run, session_id, "Thanks.").await;
    assert_eq!(third["payloads"][0]["text"], ANSWER, "{third:#}");
    assert_eq!(run.bound_native_session(), second_native);
    let requests = mock.model_requests();
    let body = requests[before].body["messages"].to_string();
    assert_eq!(body.matches("<conversation_history>").count(), 1, "resumed, not seeded again: {body}");
    assert!(!printed.contains(NOTICE), "{printed}");
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_turn_on_openclaws_own_runtime_reaches_the_next_clawbridge_turn() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"rules": [], "default": {"text": ANSWER}})).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let mut config = run.config();
    // The route the embedded runner calls: the mock serves the Responses API.
    config["models"]["providers"]["mock"]["api"] = json!("openai-responses");
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    let session_id = "8a1e4c2b-6d3f-4b9a-8e7c-2f5d1a0b9c63";
    let (first, _) = turn(&run, session_id, FIRST_PROMPT).await;
    assert_eq!(first["payloads"][0]["text"], ANSWER, "{first:#}\n{}", describe_requests(&mock.requests()));
    let first_thread = run.bound_native_session();
    run.wait_until_gone().await;

    // One turn on OpenClaw's own embedded runner: the same model with no runtime override.
    let mut embedded = config.clone();
    embedded["agents"]["defaults"]["models"]["mock/mock-model"] = json!({"alias": "Mock"});
    run.write_config(&embedded);
    let before = mock.model_requests().len();
    let (middle, _) = turn(&run, session_id, EMBEDDED_PROMPT).await;
    assert_eq!(middle["payloads"][0]["text"], ANSWER, "{middle:#}");
    assert_ne!(middle["meta"]["agentMeta"]["agentHarnessId"], "clawbridge-codex", "{middle:#}");
    assert!(mock.model_requests().len() > before, "the embedded runner called the mock");
    assert_eq!(run.bound_native_session(), first_thread, "the embedded turn left the binding alone");

    // Back on clawbridge: the thread does not know the embedded turn, so it is not resumed.
    run.write_config(&config);
    let before = mock.model_requests().len();
    let (third, printed) = turn(&run, session_id, SECOND_PROMPT).await;
    assert_eq!(third["payloads"][0]["text"], ANSWER, "{third:#}");
    assert_eq!(third["meta"]["agentMeta"]["agentHarnessId"], "clawbridge-codex", "{third:#}");
    let requests = mock.model_requests();
    let input = requests[before].body["input"].to_string();
    assert!(
        input.contains(EMBEDDED_PROMPT) && input.contains(FIRST_PROMPT) && input.contains(SECOND_PROMPT),
        "{input}"
    );
    assert_eq!(input.matches(FIRST_PROMPT).count(), 1, "the earlier turn once, from the projection: {input}");
    let told = told(&run, &printed);
    assert!(told.contains(NOTICE) && told.contains("not written by the attempt"), "{told}");
    assert_ne!(run.bound_native_session(), first_thread, "the binding was replaced");
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_rewind_then_a_turn_shows_the_model_the_rewound_history_not_the_old_thread() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"rules": [], "default": {"text": ANSWER}})).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let port = free_port();
    run.write_config(&with_gateway(run.config(), port));
    let _temp_root = TempRootGuard::snapshot();

    let session_id = "c4b7e2d1-9a8f-4e3b-b6c5-1d0e9f8a7b65";
    let key = format!("agent:main:explicit:{session_id}");
    for prompt in [FIRST_PROMPT, REWOUND_PROMPT] {
        let (done, _) = turn(&run, session_id, prompt).await;
        assert_eq!(done["payloads"][0]["text"], ANSWER, "{done:#}\n{}", describe_requests(&mock.requests()));
    }
    let old_thread = run.bound_native_session();
    run.wait_until_gone().await;

    // Rewind to before the second prompt through OpenClaw's own gateway method.
    let entry = run
        .transcript(session_id)
        .await
        .into_iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user" && text_of(&e["message"]) == REWOUND_PROMPT)
        .expect("the second prompt's entry");
    let entry_id = entry["id"].as_str().expect("an entry id").to_string();
    let gateway = Gateway::start(&run, port).await;
    let params = json!({"sessionKey": key, "entryId": entry_id}).to_string();
    let (status, stdout, stderr) =
        run.output(&["gateway", "call", "sessions.rewind", "--params", &params, "--json"]).await;
    gateway.stop().await;
    assert!(status.success(), "sessions.rewind: {stdout}\n{stderr}");

    let before = mock.model_requests().len();
    let args = ["agent", "--local", "--agent", "main", "--session-key", &key, "-m", SECOND_PROMPT, "--json"];
    let (status, stdout, stderr) = run.output(&args).await;
    assert!(status.success(), "{stdout}\n{stderr}");
    let requests = mock.model_requests();
    let input = requests[before].body["input"].to_string();
    // The rewound history: the first turn and the new prompt; the cut-off turn is gone.
    assert!(input.contains(FIRST_PROMPT) && input.contains(SECOND_PROMPT), "{input}");
    assert!(!input.contains(REWOUND_PROMPT), "the old thread was not resumed: {input}");
    assert!(told(&run, &stderr).contains(NOTICE), "{stderr}");
    // The rewound session (OpenClaw gives it a new id) is bound to a new thread.
    let natives = bound_sessions(&run);
    assert!(natives.iter().any(|n| n != &old_thread), "{natives:?}");
    run.wait_until_gone().await;
}
