//! The person's view of `clawbridge run`: streamed text, a line per tool, approvals asked at the
//! terminal, a summary line — or, with `--json`, the normalized events as JSONL and nothing else.

mod approval;
mod render;

pub use approval::approver;
pub use render::View;
