//! Requests from the ACP agent: `session/request_permission` → the attempt's approver,
//! `fs/read_text_file` / `fs/write_text_file` → the session's directory ([`super::fs`]). Every
//! request is answered; a failure, a timeout or a cancelled turn gets the safe answer (reject,
//! `cancelled`, an error), and any other method `-32601`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use clawbridge_bridge::attempt::TurnActivity;
use clawbridge_bridge::attempt::decide_approval;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, ApprovalKind, ApprovalRequest, Approver};
use clawbridge_bridge::rpc::{HandlerError, HandlerFailure, RequestHandler};
use clawbridge_protocol::acp::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, ReadTextFileParams, ReadTextFileResponse,
    RequestPermissionParams, RequestPermissionResponse, ToolCallUpdate, ToolKind, WriteTextFileParams,
    codes as acp_codes, methods,
};
use clawbridge_protocol::jsonrpc::{ErrorObject, Request, codes};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::fs::{FsError, FsRoot};
use super::mapping::{Asked, AskedCall, Declined, HOST_DECLINED, MAX_ASKED, MCP_SERVER_NAME, tool_call};

/// What the handler needs to answer file requests.
#[derive(Clone, Debug)]
pub struct FsAccess {
    /// The directory requests are confined to.
    pub root: FsRoot,
    /// Whether the host's native tool policy allows file edits (`fs/write_text_file`).
    pub edits_allowed: bool,
    /// The largest file read.
    pub max_read_bytes: u64,
    /// The largest text written.
    pub max_write_bytes: usize,
}

/// Answers one ACP agent's requests for its session.
pub struct AcpRequestHandler {
    approver: Arc<dyn Approver>,
    activity: Arc<TurnActivity>,
    approval_timeout: Duration,
    fs: FsAccess,
    declined: Declined,
    /// The turn's permission requests and their answers, for the mapper (calls the agent never
    /// reports otherwise).
    asked: Asked,
    /// Cancelled when the running turn is cancelled: pending permission requests answer `cancelled`.
    turn_cancel: Mutex<CancellationToken>,
    /// The running turn's number: a permission answered after its turn ended (a cancelled turn's
    /// late future) must not record its call into the next turn.
    turn: Arc<AtomicU64>,
    /// The host tools the bridge's MCP server serves this session, once it serves them: a
    /// permission request for one of them is allowed without asking, because the host applies its
    /// own tool policy when the call reaches it (asking here too would ask the person twice).
    served_tools: OnceLock<Vec<String>>,
}

impl std::fmt::Debug for AcpRequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpRequestHandler").field("fs", &self.fs).finish_non_exhaustive()
    }
}

impl AcpRequestHandler {
    /// A handler deciding with `approver` and reading and writing inside `fs`.
    pub fn new(
        approver: Arc<dyn Approver>,
        activity: Arc<TurnActivity>,
        approval_timeout: Duration,
        fs: FsAccess,
        declined: Declined,
        asked: Asked,
    ) -> Arc<Self> {
        Arc::new(AcpRequestHandler {
            approver,
            activity,
            approval_timeout,
            fs,
            declined,
            asked,
            turn_cancel: Mutex::new(CancellationToken::new()),
            turn: Arc::new(AtomicU64::new(0)),
            served_tools: OnceLock::new(),
        })
    }

    /// The bridge's MCP server now serves these host tools to the agent.
    pub fn serve_host_tools(&self, names: Vec<String>) {
        let _ = self.served_tools.set(names);
    }

    /// Whether `update` asks to run one of the host tools the bridge's MCP server serves:
    /// claude-agent-acp names the tool (`mcp__clawbridge__<tool>`, mapped by [`tool_call`]);
    /// codex-acp asks with its own MCP elicitation, naming only the server — which serves nothing
    /// but the host's tools and refuses any other name.
    fn for_served_tool(&self, update: &ToolCallUpdate) -> bool {
        let Some(served) = self.served_tools.get() else { return false };
        let call = tool_call(update);
        if !call.native {
            return served.contains(&call.tool_name);
        }
        update.raw_input.as_ref().is_some_and(|input| {
            input["server_name"] == MCP_SERVER_NAME
                && input["request"]["_meta"]["codex_approval_kind"] == "mcp_tool_call"
        })
    }

