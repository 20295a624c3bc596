//! The Claude Code CLI backend: `claude -p --input-format stream-json --output-format stream-json`
//! over stdio (claude-stream-json.md). Groundwork only so far:
//!
//! - [`mapping`]: the CLI's stdout lines → normalized events for one turn (pure);
//! - [`config`]: how the CLI is launched (flags, environment, credentials only via env, deadlines);
//! - [`handler`]: answers to the CLI's control requests (`can_use_tool` through the host's approver);
//! - [`session`]: the warm process, its version gate and handshake, the stdout reader, and turns.

pub mod config;
pub mod handler;
pub mod mapping;
pub mod session;

pub use config::{ClaudeConfig, Secret};
pub use mapping::{SHELL_TOOL_NAME, TurnMapper, canonical_tool_name, normalized_usage, tool_call};
pub use session::{ClaudeError, ClaudeSession, SessionHooks};

#[cfg(test)]
mod tests;
