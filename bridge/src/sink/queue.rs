//! The queue between an attempt's native event sink and its pipeline (docs/peers/pipes.md#backpressure).
//!
//! The sink runs on the native peer's reader, which must never wait for the host: a host that
//! reads slowly would otherwise stall Codex itself. So `push` never blocks. It must not grow
//! without bound either, so while the forwarder lags, a delta is merged into the delta queued just
//! before it (same kind, same item) instead of being queued on its own. Every other event (starts,
//! finals, tool terminals, usage, the terminal) is kept as is and in order; the final text comes
//! from `assistantFinal` / `toolFinished`, never from deltas alone, so merging loses nothing the
//! result needs. A merged delta stops growing at [`MAX_MERGED_DELTA_BYTES`]; what is cut is only
//! streaming progress, and the count of cut bytes is kept for the log.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::events::Event;
use tokio::sync::Notify;

/// The most text one merged delta holds while the forwarder lags.
pub const MAX_MERGED_DELTA_BYTES: usize = 1 << 20;

/// A non-blocking, coalescing event queue with one consumer.
#[derive(Debug, Default)]
pub struct EventQueue {
    /// Events not yet taken, and whether the producer is done.
    inner: Mutex<Inner>,
    /// Wakes the consumer.
    ready: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    /// Queued events, oldest first.
    events: VecDeque<Event>,
    /// Set by [`EventQueue::close`]: nothing more will come.
    closed: bool,
    /// Delta bytes dropped because a merged delta was full.
    dropped_bytes: u64,
}

impl EventQueue {
    /// Queues `event` without waiting; merges a delta into the queued delta of the same item when
    /// only other deltas were queued after that one (items streaming side by side — two commands'
    /// output — would otherwise never merge and the queue would grow with every delta).
    pub fn push(&self, event: Event) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if inner.closed {
            // Only a handle outliving the turn pushes now; the stream already ended.
            return;
        }
        let mut dropped = None;
        let same_item = inner
            .events
            .iter_mut()
            .rev()
            .take_while(|queued| is_delta(queued))
            .find_map(|queued| continuation(queued, &event));
        if let Some((queued, delta)) = same_item {
            if delta.len() <= MAX_MERGED_DELTA_BYTES.saturating_sub(queued.len()) {
                queued.push_str(delta);
                return;
            }
            dropped = Some(delta.len() as u64);
        }
        match dropped {
            Some(bytes) => inner.dropped_bytes += bytes,
            None => {
                inner.events.push_back(event);
                self.ready.notify_one();
            }
        }
    }

    /// No more events will be pushed; the consumer drains what is queued, then gets `None`.
    pub fn close(&self) {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).closed = true;
        self.ready.notify_one();
    }

    /// The next event, waiting for one; `None` once closed and drained.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let ready = self.ready.notified();
            {
                let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(event) = inner.events.pop_front() {
                    return Some(event);
                }
                if inner.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Delta bytes cut so far (only while the consumer lagged behind a full merged delta).
    pub fn dropped_bytes(&self) -> u64 {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).dropped_bytes
    }

    /// How many events are queued.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner).events.len()
    }
}

/// The queued delta's text and the new delta's, when `next` continues `back` (same kind, same item).
/// Whether `event` is a streamed delta (what merging may move past: other items' deltas only).
fn is_delta(event: &Event) -> bool {
    matches!(event, Event::AssistantDelta { .. } | Event::ReasoningDelta { .. } | Event::ToolOutputDelta { .. })
}

fn continuation<'a, 'b>(back: &'a mut Event, next: &'b Event) -> Option<(&'a mut String, &'b str)> {
    match (back, next) {
        (Event::AssistantDelta { item_id: a, delta: queued }, Event::AssistantDelta { item_id: b, delta })
        | (Event::ReasoningDelta { item_id: a, delta: queued }, Event::ReasoningDelta { item_id: b, delta })
        | (Event::ToolOutputDelta { call_id: a, delta: queued }, Event::ToolOutputDelta { call_id: b, delta })
            if a == b =>
        {
            Some((queued, delta.as_str()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::events::{TerminalKind, TurnTerminal};

    use super::*;

    fn delta(item: &str, text: &str) -> Event {
        Event::AssistantDelta { item_id: item.into(), delta: text.into() }
    }

    #[tokio::test]
    async fn interleaved_deltas_of_two_items_merge_per_item_and_the_queue_stays_small() {
        let queue = EventQueue::default();
        for i in 0..10_000 {
            queue.push(delta("a", &format!("a{i};")));
            queue.push(delta("b", &format!("b{i};")));
        }
        queue.close();
        let mut taken = Vec::new();
        while let Some(event) = queue.next().await {
            taken.push(event);
        }
        assert_eq!(taken.len(), 2, "one merged delta per item: {} events", taken.len());
        let text = |item: &str| -> String {
            taken
                .iter()
                .filter_map(|e| match e {
                    Event::AssistantDelta { item_id, delta } if item_id == item => Some(delta.clone()),
                    _ => None,
                })
                .collect()
        };
        let expected_a: String = (0..10_000).map(|i| format!("a{i};")).collect();
        assert_eq!(text("a"), expected_a, "each item's text stays whole and in order");
        assert!(text("b").starts_with("b0;b1;") && text("b").ends_with("b9999;"));
    }

    #[tokio::test]
    async fn a_lagging_consumer_gets_merged_deltas_and_every_other_event_in_order() {
        let queue = EventQueue::default();
        queue.push(Event::TurnStarted { turn_id: "t".into() });
        for _ in 0..100_000 {
            queue.push(delta("m1", "ab"));
        }
        queue.push(delta("m2", "x"));
        queue.push(Event::AssistantFinal { item_id: "m1".into(), text: "final".into() });
        queue.push(Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }));
        queue.close();
        assert_eq!(queue.len(), 5, "200k deltas of one item took one slot");

        let mut got = Vec::new();
        while let Some(event) = queue.next().await {
            got.push(event);
        }
        assert!(matches!(&got[0], Event::TurnStarted { .. }));
        match &got[1] {
            Event::AssistantDelta { item_id, delta } => {
                assert_eq!(item_id, "m1");
                assert_eq!(delta.len(), 200_000);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&got[2], Event::AssistantDelta { item_id, .. } if item_id == "m2"));
        assert!(matches!(&got[3], Event::AssistantFinal { .. }));
        assert!(matches!(&got[4], Event::TurnTerminal(_)));
        assert_eq!(queue.dropped_bytes(), 0);
    }

    #[tokio::test]
    async fn a_merged_delta_stops_growing_at_the_cap() {
        let queue = EventQueue::default();
        let chunk = "x".repeat(64 * 1024);
        for _ in 0..40 {
            queue.push(Event::ToolOutputDelta { call_id: "c".into(), delta: chunk.clone() });
        }
        queue.close();
        let Some(Event::ToolOutputDelta { delta, .. }) = queue.next().await else { panic!("a delta") };
        assert_eq!(delta.len(), MAX_MERGED_DELTA_BYTES);
        assert_eq!(queue.dropped_bytes(), (40 * chunk.len() - MAX_MERGED_DELTA_BYTES) as u64);
        assert!(queue.next().await.is_none());
    }

    #[tokio::test]
    async fn a_keeping_up_consumer_sees_each_delta() {
        let queue = std::sync::Arc::new(EventQueue::default());
        let consumer = {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut n = 0;
                while queue.next().await.is_some() {
                    n += 1;
                }
                n
            })
        };
        for i in 0..50 {
            queue.push(delta("m", &i.to_string()));
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        queue.close();
        assert_eq!(consumer.await.unwrap(), 50);
    }
}