    /// A new turn begins: permission requests are decided again (not `cancelled`).
    pub fn begin_turn(&self) {
        self.turn.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut token) = self.turn_cancel.lock() {
            *token = CancellationToken::new();
        }
        if let Ok(mut declined) = self.declined.lock() {
            declined.clear();
        }
        if let Ok(mut asked) = self.asked.lock() {
            asked.clear();
        }
    }

    /// The turn was cancelled: every pending and later permission request of it answers `cancelled`.
    pub fn cancel_turn(&self) {
        if let Ok(token) = self.turn_cancel.lock() {
            token.cancel();
        }
    }

    fn turn_token(&self) -> CancellationToken {
        self.turn_cancel.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Why the bridge itself refuses a permission request, without asking the approver: a path it
    /// names resolves outside the session's directory (the agents write with their own tools, so
    /// this is where confinement holds), or it edits files while the host's policy forbids edits.
    fn refusal(&self, call: &ToolCallUpdate) -> Option<String> {
        let edits = matches!(call.kind, Some(ToolKind::Edit | ToolKind::Delete | ToolKind::Move));
        if edits && !self.fs.edits_allowed {
            return Some(FsError::EditsDisabled.to_string());
        }
        named_paths(call).into_iter().find_map(|path| self.fs.root.check(&path).err().map(|e| e.to_string()))
    }

    /// Records the turn's answer to `asked_about` unless that turn has ended.
    fn recorder(&self, asked_about: ToolCallUpdate) -> impl FnOnce(bool, Option<String>) + Send + 'static {
        let (declined, asked, turn) = (self.declined.clone(), self.asked.clone(), self.turn.clone());
        let generation = turn.load(Ordering::SeqCst);
        move |allowed, reason| {
            if turn.load(Ordering::SeqCst) != generation {
                tracing::debug!(call = %asked_about.tool_call_id, "a permission answer arrived after its turn ended");
                return;
            }
            if !allowed {
                if let Ok(mut declined) = declined.lock() {
                    if declined.len() < MAX_ASKED {
                        let why = reason.unwrap_or_else(|| HOST_DECLINED.to_owned());
                        declined.insert(asked_about.tool_call_id.clone(), why);
                    }
                }
            }
            if let Ok(mut asked) = asked.lock() {
                if asked.len() < MAX_ASKED {
                    asked.push(AskedCall { update: asked_about, allowed });
                }
            }
        }
    }

    fn permission(&self, params: RequestPermissionParams) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let record = self.recorder(params.tool_call.clone());
        if let Some(why) = self.refusal(&params.tool_call) {
            tracing::info!(call = %params.tool_call.tool_call_id, %why, "refused a permission request without asking the host");
            let outcome = choose(&params.options, &ApprovalDecision::Deny { message: None });
            record(false, Some(why));
            return Box::pin(async move {
                Ok(serde_json::to_value(RequestPermissionResponse { outcome }).unwrap_or(Value::Null))
            });
        }
        if self.for_served_tool(&params.tool_call) {
            tracing::debug!(call = %params.tool_call.tool_call_id, "allowed a host tool's permission request: the host decides when it runs");
            let outcome = choose(&params.options, &ApprovalDecision::Allow);
            let allowed = allows(&params.options, &outcome);
            record(allowed, None);
            return Box::pin(async move {
                Ok(serde_json::to_value(RequestPermissionResponse { outcome }).unwrap_or(Value::Null))
            });
        }
        let call = tool_call(&params.tool_call);
        let kind = match params.tool_call.kind {
            Some(ToolKind::Execute) => ApprovalKind::Command,
            Some(ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => ApprovalKind::FileChange,
            _ => ApprovalKind::Tool,
        };
        let request = ApprovalRequest {
            kind,
            call_id: call.call_id.clone(),
            tool_name: call.tool_name,
            arguments: call.arguments,
            reason: params.tool_call.title.clone(),
        };
        let (approver, activity, limit) = (self.approver.clone(), self.activity.clone(), self.approval_timeout);
        let cancel = self.turn_token();
        let options = params.options;
        Box::pin(async move {
            let outcome = if cancel.is_cancelled() {
                PermissionOutcome::Cancelled
            } else {
                tokio::select! {
                    decision = decide_approval(approver.as_ref(), request, limit, &activity) => {
                        choose(&options, &decision)
                    }
                    () = cancel.cancelled() => PermissionOutcome::Cancelled,
                }
            };
            let allowed = allows(&options, &outcome);
            record(allowed, None);
            Ok(serde_json::to_value(RequestPermissionResponse { outcome }).unwrap_or(Value::Null))
        })
    }

    /// A permission request that does not decode: withdrawn (`cancelled` needs no options), and
    /// the call it names, if any, still recorded as declined so it gets its terminal.
    fn undecodable_permission(
        &self,
        request: &Request,
        error: &HandlerError,
    ) -> BoxFuture<'static, Result<Value, HandlerError>> {
        tracing::warn!(%error, "answering an undecodable permission request `cancelled`");
        let raw: Value =
            request.params.as_deref().and_then(|r| serde_json::from_str(r.get()).ok()).unwrap_or(Value::Null);
        let call = &raw["toolCall"];
        if let Some(id) = call["toolCallId"].as_str() {
            let update = serde_json::from_value::<ToolCallUpdate>(call.clone())
                .unwrap_or_else(|_| ToolCallUpdate { tool_call_id: id.to_owned(), ..ToolCallUpdate::default() });
            self.recorder(update)(false, Some(format!("the permission request could not be read: {error}")));
        }
        let outcome = PermissionOutcome::Cancelled;
        Box::pin(async move { Ok(serde_json::to_value(RequestPermissionResponse { outcome }).unwrap_or(Value::Null)) })
    }

    fn read(&self, params: ReadTextFileParams) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let fs = self.fs.clone();
        Box::pin(async move {
            let read = tokio::task::spawn_blocking(move || {
                fs.root.read(&params.path, params.line, params.limit, fs.max_read_bytes)
            })
            .await
            .map_err(|e| HandlerError::Failed(e.to_string()))?;
            match read {
                Ok(content) => Ok(serde_json::to_value(ReadTextFileResponse { content }).unwrap_or(Value::Null)),
                Err(error) => Err(HandlerError::Reply(fs_error(&error))),
            }
        })
    }

    fn write(&self, params: WriteTextFileParams) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let fs = self.fs.clone();
        Box::pin(async move {
            if !fs.edits_allowed {
                return Err(HandlerError::Reply(fs_error(&FsError::EditsDisabled)));
            }
            let written =
                tokio::task::spawn_blocking(move || fs.root.write(&params.path, &params.content, fs.max_write_bytes))
                    .await
                    .map_err(|e| HandlerError::Failed(e.to_string()))?;
            match written {
                Ok(()) => Ok(Value::Null),
                Err(error) => Err(HandlerError::Reply(fs_error(&error))),
            }
        })
    }
}

