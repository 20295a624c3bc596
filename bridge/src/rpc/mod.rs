//! A request/response peer over a line transport, for every
//! [`Dialect`](clawbridge_protocol::jsonrpc::Dialect): strict JSON-RPC 2.0, Codex's JSON-RPC, and
//! Claude Code's control protocol.
//!
//! One reader task classifies each line and delivers notifications (for Claude: the conversation
//! lines) in arrival order through a channel bounded in lines and bytes; responses complete pending requests; requests
//! from the peer each run in their own task and are always answered, unless the peer withdraws one
//! (Claude's `control_cancel_request`), which aborts its handler and sends nothing. When the peer's
//! output ends, every pending request fails with the peer's exit status and stderr tail.

mod caps;
mod error;
mod handler;
mod inbox;
mod peer;

pub use caps::LineCaps;

pub use error::{GoneCause, PeerGone, RpcError, StreamProblem};
pub use handler::{ExitReporter, HandlerError, HandlerFailure, NoProcess, RejectAll, RequestHandler};
pub use inbox::{
    DEFAULT_EVENT_BYTES, MAX_BATCH_EVENTS, MIN_EVENT_BYTES, PeerEvents, RoutedSender, SessionGone, routed,
};
pub use peer::{PeerConfig, PeerEvent, RpcPeer};
