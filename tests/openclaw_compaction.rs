//! Native compaction through the real OpenClaw (openclaw 2026.9.6 on Node 24), the real Claude
//! Code CLI 2.1.328 / codex app-server 0.169.0 and the scripted mock model (issue #13, point 5):
//!
//! - the native runtime's own auto-compaction in a real attempt: Claude Code with a lowered
//!   auto-compact window (`CLAUDE_CODE_AUTO_COMPACT_WINDOW`) after a turn whose usage reports a
//!   large context compacts before its next query; the mock gets the summarization request, the
//!   bridge's `contextCompacted` event reaches core (`onAutoCompactionSucceeded`, the result's
//!   `compactionCount` and `compactionTokensAfter`: the session entry's compaction count), and the
//!   transcript gets one compaction entry;
//! - `/compact` sent as a chat message (`chat.send`, core's chat command): Claude Code's `/compact`
//!   in the bound Claude session; the mock gets the summarization request over the conversation,
//!   core replies with both sizes and counts the compaction, the transcript gets exactly one more
//!   compaction entry, and the next turn resumes the compacted session (the model sees the
//!   summary; core's command exchange in the transcript does not count as the transcript moving);
//! - the same for Codex: its own auto-compaction (`model_auto_compact_token_limit`) in a real
//!   attempt, and `thread/compact/start` through the gateway's `sessions.compact` on the shared
//!   app-server that keeps the thread loaded.
//!
//! One OpenClaw home, one gateway and one native session per harness serve every assertion.

mod common;

use clawbridge_fixtures::mock_model::LoggedRequest;
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard, parse_json_output};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Gateway, agent_turn, free_port, gateway_call, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::{Value, json};

const SESSION: &str = "compaction-1";
const SESSION_KEY: &str = "agent:main:explicit:compaction-1";
const TURN_ONE: &str = "Turn one: remember the word kumquat.";
const TURN_TWO: &str = "Turn two: and the word juniper.";
/// The mock reports a context past the auto-compact window for this turn's request.
const TURN_BIG: &str = "Turn three: a big one.";
const TURN_AFTER_AUTO: &str = "Turn four: after the auto-compaction.";
const TURN_AFTER_MANUAL: &str = "Turn five: which words did I ask you to remember?";
const SUMMARY: &str = "SUMMARY-OF-KUMQUAT-AND-JUNIPER";
const CUSTOM_TYPE: &str = "openclaw.context-compaction";

/// The session's compaction entries in OpenClaw's transcript.
async fn compaction_entries(run: &OpenClawHome<'_>) -> Vec<Value> {
    run.messages(SESSION)
        .await
        .into_iter()
        .filter(|m| m["role"] == "custom" && m["customType"] == CUSTOM_TYPE)
        .collect()
}

/// The session's entry in OpenClaw's session store (the agent database's `session_nodes` row).
async fn session_row(run: &OpenClawHome<'_>) -> Value {
    let script = run.state.join("session-entry.mjs");
    std::fs::write(&script, SESSION_ENTRY).expect("script");
    let db = run.state.join("agents/main/agent/openclaw-agent.sqlite");
    let output = tokio::process::Command::new(&run.node)
        .arg(&script)
        .arg(&db)
        .arg(SESSION_KEY)
        .output()
        .await
        .expect("node runs");
    assert!(output.status.success(), "reading {}: {}", db.display(), String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("no session entry ({e}): {output:?}"))
}

/// Prints the `entry_json` of the session key in argv[3] from the agent database in argv[2].
const SESSION_ENTRY: &str = r#"
import { DatabaseSync } from "node:sqlite";
const db = new DatabaseSync(process.argv[2], { readOnly: true });
const row = db.prepare("select entry_json from session_nodes where session_key = ?").get(process.argv[3]);
process.stdout.write(row?.entry_json ?? "null");
"#;

/// After the native runtime compacted by itself once: the harness was told
/// (`onAutoCompactionSucceeded` logs it), core counted it on the session, and the transcript holds
/// one `auto` compaction entry of `backend`; returns the entries.
async fn assert_one_auto_compaction(run: &OpenClawHome<'_>, gateway: &Gateway, backend: &str) -> Vec<Value> {
    assert!(
        gateway.output().contains("the native runtime compacted its context"),
        "the bridge's contextCompacted reached the harness's onAutoCompactionSucceeded:\n{}",
        gateway.output()
    );
    let row = session_row(run).await;
    assert_eq!(row["compactionCount"], 1, "core counted the auto-compaction on the session: {row:#}");
    let entries = compaction_entries(run).await;
    assert_eq!(entries.len(), 1, "one transcript entry for the auto-compaction: {entries:#?}");
    assert_eq!(entries[0]["details"]["trigger"], "auto", "{entries:#?}");
    assert_eq!(entries[0]["details"]["backend"], backend, "{entries:#?}");
    entries
}

