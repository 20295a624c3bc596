//! Wire types only. Every type here mirrors bytes on some pipe: the JSON-RPC envelope shared by all
//! peers, the clawbridge host protocol and each native peer's messages, and the backend-neutral data
//! the bridge produces and the host protocol carries — the normalized [`event`]s, the [`transcript`]
//! messages, the [`attempt`] result and hook payloads. Those are defined once, here; the bridge
//! re-exports them beside the code that produces them.
//!
//! Peer input is decoded tolerantly: unknown fields are ignored and unknown variants fall into an
//! explicit catch-all, because every peer release adds fields (see docs/peers/codex.md#version-drift).
//! A peer line decodes from its text straight into its typed message: a borrowed peek at the tag or
//! method picks the type (a Claude line is read in one strict pass that finds its tags on the way,
//! and only a line that does not fit it exactly is read a second time, tolerantly); a `Value` is
//! built only for what lands in a catch-all.

#[macro_use]
mod macros;

pub mod acp;
pub mod attempt;
pub mod claude;
pub mod codex;
mod decode;
pub mod event;
pub mod host;
pub mod jsonrpc;
pub mod mcp;
pub mod transcript;
pub mod version;
