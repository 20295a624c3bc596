//! Requests the bridge sends to the host while an attempt runs: run a host tool, decide an approval,
//! observe a tool terminal, ask the user. (Transcript appends are in [`super::transcript`].)
//!
//! Every one carries the `attemptId`, so the host routes it to the right `runAttempt` call when many
//! attempts share the connection; beside it sits the hook's own payload from [`crate::attempt::hooks`],
//! so each shape is defined once. The bridge puts a deadline on each request and falls back to the safe
//! answer when the host fails, errs or is silent: deny the approval, fail the tool, no user answer — so
//! the host can always answer with an error when it cannot serve a request.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, HostToolCall, HostToolOutput, ToolTerminalReport, ToolTerminalResolution,
    UserAnswers, UserInputRequest,
};

/// `host/tool/execute` params: the agent called a host tool the attempt declared in `hostTools`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostToolExecuteParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// The call; its fields sit beside `attemptId` on the wire.
    #[serde(flatten)]
    pub call: HostToolCall,
}

/// `host/tool/execute` result: what the tool returned.
pub type HostToolExecuteResponse = HostToolOutput;

/// `host/approval/decide` params: the agent asks permission for a tool call; the host should route it
/// through `requestApproval` / `waitForApproval`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecideParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// What is asked; its fields sit beside `attemptId` on the wire.
    #[serde(flatten)]
    pub request: ApprovalRequest,
    /// How long the bridge waits for the answer before it denies on its own; the host should give up
    /// (and time out its own prompt) by then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `host/approval/decide` result, tagged by `decision`; a decision this bridge does not know is a deny.
pub type ApprovalDecideResponse = ApprovalDecision;

/// `host/toolTerminal/observe` params: a tool call reached its terminal outcome. Sent exactly once per
/// call, before the attempt result; the host passes it to `observeToolTerminal`. The fields after
/// `attemptId` are the host's `observeToolTerminal` input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalObserveParams {
    /// The attempt the call belongs to.
    pub attempt_id: String,
    /// The report; its fields sit beside `attemptId` on the wire.
    #[serde(flatten)]
    pub report: ToolTerminalReport,
}

/// `host/toolTerminal/observe` result: the host's resolution (only `lastToolError` is read).
pub type ToolTerminalObserveResponse = ToolTerminalResolution;

/// `host/userInput/request` params: the agent asks the user questions mid-turn (Codex
/// `item/tool/requestUserInput`). Sent only when the host declared `capabilities.userInput`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputRequestParams {
    /// The attempt that asks.
    pub attempt_id: String,
    /// The questions; their fields sit beside `attemptId` on the wire.
    #[serde(flatten)]
    pub request: UserInputRequest,
    /// How long the bridge waits before it answers the agent with nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
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

impl UserInputResponse {
    /// The answers as the bridge's hooks take them: the chosen labels or free text by question id.
    pub fn into_answers(self) -> UserAnswers {
        self.answers.into_iter().map(|(id, answer)| (id, answer.answers)).collect()
    }
}

/// The answer to one question.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputAnswer {
    /// The chosen labels or free text.
    #[serde(default)]
    pub answers: Vec<String>,
}
