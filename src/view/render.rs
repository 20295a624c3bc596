//! Rendering events for a person (or as JSONL with `--json`).

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::events::{Event, ToolOutcome};
use clawbridge_bridge::sink::EventStage;
use futures::future::BoxFuture;

impl EventStage for View {
    fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
        self.show(event);
        Box::pin(async {})
    }
}

/// Prints events for a person, or as JSONL.
#[derive(Debug)]
pub struct View {
    json: bool,
    /// Whether the cursor is mid-line after streamed text.
    mid_line: bool,
    /// Text items shown through their deltas; the others are shown whole when final (a backend or
    /// recording without partial messages sends no deltas).
    streamed: HashSet<String>,
}

impl View {
    pub fn new(json: bool) -> Self {
        Self { json, mid_line: false, streamed: Default::default() }
    }

    fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = serde_json::to_writer(&mut out, event);
            let _ = writeln!(out);
            return;
        }
        match event {
            Event::AssistantDelta { item_id, delta } => {
                self.streamed.insert(item_id.clone());
                let _ = write!(out, "{delta}");
                self.mid_line = !delta.ends_with('\n');
            }
            Event::AssistantFinal { item_id, text } if !self.streamed.contains(item_id) => {
                self.end_line(&mut out);
                let _ = write!(out, "{text}");
                self.mid_line = !text.ends_with('\n');
            }
            Event::ToolStarted(call) => {
                self.end_line(&mut out);
                let what = call.arguments.get("command").and_then(|c| c.as_str()).unwrap_or_default();
                let _ = writeln!(out, "→ {} {what}", call.tool_name);
            }
            Event::ToolFinished(finish) => {
                self.end_line(&mut out);
                let mark = if matches!(finish.outcome, ToolOutcome::Success) { "✓" } else { "✗" };
                let exit = finish.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default();
                let _ = writeln!(out, "{mark} {} {}{exit}", finish.call.tool_name, finish.outcome.describe());
            }
            Event::ModelRetry { message, .. } => {
                self.end_line(&mut out);
                let _ = writeln!(out, "… retrying the model request: {message}");
            }
            Event::TurnTerminal(_) => self.end_line(&mut out),
            _ => {}
        }
        let _ = out.flush();
    }

    fn end_line(&mut self, out: &mut impl Write) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
    }

    /// The last line: how the turn ended, and where its session lives. `native` names the backend's
    /// own session kind (`thread`, `claude session`).
    pub fn summary(&self, result: &AttemptResult, session: &str, transcript: &Path, native: &str) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let line = serde_json::json!({"type": "result", "result": result});
            let _ = writeln!(out, "{line}");
            return;
        }
        let usage = result
            .usage
            .map(|u| format!(" · {} in / {} out tokens", u.input_tokens, u.output_tokens))
            .unwrap_or_default();
        let message = result.terminal.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "— {}{message} · {} tool call(s){usage} · session {} · {native} {} · transcript {}",
            result.terminal.kind,
            result.tools.len(),
            session,
            result.native_session_id.as_deref().unwrap_or("?"),
            transcript.display()
        );
    }
}
