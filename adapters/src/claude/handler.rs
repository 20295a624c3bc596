//! Answers the CLI's control requests (`can_use_tool`, `hook_callback`, `mcp_message`, …) as the
//! [`RequestHandler`] of the session's peer. Every request gets an answer: a hook that fails or runs
//! out of time yields the safe one (deny), and so does a handler that fails, panics or outlives the
//! peer's backstop ([`RequestHandler::fallback`]) — never a hang
//! (docs/peers/claude.md#unanswered-control-requests). The peer runs each request in its own task,
//! so a slow approval never stalls stdout.

use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, Approver, HostToolCall, HostTools,
};
use clawbridge_bridge::attempt::{TurnActivity, decide_approval};
use clawbridge_bridge::rpc::{HandlerError, HandlerFailure, RequestHandler};
use clawbridge_protocol::claude::{
    CanUseToolRequest, ControlRequestBody, McpMessageRequest, PermissionResult, decline_elicitation,
};
use clawbridge_protocol::jsonrpc::{ErrorObject, Request, codes};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::mapping::{SHELL_TOOL_NAME, canonical_tool_name};
use super::questions::{self, ASK_USER_QUESTION, SharedAsker};

/// What the turn's mapper must learn from an answer, before the CLI can act on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlNote {
    /// The host denied this call (`TurnMapper::note_denied`).
    Denied {
        /// The `tool_use` id.
        tool_use_id: String,
        /// The reason given to the model.
        message: String,
    },
    /// The host's answer also interrupts the turn (`TurnMapper::note_interrupt_requested`).
    InterruptRequested,
}

/// Answers the CLI's control requests through the attempt's hooks.
#[derive(Clone)]
pub struct ClaudeControlHandler {
    /// Decides `can_use_tool`.
    approver: Arc<dyn Approver>,
    /// Shared with the turn loop.
    activity: Arc<TurnActivity>,
    /// Deadline for one approval decision.
    approval_timeout: Duration,
    /// Host tools, served as the SDK MCP server [`host_server`](Self::host_server).
    tools: Arc<dyn HostTools>,
    /// The SDK MCP server's name (`--mcp-config … {"type":"sdk","name":…}`); `None` serves no tools.
    host_server: Option<String>,
    /// Deadline for one host tool call.
    tool_timeout: Duration,
    /// The turn loop's notes. A note is queued before the answer is returned, and the peer writes
    /// the answer only after that, so the note always precedes the lines the answer causes.
    notes: mpsc::Sender<ControlNote>,
    /// Answers `AskUserQuestion` (nobody by default).
    user_input: SharedAsker,
}

impl std::fmt::Debug for ClaudeControlHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeControlHandler").finish_non_exhaustive()
    }
}
impl ClaudeControlHandler {
    /// A handler using this approver and deadline, whose notes go to `notes`.
    pub fn new(
        approver: Arc<dyn Approver>,
        activity: Arc<TurnActivity>,
        approval_timeout: Duration,
        notes: mpsc::Sender<ControlNote>,
    ) -> Arc<Self> {
        Arc::new(Self::plain(approver, activity, approval_timeout, notes))
    }

    /// A handler that also serves `tools` as the SDK MCP server `server` (calls bounded by
    /// `tool_timeout`).
    pub fn with_host_tools(
        approver: Arc<dyn Approver>,
        activity: Arc<TurnActivity>,
        approval_timeout: Duration,
        tools: Arc<dyn HostTools>,
        server: impl Into<String>,
        tool_timeout: Duration,
        notes: mpsc::Sender<ControlNote>,
    ) -> Arc<Self> {
        Arc::new(Self {
            tools,
            host_server: Some(server.into()),
            tool_timeout,
            ..Self::plain(approver, activity, approval_timeout, notes)
        })
    }

    fn plain(
        approver: Arc<dyn Approver>,
        activity: Arc<TurnActivity>,
        approval_timeout: Duration,
        notes: mpsc::Sender<ControlNote>,
    ) -> Self {
        Self {
            approver,
            activity,
            approval_timeout,
            tools: Arc::new(clawbridge_bridge::attempt::hooks::NoHostTools),
            host_server: None,
            tool_timeout: Duration::from_secs(600),
            notes,
            user_input: questions::nobody(),
        }
    }

