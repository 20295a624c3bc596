//! The real end to end (issue #5): `openclaw agent exec` (openclaw 2026.9.6 on Node 24) loads the
//! plugin from `openclaw-plugin/`, selects the clawbridge Codex harness for a model whose
//! `agentRuntime.id` names it, and runs a turn through `clawbridge serve` → the real codex
//! app-server 0.169.0 → the scripted mock model, which runs one command. Then OpenClaw's own SQLite
//! transcript is read back, and a second turn on the same OpenClaw session
//! (`openclaw agent --local --session-id …`, a new OpenClaw process and a new bridge) must resume
//! the same Codex thread.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clawbridge_fixtures::peers::codex::{MARKER, command_mock, config_toml};
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, repo_root, start_mock};
use serde_json::{Value, json};

/// One OpenClaw run: start-up alone takes 15-18 s on the development machine.
const RUN_LIMIT: Duration = Duration::from_secs(240);

const FIRST_PROMPT: &str = "Please run the live test command.";
const SECOND_PROMPT: &str = "Say hello again.";
const SECOND_ANSWER: &str = "Hello again from the mock.";
const HARNESS: &str = "clawbridge-codex";

/// Reads every transcript row of the agent's SQLite store as JSON lines (node:sqlite + zstd).
const DUMP_TRANSCRIPT: &str = r#"
import { DatabaseSync } from "node:sqlite";
import { zstdDecompressSync } from "node:zlib";
const db = new DatabaseSync(process.argv[2], { readOnly: true });
const rows = db.prepare("select session_id, seq, event_json, event_zstd from transcript_events order by session_id, seq").all();
for (const r of rows) {
  const text = r.event_json ?? zstdDecompressSync(Buffer.from(r.event_zstd)).toString("utf8");
  console.log(JSON.stringify({ sessionId: r.session_id, seq: r.seq, event: JSON.parse(text) }));
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openclaw_runs_a_codex_turn_through_the_plugin_and_the_next_turn_resumes_the_thread() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let Some(node) = peer_or_skip("node") else { return };
    let Some(openclaw) = peer_or_skip("openclaw") else { return };

    let sandbox = Sandbox::new().unwrap();
    let mut scenario = command_mock(false);
    scenario["default"] = json!({"text": SECOND_ANSWER});
    let mock = start_mock(&scenario).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let oc_state = sandbox.root().join("openclaw-state");
    let bridge_state = sandbox.root().join("clawbridge-state");
    std::fs::create_dir_all(&oc_state).unwrap();
    let config_path = sandbox.root().join("openclaw.json");
    std::fs::write(&config_path, openclaw_config(&sandbox, &mock.base_url(), &codex, &bridge_state).to_string())
        .unwrap();
    let _temp_root = TempRootGuard::snapshot();

    let run = OpenClaw { node: &node, openclaw: &openclaw, sandbox: &sandbox, state: &oc_state, config: &config_path };

    // Turn 1: agent exec.
    let exec = run
        .json(&[
            "agent",
            "exec",
            "--config",
            &config_path.display().to_string(),
            "--state-dir",
            &oc_state.display().to_string(),
            "--cwd",
            &sandbox.work().display().to_string(),
            "--json",
            "--timeout",
            "120",
            FIRST_PROMPT,
        ])
        .await;
    let describe =
        || format!("exec: {exec:#}\nmock saw:\n{}", clawbridge_fixtures::peers::describe_requests(&mock.requests()));
    assert_eq!(exec["ok"], true, "{}", describe());
    assert!(exec["final"].as_str().unwrap_or("").contains(MARKER), "{}", describe());
    let session_id = exec["sessionId"].as_str().expect("a session id").to_string();

    let rows = transcript(&node, &oc_state, &session_id).await;
    let messages: Vec<&Value> = rows.iter().filter(|e| e["type"] == "message").map(|e| &e["message"]).collect();
    let summary = || serde_json::to_string_pretty(&messages).unwrap();
    let users: Vec<_> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "{}", summary());
    assert_eq!(text_of(users[0]), FIRST_PROMPT);
    let calls: Vec<_> = messages.iter().filter(|m| m["role"] == "assistant" && tool_calls(m).len() == 1).collect();
    assert_eq!(calls.len(), 1, "one assistant row with the toolCall: {}", summary());
    let call = &tool_calls(calls[0])[0];
    let tool_name = call["name"].as_str().expect("a tool name").to_string();
    let results: Vec<_> = messages.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), 1, "{}", summary());
    assert_eq!(results[0]["toolCallId"], call["id"]);
    assert!(text_of(results[0]).contains(MARKER), "the command really ran: {}", summary());
    let finals: Vec<_> = messages
        .iter()
        .filter(|m| m["role"] == "assistant" && tool_calls(m).is_empty() && !text_of(m).is_empty())
        .collect();
    assert_eq!(finals.len(), 1, "{}", summary());
    assert!(text_of(finals[0]).contains(MARKER));
    assert_eq!(messages.len(), 4, "user, toolCall, toolResult, answer and nothing else: {}", summary());
    let keys: BTreeSet<&str> = messages.iter().filter_map(|m| m["idempotencyKey"].as_str()).collect();
    assert_eq!(keys.len(), 4, "every row keyed, no key twice: {}", summary());

    // observeToolTerminal reached OpenClaw: its tool summary names the tool.
    let tools = &exec["toolSummary"];
    assert_eq!(tools["calls"], 1, "{}", describe());
    assert_eq!(tools["tools"], json!([tool_name]), "{}", describe());
    assert_eq!(tools["failures"], 0, "{}", describe());
    // attemptUsage reached the host (the mock's scripted token counts, summed over both requests).
    assert!(exec["usage"]["total"].as_u64().unwrap_or(0) > 0, "{}", describe());

    let thread = bound_thread(&bridge_state);
    wait_until_gone(&bridge_state).await;
    let model_requests_before = mock.model_requests().len();

    // Turn 2: a new OpenClaw process (and with it a new bridge) on the same session.
    let second = run
        .json(&["agent", "--local", "--agent", "main", "--session-id", &session_id, "-m", SECOND_PROMPT, "--json"])
        .await;
    let payload_text = second["payloads"][0]["text"].as_str().unwrap_or("");
    assert_eq!(payload_text, SECOND_ANSWER, "{second:#}");
    let meta = &second["meta"]["agentMeta"];
    assert_eq!(meta["sessionId"], session_id.as_str(), "{second:#}");
    assert_eq!(meta["agentHarnessId"], HARNESS, "{second:#}");
    assert_eq!(bound_thread(&bridge_state), thread, "the session is still bound to the same Codex thread");
    // The resumed thread carries turn 1: the model saw the first prompt and answer again.
    let resumed = mock.model_requests();
    let turn2 = &resumed[model_requests_before..];
    assert_eq!(turn2.len(), 1, "{}", clawbridge_fixtures::peers::describe_requests(&resumed));
    let input = turn2[0].body["input"].to_string();
    assert!(input.contains(FIRST_PROMPT) && input.contains(MARKER) && input.contains(SECOND_PROMPT), "{input}");

    let rows = transcript(&node, &oc_state, &session_id).await;
    let messages: Vec<&Value> = rows.iter().filter(|e| e["type"] == "message").map(|e| &e["message"]).collect();
    assert_eq!(
        messages.iter().filter(|m| m["role"] == "user").count(),
        2,
        "{}",
        serde_json::to_string_pretty(&messages).unwrap()
    );
    assert_eq!(messages.iter().filter(|m| text_of(m) == SECOND_ANSWER).count(), 1);
    assert_eq!(messages.len(), 6);
    wait_until_gone(&bridge_state).await;
}