/// The bridge's log lines about compaction and threads (for failure messages).
fn bridge_log(run: &OpenClawHome<'_>) -> String {
    let path = clawbridge::logfile::path_in(&run.bridge_state);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("compact") || l.contains("thread")).collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Whether `request` is Claude Code's summarization request (its compaction prompt).
fn is_claude_summarization(request: &LoggedRequest) -> bool {
    request.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|last| last["content"].to_string().contains("create a detailed summary of the conversation"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_compacts_natively_by_itself_and_on_compact_and_the_transcript_shows_each_once() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            // Claude Code's summarization request (its auto-compaction's and `/compact`'s): the
            // summary, in the analysis-then-summary shape its prompt asks for.
            {"when": {"api": "messages", "last_user_text_contains": "create a detailed summary"},
             "reply": {"text": format!("<analysis>a</analysis><summary>{SUMMARY}</summary>")}},
            // A context past the auto-compact window (100 000 tokens): the next query compacts first.
            {"when": {"api": "messages", "last_user_text_contains": "a big one"},
             "reply": {"text": "Big noted.", "usage": {"input_tokens": 190_000, "output_tokens": 5}}}
        ],
        "default": {"text": "Noted."}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    let mut config = run.config();
    // Claude Code 2.1.328's auto-compact window, lowered so a mock turn's usage passes it.
    config["plugins"]["entries"]["clawbridge"]["config"]["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = json!("100000");
    // OpenClaw's own budget for the model stays far above what the mock reports, so what compacts
    // is the native runtime, never core's preflight.
    config["models"]["providers"]["mock"]["models"][0]["contextWindow"] = json!(1_000_000);
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&run, port).await;
    let describe = || format!("{}\ngateway:\n{}", describe_requests(&mock.model_requests()), gateway.output());

    for prompt in [TURN_ONE, TURN_TWO, TURN_BIG] {
        let turn = agent_turn(&run, SESSION, prompt).await;
        assert!(!reply_text(&turn).is_empty(), "{turn:#}\n{}", describe());
    }
    let native = run.bound_native_session();
    assert!(compaction_entries(&run).await.is_empty(), "no compaction yet: {}", describe());
    let row = session_row(&run).await;
    assert!(row["compactionCount"].as_u64().unwrap_or(0) == 0, "{row:#}");

    // The next turn: Claude Code compacts by itself before its query.
    let before = mock.model_requests().len();
    let turn = agent_turn(&run, SESSION, TURN_AFTER_AUTO).await;
    assert_eq!(reply_text(&turn).trim(), "Noted.", "{turn:#}\n{}", describe());
    let requests = mock.model_requests();
    let summarizing: Vec<&LoggedRequest> = requests[before..].iter().filter(|r| is_claude_summarization(r)).collect();
    assert!(!summarizing.is_empty(), "Claude Code auto-compacted: {}", describe());
    let body = summarizing[0].body.to_string();
    assert!(body.contains("kumquat") && body.contains("juniper"), "it summarizes the conversation: {body}");
    let last = requests.last().expect("the turn's query").body.to_string();
    assert!(last.contains(SUMMARY) && last.contains("Turn four"), "the query continues from the summary: {last}");
    let entries = assert_one_auto_compaction(&run, &gateway, "clawbridge-claude").await;
    assert!(entries[0]["details"]["tokensBefore"].as_u64().unwrap_or(0) >= 190_000, "{entries:#?}");
    assert!(entries[0]["details"]["tokensAfter"].as_u64().is_some(), "{entries:#?}");
    assert_eq!(run.bound_native_session(), native, "the compacted Claude session is still the session's");

    // `/compact` as a chat client sends it: core's chat command calls the harness's compact();
    // the bridge runs Claude Code's `/compact` in the bound session.
    let before = mock.model_requests().len();
    let send = json!({"sessionKey": SESSION_KEY, "message": "/compact", "idempotencyKey": "compact-1"});
    let sent = gateway_call(&run, port, "chat.send", &send, Some("chat")).await;
    // Core's reply reads the result: both sizes came from Claude Code's compact_boundary.
    let notice = sent["event"]["message"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(notice.contains("Compacted ("), "core's /compact reply: {sent:#}\n{}", describe());
    let requests = mock.model_requests();
    let summarizing: Vec<&LoggedRequest> = requests[before..].iter().filter(|r| is_claude_summarization(r)).collect();
    assert!(!summarizing.is_empty(), "/compact asked the model for a summary: {}", describe());
    assert!(
        requests[before..].iter().all(is_claude_summarization),
        "nothing but the summarization: {}",
        describe_requests(&requests[before..])
    );
    assert!(summarizing[0].body.to_string().contains("Turn four"), "over the conversation: {}", summarizing[0].body);
    let entries = compaction_entries(&run).await;
    assert_eq!(entries.len(), 2, "exactly one more transcript entry, for /compact: {entries:#?}");
    assert_eq!(entries[1]["details"]["trigger"], "manual", "{entries:#?}");
    assert_eq!(entries[1]["details"]["nativeSessionId"], native.as_str(), "{entries:#?}");
    let row = session_row(&run).await;
    assert_eq!(row["compactionCount"], 2, "core counted /compact too: {row:#}");

    // The next turn resumes the compacted session (core's `/compact` exchange in the transcript moves
    // no native position): the model sees the summary, and no projected history.
    let turn = agent_turn(&run, SESSION, TURN_AFTER_MANUAL).await;
    assert_eq!(reply_text(&turn).trim(), "Noted.", "{turn:#}\n{}", describe());
    assert_eq!(run.bound_native_session(), native, "the same Claude session, resumed");
    let last = mock.model_requests().last().expect("the turn's query").body.to_string();
    assert!(last.contains(SUMMARY), "the model sees the compacted history: {last}");
    assert!(!last.contains("<conversation_history>"), "no re-projection: the transcript did not move: {last}");
    assert_eq!(compaction_entries(&run).await.len(), 2, "nothing more");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_compacts_natively_by_itself_and_on_compact_and_the_transcript_shows_each_once() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            // A context past the auto-compact limit (50 000 tokens): the next turn compacts first.
            {"when": {"api": "responses", "last_user_text_contains": "a big one"},
             "reply": {"text": "Big noted.", "usage": {"input_tokens": 190_000, "output_tokens": 5}}},
            {"when": {"api": "responses", "last_user_text_contains": "turn "}, "reply": {"text": "Noted."}}
        ],
        // Codex's compaction request (its summarization prompt over the thread) gets the summary.
        "default": {"text": SUMMARY}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    // codex 0.169.0's auto-compaction limit (a `ConfigToml` key), low enough for the mock's usage.
    let codex_config = sandbox.codex_home().join("config.toml");
    let toml = std::fs::read_to_string(&codex_config).unwrap();
    std::fs::write(&codex_config, format!("model_auto_compact_token_limit = 50000\n{toml}")).unwrap();
    let mut config = run.config();
    config["models"]["providers"]["mock"]["models"][0]["contextWindow"] = json!(1_000_000);
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&run, port).await;
    let describe = || {
        format!(
            "{}\ngateway:\n{}\nbridge log:\n{}",
            describe_requests(&mock.model_requests()),
            gateway.output(),
            bridge_log(&run)
        )
    };

    let turn = agent_turn(&run, SESSION, TURN_BIG).await;
    assert_eq!(reply_text(&turn).trim(), "Big noted.", "{turn:#}\n{}", describe());
    let thread = run.bound_native_session();
    assert!(compaction_entries(&run).await.is_empty(), "no compaction yet: {}", describe());

    // The next turn: Codex compacts the thread by itself (a request the scenario answers with the
    // summary), then answers from the compacted history.
    let before = mock.model_requests().len();
    let turn = agent_turn(&run, SESSION, TURN_AFTER_AUTO).await;
    assert_eq!(reply_text(&turn).trim(), "Noted.", "{turn:#}\n{}", describe());
    let requests = mock.model_requests();
    assert!(requests.len() - before >= 2, "a compaction request and the turn's: {}", describe());
    let compaction = &requests[before..requests.len() - 1];
    assert!(
        compaction.iter().any(|r| r.body.to_string().contains(TURN_BIG)),
        "Codex's compaction request summarizes the thread: {}",
        describe_requests(compaction)
    );
    let last = requests.last().expect("the turn's request").body.to_string();
    assert!(last.contains(SUMMARY) && last.contains("Turn four"), "the turn continues from the summary: {last}");
    assert_one_auto_compaction(&run, &gateway, "clawbridge-codex").await;
    assert_eq!(run.bound_native_session(), thread, "the compacted thread is still the session's");

    // `/compact`: Codex's `thread/compact/start` on the bound thread.
    let (status, stdout, stderr) = run.output(&["sessions", "compact", SESSION_KEY, "--json"]).await;
    assert!(status.success(), "compact failed:\n{stdout}\n{stderr}\n{}", describe());
    let answer = parse_json_output(&stdout).expect("a JSON answer");
    assert_eq!(answer["compacted"], true, "{answer:#}\n{}", describe());
    let entries = compaction_entries(&run).await;
    assert_eq!(entries.len(), 2, "exactly one more transcript entry, for /compact: {entries:#?}");
    assert_eq!(entries[1]["details"]["trigger"], "manual", "{entries:#?}");
    assert_eq!(entries[1]["details"]["nativeSessionId"], thread.as_str(), "{entries:#?}");
    let row = session_row(&run).await;
    assert_eq!(row["compactionCount"], 2, "core counted /compact too: {row:#}");

    // The next turn resumes the compacted thread; the entries moved no native position.
    let turn = agent_turn(&run, SESSION, TURN_AFTER_MANUAL).await;
    assert_eq!(reply_text(&turn).trim(), "Noted.", "{turn:#}\n{}", describe());
    assert_eq!(run.bound_native_session(), thread, "the same thread, resumed");
    let last = mock.model_requests().last().expect("the turn's request").body.to_string();
    assert!(!last.contains("<conversation_history>"), "no re-projection: {last}");
    gateway.stop().await;
}
