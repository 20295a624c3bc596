//! Who answers a run's approval requests, and how the person sees each one: what is asked (the
//! command or file or tool, and where) when it is asked, and who decided when it is answered.

use std::io::{BufRead, IsTerminal, Read};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{ApprovalDecision, ApprovalKind, ApprovalRequest, Approver};
use clawbridge_bridge::backend::{Backend, FixedApproval};
use futures::future::BoxFuture;
use serde_json::Value;

use super::screen::Screen;
use super::style::{ASK, BAD, GOOD, one_line, paint};

/// Who decides a run's approvals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decider {
    /// The person at the terminal.
    Person,
    /// A fixed answer given on the command line (`--approve`, `--deny`).
    Flag(ApprovalDecision),
    /// The backend's own fixed answer (a recording whose approval was granted when recorded).
    Backend(ApprovalDecision),
    /// Nobody can be asked (no terminal, no flag): denied.
    Nobody,
}

impl Decider {
    /// Words for the answer line: who decided.
    fn by(&self) -> &'static str {
        match self {
            Decider::Person => "by you",
            Decider::Flag(ApprovalDecision::Allow) => "by --approve",
            Decider::Flag(_) => "by --deny",
            Decider::Backend(_) => "by the demo's fixed answer",
            Decider::Nobody => "(no terminal to ask, and neither --approve nor --deny was given)",
        }
    }
}

/// The approver a run uses: the backend's fixed answer, else the fixed answer given, else the
/// terminal, else deny (nobody to ask). Each request and its answer are shown on `screen`.
pub fn approver(backend: &dyn Backend, approval: Option<&ApprovalDecision>, screen: &Arc<Screen>) -> Arc<dyn Approver> {
    let decider = match (backend.facts().fixed_approval, approval) {
        (Some(FixedApproval::Allow), _) => Decider::Backend(ApprovalDecision::Allow),
        (_, Some(decision)) => Decider::Flag(decision.clone()),
        (_, None) if std::io::stdin().is_terminal() => Decider::Person,
        (_, None) => Decider::Nobody,
    };
    Arc::new(ShownApprover { decider, screen: screen.clone() })
}

/// Shows each request and its answer; asks the person when they decide.
#[derive(Debug)]
struct ShownApprover {
    decider: Decider,
    screen: Arc<Screen>,
}

impl Approver for ShownApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        let (decider, screen) = (self.decider.clone(), self.screen.clone());
        Box::pin(async move {
            screen.note(&paint(ASK, format!("? {}", asked(&request))));
            // Dropped unanswered: the bridge's approval deadline ran out (it then denies) or the
            // turn ended first.
            let mut unanswered = Unanswered(Some(screen.clone()));
            let decision = match &decider {
                Decider::Person => ask_person(&screen).await?,
                Decider::Flag(decision) | Decider::Backend(decision) => decision.clone(),
                Decider::Nobody => ApprovalDecision::Deny {
                    message: Some("no terminal to ask and neither --approve nor --deny was given".into()),
                },
            };
            unanswered.0 = None;
            let (style, line) = answered(&decision, &decider);
            screen.answered(&paint(style, line));
            Ok(decision)
        })
    }
}

/// Says, when dropped still holding its screen, that the request went unanswered (the bridge
/// denies a request whose approval deadline ran out).
struct Unanswered(Option<Arc<Screen>>);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if let Some(screen) = self.0.take() {
            screen.urgent(&paint(BAD, "✗ not answered (the approval timed out or the turn ended): denied"));
        }
    }
}

/// What is asked, in a line: `codex asks to run `ls` in /work (why)`. The agent's words are shown
/// with their control characters escaped ([`one_line`]).
pub fn asked(request: &ApprovalRequest) -> String {
    let text = |key: &str| request.arguments.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(one_line);
    let what = match request.kind {
        ApprovalKind::Command => {
            let command = text("command").map_or_else(|| "a command".to_owned(), |c| format!("`{c}`"));
            let cwd = text("cwd").map(|cwd| format!(" in {cwd}")).unwrap_or_default();
            format!("run {command}{cwd}")
        }
        ApprovalKind::FileChange => {
            let place = text("grantRoot").or_else(|| text("file_path")).or_else(|| text("path"));
            place.map_or_else(|| "change files".to_owned(), |p| format!("change files under {p}"))
        }
        ApprovalKind::Permissions => format!("widen its sandbox ({})", compact(&request.arguments)),
        // A tool, and any kind a newer protocol adds.
        _ => {
            let command = text("command").map(|c| format!(": `{c}`"));
            let file = text("file_path").map(|f| format!(" on {f}"));
            format!("use {}{}", one_line(&request.tool_name), command.or(file).unwrap_or_default())
        }
    };
    let reason = request.reason.as_deref().map(|r| format!(" — {}", one_line(r))).unwrap_or_default();
    format!("the agent asks to {what}{reason}")
}

/// The answer line (and its style): what was decided and by whom.
pub fn answered(decision: &ApprovalDecision, decider: &Decider) -> (anstyle::Style, String) {
    let by = decider.by();
    match decision {
        ApprovalDecision::Allow => (GOOD, format!("✓ allowed {by}")),
        ApprovalDecision::AllowForSession => (GOOD, format!("✓ allowed for the session {by}")),
        ApprovalDecision::Abort => (BAD, format!("✗ denied and the turn stopped {by}")),
        _ => (BAD, format!("✗ denied {by}")),
    }
}

