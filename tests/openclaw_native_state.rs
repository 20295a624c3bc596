//! The native side's own state through the real OpenClaw (openclaw 2026.9.6 on Node 24), the real
//! codex app-server 0.169.0 and the scripted mock model (issue #13, points 5 and 6): OpenClaw's
//! `/compact` runs Codex's own compactor on the session's bound thread (the mock model gets the
//! compaction request, the next turn resumes the compacted thread), and OpenClaw's model list shows
//! the models Codex's `model/list` names, and a server of OpenClaw's `mcp.servers` is one Codex can
//! call (the mock model calls its tool, its answer comes back in the next request). The same for
//! Claude Code 2.1.328 (its MCP servers through `--mcp-config`, its models from its `initialize`
//! answer), and for both the gateway's tool inventory (`tools.effective`) shows the user's server's
//! tool through the harness's `loadMcpToolCatalog`. One OpenClaw home and one native session per
//! test serve every assertion, to keep the CLI start-ups (15-18 s each) few.

mod common;

use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{Gateway, free_port, with_gateway};
use clawbridge_fixtures::peers::{Sandbox, describe_requests, start_mock};
use common::openclaw::{OpenClawPeers, assert_exec_ok, bridge_bin};
use std::collections::BTreeSet;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const FIRST_PROMPT: &str = "Remember the word kumquat.";
const FIRST_ANSWER: &str = "I will remember kumquat.";
const SUMMARY: &str = "SUMMARY-OF-THE-KUMQUAT-CONVERSATION";
const LAST_PROMPT: &str = "Which word did I ask you to remember?";
const LAST_ANSWER: &str = "You asked me to remember kumquat.";
/// What the test's MCP server answers a `lookup` call with (followed by the word it was given).
const PROBE_ANSWER: &str = "PROBE-ANSWER-";

/// A tiny stdio MCP server (newline-delimited JSON-RPC): one read-only tool, `lookup {word}`, which
/// answers `PROBE-ANSWER-<word>`; every request it gets is appended to the log file in argv[2].
const MCP_SERVER: &str = r#"
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
const log = process.argv[2];
const send = (message) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  let request;
  try { request = JSON.parse(line); } catch { return; }
  appendFileSync(log, JSON.stringify({ method: request.method, params: request.params }) + "\n");
  if (request.id === undefined) return;
  switch (request.method) {
    case "initialize":
      return send({ id: request.id, result: { protocolVersion: request.params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} }, serverInfo: { name: "probe", version: "1.0.0" } } });
    case "tools/list":
      return send({ id: request.id, result: { tools: [{ name: "lookup", description: "Looks a word up.",
        inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
        annotations: { readOnlyHint: true } }] } });
    case "tools/call":
      return send({ id: request.id, result: { content: [{ type: "text",
        text: "PROBE-ANSWER-" + (request.params?.arguments?.word ?? "?") }] } });
    case "ping":
      return send({ id: request.id, result: {} });
    default:
      return send({ id: request.id, error: { code: -32601, message: "no such method" } });
  }
});
"#;

/// The user's MCP server in OpenClaw's config: the probe server above, its calls logged to
/// `<sandbox>/probe-mcp.log`; its tools need no approval (`codex.defaultToolsApprovalMode`, which
/// the bridge also applies to Claude Code as an `--allowedTools` rule).
fn with_probe_server(mut config: Value, node: &std::path::Path, sandbox: &Sandbox) -> (Value, std::path::PathBuf) {
    let server = sandbox.root().join("probe-mcp.mjs");
    let server_log = sandbox.root().join("probe-mcp.log");
    std::fs::write(&server, MCP_SERVER).unwrap();
    config["mcp"] = json!({"servers": {"probe": {
        "command": node, "args": [server, server_log],
        "codex": {"defaultToolsApprovalMode": "approve"}
    }}});
    (config, server_log)
}

