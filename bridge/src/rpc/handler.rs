use std::fmt;
use std::time::Duration;

use clawbridge_protocol::jsonrpc::{ErrorObject, Request, codes};
use futures::future::BoxFuture;
use serde_json::Value;

use crate::exit::ExitState;

/// Why a handler produced no answer of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerFailure {
    /// It returned [`HandlerError::Failed`].
    Failed(String),
    /// It did not finish within the configured time.
    TimedOut(Duration),
    /// It panicked.
    Panicked,
}

impl fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerFailure::Failed(e) => write!(f, "handler failed: {e}"),
            HandlerFailure::TimedOut(after) => write!(f, "handler gave no answer within {after:?}"),
            HandlerFailure::Panicked => f.write_str("handler panicked"),
        }
    }
}

/// What a handler returns instead of a result.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// Answer with this JSON-RPC error: a deliberate answer (e.g. "method not found").
    #[error("{0}")]
    Reply(ErrorObject),
    /// The handler could not decide; the peer gets [`RequestHandler::fallback`].
    #[error("{0}")]
    Failed(String),
}

/// Answers requests that the peer sends us (approvals, tool calls, …).
pub trait RequestHandler: Send + Sync + 'static {
    /// Produces the answer. The call itself runs on the peer's reader, one request after the other
    /// in arrival order: do only quick bookkeeping there (what must take effect in order), and leave
    /// the work to the returned future, which runs in its own task under the peer's handler timeout.
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>>;

    /// The answer given when [`handle`](Self::handle) fails, times out or panics. It must be the
    /// safe choice for the method (decline an approval, fail a tool call); the default is a
    /// JSON-RPC internal error.
    fn fallback(&self, method: &str, _params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        Err(ErrorObject::new(codes::INTERNAL_ERROR, format!("`{method}` was not handled: {failure}")))
    }
}

/// Answers every request with "method not found": for peers that should not be asking anything.
#[derive(Clone, Copy, Debug, Default)]
pub struct RejectAll;

impl RequestHandler for RejectAll {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        let error = ErrorObject::new(codes::METHOD_NOT_FOUND, format!("unsupported method `{}`", request.method));
        Box::pin(async move { Err(HandlerError::Reply(error)) })
    }
}

/// Tells the peer what became of the process behind a stream, once the stream has ended.
pub trait ExitReporter: Send + Sync + 'static {
    /// The process's exit (if known) and its stderr tail.
    fn report(&self) -> BoxFuture<'static, (Option<ExitState>, String)>;

    /// Resolves when the process behind the stream has exited; never, for a stream with no process.
    /// A process that exits while another one (a grandchild) still holds its output open never
    /// produces EOF: the reader uses this to end the stream anyway.
    fn exited(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// For streams with no process behind them (in-memory pipes in tests, sockets).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProcess;

impl ExitReporter for NoProcess {
    fn report(&self) -> BoxFuture<'static, (Option<ExitState>, String)> {
        Box::pin(async { (None, String::new()) })
    }
}
