//! Who answers a run's approval requests, and the terminal prompt that asks a person.

use std::io::{BufRead, IsTerminal};
use std::sync::Arc;

use clawbridge_bridge::attempt::hooks::{ApprovalDecision, ApprovalRequest, Approver, FixedApprover};
use clawbridge_bridge::backend::{Backend, FixedApproval};
use futures::future::BoxFuture;

/// The approver a run uses: the backend's fixed answer, else the fixed answer given, else the
/// terminal, else deny (nobody to ask).
pub fn approver(backend: &dyn Backend, approval: Option<&ApprovalDecision>) -> Arc<dyn Approver> {
    match (backend.facts().fixed_approval, approval) {
        (Some(FixedApproval::Allow), _) => Arc::new(FixedApprover(ApprovalDecision::Allow)),
        (_, Some(decision)) => Arc::new(FixedApprover(decision.clone())),
        (_, None) if std::io::stdin().is_terminal() => Arc::new(TerminalApprover),
        (_, None) => Arc::new(FixedApprover(ApprovalDecision::Deny {
            message: Some("no terminal to ask and neither --approve nor --deny was given".into()),
        })),
    }
}

/// Asks at the terminal (stderr for the question, stdin for the answer).
#[derive(Debug)]
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let what = request.arguments.get("command").and_then(|c| c.as_str()).unwrap_or("");
                eprint!(
                    "\n{} wants to run {what}{}\nAllow? [y]es / [a]lways / [n]o / [s]top: ",
                    request.tool_name,
                    request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                );
                let mut answer = String::new();
                std::io::stdin().lock().read_line(&mut answer).map_err(|e| e.to_string())?;
                Ok(match answer.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => ApprovalDecision::Allow,
                    "a" | "always" => ApprovalDecision::AllowForSession,
                    "s" | "stop" => ApprovalDecision::Abort,
                    _ => ApprovalDecision::Deny { message: None },
                })
            })
            .await
            .map_err(|e| e.to_string())?
        })
    }
}
