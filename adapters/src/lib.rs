//! One module per native backend, each mapping its peer's messages to clawbridge's normalized
//! events. Adapters never reach into each other. [`codex`] is the Codex app-server backend; the
//! Claude and ACP adapters land with their issues.

pub mod codex;

/// The backends clawbridge can drive, as named on the command line.
pub const BACKENDS: &[&str] = &["demo", "codex", "claude"];
