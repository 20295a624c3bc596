//! ACP's version negotiation: the client sends the newest major version it speaks; the agent answers
//! that one or the newest it speaks, and the client decides. Only an integer that fits a `u16` is a
//! version at all (pre-1.0 agents answered date strings).

use serde_json::Value;

/// The one major version this bridge speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// The agent answered a version this bridge does not speak.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the ACP agent answered protocol version {answered}; clawbridge speaks version {offered} only")]
pub struct VersionRefused {
    /// What the bridge offered.
    pub offered: u16,
    /// The agent's answer as JSON text (`2`, `"1.0"`, `null`).
    pub answered: String,
}

/// The version `answered` names if it is the one the bridge speaks.
pub fn negotiated_version(answered: &Value) -> Result<u16, VersionRefused> {
    let refused = || VersionRefused { offered: PROTOCOL_VERSION, answered: answered.to_string() };
    let version = answered.as_u64().and_then(|v| u16::try_from(v).ok()).ok_or_else(refused)?;
    if version == PROTOCOL_VERSION { Ok(version) } else { Err(refused()) }
}
