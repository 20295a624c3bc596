//! Keeps `docs/host-protocol.schema.json` and the examples in `docs/host-protocol.md` in step with the
//! Rust types in `clawbridge_protocol::host`.
//!
//! - The schema is regenerated and compared with the checked-in copy; on drift the test fails and
//!   prints the command that refreshes it (which also runs this test).
//! - Every line of every ```` ```jsonrpc ```` block in the doc is decoded through the method's params or
//!   result type and must encode back to the same JSON, so a doc example can never show a field the
//!   types do not have, or leave out one they always send.

use std::collections::HashMap;
use std::path::PathBuf;

use clawbridge_protocol::host::{self, errors, methods};
use clawbridge_protocol::jsonrpc::{ErrorObject, Message, codes};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

const UPDATE_ENV: &str = "CLAWBRIDGE_UPDATE_SCHEMA";
const UPDATE_COMMAND: &str = "CLAWBRIDGE_UPDATE_SCHEMA=1 cargo test -p clawbridge-protocol --test host_schema";

fn docs_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

#[test]
fn checked_in_schema_matches_the_types() {
    let path = docs_dir().join("host-protocol.schema.json");
    let generated = serde_json::to_string_pretty(&host::schema()).expect("the schema serialises") + "\n";
    if std::env::var_os(UPDATE_ENV).is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write the schema");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/host-protocol.schema.json is out of date with protocol/src/host (or missing).\nRefresh it with:\n\n    \
         {UPDATE_COMMAND}\n"
    );
}

#[test]
fn schema_lists_every_method_and_error() {
    let schema = host::schema();
    for method in host::METHODS {
        let entry = &schema["methods"][method.name];
        assert!(entry["params"]["$ref"].is_string(), "{} has no params schema", method.name);
        let is_notification = method.kind == host::MethodKind::Notification;
        assert_eq!(entry["result"].is_null(), is_notification, "{} result schema", method.name);
    }
    for error in errors::ALL {
        assert!(schema["errors"][error.code.to_string()].is_object(), "error {} missing", error.code);
    }
    let defs = schema["$defs"].as_object().expect("$defs");
    for name in ["AttemptEvent", "TranscriptMessage", "ApprovalDecideResponse", "ProtocolVersionErrorData"] {
        assert!(defs.contains_key(name), "$defs lacks {name}");
    }
}

/// JSON equality where numbers compare by value (`0` == `0.0`): llm-core costs are floats, and the doc
/// writes them as the host does.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_json(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Decodes `value` as `T` and checks it encodes back to the same JSON; returns the compact encoding (the
/// exact bytes the bridge writes for it), or an error naming what differs.
fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> Result<String, String> {
    let decoded: T = serde_json::from_value(value.clone()).map_err(|e| format!("does not decode: {e}"))?;
    let encoded = serde_json::to_value(&decoded).map_err(|e| format!("does not encode: {e}"))?;
    if same_json(&encoded, value) {
        Ok(serde_json::to_string(&decoded).expect("encoded above"))
    } else {
        Err(format!("encodes back as {encoded}"))
    }
}

fn check_params(method: &str, params: &Value) -> Result<String, String> {
    match method {
        methods::INITIALIZE => round_trip::<host::InitializeParams>(params),
        methods::HARNESS_LIST => round_trip::<host::HarnessListParams>(params),
        methods::HARNESS_SUPPORTS => round_trip::<host::SupportsParams>(params),
        methods::ATTEMPT_RUN => round_trip::<host::AttemptRunParams>(params),
        methods::ATTEMPT_CANCEL => round_trip::<host::AttemptCancelParams>(params),
        methods::ATTEMPT_STEER => round_trip::<host::AttemptSteerParams>(params),
        methods::SESSION_RESET => round_trip::<host::SessionResetParams>(params),
        methods::SESSION_DELETE => round_trip::<host::SessionDeleteParams>(params),
        methods::SESSION_CONTEXT_RESET => round_trip::<host::SessionContextResetParams>(params),
        methods::CATALOG_MODELS => round_trip::<host::CatalogModelsParams>(params),
        methods::SESSION_COMPACT => round_trip::<host::SessionCompactParams>(params),
        methods::CATALOG_MCP_TOOLS => round_trip::<host::CatalogMcpToolsParams>(params),
        methods::SHUTDOWN => round_trip::<host::ShutdownParams>(params),
        methods::ATTEMPT_EVENT => {
            let encoded = round_trip::<host::AttemptEventParams>(params)?;
            let decoded: host::AttemptEventParams = serde_json::from_value(params.clone()).expect("decoded above");
            if decoded.event == host::AttemptEvent::Unknown {
                return Err("the event type is unknown to this build".into());
            }
            Ok(encoded)
        }
        methods::HOST_TOOL_EXECUTE => round_trip::<host::HostToolExecuteParams>(params),
        methods::HOST_APPROVAL_DECIDE => round_trip::<host::ApprovalDecideParams>(params),
        methods::HOST_TOOL_TERMINAL_OBSERVE => round_trip::<host::ToolTerminalObserveParams>(params),
        methods::HOST_TRANSCRIPT_APPEND => round_trip::<host::TranscriptAppendParams>(params),
        methods::HOST_USER_INPUT_REQUEST => round_trip::<host::UserInputRequestParams>(params),
        other => Err(format!("unknown method {other}")),
    }
}

