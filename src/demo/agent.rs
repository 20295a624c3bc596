//! The scripted demo agent (`clawbridge demo-listen`): speaks the codex app-server dialect on stdio
//! like the recording the demo used to play (same handshake, thread, turn, approval and item
//! shapes), but answers the prompt it is given: it quotes it, and when it names a harmless command
//! it asks for approval and, once allowed, runs it through `sh -c` in the thread's cwd. No model
//! is involved; every word of its answer comes from the prompt and the command's real output.

use std::io::{BufRead, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

use super::command::{Harmless, Named, harmless_programs, named_in};

/// The model the demo says it is (its `thread/start` answer), so transcript rows name it.
const DEMO_MODEL: &str = "clawbridge-demo-script";
/// A command's output beyond this is cut (the demo shows a little, not a log).
const MAX_OUTPUT: u64 = 16 * 1024;
/// The longest line the demo reads from its client; longer lines are skipped whole.
const MAX_LINE: u64 = 8 * 1024 * 1024;
/// How long a command may run before the demo stops it (`wc -c /dev/zero` never ends).
const COMMAND_LIMIT: Duration = Duration::from_secs(20);
/// The id of the demo's one server request (the approval).
const APPROVAL_ID: u64 = 0;

/// What the agent waits on: its client's next line, or the command it started.
enum Input {
    Line(String),
    Ran(Ran),
    Closed,
}

/// A finished command.
struct Ran {
    output: String,
    exit_code: Option<i32>,
}

/// Why the demo agent stopped before its client was done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DemoAgentError {
    /// Its stdout is gone (the client went away mid-answer).
    #[error("writing to the client: {0}")]
    Write(#[from] std::io::Error),
}

/// Serves one client on stdin/stdout until it closes stdin.
pub fn serve() -> Result<(), DemoAgentError> {
    let (tx, rx) = mpsc::channel();
    let reader_tx = tx.clone();
    std::thread::spawn(move || read_lines(std::io::stdin().lock(), &reader_tx));
    let mut agent =
        Agent { out: std::io::BufWriter::new(std::io::stdout().lock()), tx, cwd: None, turn: None, turns: 0 };
    while let Ok(input) = rx.recv() {
        match input {
            Input::Line(line) => agent.on_line(&line)?,
            Input::Ran(ran) => agent.on_ran(ran)?,
            Input::Closed => break,
        }
    }
    Ok(())
}

/// Lines from `input`, each at most [`MAX_LINE`] bytes (a longer one is dropped whole).
fn read_lines(mut input: impl BufRead, tx: &mpsc::Sender<Input>) {
    loop {
        let mut line = Vec::new();
        match (&mut input).take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 == MAX_LINE => {
                if !skip_line(&mut input) {
                    break;
                }
            }
            Ok(_) => {
                if tx.send(Input::Line(String::from_utf8_lossy(&line).trim_end().to_owned())).is_err() {
                    return;
                }
            }
        }
    }
    let _ = tx.send(Input::Closed);
}

/// Drops the rest of an oversized line without holding it (buffer by buffer); `false` when the
/// input ended or failed.
fn skip_line(input: &mut impl BufRead) -> bool {
    loop {
        let (used, ended) = match input.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(buffer) => match buffer.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (buffer.len(), false),
            },
        };
        input.consume(used);
        if ended {
            return true;
        }
    }
}

/// The turn in progress.
struct Turn {
    id: String,
    prompt: String,
    /// The command it asked to run, while asked or running.
    command: Option<Harmless>,
    /// The running command's process group, to stop it when the turn is interrupted.
    running: Option<Stopper>,
}

struct Agent<W: Write> {
    out: W,
    tx: mpsc::Sender<Input>,
    cwd: Option<String>,
    turn: Option<Turn>,
    turns: u32,
}

const THREAD_ID: &str = "demo-thread";

impl<W: Write> Agent<W> {
    fn send(&mut self, line: &Value) -> std::io::Result<()> {
        writeln!(self.out, "{line}")?;
        self.out.flush()
    }

    fn notify(&mut self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(&json!({"method": method, "params": params}))
    }