/// At most a line of JSON (its strings' control characters are already escaped by JSON).
fn compact(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(120) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The test-only variable that shortens `run`'s approval deadline (milliseconds), so a test can
/// see an unanswered question denied without waiting the backend's ten minutes. Not a setting:
/// nothing documents it for users.
pub const TEST_APPROVAL_TIMEOUT_ENV: &str = "CLAWBRIDGE_TEST_APPROVAL_TIMEOUT_MS";

/// `run`'s approval deadline under [`TEST_APPROVAL_TIMEOUT_ENV`]; `None` (the backend's own) otherwise.
pub fn test_approval_timeout() -> Option<Duration> {
    let millis = std::env::var(TEST_APPROVAL_TIMEOUT_ENV).ok()?.trim().parse().ok()?;
    Some(Duration::from_millis(millis))
}

/// The longest answer line kept (a person types a word); the rest of a longer line is dropped.
const MAX_ANSWER: u64 = 1024;

/// The terminal's typed lines, read by one thread for the whole run. A question that goes
/// unanswered leaves no reader of its own behind to swallow the answer to the next one.
struct Answers {
    lines: tokio::sync::Mutex<tokio::sync::mpsc::Receiver<std::io::Result<String>>>,
}

fn answers() -> &'static Answers {
    static ANSWERS: OnceLock<Answers> = OnceLock::new();
    ANSWERS.get_or_init(|| {
        // One line waits in the channel at most; the reader then waits for a question to take it.
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        std::thread::spawn(move || read_answers(std::io::stdin().lock(), &tx));
        Answers { lines: tokio::sync::Mutex::new(rx) }
    })
}

/// Sends `input`'s lines, each cut at [`MAX_ANSWER`] bytes, until it ends or fails.
fn read_answers(mut input: impl BufRead, tx: &tokio::sync::mpsc::Sender<std::io::Result<String>>) {
    loop {
        let mut line = Vec::new();
        let read = (&mut input).take(MAX_ANSWER).read_until(b'\n', &mut line);
        if !line.ends_with(b"\n") && line.len() as u64 == MAX_ANSWER {
            let mut rest = Vec::new();
            // Bounded as well: what is past the cap of an over-long line is read and dropped piecewise.
            while (&mut input).take(MAX_ANSWER).read_until(b'\n', &mut rest).is_ok_and(|n| n > 0) {
                if rest.ends_with(b"\n") {
                    break;
                }
                rest.clear();
            }
        }
        match read {
            Ok(0) => return,
            Ok(_) => {
                if tx.blocking_send(Ok(String::from_utf8_lossy(&line).into_owned())).is_err() {
                    return;
                }
            }
            Err(error) => {
                let _ = tx.blocking_send(Err(error));
                return;
            }
        }
    }
}

/// Asks at the terminal (the question on stderr, the answer the next line typed after it).
async fn ask_person(screen: &Arc<Screen>) -> Result<ApprovalDecision, String> {
    let mut lines = answers().lines.lock().await;
    // Typed before the question was shown: not an answer to it.
    while lines.try_recv().is_ok() {}
    screen.ask(&paint(ASK, "Allow? [y]es / [a]lways / [n]o / [s]top: "));
    let answer = match lines.recv().await {
        Some(line) => line.map_err(|e| e.to_string())?,
        // stdin ended: nobody will answer.
        None => String::new(),
    };
    Ok(match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::Allow,
        "a" | "always" => ApprovalDecision::AllowForSession,
        "s" | "stop" => ApprovalDecision::Abort,
        _ => ApprovalDecision::Deny { message: None },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(kind: ApprovalKind, tool: &str, arguments: Value, reason: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            kind,
            call_id: "c1".into(),
            tool_name: tool.into(),
            arguments,
            reason: reason.map(Into::into),
        }
    }

    #[test]
    fn the_question_names_what_and_where_and_the_answer_who() {
        let command = request(ApprovalKind::Command, "bash", json!({"command": "ls -a", "cwd": "/w"}), Some("why"));
        assert_eq!(asked(&command), "the agent asks to run `ls -a` in /w — why");
        let file = request(ApprovalKind::FileChange, "apply_patch", json!({"grantRoot": "/w/src"}), None);
        assert_eq!(asked(&file), "the agent asks to change files under /w/src");
        let tool = request(ApprovalKind::Tool, "Write", json!({"file_path": "/w/a.txt"}), None);
        assert_eq!(asked(&tool), "the agent asks to use Write on /w/a.txt");
        let hostile = request(
            ApprovalKind::Command,
            "bash",
            json!({"command": "ls\u{1b}[2J", "cwd": "/w\n✓ allowed"}),
            Some("\u{7}"),
        );
        assert_eq!(asked(&hostile), "the agent asks to run `ls\\u{1b}[2J` in /w\\n✓ allowed — \\u{7}");

        let line = |decision: &ApprovalDecision, decider: &Decider| answered(decision, decider).1;
        assert_eq!(line(&ApprovalDecision::Allow, &Decider::Person), "✓ allowed by you");
        let deny = ApprovalDecision::Deny { message: None };
        assert_eq!(line(&deny, &Decider::Flag(deny.clone())), "✗ denied by --deny");
        assert_eq!(line(&ApprovalDecision::Allow, &Decider::Flag(ApprovalDecision::Allow)), "✓ allowed by --approve");
        let fixed = Decider::Backend(ApprovalDecision::Allow);
        assert_eq!(line(&ApprovalDecision::Allow, &fixed), "✓ allowed by the demo's fixed answer");
        assert!(line(&deny, &Decider::Nobody).contains("no terminal to ask"));
    }
}
