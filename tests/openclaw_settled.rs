//! `finalizeSettledTurn` with the real OpenClaw (2026.9.6), the real codex app-server or the real
//! Claude Code CLI, and the mock model: a turn whose tool call settles but whose model then ends
//! without a visible answer. OpenClaw's run loop sees a settled tool turn with no reply and asks
//! the harness for the final answer (its text-only continuation instruction); clawbridge answers
//! it in a fresh, ephemeral, tool-less native session seeded with the session's transcript
//! (`attempt/run` `isolation: "settle"`). The test proves:
//!
//! - the finalization request reaches the model once, offers it no tools, and carries the settled
//!   tool call's result (the model sums up the work, it cannot redo it);
//! - the answer is what OpenClaw delivers, and it is in the transcript exactly once, under the
//!   key the plugin stored it with; the tool ran once;
//! - the user's native thread was neither extended nor replaced: the next turn continues the same
//!   thread, which holds the tool turn but no trace of the finalization request.
//!
//! On both, a settled tool turn that *failed* on its transport (every request after the tool's
//! result breaks off, the runtime retries and gives up): the result's
//! `settledTurnFinalizationContext` lets core finalize it the same way instead of showing the error.
//!
//! And a fork (the gateway's `sessions.fork`) of a clawbridge session: core forks the transcript
//! itself (clawbridge declares no `sessionForkV2`, which core only routes for sessions a session
//! catalog adopted, docs/openclaw-contract.md), and the fork's first turn starts a native thread
//! seeded with the forked history, while the source session keeps its own thread.

mod common;

use clawbridge_fixtures::mock_model::{LoggedRequest, MockModel, RequestView};
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard, text_of, tool_calls};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Gateway, agent_turn_on_key, free_port, gateway_call, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use common::openclaw::OpenClawPeers;
use serde_json::json;

const SESSION: &str = "settled-1";
const PROMPT: &str = "Please run the settleq check.";
const NEXT: &str = "And what now, nextq?";
/// What the command prints (the command itself says `$((6*7))`, so the output proves it ran).
const RAN: &str = "settlemark-42";
/// The start of OpenClaw's settled-turn continuation instruction (its run loop words it).
const INSTRUCTION: &str =
    "The previous assistant turn completed its tool calls but did not produce a user-visible answer";
const FINAL: &str = "The check ran and printed the settle marker.";