    fn on_line(&mut self, line: &str) -> Result<(), DemoAgentError> {
        // A line that is not JSON-RPC is ignored, as the real server's reader would skip it.
        let Ok(message) = serde_json::from_str::<Value>(line) else { return Ok(()) };
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        match (message.get("method").and_then(Value::as_str), id) {
            (Some("initialize"), Some(id)) => self.send(&json!({"id": id, "result": {
                "userAgent": format!("clawbridge/{} (demo; script) dumb (clawbridge; {})", super::RECORDED_VERSION, env!("CARGO_PKG_VERSION")),
                "codexHome": "", "platformFamily": "unix", "platformOs": std::env::consts::OS}}))?,
            (Some("thread/start"), Some(id)) => {
                self.cwd = params.get("cwd").and_then(Value::as_str).map(str::to_owned);
                let thread = json!({"id": THREAD_ID, "cwd": self.cwd, "model": DEMO_MODEL, "modelProvider": "demo",
                    "status": {"type": "idle"}, "turns": [], "cliVersion": super::RECORDED_VERSION});
                self.send(&json!({"id": id, "result": {"thread": thread, "model": DEMO_MODEL, "modelProvider": "demo",
                    "cwd": self.cwd, "approvalPolicy": "on-request"}}))?;
                self.notify("thread/started", json!({"thread": thread}))?;
            }
            (Some("turn/start"), Some(id)) => self.start_turn(id, &params)?,
            (Some("turn/interrupt"), Some(id)) => {
                if let Some(stopper) = self.turn.as_ref().and_then(|turn| turn.running.as_ref()) {
                    stopper.stop();
                }
                self.send(&json!({"id": id, "result": {}}))?;
                self.complete("interrupted", None)?;
            }
            (Some(method), Some(id)) => self.send(&json!({"id": id,
                "error": {"code": -32601, "message": format!("the demo agent does not offer `{method}`")}}))?,
            (Some(_), None) => {} // `initialized` and other notifications need nothing.
            (None, Some(id)) if id == json!(APPROVAL_ID) => self.on_decision(&message)?,
            (None, _) => {}
        }
        Ok(())
    }

    fn start_turn(&mut self, id: Value, params: &Value) -> Result<(), DemoAgentError> {
        self.turns += 1;
        let turn_id = format!("demo-turn-{}", self.turns);
        let prompt = prompt_text(params);
        let turn = json!({"id": turn_id, "items": [], "status": "inProgress", "error": null});
        self.send(&json!({"id": id, "result": {"turn": turn}}))?;
        self.notify("turn/started", json!({"threadId": THREAD_ID, "turn": turn}))?;
        self.turn = Some(Turn { id: turn_id.clone(), prompt: prompt.clone(), command: None, running: None });
        match named_in(&prompt, self.cwd.as_deref().map(Path::new)) {
            Some(Named::Harmless(command)) => self.ask(&turn_id, command)?,
            Some(Named::Refused(command)) => {
                let text = format!(
                    "You said: “{prompt}”\nI only run harmless commands in this demo ({}), one at a time, so I did not run `{command}`.",
                    harmless_programs()
                );
                self.answer(&text)?;
                self.complete("completed", None)?;
            }
            None => {
                let text = format!(
                    "You said: “{prompt}”\nThis is clawbridge's scripted demo agent: no model is behind it. Name a command (`echo hello`, or \"run ls\") and I will ask you before running it."
                );
                self.answer(&text)?;
                self.complete("completed", None)?;
            }
        }
        Ok(())
    }

    fn command_item(&self, turn_id: &str, command: &str, status: &str, ran: Option<&Ran>) -> Value {
        json!({"type": "commandExecution", "id": call_id(turn_id), "command": command, "cwd": self.cwd,
            "commandActions": [{"command": command, "type": "unknown"}], "status": status, "source": "agent",
            "aggregatedOutput": ran.map(|r| r.output.clone()), "exitCode": ran.and_then(|r| r.exit_code)})
    }

    fn ask(&mut self, turn_id: &str, harmless: Harmless) -> Result<(), DemoAgentError> {
        let command = harmless.shown.clone();
        let item = self.command_item(turn_id, &command, "inProgress", None);
        self.notify("item/started", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": item}))?;
        self.send(&json!({"id": APPROVAL_ID, "method": "item/commandExecution/requestApproval", "params": {
            "threadId": THREAD_ID, "turnId": turn_id, "itemId": call_id(turn_id), "command": command, "cwd": self.cwd,
            "commandActions": [{"command": command, "type": "unknown"}],
            "reason": "The prompt names this command; run it?", "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"]}}))?;
        if let Some(turn) = &mut self.turn {
            turn.command = Some(harmless);
        }
        Ok(())
    }

