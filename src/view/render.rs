//! Rendering events for a person (or as JSONL with `--json`).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_bridge::sink::EventStage;
use futures::future::BoxFuture;

use super::screen::Screen;
use super::style::{BAD, DIM, GOOD, TOOL, WARN, lines, one_line, paint};

impl EventStage for View {
    fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
        self.show(event);
        Box::pin(async {})
    }

    fn flush(&mut self) -> BoxFuture<'_, ()> {
        self.screen.flush();
        Box::pin(async {})
    }
}

/// Prints events for a person, or as JSONL.
#[derive(Debug)]
pub struct View {
    json: bool,
    screen: Arc<Screen>,
    /// Who the spinner says is awaited (`codex app-server`, `the demo agent`).
    process: &'static str,
    /// Text items shown through their deltas; the others are shown whole when final (a backend or
    /// recording without partial messages sends no deltas).
    streamed: HashSet<String>,
}

impl View {
    /// The view of one run on `screen`; `process` names the agent the spinner waits on.
    pub fn new(json: bool, screen: Arc<Screen>, process: &'static str) -> Self {
        Self { json, screen, process, streamed: HashSet::new() }
    }

    fn show(&mut self, event: &Event) {
        if self.json {
            self.screen.json_line(event);
            return;
        }
        let screen = &self.screen;
        match event {
            Event::TurnStarted { .. } => screen.wait(&format!("waiting for {}", self.process)),
            Event::AssistantDelta { item_id, delta } => {
                self.streamed.insert(item_id.clone());
                screen.text(&lines(delta));
            }
            Event::AssistantFinal { item_id, text } if !self.streamed.contains(item_id) => screen.text(&lines(text)),
            Event::ToolStarted(call) => {
                let what = one_line(call.arguments.get("command").and_then(|c| c.as_str()).unwrap_or_default());
                let tool = one_line(&call.tool_name);
                screen.out_line(&format!("{} {what}", paint(TOOL, format!("→ {tool}"))));
                screen.wait(&format!("{tool} running"));
            }
            Event::ToolFinished(finish) => {
                let (mark, style) =
                    if matches!(finish.outcome, ToolOutcome::Success) { ("✓", GOOD) } else { ("✗", BAD) };
                let exit = finish.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default();
                let line = format!(
                    "{mark} {} {}{exit}",
                    one_line(&finish.call.tool_name),
                    one_line(&finish.outcome.describe())
                );
                screen.out_line(&paint(style, line));
                screen.wait(&format!("waiting for {}", self.process));
            }
            Event::ModelRetry { message, attempt, max_attempts, retry_in_ms, http_status } => {
                let line = retry_line(*attempt, *max_attempts, *retry_in_ms, *http_status);
                screen.note(&format!("{} {}", paint(WARN, format!("… {line}")), paint(DIM, one_line(message))));
            }
            Event::TurnTerminal(_) => screen.done(),
            _ => {}
        }
    }

    /// The last line: how the turn ended, and where its session lives. `native` names the backend's
    /// own session kind (`thread`, `claude session`).
    pub fn summary(&self, result: &AttemptResult, session: &str, transcript: &Path, native: &str) {
        if self.json {
            self.screen.json_line(&serde_json::json!({"type": "result", "result": result}));
            self.screen.flush();
            return;
        }
        let usage = result
            .usage
            .map(|u| format!(" · {} in / {} out tokens", u.input_tokens, u.output_tokens))
            .unwrap_or_default();
        let message = result.terminal.message.as_deref().map(|m| format!(": {}", one_line(m))).unwrap_or_default();
        let kind = result.terminal.kind;
        let kind = paint(if kind == TerminalKind::Ok { GOOD } else { BAD }, format!("— {kind}{message}"));
        let rest = format!(
            " · {} tool call(s){usage} · session {session} · {native} {} · transcript {}",
            result.tools.len(),
            result.native_session_id.as_deref().unwrap_or("?"),
            transcript.display()
        );
        self.screen.out_line(&format!("{kind}{}", paint(DIM, rest)));
    }
}

/// A native retry in a person's words: "model endpoint unreachable (HTTP 503), retrying in 20 s
/// (attempt 2 of 10)".
pub fn retry_line(attempt: Option<u32>, max: Option<u32>, retry_in_ms: Option<u64>, status: Option<u16>) -> String {
    let what = match status {
        Some(429) => "model endpoint is rate-limiting (HTTP 429)".to_owned(),
        Some(status @ (401 | 403)) => format!("model endpoint refused the credentials (HTTP {status})"),
        // A server error: the endpoint is there but cannot serve (an outage, an overloaded proxy).
        Some(status @ 500..=599) => format!("model endpoint unreachable (HTTP {status})"),
        // Any other answer (a 400 or 404: a wrong model name or path) reached the endpoint.
        Some(status) => format!("model endpoint answered HTTP {status}"),
        None => "model endpoint unreachable (no response)".to_owned(),
    };
    let when = retry_in_ms.map(|ms| format!(" in {}", seconds(ms))).unwrap_or_default();
    let which = match (attempt, max) {
        (Some(n), Some(max)) => format!(" (attempt {n} of {max})"),
        (Some(n), None) => format!(" (attempt {n})"),
        _ => String::new(),
    };
    format!("{what}, retrying{when}{which}")
}

/// `20 s`, `1.2 s`, `300 ms`.
fn seconds(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms} ms"),
        _ if ms % 1000 == 0 => format!("{} s", ms / 1000),
        _ => format!("{:.1} s", ms as f64 / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_reads_as_what_failed_when_it_retries_and_which_attempt() {
        assert_eq!(
            retry_line(Some(2), Some(10), Some(20_000), Some(503)),
            "model endpoint unreachable (HTTP 503), retrying in 20 s (attempt 2 of 10)"
        );
        assert_eq!(
            retry_line(Some(1), Some(2), None, Some(503)),
            "model endpoint unreachable (HTTP 503), retrying (attempt 1 of 2)"
        );
        assert_eq!(
            retry_line(Some(3), None, Some(1200), Some(429)),
            "model endpoint is rate-limiting (HTTP 429), retrying in 1.2 s (attempt 3)"
        );
        assert_eq!(
            retry_line(None, None, Some(300), None),
            "model endpoint unreachable (no response), retrying in 300 ms"
        );
        assert_eq!(
            retry_line(Some(1), Some(3), None, Some(404)),
            "model endpoint answered HTTP 404, retrying (attempt 1 of 3)"
        );
        assert!(retry_line(None, None, None, Some(400)).starts_with("model endpoint answered HTTP 400"));
        assert!(
            retry_line(Some(1), Some(10), None, Some(401))
                .starts_with("model endpoint refused the credentials (HTTP 401)")
        );
    }
}
