//! `attempt/event`: the normalized events of a running attempt, streamed bridge → host.
//!
//! The event is the crate's [`Event`] as it is (same tags, same camelCase names), so a line of
//! `clawbridge run --json` and the `event` of an `attempt/event` notification are the same JSON.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::Event;

/// The event an `attempt/event` carries, under the name the host protocol gives it.
pub type AttemptEvent = Event;

/// `attempt/event` params: one event of one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptEventParams {
    /// The attempt the event belongs to (as given in `attempt/run`); many attempts share a connection.
    pub attempt_id: String,
    /// Position of the event within its attempt, from 0 without gaps, so a host that fans events out to
    /// several consumers can restore order and notice a loss.
    pub seq: u64,
    /// The event.
    pub event: Event,
}

/// [`AttemptEventParams`] as the bridge sends it: the same JSON, borrowing the event the pipeline
/// holds, so streaming an event to the host copies none of its text.
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptEventRef<'a> {
    /// As [`AttemptEventParams::attempt_id`].
    pub attempt_id: &'a str,
    /// As [`AttemptEventParams::seq`].
    pub seq: u64,
    /// As [`AttemptEventParams::event`].
    pub event: &'a Event,
}