    /// This handler, with `AskUserQuestion` answered by whoever `asker` points at.
    pub fn answering_questions_with(self: Arc<Self>, asker: SharedAsker) -> Arc<Self> {
        Arc::new(Self { user_input: asker, ..(*self).clone() })
    }

    /// The answer to one control request (`body` is its `request`), and what the mapper must be told
    /// before the answer is written (the CLI only acts on the answer after reading it).
    pub async fn answer(&self, body: ControlRequestBody) -> (Result<Value, ErrorObject>, Vec<ControlNote>) {
        self.activity.request_seen();
        match body {
            ControlRequestBody::CanUseTool(ask) => self.can_use_tool(ask).await,
            ControlRequestBody::McpMessage(message) => {
                if self.host_server.as_deref() == Some(message.server_name.as_str()) {
                    (Ok(self.serve_mcp(message).await), vec![])
                } else {
                    (Ok(mcp_unsupported(&message)), vec![])
                }
            }
            // We register no hooks in `initialize`, so none should fire; an empty output lets the CLI
            // go on as if there were no hook (permissions still come through `can_use_tool`).
            ControlRequestBody::HookCallback(hook) => {
                tracing::debug!(callback_id = %hook.callback_id, "answering an unregistered hook callback with no output");
                (Ok(json!({})), vec![])
            }
            ControlRequestBody::Elicitation(_) => (Ok(decline_elicitation()), vec![]),
            other => {
                let subtype = other.tag().unwrap_or("(none)").to_owned();
                tracing::debug!(%subtype, "refusing a control request clawbridge does not serve");
                let error =
                    ErrorObject::new(codes::METHOD_NOT_FOUND, format!("unsupported control request: {subtype}"));
                (Err(error), vec![])
            }
        }
    }

    async fn can_use_tool(&self, ask: CanUseToolRequest) -> (Result<Value, ErrorObject>, Vec<ControlNote>) {
        if ask.tool_name == ASK_USER_QUESTION {
            return self.ask_user_question(ask).await;
        }
        let tool_name = canonical_tool_name(&ask.tool_name);
        let call_id = ask.tool_use_id.clone().unwrap_or_default();
        let request = ApprovalRequest {
            kind: if tool_name == SHELL_TOOL_NAME { ApprovalKind::Command } else { ApprovalKind::Tool },
            call_id: call_id.clone(),
            tool_name,
            arguments: ask.input.clone(),
            reason: ask.description.clone(),
        };
        let decision = decide_approval(self.approver.as_ref(), request, self.approval_timeout, &self.activity).await;
        let denied = |message: &str| ControlNote::Denied { tool_use_id: call_id.clone(), message: message.to_owned() };
        let (result, notes) = match decision {
            ApprovalDecision::Allow | ApprovalDecision::AllowForSession => (PermissionResult::allow(ask.input), vec![]),
            ApprovalDecision::Abort => {
                let message = "The user stopped this turn.";
                (PermissionResult::deny_and_interrupt(message), vec![denied(message), ControlNote::InterruptRequested])
            }
            ApprovalDecision::Deny { message } => {
                let message = message.unwrap_or_else(|| "The user declined this tool call.".into());
                let note = denied(&message);
                (PermissionResult::deny(message), vec![note])
            }
            // A decision this build does not know: fail closed.
            _ => {
                let message = "The tool call was not approved.";
                (PermissionResult::deny(message), vec![denied(message)])
            }
        };
        let notes = if call_id.is_empty() {
            notes.into_iter().filter(|n| !matches!(n, ControlNote::Denied { .. })).collect()
        } else {
            notes
        };
        (Ok(result.to_value()), notes)
    }
}

impl ClaudeControlHandler {
    /// `AskUserQuestion`: the person's answers as the tool's input, or a deny that says nobody answered.
    async fn ask_user_question(&self, ask: CanUseToolRequest) -> (Result<Value, ErrorObject>, Vec<ControlNote>) {
        match questions::answer(&ask, &self.user_input, &self.activity, self.approval_timeout).await {
            Ok(allowed) => (Ok(allowed.to_value()), vec![]),
            Err(why) => {
                tracing::warn!(%why, "the user's questions got no answer; telling the model so");
                let message = questions::unanswered_message(&why);
                let notes = match &ask.tool_use_id {
                    Some(id) if !id.is_empty() => {
                        vec![ControlNote::Denied { tool_use_id: id.clone(), message: message.clone() }]
                    }
                    _ => vec![],
                };
                (Ok(PermissionResult::deny(message).to_value()), notes)
            }
        }
    }
}

