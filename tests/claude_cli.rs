//! `clawbridge run --backend claude` without the real CLI: the replay agent plays a recorded Claude
//! Code turn behind `--claude` (a wrapper script naming the recording), through the whole path —
//! version gate, handshake, turn, transcript, binding — and a second run on the same session, whose
//! CLI session file does not exist here, starts fresh and says why.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run(dir: &Path, claude: &Path, args: &[&str]) -> std::process::Output {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "claude", "--program"])
        .arg(claude)
        .args(args)
        .current_dir(&work)
        .env_clear()
        .envs(clawbridge_fixtures::no_user_config())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("CLAWBRIDGE_STATE_DIR", dir.join("state"))
        .output()
        .expect("clawbridge runs")
}

#[test]
fn a_replayed_claude_turn_runs_end_to_end_and_a_lost_session_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let claude = clawbridge_fixtures::replay_launcher(dir.path(), "claude", "plain-text.jsonl");

    let first = run(dir.path(), &claude, &["--session", "r1", "--json", "Say hello."]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&first.stdout);
    let events: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("JSONL")).collect();
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["terminal"]["kind"], "ok", "{stdout}");
    assert_eq!(result["assistantTexts"], serde_json::json!(["Hello from the mock model."]));
    let native = result["nativeSessionId"].as_str().unwrap().to_owned();
    let binding: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("state/sessions/r1/transcript.jsonl.binding.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(binding["backend"], "claude");
    assert_eq!(binding["nativeSessionId"], native.as_str());
    let transcript = std::fs::read_to_string(dir.path().join("state/sessions/r1/transcript.jsonl")).unwrap();
    let roles: Vec<String> = transcript
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["message"]["role"].as_str().unwrap_or("").to_string())
        .collect();
    // (Each replay names its turn with the recording's init uuid, so a second replay of the same
    // recording would be the same turn to the transcript: rows are checked after the first run.)
    assert_eq!(roles, ["user", "assistant"], "{transcript}");

    // The binding still holds, but the CLI's session file does not exist (a replay writes none).
    let second = run(dir.path(), &claude, &["--session", "r1", "Say hello."]);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("could not resume: the native session {native} has no session file")), "{stderr}");
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.starts_with("Hello from the mock model."), "{stdout}");
    assert!(stdout.lines().last().unwrap().starts_with("— ok · 0 tool call(s)"), "{stdout}");
}

/// `--json` is data, byte for byte, on a pipe too: an assistant text with DEL (which JSON leaves
/// unescaped) and a C1 control reaches stdout as the model wrote it, not stripped as a terminal
/// control would be.
#[test]
fn json_output_on_a_pipe_keeps_every_byte_of_the_text() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = std::fs::read_to_string(
        clawbridge_fixtures::peers::repo_root().join("fixtures/recordings/claude/plain-text.jsonl"),
    )
    .unwrap();
    assert!(recorded.contains("Hello from the mock model."));
    let text = "Hello \u{7f}from the \u{9b}mock model.";
    let escaped = serde_json::to_string(text).unwrap();
    let recording = dir.path().join("controls.jsonl");
    std::fs::write(&recording, recorded.replace("\"Hello from the mock model.\"", &escaped)).unwrap();
    let claude = clawbridge_fixtures::replay_launcher(dir.path(), "claude", recording.to_str().unwrap());

    let out = run(dir.path(), &claude, &["--session", "c1", "--json", "Say hello."]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 JSONL");
    let events: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("JSONL")).collect();
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["assistantTexts"], serde_json::json!([text]), "{stdout:?}");
    assert!(stdout.contains('\u{7f}'), "DEL is written as it is: {stdout:?}");
}
