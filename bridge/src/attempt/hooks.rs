//! What the host lends an attempt: approval decisions, host tools, a place to report tool
//! terminals, and a way to ask the user the agent's questions. The CLI wires these to a terminal prompt or flags; the host server wires them to
//! OpenClaw. Every hook may fail or hang: callers put a deadline on each call and fall back to the
//! safe answer (deny, tool failure).

// The payloads are wire data the host protocol carries as they are, so they are defined once, there.
pub use clawbridge_protocol::attempt::hooks::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, HostToolCall, HostToolOutput, HostToolSpec, TerminalOutcome,
    ToolFailure, ToolTerminalReport, ToolTerminalResolution, UserAnswers, UserInputRequest, UserQuestion,
};
use futures::future::BoxFuture;

/// Decides approvals.
pub trait Approver: Send + Sync + 'static {
    /// The decision, or why none could be made (which callers treat as deny: fail closed).
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>>;
}

/// The same answer for every request: `--approve` / `--deny` on the command line, and tests.
#[derive(Clone, Debug)]
pub struct FixedApprover(pub ApprovalDecision);

impl Approver for FixedApprover {
    fn decide(&self, _request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        let decision = self.0.clone();
        Box::pin(async move { Ok(decision) })
    }
}

/// Runs host tools.
pub trait HostTools: Send + Sync + 'static {
    /// The tools to declare to the backend.
    fn specs(&self) -> Vec<HostToolSpec>;
    /// Runs one call; an `Err` becomes a failed tool result for the model.
    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>>;
}

/// No host tools.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHostTools;

impl HostTools for NoHostTools {
    fn specs(&self) -> Vec<HostToolSpec> {
        Vec::new()
    }

    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
        Box::pin(async move { Err(format!("no host tool named `{}` is available", call.tool_name)) })
    }
}

/// Receives every tool terminal exactly once, before the attempt result.
pub trait ToolTerminalObserver: Send + Sync + 'static {
    /// Reports one terminal; the resolution's `last_tool_error` goes into the result.
    fn observe(&self, report: ToolTerminalReport) -> BoxFuture<'static, ToolTerminalResolution>;
}

/// Observes nothing (no host attached).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl ToolTerminalObserver for NoObserver {
    fn observe(&self, _report: ToolTerminalReport) -> BoxFuture<'static, ToolTerminalResolution> {
        Box::pin(async { ToolTerminalResolution::default() })
    }
}

/// Asks the user the agent's questions.
pub trait UserInputAsker: Send + Sync + 'static {
    /// The user's answers, or why no person could answer (callers tell the agent so).
    fn ask(&self, request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>>;
}

/// No one to ask: every question is answered with the fact that no person can be reached, and the
/// agent carries on without answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoUserInput;

impl UserInputAsker for NoUserInput {
    fn ask(&self, _request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>> {
        Box::pin(async { Err("no person can be asked in this run".to_string()) })
    }
}
