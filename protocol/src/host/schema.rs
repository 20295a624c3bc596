//! The protocol as one JSON Schema document: every method with its direction, kind and the schemas of
//! its params and result, the error codes, and the shared definitions under `$defs`.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use super::errors::{self, PreflightErrorData, ProtocolVersionErrorData};
use super::*;

/// Who sends a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sender {
    /// The OpenClaw plugin.
    Host,
    /// `clawbridge serve`.
    Bridge,
}

/// Whether a method expects a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    /// Answered with a result or an error.
    Request,
    /// Never answered.
    Notification,
}

/// One method of the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MethodInfo {
    /// The wire name (one of [`methods`]).
    pub name: &'static str,
    /// Who sends it.
    pub sender: Sender,
    /// Request or notification.
    pub kind: MethodKind,
    /// One line on what it does.
    pub summary: &'static str,
}

const fn request(name: &'static str, sender: Sender, summary: &'static str) -> MethodInfo {
    MethodInfo { name, sender, kind: MethodKind::Request, summary }
}

/// Every method, in the order the docs present them.
pub const METHODS: &[MethodInfo] = &[
    request(methods::INITIALIZE, Sender::Host, "Handshake and version negotiation; must come first."),
    request(methods::HARNESS_LIST, Sender::Host, "The harnesses this bridge runs."),
    request(methods::HARNESS_SUPPORTS, Sender::Host, "Whether a harness fits a provider/model route."),
    request(methods::ATTEMPT_RUN, Sender::Host, "Run one attempt; the result is the attempt result."),
    request(methods::ATTEMPT_CANCEL, Sender::Host, "Interrupt a running attempt (idempotent)."),
    request(methods::ATTEMPT_STEER, Sender::Host, "Add user input to a running attempt's native turn."),
    request(methods::SESSION_RESET, Sender::Host, "Drop or keep a session's native thread binding, by reason."),
    request(methods::SESSION_DELETE, Sender::Host, "Forget a deleted session's native thread binding."),
    request(methods::SESSION_CONTEXT_RESET, Sender::Host, "Invalidate a session's native thread after a history cut."),
    request(methods::CATALOG_MODELS, Sender::Host, "The native runtime's model catalog."),
    request(methods::SESSION_COMPACT, Sender::Host, "Compact a session's bound native thread."),
    request(methods::CATALOG_MCP_TOOLS, Sender::Host, "The MCP tools of a session's native thread."),
    request(methods::SHUTDOWN, Sender::Host, "Cancel all attempts and stop every native process."),
    MethodInfo {
        name: methods::ATTEMPT_EVENT,
        sender: Sender::Bridge,
        kind: MethodKind::Notification,
        summary: "One normalized event of a running attempt.",
    },
    request(methods::HOST_TOOL_EXECUTE, Sender::Bridge, "Run a host tool the attempt declared."),
    request(methods::HOST_APPROVAL_DECIDE, Sender::Bridge, "Decide an approval; fail closed."),
    request(methods::HOST_TOOL_TERMINAL_OBSERVE, Sender::Bridge, "Report a tool terminal; returns lastToolError."),
    request(methods::HOST_TRANSCRIPT_APPEND, Sender::Bridge, "Append transcript messages; acknowledged."),
    request(methods::HOST_USER_INPUT_REQUEST, Sender::Bridge, "Ask the user questions."),
];