impl RequestHandler for ClaudeControlHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let this = self.clone();
        Box::pin(async move {
            let body = ControlRequestBody::from_value(request.params_value().unwrap_or(Value::Null));
            let (outcome, notes) = this.answer(body).await;
            for note in notes {
                // A session that is gone reads no notes; the answer still goes out.
                let _ = this.notes.send(note).await;
            }
            outcome.map_err(HandlerError::Reply)
        })
    }

    /// Deny a tool call (telling the mapper, which cannot wait here, if the queue has room), decline
    /// an elicitation, fail an MCP message as a JSON-RPC error, and refuse anything else.
    fn fallback(&self, method: &str, params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        let body = ControlRequestBody::from_value(params.cloned().unwrap_or(Value::Null));
        match body {
            ControlRequestBody::CanUseTool(ask) => {
                let message = format!("The tool call was not approved ({failure}).");
                if let Some(tool_use_id) = ask.tool_use_id.filter(|id| !id.is_empty()) {
                    let note = ControlNote::Denied { tool_use_id, message: message.clone() };
                    if let Err(mpsc::error::TrySendError::Full(_)) = self.notes.try_send(note) {
                        tracing::warn!("the turn's note queue is full; a denied call may count as started");
                    }
                }
                Ok(PermissionResult::deny(message).to_value())
            }
            ControlRequestBody::Elicitation(_) => Ok(decline_elicitation()),
            ControlRequestBody::McpMessage(message) => Ok(mcp_failed(&message, failure)),
            _ => Err(ErrorObject::new(codes::INTERNAL_ERROR, format!("`{method}` was not handled: {failure}"))),
        }
    }
}