/// The paths a tool call names: its `locations` and the usual path fields of its input.
fn named_paths(call: &ToolCallUpdate) -> Vec<String> {
    let located = call.locations.iter().flatten().filter_map(|l| l["path"].as_str());
    let input = call.raw_input.as_ref();
    let fields = ["file_path", "path", "notebook_path"];
    let inputs = fields.iter().filter_map(|f| input.and_then(|i| i[*f].as_str()));
    located.chain(inputs).filter(|p| !p.is_empty()).map(ToOwned::to_owned).collect()
}

/// The JSON-RPC error a refused file request gets.
fn fs_error(error: &FsError) -> ErrorObject {
    let code = if error.is_not_found() { acp_codes::RESOURCE_NOT_FOUND } else { codes::INVALID_PARAMS };
    ErrorObject::new(code, error.to_string())
}

/// The option a decision picks, by the options' kinds (their ids are the agent's own): allow →
/// `allow_once` only (a one-time allow never becomes `allow_always`; not offered → refused),
/// allow-for-the-session → `allow_always` (else `allow_once`), anything else → `reject_once`
/// (else `reject_always`); nothing fitting → `cancelled`.
pub fn choose(options: &[PermissionOption], decision: &ApprovalDecision) -> PermissionOutcome {
    use PermissionOptionKind::{AllowAlways, AllowOnce, RejectAlways, RejectOnce};
    let preference: &[PermissionOptionKind] = match decision {
        ApprovalDecision::Allow => &[AllowOnce, RejectOnce, RejectAlways],
        ApprovalDecision::AllowForSession => &[AllowAlways, AllowOnce],
        _ => &[RejectOnce, RejectAlways],
    };
    preference
        .iter()
        .find_map(|kind| options.iter().find(|o| &o.kind == kind))
        .map_or(PermissionOutcome::Cancelled, |o| PermissionOutcome::Selected { option_id: o.option_id.clone() })
}

