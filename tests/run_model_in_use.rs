//! `clawbridge run` without `--model`: the transcript's rows name the model the native side said it
//! uses (Codex's `thread/start` answer, Claude Code's `system/init`), never `""` — replayed from
//! recordings of the real peers.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `clawbridge run --backend <backend>` against `recording` (played by the replay agent); returns
/// each transcript row's role and model.
fn rows_after_run(backend: &str, recording: &str, prompt: &str) -> Vec<(String, Option<String>)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let agent = dir.path().join(backend);
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let replay = clawbridge_fixtures::fixture_bin("replay-agent");
    let script = format!("#!/bin/sh\nexec {} {} \"$@\"\n", quote(&replay), quote(&repo.join(recording)));
    std::fs::write(&agent, script).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", backend, "--approve", "--session", "s", "--program"])
        .arg(&agent)
        .arg(prompt)
        .env("CLAWBRIDGE_STATE_DIR", dir.path().join("state"))
        .env_remove("CODEX_HOME")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let transcript = std::fs::read_to_string(dir.path().join("state/sessions/s/transcript.jsonl")).unwrap();
    transcript
        .lines()
        .skip(1)
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            let message = &row["message"];
            (message["role"].as_str().unwrap().to_owned(), message["model"].as_str().map(str::to_owned))
        })
        .collect()
}

/// The model the recording's peer announced (its first `"model"` of an answer or init line).
fn announced(recording: &str, line_has: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(recording)).unwrap();
    let line = text.lines().find(|l| l.contains(line_has)).expect("the recording announces its model");
    let at = line.find("\"model\":\"").unwrap() + "\"model\":\"".len();
    line[at..].split('"').next().unwrap().to_owned()
}

fn assistant_models(rows: &[(String, Option<String>)]) -> Vec<Option<String>> {
    rows.iter().filter(|(role, _)| role == "assistant").map(|(_, model)| model.clone()).collect()
}

#[test]
fn codex_rows_name_the_model_of_the_thread_start_answer() {
    let recording = "fixtures/recordings/demo/codex-demo.jsonl";
    let rows = rows_after_run("codex", recording, "list the files");
    let model = announced(recording, "\"id\":2,\"result\"");
    assert!(!model.is_empty());
    let models = assistant_models(&rows);
    assert!(!models.is_empty(), "{rows:?}");
    assert!(models.iter().all(|m| m.as_deref() == Some(model.as_str())), "{rows:?}");
}

#[test]
fn claude_rows_name_the_model_of_system_init() {
    let recording = "fixtures/recordings/claude/plain-text.jsonl";
    let rows = rows_after_run("claude", recording, "Say hello.");
    let model = announced(recording, "\"subtype\":\"init\"");
    assert!(!model.is_empty());
    let models = assistant_models(&rows);
    assert!(!models.is_empty(), "{rows:?}");
    assert!(models.iter().all(|m| m.as_deref() == Some(model.as_str())), "{rows:?}");
}
