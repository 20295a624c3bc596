//! Steering a running Claude turn: the CLI queues a `user` line written while it works and answers
//! it with its own `system/init` … `result` right after the running part (checked on 2.1.328), so a
//! steered line continues the turn and the turn ends with the last of those `result`s
//! (docs/peers/claude.md#steering).
//!
//! [`SteerGate`] is shared by the running turn and the [`ClaudeSteering`] handle: the turn closes
//! it when it reads a `result` that no steered line still waits behind, and a steer counts its line
//! under the same lock before writing it, so a line is either a continuation the turn waits for or
//! refused — never a stray `result` that a later turn would take for its own.

use std::sync::{Arc, Mutex, MutexGuard};

use clawbridge_bridge::backend::{BackendError, Steering};
use clawbridge_bridge::rpc::RpcPeer;
use clawbridge_protocol::claude::UserLine;
use futures::future::BoxFuture;

/// The running turn's side of steering.
#[derive(Debug, Default)]
pub struct SteerGate {
    /// Behind one lock: the turn's reads of `result` and the steers' counts are ordered.
    state: Mutex<GateState>,
}

#[derive(Debug, Default)]
struct GateState {
    /// The CLI the running turn talks to; `None` while no turn runs.
    peer: Option<RpcPeer>,
    /// Steered lines whose `result` the turn has not read yet.
    pending: usize,
}

/// Why a steer was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SteerError {
    /// No turn runs (it has not begun, or its last `result` was read).
    #[error("no claude turn is running")]
    NotRunning,
    /// The line could not be written to the CLI.
    #[error("could not write to the claude process: {0}")]
    Write(String),
}

impl SteerGate {
    fn state(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A turn starts on `peer`: steers are taken until it ends.
    pub fn open(&self, peer: RpcPeer) {
        *self.state() = GateState { peer: Some(peer), pending: 0 };
    }

    /// The turn read a `result`: `true` when a steered line's part still follows (the turn goes on),
    /// else the gate closes and `false` (the turn ends).
    pub fn on_result(&self) -> bool {
        let mut state = self.state();
        if state.pending > 0 {
            state.pending -= 1;
            true
        } else {
            state.peer = None;
            false
        }
    }

    /// The CLI was told to drop its queued lines (an interrupt): none is waited for any more.
    /// Returns how many were pending.
    pub fn drop_pending(&self) -> usize {
        std::mem::take(&mut self.state().pending)
    }

    /// The turn is over, however it ended.
    pub fn close(&self) {
        *self.state() = GateState::default();
    }

    /// Writes `text` as a user line into the running turn.
    pub async fn steer(&self, text: &str) -> Result<(), SteerError> {
        let peer = {
            let mut state = self.state();
            let Some(peer) = state.peer.clone() else { return Err(SteerError::NotRunning) };
            state.pending += 1;
            peer
        };
        match peer.notify("user", Some(&UserLine::text(text))).await {
            Ok(()) => Ok(()),
            Err(error) => {
                let mut state = self.state();
                state.pending = state.pending.saturating_sub(1);
                Err(SteerError::Write(error.to_string()))
            }
        }
    }
}

/// The seam's [`Steering`] for a Claude session.
#[derive(Debug)]
pub struct ClaudeSteering {
    /// The session's gate.
    pub gate: Arc<SteerGate>,
}

impl Steering for ClaudeSteering {
    fn steer<'a>(&'a self, _turn_id: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        // The gate only lets a line into the turn that runs now, which is the one the host means.
        Box::pin(
            async move { self.gate.steer(text).await.map_err(|error| BackendError::Steer { source: Box::new(error) }) },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_gate_refuses_and_every_counted_line_holds_the_turn_open() {
        let gate = SteerGate::default();
        assert!(matches!(gate.steer("early").await, Err(SteerError::NotRunning)));
        // Counting works without a CLI: the state is what the turn reads.
        gate.state().pending = 2;
        assert!(gate.on_result());
        assert!(gate.on_result());
        assert!(!gate.on_result(), "the last result ends the turn");
        assert!(matches!(gate.steer("late").await, Err(SteerError::NotRunning)), "closed at the end");
        gate.state().pending = 3;
        assert_eq!(gate.drop_pending(), 3);
        assert!(!gate.on_result());
    }
}
