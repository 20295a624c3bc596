//! Host-protocol error codes, used in JSON-RPC error responses in both directions.
//!
//! They sit in the range JSON-RPC reserves for implementation-defined server errors (-32000 to
//! -32099), grouped by tens: connection (-3201x), harness (-3202x), attempt (-3203x), host side
//! (-3204x). The standard codes (`-32700`, `-32600`, `-32601`, `-32602`, `-32603`) keep their
//! JSON-RPC meaning; see [`crate::jsonrpc::codes`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::initialize::VersionRange;
use crate::jsonrpc::ErrorObject;

/// `initialize` asked for a protocol version this bridge does not speak. `data` is
/// [`ProtocolVersionErrorData`]; the message names both versions and the supported range.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32010;
/// A request other than `initialize` arrived before a successful `initialize`.
pub const NOT_INITIALIZED: i64 = -32011;
/// A second `initialize` on the same connection; the first one's version stays in force.
pub const ALREADY_INITIALIZED: i64 = -32012;
/// `shutdown` was received; no new attempts are accepted.
pub const SHUTTING_DOWN: i64 = -32013;
/// A request's line is over its method's cap ([`super::limits`]); nothing of it was decoded. `data`
/// is `{method, bytes, limit}`.
pub const REQUEST_TOO_LARGE: i64 = -32014;
/// No harness with that id (see `harness/list`).
pub const UNKNOWN_HARNESS: i64 = -32020;
/// The harness exists but its backend cannot run now (binary missing, version gate failed); the
/// message says why. Raised before any model or tool work, so the host may fall back.
pub const HARNESS_UNAVAILABLE: i64 = -32021;
/// The attempt id names no running attempt. Sent by the host when it answers a `host/*` request for
/// an attempt it no longer tracks (its `runAttempt` already settled); the bridge then uses its safe
/// fallback for that request.
pub const UNKNOWN_ATTEMPT: i64 = -32030;
/// `attempt/run` reused the id of an attempt that is still running.
pub const ATTEMPT_ALREADY_RUNNING: i64 = -32031;
/// Another attempt is running on the same session (a native thread runs one turn at a time). A
/// `session/reset`, `session/delete` or `session/contextReset` that arrives while one runs is not
/// refused: it takes effect when that attempt ends, and is answered then.
pub const SESSION_BUSY: i64 = -32032;
/// The bridge is at `capabilities.maxConcurrentAttempts`; retry when an attempt finishes.
pub const BRIDGE_BUSY: i64 = -32033;
/// The attempt failed before any model or tool work (the native process would not start or
/// handshake). `data` is [`PreflightErrorData`]; the plugin throws `AgentHarnessPreflightError`.
pub const PREFLIGHT_FAILED: i64 = -32034;
/// Admitting the attempt would take the inputs of the running attempts over the bridge's input
/// budget ([`super::limits::ATTEMPT_INPUT_BUDGET_BYTES`]); retry when an attempt ends. `data` is
/// `{bytes, inUse, limit}`.
pub const INPUT_BUDGET_EXCEEDED: i64 = -32035;
/// The host cannot serve this bridge → host request (no approval surface, no user-input surface,
/// no such host tool); the bridge uses its safe fallback.
pub const CAPABILITY_UNAVAILABLE: i64 = -32040;

/// One row of the error table, for docs and the schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    /// The numeric code.
    pub code: i64,
    /// The constant's name in camelCase, e.g. `unsupportedProtocolVersion`.
    pub name: &'static str,
    /// Who sends it.
    pub sender: &'static str,
    /// When.
    pub meaning: &'static str,
}

