//! The Codex app-server backend: `codex app-server` over stdio (JSON-RPC, Codex dialect).
//!
//! - [`mapping`]: Codex notifications → normalized events (pure).
//! - [`config`]: how to launch it and the policies of a session.
//! - [`handler`]: Codex's requests (approvals, dynamic tools, user input) → the attempt's hooks.
//! - [`session`]: handshake with the version gate, threads, and one turn at a time.
//! - [`shared`]: warm app-servers shared by many sessions, with per-thread routing.
//! - [`retry`]: retrying requests the server refuses as overloaded.
//! - [`auth`]: the host's prepared route auth as Codex model-provider overrides.
//! - [`provider_env`]: the one credential variable a session passes (the selected provider's `env_key`).
//! - `native_ops`: the model catalog (`model/list`) and `thread/compact/start`, outside attempts.
//! - [`tool_policy`]: the host's native tool policy as `-c` overrides and a sandbox.

pub mod auth;
pub mod backend;
pub mod config;
pub mod diagnose;
pub mod handler;
pub mod input;
pub mod mapping;
mod native_ops;
pub mod provider_env;
pub mod retry;
pub mod session;
pub mod shared;
pub mod tool_policy;

pub use backend::{CODEX_BIN_ENV, CodexBackend};
pub use config::{CodexConfig, CodexRemote};
pub use mapping::{TurnMapper, canonical_tool_name, tool_call};
pub use session::{CodexError, CodexSession, SessionHooks, Steering, ThreadOptions, ThreadReady};

#[cfg(test)]
mod tests;
