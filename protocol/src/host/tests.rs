//! Wire-shape tests. The JSON strings here are lines (params or results) of `docs/host-protocol.md`;
//! `protocol/tests/host_schema.rs` checks the doc side, these check that the Rust values the bridge
//! builds produce exactly those bytes, and that host input is decoded tolerantly.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::attempt::AttemptResult;
use crate::attempt::hooks::{TerminalOutcome, ToolFailure, ToolTerminalReport};
use crate::event::{NativeMutation, TerminalCause, TerminalKind, ToolCall, ToolFinish, ToolOutcome, TurnTerminal};

fn encode<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("wire types serialise")
}

fn decode<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{text} does not decode: {e}"))
}

const INITIALIZE_PARAMS: &str = r#"{"protocolVersion":3,"host":{"name":"openclaw","version":"2026.9.6"},"capabilities":{"hostTools":true,"approvals":true,"toolTerminals":true,"transcriptAppend":true,"userInput":true}}"#;
const INITIALIZE_RESULT: &str = r#"{"protocolVersion":3,"supportedProtocolVersions":{"min":3,"max":3},"bridge":{"name":"clawbridge","version":"0.1.0"},"harnesses":[{"id":"clawbridge-codex","label":"Codex (clawbridge)","backend":"codex","available":true,"providerIds":[]}],"backends":[{"id":"codex","available":true,"version":"0.169.0"},{"id":"claude","available":false,"detail":"claude not found on PATH"}],"capabilities":{"maxConcurrentAttempts":64,"streamingDeltas":true},"logFile":"/home/me/.local/state/clawbridge/logs/clawbridge.log"}"#;
const VERSION_ERROR: &str = r#"{"code":-32010,"message":"host protocol version 4 is not supported: clawbridge 0.1.0 speaks version 3; upgrade whichever side is older","data":{"bridgeVersion":"0.1.0","requestedVersion":4,"supportedVersions":{"max":3,"min":3}}}"#;
const TOOL_STARTED_EVENT: &str = r#"{"attemptId":"run-a:1","seq":1,"event":{"type":"toolStarted","callId":"call_1","toolName":"exec","arguments":{"command":"echo hi"},"native":true,"nativeMutation":{"mutatingAction":false,"replaySafe":true}}}"#;
const OBSERVE_PARAMS: &str = r#"{"attemptId":"run-a:1","toolCallId":"call_6","toolName":"write","arguments":{"content":"y","path":"x.txt"},"executionStarted":true,"outcome":"failure","failure":{"error":"EACCES: permission denied","errorCode":"EACCES","timedOut":false},"nativeMutation":{"mutatingAction":true,"replaySafe":false}}"#;
const CANCELLED_RESULT: &str = r#"{"attemptId":"run-b:1","terminal":{"kind":"aborted","message":"user pressed stop","cause":"cancelled"},"nativeSessionId":"th-9","assistantTexts":[],"replay":{"hadPotentialSideEffects":false,"replaySafe":true},"tools":[],"itemLifecycle":{"startedCount":0,"completedCount":0,"activeCount":0},"transcriptOwned":true}"#;

/// The protocol doc, whose example lines must contain every string above verbatim.
const DOC: &str = include_str!("../../../docs/host-protocol.md");

#[test]
fn every_string_here_is_in_the_doc() {
    for text in
        [INITIALIZE_PARAMS, INITIALIZE_RESULT, VERSION_ERROR, TOOL_STARTED_EVENT, OBSERVE_PARAMS, CANCELLED_RESULT]
    {
        assert!(DOC.contains(text), "docs/host-protocol.md has no line containing {text}");
    }
}

#[test]
fn versions_are_one_consistent_range() {
    assert_eq!(PROTOCOL_VERSION, 3);
    assert!(SUPPORTED_PROTOCOL_VERSIONS.contains(&PROTOCOL_VERSION));
    assert_eq!(VersionRange::SUPPORTED, VersionRange { min: MIN_PROTOCOL_VERSION, max: MAX_PROTOCOL_VERSION });
    assert_eq!(negotiate(PROTOCOL_VERSION, "0.1.0"), Ok(PROTOCOL_VERSION));
}

#[test]
fn an_unsupported_version_is_an_error_naming_both_versions_and_the_range() {
    for requested in [0, 1, 2, 4, u32::MAX] {
        let error = negotiate(requested, "0.1.0").expect_err("no silent downgrade");
        assert_eq!(error.code, errors::UNSUPPORTED_PROTOCOL_VERSION);
        assert!(error.message.contains(&format!("version {requested} ")), "{}", error.message);
        assert!(error.message.contains("clawbridge 0.1.0 speaks version 3"), "{}", error.message);
    }
    assert_eq!(encode(&negotiate(4, "0.1.0").unwrap_err()), VERSION_ERROR);
}