/// The gateway's `tools.effective` for `key` (what the Control UI's tool inventory shows), and the
/// MCP tools in it as `(server, tool)` pairs.
async fn effective_mcp_tools(run: &OpenClawHome<'_>, key: &str) -> (Value, Vec<(String, String)>) {
    let (status, stdout, stderr) = run
        .output(&["gateway", "call", "tools.effective", "--params", &json!({"sessionKey": key}).to_string(), "--json"])
        .await;
    assert!(status.success(), "tools.effective failed:\n{stdout}\n{stderr}");
    let answer = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).expect("a JSON answer");
    let groups = answer["groups"].as_array().cloned().unwrap_or_default();
    let summary: Vec<String> =
        groups.iter().map(|g| format!("{}: {}", g["id"], g["tools"].as_array().map_or(0, Vec::len))).collect();
    eprintln!("tools.effective of {key}: {summary:?}, notices {}", answer["notices"]);
    let tools = groups
        .iter()
        .filter(|group| group["source"] == "mcp")
        .flat_map(|group| group["tools"].as_array().cloned().unwrap_or_default())
        .map(|tool| {
            let server = tool["mcpServer"].as_str().unwrap_or_default().to_string();
            (server, tool["mcpToolName"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    (answer, tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_compacts_natively_on_compact_and_the_model_list_shows_codex_models() {
    let Some((codex, peers)) = OpenClawPeers::with_peer("codex") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            // Turn 1 calls the MCP server's tool (Codex offers a server's tools as one `namespace`
            // tool, `mcp__<server>`), then answers quoting what the tool returned.
            {"when": {"api": "responses", "last_input_is_tool_result": true},
             "reply": {"text": FIRST_ANSWER, "text_quoting_tool_result": true}},
            {"when": {"api": "responses", "last_user_text_contains": "remember the word", "tool_offered": "mcp__probe"},
             "reply": {"tool_call": {"name": "lookup", "namespace": "mcp__probe", "arguments": {"word": "kumquat"}}}},
            {"when": {"api": "responses", "last_user_text_contains": "which word"},
             "reply": {"text": LAST_ANSWER}}
        ],
        // Codex's compaction request (a summarization prompt over the thread) gets this.
        "default": {"text": SUMMARY}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Codex(codex), &mock);
    let (config, server_log) = with_probe_server(run.config(), &peers.node, &sandbox);
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();

    // Turn 1 binds the session to a Codex thread, and calls the MCP server's tool.
    let exec = run.exec(FIRST_PROMPT, &[]).await;
    assert_exec_ok(&exec, &mock);
    let calls = std::fs::read_to_string(&server_log).unwrap_or_default();
    assert!(
        calls.lines().any(|l| l.contains("\"tools/call\"") && l.contains("kumquat")),
        "the MCP server ran the tool: {calls}\n{}",
        describe_requests(&mock.requests())
    );
    let requests = mock.model_requests();
    let tool_result = format!("{PROBE_ANSWER}kumquat");
    assert!(
        requests.iter().any(|r| r.body["input"].to_string().contains(&tool_result)),
        "the tool's answer came back to the model: {}",
        describe_requests(&requests)
    );
    assert!(exec["final"].as_str().unwrap_or("").contains(&tool_result), "{exec:#}");
    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();
    let thread = run.bound_native_session();
    run.wait_until_gone().await;
    let before = mock.model_requests().len();
    let rows_before = run.messages(&session_id).await.len();

    // `openclaw sessions compact` (the gateway's `sessions.compact`, what `/compact` runs; the
    // CLI's `--message` refuses slash commands): core calls the harness's compact(), the bridge
    // runs Codex's `thread/compact/start` on the bound thread.
    let gateway = Gateway::start(&run, port).await;
    let key = format!("agent:main:explicit:{session_id}");
    let (status, stdout, stderr) = run.output(&["sessions", "compact", &key, "--json"]).await;
    assert!(status.success(), "compact failed:\n{stdout}\n{stderr}");
    let answer = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).expect("a JSON answer");
    assert_eq!(answer["ok"], true, "{answer:#}");
    assert_eq!(answer["compacted"], true, "{answer:#}");
    assert_eq!(answer["result"]["details"]["nativeSessionId"], thread.as_str(), "the bound thread: {answer:#}");
    // The gateway's tool inventory asks the harness's loadMcpToolCatalog: the bridge resumes the
    // bound thread with the user's servers and lists Codex's `mcpServerStatus/list`.
    let (inventory, mcp_tools) = effective_mcp_tools(&run, &key).await;
    let listed = format!("clawbridge-codex MCP tool catalog of {session_id}: 1 tools");
    assert!(
        gateway.output().contains(&listed),
        "core asked the native MCP catalog and got the tool:\n{}",
        gateway.output()
    );
    assert_eq!(
        mcp_tools,
        [("probe".to_string(), "lookup".to_string())],
        "the inventory shows the user's server's tool: {inventory:#}"
    );
    gateway.stop().await;
    let requests = mock.model_requests();
    let compaction: Vec<_> = requests[before..].iter().collect();
    assert_eq!(compaction.len(), 1, "one native compaction request: {}", describe_requests(&requests));
    let body = compaction[0].body.to_string();
    assert!(body.contains(FIRST_PROMPT) && body.contains(FIRST_ANSWER), "it summarizes the thread: {body}");
    run.wait_until_gone().await;

    // Core counts a harness's compaction on the session entry and writes no transcript entry for
    // it; the plugin adds one (docs/peers/openclaw.md#compaction-in-the-transcript), and turn 1's
    // rows stay as they were.
    let messages = run.messages(&session_id).await;
    assert_eq!(messages.len(), rows_before + 1, "turn 1's rows and the compaction's entry: {messages:#?}");
    assert_eq!(messages[rows_before]["customType"], "openclaw.context-compaction", "{messages:#?}");

    // The next turn resumes the same, compacted thread: the model sees the summary.
    let last = run.next_turn(&session_id, LAST_PROMPT).await;
    assert_eq!(last["payloads"][0]["text"], LAST_ANSWER, "{last:#}");
    assert_eq!(run.bound_native_session(), thread, "the compacted thread is still the session's");
    let requests = mock.model_requests();
    let input = requests.last().expect("the last turn's request").body["input"].to_string();
    assert!(input.contains(SUMMARY), "the model sees the compacted history: {input}");
    run.wait_until_gone().await;

    // The model list: with `--refresh` OpenClaw asks every harness's loadModelCatalog; the plugin
    // starts the bridge, whose `catalog/models` lists Codex's own `model/list`.
    let (status, stdout, stderr) = run.output(&["models", "list", "--all", "--refresh", "--json"]).await;
    assert!(status.success(), "models list failed:\n{stdout}\n{stderr}");
    assert!(
        stderr.contains("clawbridge: bridge") && stderr.contains("started"),
        "the catalog asked the bridge: {stderr}"
    );
    let listed = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).expect("a JSON list");
    let rows = listed["models"].as_array().cloned().unwrap_or_default();
    let listed_keys: BTreeSet<String> = rows
        .iter()
        .filter_map(|row| row["key"].as_str())
        .filter(|k| k.starts_with("openai/"))
        .map(str::to_string)
        .collect();
    // What Codex itself lists, asked through the bridge directly with the same environment.
    let native = bridge_catalog(&run).await;
    assert!(!native.is_empty(), "codex lists models");
    let native_keys: BTreeSet<String> = native.iter().map(|id| format!("openai/{id}")).collect();
    assert_eq!(listed_keys, native_keys, "OpenClaw's openai rows are Codex's models: {listed:#}");
    for row in rows.iter().filter(|row| row["key"].as_str().is_some_and(|k| native_keys.contains(k))) {
        assert_eq!(row["available"], true, "readiness from the catalog's cache: {row}");
    }
    run.wait_until_gone().await;
}

/// The model ids the bridge's `catalog/models` answers for the home's harness, run as the plugin
/// runs it (the same environment), without OpenClaw.
async fn bridge_catalog(run: &OpenClawHome<'_>) -> Vec<String> {
    bridge_catalog_models(run).await.iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect()
}

/// The models (as JSON) the bridge's `catalog/models` answers for the home's harness, as
/// [`bridge_catalog`] asks.
async fn bridge_catalog_models(run: &OpenClawHome<'_>) -> Vec<Value> {
    let harness = run.harness.id();
    let mut command = tokio::process::Command::new(bridge_bin());
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", run.sandbox.home())
        .env("TMPDIR", run.sandbox.tmp())
        .envs(clawbridge_fixtures::no_user_config())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    for (name, value) in run.bridge_env().as_object().expect("an env object") {
        command.env(name, value.as_str().map_or_else(|| value.to_string(), str::to_string));
    }
    let mut child = command.spawn().expect("clawbridge serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION,
               "host": {"name": "test", "version": "0"}, "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "catalog/models", "params": {"harnessId": harness}}),
    ];
    for line in lines {
        stdin.write_all(format!("{line}\n").as_bytes()).await.expect("write");
    }
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let answer = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(line) = out.next_line().await.expect("read") {
            let value: Value = serde_json::from_str(&line).expect("JSON");
            if value["id"] == 2 {
                return value;
            }
        }
        panic!("the bridge ended without answering catalog/models");
    })
    .await
    .expect("catalog/models answered");
    drop(stdin);
    let _ = child.wait().await;
    answer["result"]["models"].as_array().cloned().unwrap_or_else(|| panic!("no models: {answer}"))
}