fn check_result(method: &str, result: &Value) -> Result<String, String> {
    match method {
        methods::INITIALIZE => round_trip::<host::InitializeResponse>(result),
        methods::HARNESS_LIST => round_trip::<host::HarnessListResponse>(result),
        methods::HARNESS_SUPPORTS => round_trip::<host::SupportsResponse>(result),
        methods::ATTEMPT_RUN => round_trip::<host::AttemptRunResponse>(result),
        methods::ATTEMPT_CANCEL => round_trip::<host::AttemptCancelResponse>(result),
        methods::ATTEMPT_STEER => round_trip::<host::AttemptSteerResponse>(result),
        methods::SESSION_RESET => round_trip::<host::SessionResetResponse>(result),
        methods::SESSION_DELETE => round_trip::<host::SessionDeleteResponse>(result),
        methods::SESSION_CONTEXT_RESET => round_trip::<host::SessionContextResetResponse>(result),
        methods::CATALOG_MODELS => round_trip::<host::CatalogModelsResponse>(result),
        methods::SESSION_COMPACT => round_trip::<host::SessionCompactResponse>(result),
        methods::CATALOG_MCP_TOOLS => round_trip::<host::CatalogMcpToolsResponse>(result),
        methods::SHUTDOWN => round_trip::<host::ShutdownResponse>(result),
        methods::HOST_TOOL_EXECUTE => round_trip::<host::HostToolExecuteResponse>(result),
        methods::HOST_APPROVAL_DECIDE => {
            let encoded = round_trip::<host::ApprovalDecideResponse>(result)?;
            let decoded: host::ApprovalDecideResponse = serde_json::from_value(result.clone()).expect("decoded");
            if decoded == host::ApprovalDecideResponse::Unknown {
                return Err("the decision is unknown to this build".into());
            }
            Ok(encoded)
        }
        methods::HOST_TOOL_TERMINAL_OBSERVE => round_trip::<host::ToolTerminalObserveResponse>(result),
        methods::HOST_TRANSCRIPT_APPEND => round_trip::<host::TranscriptAppendResponse>(result),
        methods::HOST_USER_INPUT_REQUEST => round_trip::<host::UserInputResponse>(result),
        other => Err(format!("{other} has no result")),
    }
}

fn check_error(method: &str, params: &Value, error: &ErrorObject) -> Result<String, String> {
    let standard = [
        codes::PARSE_ERROR,
        codes::INVALID_REQUEST,
        codes::METHOD_NOT_FOUND,
        codes::INVALID_PARAMS,
        codes::INTERNAL_ERROR,
    ];
    if !standard.contains(&error.code) && !errors::ALL.iter().any(|e| e.code == error.code) {
        return Err(format!("error code {} is not in the table", error.code));
    }
    match error.code {
        errors::UNSUPPORTED_PROTOCOL_VERSION => {
            let requested = params["protocolVersion"].as_u64().ok_or("no protocolVersion")? as u32;
            let data = error.data_value();
            let bridge_version = data.as_ref().and_then(|d| d["bridgeVersion"].as_str()).unwrap_or_default();
            let expected = errors::unsupported_protocol_version(requested, bridge_version);
            if method != methods::INITIALIZE || *error != expected {
                return Err(format!("the bridge would send {}", serde_json::to_string(&expected).unwrap()));
            }
        }
        errors::PREFLIGHT_FAILED => {
            round_trip::<errors::PreflightErrorData>(&error.data_value().ok_or("no data")?)?;
        }
        _ => {}
    }
    Ok(serde_json::to_string(error).expect("error objects serialise"))
}

