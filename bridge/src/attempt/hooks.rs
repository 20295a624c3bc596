//! What the host lends an attempt: approval decisions, host tools, a place to report tool
//! terminals, and a way to ask the user the agent's questions. The CLI wires these to a terminal prompt or flags; the host server wires them to
//! OpenClaw. Every hook may fail or hang: callers put a deadline on each call and fall back to the
//! safe answer (deny, tool failure).

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::{NativeMutation, ToolFinish, ToolOutcome};

/// What kind of permission the agent asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ApprovalKind {
    /// Run a shell command.
    Command,
    /// Apply a file change.
    FileChange,
    /// Widen the sandbox (network, file system).
    Permissions,
    /// Use a tool (Claude's `can_use_tool`).
    Tool,
}

/// A request for the host's permission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// What is asked.
    pub kind: ApprovalKind,
    /// The tool call it gates, so the host can tie the decision to the call.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// What would run (command and cwd, the change, the tool input).
    pub arguments: Value,
    /// The agent's own justification, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The host's answer. Deny and abort differ: a denied call is skipped and the turn goes on; an
/// abort stops the turn (lessons B1).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run it this once.
    Allow,
    /// Run it, and similar calls for the rest of the session.
    AllowForSession,
    /// Do not run it; the agent is told and continues.
    Deny {
        /// What to tell the agent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run it and stop the turn.
    Abort,
}

impl ApprovalDecision {
    /// Whether the call may run.
    pub fn allows(&self) -> bool {
        matches!(self, ApprovalDecision::Allow | ApprovalDecision::AllowForSession)
    }
}

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

/// A host tool the agent may call, as declared to the backend.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A call of a host tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostToolCall {
    /// The protocol's call id.
    pub call_id: String,
    /// Which tool.
    pub tool_name: String,
    /// Its arguments.
    pub arguments: Value,
}

/// What a host tool returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostToolOutput {
    /// The text given to the model.
    pub text: String,
    /// The tool reported failure.
    #[serde(default)]
    pub is_error: bool,
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

/// A tool's terminal outcome, in the host's `observeToolTerminal` input shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalReport {
    /// The protocol call id.
    pub tool_call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// The arguments that actually reached the tool.
    pub arguments: Value,
    /// False only when the call was blocked before it could run (declined).
    pub execution_started: bool,
    /// `success` or `failure`, from structured status, never display text.
    pub outcome: TerminalOutcome,
    /// Structured failure facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
    /// Side-effect facts for native tools the host has no definition of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_mutation: Option<NativeMutation>,
}

/// The two outcomes the host distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TerminalOutcome {
    /// It succeeded.
    Success,
    /// It failed, was declined or was cancelled.
    Failure,
}

/// The host's `failure` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFailure {
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A machine code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// It ran out of time.
    #[serde(default)]
    pub timed_out: bool,
}

impl ToolTerminalReport {
    /// The report for a finished call. A declined call is reported as never started and, being
    /// blocked, as harmless to replay (openclaw-host.md §6).
    pub fn from_finish(finish: &ToolFinish) -> ToolTerminalReport {
        let (outcome, failure) = match &finish.outcome {
            ToolOutcome::Success => (TerminalOutcome::Success, None),
            ToolOutcome::Failure { error, error_code, timed_out } => (
                TerminalOutcome::Failure,
                Some(ToolFailure { error: error.clone(), error_code: error_code.clone(), timed_out: *timed_out }),
            ),
            ToolOutcome::Declined { reason } => (
                TerminalOutcome::Failure,
                Some(ToolFailure {
                    error: Some(reason.clone().unwrap_or_else(|| "declined".into())),
                    ..Default::default()
                }),
            ),
            ToolOutcome::Cancelled { reason } => (
                TerminalOutcome::Failure,
                Some(ToolFailure {
                    error: Some(reason.clone().unwrap_or_else(|| "cancelled".into())),
                    ..Default::default()
                }),
            ),
        };
        let declined = matches!(finish.outcome, ToolOutcome::Declined { .. });
        let native_mutation = if declined && finish.call.native {
            Some(NativeMutation { mutating_action: false, replay_safe: true })
        } else {
            finish.call.native_mutation
        };
        ToolTerminalReport {
            tool_call_id: finish.call.call_id.clone(),
            tool_name: finish.call.tool_name.clone(),
            arguments: finish.call.arguments.clone(),
            execution_started: finish.execution_started && !declined,
            outcome,
            failure,
            native_mutation,
        }
    }
}

/// What the host made of a terminal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalResolution {
    /// An unresolved (mutating) failure the host wants carried into the attempt result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_error: Option<Value>,
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

/// One question the agent asks the user mid-turn (Codex `item/tool/requestUserInput`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserQuestion {
    /// The question's id: the key of its answer.
    pub id: String,
    /// A short header.
    pub header: String,
    /// The question itself.
    pub question: String,
    /// Whether a free-form answer is allowed besides the options.
    pub is_other: bool,
    /// Whether the answer is secret (never logged or echoed).
    pub is_secret: bool,
    /// The choices, as `(label, description)`; empty for a free-form question.
    pub options: Vec<(String, String)>,
}

/// The agent's questions for the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserInputRequest {
    /// The native item that asks, for correlation.
    pub call_id: Option<String>,
    /// The questions, in order.
    pub questions: Vec<UserQuestion>,
}

/// Answers by question id; a question left out is unanswered, an empty map means no answer at all.
pub type UserAnswers = std::collections::BTreeMap<String, Vec<String>>;

/// Asks the user the agent's questions.
pub trait UserInputAsker: Send + Sync + 'static {
    /// The user's answers, or why there are none (callers then answer the agent with nothing).
    fn ask(&self, request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>>;
}

/// No one to ask: every question goes unanswered, and the agent carries on without answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoUserInput;

impl UserInputAsker for NoUserInput {
    fn ask(&self, _request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>> {
        Box::pin(async { Ok(UserAnswers::new()) })
    }
}
