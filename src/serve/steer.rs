//! `attempt/steer`: the host's active-run injection into a running attempt. The attempt fills its
//! [`SteerSlot`] once its native session is open (the backend's [`Steering`] handle) and its turn has
//! started (the turn id); `attempt/steer` reads it and steers, or says why it cannot.

use std::sync::{Arc, Mutex};

use clawbridge_bridge::backend::Steering;
use clawbridge_protocol::host::{AttemptSteerResponse, SteerStatus};

/// The most text one steer adds (Codex caps one call's text at 1 MiB characters).
pub const MAX_STEER_BYTES: usize = 1024 * 1024;

/// Where a running attempt's steering handle and turn id are kept for `attempt/steer`.
#[derive(Default)]
pub struct SteerSlot {
    /// Set by the attempt; cleared when its turn ends.
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    /// The native session's handle (`None` until open, and for a harness without steering).
    steering: Option<Arc<dyn Steering>>,
    /// The running turn (`None` before `turnStarted` and after the turn ended).
    turn_id: Option<String>,
    /// Whether the attempt's harness steers at all (`None` until its session is open).
    supported: Option<bool>,
    /// A steer is on its way to the native turn ([`SteerClaim`]): a second waits for none, so an
    /// attempt holds at most one steer's text however many the host sends.
    in_flight: bool,
}

/// The one steer of an attempt in flight; dropping it lets the next one in.
pub struct SteerClaim {
    /// The slot whose `in_flight` this claim holds.
    slot: Arc<SteerSlot>,
}

impl SteerClaim {
    /// Adds `text` to the running turn, or says why not.
    pub async fn steer(&self, text: &str) -> AttemptSteerResponse {
        self.slot.steer(text).await
    }
}

impl Drop for SteerClaim {
    fn drop(&mut self) {
        self.slot.state().in_flight = false;
    }
}

/// The answer to a steer sent while another of the same attempt is still in flight.
pub fn busy() -> AttemptSteerResponse {
    answer(
        SteerStatus::Rejected,
        Some("another steer of this attempt is still in flight; send it after that one's answer".into()),
    )
}

impl SteerSlot {
    fn state(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Claims the attempt's one steer in flight, or `None` while another holds it.
    pub fn claim(self: &Arc<Self>) -> Option<SteerClaim> {
        let mut state = self.state();
        if state.in_flight {
            return None;
        }
        state.in_flight = true;
        Some(SteerClaim { slot: self.clone() })
    }

    /// The native session is open: its handle, or `None` when its harness cannot steer.
    pub fn opened(&self, steering: Option<Arc<dyn Steering>>) {
        let mut state = self.state();
        state.supported = Some(steering.is_some());
        state.steering = steering;
    }

    /// The turn `turn_id` started.
    pub fn turn_started(&self, turn_id: &str) {
        self.state().turn_id = Some(turn_id.to_owned());
    }

    /// The turn ended: nothing more can be steered into it.
    pub fn turn_ended(&self) {
        let mut state = self.state();
        state.turn_id = None;
        state.steering = None;
    }

    /// Adds `text` to the running turn, or says why not.
    pub async fn steer(&self, text: &str) -> AttemptSteerResponse {
        if text.len() > MAX_STEER_BYTES {
            return answer(SteerStatus::Rejected, Some(format!("the text has more than {MAX_STEER_BYTES} bytes")));
        }
        let target = {
            let state = self.state();
            match (&state.steering, &state.turn_id) {
                _ if state.supported == Some(false) => Err(SteerStatus::Unsupported),
                (Some(steering), Some(turn_id)) => Ok((steering.clone(), turn_id.clone())),
                _ => Err(SteerStatus::NotReady),
            }
        };
        match target {
            Ok((steering, turn_id)) => match steering.steer(&turn_id, text).await {
                Ok(()) => answer(SteerStatus::Accepted, None),
                Err(error) => answer(SteerStatus::Rejected, Some(error.to_string())),
            },
            Err(status) => answer(status, None),
        }
    }
}

fn answer(status: SteerStatus, message: Option<String>) -> AttemptSteerResponse {
    AttemptSteerResponse { status, message }
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::backend::BackendError;
    use futures::future::BoxFuture;

    use super::*;

    /// Records what it was asked; refuses turn `old`.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<(String, String)>>);

    impl Steering for Recorder {
        fn steer<'a>(&'a self, turn_id: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
            Box::pin(async move {
                if turn_id == "old" {
                    return Err(BackendError::Steer { source: "expected active turn id".into() });
                }
                self.0.lock().unwrap().push((turn_id.to_owned(), text.to_owned()));
                Ok(())
            })
        }
    }

    #[test]
    fn one_steer_at_a_time_is_in_flight() {
        let slot = Arc::new(SteerSlot::default());
        let first = slot.claim().expect("the first steer is let in");
        assert!(slot.claim().is_none(), "a second steer while the first is in flight");
        drop(first);
        assert!(slot.claim().is_some(), "the next steer after the first's answer");
        assert_eq!(busy().status, SteerStatus::Rejected);
    }

    #[tokio::test]
    async fn input_reaches_the_running_turn_only() {
        let slot = SteerSlot::default();
        assert_eq!(slot.steer("early").await.status, SteerStatus::NotReady, "not open yet");
        let recorder = Arc::new(Recorder::default());
        slot.opened(Some(recorder.clone()));
        assert_eq!(slot.steer("before the turn").await.status, SteerStatus::NotReady);
        slot.turn_started("t-1");
        assert_eq!(slot.steer("also do this").await, answer(SteerStatus::Accepted, None));
        assert_eq!(*recorder.0.lock().unwrap(), [("t-1".to_owned(), "also do this".to_owned())]);
        let too_long = "x".repeat(MAX_STEER_BYTES + 1);
        assert_eq!(slot.steer(&too_long).await.status, SteerStatus::Rejected);
        slot.turn_started("old");
        let refused = slot.steer("late").await;
        assert_eq!(refused.status, SteerStatus::Rejected);
        assert!(refused.message.unwrap_or_default().contains("expected active turn id"));
        slot.turn_ended();
        assert_eq!(slot.steer("after").await.status, SteerStatus::NotReady);
        assert_eq!(recorder.0.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_harness_without_steering_says_so() {
        let slot = SteerSlot::default();
        slot.opened(None);
        assert_eq!(slot.steer("hi").await.status, SteerStatus::Unsupported);
        slot.turn_started("t-1");
        assert_eq!(slot.steer("hi").await.status, SteerStatus::Unsupported);
    }
}
