use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_protocol::jsonrpc::{ErrorObject, RequestId, ShapeError};

use crate::exit::ExitState;
use crate::transport::SendError;

/// Why the peer is gone, with what is known about its process.
#[derive(Clone, Debug)]
pub struct PeerGone {
    /// What ended the stream.
    pub cause: GoneCause,
    /// The process's exit, if it had exited when this was written (`None` for in-memory peers or a
    /// process that closed its output and kept running).
    pub exit: Option<ExitState>,
    /// The last bytes the process wrote to stderr.
    pub stderr_tail: String,
}

/// What ended a peer's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GoneCause {
    /// Its output reached EOF.
    OutputClosed,
    /// Reading its output failed.
    ReadFailed(String),
    /// The process exited but its output stayed open past a grace period: another process (a
    /// grandchild that inherited the pipe) holds it, so EOF would never come.
    OutputHeldOpen,
    /// It stopped reading its input: a write made no progress within the write timeout.
    InputStalled {
        /// The write timeout that passed.
        after: Duration,
    },
}

impl fmt::Display for PeerGone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            GoneCause::OutputClosed => f.write_str("the peer closed its output")?,
            GoneCause::ReadFailed(e) => write!(f, "reading from the peer failed ({e})")?,
            GoneCause::OutputHeldOpen => f.write_str("the peer exited while another process kept its output open")?,
            GoneCause::InputStalled { after } => write!(f, "it stopped reading its stdin for {after:?}")?,
        }
        match self.exit {
            Some(exit) => write!(f, "; it ended with {exit}")?,
            None => f.write_str("; it had not exited")?,
        }
        let tail = self.stderr_tail.trim_end();
        if !tail.is_empty() {
            // The last lines are what explains a crash; keep the message readable.
            let lines: Vec<&str> = tail.lines().collect();
            let last = &lines[lines.len().saturating_sub(5)..];
            write!(f, "; stderr ends with: {}", last.join(" | "))?;
        }
        Ok(())
    }
}

/// Something on the stream that was not a usable message. Reading continues after each.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamProblem {
    /// A line over the configured cap was skipped.
    Oversize {
        /// Its length in bytes.
        len: usize,
    },
    /// A line that was not UTF-8 was skipped.
    InvalidUtf8 {
        /// Its length in bytes.
        len: usize,
    },
    /// A line that was not JSON (a banner, a debug print, a torn write).
    NotJson {
        /// The line's first characters.
        preview: String,
        /// The parser's complaint.
        error: String,
    },
    /// JSON that is not a JSON-RPC message.
    NotJsonRpc {
        /// The line's first characters.
        preview: String,
        /// What is wrong with its shape.
        error: ShapeError,
    },
    /// JSON that is no message of Claude's control protocol (not an object, or a control envelope
    /// without a readable `request_id`).
    NotAMessage {
        /// The line's first characters.
        preview: String,
        /// What is wrong with its shape.
        error: ShapeError,
    },
    /// A response to no request we are waiting for (unknown id, or one that already timed out).
    UnmatchedResponse {
        /// The id it carried.
        id: RequestId,
    },
    /// A notification over its method's cap ([`LineCaps`](super::LineCaps)) was skipped.
    MessageTooLarge {
        /// Its method.
        method: String,
        /// The line's length in bytes.
        len: usize,
        /// The method's cap in bytes.
        limit: usize,
    },
    /// The stream ended inside a line.
    TruncatedAtEof {
        /// How many bytes the unfinished line had.
        len: usize,
    },
}

impl fmt::Display for StreamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamProblem::Oversize { len } => {
                write!(f, "skipped a {len}-byte line over the size cap")
            }
            StreamProblem::InvalidUtf8 { len } => {
                write!(f, "skipped a {len}-byte line that is not UTF-8")
            }
            StreamProblem::NotJson { preview, error } => {
                write!(f, "skipped a line that is not JSON ({error}): {preview}")
            }
            StreamProblem::NotJsonRpc { preview, error } => {
                write!(f, "skipped JSON that is not JSON-RPC ({error}): {preview}")
            }
            StreamProblem::NotAMessage { preview, error } => {
                write!(f, "skipped JSON that is no control-protocol message ({error}): {preview}")
            }
            StreamProblem::UnmatchedResponse { id } => {
                write!(f, "ignored a response to unknown request id {id}")
            }
            StreamProblem::MessageTooLarge { method, len, limit } => {
                write!(f, "skipped a {len}-byte `{method}` notification over its {limit}-byte cap")
            }
            StreamProblem::TruncatedAtEof { len } => {
                write!(f, "the stream ended inside a {len}-byte line")
            }
        }
    }
}

/// Why a request to the peer did not produce a result.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RpcError {
    /// The peer answered with a JSON-RPC error.
    #[error("`{method}` failed: {error}")]
    Remote {
        /// The method called.
        method: String,
        /// The peer's error object.
        error: ErrorObject,
    },
    /// No answer arrived within the deadline; a late answer is ignored.
    #[error("`{method}` got no answer within {after:?}")]
    Timeout {
        /// The method called.
        method: String,
        /// The deadline that passed.
        after: Duration,
    },
    /// The peer went away before answering.
    #[error("`{method}` got no answer: {gone}")]
    PeerGone {
        /// The method called.
        method: String,
        /// What is known about the peer's end.
        gone: Arc<PeerGone>,
    },
    /// The request could not be written (closed locally, or not serialisable).
    #[error("`{method}` could not be sent: {reason}")]
    NotSent {
        /// The method called.
        method: String,
        /// Why.
        reason: String,
    },
    /// The answer's line was over the cap for answers to this method ([`LineCaps`](super::LineCaps));
    /// it was not decoded.
    #[error("`{method}` answered with {bytes} bytes, over its {limit}-byte cap")]
    AnswerTooLarge {
        /// The method called.
        method: String,
        /// The answer line's length in bytes.
        bytes: usize,
        /// The cap in bytes.
        limit: usize,
    },
    /// The answer named this request but was no JSON-RPC answer (an `error` that is no error
    /// object, neither `result` nor `error`, a wrong `jsonrpc`): the request is over, failed.
    #[error("`{method}` got a malformed answer: {error}")]
    MalformedAnswer {
        /// The method called.
        method: String,
        /// What is wrong with the answer's shape.
        error: ShapeError,
    },
    /// The answer arrived but does not have the expected shape.
    #[error("`{method}` answered with an unexpected result: {reason}")]
    BadResult {
        /// The method called.
        method: String,
        /// The decoder's complaint.
        reason: String,
    },
}

impl RpcError {
    pub(crate) fn not_sent(method: &str, error: SendError) -> Self {
        RpcError::NotSent { method: method.to_string(), reason: error.to_string() }
    }
}