impl ClaudeControlHandler {
    /// Answers one MCP message for the host's SDK MCP server: `initialize`, `tools/list`,
    /// `tools/call` (through [`HostTools`], under the tool deadline; any failure is an `isError`
    /// result), an empty result for notifications, and `-32601` for anything else.
    async fn serve_mcp(&self, request: McpMessageRequest) -> Value {
        let message = &request.message;
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let id = match message.get("id") {
            Some(id) if !id.is_null() => id.clone(),
            // A notification (`notifications/initialized`, …) must be answered too.
            _ => return json!({"mcp_response": {"jsonrpc": "2.0", "result": {}}}),
        };
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => {
                let version = params.get("protocolVersion").cloned().unwrap_or_else(|| json!("2025-06-18"));
                json!({"protocolVersion": version, "capabilities": {"tools": {}},
                       "serverInfo": {"name": request.server_name, "version": env!("CARGO_PKG_VERSION")}})
            }
            "tools/list" => {
                let tools: Vec<Value> = self
                    .tools
                    .specs()
                    .into_iter()
                    .map(|spec| json!({"name": spec.name, "description": spec.description, "inputSchema": spec.input_schema}))
                    .collect();
                json!({"tools": tools})
            }
            "tools/call" => {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                let call_id = params
                    .pointer("/_meta/claudecode~1toolUseId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
                let call = HostToolCall { call_id, tool_name: name.clone(), arguments };
                let (text, is_error, images) =
                    match tokio::time::timeout(self.tool_timeout, self.tools.call(call)).await {
                        Ok(Ok(output)) => (output.text, output.is_error, output.images),
                        Ok(Err(error)) => (error, true, Vec::new()),
                        Err(_) => (format!("`{name}` gave no result within {:?}", self.tool_timeout), true, Vec::new()),
                    };
                // MCP's own image content: Claude hands it to the model as an image block.
                let mut content = vec![json!({"type": "text", "text": text})];
                content
                    .extend(images.iter().map(|i| json!({"type": "image", "data": i.data, "mimeType": i.mime_type})));
                json!({"content": content, "isError": is_error})
            }
            "ping" => json!({}),
            other => {
                return json!({"mcp_response": {"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("method not found: {other}")}}});
            }
        };
        json!({"mcp_response": {"jsonrpc": "2.0", "id": id, "result": result}})
    }
}

/// The `mcp_message` answer while clawbridge serves no SDK MCP server: a JSON-RPC error for a
/// request, an empty result for a notification (which must be answered too).
fn mcp_unsupported(message: &McpMessageRequest) -> Value {
    let response = match message.message.get("id") {
        Some(id) if !id.is_null() => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": format!("clawbridge serves no MCP server named {:?}", message.server_name)}}),
        _ => json!({"jsonrpc": "2.0", "result": {}}),
    };
    json!({"mcp_response": response})
}

/// The `mcp_message` answer when serving it failed: a JSON-RPC error for a request, an empty result
/// for a notification.
fn mcp_failed(message: &McpMessageRequest, failure: &HandlerFailure) -> Value {
    let response = match message.message.get("id") {
        Some(id) if !id.is_null() => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": codes::INTERNAL_ERROR, "message": format!("clawbridge could not answer: {failure}")}}),
        _ => json!({"jsonrpc": "2.0", "result": {}}),
    };
    json!({"mcp_response": response})
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawbridge_bridge::attempt::hooks::FixedApprover;
    use futures::future::BoxFuture;

    fn request(body: Value) -> ControlRequestBody {
        ControlRequestBody::from_value(body)
    }

    /// A handler whose notes nobody reads (these tests read them from [`ClaudeControlHandler::answer`]).
    fn handler(approver: Arc<dyn Approver>) -> (Arc<ClaudeControlHandler>, Arc<TurnActivity>) {
        let activity = Arc::new(TurnActivity::default());
        let (notes, _) = mpsc::channel(8);
        (ClaudeControlHandler::new(approver, activity.clone(), Duration::from_millis(200), notes), activity)
    }

    fn bash() -> ControlRequestBody {
        request(json!({"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "toolu_1",
                       "input": {"command": "echo hi | tee x"}}))
    }

    #[tokio::test]
    async fn allow_echoes_the_input_and_deny_notes_the_call() {
        let (h, activity) = handler(Arc::new(FixedApprover(ApprovalDecision::Allow)));
        let (answer, notes) = h.answer(bash()).await;
        let answer = answer.unwrap();
        assert_eq!(answer["behavior"], "allow");
        assert_eq!(answer["updatedInput"]["command"], "echo hi | tee x");
        assert!(notes.is_empty());
        assert!(activity.approval_accepted());

        let (h, _) = handler(Arc::new(FixedApprover(ApprovalDecision::Deny { message: Some("no".into()) })));
        let (answer, notes) = h.answer(bash()).await;
        assert_eq!(answer.unwrap()["behavior"], "deny");
        assert_eq!(notes, vec![ControlNote::Denied { tool_use_id: "toolu_1".into(), message: "no".into() }]);
    }

    struct Hanging;

    impl Approver for Hanging {
        fn decide(&self, _r: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            Box::pin(futures::future::pending())
        }
    }

    struct Failing;

    impl Approver for Failing {
        fn decide(&self, _r: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            Box::pin(async { Err("host gone".to_string()) })
        }
    }

    #[tokio::test]
    async fn a_failing_or_hanging_approver_denies() {
        for approver in [Arc::new(Hanging) as Arc<dyn Approver>, Arc::new(Failing)] {
            let (h, activity) = handler(approver);
            let (answer, notes) = h.answer(bash()).await;
            assert_eq!(answer.unwrap()["behavior"], "deny");
            assert_eq!(notes.len(), 1);
            assert_eq!(activity.people_pending(), 0);
        }
    }

    #[tokio::test]
    async fn other_requests_get_safe_answers() {
        let (h, _) = handler(Arc::new(FixedApprover(ApprovalDecision::Allow)));
        let mcp = request(json!({"subtype": "mcp_message", "server_name": "x",
                                 "message": {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}}));
        let answer = h.answer(mcp).await.0.unwrap();
        assert_eq!(answer["mcp_response"]["error"]["code"], -32601);
        assert_eq!(answer["mcp_response"]["id"], 3);
        let note = request(json!({"subtype": "mcp_message", "server_name": "x",
                                  "message": {"jsonrpc": "2.0", "method": "notifications/initialized"}}));
        assert_eq!(h.answer(note).await.0.unwrap()["mcp_response"]["result"], json!({}));
        let unknown = request(json!({"subtype": "brand_new"}));
        assert!(h.answer(unknown).await.0.is_err(), "an unknown subtype gets an error answer");
        let hook = request(json!({"subtype": "hook_callback", "callback_id": "hook_0", "input": {}}));
        assert!(h.answer(hook).await.0.is_ok(), "a hook callback gets a success answer");
    }

    #[tokio::test]
    async fn host_tools_are_served_over_sdk_mcp() {
        use clawbridge_bridge::attempt::hooks::{HostToolOutput, HostToolSpec};
        struct Echo;
        impl HostTools for Echo {
            fn specs(&self) -> Vec<HostToolSpec> {
                vec![HostToolSpec::new("echo", "Echoes.", &json!({}))]
            }
            fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
                Box::pin(async move {
                    Ok(HostToolOutput {
                        text: format!("{} {}", call.call_id, call.arguments),
                        is_error: false,
                        images: Vec::new(),
                    })
                })
            }
        }
        let activity = Arc::new(TurnActivity::default());
        let approver = Arc::new(FixedApprover(ApprovalDecision::Allow));
        let h = ClaudeControlHandler::with_host_tools(
            approver,
            activity,
            Duration::from_secs(1),
            Arc::new(Echo),
            "openclaw",
            Duration::from_secs(1),
            mpsc::channel(8).0,
        );
        let mcp =
            |message: Value| request(json!({"subtype": "mcp_message", "server_name": "openclaw", "message": message}));
        let init = h
            .answer(mcp(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}),
            ))
            .await
            .0
            .unwrap();
        assert_eq!(init["mcp_response"]["result"]["protocolVersion"], "2025-11-25");
        let list = h.answer(mcp(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))).await.0.unwrap();
        assert_eq!(list["mcp_response"]["result"]["tools"][0]["name"], "echo");
        let call = h
            .answer(mcp(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "ping"}, "_meta": {"claudecode/toolUseId": "toolu_9"}}})))
            .await
            .0
            .unwrap();
        let result = &call["mcp_response"];
        assert_eq!(result["id"], 2);
        assert_eq!(result["result"]["content"][0]["text"], r#"toolu_9 {"text":"ping"}"#);
        assert_eq!(result["result"]["isError"], false);
    }

    /// What the peer sees: notes are queued before `handle` returns the answer, and a handler that
    /// never answered gets the safe answer, with its denial noted too.
    #[tokio::test]
    async fn through_the_peer_notes_come_before_the_answer_and_the_fallback_denies() {
        let activity = Arc::new(TurnActivity::default());
        let (notes_tx, mut notes) = mpsc::channel(8);
        let approver = Arc::new(FixedApprover(ApprovalDecision::Deny { message: Some("no".into()) }));
        let h = ClaudeControlHandler::new(approver, activity, Duration::from_secs(1), notes_tx);
        let params = json!({"subtype": "can_use_tool", "tool_name": "Bash", "tool_use_id": "toolu_1", "input": {}});
        let request = Request::with_value(
            clawbridge_protocol::jsonrpc::RequestId::String("r1".into()),
            "can_use_tool",
            Some(params.clone()),
        );
        let answer = h.handle(request).await.unwrap();
        assert_eq!(answer["behavior"], "deny");
        assert_eq!(
            notes.try_recv().ok(),
            Some(ControlNote::Denied { tool_use_id: "toolu_1".into(), message: "no".into() }),
            "queued before the answer was returned"
        );

        let fallback = h.fallback("can_use_tool", Some(&params), &HandlerFailure::Panicked).unwrap();
        assert_eq!(fallback["behavior"], "deny");
        assert!(matches!(notes.try_recv(), Ok(ControlNote::Denied { tool_use_id, .. }) if tool_use_id == "toolu_1"));
        let elicitation = json!({"subtype": "elicitation"});
        assert_eq!(h.fallback("elicitation", Some(&elicitation), &HandlerFailure::Panicked), Ok(decline_elicitation()));
        let mcp = json!({"subtype": "mcp_message", "server_name": "x", "message": {"jsonrpc": "2.0", "id": 4, "method": "tools/call"}});
        let failed = h.fallback("mcp_message", Some(&mcp), &HandlerFailure::Panicked).unwrap();
        assert_eq!(failed["mcp_response"]["id"], 4);
        assert!(failed["mcp_response"]["error"].is_object());
        assert!(
            h.fallback("hook_callback", Some(&json!({"subtype": "hook_callback"})), &HandlerFailure::Panicked).is_err()
        );
    }
}
