//! The attempt hooks wired to the host: approvals → `host/approval/decide`, host tools →
//! `host/tool/execute`, tool terminals → `host/toolTerminal/observe`, the agent's questions →
//! `host/userInput/request`. Each call has a deadline and a
//! fail-closed fallback (deny, tool failure, no `lastToolError`); a capability the host did not
//! declare is never asked for.

use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, HostToolCall, HostToolOutput, HostToolSpec, HostTools,
    ToolTerminalObserver, ToolTerminalReport, ToolTerminalResolution, UserAnswers, UserInputAsker, UserInputRequest,
};
use clawbridge_bridge::rpc::RpcPeer;
use clawbridge_protocol::host::{
    ApprovalDecideParams, ApprovalDecideResponse, HostToolExecuteParams, HostToolExecuteResponse,
    ToolTerminalObserveParams, ToolTerminalObserveResponse, UserInputRequestParams, UserInputResponse, methods,
};
use futures::future::BoxFuture;

/// How long the host may take to decide an approval (a person may be asked).
pub const APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a host tool may run.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the host may take to observe a tool terminal; under the Codex session's own 10 s cap.
pub const OBSERVE_TIMEOUT: Duration = Duration::from_secs(9);

/// Asks the host to decide approvals; anything but a clear allow is a deny.
pub struct HostApprover {
    /// The host connection.
    pub peer: RpcPeer,
    /// The attempt the approvals belong to.
    pub attempt_id: String,
    /// Whether the host serves `host/approval/decide`.
    pub enabled: bool,
}

impl Approver for HostApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        let peer = self.peer.clone();
        let attempt_id = self.attempt_id.clone();
        let enabled = self.enabled;
        Box::pin(async move {
            if !enabled {
                return Ok(ApprovalDecision::Deny { message: Some("the host decides no approvals".into()) });
            }
            let params =
                ApprovalDecideParams { attempt_id, request, timeout_ms: Some(APPROVAL_TIMEOUT.as_millis() as u64) };
            let decision: ApprovalDecideResponse = peer
                .request_typed_with_timeout(methods::HOST_APPROVAL_DECIDE, Some(&params), APPROVAL_TIMEOUT)
                .await
                .map_err(|e| e.to_string())?;
            Ok(match decision {
                ApprovalDecision::Unknown => {
                    ApprovalDecision::Deny { message: Some("the host answered with an unknown decision".into()) }
                }
                known => known,
            })
        })
    }
}

/// The attempt's host tools, run through `host/tool/execute`.
pub struct HostToolsClient {
    /// The host connection.
    pub peer: RpcPeer,
    /// The attempt the calls belong to.
    pub attempt_id: String,
    /// The tools declared to the backend (empty when the host serves none).
    pub specs: Vec<HostToolSpec>,
}

impl HostTools for HostToolsClient {
    fn specs(&self) -> Vec<HostToolSpec> {
        self.specs.clone()
    }

    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
        let peer = self.peer.clone();
        let attempt_id = self.attempt_id.clone();
        let known = self.specs.iter().any(|s| s.name == call.tool_name);
        Box::pin(async move {
            if !known {
                return Err(format!("no host tool named `{}` is available", call.tool_name));
            }
            let params = HostToolExecuteParams { attempt_id, call };
            let mut output: HostToolExecuteResponse = peer
                .request_typed_with_timeout(methods::HOST_TOOL_EXECUTE, Some(&params), TOOL_TIMEOUT)
                .await
                .map_err(|e| e.to_string())?;
            let (images, note) = clawbridge_bridge::input::tool_images(std::mem::take(&mut output.images));
            output.images = images;
            if let Some(note) = note {
                output.text = if output.text.is_empty() { note } else { format!("{}\n{note}", output.text) };
            }
            Ok(output)
        })
    }
}

/// Reports tool terminals to the host and brings back its `lastToolError`.
pub struct HostObserver {
    /// The host connection.
    pub peer: RpcPeer,
    /// The attempt the terminals belong to.
    pub attempt_id: String,
    /// Whether the host serves `host/toolTerminal/observe`.
    pub enabled: bool,
}

impl ToolTerminalObserver for HostObserver {
    fn observe(&self, report: ToolTerminalReport) -> BoxFuture<'static, ToolTerminalResolution> {
        let peer = self.peer.clone();
        let attempt_id = self.attempt_id.clone();
        let enabled = self.enabled;
        Box::pin(async move {
            if !enabled {
                return ToolTerminalResolution::default();
            }
            let params = ToolTerminalObserveParams { attempt_id, report };
            match peer.request_with_timeout(methods::HOST_TOOL_TERMINAL_OBSERVE, Some(&params), OBSERVE_TIMEOUT).await {
                Ok(answer) => serde_json::from_value::<ToolTerminalObserveResponse>(answer).unwrap_or_default(),
                Err(error) => {
                    tracing::warn!(%error, "the host did not observe a tool terminal; no lastToolError");
                    ToolTerminalResolution::default()
                }
            }
        })
    }
}

/// Asks the host's user the agent's questions through `host/userInput/request` (only wired when the
/// host declared `capabilities.userInput`).
pub struct HostUserInput {
    /// The host connection.
    pub peer: RpcPeer,
    /// The attempt that asks.
    pub attempt_id: String,
}

impl UserInputAsker for HostUserInput {
    fn ask(&self, request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>> {
        let peer = self.peer.clone();
        let params = UserInputRequestParams {
            attempt_id: self.attempt_id.clone(),
            request,
            timeout_ms: Some(APPROVAL_TIMEOUT.as_millis() as u64),
        };
        Box::pin(async move {
            let answer = peer
                .request_with_timeout(methods::HOST_USER_INPUT_REQUEST, Some(&params), APPROVAL_TIMEOUT)
                .await
                .map_err(|e| e.to_string())?;
            let response: UserInputResponse = serde_json::from_value(answer).map_err(|e| e.to_string())?;
            Ok(response.into_answers())
        })
    }
}
