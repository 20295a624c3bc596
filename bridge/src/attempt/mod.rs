//! One attempt (one prompted turn) as the host sees it: the decisions and tools it lends the
//! backend ([`hooks`]), the tool terminals reported back to it exactly once, and the result it gets
//! at the end ([`AttemptRecorder`] → [`AttemptResult`]). Backend-neutral: adapters feed it
//! normalized events.

pub mod hooks;
mod recorder;

pub use recorder::{AttemptRecorder, AttemptResult, Classification, ItemLifecycle, ReplayMetadata, ToolMeta};
