//! Answers Codex's requests through the attempt's hooks. Every request is answered: a hook that
//! fails or runs out of time yields the safe answer (decline, tool failure), never a hang
//! (docs/peers/codex.md#decline-is-not-cancel). Requests Codex re-sends after a resume are answered from a cache, never run twice
//! (docs/peers/codex.md#re-sent-server-requests).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, Approver, HostToolCall, HostToolOutput, HostTools, NoUserInput,
    UserInputAsker, UserInputRequest, UserQuestion,
};
use clawbridge_bridge::attempt::{TurnActivity, decide_approval};
use clawbridge_bridge::rpc::{HandlerError, HandlerFailure, RequestHandler};
use clawbridge_protocol::codex::DynamicToolContentItem;
use clawbridge_protocol::codex::server_requests::{
    CommandExecutionApprovalDecision, CommandExecutionRequestApprovalResponse, DynamicToolCallResponse,
    FileChangeApprovalDecision, FileChangeRequestApprovalResponse, PermissionGrantScope,
    PermissionsRequestApprovalResponse, ServerRequest, ToolRequestUserInputParams, ToolRequestUserInputResponse,
    UserInputAnswer,
};
use clawbridge_protocol::jsonrpc::{ErrorObject, Request};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use serde::Serialize;
use serde_json::{Value, json};

use super::mapping::{PATCH_TOOL_NAME, SHELL_TOOL_NAME};

type CachedAnswer = Shared<BoxFuture<'static, Value>>;

/// The [`RequestHandler`] of a Codex connection.
pub struct CodexRequestHandler {
    /// Decides approvals.
    approver: Arc<dyn Approver>,
    /// Runs dynamic (host) tools.
    tools: Arc<dyn HostTools>,
    /// Shared with the turn loop.
    activity: Arc<TurnActivity>,
    /// Deadline for one approval decision.
    approval_timeout: Duration,
    /// Deadline for one host tool call.
    tool_timeout: Duration,
    /// Asks the user Codex's questions; set after connecting, so it can change between turns.
    user_input: RwLock<Arc<dyn UserInputAsker>>,
    /// Answers by dedupe key: tool calls by (thread, turn, call), approvals by (kind, thread, item),
    /// so a re-sent request is answered the same and never run twice (docs/peers/codex.md#re-sent-server-requests).
    answers: Mutex<HashMap<String, CachedAnswer>>,
}

