//! The machinery every clawbridge backend stands on: a bounded line transport, a JSON-RPC peer for
//! both dialects, and a supervisor that owns a native agent's process group from spawn to reap.
//!
//! Nothing in this crate knows Codex or Claude; adapters build on it.

pub mod attempt;
pub mod backend;
pub mod binding;
pub mod connection;
pub mod diagnose;
pub mod events;
pub mod exit;
pub mod input;
pub mod mcp;
pub mod native_ops;
pub mod native_tools;
pub mod pool;
pub mod probe;
pub mod remote;
pub mod replay;
pub mod rpc;
pub mod sink;
pub mod state_files;
pub mod supervisor;
pub mod transcript;
pub mod transport;
