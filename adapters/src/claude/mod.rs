//! The Claude Code CLI backend: `claude -p --input-format stream-json --output-format stream-json`
//! over stdio (claude-stream-json.md). Groundwork only so far:
//!
//! - [`mapping`]: the CLI's stdout lines → normalized events for one turn (pure).
//!
//! Process handling, the control-protocol handler and the session land with the rest of the issue.

pub mod mapping;

pub use mapping::{SHELL_TOOL_NAME, TurnMapper, canonical_tool_name, normalized_usage, tool_call};

#[cfg(test)]
mod tests;