/// Whether `outcome` selected one of the allowing options.
fn allows(options: &[PermissionOption], outcome: &PermissionOutcome) -> bool {
    matches!(outcome, PermissionOutcome::Selected { option_id }
        if options.iter().any(|o| &o.option_id == option_id
            && matches!(o.kind, PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways)))
}

fn decode<T: serde::de::DeserializeOwned>(request: &Request) -> Result<T, HandlerError> {
    let raw = request.params.as_deref().map_or("null", |raw| raw.get());
    serde_json::from_str(raw)
        .map_err(|e| HandlerError::Reply(ErrorObject::new(codes::INVALID_PARAMS, format!("`{}`: {e}", request.method))))
}

impl RequestHandler for AcpRequestHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        self.activity.request_seen();
        let answer = match request.method.as_str() {
            methods::REQUEST_PERMISSION => match decode(&request) {
                Ok(params) => Ok(self.permission(params)),
                Err(error) => Ok(self.undecodable_permission(&request, &error)),
            },
            methods::FS_READ_TEXT_FILE => decode(&request).map(|p| self.read(p)),
            methods::FS_WRITE_TEXT_FILE => decode(&request).map(|p| self.write(p)),
            other => {
                let error =
                    ErrorObject::new(codes::METHOD_NOT_FOUND, format!("clawbridge does not implement `{other}`"));
                Err(HandlerError::Reply(error))
            }
        };
        match answer {
            Ok(future) => future,
            Err(error) => Box::pin(async move { Err(error) }),
        }
    }

    fn fallback(&self, method: &str, params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        tracing::warn!(%method, %failure, "answering the ACP agent with the safe default");
        if method == methods::REQUEST_PERMISSION {
            // Refuse: the option the agent offers for it, else withdraw the question.
            let options: Vec<PermissionOption> = params
                .and_then(|p| p.get("options"))
                .and_then(|o| serde_json::from_value(o.clone()).ok())
                .unwrap_or_default();
            let outcome = choose(&options, &ApprovalDecision::Deny { message: None });
            return Ok(serde_json::to_value(RequestPermissionResponse { outcome }).unwrap_or(Value::Null));
        }
        Err(ErrorObject::new(codes::INTERNAL_ERROR, format!("`{method}` was not handled: {failure}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawbridge_bridge::attempt::hooks::FixedApprover;
    use clawbridge_protocol::jsonrpc::RequestId;
    use serde_json::json;

    /// A handler over a fresh directory, deciding with `approver`.
    fn handler(approver: Arc<dyn Approver>) -> (Arc<AcpRequestHandler>, Declined, Asked, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let fs = FsAccess {
            root: FsRoot::new(dir.path()).unwrap(),
            edits_allowed: true,
            max_read_bytes: 1024,
            max_write_bytes: 1024,
        };
        let (declined, asked) = (Declined::default(), Asked::default());
        let h = AcpRequestHandler::new(
            approver,
            Arc::new(TurnActivity::default()),
            Duration::from_secs(5),
            fs,
            declined.clone(),
            asked.clone(),
        );
        h.begin_turn();
        (h, declined, asked, dir)
    }

    fn ask(params: Value) -> Request {
        Request::with_value(RequestId::from(1), methods::REQUEST_PERMISSION, Some(params))
    }

    fn write_request(id: &str, path: &str) -> Value {
        json!({"sessionId": "s", "toolCall": {"toolCallId": id, "kind": "edit", "title": "Write",
               "locations": [{"path": path}], "rawInput": {"file_path": path, "content": "x"}},
               "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                           {"optionId": "no", "name": "Reject", "kind": "reject_once"}]})
    }

    #[tokio::test]
    async fn a_request_naming_a_path_outside_the_root_is_refused_even_when_the_host_allows() {
        let (h, declined, asked, dir) = handler(Arc::new(FixedApprover(ApprovalDecision::Allow)));
        let answer = h.handle(ask(write_request("out", "/etc/clawbridge-outside.txt"))).await.unwrap();
        assert_eq!(answer["outcome"], json!({"outcome": "selected", "optionId": "no"}));
        let why = declined.lock().unwrap().get("out").cloned().unwrap();
        assert!(why.contains("outside the session's directory"), "{why}");
        // Relative and `rawInput`-only paths count too; inside the root the host decides.
        let mut only_input = write_request("rel", "../x.txt");
        only_input["toolCall"]["locations"] = json!([]);
        let answer = h.handle(ask(only_input)).await.unwrap();
        assert_eq!(answer["outcome"]["optionId"], "no");
        let inside = dir.path().canonicalize().unwrap().join("in.txt");
        let answer = h.handle(ask(write_request("in", inside.to_str().unwrap()))).await.unwrap();
        assert_eq!(answer["outcome"]["optionId"], "yes");
        assert_eq!(asked.lock().unwrap().iter().map(|a| a.allowed).collect::<Vec<_>>(), [false, false, true]);
    }

    #[tokio::test]
    async fn an_undecodable_request_is_withdrawn_and_its_call_still_recorded() {
        let (h, declined, asked, _dir) = handler(Arc::new(FixedApprover(ApprovalDecision::Allow)));
        let broken = json!({"sessionId": "s", "toolCall": {"toolCallId": "c", "kind": 7}, "options": "none"});
        let answer = h.handle(ask(broken)).await.unwrap();
        assert_eq!(answer, json!({"outcome": {"outcome": "cancelled"}}));
        assert!(declined.lock().unwrap().contains_key("c"));
        assert_eq!(asked.lock().unwrap().len(), 1);
        let answer = h.handle(ask(json!({"nothing": true}))).await.unwrap();
        assert_eq!(answer, json!({"outcome": {"outcome": "cancelled"}}));
    }

    /// Allows, keeping the requests it was asked.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<ApprovalRequest>>);

    impl Approver for Recorder {
        fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            self.0.lock().unwrap().push(request);
            Box::pin(async { Ok(ApprovalDecision::Allow) })
        }
    }

    #[tokio::test]
    async fn an_argv_command_is_asked_about_as_one_shell_quoted_line() {
        let recorder = Arc::new(Recorder::default());
        let (h, _declined, _asked, _dir) = handler(recorder.clone());
        // The shape of codex-acp's request (fixtures/recordings/acp/codex-acp/tool-allowed.jsonl).
        let request = json!({"sessionId": "s", "toolCall": {"toolCallId": "call_1", "kind": "execute",
               "title": "Run echo", "rawInput": {"command": ["/bin/bash", "-lc", "echo live-$((6*7))"]}},
               "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]});
        h.handle(ask(request)).await.unwrap();
        let asked = recorder.0.lock().unwrap();
        assert_eq!(asked[0].arguments["command"], "/bin/bash -lc 'echo live-$((6*7))'");
    }

    #[tokio::test]
    async fn a_served_host_tool_is_allowed_without_asking_and_anything_else_is_asked() {
        let recorder = Arc::new(Recorder::default());
        let (h, _declined, asked, _dir) = handler(recorder.clone());
        let options = json!([{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                             {"optionId": "no", "name": "Reject", "kind": "reject_once"}]);
        // claude-agent-acp's shape: the tool's MCP name as title.
        let claude = |tool: &str| {
            json!({"sessionId": "s", "toolCall": {"toolCallId": "toolu_1",
            "title": format!("mcp__clawbridge__{tool}"), "rawInput": {"city": "Paris"}}, "options": options})
        };
        // codex-acp's: its own MCP elicitation, naming the server.
        let codex = |server: &str| {
            json!({"sessionId": "s", "toolCall": {"toolCallId": "call_1",
            "title": "Approve MCP tool call", "rawInput": {"server_name": server, "request": {
                "message": "Allow?", "_meta": {"codex_approval_kind": "mcp_tool_call"}}}}, "options": options})
        };
        // Before the server serves anything, every request is asked.
        h.handle(ask(claude("lookup_weather"))).await.unwrap();
        assert_eq!(recorder.0.lock().unwrap().len(), 1);
        h.serve_host_tools(vec!["lookup_weather".into()]);
        for request in [claude("lookup_weather"), codex("clawbridge")] {
            let answer = h.handle(ask(request)).await.unwrap();
            assert_eq!(answer["outcome"]["optionId"], "yes");
        }
        assert_eq!(recorder.0.lock().unwrap().len(), 1, "the served tools were not asked about");
        // A tool the server does not serve, or another server's elicitation, goes to the approver.
        h.handle(ask(claude("rm_rf"))).await.unwrap();
        h.handle(ask(codex("github"))).await.unwrap();
        assert_eq!(recorder.0.lock().unwrap().len(), 3);
        assert!(asked.lock().unwrap().iter().all(|a| a.allowed), "every call is recorded with its answer");
    }

    /// Decides only when told to.
    struct Gate(tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>);

    impl Approver for Gate {
        fn decide(&self, _r: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
            let open = self.0.try_lock().ok().and_then(|mut r| r.take());
            Box::pin(async move {
                if let Some(open) = open {
                    let _ = open.await;
                }
                Ok(ApprovalDecision::Allow)
            })
        }
    }

    #[tokio::test]
    async fn a_late_answer_of_an_ended_turn_is_not_recorded_into_the_next() {
        let (open, gate) = tokio::sync::oneshot::channel();
        let (h, declined, asked, dir) = handler(Arc::new(Gate(tokio::sync::Mutex::new(Some(gate)))));
        let inside = dir.path().canonicalize().unwrap().join("in.txt");
        let pending = h.handle(ask(write_request("old", inside.to_str().unwrap())));
        // The turn ends (without a cancel reaching this request) and the next begins.
        h.begin_turn();
        open.send(()).unwrap();
        let answer = pending.await.unwrap();
        assert_eq!(answer["outcome"]["optionId"], "yes", "the agent still gets its answer");
        assert!(asked.lock().unwrap().is_empty(), "no phantom call in the new turn");
        assert!(declined.lock().unwrap().is_empty());
    }

    fn option(id: &str, kind: PermissionOptionKind) -> PermissionOption {
        PermissionOption { option_id: id.into(), name: id.into(), kind }
    }

    #[test]
    fn options_are_chosen_by_kind_and_always_only_when_the_host_said_so() {
        let options = [
            option("a", PermissionOptionKind::AllowAlways),
            option("o", PermissionOptionKind::AllowOnce),
            option("r", PermissionOptionKind::RejectOnce),
        ];
        let selected = |id: &str| PermissionOutcome::Selected { option_id: id.into() };
        assert_eq!(choose(&options, &ApprovalDecision::Allow), selected("o"));
        assert_eq!(choose(&options, &ApprovalDecision::AllowForSession), selected("a"));
        assert_eq!(choose(&options, &ApprovalDecision::Deny { message: None }), selected("r"));
        assert_eq!(choose(&options, &ApprovalDecision::Abort), selected("r"));
        assert_eq!(choose(&options[..2], &ApprovalDecision::Unknown), PermissionOutcome::Cancelled);
        assert_eq!(choose(&[], &ApprovalDecision::Allow), PermissionOutcome::Cancelled);
        // A one-time allow never grants for the session: without `allow_once` it refuses.
        assert_eq!(choose(&[options[0].clone(), options[2].clone()], &ApprovalDecision::Allow), selected("r"));
        assert_eq!(choose(&options[..1], &ApprovalDecision::Allow), PermissionOutcome::Cancelled);
    }
}
