//! One attempt (one prompted turn) as the host sees it: the decisions and tools it lends the
//! backend ([`hooks`]), the one turn loop every backend runs ([`driver`]) with the request side's
//! facts it reads ([`activity`]), the tool terminals reported back to the host exactly once, and
//! the result it gets at the end ([`AttemptRecorder`] → [`AttemptResult`]). Backend-neutral:
//! adapters feed it normalized events.

pub mod activity;
pub mod driver;
pub mod hooks;
mod recorder;

pub use activity::{TurnActivity, decide_approval};
pub use driver::{DrivenTurn, NativeTurn, SessionHooks, Step, TurnDriver, TurnLimits, TurnSink, relay};
pub use recorder::{AttemptRecorder, AttemptResult, Classification, ItemLifecycle, ReplayMetadata, ToolMeta};
