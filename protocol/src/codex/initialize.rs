//! The handshake: `initialize` request → result → `initialized` notification (docs/peers/codex.md#handshake).

use serde::{Deserialize, Serialize};

use super::Extra;

/// `initialize` params: who the client is and which optional protocol features it opts into.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Identifies the client; its `name` becomes the userAgent originator and the `originator` header
    /// sent to the model provider.
    pub client_info: ClientInfo,
    /// Opt-ins fixed for the life of the connection; absent means all defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<InitializeCapabilities>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `clientInfo`: the client's identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientInfo {
    /// Required; must be a valid HTTP header value (`-32600` otherwise). Pick one with no `/` and no
    /// spaces: it becomes the userAgent originator.
    pub name: String,
    /// Display name; nullable on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Required: the client's own version (ends the userAgent as `(<name>; <version>)`).
    pub version: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

impl ClientInfo {
    /// A client named `name` (also used as its title) at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        let name = name.into();
        Self { title: Some(name.clone()), name, version: version.into(), extra: Extra::new() }
    }
}

/// `capabilities`: connection-wide opt-ins.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeCapabilities {
    /// Enables experimental methods and fields (required for `thread/start.dynamicTools` and the
    /// `item/tool/call` request). Always sent, `false` included, as in the recorded traffic.
    #[serde(default)]
    pub experimental_api: bool,
    /// Exact notification method names the server should not send (e.g. `item/agentMessage/delta`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_notification_methods: Option<Vec<String>>,
    /// 0.169 addition: ask for request attestation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_attestation: Option<bool>,
    /// 0.169 addition: require a human to answer approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_human_approval: Option<bool>,
    /// 0.169 addition: client extensions, passed through as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<serde_json::Value>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `initialize` result. There is no server version field: `userAgent` is the only in-band version
/// source (see [`super::version`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    /// `<originator>/<codex version> (<os> <os version>; <arch>) <TERM token> (<client name>; <client
    /// version>)`. Optional here so that a missing one reaches the version gate (which fails closed)
    /// instead of failing the decode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// The server's `$CODEX_HOME` (rollouts, config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_home: Option<String>,
    /// e.g. `unix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_family: Option<String>,
    /// e.g. `linux`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_os: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}
