//! Live tests: the real pinned peers (Codex app-server, Claude Code) run the fixture scenarios
//! against the scripted mock model server, driven by the shared drivers in
//! `clawbridge_fixtures::peers` (the same client side that records `fixtures/recordings/`), through
//! the bridge's own supervisor, transport and (for Codex) JSON-RPC peer.
//!
//! The peers come from `CLAWBRIDGE_CODEX_BIN` / `CLAWBRIDGE_CLAUDE_BIN`, else from the output of
//! `scripts/install-peers.sh agents`. When a peer is missing the test says so on stderr and
//! returns, unless `CLAWBRIDGE_REQUIRE_PEERS=1`, which turns that into a failure.

use clawbridge_fixtures::mock_model::LoggedRequest;
use clawbridge_fixtures::peers::claude::{self, ClaudeRun, ClaudeScript};
use clawbridge_fixtures::peers::codex::{self, CodexRun, CodexScript, MARKER};
use clawbridge_fixtures::peers::{peer_or_skip, strings};
use serde_json::{Value, json};

/// The script of a checked-in Codex scenario.
fn codex_script(name: &str) -> CodexScript {
    codex::scenarios().into_iter().find(|(n, _)| *n == name).map(|(_, s)| s).expect("a known scenario")
}

/// The script of a checked-in Claude scenario.
fn claude_script(name: &str) -> ClaudeScript {
    claude::scenarios().into_iter().find(|(n, _)| *n == name).map(|(_, s)| s).expect("a known scenario")
}

/// Runs `script` on Codex; `None` when Codex is not installed.
async fn run_codex(script: &CodexScript) -> Option<CodexRun> {
    let codex = peer_or_skip("codex")?;
    let run = codex::run(&codex, script, None).await.unwrap_or_else(|e| panic!("{e}"));
    eprintln!("codex: {}", run.describe());
    Some(run)
}

/// Runs `script` on Claude Code; `None` when it is not installed.
async fn run_claude(script: &ClaudeScript) -> Option<ClaudeRun> {
    let claude = peer_or_skip("claude")?;
    let run = claude::run(&claude, script, None).await.unwrap_or_else(|e| panic!("{e}"));
    eprintln!("claude: {}", run.describe());
    Some(run)
}

/// The model requests (`/v1/responses`, `/v1/messages`) of a run.
fn model_calls(requests: &[LoggedRequest]) -> Vec<&LoggedRequest> {
    requests.iter().filter(|r| r.api.is_some()).collect()
}

/// Whether any string in any model request body contains `needle`.
fn model_saw(requests: &[LoggedRequest], needle: &str) -> bool {
    model_calls(requests).iter().any(|r| strings(&r.body).iter().any(|s| s.contains(needle)))
}

// ---------------------------------------------------------------------------------------------
// Codex app-server

