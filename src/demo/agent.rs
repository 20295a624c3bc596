//! The scripted demo agent (`clawbridge demo-listen`): speaks the codex app-server dialect on stdio
//! like the recording the demo used to play (same handshake, thread, turn, approval and item
//! shapes), but answers the prompt it is given: it quotes it, and when it names a harmless command
//! it asks for approval and, once allowed, runs it through `sh -c` in the thread's cwd. No model
//! is involved; every word of its answer comes from the prompt and the command's real output.

use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::{Value, json};

use super::command::{Named, harmless_programs, named_in};

/// The model the demo says it is (its `thread/start` answer), so transcript rows name it.
const DEMO_MODEL: &str = "clawbridge-demo-script";
/// A command's output beyond this is cut (the demo shows a little, not a log).
const MAX_OUTPUT: u64 = 16 * 1024;
/// The longest line the demo reads from its client; longer lines are skipped whole.
const MAX_LINE: u64 = 8 * 1024 * 1024;
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
                // Skip the rest of the oversized line.
                let mut rest = Vec::new();
                if input.read_until(b'\n', &mut rest).is_err() {
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

/// The turn in progress.
struct Turn {
    id: String,
    prompt: String,
    /// The command it asked to run, while asked or running.
    command: Option<String>,
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
        self.turn = Some(Turn { id: turn_id.clone(), prompt: prompt.clone(), command: None });
        match named_in(&prompt) {
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

    fn ask(&mut self, turn_id: &str, command: String) -> Result<(), DemoAgentError> {
        let item = self.command_item(turn_id, &command, "inProgress", None);
        self.notify("item/started", json!({"threadId": THREAD_ID, "turnId": turn_id, "item": item}))?;
        self.send(&json!({"id": APPROVAL_ID, "method": "item/commandExecution/requestApproval", "params": {
            "threadId": THREAD_ID, "turnId": turn_id, "itemId": call_id(turn_id), "command": command, "cwd": self.cwd,
            "commandActions": [{"command": command, "type": "unknown"}],
            "reason": "The prompt names this command; run it?", "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"]}}))?;
        if let Some(turn) = &mut self.turn {
            turn.command = Some(command);
        }
        Ok(())
    }

    fn on_decision(&mut self, answer: &Value) -> Result<(), DemoAgentError> {
        let Some(turn) = &self.turn else { return Ok(()) };
        let Some(command) = turn.command.clone() else { return Ok(()) };
        let (turn_id, prompt) = (turn.id.clone(), turn.prompt.clone());
        self.notify("serverRequest/resolved", json!({"threadId": THREAD_ID, "requestId": APPROVAL_ID}))?;
        let decision = answer.pointer("/result/decision").and_then(Value::as_str).unwrap_or("decline");
        if matches!(decision, "accept" | "acceptForSession") {
            let (tx, cwd) = (self.tx.clone(), self.cwd.clone());
            std::thread::spawn(move || {
                let _ = tx.send(Input::Ran(run_command(&command, cwd.as_deref())));
            });
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
        let Some(command) = turn.command.clone() else { return Ok(()) };
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

/// Runs `command` through `sh -c` in `cwd`, stdout and stderr together, capped at [`MAX_OUTPUT`].
fn run_command(command: &str, cwd: Option<&str>) -> Ran {
    let mut shell = Command::new("sh");
    shell.arg("-c").arg(format!("exec 2>&1; {command}")).stdin(Stdio::null()).stdout(Stdio::piped());
    if let Some(cwd) = cwd {
        shell.current_dir(cwd);
    }
    let mut child = match shell.spawn() {
        Ok(child) => child,
        Err(error) => return Ran { output: format!("could not start sh: {error}"), exit_code: None },
    };
    let mut output = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        // One byte past the cap tells a command that had more to say from one that said exactly that.
        let _ = stdout.take(MAX_OUTPUT + 1).read_to_end(&mut output);
    }
    let cut = output.len() as u64 > MAX_OUTPUT;
    if cut {
        // More than the demo shows (`cat` of an endless file): stop it rather than read it all.
        output.truncate(MAX_OUTPUT as usize);
        let _ = child.kill();
    }
    let exit_code = child.wait().ok().and_then(|status| status.code());
    let mut output = String::from_utf8_lossy(&output).into_owned();
    if cut {
        output.push_str(&format!("\n… (cut at {} KiB; the command was stopped)", MAX_OUTPUT / 1024));
    }
    Ran { output, exit_code }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_runs_in_its_cwd_and_its_output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let ran = run_command("pwd", dir.path().to_str());
        assert_eq!(ran.exit_code, Some(0));
        assert_eq!(ran.output.trim_end(), dir.path().canonicalize().unwrap().display().to_string());

        let endless = run_command("yes", None);
        assert!(endless.output.len() < MAX_OUTPUT as usize + 100, "{}", endless.output.len());
        assert!(endless.output.ends_with("(cut at 16 KiB; the command was stopped)"));
    }
}
