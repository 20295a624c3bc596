//! One module per native backend, each mapping its peer's messages to clawbridge's normalized
//! events. Adapters never reach into each other. [`codex`] is the Codex app-server backend;
//! [`claude`] is the Claude Code CLI backend (stream-json, control protocol, warm process).

pub mod claude;
pub mod codex;

#[cfg(test)]
mod test_support;

/// The backends clawbridge can drive, as named on the command line.
pub const BACKENDS: &[&str] = &["demo", "codex", "claude"];