/// What the mock saw of a model request.
fn view(request: &LoggedRequest) -> Option<RequestView> {
    request.api.map(|api| RequestView::from_body(api, &request.body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_a_settled_tool_turn_without_a_reply_is_finalized_in_a_tool_less_session_seeded_with_its_transcript_and_a_fork_is_seeded_too()
 {
    let Some(codex) = peer_or_skip("codex") else { return };
    settled_turn(Harness::Codex(codex), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_a_settled_tool_turn_without_a_reply_is_finalized_in_a_tool_less_session_seeded_with_its_transcript() {
    let Some(claude) = peer_or_skip("claude") else { return };
    settled_turn(Harness::Claude(claude), false).await;
}

/// The settled-turn story on one harness; with `fork`, then the fork story on the same home
/// through a gateway.
async fn settled_turn(harness: Harness, fork: bool) {
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let codex = matches!(harness, Harness::Codex(_));

    let sandbox = Sandbox::new().unwrap();
    let (shell, command) = if codex {
        ("exec_command", json!({"command": "echo settlemark-$((6*7))", "shell": "/bin/bash"}))
    } else {
        ("Bash", json!({"command": "echo settlemark-$((6*7))", "justification": "Run the settle check"}))
    };
    let broken = if codex { json!({"cut": true}) } else { json!({"drop": true}) };
    let scenario = json!({
        "rules": [
            // The finalization: its instruction is the latest user text.
            {"when": {"last_user_text_contains": INSTRUCTION}, "reply": {"text": FINAL}},
            // After the tool's result the model ends its turn with no visible text at all (and
            // again when Claude Code itself asks it to continue after an empty answer).
            {"when": {"last_user_text_contains": "had no visible output"}, "reply": {}},
            {"when": {"last_input_is_tool_result": true, "last_user_text_contains": "settleq"}, "reply": {}},
            {"when": {"last_user_text_contains": "settleq", "tool_offered": shell}, "reply": {"run_command": command}},
            // The transport story: the tool runs, then every request after its result breaks off
            // (Codex: a stream without its end; Claude Code, which takes such a stream for an
            // empty answer: a connection closed unanswered), so the runtime gives up on its transport.
            {"when": {"last_input_is_tool_result": true, "last_user_text_contains": "failq"}, "reply": {"error": broken}},
            {"when": {"last_user_text_contains": "failq", "tool_offered": shell},
             "reply": {"run_command": {"command": "echo failmark-$((6*7))", "shell": "/bin/bash"}}}
        ],
        "default": {"text": "Noted."}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, harness, &mock);
    let port = free_port();
    run.write_config(&if fork { with_gateway(run.config(), port) } else { run.config() });
    let _temp_root = TempRootGuard::snapshot();

    // Both turns as `openclaw agent --local` on one session: the same OpenClaw tool surface each
    // time, so the native session's binding holds from one to the next.
    let first = run.next_turn(SESSION, PROMPT).await;
    let describe = || {
        let asked: Vec<String> = mock
            .model_requests()
            .iter()
            .map(|r| {
                let v = view(r);
                format!(
                    "  #{} asks {:?} last tool result {:?} tools {:?}",
                    r.seq,
                    v.as_ref().and_then(|v| v.last_user_text.clone()),
                    v.as_ref().map(|v| v.last_input_is_tool_result),
                    v.map(|v| if v.tools.len() < 20 { v.tools.join(",") } else { v.tools.len().to_string() })
                )
            })
            .collect();
        format!("first turn: {first:#}\nmock saw:\n{}\n{}", describe_requests(&mock.model_requests()), asked.join("\n"))
    };
    assert_eq!(
        first["payloads"][0]["text"].as_str().unwrap_or("").trim(),
        FINAL,
        "the finalized answer is delivered: {}",
        describe()
    );
    assert_eq!(first["payloads"].as_array().map(Vec::len), Some(1), "once: {}", describe());
    let session_id = SESSION.to_string();
    let thread = run.bound_native_session();

    // The finalization request: once, no tools, the settled tool turn in it.
    let requests = mock.model_requests();
    let asks =
        |r: &&LoggedRequest, needle: &str| view(r).and_then(|v| v.last_user_text).is_some_and(|t| t.contains(needle));
    let finals: Vec<&LoggedRequest> = requests.iter().filter(|r| asks(r, INSTRUCTION)).collect();
    assert_eq!(finals.len(), 1, "one finalization request: {}", describe());
    let body = finals[0].body.to_string();
    assert!(body.contains(PROMPT), "it sees the user's prompt: {body}");
    assert!(body.contains(RAN), "it sees the settled tool result: {body}");
    // Every tool is taken away but Codex 0.169's `request_user_input`, which no setting removes;
    // with nobody to ask, Codex answers it itself as unavailable (docs/peers/codex.md#side-work).
    let tools = view(finals[0]).map(|v| v.tools).unwrap_or_default();
    assert!(tools.iter().all(|t| codex && t == "request_user_input"), "no tools for the finalization: {tools:?}");
    // The tool ran once: one request answered with the call, one with its result.
    let called: Vec<&LoggedRequest> = requests
        .iter()
        .filter(|r| {
            asks(r, "settleq")
                && view(r).is_some_and(|v| !v.last_input_is_tool_result && v.tools.iter().any(|t| t == shell))
        })
        .collect();
    assert_eq!(called.len(), 1, "the tool was asked for once: {}", describe());

    // The transcript: the prompt, the call, its result, the finalized answer once, nothing else.
    let messages = run.messages(&session_id).await;
    let summary = || serde_json::to_string_pretty(&messages).unwrap();
    assert_eq!(messages.iter().filter(|m| !tool_calls(m).is_empty()).count(), 1, "one tool call: {}", summary());
    let results: Vec<_> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", summary());
    assert!(text_of(results[0]).contains(RAN), "{}", summary());
    let answers: Vec<_> = messages.iter().filter(|m| m["role"] == "assistant" && text_of(m).contains(FINAL)).collect();
    assert_eq!(answers.len(), 1, "the answer is stored exactly once: {}", summary());
    let key = answers[0]["idempotencyKey"].as_str().unwrap_or_default();
    assert!(key.starts_with("clawbridge:") && key.ends_with(":settled-final"), "stored by the plugin: {}", summary());
    assert!(
        !messages.iter().any(|m| text_of(m).contains(INSTRUCTION)),
        "the instruction is no user row: {}",
        summary()
    );

    // The next turn continues the user's thread: the tool turn is in it, the finalization is not.
    let next = run.next_turn(&session_id, NEXT).await;
    assert!(next.to_string().contains("Noted."), "{next:#}\n{}", describe());
    assert_eq!(run.bound_native_session(), thread, "the thread was neither replaced nor rebound: {}", describe());
    let requests = mock.model_requests();
    let nexts: Vec<&LoggedRequest> = requests.iter().filter(|r| asks(r, "nextq")).collect();
    assert!(!nexts.is_empty(), "{}", describe());
    let body = nexts[0].body.to_string();
    assert!(body.contains(RAN), "the next turn continues the thread that ran the tool: {body}");
    assert!(!body.contains(INSTRUCTION), "the finalization did not extend the user's thread: {body}");
    assert!(!body.contains("conversation_history"), "the thread was resumed, not re-projected: {body}");
    transport_story(&run, &sandbox, &mock, codex).await;
    if fork {
        fork_story(&run, &mock, port).await;
    }
}

/// A settled tool turn whose next model request breaks off, every time: the native
/// runtime retries, then fails the turn on its transport (`providerTransport`: Codex's
/// `codexErrorInfo`, Claude Code's `api_error` `connection_failed`), and the result's
/// `settledTurnFinalizationContext` lets core finalize the failed turn instead of showing the error.
async fn transport_story(home: &OpenClawHome<'_>, sandbox: &Sandbox, mock: &MockModel, codex: bool) {
    const SESSION: &str = "settled-transport";
    const PROMPT: &str = "Please run the failq check.";
    const RAN: &str = "failmark-42";
    // The runtime retries a broken stream itself, as it does by default (the kit turns Codex's off;
    // Claude Code's ten backed-off retries would take minutes, so one): the plugin then tells
    // OpenClaw the retrying was done, so core does not rerun the attempt.
    if codex {
        let config = sandbox.codex_home().join("config.toml");
        let toml = std::fs::read_to_string(&config).unwrap();
        assert!(toml.contains("stream_max_retries = 0"), "{toml}");
        std::fs::write(&config, toml.replace("stream_max_retries = 0", "stream_max_retries = 2")).unwrap();
    } else {
        let mut config = home.config();
        config["plugins"]["entries"]["clawbridge"]["config"]["env"]["CLAUDE_CODE_MAX_RETRIES"] = json!("1");
        home.write_config(&config);
    }
    let args = ["agent", "--local", "--agent", "main", "--session-id", SESSION, "-m", PROMPT, "--json"];
    let (status, stdout, stderr) = home.output(&args).await;
    let describe = || {
        format!(
            "{status}\nstdout:\n{stdout}\nstderr:\n{stderr}\nmock saw:\n{}",
            describe_requests(&mock.model_requests())
        )
    };
    // The exit status is not asserted: the attempt's failure stays the run's lifecycle error in the
    // agent command (the embedded runner reports it the same way), so it exits 1 with the
    // finalized answer as its only payload (docs/peers/openclaw.md#side-work-and-the-context-engine).
    let out = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).unwrap_or_default();
    // The finalized answer is the turn's only reply: no error payload beside it.
    assert_eq!(out["payloads"][0]["text"].as_str().unwrap_or("").trim(), FINAL, "{}", describe());
    assert_eq!(out["payloads"].as_array().map(Vec::len), Some(1), "{}", describe());

    let requests = mock.model_requests();
    let asks =
        |r: &LoggedRequest, needle: &str| view(r).and_then(|v| v.last_user_text).is_some_and(|t| t.contains(needle));
    // The broken requests: after the tool's result, more than one (the runtime retried its transport).
    let cut =
        requests.iter().filter(|r| asks(r, "failq") && view(r).is_some_and(|v| v.last_input_is_tool_result)).count();
    assert!(cut > 1, "the runtime retried the broken stream before giving up: {}", describe());
    // One finalization for this turn, made from its transcript: the prompt and the tool's result.
    let finals: Vec<&LoggedRequest> =
        requests.iter().filter(|r| asks(r, INSTRUCTION) && r.body.to_string().contains(RAN)).collect();
    assert_eq!(finals.len(), 1, "{}", describe());
    let body = finals[0].body.to_string();
    assert!(body.contains(PROMPT), "{body}");
    let tools = view(finals[0]).map(|v| v.tools).unwrap_or_default();
    assert!(tools.iter().all(|t| codex && t == "request_user_input"), "no tools for the finalization: {tools:?}");

    // The transcript: the call, its result, the finalized answer once, stored by the plugin.
    let messages = home.messages(SESSION).await;
    let summary = || serde_json::to_string_pretty(&messages).unwrap();
    let results: Vec<_> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", summary());
    assert!(text_of(results[0]).contains(RAN), "{}", summary());
    let answers: Vec<_> = messages.iter().filter(|m| m["role"] == "assistant" && text_of(m).contains(FINAL)).collect();
    assert_eq!(answers.len(), 1, "the answer is stored exactly once: {}", summary());
    let key = answers[0]["idempotencyKey"].as_str().unwrap_or_default();
    assert!(key.ends_with(":settled-final"), "stored by the plugin: {}", summary());
}

/// The native threads the bridge's bindings name.
fn bound_threads(home: &OpenClawHome<'_>) -> Vec<String> {
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(home.bridge_state.join("serve/bindings"))
        .map(|dir| dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect())
        .unwrap_or_default();
    files
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter_map(|b| b["nativeSessionId"].as_str().map(str::to_string))
        .collect()
}

/// The fork story, through a gateway on `home`: two turns on a key, a fork at the second turn's
/// prompt, a turn on the fork (it knows the first turn, not the second), a turn on the source (its
/// thread continues, the fork left no trace in it).
async fn fork_story(home: &OpenClawHome<'_>, mock: &MockModel, port: u16) {
    const KEY: &str = "agent:main:fork-src";
    let gateway = Gateway::start(home, port).await;
    let describe = |what: &serde_json::Value| {
        format!("{what:#}\nmock saw:\n{}\ngateway:\n{}", describe_requests(&mock.model_requests()), gateway.output())
    };
    let last_input = || mock.model_requests().last().map(|r| r.body.to_string()).unwrap_or_default();
    let before = bound_threads(home);

    let keep = agent_turn_on_key(home, KEY, "Remember the word FORK-KEEP-3.").await;
    assert_eq!(reply_text(&keep), "Noted.", "{}", describe(&keep));
    let later = agent_turn_on_key(home, KEY, "Also remember FORK-LATER-8.").await;
    assert_eq!(reply_text(&later), "Noted.", "{}", describe(&later));
    let source_session = later["result"]["meta"]["agentMeta"]["sessionId"].as_str().unwrap_or_default().to_string();
    let source_threads: Vec<String> = bound_threads(home).into_iter().filter(|t| !before.contains(t)).collect();
    assert_eq!(source_threads.len(), 1, "the source session got one thread: {source_threads:?}");
    let entries = home.transcript(&source_session).await;
    let at = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["role"] == "user" && e.to_string().contains("FORK-LATER-8"))
        .and_then(|e| e["id"].as_str())
        .unwrap_or_else(|| panic!("no user entry for the second turn: {entries:#?}"))
        .to_string();
    let forked = gateway_call(home, port, "sessions.fork", &json!({"sessionKey": KEY, "entryId": at}), None).await;
    let fork_key =
        forked["result"]["sessionKey"].as_str().unwrap_or_else(|| panic!("{}", describe(&forked))).to_string();
    assert_ne!(fork_key, KEY, "{}", describe(&forked));

    let on_fork = agent_turn_on_key(home, &fork_key, "What do you remember, forkq?").await;
    assert_eq!(reply_text(&on_fork), "Noted.", "{}", describe(&on_fork));
    let input = last_input();
    assert!(
        input.contains("conversation_history") && input.contains("FORK-KEEP-3"),
        "the fork's new thread is seeded with the forked history: {input}"
    );
    assert!(!input.contains("FORK-LATER-8"), "and only with it: {input}");

    let on_source = agent_turn_on_key(home, KEY, "And the source, srcq?").await;
    assert_eq!(reply_text(&on_source), "Noted.", "{}", describe(&on_source));
    let input = last_input();
    assert!(
        input.contains("FORK-LATER-8") && !input.contains("forkq"),
        "the source continues its own history: {input}"
    );
    assert!(!input.contains("conversation_history"), "on its own thread, not re-projected: {input}");
    let threads: Vec<String> = bound_threads(home).into_iter().filter(|t| !before.contains(t)).collect();
    assert_eq!(threads.len(), 2, "the source and the fork each have their own thread: {threads:?}");
    assert!(threads.contains(&source_threads[0]), "the source kept its thread: {threads:?}");
    gateway.stop().await;
}