/// The `$ref` schemas of one method's params and result (`None` for a notification's result).
fn method_schemas(generator: &mut SchemaGenerator, name: &str) -> (Value, Option<Value>) {
    fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Value {
        generator.subschema_for::<T>().to_value()
    }
    match name {
        methods::INITIALIZE => (of::<InitializeParams>(generator), Some(of::<InitializeResponse>(generator))),
        methods::HARNESS_LIST => (of::<HarnessListParams>(generator), Some(of::<HarnessListResponse>(generator))),
        methods::HARNESS_SUPPORTS => (of::<SupportsParams>(generator), Some(of::<SupportsResponse>(generator))),
        methods::ATTEMPT_RUN => (of::<AttemptRunParams>(generator), Some(of::<AttemptRunResponse>(generator))),
        methods::ATTEMPT_CANCEL => (of::<AttemptCancelParams>(generator), Some(of::<AttemptCancelResponse>(generator))),
        methods::ATTEMPT_STEER => (of::<AttemptSteerParams>(generator), Some(of::<AttemptSteerResponse>(generator))),
        methods::SESSION_RESET => (of::<SessionResetParams>(generator), Some(of::<SessionResetResponse>(generator))),
        methods::SESSION_DELETE => (of::<SessionDeleteParams>(generator), Some(of::<SessionDeleteResponse>(generator))),
        methods::SESSION_CONTEXT_RESET => {
            (of::<SessionContextResetParams>(generator), Some(of::<SessionContextResetResponse>(generator)))
        }
        methods::CATALOG_MODELS => (of::<CatalogModelsParams>(generator), Some(of::<CatalogModelsResponse>(generator))),
        methods::CATALOG_MCP_TOOLS => {
            (of::<CatalogMcpToolsParams>(generator), Some(of::<CatalogMcpToolsResponse>(generator)))
        }
        methods::SESSION_COMPACT => {
            (of::<SessionCompactParams>(generator), Some(of::<SessionCompactResponse>(generator)))
        }
        methods::SHUTDOWN => (of::<ShutdownParams>(generator), Some(of::<ShutdownResponse>(generator))),
        methods::ATTEMPT_EVENT => (of::<AttemptEventParams>(generator), None),
        methods::HOST_TOOL_EXECUTE => {
            (of::<HostToolExecuteParams>(generator), Some(of::<HostToolExecuteResponse>(generator)))
        }
        methods::HOST_APPROVAL_DECIDE => {
            (of::<ApprovalDecideParams>(generator), Some(of::<ApprovalDecideResponse>(generator)))
        }
        methods::HOST_TOOL_TERMINAL_OBSERVE => {
            (of::<ToolTerminalObserveParams>(generator), Some(of::<ToolTerminalObserveResponse>(generator)))
        }
        methods::HOST_TRANSCRIPT_APPEND => {
            (of::<TranscriptAppendParams>(generator), Some(of::<TranscriptAppendResponse>(generator)))
        }
        methods::HOST_USER_INPUT_REQUEST => {
            (of::<UserInputRequestParams>(generator), Some(of::<UserInputResponse>(generator)))
        }
        // METHODS and this match are edited together; the schema test catches a missing arm.
        other => unreachable!("method {other} has no schema"),
    }
}

/// The whole protocol as one JSON Schema (draft 2020-12) document:
///
/// ```text
/// { "$schema", "title", "description", "protocolVersion", "supportedProtocolVersions",
///   "methods": { "<name>": { "sender", "kind", "summary", "params", "result"? } },
///   "errors": { "<code>": { "name", "sender", "meaning", "data"? } },
///   "$defs": { "<Type>": <schema> } }
/// ```
///
/// `params` / `result` are `$ref`s into `$defs`. Keys are sorted, so the output is stable and the
/// checked-in copy can be compared byte for byte.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    let mut method_map = Map::new();
    for method in METHODS {
        let (params, result) = method_schemas(&mut generator, method.name);
        let mut entry = Map::new();
        entry.insert("sender".into(), json!(if method.sender == Sender::Host { "host" } else { "bridge" }));
        let kind = if method.kind == MethodKind::Request { "request" } else { "notification" };
        entry.insert("kind".into(), json!(kind));
        entry.insert("summary".into(), json!(method.summary));
        entry.insert("params".into(), params);
        if let Some(result) = result {
            entry.insert("result".into(), result);
        }
        method_map.insert(method.name.into(), Value::Object(entry));
    }
    let mut error_map = Map::new();
    for error in errors::ALL {
        let mut entry = Map::new();
        entry.insert("name".into(), json!(error.name));
        entry.insert("sender".into(), json!(error.sender));
        entry.insert("meaning".into(), json!(error.meaning));
        let data = match error.code {
            errors::UNSUPPORTED_PROTOCOL_VERSION => Some(generator.subschema_for::<ProtocolVersionErrorData>()),
            errors::PREFLIGHT_FAILED => Some(generator.subschema_for::<PreflightErrorData>()),
            _ => None,
        };
        if let Some(data) = data {
            entry.insert("data".into(), data.to_value());
        }
        error_map.insert(error.code.to_string(), Value::Object(entry));
    }
    let definitions = generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "clawbridge host protocol",
        "description": "JSON-RPC 2.0, one message per line, between the OpenClaw plugin (host) and \
                        `clawbridge serve` (bridge). See docs/host-protocol.md.",
        "protocolVersion": PROTOCOL_VERSION,
        "supportedProtocolVersions": { "min": MIN_PROTOCOL_VERSION, "max": MAX_PROTOCOL_VERSION },
        "methods": method_map,
        "errors": error_map,
        "$defs": definitions,
    })
}