/// Every host-protocol error code, in code order.
pub const ALL: &[ErrorCode] = &[
    ErrorCode {
        code: UNSUPPORTED_PROTOCOL_VERSION,
        name: "unsupportedProtocolVersion",
        sender: "bridge",
        meaning: "initialize asked for a protocol version outside the supported range",
    },
    ErrorCode {
        code: NOT_INITIALIZED,
        name: "notInitialized",
        sender: "bridge",
        meaning: "a request arrived before a successful initialize",
    },
    ErrorCode {
        code: ALREADY_INITIALIZED,
        name: "alreadyInitialized",
        sender: "bridge",
        meaning: "initialize was sent twice on one connection",
    },
    ErrorCode {
        code: SHUTTING_DOWN,
        name: "shuttingDown",
        sender: "bridge",
        meaning: "shutdown was received; no new attempts",
    },
    ErrorCode {
        code: REQUEST_TOO_LARGE,
        name: "requestTooLarge",
        sender: "bridge",
        meaning: "a request's line is over its method's size cap",
    },
    ErrorCode { code: UNKNOWN_HARNESS, name: "unknownHarness", sender: "bridge", meaning: "no harness with that id" },
    ErrorCode {
        code: HARNESS_UNAVAILABLE,
        name: "harnessUnavailable",
        sender: "bridge",
        meaning: "the harness's backend cannot run now (missing binary, version gate)",
    },
    ErrorCode {
        code: UNKNOWN_ATTEMPT,
        name: "unknownAttempt",
        sender: "host",
        meaning: "a host/* request named an attempt the host no longer tracks",
    },
    ErrorCode {
        code: ATTEMPT_ALREADY_RUNNING,
        name: "attemptAlreadyRunning",
        sender: "bridge",
        meaning: "attempt/run reused the id of a running attempt",
    },
    ErrorCode {
        code: SESSION_BUSY,
        name: "sessionBusy",
        sender: "bridge",
        meaning: "another attempt is running on the same session",
    },
    ErrorCode {
        code: BRIDGE_BUSY,
        name: "bridgeBusy",
        sender: "bridge",
        meaning: "maxConcurrentAttempts attempts are already running",
    },
    ErrorCode {
        code: PREFLIGHT_FAILED,
        name: "preflightFailed",
        sender: "bridge",
        meaning: "the attempt failed before any model or tool work",
    },
    ErrorCode {
        code: INPUT_BUDGET_EXCEEDED,
        name: "inputBudgetExceeded",
        sender: "bridge",
        meaning: "the running attempts' inputs would exceed the bridge's input budget",
    },
    ErrorCode {
        code: CAPABILITY_UNAVAILABLE,
        name: "capabilityUnavailable",
        sender: "host",
        meaning: "the host cannot serve this host/* request",
    },
];

/// `data` of an `unsupportedProtocolVersion` (-32010) error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProtocolVersionErrorData {
    /// The version the host asked for.
    pub requested_version: u32,
    /// The versions this bridge speaks.
    pub supported_versions: VersionRange,
    /// The bridge's own release, so the user knows what to upgrade.
    pub bridge_version: String,
}

/// `data` of a `preflightFailed` (-32034) error.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightErrorData {
    /// A message fit to show the user (`AgentHarnessPreflightError`'s `userMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_message: Option<String>,
    /// Where the attempt failed: `"open"` when the backend's process could not be started or
    /// would not open a session (it exited during its handshake, its version was refused), so the
    /// backend itself is unusable; absent for a refusal of this attempt's own inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PreflightPhase>,
    /// The backend that failed to open (`codex`), with `phase: "open"`: what `clawbridge doctor
    /// --backend` takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

/// Where a preflight failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum PreflightPhase {
    /// Opening the backend's session: its process start, handshake or session start.
    Open,
}

/// The [`UNSUPPORTED_PROTOCOL_VERSION`] error for a host that asked for `requested`.
pub fn unsupported_protocol_version(requested: u32, bridge_version: &str) -> ErrorObject {
    let range = VersionRange::SUPPORTED;
    let speaks = if range.min == range.max {
        format!("version {}", range.min)
    } else {
        format!("versions {} to {}", range.min, range.max)
    };
    let data = ProtocolVersionErrorData {
        requested_version: requested,
        supported_versions: range,
        bridge_version: bridge_version.to_string(),
    };
    ErrorObject::with_data(
        UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "host protocol version {requested} is not supported: clawbridge {bridge_version} speaks {speaks}; \
             upgrade whichever side is older"
        ),
        &data,
    )
}
