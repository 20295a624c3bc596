//! Steering a running Claude turn: the CLI queues a `user` line written while it works and answers
//! it with its own `system/init` … `result` right after the running part (checked on 2.1.328), so a
//! steered line continues the turn and the turn ends with the last of those `result`s
//! (docs/peers/claude.md#steering).
//!
//! [`SteerGate`] is shared by the running turn and the [`ClaudeSteering`] handle: the turn closes
//! it when it reads a `result` that no steered line still waits behind, and a steer counts its line
//! under the same lock before writing it, so a line is either a continuation the turn waits for or
//! refused — never a stray `result` that a later turn would take for its own. Each steer keeps the
//! gate's generation (a new turn, its end, an interrupt that drops queued lines each start one) and
//! its place among the generation's lines, so a line that fails to be written ends the turn only
//! when that very turn already counted on that very line.

use std::sync::{Arc, Mutex, MutexGuard};

use clawbridge_bridge::backend::{BackendError, Steering};
use clawbridge_bridge::rpc::RpcPeer;
use clawbridge_protocol::claude::UserLine;
use futures::future::BoxFuture;
use tokio::sync::Notify;

/// The running turn's side of steering.
#[derive(Debug, Default)]
pub struct SteerGate {
    /// Behind one lock: the turn's reads of `result` and the steers' counts are ordered.
    state: Mutex<GateState>,
    /// Wakes the turn when a steered line it already waits for could not be written.
    lost: Notify,
}

