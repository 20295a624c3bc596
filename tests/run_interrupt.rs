//! Ctrl-C during `clawbridge run`, against a Codex that ignores the interrupt (and SIGTERM): the
//! first SIGINT asks it to interrupt, the second stops it now — the turn ends because its process
//! is gone, not because the interrupt grace ran out — and the run exits 130 with nothing left.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

/// Only a hang reaches it; nothing here is timed.
const PATIENCE: Duration = Duration::from_secs(90);

/// A Codex app-server that starts the turn and then never ends it: `turn/interrupt` is neither
/// answered nor acted on, and SIGTERM is ignored. Its pid goes to `pid_file`.
fn stubborn_codex(dir: &Path, pid_file: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("stubborn.json");
    let thread = json!({"id": "th-1", "cwd": dir, "model": "stub-model", "status": {"type": "idle"}, "turns": []});
    let turn = json!({"id": "tu-1", "items": [], "status": "inProgress", "error": null});
    let plan = json!({
        "answers": {"thread/start": {"thread": thread, "model": "stub-model"}, "turn/start": {"turn": turn}},
        "after": {
            "turn/start": [{"send": {"method": "turn/started", "params": {"threadId": "th-1", "turn": turn}}}],
            "turn/interrupt": [{"stderr": "stubborn: ignoring the interrupt"}]
        }
    });
    std::fs::write(&script, plan.to_string()).unwrap();
    let fake = clawbridge_fixtures::fixture_bin("fake-agent");
    let launcher = dir.join("codex");
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec {} --dialect codex --user-agent 'clawbridge/0.169.0 (stub) dumb (clawbridge; 0.1.0)' --ignore-sigterm --script {}\n",
            quote(pid_file),
            quote(&fake),
            quote(&script)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    launcher
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for this purpose (its parent, the bridge, has exited and init reaps it).
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

#[test]
fn a_second_ctrl_c_stops_an_agent_that_ignores_the_interrupt_and_the_run_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("agent.pid");
    let codex = stubborn_codex(dir.path(), &pid_file);
    let mut run = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "codex", "--json", "--deny", "--program"])
        .arg(&codex)
        .arg("wait forever")
        .env("CLAWBRIDGE_STATE_DIR", dir.path().join("state"))
        .env_remove("CODEX_HOME")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let bridge = Pid::from_raw(run.id() as i32);
    let mut stdout = BufReader::new(run.stdout.take().unwrap());
    let stderr = run.stderr.take().unwrap();

    // The turn runs: the agent's `turn/started` came through.
    let mut line = String::new();
    let started = Instant::now();
    while !line.contains("\"turnStarted\"") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the run ended before its turn started");
        assert!(started.elapsed() < PATIENCE, "no turn started");
    }
    let agent: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(alive(agent));

    // Stderr line by line, so the second Ctrl-C waits until the first one was taken.
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    let stderr_reader = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line.clone());
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    kill(bridge, Signal::SIGINT).unwrap();
    loop {
        let line = lines_rx.recv_timeout(PATIENCE).expect("the first Ctrl-C is answered");
        if line.contains("interrupting… (Ctrl-C again to stop now)") {
            break;
        }
    }
    kill(bridge, Signal::SIGINT).unwrap();

    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = run.wait().unwrap();
    let stderr = stderr_reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopping codex app-server now"), "{stderr}");
    let result: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    let terminal = &result["result"]["terminal"];
    assert_eq!(
        terminal["cause"], "backendExited",
        "the turn ended because the agent was stopped, not because the interrupt grace ran out: {terminal}"
    );
    assert!(!alive(agent), "the agent is gone");
}