impl std::fmt::Debug for CodexRequestHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexRequestHandler").finish_non_exhaustive()
    }
}
impl CodexRequestHandler {
    /// A handler using these hooks and deadlines.
    pub fn new(
        approver: Arc<dyn Approver>,
        tools: Arc<dyn HostTools>,
        activity: Arc<TurnActivity>,
        approval_timeout: Duration,
        tool_timeout: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            approver,
            tools,
            activity,
            approval_timeout,
            tool_timeout,
            user_input: RwLock::new(Arc::new(NoUserInput)),
            answers: Mutex::default(),
        })
    }

    /// Who answers Codex's questions for the user from now on (by default: no one, so they go
    /// unanswered and Codex carries on).
    pub fn set_user_input(&self, asker: Arc<dyn UserInputAsker>) {
        *self.user_input.write().unwrap_or_else(std::sync::PoisonError::into_inner) = asker;
    }

    /// The user's answers to `p`, or none when asking fails or takes longer than an approval may.
    fn ask_user(&self, p: ToolRequestUserInputParams) -> BoxFuture<'static, Value> {
        let asker = self.user_input.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let activity = self.activity.clone();
        let limit = self.approval_timeout;
        let request = UserInputRequest {
            call_id: Some(p.item_id),
            questions: p
                .questions
                .into_iter()
                .map(|q| UserQuestion {
                    id: q.id,
                    header: q.header,
                    question: q.question,
                    is_other: q.is_other,
                    is_secret: q.is_secret,
                    options: q.options.unwrap_or_default().into_iter().map(|o| (o.label, o.description)).collect(),
                })
                .collect(),
        };
        let question_ids: Vec<String> = request.questions.iter().map(|q| q.id.clone()).collect();
        Box::pin(async move {
            // A person answering is not a stuck turn (docs/peers/codex.md#idle-watchdog).
            let _pending = activity.person_asked();
            let answers = match tokio::time::timeout(limit, asker.ask(request)).await {
                Ok(Ok(answers)) => answers,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "the user could not be asked; telling the model so");
                    unanswered(&question_ids, &error)
                }
                Err(_) => {
                    tracing::warn!(?limit, "no answer from the user in time; telling the model so");
                    unanswered(&question_ids, &format!("nobody answered within {}s", limit.as_secs()))
                }
            };
            let answers = answers.into_iter().map(|(id, answers)| (id, UserInputAnswer { answers })).collect();
            to_value(ToolRequestUserInputResponse { answers })
        })
    }

    /// Forgets cached answers (after a turn: a re-sent request comes within its turn).
    pub fn forget_answers(&self) {
        self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// The answer for `key`, computing it with `make` only the first time.
    fn once(&self, key: String, make: impl FnOnce() -> BoxFuture<'static, Value>) -> CachedAnswer {
        let mut answers = self.answers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        answers.entry(key).or_insert_with(|| make().shared()).clone()
    }

    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, ApprovalDecision> {
        let approver = self.approver.clone();
        let activity = self.activity.clone();
        let limit = self.approval_timeout;
        Box::pin(async move { decide_approval(approver.as_ref(), request, limit, &activity).await })
    }

    fn answer(&self, request: ServerRequest) -> BoxFuture<'static, Result<Value, HandlerError>> {
        match request {
            ServerRequest::CommandExecutionApproval(p) => {
                let ask = ApprovalRequest {
                    kind: ApprovalKind::Command,
                    call_id: p.item_id.clone(),
                    tool_name: SHELL_TOOL_NAME.into(),
                    arguments: json!({"command": p.command, "cwd": p.cwd}),
                    reason: p.reason.clone(),
                };
                let decision = self.decide(ask);
                let key = format!("command-approval:{}:{}", p.thread_id, p.approval_key());
                cached(self.once(key, || {
                    Box::pin(async move {
                        let decision = match decision.await {
                            ApprovalDecision::Allow => CommandExecutionApprovalDecision::Accept,
                            ApprovalDecision::AllowForSession => CommandExecutionApprovalDecision::AcceptForSession,
                            ApprovalDecision::Abort => CommandExecutionApprovalDecision::Cancel,
                            _ => CommandExecutionApprovalDecision::Decline,
                        };
                        to_value(CommandExecutionRequestApprovalResponse { decision })
                    })
                }))
            }
            ServerRequest::FileChangeApproval(p) => {
                let ask = ApprovalRequest {
                    kind: ApprovalKind::FileChange,
                    call_id: p.item_id.clone(),
                    tool_name: PATCH_TOOL_NAME.into(),
                    arguments: json!({"grantRoot": p.grant_root}),
                    reason: p.reason.clone(),
                };
                let decision = self.decide(ask);
                let key = format!("file-change-approval:{}:{}", p.thread_id, p.item_id);
                cached(self.once(key, || {
                    Box::pin(async move {
                        let decision = match decision.await {
                            ApprovalDecision::Allow => FileChangeApprovalDecision::Accept,
                            ApprovalDecision::AllowForSession => FileChangeApprovalDecision::AcceptForSession,
                            ApprovalDecision::Abort => FileChangeApprovalDecision::Cancel,
                            _ => FileChangeApprovalDecision::Decline,
                        };
                        to_value(FileChangeRequestApprovalResponse { decision })
                    })
                }))
            }
            ServerRequest::PermissionsApproval(p) => {
                let ask = ApprovalRequest {
                    kind: ApprovalKind::Permissions,
                    call_id: p.item_id.clone(),
                    tool_name: "permissions".into(),
                    arguments: to_value(&p.permissions),
                    reason: p.reason.clone(),
                };
                let decision = self.decide(ask);
                let requested = p.permissions.clone();
                let key = format!("permissions-approval:{}:{}", p.thread_id, p.item_id);
                cached(self.once(key, || {
                    Box::pin(async move {
                        let reply = match decision.await {
                            ApprovalDecision::Allow => PermissionsRequestApprovalResponse {
                                permissions: requested,
                                scope: PermissionGrantScope::Turn,
                            },
                            ApprovalDecision::AllowForSession => PermissionsRequestApprovalResponse {
                                permissions: requested,
                                scope: PermissionGrantScope::Session,
                            },
                            _ => PermissionsRequestApprovalResponse::deny(),
                        };
                        to_value(reply)
                    })
                }))
            }
            ServerRequest::DynamicToolCall(p) => {
                let tools = self.tools.clone();
                let limit = self.tool_timeout;
                let key = format!("tool:{}:{}:{}", p.thread_id, p.turn_id, p.call_id);
                let call = HostToolCall { call_id: p.call_id, tool_name: p.tool, arguments: p.arguments };
                cached(self.once(key, || {
                    Box::pin(async move {
                        let name = call.tool_name.clone();
                        let reply = match tokio::time::timeout(limit, tools.call(call)).await {
                            Ok(Ok(output)) => dynamic_tool_reply(output),
                            Ok(Err(error)) => DynamicToolCallResponse::failure(error),
                            Err(_) => {
                                DynamicToolCallResponse::failure(format!("`{name}` gave no result within {limit:?}"))
                            }
                        };
                        to_value(reply)
                    })
                }))
            }
            ServerRequest::ToolRequestUserInput(p) => {
                let key = format!("user-input:{}:{}:{}", p.thread_id, p.turn_id, p.item_id);
                let ask = self.ask_user(p);
                cached(self.once(key, || ask))
            }
            // No person to ask: the safe answers (declined elicitation, -32601).
            other => {
                let reply = other.fallback_reply();
                Box::pin(async move { reply.map_err(HandlerError::Reply) })
            }
        }
    }
}