#[derive(Debug, Default)]
struct GateState {
    /// The CLI the running turn talks to; `None` while no turn runs.
    peer: Option<RpcPeer>,
    /// Steered lines whose `result` the turn has not read yet.
    pending: usize,
    /// Steered lines of this generation whose `result` the turn read (it counted on their parts).
    consumed: usize,
    /// Which turn, and which of its stretches between interrupts, the counts belong to.
    generation: u64,
    /// Why a steered line the turn already counted on (a `result` was read as its part's
    /// beginning) never reached the CLI: the turn waits for nothing more and ends with this.
    lost: Option<String>,
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
        let mut state = self.state();
        let generation = state.generation + 1;
        *state = GateState { peer: Some(peer), generation, ..GateState::default() };
    }

    /// Waits until a steered line the turn counted on could not be written, with why. Cancel-safe.
    pub async fn lost(&self) -> String {
        loop {
            let lost = self.lost.notified();
            if let Some(why) = self.state().lost.clone() {
                return why;
            }
            lost.await;
        }
    }

    /// The turn read a `result`: `true` when a steered line's part still follows (the turn goes on),
    /// else the gate closes and `false` (the turn ends).
    pub fn on_result(&self) -> bool {
        let mut state = self.state();
        if state.pending > 0 {
            state.pending -= 1;
            state.consumed += 1;
            true
        } else {
            state.peer = None;
            false
        }
    }

    /// The CLI was told to drop its queued lines (an interrupt): none is waited for any more.
    /// Returns how many were pending.
    pub fn drop_pending(&self) -> usize {
        let mut state = self.state();
        // Lines written before this are the CLI's to drop: their failure no longer concerns the turn.
        state.generation += 1;
        state.consumed = 0;
        std::mem::take(&mut state.pending)
    }

    /// The turn is over, however it ended.
    pub fn close(&self) {
        let mut state = self.state();
        let generation = state.generation + 1;
        *state = GateState { generation, ..GateState::default() };
    }

    /// Writes `text` as a user line into the running turn.
    pub async fn steer(&self, text: &str) -> Result<(), SteerError> {
        let (peer, generation, place) = {
            let mut state = self.state();
            let Some(peer) = state.peer.clone() else { return Err(SteerError::NotRunning) };
            let place = state.consumed + state.pending;
            state.pending += 1;
            (peer, state.generation, place)
        };
        match peer.notify("user", Some(&UserLine::text(text))).await {
            Ok(()) => Ok(()),
            Err(error) => {
                let why = error.to_string();
                let mut state = self.state();
                if state.generation != generation {
                    // Its turn is over, or an interrupt dropped it: nobody waits for its part.
                } else if place >= state.consumed {
                    // No `result` was read for it yet: it simply does not count.
                    state.pending = state.pending.saturating_sub(1);
                } else if state.peer.is_some() {
                    // A `result` was already read as the start of this line's part, so the turn
                    // waits for a part that never comes: it must end now, naming why.
                    state.lost = Some(format!("a steered line could not be written to claude: {why}"));
                    self.lost.notify_waiters();
                }
                Err(SteerError::Write(why))
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

    /// A CLI peer whose stdin nobody reads, with its writer's queue already full, so a steer's
    /// write waits until the peer is closed, and fails then.
    async fn blocked_peer() -> (RpcPeer, tokio::io::DuplexStream, tokio::io::DuplexStream) {
        use clawbridge_bridge::rpc::{NoProcess, PeerConfig, RejectAll};
        let (output, cli_stdout) = tokio::io::duplex(1024);
        let (input, cli_stdin) = tokio::io::duplex(64);
        let config = PeerConfig {
            dialect: clawbridge_protocol::jsonrpc::Dialect::ClaudeControl,
            outgoing_queue: 1,
            write_timeout: None,
            ..PeerConfig::default()
        };
        let (peer, _events) = RpcPeer::start(output, input, config, Arc::new(RejectAll), Arc::new(NoProcess));
        // One line the writer is stuck writing, one that fills its queue.
        for filler in ["x".repeat(1 << 20), "y".into()] {
            peer.notify("user", Some(&UserLine::text(&filler))).await.unwrap();
        }
        (peer, cli_stdout, cli_stdin)
    }

    #[tokio::test]
    async fn a_steer_that_fails_after_the_turn_counted_on_it_tells_the_turn_why() {
        let (peer, _out, _in) = blocked_peer().await;
        let gate = Arc::new(SteerGate::default());
        gate.open(peer.clone());
        let steer = tokio::spawn({
            let gate = gate.clone();
            async move { gate.steer("also this").await }
        });
        // The line is counted before it is written; the turn then reads a `result` and, seeing
        // the count, waits for that line's part.
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while gate.state().pending == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the steer counts its line");
        assert!(gate.on_result(), "the turn goes on for the steered part");
        peer.close();
        let written = tokio::time::timeout(std::time::Duration::from_secs(10), steer).await.unwrap().unwrap();
        assert!(matches!(written, Err(SteerError::Write(_))), "{written:?}");
        let why =
            tokio::time::timeout(std::time::Duration::from_secs(10), gate.lost()).await.expect("the turn is told");
        assert!(why.contains("could not be written"), "{why}");
    }

    /// Runs a steer on `gate` up to its waiting write (its line counted), and returns it.
    async fn steer_counted(gate: &Arc<SteerGate>) -> tokio::task::JoinHandle<Result<(), SteerError>> {
        let counted = |gate: &SteerGate| {
            let state = gate.state();
            state.consumed + state.pending
        };
        let before = counted(gate);
        let steer = tokio::spawn({
            let gate = gate.clone();
            async move { gate.steer("also this").await }
        });
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while counted(gate) == before {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the steer counts its line");
        steer
    }

    #[tokio::test]
    async fn a_steer_that_fails_after_an_interrupt_dropped_it_does_not_fail_the_cancelled_turn() {
        let (peer, _out, _in) = blocked_peer().await;
        let gate = Arc::new(SteerGate::default());
        gate.open(peer.clone());
        let steer = steer_counted(&gate).await;
        assert_eq!(gate.drop_pending(), 1, "the interrupt drops the queued line");
        peer.close();
        assert!(tokio::time::timeout(std::time::Duration::from_secs(10), steer).await.unwrap().unwrap().is_err());
        assert!(gate.state().lost.is_none(), "the cancelled turn ends as the interrupt ends it");
    }

    #[tokio::test]
    async fn a_steer_of_an_earlier_turn_that_fails_does_not_end_the_next_one() {
        let (peer, _out, _in) = blocked_peer().await;
        let gate = Arc::new(SteerGate::default());
        gate.open(peer.clone());
        let steer = steer_counted(&gate).await;
        // That turn ends (its process stopped); the next turn runs on a new one.
        gate.close();
        let (next_peer, _next_out, _next_in) = blocked_peer().await;
        gate.open(next_peer);
        peer.close();
        assert!(tokio::time::timeout(std::time::Duration::from_secs(10), steer).await.unwrap().unwrap().is_err());
        assert!(gate.state().lost.is_none(), "an earlier turn's line is no concern of this one");
    }

    #[tokio::test]
    async fn a_steer_that_fails_before_any_result_counted_on_it_changes_nothing_for_the_turn() {
        let (peer, _out, _in) = blocked_peer().await;
        let gate = Arc::new(SteerGate::default());
        gate.open(peer.clone());
        let steer = tokio::spawn({
            let gate = gate.clone();
            async move { gate.steer("also this").await }
        });
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while gate.state().pending == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the steer counts its line");
        peer.close();
        assert!(tokio::time::timeout(std::time::Duration::from_secs(10), steer).await.unwrap().unwrap().is_err());
        assert!(!gate.on_result(), "the turn's result ends it: no steered part follows");
        assert!(gate.state().lost.is_none());
    }
}
