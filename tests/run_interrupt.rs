//! Ctrl-C during `clawbridge run`, against a Codex that ignores the interrupt (and SIGTERM): the
//! first SIGINT asks it to interrupt, the second stops it now — the turn ends because its process
//! is gone, not because the interrupt grace ran out — and the run exits 130 with nothing left.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::stub_codex::{plan, running, stub_codex, stub_pid};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

/// Only a hang reaches it; nothing here is timed.
const PATIENCE: Duration = Duration::from_secs(90);

#[test]
fn a_second_ctrl_c_stops_an_agent_that_ignores_the_interrupt_and_the_run_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    // It starts the turn and never ends it: `turn/interrupt` is neither answered nor acted on,
    // and SIGTERM is ignored.
    let stubborn = plan(vec![], json!({"turn/interrupt": [{"stderr": "stubborn: ignoring the interrupt"}]}));
    let codex = stub_codex(dir.path(), &stubborn, &["--ignore-sigterm"]);
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
    let agent = stub_pid(dir.path());
    assert!(running(agent));

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
    assert!(!running(agent), "the agent is gone");
}
