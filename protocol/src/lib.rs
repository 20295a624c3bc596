//! Wire types only. Every type here mirrors bytes on some pipe: the JSON-RPC envelope shared by all
//! peers, and (as the backends land) the clawbridge host protocol and each native peer's messages.
//!
//! Peer input is decoded tolerantly: unknown fields are ignored and unknown variants fall into an
//! explicit catch-all, because every peer release adds fields (see docs/peers/codex.md#version-drift).

#[macro_use]
mod macros;

pub mod claude;
pub mod codex;
pub mod host;
pub mod jsonrpc;
pub mod version;
