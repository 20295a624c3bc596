//! `clawbridge run` against the real peers and the mock model: the person's view, the JSONL view, and
//! a second run on the same session resuming the same Codex thread / Claude session.

use std::process::Command;

use clawbridge_fixtures::peers::codex::config_toml;
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};
use serde_json::{Value, json};

fn run(sandbox: &Sandbox, state: &std::path::Path, codex: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .arg("run")
        .args(["--backend", "codex", "--program"])
        .arg(codex)
        .args(args)
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CODEX_HOME", sandbox.codex_home())
        .env("CLAWBRIDGE_STATE_DIR", state)
        .output()
        .expect("clawbridge runs")
}

fn result_line(out: &std::process::Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let line: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(line["type"], "result", "{stdout}");
    line["result"].clone()
}

// The mock model serves from this runtime while the CLI runs: it needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_on_the_same_session_resumes_the_codex_thread() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&json!({"default": {"text": "Hello from the mock model."}})).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let state = tempfile::tempdir().unwrap();

    let first = run(&sandbox, state.path(), &codex, &["--session", "s1", "--json", "Say hello."]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first = result_line(&first);
    assert_eq!(first["terminal"]["kind"], "ok");
    assert_eq!(first["assistantTexts"], json!(["Hello from the mock model."]));

    let second = run(&sandbox, state.path(), &codex, &["--session", "s1", "Say hello again."]);
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    assert!(stdout.starts_with("Hello from the mock model."), "the person's view streams the text: {stdout}");
    let thread = first["nativeSessionId"].as_str().unwrap();
    assert!(stdout.contains(&format!("thread {thread}")), "the same Codex thread was resumed: {stdout}");
    assert_eq!(mock.model_requests().len(), 2);

    let transcript = std::fs::read_to_string(state.path().join("sessions/s1/transcript.jsonl")).unwrap();
    let roles: Vec<String> = transcript
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["message"]["role"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "both turns, each row once: {transcript}");
}

fn run_claude(
    sandbox: &Sandbox,
    state: &std::path::Path,
    claude: &std::path::Path,
    base_url: &str,
    args: &[&str],
) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .arg("run")
        .args(["--backend", "claude"])
        .args(args)
        .current_dir(sandbox.work())
        .env_clear()
        .envs(clawbridge_fixtures::no_user_config())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CLAWBRIDGE_CLAUDE_BIN", claude)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env("ANTHROPIC_API_KEY", clawbridge_fixtures::peers::claude::API_KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAWBRIDGE_STATE_DIR", state)
        .output()
        .expect("clawbridge runs")
}

/// `run --backend claude` with the real claude: an approved command (JSONL view), then the same
/// session again resuming the same Claude session (the model sees the first exchange), then a run
/// whose model changed: not resumed, and the reason is named; `--deny` declines the command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_resume_the_same_claude_session_until_a_fingerprint_changes() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&clawbridge_fixtures::peers::claude::bash_mock()).await.unwrap();
    let state = tempfile::tempdir().unwrap();
    let base_url = mock.base_url();
    let marker = clawbridge_fixtures::peers::claude::MARKER;

    let first = run_claude(
        &sandbox,
        state.path(),
        &claude,
        &base_url,
        &["--session", "c1", "--json", "--approve", "Please run the live test command."],
    );
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first = result_line(&first);
    assert_eq!(first["terminal"]["kind"], "ok", "{first}");
    assert_eq!(first["tools"][0]["toolName"], "bash");
    assert!(std::fs::read_to_string(sandbox.work().join("out.txt")).unwrap_or_default().contains(marker));
    let native = first["nativeSessionId"].as_str().expect("a Claude session id").to_owned();

    let before = mock.model_requests().len();
    let second = run_claude(
        &sandbox,
        state.path(),
        &claude,
        &base_url,
        &["--session", "c1", "--program", &claude.display().to_string(), "Say hello again."],
    );
    let stdout = String::from_utf8_lossy(&second.stdout);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(!stderr.contains("not resuming") && !stderr.contains("could not resume"), "{stderr}");
    assert!(stdout.contains(&format!("claude session {native}")), "the same Claude session was resumed: {stdout}");
    assert!(
        mock.model_requests()[before..].iter().any(|r| r.body.to_string().contains(marker)),
        "the resumed CLI replayed the first exchange to the model"
    );

    let third = run_claude(
        &sandbox,
        state.path(),
        &claude,
        &base_url,
        &["--session", "c1", "--model", "claude-mock-other", "--deny", "Please run the live test command."],
    );
    let stdout = String::from_utf8_lossy(&third.stdout);
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(third.status.success(), "{stderr}");
    assert!(stderr.contains("not resuming: the model changed from (cli default) to claude-mock-other"), "{stderr}");
    assert!(!stdout.contains(&native), "a fresh Claude session: {stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("✗ bash")), "the denied command is shown: {stdout}");

    let transcript = std::fs::read_to_string(state.path().join("sessions/c1/transcript.jsonl")).unwrap();
    let roles: Vec<String> = transcript
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["message"]["role"].as_str().unwrap_or("").to_string())
        .collect();
    let turn = ["user", "assistant", "toolResult", "assistant"];
    let expected: Vec<&str> = turn.iter().chain(&["user", "assistant"]).chain(&turn).copied().collect();
    assert_eq!(roles, expected, "all three turns, each row once: {transcript}");
}
