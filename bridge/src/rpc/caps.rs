//! Byte caps on a peer's lines by method, checked on a line's length after its envelope was read
//! (one pass that builds nothing) and before its params or answer are decoded.

use clawbridge_protocol::jsonrpc::codes;

use crate::transport::DEFAULT_MAX_LINE_BYTES;

/// The largest line accepted for each method: for the peer's requests and notifications by their
/// own method (a notification always by `default_incoming`: a notification named like a large
/// request gets none of that request's room), for the answers to our requests by the method we
/// called. A request over its cap is
/// answered with [`too_large_code`](Self::too_large_code) naming the method, the line's size and the
/// cap; an answer over its cap fails our request ([`RpcError::AnswerTooLarge`](super::RpcError)); a
/// notification over its cap is reported ([`StreamProblem::MessageTooLarge`](super::StreamProblem))
/// and skipped. The transport's line cap still bounds every line before any of this.
#[derive(Clone, Debug)]
pub struct LineCaps {
    /// The cap of a request whose method is not in `incoming`, and of every notification.
    pub default_incoming: usize,
    /// Methods whose requests (never notifications) may be larger or must be smaller than the default.
    pub incoming: Vec<(&'static str, usize)>,
    /// The cap of an answer to one of our requests whose method is not in `answers`.
    pub default_answer: usize,
    /// Our methods whose answers may be larger or must be smaller than the default.
    pub answers: Vec<(&'static str, usize)>,
    /// The error code a request over its cap is answered with (the protocol's own, when it has one).
    pub too_large_code: i64,
}

impl LineCaps {
    /// Every method capped at `bytes` (the transport's line cap: no cap of its own).
    pub fn uniform(bytes: usize) -> Self {
        Self {
            default_incoming: bytes,
            incoming: Vec::new(),
            default_answer: bytes,
            answers: Vec::new(),
            too_large_code: codes::INVALID_REQUEST,
        }
    }

    /// The cap of a request named `method`.
    pub fn incoming(&self, method: &str) -> usize {
        lookup(&self.incoming, method).unwrap_or(self.default_incoming)
    }

    /// The cap of any notification: the larger caps in `incoming` are for requests, whose size
    /// their handlers account for; a notification is queued for the consumer unaccounted.
    pub fn notification(&self) -> usize {
        self.default_incoming
    }

    /// The cap of the answer to our request `method`.
    pub fn answer(&self, method: &str) -> usize {
        lookup(&self.answers, method).unwrap_or(self.default_answer)
    }
}

impl Default for LineCaps {
    fn default() -> Self {
        Self::uniform(DEFAULT_MAX_LINE_BYTES)
    }
}

fn lookup(caps: &[(&'static str, usize)], method: &str) -> Option<usize> {
    caps.iter().find(|(name, _)| *name == method).map(|(_, cap)| *cap)
}
