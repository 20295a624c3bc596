//! Issue #12's inputs and crash-proof bindings on the real host: openclaw 2026.9.6 (Node 24) runs
//! the plugin from the checkout, which runs `clawbridge serve`, which runs the real codex 0.169.0 or
//! claude 2.1.328 against the scripted mock model. Every check is on what the mock model received
//! or on what OpenClaw recorded.
//!
//! - An image the prompt names (`openclaw agent exec` has no image flag: OpenClaw's own
//!   `detectAndLoadAgentHarnessPromptImages` finds a local image path in the prompt when the model
//!   takes images, and the plugin calls it), an image a host tool returns (OpenClaw's `read` on a
//!   picture: to the model as an image, in the `toolResult` row as an `image` block) and
//!   `--thinking low` reach the model, in one turn.
//! - A command the native agent leaves running in the background (Codex unified exec past its
//!   yield time; Claude's Bash `run_in_background`) is a success that says so, not a failure.
//! - A bridge SIGKILLed while the model stalls: the binding was already on disk, and the next turn
//!   runs on the same native thread or session, whose history holds turn 1.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::openclaw::{
    Harness, OpenClawHome, TempRootGuard, parse_json_output, processes_with_env,
};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

/// A 4×4 red PNG, as base64.
const PIXEL_PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==";
const IMAGE_ANSWER: &str = "A single red pixel.";
const STALL_PROMPT: &str = "Please stall on this first question about zebras.";
const SECOND_PROMPT: &str = "Say hello again.";
const SECOND_ANSWER: &str = "Hello again from the mock.";

/// Which peer a test runs.
#[derive(Clone, Copy, Debug)]
enum Peer {
    Codex,
    Claude,
}

impl Peer {
    fn name(self) -> &'static str {
        match self {
            Peer::Codex => "codex",
            Peer::Claude => "claude",
        }
    }

    fn harness(self, binary: PathBuf) -> Harness {
        match self {
            Peer::Codex => Harness::Codex(binary),
            Peer::Claude => Harness::Claude(binary),
        }
    }
}

/// The model requests (Responses or Messages API) the mock answered.
fn model_requests(mock: &MockModel) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.api.is_some()).map(|r| r.body).collect()
}

/// Every image a model request carries, as (media type, base64): Responses `input_image` parts
/// (`image_url` a data URL) and Messages `image` blocks (`source` base64).
fn images_in(body: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut visit = vec![body];
    while let Some(value) = visit.pop() {
        match value {
            Value::Object(map) => {
                if map.get("type") == Some(&json!("input_image")) {
                    if let Some((mime, data)) = map
                        .get("image_url")
                        .and_then(Value::as_str)
                        .and_then(|url| url.strip_prefix("data:"))
                        .and_then(|rest| rest.split_once(";base64,"))
                    {
                        found.push((mime.to_string(), data.to_string()));
                    }
                }
                if map.get("type") == Some(&json!("image")) && map["source"]["type"] == "base64" {
                    let source = &map["source"];
                    found.push((
                        source["media_type"].as_str().unwrap_or_default().to_string(),
                        source["data"].as_str().unwrap_or_default().to_string(),
                    ));
                }
                visit.extend(map.values());
            }
            Value::Array(items) => visit.extend(items),
            _ => {}
        }
    }
    found
}

/// Whether the request's conversation holds `text` anywhere (history included).
fn mentions(body: &Value, text: &str) -> bool {
    body.to_string().contains(text)
}

/// Marks the mock provider's model as taking images and reasoning, as a real vision model's
/// config says, so OpenClaw detects prompt images and keeps the thinking level.
fn vision_model(config: &mut Value) {
    let model = &mut config["models"]["providers"]["mock"]["models"][0];
    model["input"] = json!(["text", "image"]);
    model["reasoning"] = json!(true);
}