/// OpenClaw's config: the plugin loaded from the checkout, the mock provider, and a model whose
/// runtime is the clawbridge Codex harness.
fn openclaw_config(sandbox: &Sandbox, mock_url: &str, codex: &Path, bridge_state: &Path) -> Value {
    json!({
        "logging": {"file": sandbox.root().join("openclaw.log")},
        "plugins": {
            "load": {"paths": [repo_root().join("openclaw-plugin")]},
            "entries": {"clawbridge": {"enabled": true, "config": {
                "command": env!("CARGO_BIN_EXE_clawbridge"),
                "env": {
                    "CODEX_HOME": sandbox.codex_home(),
                    "CLAWBRIDGE_CODEX_BIN": codex,
                    "CLAWBRIDGE_STATE_DIR": bridge_state,
                    "CLAWBRIDGE_LOG": "info"
                },
                "harnesses": [HARNESS]
            }}}
        },
        "agents": {"defaults": {
            "workspace": sandbox.work(),
            "model": {"primary": "mock/mock-model"},
            "models": {"mock/mock-model": {"alias": "Mock", "agentRuntime": {"id": HARNESS}}}
        }},
        "models": {"mode": "merge", "providers": {"mock": {
            // Never called: the harness replaces the transport. OpenClaw still needs the provider.
            "baseUrl": format!("{mock_url}/v1"), "apiKey": "mock-local", "api": "openai-completions",
            "models": [{"id": "mock-model", "name": "Mock", "reasoning": false, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 128000, "maxTokens": 4096}]
        }}}
    })
}

/// How to run the OpenClaw CLI in the sandbox.
struct OpenClaw<'a> {
    node: &'a Path,
    openclaw: &'a Path,
    sandbox: &'a Sandbox,
    state: &'a Path,
    config: &'a Path,
}