    fn on_decision(&mut self, answer: &Value) -> Result<(), DemoAgentError> {
        let Some(turn) = &self.turn else { return Ok(()) };
        let Some(Harmless { shown: command, quoted }) = turn.command.clone() else { return Ok(()) };
        let (turn_id, prompt) = (turn.id.clone(), turn.prompt.clone());
        self.notify("serverRequest/resolved", json!({"threadId": THREAD_ID, "requestId": APPROVAL_ID}))?;
        let decision = answer.pointer("/result/decision").and_then(Value::as_str).unwrap_or("decline");
        if matches!(decision, "accept" | "acceptForSession") {
            let (tx, cwd) = (self.tx.clone(), self.cwd.clone());
            match start_command(&quoted, cwd.as_deref()) {
                Ok(started) => {
                    if let Some(turn) = &mut self.turn {
                        turn.running = Some(started.stopper.clone());
                    }
                    std::thread::spawn(move || {
                        let _ = tx.send(Input::Ran(started.finish(COMMAND_LIMIT)));
                    });
                }
                Err(error) => {
                    let _ =
                        tx.send(Input::Ran(Ran { output: format!("could not start sh: {error}"), exit_code: None }));
                }
            }
            return Ok(());
        }
        let item = self.command_item(&turn_id, &command, "declined", None);
        self.notify("item/completed", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": item}))?;
        if decision == "cancel" {
            return self.complete("interrupted", None).map_err(Into::into);
        }
        self.answer(&format!("You said: “{prompt}”\nYou declined, so I did not run `{command}`."))?;
        self.complete("completed", None)?;
        Ok(())
    }

    fn on_ran(&mut self, ran: Ran) -> Result<(), DemoAgentError> {
        // A turn interrupted while its command ran has already ended.
        let Some(turn) = &self.turn else { return Ok(()) };
        let Some(command) = turn.command.as_ref().map(|harmless| harmless.shown.clone()) else { return Ok(()) };
        let (turn_id, prompt) = (turn.id.clone(), turn.prompt.clone());
        let item = self.command_item(
            &turn_id,
            &command,
            if ran.exit_code == Some(0) { "completed" } else { "failed" },
            Some(&ran),
        );
        self.notify("item/completed", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": item}))?;
        let exit = ran.exit_code.map_or_else(|| "was stopped by a signal".to_owned(), |code| format!("exited {code}"));
        let printed =
            if ran.output.is_empty() { " nothing".to_owned() } else { format!(":\n{}", ran.output.trim_end()) };
        self.answer(&format!("You said: “{prompt}”\nI ran `{command}`; it {exit} and printed{printed}"))?;
        self.complete("completed", None)?;
        Ok(())
    }

    /// The assistant's answer, streamed word by word as a model's would be.
    fn answer(&mut self, text: &str) -> std::io::Result<()> {
        let Some(turn_id) = self.turn.as_ref().map(|t| t.id.clone()) else { return Ok(()) };
        let item_id = format!("{turn_id}-answer");
        let started = json!({"type": "agentMessage", "id": item_id, "text": ""});
        self.notify("item/started", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": started}))?;
        for piece in text.split_inclusive(' ') {
            self.notify(
                "item/agentMessage/delta",
                json!({"threadId": THREAD_ID, "turnId": turn_id, "itemId": item_id, "delta": piece}),
            )?;
        }
        let done = json!({"type": "agentMessage", "id": item_id, "text": text});
        self.notify("item/completed", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": done}))
    }

    fn complete(&mut self, status: &str, error: Option<Value>) -> std::io::Result<()> {
        let Some(turn) = self.turn.take() else { return Ok(()) };
        self.notify(
            "turn/completed",
            json!({"threadId": THREAD_ID,
            "turn": {"id": turn.id, "items": [], "status": status, "error": error}}),
        )
    }
}

fn call_id(turn_id: &str) -> String {
    format!("{turn_id}-call")
}

/// The text parts of a `turn/start` input, joined.
fn prompt_text(params: &Value) -> String {
    let parts = params.get("input").and_then(Value::as_array).into_iter().flatten();
    parts.filter_map(|part| part.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
}

/// A running command's process group, stopped at most once (after it is reaped its id may be
/// another's, so [`Started::finish`] takes it away before reaping).
#[derive(Clone)]
struct Stopper(Arc<Mutex<Option<nix::unistd::Pid>>>);

impl Stopper {
    /// Kills the command and whatever it started, if it has not been reaped yet.
    fn stop(&self) {
        if let Some(group) = *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// No longer stoppable: the command is about to be reaped.
    fn disarm(&self) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    }
}

/// A command started by [`start_command`].
struct Started {
    child: std::process::Child,
    output: mpsc::Receiver<Vec<u8>>,
    stopper: Stopper,
}

/// Starts `command` (words already quoted for `sh`) through `sh -c` in `cwd`, in a process group
/// of its own, stdout and stderr together.
fn start_command(command: &str, cwd: Option<&str>) -> std::io::Result<Started> {
    let mut shell = Command::new("sh");
    shell.arg("-c").arg(format!("exec 2>&1; {command}")).stdin(Stdio::null()).stdout(Stdio::piped());
    shell.process_group(0);
    if let Some(cwd) = cwd {
        shell.current_dir(cwd);
    }
    let mut child = shell.spawn()?;
    let group = i32::try_from(child.id()).ok().map(nix::unistd::Pid::from_raw);
    let (tx, output) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        std::thread::spawn(move || {
            // One byte past the cap tells a command that had more to say from one that said exactly that.
            let mut bytes = Vec::new();
            let _ = stdout.take(MAX_OUTPUT + 1).read_to_end(&mut bytes);
            let _ = tx.send(bytes);
        });
    }
    Ok(Started { child, output, stopper: Stopper(Arc::new(Mutex::new(group))) })
}

impl Started {
    /// Its output, capped at [`MAX_OUTPUT`], and exit code; stopped after `limit`.
    fn finish(mut self, limit: Duration) -> Ran {
        let (mut output, late) = match self.output.recv_timeout(limit) {
            Ok(bytes) => (bytes, false),
            Err(_) => {
                self.stopper.stop();
                // Killed, its pipe closes; what it printed so far still comes.
                (self.output.recv_timeout(Duration::from_secs(5)).unwrap_or_default(), true)
            }
        };
        let cut = output.len() as u64 > MAX_OUTPUT;
        if cut {
            // More than the demo shows (`cat` of an endless file): stop it rather than read it all.
            output.truncate(MAX_OUTPUT as usize);
            self.stopper.stop();
        }
        self.stopper.disarm();
        let exit_code = self.child.wait().ok().and_then(|status| status.code());
        let mut output = String::from_utf8_lossy(&output).into_owned();
        if cut {
            output.push_str(&format!("\n… (cut at {} KiB; the command was stopped)", MAX_OUTPUT / 1024));
        }
        if late {
            output.push_str(&format!("\n… (stopped after {} s)", limit.as_secs()));
        }
        Ran { output, exit_code }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_runs_in_its_cwd_and_its_output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let ran = start_command("pwd", dir.path().to_str()).unwrap().finish(COMMAND_LIMIT);
        assert_eq!(ran.exit_code, Some(0));
        assert_eq!(ran.output.trim_end(), dir.path().canonicalize().unwrap().display().to_string());

        let endless = start_command("yes", None).unwrap().finish(COMMAND_LIMIT);
        assert!(endless.output.len() < MAX_OUTPUT as usize + 100, "{}", endless.output.len());
        assert!(endless.output.ends_with("(cut at 16 KiB; the command was stopped)"));
    }

    #[test]
    fn a_command_past_its_limit_or_stopped_ends_with_all_it_started() {
        let silent = start_command("sleep 600 & echo started; wait", None).unwrap().finish(Duration::from_secs(1));
        assert_eq!(silent.exit_code, None, "killed: {}", silent.output);
        assert!(silent.output.starts_with("started\n"), "{}", silent.output);
        assert!(silent.output.ends_with("(stopped after 1 s)"), "{}", silent.output);

        let started = start_command("sleep 600", None).unwrap();
        let stopper = started.stopper.clone();
        let finishing = std::thread::spawn(move || started.finish(COMMAND_LIMIT));
        stopper.stop();
        assert_eq!(finishing.join().unwrap().exit_code, None, "stopped by the interrupt, not the limit");
    }

    #[test]
    fn an_oversized_line_is_skipped_and_the_next_one_read() {
        let long = format!("{}\nnext\n", "x".repeat(100));
        let mut input = std::io::BufReader::with_capacity(16, long.as_bytes());
        assert!(skip_line(&mut input));
        let mut next = String::new();
        input.read_line(&mut next).unwrap();
        assert_eq!(next, "next\n");
    }
}
