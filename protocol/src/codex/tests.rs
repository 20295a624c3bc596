//! Decodes the 0.169.0 wire examples below (facts in docs/peers/codex.md, normalised ids) and checks the
//! client-sent params serialise to exactly the bytes shown there.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::*;
use crate::jsonrpc::{Dialect, Envelope, Message, RawMessage, Request, RequestId, Response, outgoing};

/// The handshake (docs/peers/codex.md#handshake).
const HANDSHAKE: &str = r#"{"id":1,"method":"initialize","params":{"clientInfo":{"name":"clawbridge","title":"clawbridge","version":"0.1.0"},"capabilities":{"experimentalApi":true}}}
{"id":1,"result":{"userAgent":"clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)","codexHome":"<codex-home>","platformFamily":"unix","platformOs":"linux"}}
{"method":"initialized"}"#;

/// One approved-command turn (docs/peers/codex.md#the-notification-stream-of-a-turn; `>>` to the server).
const APPROVED_TURN: &str = r#">> {"id":1,"method":"initialize","params":{"clientInfo":{"name":"clawbridge","title":"clawbridge","version":"0.1.0"},"capabilities":{"experimentalApi":false}}}
<< {"id":1,"result":{"userAgent":"clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)","codexHome":"/home/dev/.codex-test","platformFamily":"unix","platformOs":"linux"}}
>> {"method":"initialized"}
>> {"id":2,"method":"thread/start","params":{"cwd":"/home/dev/demo"}}
<< {"id":2,"result":{"thread":{"id":"th-1","status":{"type":"idle"},"cwd":"/home/dev/demo","cliVersion":"0.169.0"},"model":"mock-model","modelProvider":"mock","approvalPolicy":"on-request","sandbox":{"type":"readOnly"}}}
>> {"id":3,"method":"turn/start","params":{"threadId":"th-1","input":[{"type":"text","text":"Run `echo hello` unsandboxed.","text_elements":[]}]}}
<< {"method":"thread/started","params":{"thread":{"id":"th-1","status":{"type":"idle"}}}}
<< {"id":3,"result":{"turn":{"id":"tu-1","items":[],"itemsView":"notLoaded","status":"inProgress","error":null}}}
<< {"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"active","activeFlags":[]}}}
<< {"method":"turn/started","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[],"status":"inProgress"}}}
<< {"method":"item/started","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"userMessage","id":"um-1","content":[{"type":"text","text":"Run `echo hello` unsandboxed.","text_elements":[]}]}}}
<< {"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"userMessage","id":"um-1","content":[{"type":"text","text":"Run `echo hello` unsandboxed.","text_elements":[]}]}}}
<< {"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"active","activeFlags":["waitingOnApproval"]}}}
<< {"method":"item/started","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo hello'","cwd":"/home/dev/demo","processId":null,"source":"agent","status":"inProgress","aggregatedOutput":null,"exitCode":null}}}
<< {"method":"item/commandExecution/requestApproval","id":0,"params":{"kind":"command","threadId":"th-1","turnId":"tu-1","itemId":"call_1","reason":"Allow running `echo hello` outside the sandbox?","command":"/bin/bash -lc 'echo hello'","cwd":"/home/dev/demo","availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo","hello"]}},"cancel"]}}
>> {"id":0,"result":{"decision":"accept"}}
<< {"method":"serverRequest/resolved","params":{"threadId":"th-1","requestId":0}}
<< {"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"active","activeFlags":[]}}}
<< {"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"commandExecution","id":"call_1","processId":"68955","source":"unifiedExecStartup","status":"completed","aggregatedOutput":"hello\n","exitCode":0,"durationMs":0}}}
<< {"method":"item/started","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"agentMessage","id":"msg_1","text":"","phase":null}}}
<< {"method":"item/agentMessage/delta","params":{"threadId":"th-1","turnId":"tu-1","itemId":"msg_1","delta":"The output was: "}}
<< {"method":"item/agentMessage/delta","params":{"threadId":"th-1","turnId":"tu-1","itemId":"msg_1","delta":"hello"}}
<< {"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"agentMessage","id":"msg_1","text":"The output was: hello","phase":null}}}
<< {"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"idle"}}}
<< {"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[{"type":"agentMessage","id":"msg_1","text":"The output was: hello"}],"itemsView":"summary","status":"completed","error":null,"durationMs":394}},"emittedAtMs":1796005415378}"#;

/// An interrupt (docs/peers/codex.md#turns).
const INTERRUPT_REQUEST: &str = r#"{"id":10,"method":"turn/interrupt","params":{"threadId":"th-1","turnId":"tu-2"}}"#;
const INTERRUPT_RESULT: &str = r#"{"id":10,"result":{}}"#;

/// `UserInput` shapes (docs/peers/codex.md#turns; values made up).
const USER_INPUT_TEXT: &str = r#"{"type":"text","text":"hi","text_elements":[]}"#;
const USER_INPUT_IMAGE: &str = r#"{"type":"image","url":"https://example.com/a.png"}"#;
const USER_INPUT_LOCAL_IMAGE: &str = r#"{"type":"localImage","path":"/tmp/a.png"}"#;

/// Reply shapes (docs/peers/codex.md#server-to-client-requests; values made up).
const REPLY_DECISION_FOR_SESSION: &str = r#"{"decision":"acceptForSession"}"#;
const REPLY_DECISION_AMENDMENT: &str =
    r#"{"decision":{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["echo","hello"]}}}"#;
const REPLY_TOOL_CALL: &str = r#"{"contentItems":[{"type":"inputText","text":"42"}],"success":true}"#;
const REPLY_TOOL_CALL_IMAGE: &str =
    r#"{"contentItems":[{"type":"inputImage","imageUrl":"data:image/png;base64,AA=="}],"success":true}"#;
const REPLY_USER_INPUT: &str = r#"{"answers":{"q1":{"answers":["yes"]}}}"#;
const REPLY_PERMISSIONS_DENIED: &str = r#"{"permissions":{},"scope":"turn"}"#;
const REPLY_ELICITATION_DECLINE: &str = r#"{"action":"decline"}"#;

/// Dynamic tool declaration shape (docs/peers/codex.md#dynamic-tools).
const DYNAMIC_TOOL_SPEC: &str = r#"{"type":"function","name":"lookup","description":"Look a thing up","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}"#;

/// Lines built from docs/peers/codex.md (notification stream, server requests; values made up).
const PROSE_FAILED_TURN: &str = r#"{"method":"thread/status/changed","params":{"threadId":"th-1","status":{"type":"systemError"}}}
{"method":"error","params":{"error":{"message":"unexpected status 500","codexErrorInfo":"internalServerError","additionalDetails":null},"willRetry":false,"threadId":"th-1","turnId":"tu-1"}}
{"method":"turn/completed","params":{"threadId":"th-1","turn":{"id":"tu-1","items":[],"status":"failed","error":{"message":"unexpected status 500","codexErrorInfo":"internalServerError"}}}}"#;
const PROSE_RETRY_ERROR: &str = r#"{"method":"error","params":{"error":{"message":"reconnecting","codexErrorInfo":{"httpConnectionFailed":{"httpStatusCode":502}}},"willRetry":true,"threadId":"th-1","turnId":"tu-1"}}"#;
const PROSE_REASONING: &str = r#"{"method":"item/started","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"reasoning","id":"rs_1","summary":[],"content":[]}}}
{"method":"item/reasoning/summaryPartAdded","params":{"threadId":"th-1","turnId":"tu-1","itemId":"rs_1","summaryIndex":0}}
{"method":"item/reasoning/summaryTextDelta","params":{"threadId":"th-1","turnId":"tu-1","itemId":"rs_1","delta":"Thinking","summaryIndex":0}}"#;
const PROSE_TOKEN_USAGE: &str = r#"{"method":"thread/tokenUsage/updated","params":{"threadId":"th-1","turnId":"tu-1","tokenUsage":{"total":{"totalTokens":120,"inputTokens":100,"cachedInputTokens":10,"cacheWriteInputTokens":0,"outputTokens":20,"reasoningOutputTokens":5},"last":{"totalTokens":120,"inputTokens":100,"cachedInputTokens":10,"cacheWriteInputTokens":0,"outputTokens":20,"reasoningOutputTokens":5},"modelContextWindow":272000}}}"#;
const PROSE_WARNINGS: &str = r#"{"method":"warning","params":{"threadId":"th-1","message":"Unknown model mock-model"}}
{"method":"configWarning","params":{"summary":"bubblewrap not found","details":"install bwrap"}}"#;
const PROSE_OUTPUT_DELTA: &str = r#"{"method":"item/commandExecution/outputDelta","params":{"threadId":"th-1","turnId":"tu-1","itemId":"call_1","delta":"hel"}}"#;
const PROSE_FILE_CHANGE: &str = r#"{"method":"item/started","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"fileChange","id":"call_2","changes":[{"path":"/w/a.txt","kind":{"type":"add"},"diff":"+a\n"},{"path":"/w/b.txt","kind":{"type":"update","move_path":"/w/c.txt"},"diff":"-b\n+c\n"}],"status":"inProgress"}}}"#;
const PROSE_MCP_CALL: &str = r#"{"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"mcpToolCall","id":"mcp_1","server":"docs","tool":"search","status":"failed","arguments":{"q":"x"},"result":null,"error":{"message":"timeout"},"durationMs":30000}}}"#;
const PROSE_DYNAMIC_CALL: &str = r#"{"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"dynamicToolCall","id":"dc_1","namespace":null,"tool":"lookup","arguments":{"q":"x"},"status":"completed","contentItems":[{"type":"inputText","text":"42"}],"success":true,"durationMs":3}}}"#;
const PROSE_WEB_SEARCH: &str = r#"{"method":"item/completed","params":{"threadId":"th-1","turnId":"tu-1","item":{"type":"webSearch","id":"ws_1","query":"rust serde","action":{"type":"search","query":"rust serde"}}}}"#;
const PROSE_SERVER_REQUESTS: &str = r#"{"id":1,"method":"item/fileChange/requestApproval","params":{"threadId":"th-1","turnId":"tu-1","itemId":"call_2","startedAtMs":1}}
{"id":2,"method":"item/tool/call","params":{"threadId":"th-1","turnId":"tu-1","callId":"dc_1","namespace":null,"tool":"lookup","arguments":{"q":"x"}}}
{"id":3,"method":"item/tool/requestUserInput","params":{"threadId":"th-1","turnId":"tu-1","itemId":"ui_1","questions":[{"id":"q1","header":"Deploy","question":"Deploy now?","isOther":false,"isSecret":false,"options":[{"label":"yes","description":"do it"}]}]}}
{"id":4,"method":"item/permissions/requestApproval","params":{"threadId":"th-1","turnId":"tu-1","itemId":"p_1","cwd":"/w","reason":"needs network","permissions":{"network":{"enabled":true}}}}
{"id":5,"method":"mcpServer/elicitation/request","params":{"serverName":"docs","threadId":"th-1","mode":"form","message":"Log in?","requestedSchema":{}}}"#;

/// `(direction, message)` of every line of a transcript; lines without a marker are server lines.
fn lines(transcript: &str) -> Vec<(&str, &str)> {
    transcript
        .lines()
        .map(|l| match l.split_once(' ') {
            Some((dir @ (">>" | "<<"), rest)) => (dir, rest),
            _ => ("<<", l),
        })
        .collect()
}

fn message(line: &str) -> Message {
    Message::from_value(serde_json::from_str(line).expect("reference line is JSON"))
        .expect("reference line is JSON-RPC")
}

/// Decodes a notification line as the reader does — in one pass from the params' text — and checks
/// that the `Value` decoder agrees.
fn notification(line: &str) -> ServerNotification {
    let Ok(RawMessage::Notification { method, params }) = Envelope::parse(line).unwrap().classify(false) else {
        panic!("not a notification: {line}")
    };
    let from_raw = ServerNotification::from_raw(&method, params);
    let value = params.map(|raw| serde_json::from_str(raw.get()).unwrap());
    assert_eq!(from_raw, ServerNotification::from_notification(&method, value), "{line}");
    from_raw
}

/// [`notification`] of params given as a `Value`.
fn decode_both(method: &str, params: Option<Value>) -> ServerNotification {
    let text = params.as_ref().map(|p| serde_json::value::to_raw_value(p).unwrap());
    let from_raw = ServerNotification::from_raw(method, text.as_deref());
    assert_eq!(from_raw, ServerNotification::from_notification(method, params), "{method} {text:?}");
    from_raw
}

fn request(line: &str) -> (RequestId, ServerRequest) {
    match message(line) {
        Message::Request(r) => (r.id.clone(), ServerRequest::from_request(&r.method, r.params_value())),
        other => panic!("not a request: {other:?}"),
    }
}

fn result<T: DeserializeOwned>(line: &str) -> T {
    match message(line) {
        Message::Response(Response { outcome: Ok(result), .. }) => serde_json::from_value(result).unwrap(),
        other => panic!("not a result: {other:?}"),
    }
}

/// Serialises a client request exactly as clawbridge would put it on the wire.
fn wire_request<P: Serialize>(id: i64, method: &str, params: &P) -> String {
    serde_json::to_string(&outgoing::Call::new(Dialect::Codex, Some(&RequestId::from(id)), method, Some(params)))
        .unwrap()
}

/// Decodes the params of a client request line into `P`.
fn client_params<P: DeserializeOwned>(line: &str) -> P {
    match message(line) {
        Message::Request(Request { params: Some(params), .. }) => serde_json::from_str(params.get()).unwrap(),
        other => panic!("not a request with params: {other:?}"),
    }
}

/// `value` without `null` members (the types drop absent-or-null optional fields when re-encoding).
fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), without_nulls(v))).collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[test]
fn every_server_line_of_the_reference_decodes_without_loss() {
    let transcripts = [
        APPROVED_TURN,
        PROSE_FAILED_TURN,
        PROSE_RETRY_ERROR,
        PROSE_REASONING,
        PROSE_TOKEN_USAGE,
        PROSE_WARNINGS,
        PROSE_OUTPUT_DELTA,
        PROSE_FILE_CHANGE,
        PROSE_MCP_CALL,
        PROSE_DYNAMIC_CALL,
        PROSE_WEB_SEARCH,
        PROSE_SERVER_REQUESTS,
    ];
    let mut checked = 0;
    for transcript in transcripts {
        for (dir, line) in lines(transcript) {
            if dir != "<<" {
                continue;
            }
            match message(line) {
                Message::Notification(note) => {
                    let (method, params) = (note.method.clone(), note.params_value());
                    let decoded = notification(line);
                    assert!(!matches!(decoded, ServerNotification::Unknown { .. }), "{line} → {decoded:?}");
                    assert_eq!(decoded.method(), method);
                    // Re-encoding keeps every non-null field: nothing the server sent is lost.
                    assert_eq!(without_nulls(&decoded.params()), without_nulls(&params.unwrap()), "{line}");
                }
                Message::Request(request) => {
                    let (method, params) = (request.method.clone(), request.params_value());
                    let decoded = ServerRequest::from_request(&method, params.clone());
                    assert!(!matches!(decoded, ServerRequest::Unknown { .. }), "{line} → {decoded:?}");
                    assert_eq!(without_nulls(&decoded.params()), without_nulls(&params.unwrap()), "{line}");
                }
                // Results are checked one by one below: their type depends on the request.
                Message::Response(_) => {}
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 40, "every `<<` line of the transcripts");
}

#[test]
fn handshake_round_trips_and_decodes() {
    let lines = lines(HANDSHAKE);
    let params = InitializeParams {
        client_info: ClientInfo::new("clawbridge", "0.1.0"),
        capabilities: Some(InitializeCapabilities { experimental_api: true, ..Default::default() }),
        extra: Extra::new(),
    };
    assert_eq!(wire_request(1, methods::INITIALIZE, &params), lines[0].1);
    assert_eq!(client_params::<InitializeParams>(lines[0].1), params);

    let response: InitializeResponse = result(lines[1].1);
    assert_eq!(
        response.user_agent.as_deref(),
        Some("clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)")
    );
    assert_eq!(response.codex_home.as_deref(), Some("<codex-home>"));
    assert_eq!(response.platform_family.as_deref(), Some("unix"));
    assert_eq!(response.platform_os.as_deref(), Some("linux"));
    let verdict = VersionPolicy::default().check(response.user_agent.as_deref()).unwrap();
    assert_eq!(verdict, VersionVerdict::Supported { found: Version::new(0, 169, 0) });

    let initialized =
        serde_json::to_string(&outgoing::Call::<Value>::new(Dialect::Codex, None, methods::INITIALIZED, None)).unwrap();
    assert_eq!(initialized, lines[2].1);
}

#[test]
fn approved_turn_client_lines_round_trip_exactly() {
    let lines = lines(APPROVED_TURN);
    let client: Vec<&str> = lines.iter().filter(|(d, _)| *d == ">>").map(|(_, l)| *l).collect();
    assert_eq!(client.len(), 5);

    let init = InitializeParams {
        client_info: ClientInfo::new("clawbridge", "0.1.0"),
        capabilities: Some(InitializeCapabilities::default()),
        extra: Extra::new(),
    };
    assert_eq!(wire_request(1, methods::INITIALIZE, &init), client[0], "experimentalApi:false is sent");

    let start = ThreadStartParams { cwd: Some("/home/dev/demo".into()), ..Default::default() };
    assert_eq!(wire_request(2, methods::THREAD_START, &start), client[2]);
    assert_eq!(client_params::<ThreadStartParams>(client[2]), start);

    let turn = TurnStartParams::new("th-1", vec![UserInput::text("Run `echo hello` unsandboxed.")]);
    assert_eq!(wire_request(3, methods::TURN_START, &turn), client[3]);
    assert_eq!(client_params::<TurnStartParams>(client[3]), turn);

    let reply = CommandExecutionRequestApprovalResponse { decision: CommandExecutionApprovalDecision::Accept };
    let outcome = Ok(serde_json::to_value(&reply).unwrap());
    let wire = serde_json::to_string(&outgoing::Reply::new(Dialect::Codex, &RequestId::from(0), &outcome)).unwrap();
    assert_eq!(wire, client[4]);

    let interrupt = TurnInterruptParams { thread_id: "th-1".into(), turn_id: "tu-2".into(), extra: Extra::new() };
    assert_eq!(wire_request(10, methods::TURN_INTERRUPT, &interrupt), INTERRUPT_REQUEST);
    let _: TurnInterruptResponse = result(INTERRUPT_RESULT);
}

#[test]
fn approved_turn_results_decode() {
    let lines = lines(APPROVED_TURN);
    let start: ThreadStartResponse = result(lines[4].1);
    assert_eq!(start.thread.id, "th-1");
    assert_eq!(start.thread.status, Some(ThreadStatus::Idle));
    assert_eq!(start.thread.cwd.as_deref(), Some("/home/dev/demo"));
    assert_eq!(start.thread.cli_version.as_deref(), Some("0.169.0"));
    assert_eq!(start.model.as_deref(), Some("mock-model"));
    assert_eq!(start.model_provider.as_deref(), Some("mock"));
    assert_eq!(start.approval_policy, Some(ApprovalPolicy::OnRequest));
    assert_eq!(start.sandbox, Some(SandboxPolicy::ReadOnly { network_access: None }));

    let turn: TurnStartResponse = result(lines[7].1);
    assert_eq!(turn.turn.id, "tu-1");
    assert!(turn.turn.items.is_empty());
    assert_eq!(turn.turn.items_view, Some(TurnItemsView::NotLoaded));
    assert_eq!(turn.turn.status, Some(TurnStatus::InProgress));
    assert_eq!(turn.turn.error, None);
}

#[test]
fn approved_turn_notifications_carry_their_key_fields() {
    let server: Vec<&str> = lines(APPROVED_TURN).into_iter().filter(|(d, _)| *d == "<<").map(|(_, l)| l).collect();
    let n = |i: usize| notification(server[i]);

    let ServerNotification::ThreadStarted(started) = n(2) else { panic!() };
    assert_eq!(started.thread.id, "th-1");

    let ServerNotification::ThreadStatusChanged(status) = n(4) else { panic!() };
    assert_eq!(status.status, ThreadStatus::Active { active_flags: vec![] });

    let ServerNotification::TurnStarted(turn) = n(5) else { panic!() };
    assert_eq!((turn.thread_id.as_str(), turn.turn.id.as_str()), ("th-1", "tu-1"));

    let ServerNotification::ItemStarted(item) = n(6) else { panic!() };
    let ThreadItem::UserMessage(user) = &item.item else { panic!("{item:?}") };
    assert_eq!(user.id, "um-1");
    assert_eq!(user.content, vec![UserInput::text("Run `echo hello` unsandboxed.")]);
    assert_eq!(item.started_at_ms, None, "normalised recordings drop startedAtMs");

    let ServerNotification::ThreadStatusChanged(waiting) = n(8) else { panic!() };
    assert_eq!(waiting.status, ThreadStatus::Active { active_flags: vec![ThreadActiveFlag::WaitingOnApproval] });

    let ServerNotification::ItemStarted(cmd) = n(9) else { panic!() };
    let ThreadItem::CommandExecution(exec) = &cmd.item else { panic!("{cmd:?}") };
    assert_eq!(exec.id, "call_1");
    assert_eq!(exec.command.as_deref(), Some("/bin/bash -lc 'echo hello'"));
    assert_eq!(exec.source, Some(CommandExecutionSource::Agent));
    assert_eq!(exec.status, Some(ItemStatus::InProgress));
    assert_eq!((exec.process_id.as_deref(), exec.exit_code, exec.aggregated_output.as_deref()), (None, None, None));

    let (id, approval) = request(server[10]);
    assert_eq!(id, RequestId::from(0));
    let ServerRequest::CommandExecutionApproval(approval) = approval else { panic!("{approval:?}") };
    assert_eq!(approval.kind.as_deref(), Some("command"));
    assert_eq!(approval.item_id, "call_1");
    assert_eq!(approval.approval_key(), "call_1");
    assert_eq!(approval.reason.as_deref(), Some("Allow running `echo hello` outside the sandbox?"));
    assert_eq!(
        approval.available_decisions,
        Some(vec![
            CommandExecutionApprovalDecision::Accept,
            CommandExecutionApprovalDecision::AcceptWithExecpolicyAmendment {
                execpolicy_amendment: vec!["echo".into(), "hello".into()]
            },
            CommandExecutionApprovalDecision::Cancel,
        ])
    );

    let ServerNotification::ServerRequestResolved(resolved) = n(11) else { panic!() };
    assert_eq!(resolved.request_id, RequestId::from(0));

    let ServerNotification::ItemCompleted(done) = n(13) else { panic!() };
    let ThreadItem::CommandExecution(exec) = &done.item else { panic!("{done:?}") };
    assert_eq!(exec.status, Some(ItemStatus::Completed));
    assert_eq!(exec.process_id.as_deref(), Some("68955"));
    assert_eq!(exec.source, Some(CommandExecutionSource::UnifiedExecStartup));
    assert_eq!(exec.aggregated_output.as_deref(), Some("hello\n"));
    assert_eq!((exec.exit_code, exec.duration_ms), (Some(0), Some(0)));
    assert_eq!(done.item.status(), Some(&ItemStatus::Completed));

    let ServerNotification::ItemStarted(msg) = n(14) else { panic!() };
    let ThreadItem::AgentMessage(agent) = &msg.item else { panic!() };
    assert_eq!((agent.id.as_str(), agent.text.as_str(), &agent.phase), ("msg_1", "", &None));

    let deltas: String = [15, 16]
        .into_iter()
        .map(|i| match n(i) {
            ServerNotification::AgentMessageDelta(d) => {
                assert_eq!(d.item_id, "msg_1");
                d.delta
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let ServerNotification::ItemCompleted(msg) = n(17) else { panic!() };
    let ThreadItem::AgentMessage(agent) = &msg.item else { panic!() };
    assert_eq!(agent.text, deltas);

    let ServerNotification::ThreadStatusChanged(idle) = n(18) else { panic!() };
    assert_eq!(idle.status, ThreadStatus::Idle);

    let completed = n(19);
    assert_eq!(completed.thread_id(), Some("th-1"));
    let ServerNotification::TurnCompleted(completed) = completed else { panic!() };
    assert_eq!(completed.turn.status, Some(TurnStatus::Completed));
    assert_eq!(completed.turn.items_view, Some(TurnItemsView::Summary));
    assert_eq!(completed.turn.duration_ms, Some(394));
    assert_eq!(completed.turn.items.len(), 1);
    assert_eq!(completed.turn.items[0].item_type(), Some("agentMessage"));
    assert_eq!(completed.turn.items[0].id(), Some("msg_1"));
}

#[test]
fn failures_and_retries() {
    let failed: Vec<_> = lines(PROSE_FAILED_TURN).into_iter().map(|(_, l)| notification(l)).collect();
    assert!(matches!(&failed[0], ServerNotification::ThreadStatusChanged(s) if s.status == ThreadStatus::SystemError));
    let ServerNotification::Error(error) = &failed[1] else { panic!() };
    assert!(!error.will_retry);
    assert_eq!(error.turn_id.as_deref(), Some("tu-1"));
    assert_eq!(error.error.codex_error_info, Some(CodexErrorInfo::InternalServerError));
    let ServerNotification::TurnCompleted(done) = &failed[2] else { panic!() };
    assert_eq!(done.turn.status, Some(TurnStatus::Failed));
    assert_eq!(done.turn.error.as_ref().unwrap().message, "unexpected status 500");

    let ServerNotification::Error(retry) = notification(PROSE_RETRY_ERROR) else { panic!() };
    assert!(retry.will_retry);
    assert_eq!(
        retry.error.codex_error_info,
        Some(CodexErrorInfo::HttpConnectionFailed { http_status_code: Some(502) })
    );

    // A new error class lands in the catch-all with its raw JSON.
    let info: CodexErrorInfo = serde_json::from_value(json!({"brandNewThing": {"x": 1}})).unwrap();
    assert_eq!(info, CodexErrorInfo::Unknown(json!({"brandNewThing": {"x": 1}})));
    let info: CodexErrorInfo = serde_json::from_value(json!("activeTurnNotSteerableYet")).unwrap();
    assert_eq!(info, CodexErrorInfo::Unknown(json!("activeTurnNotSteerableYet")));
}

#[test]
fn streaming_and_tool_items() {
    let reasoning: Vec<_> = lines(PROSE_REASONING).into_iter().map(|(_, l)| notification(l)).collect();
    assert!(
        matches!(&reasoning[0], ServerNotification::ItemStarted(s) if matches!(&s.item, ThreadItem::Reasoning(r) if r.id == "rs_1"))
    );
    assert!(matches!(&reasoning[1], ServerNotification::ReasoningSummaryPartAdded(p) if p.summary_index == 0));
    assert!(matches!(&reasoning[2], ServerNotification::ReasoningSummaryTextDelta(d) if d.delta == "Thinking"));

    let ServerNotification::ThreadTokenUsageUpdated(usage) = notification(PROSE_TOKEN_USAGE) else { panic!() };
    assert_eq!(usage.token_usage.total.total_tokens, 120);
    assert_eq!(usage.token_usage.last.cached_input_tokens, 10);
    assert_eq!(usage.token_usage.last.reasoning_output_tokens, 5);
    assert_eq!(usage.token_usage.model_context_window, Some(272000));

    let warnings: Vec<_> = lines(PROSE_WARNINGS).into_iter().map(|(_, l)| notification(l)).collect();
    assert!(matches!(&warnings[0], ServerNotification::Warning(w) if w.message == "Unknown model mock-model"));
    assert!(
        matches!(&warnings[1], ServerNotification::ConfigWarning(w) if w.details.as_deref() == Some("install bwrap"))
    );

    let ServerNotification::CommandExecutionOutputDelta(delta) = notification(PROSE_OUTPUT_DELTA) else { panic!() };
    assert_eq!((delta.item_id.as_str(), delta.delta.as_str()), ("call_1", "hel"));

    let ServerNotification::ItemStarted(change) = notification(PROSE_FILE_CHANGE) else { panic!() };
    let ThreadItem::FileChange(change) = change.item else { panic!() };
    assert_eq!(change.changes[0].kind, Some(PatchChangeKind::Add));
    assert_eq!(change.changes[1].kind, Some(PatchChangeKind::Update { move_path: Some("/w/c.txt".into()) }));
    assert_eq!(change.status, Some(ItemStatus::InProgress));

    let ServerNotification::ItemCompleted(mcp) = notification(PROSE_MCP_CALL) else { panic!() };
    let ThreadItem::McpToolCall(mcp) = mcp.item else { panic!() };
    assert_eq!((mcp.server.as_str(), mcp.tool.as_str()), ("docs", "search"));
    assert_eq!(mcp.status, Some(ItemStatus::Failed));
    assert_eq!(mcp.error.unwrap().message, "timeout");

    let ServerNotification::ItemCompleted(dynamic) = notification(PROSE_DYNAMIC_CALL) else { panic!() };
    let ThreadItem::DynamicToolCall(dynamic) = dynamic.item else { panic!() };
    assert_eq!(dynamic.success, Some(true));
    assert_eq!(dynamic.content_items, Some(vec![DynamicToolContentItem::text("42")]));

    let ServerNotification::ItemCompleted(search) = notification(PROSE_WEB_SEARCH) else { panic!() };
    let ThreadItem::WebSearch(search) = search.item else { panic!() };
    assert_eq!(search.query, "rust serde");
}

#[test]
fn server_requests_decode_and_fall_back_safely() {
    let requests: Vec<_> = lines(PROSE_SERVER_REQUESTS).into_iter().map(|(_, l)| request(l).1).collect();
    let ServerRequest::FileChangeApproval(file) = &requests[0] else { panic!() };
    assert_eq!(file.item_id, "call_2");
    let ServerRequest::DynamicToolCall(call) = &requests[1] else { panic!() };
    assert_eq!((call.call_id.as_str(), call.tool.as_str(), call.namespace.as_deref()), ("dc_1", "lookup", None));
    assert_eq!(call.arguments, json!({"q": "x"}));
    let ServerRequest::ToolRequestUserInput(ask) = &requests[2] else { panic!() };
    assert_eq!(ask.questions[0].id, "q1");
    assert_eq!(ask.questions[0].options.as_ref().unwrap()[0].label, "yes");
    let ServerRequest::PermissionsApproval(perm) = &requests[3] else { panic!() };
    assert_eq!(perm.permissions.network, Some(json!({"enabled": true})));
    let ServerRequest::McpServerElicitation(elicit) = &requests[4] else { panic!() };
    assert_eq!(elicit.extra.get("requestedSchema"), Some(&json!({})));

    let fallbacks: Vec<Value> = requests.iter().map(|r| r.fallback_reply().unwrap()).collect();
    assert_eq!(
        fallbacks,
        vec![
            json!({"decision": "decline"}),
            json!({"contentItems": [{"type": "inputText", "text": "the client could not run this tool"}], "success": false}),
            json!({"answers": {}}),
            json!({"permissions": {}, "scope": "turn"}),
            json!({"action": "decline"}),
        ]
    );
    let (_, approval) = request(lines(APPROVED_TURN)[14].1);
    assert_eq!(approval.fallback_reply().unwrap(), json!({"decision": "decline"}));
    assert_eq!(approval.thread_id(), Some("th-1"));
}

#[test]
fn reply_shapes_match_the_reference() {
    assert_eq!(
        enc(&CommandExecutionRequestApprovalResponse { decision: CommandExecutionApprovalDecision::AcceptForSession }),
        REPLY_DECISION_FOR_SESSION
    );
    assert_eq!(
        enc(&CommandExecutionRequestApprovalResponse {
            decision: CommandExecutionApprovalDecision::AcceptWithExecpolicyAmendment {
                execpolicy_amendment: vec!["echo".into(), "hello".into()],
            },
        }),
        REPLY_DECISION_AMENDMENT
    );
    for (decision, wire) in [
        (FileChangeApprovalDecision::Accept, "accept"),
        (FileChangeApprovalDecision::AcceptForSession, "acceptForSession"),
        (FileChangeApprovalDecision::Decline, "decline"),
        (FileChangeApprovalDecision::Cancel, "cancel"),
    ] {
        assert_eq!(enc(&FileChangeRequestApprovalResponse { decision }), format!(r#"{{"decision":"{wire}"}}"#));
    }
    for (decision, wire) in [
        (CommandExecutionApprovalDecision::Accept, "accept"),
        (CommandExecutionApprovalDecision::Decline, "decline"),
        (CommandExecutionApprovalDecision::Cancel, "cancel"),
    ] {
        assert_eq!(enc(&CommandExecutionRequestApprovalResponse { decision }), format!(r#"{{"decision":"{wire}"}}"#));
    }
    assert_eq!(enc(&DynamicToolCallResponse::success("42")), REPLY_TOOL_CALL);
    let image = DynamicToolCallResponse {
        content_items: vec![DynamicToolContentItem::InputImage { image_url: "data:image/png;base64,AA==".into() }],
        success: true,
    };
    assert_eq!(enc(&image), REPLY_TOOL_CALL_IMAGE);
    let mut answers = ToolRequestUserInputResponse::default();
    answers.answers.insert("q1".into(), UserInputAnswer { answers: vec!["yes".into()] });
    assert_eq!(enc(&answers), REPLY_USER_INPUT);
    assert_eq!(enc(&PermissionsRequestApprovalResponse::deny()), REPLY_PERMISSIONS_DENIED);
    let session = PermissionsRequestApprovalResponse {
        permissions: PermissionProfile { network: Some(json!({"enabled": true})), ..Default::default() },
        scope: PermissionGrantScope::Session,
    };
    assert_eq!(enc(&session), r#"{"permissions":{"network":{"enabled":true}},"scope":"session"}"#);
    assert_eq!(
        enc(&McpServerElicitationRequestResponse { action: ElicitationAction::Decline, content: None }),
        REPLY_ELICITATION_DECLINE
    );
}

/// A reply as compact JSON text.
fn enc<T: Serialize>(reply: &T) -> String {
    serde_json::to_string(reply).unwrap()
}

#[test]
fn user_inputs_and_dynamic_tools_round_trip() {
    for (input, wire) in [
        (UserInput::text("hi"), USER_INPUT_TEXT),
        (UserInput::image_url("https://example.com/a.png"), USER_INPUT_IMAGE),
        (UserInput::local_image("/tmp/a.png"), USER_INPUT_LOCAL_IMAGE),
    ] {
        assert_eq!(serde_json::to_string(&input).unwrap(), wire);
        assert_eq!(serde_json::from_str::<UserInput>(wire).unwrap(), input);
    }
    let skill = json!({"type": "skill", "name": "s", "path": "/p"});
    assert_eq!(serde_json::from_value::<UserInput>(skill.clone()).unwrap(), UserInput::Unknown(skill));

    let spec = DynamicToolSpec::Function(DynamicToolFunction {
        name: "lookup".into(),
        description: "Look a thing up".into(),
        input_schema: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        ..Default::default()
    });
    // `inputSchema` is a `Value` (keys sorted), so compare as JSON; the tag and fields keep their order.
    let encoded = serde_json::to_string(&spec).unwrap();
    assert!(
        encoded.starts_with(r#"{"type":"function","name":"lookup","description":"Look a thing up","inputSchema":"#)
    );
    assert_eq!(
        serde_json::from_str::<Value>(&encoded).unwrap(),
        serde_json::from_str::<Value>(DYNAMIC_TOOL_SPEC).unwrap()
    );
    assert_eq!(serde_json::from_str::<DynamicToolSpec>(DYNAMIC_TOOL_SPEC).unwrap(), spec);
    let start = ThreadStartParams { dynamic_tools: Some(vec![spec]), ..Default::default() };
    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"dynamicTools": [serde_json::from_str::<Value>(DYNAMIC_TOOL_SPEC).unwrap()]})
    );
}

#[test]
fn client_params_use_the_wire_spellings() {
    // docs/peers/codex.md#enum-spellings: kebab-case sandbox and approvalPolicy, camelCase-tagged sandboxPolicy.
    let start = ThreadStartParams {
        sandbox: Some(SandboxMode::WorkspaceWrite),
        approval_policy: Some(ApprovalPolicy::Untrusted),
        approvals_reviewer: Some(ApprovalsReviewer::AutoReview),
        ephemeral: Some(true),
        ..Default::default()
    };
    assert_eq!(
        serde_json::to_value(&start).unwrap(),
        json!({"sandbox": "workspace-write", "approvalPolicy": "untrusted", "approvalsReviewer": "auto_review", "ephemeral": true})
    );
    let turn = TurnStartParams {
        sandbox_policy: Some(SandboxPolicy::DangerFullAccess),
        approval_policy: Some(ApprovalPolicy::Never),
        effort: Some("low".into()),
        ..TurnStartParams::new("th-1", vec![UserInput::image_url("https://x/y.png")])
    };
    assert_eq!(
        serde_json::to_value(&turn).unwrap(),
        json!({"threadId": "th-1", "input": [{"type": "image", "url": "https://x/y.png"}], "approvalPolicy": "never",
               "sandboxPolicy": {"type": "dangerFullAccess"}, "effort": "low"})
    );
    let steer = TurnSteerParams {
        thread_id: "th-1".into(),
        input: vec![UserInput::text("also this")],
        expected_turn_id: "tu-1".into(),
        extra: Extra::new(),
    };
    assert_eq!(
        serde_json::to_value(&steer).unwrap(),
        json!({"threadId": "th-1", "input": [{"type": "text", "text": "also this", "text_elements": []}], "expectedTurnId": "tu-1"})
    );
    let steered: TurnSteerResponse = serde_json::from_value(json!({"turnId": "tu-1"})).unwrap();
    assert_eq!(steered.turn_id, "tu-1");
    let resume = ThreadResumeParams { exclude_turns: Some(true), ..ThreadResumeParams::new("th-1") };
    assert_eq!(serde_json::to_value(&resume).unwrap(), json!({"threadId": "th-1", "excludeTurns": true}));
    let policy: ApprovalPolicy = serde_json::from_value(json!({"granular": {"sandbox_approval": true}})).unwrap();
    assert_eq!(policy, ApprovalPolicy::Granular(json!({"sandbox_approval": true})));
    let gone: ApprovalPolicy = serde_json::from_value(json!("on-failure")).unwrap();
    assert_eq!(gone, ApprovalPolicy::Unknown(json!("on-failure")));
    let mode: SandboxMode = serde_json::from_value(json!("read-only")).unwrap();
    assert_eq!(mode, SandboxMode::ReadOnly);
}

#[test]
fn unknown_methods_items_and_values_land_in_catch_alls() {
    let diff = decode_both("account/rateLimits/updated", Some(json!({"rateLimits": {}})));
    assert_eq!(
        diff,
        ServerNotification::Unknown {
            method: "account/rateLimits/updated".into(),
            params: json!({"rateLimits": {}}),
            decode_error: None
        }
    );
    assert_eq!(diff.method(), "account/rateLimits/updated");
    assert_eq!(diff.params(), json!({"rateLimits": {}}));

    // A known method whose params do not fit keeps them whole, with the reason.
    let bad = decode_both("turn/completed", Some(json!({"threadId": 5})));
    let ServerNotification::Unknown { method, params, decode_error } = bad else { panic!("{bad:?}") };
    assert_eq!((method.as_str(), params), ("turn/completed", json!({"threadId": 5})));
    assert!(decode_error.unwrap().contains("invalid type"));
    let missing = decode_both("turn/started", None);
    assert!(matches!(missing, ServerNotification::Unknown { params: Value::Null, decode_error: Some(_), .. }));

    // An unknown item type inside a known notification: the notification decodes, the item is raw.
    let raw_item = json!({"type": "imageView", "id": "iv_1", "path": "/a.png", "startedAtMs": 1});
    let note = decode_both("item/started", Some(json!({"threadId": "th-1", "turnId": "tu-1", "item": raw_item})));
    let ServerNotification::ItemStarted(started) = note else { panic!("{note:?}") };
    assert_eq!(started.item, ThreadItem::Unknown(raw_item));
    assert_eq!((started.item.item_type(), started.item.id()), (Some("imageView"), Some("iv_1")));

    // A known item type that does not decode is kept raw as well (not a failed notification).
    let odd = json!({"type": "agentMessage", "text": 7});
    assert_eq!(serde_json::from_value::<ThreadItem>(odd.clone()).unwrap(), ThreadItem::Unknown(odd));

    // Unknown fields are kept in `extra`; unknown enum values in their catch-alls.
    let item: ThreadItem = serde_json::from_value(json!({
        "type": "commandExecution", "id": "c", "status": "paused", "source": "robot", "futureField": [1]
    }))
    .unwrap();
    let ThreadItem::CommandExecution(exec) = &item else { panic!("{item:?}") };
    assert_eq!(exec.status, Some(ItemStatus::Unknown("paused".into())));
    assert_eq!(exec.source, Some(CommandExecutionSource::Unknown("robot".into())));
    assert_eq!(exec.extra.get("futureField"), Some(&json!([1])));
    let status: ThreadStatus = serde_json::from_value(json!({"type": "hibernating"})).unwrap();
    assert_eq!(status, ThreadStatus::Unknown(json!({"type": "hibernating"})));
    let flag: ThreadActiveFlag = serde_json::from_value(json!("waitingOnGodot")).unwrap();
    assert_eq!(flag.as_str(), "waitingOnGodot");
    let decision: CommandExecutionApprovalDecision = serde_json::from_value(json!({"acceptWithNewThing": {}})).unwrap();
    assert_eq!(decision, CommandExecutionApprovalDecision::Unknown(json!({"acceptWithNewThing": {}})));

    // Unknown server requests: raw params, and a method-not-found fallback.
    let unknown = ServerRequest::from_request("applyPatchApproval", Some(json!({"conversationId": "c"})));
    assert!(matches!(&unknown, ServerRequest::Unknown { decode_error: None, .. }));
    assert_eq!(unknown.fallback_reply().unwrap_err().code, crate::jsonrpc::codes::METHOD_NOT_FOUND);
    let broken = ServerRequest::from_request("item/tool/call", Some(json!({"threadId": "th-1"})));
    let ServerRequest::Unknown { decode_error: Some(reason), .. } = &broken else { panic!("{broken:?}") };
    assert!(reason.contains("missing field"), "{reason}");
    assert_eq!(broken.thread_id(), Some("th-1"));
}

#[test]
fn known_method_lists_have_no_duplicates() {
    for list in [ServerNotification::KNOWN_METHODS, ServerRequest::KNOWN_METHODS] {
        let mut sorted = list.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), list.len());
    }
}