async fn images_and_a_thinking_level_reach_the_model(peer: Peer) {
    let Some((binary, peers)) = OpenClawPeers::with_peer(peer.name()) else { return };
    let sandbox = Sandbox::new().unwrap();
    let picture = sandbox.work().join("pixel.png");
    std::fs::write(&picture, decode_base64(PIXEL_PNG)).unwrap();
    // The model reads the picture again with OpenClaw's own `read` tool, which answers an image
    // file with an image block: one turn checks the prompt's image, the tool's image and the level.
    let read = match peer {
        Peer::Codex => "read",
        Peer::Claude => "mcp__openclaw__read",
    };
    let scenario = json!({
        "rules": [
            {"when": {"last_input_is_tool_result": true}, "reply": {"text": IMAGE_ANSWER}},
            {"when": {"last_user_text_contains": "What colour", "tool_offered": read},
             "reply": {"tool_call": {"name": read, "arguments": {"path": picture}}}}
        ],
        "default": {"text": "the read tool was not offered"}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, peer.harness(binary), &mock);
    let mut config = run.config();
    vision_model(&mut config);
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    let prompt = format!("What colour is the picture {}?", picture.display());
    // Not the peers' default level, so only the host's setting can have chosen it.
    let exec = run.exec(&prompt, &["--thinking", "low"]).await;
    let session_id = exec["sessionId"].as_str().unwrap_or_default().to_string();
    let messages = run.messages(&session_id).await;
    let describe = || {
        format!(
            "exec: {exec:#}\ntranscript: {}\nmock saw:\n{}",
            serde_json::to_string_pretty(&messages).unwrap(),
            describe_requests(&mock.requests())
        )
    };
    assert_eq!(exec["ok"], true, "{}", describe());
    assert!(exec["final"].as_str().unwrap_or("").contains(IMAGE_ANSWER), "{}", describe());

    let asked: Vec<Value> =
        model_requests(&mock).into_iter().filter(|b| mentions(b, "What colour is the picture")).collect();
    assert_eq!(asked.len(), 2, "the prompt, then the tool's result: {}", describe());
    for (body, expected_images) in asked.iter().zip([1, 2]) {
        // The prompt's image, then also the tool's.
        let images = images_in(body);
        assert_eq!(images.len(), expected_images, "{}", describe());
        for (mime, data) in &images {
            assert!(mime.starts_with("image/"), "{mime}");
            // OpenClaw may re-encode an image within its limits; what arrives is still a picture.
            assert!(decode_base64(data).len() > 8, "{}", describe());
        }
        match peer {
            // Responses API: the turn's effort.
            Peer::Codex => assert_eq!(body["reasoning"]["effort"], "low", "{}", describe()),
            // Messages API: the effort of adaptive thinking.
            Peer::Claude => assert_eq!(body["output_config"]["effort"], "low", "{}", describe()),
        }
    }
    // The transcript's toolResult row holds the tool's image as an image block, not "[image]".
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", describe());
    let blocks = results[0]["content"].as_array().cloned().unwrap_or_default();
    let images: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "image").collect();
    assert_eq!(images.len(), 1, "{}", describe());
    assert!(images[0]["mimeType"].as_str().unwrap_or("").starts_with("image/"), "{}", describe());
    assert!(!clawbridge_fixtures::peers::openclaw::text_of(results[0]).contains("[image]"), "{}", describe());
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_images_and_a_thinking_level_reach_the_model() {
    images_and_a_thinking_level_reach_the_model(Peer::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_images_and_a_thinking_level_reach_the_model() {
    images_and_a_thinking_level_reach_the_model(Peer::Claude).await;
}

/// The native session id of the bridge's only binding.
fn bound_session(run: &OpenClawHome<'_>) -> String {
    let binding = run.binding();
    binding["nativeSessionId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .unwrap_or_else(|| panic!("no id: {binding}"))
        .to_string()
}

/// The `clawbridge serve` processes of this test's bridge state dir.
fn bridge_processes(run: &OpenClawHome<'_>) -> Vec<i32> {
    let needle = format!("CLAWBRIDGE_STATE_DIR={}\0", run.bridge_state.display());
    processes_with_env(&needle)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            args.first().is_some_and(|a| a.ends_with(b"clawbridge")) && args.iter().any(|a| *a == b"serve")
        })
        .collect()
}

async fn a_bridge_killed_mid_turn_resumes_the_same_native_session(peer: Peer) {
    let Some((binary, peers)) = OpenClawPeers::with_peer(peer.name()) else { return };
    let sandbox = Sandbox::new().unwrap();
    // Turn 1's model answer never comes (each event waits a minute); turn 2 is answered.
    let scenario = json!({
        "rules": [{"when": {"last_user_text_contains": "stall on this"},
                   "reply": {"text": "Zebras are", "delay_ms": 60_000}}],
        "default": {"text": SECOND_ANSWER}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, peer.harness(binary), &mock);
    let mut config = run.config();
    // Without host tools the turn runs under fewer moving parts; only the kill can break the session.
    config["plugins"]["entries"]["clawbridge"]["config"]["hostTools"] = json!(false);
    run.write_config(&config);
    let _temp_root = TempRootGuard::snapshot();

    // Both turns as `openclaw agent --local`: `agent exec` builds another OpenClaw tool surface and
    // seeds no workspace files, so only the kill differs between the turns.
    let session_id = "killed-bridge".to_string();
    let args = ["agent", "--local", "--agent", "main", "--session-id", &session_id, "-m", STALL_PROMPT, "--json"];
    let first = run.command(&args).spawn().unwrap();

    // Wait until the model was asked (the native turn runs), then kill the bridge.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !model_requests(&mock).iter().any(|b| mentions(b, STALL_PROMPT)) {
        assert!(
            std::time::Instant::now() < deadline,
            "turn 1 never reached the model: {}",
            describe_requests(&mock.requests())
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The binding is on disk while the turn still runs: that is what survives the kill.
    let bound = bound_session(&run);
    if let Peer::Claude = peer {
        // Claude Code can resume only a session it has written down; it writes its session file
        // shortly after the request goes out. Killed before that, the next turn rightly starts
        // afresh (and says why), which is not what this test is about.
        let file = sandbox
            .home()
            .join(".claude/projects")
            .join(clawbridge_fixtures::peers::path_slug(&sandbox.work()))
            .join(format!("{bound}.jsonl"));
        while !std::fs::read_to_string(&file).is_ok_and(|text| text.contains(STALL_PROMPT)) {
            assert!(std::time::Instant::now() < deadline, "Claude Code never wrote {}", file.display());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let bridges = bridge_processes(&run);
    assert_eq!(bridges.len(), 1, "one bridge runs the turn: {bridges:?}");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(bridges[0]), nix::sys::signal::Signal::SIGKILL).unwrap();

    let output = tokio::time::timeout(Duration::from_secs(180), first.wait_with_output())
        .await
        .expect("turn 1's OpenClaw ends once its bridge is gone")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let turn1 = parse_json_output(&stdout)
        .unwrap_or_else(|| panic!("no JSON from turn 1:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(turn1["ok"], false, "turn 1 cannot have succeeded: {turn1:#}");
    assert!(turn1["error"]["message"].as_str().unwrap_or("").contains("SIGKILL"), "the kill is named: {turn1:#}");
    run.wait_until_gone().await;

    // Turn 2, in a new OpenClaw process with a new bridge: the same native session, and the model
    // sees turn 1's question in its history.
    let before = model_requests(&mock).len();
    let second = run.next_turn(&session_id, SECOND_PROMPT).await;
    let describe = || format!("turn 2: {second:#}\nmock saw:\n{}", describe_requests(&mock.requests()));
    assert!(second.to_string().contains(SECOND_ANSWER), "{}", describe());
    assert_eq!(bound_session(&run), bound, "the same native session: {}", describe());
    let asked: Vec<Value> =
        model_requests(&mock).into_iter().skip(before).filter(|b| mentions(b, SECOND_PROMPT)).collect();
    assert!(!asked.is_empty(), "{}", describe());
    assert!(asked.iter().all(|b| mentions(b, STALL_PROMPT)), "the model sees turn 1: {}", describe());
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_bridge_killed_mid_turn_resumes_the_same_thread() {
    a_bridge_killed_mid_turn_resumes_the_same_native_session(Peer::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_a_bridge_killed_mid_turn_resumes_the_same_session() {
    a_bridge_killed_mid_turn_resumes_the_same_native_session(Peer::Claude).await;
}

/// Standard base64 to bytes (test data only; panics on bad input).
fn decode_base64(text: &str) -> Vec<u8> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut buffer = 0u32;
    let mut bits = 0;
    for byte in text.bytes().filter(|b| *b != b'=' && !b.is_ascii_whitespace()) {
        let value = ALPHABET.iter().position(|a| *a == byte).expect("base64") as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
    }
    out
}

async fn a_backgrounded_command_is_not_reported_failed(peer: Peer) {
    let Some((binary, peers)) = OpenClawPeers::with_peer(peer.name()) else { return };
    let sandbox = Sandbox::new().unwrap();
    let call = match peer {
        // Unified exec: past `yield_time_ms` the command keeps running in the background.
        Peer::Codex => json!({"name": "exec_command", "arguments": {"cmd": "sleep 20", "yield_time_ms": 500}}),
        Peer::Claude => {
            json!({"name": "Bash", "arguments": {"command": "sleep 20", "run_in_background": true, "description": "wait"}})
        }
    };
    let scenario = json!({
        "rules": [
            {"when": {"last_input_is_tool_result": true}, "reply": {"text": "It runs in the background."}},
            {"when": {"last_user_text_contains": "background"}, "reply": {"tool_call": call}}
        ],
        "default": {"text": "nothing"}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, peer.harness(binary), &mock);
    run.write_config(&run.config());
    let _temp_root = TempRootGuard::snapshot();
    let exec = run.exec("Start a sleep in the background, please.", &[]).await;
    let session_id = exec["sessionId"].as_str().unwrap_or_default().to_string();
    let messages = run.messages(&session_id).await;
    let describe = || format!("exec: {exec:#}\ntranscript: {}", serde_json::to_string_pretty(&messages).unwrap());
    assert_eq!(exec["ok"], true, "{}", describe());
    // observeToolTerminal heard a success: OpenClaw counts no failure.
    assert_eq!(exec["toolSummary"]["calls"], 1, "{}", describe());
    assert_eq!(exec["toolSummary"]["failures"], 0, "{}", describe());
    let results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", describe());
    assert_eq!(results[0]["isError"], false, "{}", describe());
    let text = clawbridge_fixtures::peers::openclaw::text_of(results[0]);
    assert!(text.contains("background"), "the row says it runs on: {}", describe());
    assert!(!text.contains("the turn ended before the tool reported"), "{}", describe());
    run.wait_until_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_backgrounded_command_is_not_reported_failed() {
    a_backgrounded_command_is_not_reported_failed(Peer::Codex).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_a_backgrounded_command_is_not_reported_failed() {
    a_backgrounded_command_is_not_reported_failed(Peer::Claude).await;
}