const CLAUDE_PROMPT: &str = "Please look up the word kumquat.";
const CLAUDE_ANSWER: &str = "I looked kumquat up.";

/// Claude Code with the user's MCP server (OpenClaw `mcp.servers` → the bridge's private
/// `--mcp-config` file): the mock model calls the server's tool through Claude Code and gets its
/// answer; the gateway's tool inventory (`tools.effective`) shows the tool through the harness's
/// `loadMcpToolCatalog` (Claude's `mcp_status`); OpenClaw's model list shows the models of Claude
/// Code's `initialize` answer as `anthropic/<id>` rows, ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_calls_the_users_mcp_server_and_the_inventories_show_its_tool_and_models() {
    let Some((claude, peers)) = OpenClawPeers::with_peer("claude") else { return };

    let sandbox = Sandbox::new().unwrap();
    let scenario = json!({
        "rules": [
            {"when": {"api": "messages", "last_input_is_tool_result": true},
             "reply": {"text": CLAUDE_ANSWER, "text_quoting_tool_result": true}},
            // Claude Code offers the server's tool as `mcp__<server>__<tool>`.
            {"when": {"api": "messages", "last_user_text_contains": "look up the word", "tool_offered": "mcp__probe__lookup"},
             "reply": {"tool_call": {"name": "mcp__probe__lookup", "arguments": {"word": "kumquat"}}}}
        ],
        "default": {"text": "Nothing to do."}
    });
    let mock = start_mock(&scenario).await.unwrap();
    let run = peers.home(&sandbox, Harness::Claude(claude), &mock);
    let (config, server_log) = with_probe_server(run.config(), &peers.node, &sandbox);
    let port = free_port();
    run.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();

    let exec = run.exec(CLAUDE_PROMPT, &[]).await;
    assert_exec_ok(&exec, &mock);
    let calls = std::fs::read_to_string(&server_log).unwrap_or_default();
    assert!(
        calls.lines().any(|l| l.contains("\"tools/call\"") && l.contains("kumquat")),
        "the MCP server ran the tool: {calls}\n{}",
        describe_requests(&mock.requests())
    );
    let tool_result = format!("{PROBE_ANSWER}kumquat");
    let requests = mock.model_requests();
    assert!(
        requests.iter().any(|r| r.body["messages"].to_string().contains(&tool_result)),
        "the tool's answer came back to the model: {}",
        describe_requests(&requests)
    );
    assert!(exec["final"].as_str().unwrap_or("").contains(&tool_result), "{exec:#}");
    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();
    let rows = run.messages(&session_id).await;
    assert!(
        rows.iter().any(|m| m["role"] == "toolResult" && m.to_string().contains(&tool_result)),
        "the transcript has the MCP tool's result: {rows:#?}"
    );
    // Only a keyed hash of the servers is kept: the binding names no server command or path.
    let binding = run.binding().to_string();
    assert!(!binding.contains("probe-mcp"), "{binding}");
    run.wait_until_gone().await;

    // The gateway's tool inventory asks the harness's loadMcpToolCatalog: a CLI of the bridge's
    // own with the user's servers answers `mcp_status`.
    let gateway = Gateway::start(&run, port).await;
    let key = format!("agent:main:explicit:{session_id}");
    let (inventory, mcp_tools) = effective_mcp_tools(&run, &key).await;
    let listed = format!("clawbridge-claude MCP tool catalog of {session_id}: 1 tools");
    assert!(gateway.output().contains(&listed), "core asked the native MCP catalog:\n{}", gateway.output());
    gateway.stop().await;
    assert_eq!(
        mcp_tools,
        [("probe".to_string(), "lookup".to_string())],
        "the inventory shows the user's server's tool: {inventory:#}"
    );
    run.wait_until_gone().await;

    // The model list: the plugin's loadModelCatalog asks `catalog/models`, which reads the model
    // set of Claude Code's `initialize` answer.
    let (status, stdout, stderr) = run.output(&["models", "list", "--all", "--refresh", "--json"]).await;
    assert!(status.success(), "models list failed:\n{stdout}\n{stderr}");
    let listed = clawbridge_fixtures::peers::openclaw::parse_json_output(&stdout).expect("a JSON list");
    let rows = listed["models"].as_array().cloned().unwrap_or_default();
    let native = bridge_catalog_models(&run).await;
    assert!(!native.is_empty(), "claude offers models");
    for model in &native {
        let key = format!("anthropic/{}", model["id"].as_str().expect("an id"));
        let row = rows.iter().find(|row| row["key"] == key.as_str());
        let row = row.unwrap_or_else(|| panic!("{key} is listed: {listed:#}"));
        assert_eq!(row["available"], true, "readiness from the catalog's cache: {row}");
        // The row is the harness's: named as Claude Code's own picker names it.
        assert_eq!(row["name"], model["displayName"], "{row}");
    }
    run.wait_until_gone().await;
}
