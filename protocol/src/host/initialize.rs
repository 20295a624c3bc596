//! `initialize`: the handshake and version negotiation. It must be the host's first request; the
//! bridge answers every other request before it with [`NOT_INITIALIZED`](super::errors::NOT_INITIALIZED).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::errors;
use super::harness::HarnessInfo;
use super::{MAX_PROTOCOL_VERSION, MIN_PROTOCOL_VERSION};
use crate::jsonrpc::ErrorObject;

/// `initialize` params: who the host is and what it can serve.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The host protocol version the host speaks. Required: without it the bridge cannot know what
    /// the host means, so a missing version is invalid params rather than a guess.
    pub protocol_version: u32,
    /// The host's name and version, for logs and error reports.
    #[serde(default)]
    pub host: PeerInfo,
    /// What the host can serve during attempts; anything left out is `false`.
    #[serde(default)]
    pub capabilities: HostCapabilities,
}

/// A peer's name and version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PeerInfo {
    /// E.g. `openclaw` for the host, `clawbridge` for the bridge.
    #[serde(default)]
    pub name: String,
    /// The peer's release, e.g. `2026.9.6`.
    #[serde(default)]
    pub version: String,
}

/// Which bridge → host requests the host answers. The bridge never sends a request whose capability is
/// `false`; it uses the safe local answer instead (see each field).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostCapabilities {
    /// `host/tool/execute`. Without it attempts declare no host tools.
    #[serde(default)]
    pub host_tools: bool,
    /// `host/approval/decide`. Without it every approval is denied (fail closed).
    #[serde(default)]
    pub approvals: bool,
    /// `host/toolTerminal/observe`. Without it no `lastToolError` reaches the result.
    #[serde(default)]
    pub tool_terminals: bool,
    /// `host/transcript/append`. Without it the bridge does not mirror the transcript and the result
    /// says `transcriptOwned: false`.
    #[serde(default)]
    pub transcript_append: bool,
    /// `host/userInput/request`. Without it the agent's questions get no answer.
    #[serde(default)]
    pub user_input: bool,
}

/// `initialize` result: what the bridge speaks and offers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// The version this connection now speaks: always the host's requested version (the bridge never
    /// downgrades silently; an unsupported version is an error, not a different answer).
    pub protocol_version: u32,
    /// Every version this bridge could speak, so a host that speaks several can choose.
    pub supported_protocol_versions: VersionRange,
    /// The bridge's name and version.
    pub bridge: PeerInfo,
    /// The harnesses this bridge runs (the same list `harness/list` returns).
    #[serde(default)]
    pub harnesses: Vec<HarnessInfo>,
    /// The native backends behind them and whether each is usable right now.
    #[serde(default)]
    pub backends: Vec<BackendInfo>,
    /// What the bridge supports beyond the required methods.
    #[serde(default)]
    pub capabilities: BridgeCapabilities,
    /// The file this bridge logs to (size-capped and rotated), when it opened one: where to look
    /// when an attempt fails or the bridge dies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_file: Option<String>,
}

/// An inclusive range of protocol versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionRange {
    /// The oldest version.
    pub min: u32,
    /// The newest version.
    pub max: u32,
}

impl VersionRange {
    /// The versions this build speaks.
    pub const SUPPORTED: VersionRange = VersionRange { min: MIN_PROTOCOL_VERSION, max: MAX_PROTOCOL_VERSION };

    /// Whether `version` is in the range.
    pub fn contains(&self, version: u32) -> bool {
        (self.min..=self.max).contains(&version)
    }
}

/// A backend the bridge runs: Codex app-server, Claude Code, an ACP agent, or the demo replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackendInfo {
    /// The backend id: `codex`, `claude`, `acp` or `demo`.
    pub id: String,
    /// Whether the bridge found a usable binary that passed its version gate.
    pub available: bool,
    /// The native version found, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why it is unavailable (binary missing, version outside the gate), for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Optional bridge features.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BridgeCapabilities {
    /// The most attempts that may run at once on this connection; absent means no fixed limit. Past
    /// it, `attempt/run` fails with `bridgeBusy` (-32033).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_attempts: Option<u32>,
    /// Events carry `seq` and the bridge streams `assistantDelta` / `reasoningDelta` / `toolOutputDelta`.
    #[serde(default)]
    pub streaming_deltas: bool,
}

/// The version negotiation rule: the host's version is accepted only if this bridge speaks it.
///
/// Returns the version the connection speaks, or the `UNSUPPORTED_PROTOCOL_VERSION` error naming the
/// host's version, this bridge's version and the supported range. There is deliberately no fallback
/// to an older version: a host and bridge that disagree on message shapes would corrupt attempts.
pub fn negotiate(requested: u32, bridge_version: &str) -> Result<u32, ErrorObject> {
    if VersionRange::SUPPORTED.contains(requested) {
        Ok(requested)
    } else {
        Err(errors::unsupported_protocol_version(requested, bridge_version))
    }
}