/// The one completed item of `kind`.
fn codex_item(run: &CodexRun, kind: &str) -> Value {
    run.completed_items()
        .into_iter()
        .find(|item| item["type"] == kind)
        .unwrap_or_else(|| panic!("no completed {kind} item\n{}", run.describe()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_an_approved_command_against_the_mock() {
    let Some(run) = run_codex(&codex_script("command-approved")).await else {
        return;
    };
    let user_agent = run.init["userAgent"].as_str().unwrap_or_default();
    assert!(user_agent.starts_with("clawbridge/0."), "unexpected userAgent {user_agent:?}");

    let approvals = run.requests_named("item/commandExecution/requestApproval");
    assert_eq!(approvals.len(), 1, "exactly one command approval expected\n{}", run.describe());
    let approval = approvals[0].params_value().unwrap_or_default();
    assert_eq!(approval["reason"], "Allow the live test command?");

    let command = codex_item(&run, "commandExecution");
    assert_eq!(command["status"], "completed", "{command}");
    assert_eq!(command["exitCode"], 0, "{command}");
    assert!(
        command["aggregatedOutput"].as_str().is_some_and(|out| out.contains(MARKER)),
        "the command's output lacks {MARKER:?}: {command}"
    );
    let message = codex_item(&run, "agentMessage");
    assert!(
        message["text"].as_str().is_some_and(|t| t.contains(MARKER)),
        "the agent message does not quote the output: {message}"
    );
    codex_item(&run, "reasoning");
    assert_eq!(run.finished_turn()["status"], "completed", "{}", run.describe());

    let calls = model_calls(&run.model_requests);
    assert_eq!(calls.len(), 2, "{}", run.describe());
    let output_reached_model = calls[1].body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .any(|item| strings(&item["output"]).iter().any(|s| s.contains(MARKER)));
    assert!(output_reached_model, "the tool output never reached the model\n{}", run.describe());
    assert!(run.model_requests.iter().all(|r| r.status < 400), "the mock answered an error\n{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_runs_a_safe_command_without_asking() {
    let Some(run) = run_codex(&codex_script("command-auto")).await else {
        return;
    };
    assert!(run.server_requests.is_empty(), "no approval expected\n{}", run.describe());
    let command = codex_item(&run, "commandExecution");
    assert_eq!(command["status"], "completed", "{command}");
    assert!(command["aggregatedOutput"].as_str().is_some_and(|out| out.contains(MARKER)), "{command}");
    assert_eq!(run.finished_turn()["status"], "completed", "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_tells_the_model_about_a_declined_command() {
    let Some(run) = run_codex(&codex_script("command-declined")).await else {
        return;
    };
    assert_eq!(run.requests_named("item/commandExecution/requestApproval").len(), 1, "{}", run.describe());
    let command = codex_item(&run, "commandExecution");
    assert_eq!(command["status"], "declined", "{command}");
    assert!(!model_saw(&run.model_requests, MARKER), "a declined command ran\n{}", run.describe());
    assert_eq!(model_calls(&run.model_requests).len(), 2, "the model hears of the rejection\n{}", run.describe());
    assert_eq!(run.finished_turn()["status"], "completed", "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_interrupts_the_turn_on_a_cancelled_command() {
    let Some(run) = run_codex(&codex_script("command-cancelled")).await else {
        return;
    };
    assert_eq!(codex_item(&run, "commandExecution")["status"], "declined");
    assert_eq!(run.finished_turn()["status"], "interrupted", "{}", run.describe());
    assert_eq!(model_calls(&run.model_requests).len(), 1, "no model call after a cancel\n{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_calls_a_dynamic_tool_of_the_client() {
    let script = codex_script("dynamic-tool");
    let Some(run) = run_codex(&script).await else {
        return;
    };
    let calls = run.requests_named("item/tool/call");
    assert_eq!(calls.len(), 1, "{}", run.describe());
    let params = calls[0].params_value().unwrap_or_default();
    assert_eq!(params["tool"], "lookup_weather");
    assert_eq!(params["arguments"], json!({"city": "Paris"}));
    let item = codex_item(&run, "dynamicToolCall");
    assert_eq!(item["success"], true, "{item}");
    let answer = codex::dynamic_tool_answer(&params);
    let answer_text = answer["contentItems"][0]["text"].as_str().expect("a text answer");
    assert!(model_saw(&run.model_requests, answer_text), "the tool's answer never reached the model");
    assert_eq!(run.finished_turn()["status"], "completed", "{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_resumes_a_thread_in_a_new_process() {
    let script = codex_script("resume");
    let Some(run) = run_codex(&script).await else {
        return;
    };
    assert!(run.notes_named("thread/started").is_empty(), "a resume starts no thread\n{}", run.describe());
    let first = script.resume_after.as_deref().expect("a resume script has a first turn");
    assert!(model_saw(&run.model_requests, first), "the resumed history lacks the first turn\n{}", run.describe());
    assert_eq!(run.finished_turn()["status"], "completed", "{}", run.describe());
}

/// The final (`willRetry:false`) `error` notifications of a turn.
fn final_errors(run: &CodexRun) -> Vec<Value> {
    run.notes_named("error").into_iter().filter(|e| e["willRetry"] == false).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reports_an_http_500_as_a_failed_turn() {
    let Some(run) = run_codex(&codex_script("model-error")).await else {
        return;
    };
    assert_eq!(run.finished_turn()["status"], "failed", "{}", run.describe());
    assert_eq!(model_calls(&run.model_requests).len(), 1, "Codex retried despite retries being off");
    // Codex replaces the body of a 5xx with its own canned text; only the category survives.
    let errors = final_errors(&run);
    assert!(
        errors.iter().any(|e| e["error"]["codexErrorInfo"] == "internalServerError"),
        "no final internalServerError notification: {errors:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reports_an_in_stream_failure_with_its_message() {
    let mock = json!({"rules": [{"reply": {"error": {"in_stream": true, "message": "scripted outage"}}}]});
    let Some(run) = run_codex(&CodexScript::new(mock, "Say hello.")).await else {
        return;
    };
    assert_eq!(run.finished_turn()["status"], "failed", "{}", run.describe());
    let errors = final_errors(&run);
    assert!(
        errors.iter().any(|e| strings(&e["error"]).iter().any(|s| s.contains("scripted outage"))),
        "no final error notification carrying the model's message: {errors:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Claude Code

/// The `result` line, which every completed turn has.
fn result(run: &ClaudeRun) -> &Value {
    run.result.as_ref().unwrap_or_else(|| panic!("no result line\n{}", run.describe()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_an_allowed_bash_call_against_the_mock() {
    let Some(run) = run_claude(&claude_script("bash-allowed")).await else {
        return;
    };
    let init = run.init.as_ref().expect("initialize was answered");
    assert!(init.is_object(), "initialize reply: {init}");
    assert_eq!(run.permission_requests.len(), 1, "exactly one can_use_tool expected: {:?}", run.permission_requests);
    assert_eq!(run.permission_requests[0]["tool_name"], "Bash");
    assert!(
        run.tool_results()
            .iter()
            .any(|b| b["is_error"] != true && strings(&b["content"]).iter().any(|s| s.contains(MARKER))),
        "no successful tool_result with {MARKER:?}\n{}",
        run.describe()
    );
    let result = result(&run);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(result["result"].as_str().is_some_and(|t| t.contains(MARKER)), "the final text lacks the output: {result}");
    assert!(model_calls(&run.model_requests).len() >= 2, "{}", run.describe());
    assert!(model_saw(&run.model_requests, MARKER), "the tool_result never reached the model\n{}", run.describe());
    assert!(run.model_requests.iter().all(|r| r.status < 400), "the mock answered an error\n{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_reports_a_denied_bash_call_to_the_model() {
    let script = claude_script("bash-denied");
    let Some(run) = run_claude(&script).await else {
        return;
    };
    let claude::Permission::Deny(why) = &script.permission else {
        panic!("the bash-denied scenario denies");
    };
    assert_eq!(run.permission_requests.len(), 1, "{}", run.describe());
    assert!(
        run.tool_results().iter().any(|b| b["is_error"] == true && strings(&b["content"]).contains(&why.as_str())),
        "no error tool_result carrying the denial\n{}",
        run.describe()
    );
    let result = result(&run);
    assert_eq!(result["is_error"], false, "a denial is not a failed turn: {result}");
    assert_eq!(result["permission_denials"][0]["tool_name"], "Bash", "{result}");
    assert!(!model_saw(&run.model_requests, MARKER), "a denied command ran");
    assert!(model_saw(&run.model_requests, why), "the model never heard of the denial\n{}", run.describe());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_resumes_a_session_in_a_new_process() {
    let script = claude_script("resume");
    let Some(run) = run_claude(&script).await else {
        return;
    };
    let first = script.resume_after.as_deref().expect("a resume script has a first turn");
    assert!(model_saw(&run.model_requests, first), "the resumed history lacks the first turn\n{}", run.describe());
    assert_eq!(result(&run)["is_error"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_streams_thinking_then_text_as_partial_messages() {
    let Some(run) = run_claude(&claude_script("partial-messages")).await else {
        return;
    };
    let deltas: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "stream_event" && l["event"]["type"] == "content_block_delta")
        .filter_map(|l| l["event"]["delta"]["type"].as_str())
        .collect();
    assert!(deltas.contains(&"thinking_delta") && deltas.contains(&"text_delta"), "deltas: {deltas:?}");
    let blocks: Vec<&str> = run
        .lines
        .iter()
        .filter(|l| l["type"] == "assistant")
        .flat_map(|l| l["message"]["content"].as_array().into_iter().flatten())
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(blocks, ["thinking", "text"], "{}", run.describe());
    assert_eq!(result(&run)["is_error"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_reports_a_model_error_as_an_error_result() {
    let mock = json!({"rules": [{"reply": {"error": {"status": 500, "message": "scripted outage"}}}]});
    let Some(run) = run_claude(&ClaudeScript::new(mock, "Say hello.")).await else {
        return;
    };
    let result = result(&run);
    // An API failure may come as subtype "success": `is_error` is the authoritative flag.
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["result"].as_str().is_some_and(|t| t.contains("scripted outage")),
        "the result does not carry the model's message: {result}"
    );
    assert_eq!(model_calls(&run.model_requests).len(), 1, "Claude retried despite x-should-retry: false");
}