#[test]
fn handshake_lines_are_the_documented_bytes() {
    let params = InitializeParams {
        protocol_version: PROTOCOL_VERSION,
        host: PeerInfo { name: "openclaw".into(), version: "2026.9.6".into() },
        capabilities: HostCapabilities {
            host_tools: true,
            approvals: true,
            tool_terminals: true,
            transcript_append: true,
            user_input: true,
        },
    };
    assert_eq!(encode(&params), INITIALIZE_PARAMS);
    assert_eq!(decode::<InitializeParams>(INITIALIZE_PARAMS), params);

    let result = InitializeResponse {
        protocol_version: PROTOCOL_VERSION,
        supported_protocol_versions: VersionRange::SUPPORTED,
        bridge: PeerInfo { name: "clawbridge".into(), version: "0.1.0".into() },
        harnesses: vec![HarnessInfo {
            id: "clawbridge-codex".into(),
            label: "Codex (clawbridge)".into(),
            backend: "codex".into(),
            available: true,
            unavailable_reason: None,
            provider_ids: vec![],
            inputs: HarnessInputs::default(),
            runtime_artifact: None,
        }],
        backends: vec![
            BackendInfo { id: "codex".into(), available: true, version: Some("0.169.0".into()), detail: None },
            BackendInfo {
                id: "claude".into(),
                available: false,
                version: None,
                detail: Some("claude not found on PATH".into()),
            },
        ],
        capabilities: BridgeCapabilities { max_concurrent_attempts: Some(64), streaming_deltas: true },
        log_file: Some("/home/me/.local/state/clawbridge/logs/clawbridge.log".into()),
    };
    assert_eq!(encode(&result), INITIALIZE_RESULT);
    assert_eq!(decode::<InitializeResponse>(INITIALIZE_RESULT), result);
}

#[test]
fn events_and_tool_terminals_are_the_documented_bytes() {
    let call = ToolCall {
        call_id: "call_1".into(),
        tool_name: "exec".into(),
        arguments: json!({"command": "echo hi"}),
        native: true,
        native_mutation: Some(NativeMutation { mutating_action: false, replay_safe: true }),
    };
    let event = AttemptEventParams { attempt_id: "run-a:1".into(), seq: 1, event: AttemptEvent::ToolStarted(call) };
    assert_eq!(encode(&event), TOOL_STARTED_EVENT);
    assert_eq!(decode::<AttemptEventParams>(TOOL_STARTED_EVENT), event);
    let sent = AttemptEventRef { attempt_id: &event.attempt_id, seq: event.seq, event: &event.event };
    assert_eq!(encode(&sent), TOOL_STARTED_EVENT, "the borrowing twin the bridge sends writes the same bytes");

    let report = ToolTerminalReport {
        tool_call_id: "call_6".into(),
        tool_name: "write".into(),
        arguments: json!({"content": "y", "path": "x.txt"}),
        execution_started: true,
        outcome: TerminalOutcome::Failure,
        failure: Some(ToolFailure {
            error: Some("EACCES: permission denied".into()),
            error_code: Some("EACCES".into()),
            timed_out: false,
        }),
        native_mutation: Some(NativeMutation { mutating_action: true, replay_safe: false }),
        meta: None,
    };
    let observe = ToolTerminalObserveParams { attempt_id: "run-a:1".into(), report };
    assert_eq!(encode(&observe), OBSERVE_PARAMS);
    assert_eq!(decode::<ToolTerminalObserveParams>(OBSERVE_PARAMS), observe);
}

#[test]
fn a_cancelled_attempt_result_is_the_documented_bytes() {
    let result = AttemptRunResponse {
        attempt_id: "run-b:1".into(),
        result: AttemptResult {
            terminal: TurnTerminal {
                kind: TerminalKind::Aborted,
                message: Some("user pressed stop".into()),
                cause: Some(TerminalCause::Cancelled),
            },
            native_session_id: Some("th-9".into()),
            assistant_texts: vec![],
            usage: None,
            last_call: None,
            classification: None,
            replay: ReplayMetadata { had_potential_side_effects: false, replay_safe: true },
            tools: vec![],
            last_tool_error: None,
            item_lifecycle: ItemLifecycle::default(),
            model_responded: false,
        },
        transcript_owned: true,
        transcript_idempotency_key: None,
        tool_running_at_timeout: false,
        runtime_artifact: None,
        projection: None,
    };
    assert_eq!(encode(&result), CANCELLED_RESULT);
    assert_eq!(decode::<AttemptRunResponse>(CANCELLED_RESULT), result);
}

