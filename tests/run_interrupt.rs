//! Ctrl-C during `clawbridge run`, against a Codex that ignores the interrupt (and SIGTERM): the
//! first SIGINT asks it to interrupt, the second stops it now — the turn ends because its process
//! is gone, not because the interrupt grace ran out — and the run exits 130 with nothing left.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::stub_codex::{plan, running, stub_codex, stub_pid};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

/// Only a hang reaches it; nothing here is timed.
const PATIENCE: Duration = Duration::from_secs(90);

/// `input`'s lines, read on a thread of their own so every wait for one has a deadline.
fn lines_of(input: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(input).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The next line of `lines` (`None`: they ended); a hang fails the test, naming `what`.
fn next_line(lines: &Receiver<String>, what: &str) -> Option<String> {
    match lines.recv_timeout(PATIENCE) {
        Ok(line) => Some(line),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => None,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("gave up waiting for {what}"),
    }
}

/// `clawbridge run --json` on a Codex that starts the turn and never ends it: `turn/interrupt` is
/// neither answered nor acted on, and SIGTERM is ignored.
fn stubborn_run(dir: &std::path::Path) -> std::process::Child {
    let stubborn = plan(vec![], json!({"turn/interrupt": [{"stderr": "stubborn: ignoring the interrupt"}]}));
    let codex = stub_codex(dir, &stubborn, &["--ignore-sigterm"]);
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "codex", "--json", "--deny", "--program"])
        .arg(&codex)
        .arg("wait forever")
        .env("CLAWBRIDGE_STATE_DIR", dir.join("state"))
        .env_remove("CODEX_HOME")
        .env_remove("CLAWBRIDGE_LOG")
        .env_remove("RUST_LOG")
        .env_remove("CLAWBRIDGE_CONFIG")
        .env("XDG_CONFIG_HOME", dir)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_second_ctrl_c_stops_an_agent_that_ignores_the_interrupt_and_the_run_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = stubborn_run(dir.path());
    let bridge = Pid::from_raw(run.id() as i32);
    let stdout = lines_of(run.stdout.take().unwrap());
    let stderr_lines = lines_of(run.stderr.take().unwrap());

    // The turn runs: the agent's `turn/started` came through.
    loop {
        let line = next_line(&stdout, "the turn's start").expect("the run ended before its turn started");
        if line.contains("\"turnStarted\"") {
            break;
        }
    }
    let agent = stub_pid(dir.path());
    assert!(running(agent));

    // Stderr line by line, so the second Ctrl-C waits until the first one was taken.
    let mut stderr = String::new();
    kill(bridge, Signal::SIGINT).unwrap();
    loop {
        let line = next_line(&stderr_lines, "the first Ctrl-C's line").expect("the first Ctrl-C is answered");
        stderr.push_str(&line);
        stderr.push('\n');
        if line.contains("interrupting… (Ctrl-C again to stop now)") {
            break;
        }
    }
    kill(bridge, Signal::SIGINT).unwrap();

    let mut rest = Vec::new();
    while let Some(line) = next_line(&stdout, "the run's end (stdout)") {
        rest.push(line);
    }
    while let Some(line) = next_line(&stderr_lines, "the run's end (stderr)") {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopping codex app-server now"), "{stderr}");
    let result: Value = serde_json::from_str(rest.last().unwrap()).unwrap();
    let terminal = &result["result"]["terminal"];
    assert_eq!(
        terminal["cause"], "backendExited",
        "the turn ended because the agent was stopped, not because the interrupt grace ran out: {terminal}"
    );
    assert!(!running(agent), "the agent is gone");
}