impl RequestHandler for CodexRequestHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        self.activity.request_seen();
        self.answer(ServerRequest::from_request(&request.method, request.params_value()))
    }

    fn fallback(&self, method: &str, params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        tracing::warn!(%method, %failure, "answering Codex with the safe default");
        ServerRequest::from_request(method, params.cloned()).fallback_reply()
    }
}

fn cached(answer: CachedAnswer) -> BoxFuture<'static, Result<Value, HandlerError>> {
    Box::pin(async move { Ok(answer.await) })
}

fn to_value<T: Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The `item/tool/call` reply for a host tool's output: its text, then each image as an
/// `inputImage` data URL (Codex hands both to the model).
fn dynamic_tool_reply(output: HostToolOutput) -> DynamicToolCallResponse {
    let mut reply = if output.is_error {
        DynamicToolCallResponse::failure(output.text)
    } else {
        DynamicToolCallResponse::success(output.text)
    };
    reply.content_items.extend(
        output
            .images
            .iter()
            .map(|image| DynamicToolContentItem::InputImage { image_url: clawbridge_bridge::input::data_url(image) }),
    );
    reply
}

/// The answer to every question when no person could answer (`why`): said as such, so the model
/// does not wait or read an empty answer as the user's choice.
fn unanswered(question_ids: &[String], why: &str) -> clawbridge_bridge::attempt::hooks::UserAnswers {
    let note = format!("[no answer: no person could answer this question ({why}); carry on without it]");
    question_ids.iter().map(|id| (id.clone(), vec![note.clone()])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use clawbridge_bridge::attempt::hooks::{FixedApprover, HostToolOutput, HostToolSpec};
    use clawbridge_protocol::jsonrpc::RequestId;

    #[test]
    fn a_host_tool_s_images_go_back_to_codex_as_input_images_after_its_text() {
        let image = clawbridge_bridge::events::ToolImage { data: "iVBORw0KGgo=".into(), mime_type: "image/png".into() };
        let reply = dynamic_tool_reply(HostToolOutput { text: "shot".into(), is_error: false, images: vec![image] });
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"contentItems": [{"type": "inputText", "text": "shot"},
                                    {"type": "inputImage", "imageUrl": "data:image/png;base64,iVBORw0KGgo="}],
                   "success": true})
        );
        let failed = dynamic_tool_reply(HostToolOutput { text: "no".into(), is_error: true, images: Vec::new() });
        assert!(!failed.success);
    }

    /// Counts calls; answers after a short pause so duplicates overlap the first call.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl HostTools for Counting {
        fn specs(&self) -> Vec<HostToolSpec> {
            Vec::new()
        }

        fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
            let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
            Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(HostToolOutput { text: format!("{} run {n}", call.tool_name), is_error: false, images: Vec::new() })
            })
        }
    }

    fn request(id: i64, method: &str, params: Value) -> Request {
        Request::with_value(RequestId::from(id), method, Some(params))
    }

    fn handler(decision: ApprovalDecision, tools: Arc<Counting>) -> (Arc<CodexRequestHandler>, Arc<TurnActivity>) {
        let activity = Arc::new(TurnActivity::default());
        let handler = CodexRequestHandler::new(
            Arc::new(FixedApprover(decision)),
            tools,
            activity.clone(),
            Duration::from_secs(5),
            Duration::from_secs(5),
        );
        (handler, activity)
    }

    #[tokio::test]
    async fn a_re_sent_tool_call_is_answered_from_the_cache_never_run_twice() {
        let tools = Arc::new(Counting::default());
        let (handler, _) = handler(ApprovalDecision::Allow, tools.clone());
        let params = json!({"threadId": "t", "turnId": "u", "callId": "c1", "tool": "lookup", "arguments": {}});
        let (a, b) = tokio::join!(
            handler.handle(request(0, "item/tool/call", params.clone())),
            handler.handle(request(7, "item/tool/call", params.clone()))
        );
        let again = handler.handle(request(9, "item/tool/call", params)).await.unwrap();
        assert_eq!(tools.0.load(Ordering::SeqCst), 1, "the tool ran once");
        assert_eq!(a.unwrap(), again);
        assert_eq!(b.unwrap(), again);
        assert_eq!(again["success"], true);
        let other = json!({"threadId": "t", "turnId": "u", "callId": "c2", "tool": "lookup", "arguments": {}});
        handler.handle(request(10, "item/tool/call", other)).await.unwrap();
        assert_eq!(tools.0.load(Ordering::SeqCst), 2, "another call id runs");
    }

    #[tokio::test]
    async fn approvals_map_deny_and_abort_to_decline_and_cancel_and_record_acceptance() {
        let params = json!({"threadId": "t", "turnId": "u", "itemId": "call_1", "command": "rm -rf /", "cwd": "/"});
        let cases = [
            (ApprovalDecision::Allow, "accept", true),
            (ApprovalDecision::AllowForSession, "acceptForSession", true),
            (ApprovalDecision::Deny { message: None }, "decline", false),
            (ApprovalDecision::Abort, "cancel", false),
        ];
        for (decision, wire, accepted) in cases {
            let (handler, activity) = handler(decision, Arc::new(Counting::default()));
            let answer = handler.handle(request(0, "item/commandExecution/requestApproval", params.clone())).await;
            assert_eq!(answer.unwrap(), json!({"decision": wire}));
            assert_eq!(activity.approval_accepted(), accepted);
            assert_eq!(activity.people_pending(), 0);
        }
    }

    /// Answers the first option of every question, or fails, and records what it was asked.
    struct Person {
        fails: bool,
        asked: Mutex<Vec<UserInputRequest>>,
    }

    impl UserInputAsker for Person {
        fn ask(
            &self,
            request: UserInputRequest,
        ) -> BoxFuture<'static, Result<clawbridge_bridge::attempt::hooks::UserAnswers, String>> {
            self.asked.lock().unwrap().push(request.clone());
            let fails = self.fails;
            Box::pin(async move {
                if fails {
                    return Err("the prompt was dismissed".into());
                }
                Ok(request.questions.into_iter().map(|q| (q.id, vec![q.options[0].0.clone()])).collect())
            })
        }
    }

    #[tokio::test]
    async fn user_questions_go_to_the_asker_and_anything_but_answers_tells_the_model_nobody_answered() {
        let params = json!({"threadId": "t", "turnId": "u", "itemId": "ask_1", "questions": [
            {"id": "color", "header": "Colour", "question": "Which colour?", "isOther": false, "isSecret": false,
             "options": [{"label": "blue", "description": "calm"}, {"label": "red", "description": ""}]}]});
        let (unwired, activity) = handler(ApprovalDecision::Allow, Arc::new(Counting::default()));
        let unasked = unwired.handle(request(0, "item/tool/requestUserInput", params.clone())).await.unwrap();
        let note = unasked["answers"]["color"]["answers"][0].as_str().unwrap_or_default().to_string();
        assert!(
            note.starts_with("[no answer:") && note.contains("no person can be asked"),
            "no asker: the model is told: {unasked}"
        );

        let dismissed =
            "[no answer: no person could answer this question (the prompt was dismissed); carry on without it]";
        for (fails, expected) in [
            (false, json!({"answers": {"color": {"answers": ["blue"]}}})),
            (true, json!({"answers": {"color": {"answers": [dismissed]}}})),
        ] {
            let (handler, activity) = handler(ApprovalDecision::Allow, Arc::new(Counting::default()));
            let person = Arc::new(Person { fails, asked: Mutex::default() });
            handler.set_user_input(person.clone());
            let answer = handler.handle(request(1, "item/tool/requestUserInput", params.clone())).await.unwrap();
            assert_eq!(answer, expected);
            let again = handler.handle(request(2, "item/tool/requestUserInput", params.clone())).await.unwrap();
            assert_eq!(again, expected, "a re-sent question is answered from the cache");
            let asked = person.asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "the person is asked once");
            assert_eq!(asked[0].call_id.as_deref(), Some("ask_1"));
            assert_eq!(
                asked[0].questions[0].options,
                vec![("blue".into(), "calm".into()), ("red".into(), String::new())]
            );
            assert_eq!(activity.people_pending(), 0, "no longer waiting on a person");
        }
        assert_eq!(activity.people_pending(), 0);
    }

    #[test]
    fn undecidable_requests_fall_back_to_the_safe_answer() {
        let (handler, _) = handler(ApprovalDecision::Allow, Arc::new(Counting::default()));
        let failure = HandlerFailure::TimedOut(Duration::from_secs(1));
        let approval = json!({"threadId": "t", "turnId": "u", "itemId": "i"});
        assert_eq!(
            handler.fallback("item/commandExecution/requestApproval", Some(&approval), &failure),
            Ok(json!({"decision": "decline"}))
        );
        let call = json!({"threadId": "t", "turnId": "u", "callId": "c", "tool": "x"});
        assert_eq!(handler.fallback("item/tool/call", Some(&call), &failure).unwrap()["success"], false);
        assert!(handler.fallback("no/such", None, &failure).is_err());
    }
}
