//! The person's view of `clawbridge run`: streamed text, a line per tool, approvals asked at the
//! terminal, a summary line — or, with `--json`, the normalized events as JSONL and nothing else.

mod approval;
mod progress;
mod render;
mod screen;
mod style;

pub use approval::{approver, test_approval_timeout};
pub use render::View;
pub use screen::{LogWriter, Screen, log_colour};
