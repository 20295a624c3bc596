//! Requests the bridge sends to the host while an attempt runs: run a host tool, decide an approval,
//! observe a tool terminal, ask the user. (Transcript appends are in [`super::transcript`].)
//!
//! Every one carries the `attemptId`, so the host routes it to the right `runAttempt` call when many
//! attempts share the connection. The bridge puts a deadline on each and falls back to the safe answer
//! when the host fails, errs or is silent: deny the approval, fail the tool, no user answer — so the
//! host can always answer with an error when it cannot serve a request.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::event::NativeMutation;

/// `host/tool/execute` params: the agent called a host tool the attempt declared in `hostTools`.
/// Mirrors the bridge's `HostToolCall`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostToolExecuteParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// The protocol's call id (the same id the `toolStarted` event and the transcript carry).
    pub call_id: String,
    /// Which host tool (a `name` from the attempt's `hostTools`).
    pub tool_name: String,
    /// The arguments the model produced.
    #[serde(default)]
    pub arguments: Value,
}

/// `host/tool/execute` result: what the tool returned. Mirrors the bridge's `HostToolOutput`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostToolExecuteResponse {
    /// The text given to the model.
    #[serde(default)]
    pub text: String,
    /// The tool reported failure (the model sees `text` as the error). A host that cannot run the tool
    /// at all may answer with a JSON-RPC error instead; the bridge turns either into a failed call.
    #[serde(default)]
    pub is_error: bool,
}

/// `host/approval/decide` params: the agent asks permission for a tool call. Mirrors the bridge's
/// `ApprovalRequest`; the host should route it through `requestApproval` / `waitForApproval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecideParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// What kind of permission is asked.
    pub kind: ApprovalKind,
    /// The tool call it gates, so the host can tie the decision to the call.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// What would run (command and cwd, the change, the tool input).
    #[serde(default)]
    pub arguments: Value,
    /// The agent's own justification, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How long the bridge waits for the answer before it denies on its own; the host should give up
    /// (and time out its own prompt) by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// What kind of permission the agent asks for. Mirrors the bridge's `ApprovalKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
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

/// `host/approval/decide` result, tagged by `decision`. Mirrors the bridge's `ApprovalDecision`.
/// Deny and abort differ: a denied call is skipped and the turn goes on; abort stops the turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ApprovalDecideResponse {
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
    /// A decision this bridge does not know; treated as deny (fail closed).
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// `host/toolTerminal/observe` params: a tool call reached its terminal outcome. Sent exactly once per
/// call, before the attempt result; the host passes it to `observeToolTerminal`. The fields after
/// `attemptId` are the host's `observeToolTerminal` input; mirrors the bridge's `ToolTerminalReport`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalObserveParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// The protocol call id.
    pub tool_call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// The arguments that actually reached the tool.
    #[serde(default)]
    pub arguments: Value,
    /// False only when the call was blocked before it could run (declined); otherwise conservative.
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

/// The two outcomes the host distinguishes. Mirrors the bridge's `TerminalOutcome`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TerminalOutcome {
    /// It succeeded.
    Success,
    /// It failed, was declined or was cancelled.
    Failure,
}

/// The host's `failure` object. Mirrors the bridge's `ToolFailure`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFailure {
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A machine code (`EACCES`, `timeout`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// It ran out of time.
    #[serde(default)]
    pub timed_out: bool,
}

/// `host/toolTerminal/observe` result: the host's resolution. The host may return `observeToolTerminal`'s
/// whole output; the bridge reads only `lastToolError` and ignores the rest. Mirrors the bridge's
/// `ToolTerminalResolution`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalObserveResponse {
    /// An unresolved (mutating) failure, carried unchanged into the attempt result's `lastToolError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_error: Option<Value>,
}

/// `host/userInput/request` params: the agent asks the user questions mid-turn (Codex
/// `item/tool/requestUserInput`). Sent only when the host declared `capabilities.userInput`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputRequestParams {
    /// The attempt that asks.
    pub attempt_id: String,
    /// The native item or call that asks, for the host's correlation and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The questions, in order.
    pub questions: Vec<UserInputQuestion>,
    /// How long the bridge waits before it answers the agent with nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// One question for the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputQuestion {
    /// Question id; the key of its answer.
    pub id: String,
    /// Short header.
    #[serde(default)]
    pub header: String,
    /// The question text.
    #[serde(default)]
    pub question: String,
    /// Whether a free-form answer is allowed besides the options.
    #[serde(default)]
    pub is_other: bool,
    /// Whether the answer is secret: the host must not log or echo it.
    #[serde(default)]
    pub is_secret: bool,
    /// Choices, when the question has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<UserInputOption>,
}

/// A choice of a `UserInputQuestion`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputOption {
    /// The choice as shown and answered.
    pub label: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// `host/userInput/request` result: answers by question id. A question left out is unanswered; an
/// empty map means the user gave no answer (dismissed the prompt).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputResponse {
    /// Answers by question id.
    #[serde(default)]
    pub answers: BTreeMap<String, UserInputAnswer>,
}

/// The answer to one question.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputAnswer {
    /// The chosen labels or free text.
    #[serde(default)]
    pub answers: Vec<String>,
}