impl OpenClaw<'_> {
    /// Runs `openclaw <args>` and parses its JSON output; panics with stdout and stderr otherwise.
    async fn json(&self, args: &[&str]) -> Value {
        let node_dir = self.node.parent().expect("node's directory");
        let path = std::env::join_paths(
            std::iter::once(node_dir.to_path_buf())
                .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
        )
        .unwrap();
        let mut command = tokio::process::Command::new(self.node);
        command
            .arg(self.openclaw)
            .args(args)
            .current_dir(self.sandbox.work())
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.sandbox.home())
            .env("TMPDIR", self.sandbox.tmp())
            .env("LANG", "C.UTF-8")
            .env("TZ", "UTC")
            .env("NO_COLOR", "1")
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("OPENCLAW_STATE_DIR", self.state)
            .env("OPENCLAW_CONFIG_PATH", self.config)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started = std::time::Instant::now();
        let output = tokio::time::timeout(RUN_LIMIT, command.output())
            .await
            .unwrap_or_else(|_| panic!("openclaw {args:?} did not finish within {RUN_LIMIT:?}"))
            .expect("openclaw runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        eprintln!("openclaw {} took {:.1?} ({})", args[..2].join(" "), started.elapsed(), output.status);
        let parsed: Option<Value> = serde_json::from_str(stdout.trim()).ok().or_else(|| {
            // Tolerate log lines before the JSON document.
            stdout.find("\n{").and_then(|at| serde_json::from_str(stdout[at..].trim()).ok())
        });
        match parsed {
            Some(value) if output.status.success() => value,
            _ => panic!("openclaw {args:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status),
        }
    }
}

/// The session's transcript entries, read from OpenClaw's SQLite store.
async fn transcript(node: &Path, state: &Path, session_id: &str) -> Vec<Value> {
    let db = state.join("agents/main/agent/openclaw-agent.sqlite");
    let script = state.join("dump-transcript.mjs");
    std::fs::write(&script, DUMP_TRANSCRIPT).unwrap();
    let output = tokio::process::Command::new(node).arg(&script).arg(&db).output().await.expect("node runs");
    assert!(output.status.success(), "reading {}: {}", db.display(), String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON row"))
        .filter(|row| row["sessionId"] == session_id)
        .map(|row| row["event"].clone())
        .collect()
}

fn tool_calls(message: &Value) -> Vec<Value> {
    message["content"].as_array().into_iter().flatten().filter(|b| b["type"] == "toolCall").cloned().collect()
}

/// The text of a message: a string content, or its text blocks joined.
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The Codex thread the bridge bound the (only) session to.
fn bound_thread(bridge_state: &Path) -> String {
    let dir = bridge_state.join("serve/bindings");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(files.len(), 1, "one bound session: {files:?}");
    let binding: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(binding["backend"], HARNESS, "{binding}");
    binding["nativeSessionId"].as_str().expect("a thread id").to_string()
}

/// Waits until no process runs with this bridge state dir: the bridge and its Codex children did
/// not outlive the OpenClaw process that started them.
async fn wait_until_gone(bridge_state: &Path) {
    let needle = format!("CLAWBRIDGE_STATE_DIR={}\0", bridge_state.display());
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<i32> = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')));
                live && String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default())
                    .contains(&needle)
            })
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "processes outlived OpenClaw: {alive:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// OpenClaw writes a daily log (`openclaw/`) and lock files (`openclaw-state-locks-<uid>/`) under
/// the system temp root whatever `TMPDIR` says. This remembers what was there and removes what the
/// test added, on success or panic.
struct TempRootGuard {
    /// Each directory, whether it existed, and its entries before the test.
    before: Vec<(PathBuf, bool, BTreeSet<PathBuf>)>,
}

impl TempRootGuard {
    fn snapshot() -> Self {
        use std::os::unix::fs::MetadataExt;
        // The owner of /proc/self is this process's uid (no libc call needed).
        let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).unwrap_or_default();
        let mut roots = vec![PathBuf::from("/tmp")];
        if !roots.contains(&std::env::temp_dir()) {
            roots.push(std::env::temp_dir());
        }
        let before = roots
            .iter()
            .flat_map(|root| [root.join("openclaw"), root.join(format!("openclaw-state-locks-{uid}"))])
            .map(|dir| {
                let existed = dir.is_dir();
                let entries = entries(&dir);
                (dir, existed, entries)
            })
            .collect();
        Self { before }
    }
}

impl Drop for TempRootGuard {
    fn drop(&mut self) {
        for (dir, existed, before) in &self.before {
            for entry in entries(dir).difference(before) {
                let _ = std::fs::remove_file(entry);
            }
            if !existed {
                // Only if empty: another OpenClaw may have started using it meanwhile.
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

fn entries(dir: &Path) -> BTreeSet<PathBuf> {
    std::fs::read_dir(dir).into_iter().flatten().flatten().map(|e| e.path()).collect()
}