#[test]
fn host_input_is_decoded_tolerantly() {
    // Unknown fields anywhere are ignored; missing optional parts default.
    let params: InitializeParams = decode(r#"{"protocolVersion":3,"future":{"x":1}}"#);
    assert_eq!(params.capabilities, HostCapabilities::default(), "a missing capability is false");
    assert_eq!(params.host, PeerInfo::default());
    // The version itself is required: guessing it would be a silent downgrade.
    assert!(serde_json::from_str::<InitializeParams>(r#"{"host":{"name":"openclaw"}}"#).is_err());

    // The host may return observeToolTerminal's whole output; only lastToolError is kept.
    let resolution: ToolTerminalObserveResponse = decode(
        r#"{"lastToolError":{"toolName":"write"},"executionStarted":true,"sideEffectEvidence":true,"effectReceipt":{"state":"uncertain"}}"#,
    );
    assert_eq!(resolution.last_tool_error, Some(json!({"toolName": "write"})));
    assert_eq!(decode::<ToolTerminalObserveResponse>("{}"), ToolTerminalObserveResponse::default());

    // A decision from a newer host is unknown, which the bridge treats as deny.
    assert_eq!(decode::<ApprovalDecideResponse>(r#"{"decision":"allowAlways"}"#), ApprovalDecideResponse::Unknown);
    assert_eq!(
        decode::<ApprovalDecideResponse>(r#"{"decision":"deny","extra":1}"#),
        ApprovalDecideResponse::Deny { message: None }
    );

    // supports(ctx) is forwarded as the host built it, with fields this build does not model.
    let supports: SupportsParams = decode(
        r#"{"harnessId":"h","provider":"mock","providerOwnerStatus":"unowned","modelProvider":{"endpointOverrides":"none","preparedAuth":{"source":"direct"},"runtimePolicy":{}}}"#,
    );
    assert_eq!(supports.model_provider.and_then(|m| m.runtime_policy).map(|p| p.compatible_ids), Some(vec![]));

    // Reset reasons the host adds later fall into `unknown`; empty params are fine.
    assert_eq!(decode::<SessionResetParams>(r#"{"reason":"archived"}"#).reason, Some(ResetReason::Unknown));
    assert_eq!(decode::<SessionResetParams>("{}"), SessionResetParams::default());
    // Only compaction keeps the native thread; a v1 bridge's answer (no `action`) reads as unbound.
    assert!(ResetReason::Compaction.keeps_native_session());
    for reason in [ResetReason::New, ResetReason::Reset, ResetReason::Idle, ResetReason::Daily, ResetReason::Deleted] {
        assert!(!reason.keeps_native_session(), "{reason:?}");
    }
    assert!(!ResetReason::Unknown.keeps_native_session());
    assert_eq!(decode::<SessionResetResponse>(r#"{"dropped":false}"#).action, ResetAction::Unbound);
    assert_eq!(decode::<SessionResetResponse>(r#"{"dropped":false,"action":"archived"}"#).action, ResetAction::Unbound);
    assert_eq!(decode::<ShutdownParams>("{}"), ShutdownParams::default());
    assert_eq!(decode::<HarnessListParams>(r#"{"verbose":true}"#), HarnessListParams::default());

    // Appends and user input answered with nothing are still acknowledgements.
    assert_eq!(decode::<TranscriptAppendResponse>("{}"), TranscriptAppendResponse::default());
    assert!(decode::<UserInputResponse>("{}").answers.is_empty());
    assert!(!decode::<HostToolExecuteResponse>(r#"{"text":"ok"}"#).is_error);
}

#[test]
fn readers_skip_what_a_newer_bridge_sends() {
    let event: AttemptEventParams = decode(r#"{"attemptId":"a","seq":9,"event":{"type":"compacted","tokens":5}}"#);
    assert_eq!(event.event, AttemptEvent::Unknown);
    let finish: ToolFinish = decode(
        r#"{"call":{"callId":"c","toolName":"exec"},"outcome":{"kind":"failure","errorCode":"EACCES"},"executionStarted":true}"#,
    );
    assert_eq!(finish.call.arguments, Value::Null);
    assert_eq!(
        finish.outcome,
        ToolOutcome::Failure { error: None, error_code: Some("EACCES".into()), timed_out: false }
    );
    assert_eq!(decode::<AttemptCancelResponse>(r#"{"status":"queued"}"#).status, CancelStatus::Unknown);
}

#[test]
fn method_names_are_unique_and_host_requests_are_prefixed() {
    let mut names: Vec<&str> = METHODS.iter().map(|m| m.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), METHODS.len());
    for method in METHODS {
        assert_eq!(
            method.name.starts_with("host/"),
            method.sender == Sender::Bridge && method.kind == MethodKind::Request
        );
    }
    let mut codes: Vec<i64> = errors::ALL.iter().map(|e| e.code).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), errors::ALL.len());
    assert!(codes.iter().all(|c| (-32099..=-32000).contains(c)), "server-error range");
}

#[test]
fn the_schema_is_deterministic() {
    assert_eq!(schema(), schema());
}

#[test]
fn attempt_params_log_their_shape_not_the_prompt_or_the_prepared_environment() {
    let params = AttemptRunParams {
        prompt: "the user's secret plan".into(),
        process_env: [("OPENCLAW_TOKEN".to_string(), "tok-very-secret".to_string())].into_iter().collect(),
        ..AttemptRunParams::default()
    };
    let shown = format!("{params:?}");
    assert!(shown.contains("OPENCLAW_TOKEN") && shown.contains("prompt_bytes: 22"), "{shown}");
    assert!(!shown.contains("secret plan") && !shown.contains("tok-very-secret"), "{shown}");
}

/// Decodes `known` with an unknown member added and checks that re-encoding the value gives back
/// exactly what decoding `known` alone gives: the unknown member left nothing in the value (no
/// catch-all map, no flattened `Value`).
fn keeps_nothing_unknown<T: serde::Serialize + serde::de::DeserializeOwned>(known: &str) {
    let rest = known[1..].trim_start();
    let separator = if rest.starts_with('}') { "" } else { "," };
    let with_unknown = format!(r#"{{"zzUnknown":{{"deep":[1,2,3],"text":"kept?"}}{separator}{rest}"#);
    let plain = encode(&decode::<T>(known));
    let decoded = encode(&decode::<T>(&with_unknown));
    assert_eq!(decoded, plain, "{with_unknown}");
    assert!(!decoded.contains("zzUnknown") && !decoded.contains("kept?"), "{decoded}");
}

#[test]
fn host_params_keep_no_unknown_members() {
    keeps_nothing_unknown::<InitializeParams>(INITIALIZE_PARAMS);
    keeps_nothing_unknown::<HarnessListParams>("{}");
    keeps_nothing_unknown::<SupportsParams>(r#"{"harnessId":"codex","provider":"openai"}"#);
    keeps_nothing_unknown::<AttemptCancelParams>(r#"{"attemptId":"a"}"#);
    keeps_nothing_unknown::<AttemptSteerParams>(r#"{"attemptId":"a","text":"t"}"#);
    keeps_nothing_unknown::<SessionResetParams>(r#"{"sessionId":"s"}"#);
    keeps_nothing_unknown::<SessionDeleteParams>(r#"{"sessionId":"s"}"#);
    keeps_nothing_unknown::<SessionContextResetParams>(r#"{"sessionId":"s","previousSessionId":"p"}"#);
    keeps_nothing_unknown::<ShutdownParams>(r#"{"reason":"r"}"#);
    keeps_nothing_unknown::<AttemptRunParams>(
        r#"{"attemptId":"a","harnessId":"codex","sessionId":"s","prompt":"p","workspaceDir":"/w",
            "hostTools":[{"name":"t","inputSchema":{"type":"object"}}],"auth":{"apiKey":"k"}}"#,
    );
}

#[test]
fn an_attempts_input_bytes_count_what_it_keeps_and_not_its_unknown_members() {
    let prompt = "p".repeat(1000);
    let params: AttemptRunParams = decode(&format!(
        r#"{{"attemptId":"a","harnessId":"h","sessionId":"s","prompt":"{prompt}","workspaceDir":"/w",
            "unknown":"{}","images":[{{"data":"aGk=","mimeType":"image/png"}}],
            "hostTools":[{{"name":"t","description":"d","inputSchema":{{"type":"object"}}}}]}}"#,
        "u".repeat(100_000)
    ));
    let expected = "a".len()
        + "h".len()
        + "s".len()
        + prompt.len()
        + "/w".len()
        + "aGk=".len()
        + "image/png".len()
        + "t".len()
        + "d".len()
        + r#"{"type":"object"}"#.len()
        + std::mem::size_of::<ImageInput>()
        + std::mem::size_of::<HostToolSpec>();
    assert_eq!(params.input_bytes(), expected);
}

#[test]
fn empty_elements_are_charged_their_own_size() {
    let base = r#""attemptId":"a","harnessId":"h","sessionId":"s","prompt":"","workspaceDir":"/w""#;
    let bare: AttemptRunParams = decode(&format!("{{{base}}}"));
    let names = vec![""; 1000];
    let listed: AttemptRunParams = decode(&format!(
        r#"{{{base},"toolsAllow":{list},"toolExecutionAllow":{list},"hostTools":{tools},"processEnv":{{"A":""}}}}"#,
        list = json!(names),
        tools = json!(vec![json!({"name": ""}); 10]),
    ));
    let charged = listed.input_bytes() - bare.input_bytes();
    let at_least = 2 * 1000 * std::mem::size_of::<String>() + 10 * std::mem::size_of::<HostToolSpec>();
    assert!(charged >= at_least, "{charged} bytes charged for lists needing at least {at_least}");
}

/// Builds a member's value with the given number of elements.
type Members<'a> = &'a dyn Fn(usize) -> String;

#[test]
fn lists_past_their_limits_are_refused_while_decoded_naming_the_member() {
    use crate::host::limits;
    let base = r#""attemptId":"a","harnessId":"h","sessionId":"s","prompt":"","workspaceDir":"/w""#;
    let names = |n: usize| json!(vec![""; n]).to_string();
    let env =
        |n: usize| json!((0..n).map(|i| (format!("V{i}"), String::new())).collect::<BTreeMap<_, _>>()).to_string();
    let tools = |n: usize| json!(vec![json!({"name": ""}); n]).to_string();
    let images = |n: usize| json!(vec![json!({"data": "", "mimeType": "image/png"}); n]).to_string();
    let cases: [(&str, usize, Members); 5] = [
        ("toolsAllow", limits::MAX_TOOL_NAMES, &names),
        ("toolExecutionAllow", limits::MAX_TOOL_NAMES, &names),
        ("hostTools", limits::MAX_HOST_TOOLS, &tools),
        ("processEnv", limits::MAX_PROCESS_ENV_ENTRIES, &env),
        ("images", limits::MAX_IMAGES, &images),
    ];
    for (member, limit, value) in cases {
        let at = format!(r#"{{{base},"{member}":{}}}"#, value(limit));
        serde_json::from_str::<AttemptRunParams>(&at).unwrap_or_else(|e| panic!("{member} at its limit: {e}"));
        let past = format!(r#"{{{base},"{member}":{}}}"#, value(limit + 1));
        let error = serde_json::from_str::<AttemptRunParams>(&past).expect_err(member).to_string();
        assert!(error.contains(member) && error.contains(&limit.to_string()), "{member}: {error}");
    }
    let headers = json!((0..=limits::MAX_AUTH_HEADERS).map(|i| (format!("h{i}"), "")).collect::<BTreeMap<_, _>>());
    let past = format!(r#"{{{base},"auth":{{"headers":{headers}}}}}"#);
    let error = serde_json::from_str::<AttemptRunParams>(&past).expect_err("headers").to_string();
    assert!(error.contains("auth.headers"), "{error}");
    let null_list: AttemptRunParams = decode(&format!(r#"{{{base},"toolsAllow":null}}"#));
    assert_eq!(null_list.tools_allow, None);
}

#[test]
fn host_tool_schemas_are_kept_as_written() {
    let spec: HostToolSpec = decode(r#"{"name":"t","inputSchema":{"b":[1, 2],"a":1.50}}"#);
    assert_eq!(spec.input_schema.get(), r#"{"b":[1, 2],"a":1.50}"#);
    assert_eq!(spec.schema_value(), json!({"b": [1, 2], "a": 1.5}));
    assert!(spec.check_schema().is_ok());
    let deep = format!(r#"{{"name":"deep","inputSchema":{}{}}}"#, "[".repeat(200), "]".repeat(200));
    let deep: HostToolSpec = decode(&deep);
    assert!(deep.check_schema().is_err(), "a schema a Value cannot hold");
    assert_eq!(deep.schema_value(), Value::Null);
    let surrogate: HostToolSpec = decode(r#"{"name":"s","inputSchema":{"\ud800":1}}"#);
    assert!(surrogate.check_schema().is_err());
    let bare: HostToolSpec = decode(r#"{"name":"t"}"#);
    assert_eq!(bare.input_schema.get(), "{}");
}
