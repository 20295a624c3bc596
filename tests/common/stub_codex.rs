//! A scripted Codex app-server for `clawbridge run` tests (tests/run_interrupt.rs,
//! tests/terminal_view.rs): the fake agent in the Codex dialect, passing the version gate, playing
//! a `--script` plan (fixtures/src/bin/fake_agent.rs), behind a launcher that records its pid.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The thread every stub plays.
pub const THREAD: &str = "th-1";
/// The turn every stub plays.
pub const TURN: &str = "tu-1";

/// `text` as one shell word.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The running turn's JSON (`turn/start` answer and `turn/started`).
pub fn running_turn() -> Value {
    json!({"id": TURN, "items": [], "status": "inProgress", "error": null})
}

/// A plan answering the handshake's `thread/start` and `turn/start`; `after_turn_start` are the
/// steps that follow the turn's start (its `turn/started` comes first), `more` more `after` entries.
pub fn plan(after_turn_start: Vec<Value>, more: Value) -> Value {
    let turn = running_turn();
    let mut steps = vec![json!({"send": {"method": "turn/started", "params": {"threadId": THREAD, "turn": turn}}})];
    steps.extend(after_turn_start);
    let mut after = json!({"turn/start": steps});
    if let (Some(after), Some(more)) = (after.as_object_mut(), more.as_object()) {
        after.extend(more.clone());
    }
    json!({
        "answers": {"thread/start": {"thread": {"id": THREAD, "model": "stub-model", "status": {"type": "idle"}, "turns": []},
                                     "model": "stub-model"},
                    "turn/start": {"turn": turn}},
        "after": after
    })
}

/// Writes the launcher `dir/codex` playing `plan` with the fake agent's `flags`; its pid goes to
/// `dir/codex.pid` when it starts.
pub fn stub_codex(dir: &Path, plan: &Value, flags: &[&str]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("codex-plan.json");
    std::fs::write(&script, plan.to_string()).unwrap();
    let fake = clawbridge_fixtures::fixture_bin("fake-agent");
    let launcher = dir.join("codex");
    let flags: Vec<String> = flags.iter().map(|flag| shell_quote(flag)).collect();
    let text = format!(
        "#!/bin/sh\necho $$ > {}\nexec {} --dialect codex --user-agent 'clawbridge/0.169.0 (stub) dumb (clawbridge; 0.1.0)' {} --script {}\n",
        shell_quote(&dir.join("codex.pid").display().to_string()),
        shell_quote(&fake.display().to_string()),
        flags.join(" "),
        shell_quote(&script.display().to_string())
    );
    std::fs::write(&launcher, text).unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    launcher
}

/// The pid the launcher in `dir` recorded.
pub fn stub_pid(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("codex.pid")).unwrap().trim().parse().unwrap()
}

/// Whether `pid` runs (a zombie does not: its parent has exited and init reaps it).
pub fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}
