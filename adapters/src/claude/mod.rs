//! The Claude Code CLI backend: `claude -p --input-format stream-json --output-format stream-json`
//! over stdio (docs/peers/claude.md):
//!
//! - [`mapping`]: the CLI's stdout lines → normalized events for one turn (pure);
//! - [`config`]: how the CLI is launched (flags, environment, credentials only via env, deadlines);
//! - [`handler`]: answers to the CLI's control requests (`can_use_tool` through the host's approver);
//! - [`session`]: the warm process, its version gate and handshake, the stdout reader, and turns;
//! - [`questions`]: `AskUserQuestion` as a question for the user;
//! - [`pool`]: warm sessions parked between turns (a cap with LRU eviction, an idle timeout), with
//!   hooks swapped per turn;
//! - [`resume`]: the CLI's session files (checked before every `--resume`) and the fingerprints of a
//!   Claude session's binding;
//! - [`auth`]: the host's prepared route auth as the CLI's endpoint and credential variables.
//! - [`tool_policy`]: the host's native tool policy as `--disallowedTools`.
//! - [`native_ops`]: the model set and the MCP servers, from a CLI of their own.
//! - [`mcp`]: the user's MCP servers as a private `--mcp-config` file and permission rules.

pub mod auth;
pub mod backend;
pub mod config;
pub mod diagnose;
pub mod handler;
pub mod input;
pub mod mapping;
pub mod mcp;
pub mod native_ops;
pub mod pool;
pub mod questions;
pub mod resume;
pub mod session;
pub mod steering;
pub mod tool_policy;

pub use backend::{CLAUDE_BIN_ENV, ClaudeBackend};
pub use config::{ClaudeConfig, Secret};
pub use mapping::{SHELL_TOOL_NAME, TurnMapper, canonical_tool_name, normalized_usage, tool_call};
pub use session::{ClaudeError, ClaudeSession, SessionHooks};

#[cfg(test)]
mod tests;