/// The ```` ```jsonrpc ```` blocks of the doc: (line number, text) per line, one Vec per block.
fn example_blocks(doc: &str) -> Vec<Vec<(usize, &str)>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<(usize, &str)>> = None;
    for (index, line) in doc.lines().enumerate() {
        match (&mut current, line.trim_end()) {
            (None, "```jsonrpc") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.push(current.take().expect("inside a block")),
            (Some(lines), text) => lines.push((index + 1, text)),
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "an unterminated ```jsonrpc block");
    blocks
}

#[test]
fn every_doc_example_round_trips_through_the_types() {
    let doc = std::fs::read_to_string(docs_dir().join("host-protocol.md")).expect("read docs/host-protocol.md");
    let mut failures = Vec::new();
    let mut seen_methods = Vec::new();
    let blocks = example_blocks(&doc);
    assert!(blocks.len() >= 8, "expected the doc's examples, found {} blocks", blocks.len());
    for block in blocks {
        // Requests of this block by id, so a response can be checked against its method's result type.
        let mut pending: HashMap<String, (String, Value)> = HashMap::new();
        for (line_no, line) in block {
            let (from_host, json) = if let Some(rest) = line.strip_prefix("→ ") {
                (true, rest)
            } else if let Some(rest) = line.strip_prefix("← ") {
                (false, rest)
            } else {
                failures.push(format!("line {line_no}: starts with neither `→ ` nor `← `"));
                continue;
            };
            let value: Value = match serde_json::from_str(json) {
                Ok(value) => value,
                Err(e) => {
                    failures.push(format!("line {line_no}: not JSON: {e}"));
                    continue;
                }
            };
            if value["jsonrpc"] != "2.0" {
                failures.push(format!("line {line_no}: lacks \"jsonrpc\":\"2.0\""));
            }
            // The member whose exact bytes the bridge writes: `params` of its calls, `result` / `error`
            // of its answers. It comes last on every doc line, so the line must end with it.
            let member = if value.get("method").is_some() {
                "params"
            } else if value.get("error").is_some() {
                "error"
            } else {
                "result"
            };
            let outcome = match Message::from_value(value) {
                Err(e) => Err(format!("not JSON-RPC: {e}")),
                Ok(Message::Request(request)) => {
                    let params = request.params_value().unwrap_or(Value::Null);
                    pending.insert(request.id.to_string(), (request.method.clone(), params.clone()));
                    seen_methods.push(request.method.clone());
                    let host_sent = !request.method.starts_with("host/");
                    if host_sent != from_host {
                        Err(format!("{} is sent the other way", request.method))
                    } else {
                        check_params(&request.method, &params)
                    }
                }
                Ok(Message::Notification(note)) => {
                    seen_methods.push(note.method.clone());
                    if from_host || note.method != methods::ATTEMPT_EVENT {
                        Err(format!("{} is not a notification this side sends", note.method))
                    } else {
                        check_params(&note.method, &note.params_value().unwrap_or(Value::Null))
                    }
                }
                Ok(Message::Response(response)) => match pending.remove(&response.id.to_string()) {
                    None => Err(format!("answers id {}, which no earlier line of the block asked", response.id)),
                    Some((method, _)) if method.starts_with("host/") != from_host => {
                        Err(format!("answers {method} from the side that sent it"))
                    }
                    Some((method, params)) => match &response.outcome {
                        Ok(result) => check_result(&method, result),
                        Err(error) => check_error(&method, &params, error),
                    },
                },
            };
            match outcome {
                Err(why) => failures.push(format!("docs/host-protocol.md line {line_no}: {why}")),
                // Host lines are checked by value only: a JavaScript host orders keys as it likes.
                Ok(encoded) if !from_host && !json.ends_with(&format!("\"{member}\":{encoded}}}")) => failures.push(
                    format!("docs/host-protocol.md line {line_no}: the bridge writes this {member} as {encoded}"),
                ),
                Ok(_) => {}
            }
        }
    }
    for method in host::METHODS {
        if !seen_methods.iter().any(|m| m == method.name) {
            failures.push(format!("no example uses {}", method.name));
        }
    }
    assert!(failures.is_empty(), "doc examples out of step with the types:\n{}", failures.join("\n"));
}

#[test]
fn doc_error_table_lists_every_code() {
    let doc = std::fs::read_to_string(docs_dir().join("host-protocol.md")).expect("read docs/host-protocol.md");
    for error in errors::ALL {
        let row = format!("| {} | `{}` | {} |", error.code, error.name, error.sender);
        assert!(doc.contains(&row), "the errors table lacks a row starting `{row}`");
    }
    for method in host::METHODS {
        assert!(doc.contains(&format!("| `{}` |", method.name)), "the methods table lacks {}", method.name);
    }
}
