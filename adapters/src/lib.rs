//! One module per native backend, each mapping its peer's messages to clawbridge's normalized
//! events. Adapters never reach into each other. The Codex, Claude and ACP adapters land with their
//! issues; until then this crate only names the backends the CLI knows.

/// The backends clawbridge can drive, as named on the command line.
pub const BACKENDS: &[&str] = &["demo", "codex", "claude"];
