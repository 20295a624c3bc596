//! A JSON-RPC peer over a line transport, for both dialects (strict 2.0 and Codex's).
//!
//! One reader task classifies each line and delivers notifications in arrival order through a
//! bounded channel; responses complete pending requests; requests from the peer each run in their
//! own task and are always answered. When the peer's output ends, every pending request fails with
//! the peer's exit status and stderr tail.

mod error;
mod handler;
mod peer;

pub use error::{GoneCause, PeerGone, RpcError, StreamProblem};
pub use handler::{ExitReporter, HandlerError, HandlerFailure, NoProcess, RejectAll, RequestHandler};
pub use peer::{PeerConfig, PeerEvent, RpcPeer};
