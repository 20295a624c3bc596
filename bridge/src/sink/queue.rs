//! The queue between an attempt's native event sink and its pipeline (docs/peers/pipes.md#backpressure).
//!
//! The sink runs on the turn's driver, which reads the native peer: while the pipeline lags (a host
//! that reads slowly), two things keep memory bounded. First, a delta is merged into the delta
//! queued just before it (same kind, same item) instead of being queued on its own; the final text
//! comes from `assistantFinal` / `toolFinished`, never from deltas alone, so merging loses nothing
//! the result needs. A merged delta stops growing at [`MAX_MERGED_DELTA_BYTES`]; what is cut is only
//! streaming progress, and the count of cut bytes is kept for the log. Second, every queued event is
//! counted in bytes ([`event_bytes`]), and once the queue holds [`MAX_QUEUED_BYTES`] the driver waits
//! for [`EventQueue::room`] before it reads the next native line: the peer's channel (bounded in
//! bytes) fills, its reader stops reading and the child's stdout pipe fills, so the bridge's memory
//! stays bounded (the child may block, or, like Node on a pipe, buffer in its own memory). `push`
//! itself never waits and never drops a non-delta event (unless the turn is being interrupted,
//! below), so the queue may pass the cap by the events
//! of the one native line that was being delivered (and the few the bridge adds itself, a turn's
//! closing events among them).
//!
//! Once the turn is being interrupted ([`EventQueue::shed_deltas`]) the driver must read on: the
//! native side's answer to the interrupt sits behind what it streamed meanwhile. From then on a
//! delta that finds the queue at its cap is dropped (its bytes counted) instead of queued, and the
//! producer waits only past twice the cap, which only other events than deltas can reach.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::events::{CappedOutput, Event, ToolCall, ToolOutcome};
use crate::transcript::{ContentBlock, Message};
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Notify;

/// The most text one merged delta holds while the forwarder lags.
pub const MAX_MERGED_DELTA_BYTES: usize = 1 << 20;

/// The queued bytes (by [`event_bytes`]) past which the producer waits for the consumer.
pub const MAX_QUEUED_BYTES: usize = 8 << 20;

/// What one queued event costs besides its text: the event's own size and its slot.
const EVENT_OVERHEAD: usize = std::mem::size_of::<Event>() + 16;

/// A coalescing event queue with one consumer, bounded in bytes (see the module docs).
#[derive(Debug)]
pub struct EventQueue {
    /// Events not yet taken, and whether the producer is done.
    inner: Mutex<Inner>,
    /// Wakes the consumer.
    ready: Notify,
    /// Wakes a producer waiting for [`room`](Self::room).
    drained: Notify,
    /// The byte cap this queue applies ([`MAX_QUEUED_BYTES`] unless a test asks for less).
    cap: usize,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue::with_cap(MAX_QUEUED_BYTES)
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// Queued events with the bytes each was counted at, oldest first.
    events: VecDeque<(Event, usize)>,
    /// The sum of the queued events' counted bytes.
    bytes: usize,
    /// The most `bytes` ever were: what tests and the log read to see the cap held.
    high_water: usize,
    /// Set by [`EventQueue::close`]: nothing more will come.
    closed: bool,
    /// Delta bytes dropped because a merged delta was full, or shed while interrupting.
    dropped_bytes: u64,
    /// Set by [`EventQueue::shed_deltas`]: the turn is being interrupted and must read on.
    shedding: bool,
}

impl EventQueue {
    /// A queue whose producer waits past `cap` queued bytes.
    pub fn with_cap(cap: usize) -> Self {
        EventQueue { inner: Mutex::default(), ready: Notify::new(), drained: Notify::new(), cap }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `event` without waiting; merges a delta into the queued delta of the same item when
    /// only other deltas were queued after that one (items streaming side by side — two commands'
    /// output — would otherwise never merge and the queue would grow with every delta).
    pub fn push(&self, event: Event) {
        let mut inner = self.lock();
        if inner.closed {
            // Only a handle outliving the turn pushes now; the stream already ended.
            return;
        }
        if inner.shedding && inner.bytes >= self.cap && is_delta(&event) {
            // Streaming progress of a turn being stopped, behind a host that lags: only its end
            // matters now, and that must be read.
            inner.dropped_bytes += delta_len(&event) as u64;
            return;
        }
        let mut dropped = None;
        let mut merged = None;
        let same_item = inner
            .events
            .iter_mut()
            .rev()
            .take_while(|(queued, _)| is_delta(queued))
            .find_map(|(queued, counted)| Some((continuation(queued, &event)?, counted)));
        if let Some(((queued, delta), counted)) = same_item {
            if delta.len() <= MAX_MERGED_DELTA_BYTES.saturating_sub(queued.len()) {
                queued.push_str(delta);
                *counted += delta.len();
                merged = Some(delta.len());
            } else {
                dropped = Some(delta.len() as u64);
            }
        }
        match (merged, dropped) {
            (Some(bytes), _) => inner.add_bytes(bytes),
            (None, Some(bytes)) => inner.dropped_bytes += bytes,
            (None, None) => {
                let bytes = event_bytes(&event);
                inner.events.push_back((event, bytes));
                inner.add_bytes(bytes);
                self.ready.notify_one();
            }
        }
    }

    /// No more events will be pushed; the consumer drains what is queued, then gets `None`.
    pub fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_one();
        self.drained.notify_waiters();
    }

    /// The next event, waiting for one; `None` once closed and drained.
    pub async fn next(&self) -> Option<Event> {
        loop {
            let ready = self.ready.notified();
            {
                let mut inner = self.lock();
                if let Some((event, bytes)) = inner.events.pop_front() {
                    let limit = inner.limit(self.cap);
                    let was_full = inner.bytes >= limit;
                    inner.bytes -= bytes;
                    if was_full && inner.bytes < limit {
                        self.drained.notify_waiters();
                    }
                    return Some(event);
                }
                if inner.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Whether the producer may go on (fewer than the cap's bytes are queued, or the queue closed).
    pub fn has_room(&self) -> bool {
        let inner = self.lock();
        inner.closed || inner.bytes < inner.limit(self.cap)
    }

    /// The turn is being interrupted: from now on deltas past the cap are dropped and the producer
    /// waits only past twice the cap (see the module docs).
    pub fn shed_deltas(&self) {
        self.lock().shedding = true;
        self.drained.notify_waiters();
    }

    /// Waits until [`has_room`](Self::has_room). Cancel-safe.
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            if self.has_room() {
                return;
            }
            drained.await;
        }
    }

    /// Delta bytes cut so far (only while the consumer lagged behind a full merged delta).
    pub fn dropped_bytes(&self) -> u64 {
        self.lock().dropped_bytes
    }

    /// Bytes queued now, as [`event_bytes`] counts them.
    pub fn queued_bytes(&self) -> usize {
        self.lock().bytes
    }

    /// The most bytes ever queued at once.
    pub fn high_water_bytes(&self) -> usize {
        self.lock().high_water
    }

    /// Whether nothing is queued now (the consumer may flush what it buffered).
    pub fn is_empty(&self) -> bool {
        self.lock().events.is_empty()
    }

    /// How many events are queued.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().events.len()
    }
}

impl Inner {
    /// The queued bytes past which the producer waits.
    fn limit(&self, cap: usize) -> usize {
        if self.shedding { cap.saturating_mul(2) } else { cap }
    }

    fn add_bytes(&mut self, bytes: usize) {
        self.bytes += bytes;
        self.high_water = self.high_water.max(self.bytes);
    }
}

/// A wait for room in `queue`, or `None` when it has room now (what a turn sink hands its driver).
pub fn room_in(queue: &Arc<EventQueue>) -> Option<BoxFuture<'static, ()>> {
    if queue.has_room() {
        return None;
    }
    let queue = queue.clone();
    Some(Box::pin(async move { queue.room().await }))
}

/// What a queued event costs, in bytes: an approximation of the heap it holds (lengths, not the
/// capacities behind them) — the lengths of its
/// texts, a tool's arguments walked node by node ([`value_bytes`]), plus a fixed overhead per event
/// for the event itself. Cheap: nothing is serialised.
pub fn event_bytes(event: &Event) -> usize {
    let texts = match event {
        Event::TurnStarted { turn_id: a } => a.len(),
        Event::AssistantDelta { item_id: a, delta: b }
        | Event::AssistantFinal { item_id: a, text: b }
        | Event::ReasoningDelta { item_id: a, delta: b }
        | Event::ToolOutputDelta { call_id: a, delta: b } => a.len() + b.len(),
        Event::ReasoningFinal { item_id, text, signature } => {
            item_id.len() + text.len() + signature.as_ref().map_or(0, String::len)
        }
        Event::Plan(plan) => {
            plan.explanation.as_ref().map_or(0, String::len)
                + plan.steps.iter().map(|s| s.step.len() + EVENT_OVERHEAD).sum::<usize>()
        }
        Event::ToolStarted(call) => call_bytes(call),
        Event::ToolFinished(finish) => {
            call_bytes(&finish.call) + outcome_bytes(&finish.outcome) + finish.output.as_ref().map_or(0, output_bytes)
        }
        Event::ModelRetry { message, .. }
        | Event::ModelInUse { model: message }
        | Event::ContextCompacted { item_id: message, .. } => message.len(),
        Event::TurnTerminal(terminal) => terminal.message.as_ref().map_or(0, String::len),
        Event::Usage(_)
        | Event::LastCall(_)
        | Event::ModelCallStarted {}
        | Event::BudgetPaused { .. }
        | Event::BudgetResumed { .. }
        | Event::Unknown => 0,
    };
    EVENT_OVERHEAD + texts
}

fn call_bytes(call: &ToolCall) -> usize {
    call.call_id.len() + call.tool_name.len() + value_bytes(&call.arguments)
}

fn outcome_bytes(outcome: &ToolOutcome) -> usize {
    let texts: [Option<&String>; 2] = match outcome {
        ToolOutcome::Failure { error, error_code, .. } => [error.as_ref(), error_code.as_ref()],
        ToolOutcome::Declined { reason } | ToolOutcome::Cancelled { reason } => [reason.as_ref(), None],
        ToolOutcome::Backgrounded { detail } => [detail.as_ref(), None],
        // Newer outcomes hold no text this bridge knows of.
        _ => [None, None],
    };
    texts.into_iter().flatten().map(String::len).sum()
}

fn output_bytes(output: &CappedOutput) -> usize {
    output.text.len() + output.images.iter().map(|i| i.data.len() + i.mime_type.len() + EVENT_OVERHEAD).sum::<usize>()
}

/// A transcript row's heap, approximately, counted as [`event_bytes`] counts an event: its texts,
/// its tool arguments and details walked node by node, plus a fixed overhead per row and block.
pub fn message_bytes(message: &Message) -> usize {
    let blocks = |content: &[ContentBlock]| content.iter().map(block_bytes).sum::<usize>();
    let texts = match message {
        Message::User(user) => user.content.len(),
        Message::Assistant(assistant) => blocks(&assistant.content),
        Message::ToolResult(result) => {
            result.tool_call_id.len()
                + result.tool_name.len()
                + blocks(&result.content)
                + result.details.as_ref().map_or(0, value_bytes)
        }
        // A row kind this build does not know: counted as its overhead only.
        _ => 0,
    };
    EVENT_OVERHEAD + texts + message.idempotency_key().map_or(0, str::len)
}

fn block_bytes(block: &ContentBlock) -> usize {
    let texts = match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Thinking { thinking, thinking_signature } => {
            thinking.len() + thinking_signature.as_ref().map_or(0, String::len)
        }
        ContentBlock::ToolCall { id, name, arguments } => id.len() + name.len() + value_bytes(arguments),
        ContentBlock::Image { data, mime_type } => data.len() + mime_type.len(),
        // A block kind this build does not know: counted as its overhead only.
        _ => 0,
    };
    EVENT_OVERHEAD + texts
}

/// A JSON value's heap, approximately (lengths, not capacities): each node's own size, its strings and keys. Walked with
/// an explicit stack, so a deeply nested value cannot exhaust the thread's stack.
fn value_bytes(value: &Value) -> usize {
    let node = std::mem::size_of::<Value>();
    let mut total = 0;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        total += node;
        match value {
            Value::String(s) => total += s.len(),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    // A map entry holds its key and its links besides the value.
                    total += key.len() + std::mem::size_of::<String>() + 3 * std::mem::size_of::<usize>();
                    stack.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    total
}

/// The text of a delta (0 for any other event).
fn delta_len(event: &Event) -> usize {
    match event {
        Event::AssistantDelta { delta, .. }
        | Event::ReasoningDelta { delta, .. }
        | Event::ToolOutputDelta { delta, .. } => delta.len(),
        _ => 0,
    }
}

/// Whether `event` is a streamed delta (what merging may move past: other items' deltas only).
fn is_delta(event: &Event) -> bool {
    matches!(event, Event::AssistantDelta { .. } | Event::ReasoningDelta { .. } | Event::ToolOutputDelta { .. })
}

/// The queued delta's text and the new delta's, when `next` continues `back` (same kind, same item).
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

    fn final_text(n: usize, text: &str) -> Event {
        Event::AssistantFinal { item_id: format!("i{n}"), text: text.into() }
    }

    #[tokio::test]
    async fn every_event_is_counted_in_bytes_and_a_full_queue_says_so_until_it_drains_below_the_cap() {
        let queue = EventQueue::with_cap(10_000);
        let text = "x".repeat(1000);
        let mut pushed = 0;
        while queue.has_room() {
            queue.push(final_text(pushed, &text));
            pushed += 1;
        }
        // Every event counted: its text plus the overhead, nothing merged or dropped.
        assert!(pushed < 10, "1000-byte texts fill a 10 000-byte cap within ten events: {pushed}");
        assert_eq!(queue.queued_bytes(), (0..pushed).map(|n| event_bytes(&final_text(n, &text))).sum::<usize>());
        assert!(queue.queued_bytes() >= 10_000);
        let waiting = tokio::spawn({
            let queue = std::sync::Arc::new(queue);
            let waiter = queue.clone();
            let room = async move { waiter.room().await };
            async move {
                let waited = tokio::spawn(room);
                // One event taken is enough to go below the cap again.
                assert!(queue.next().await.is_some());
                waited.await.unwrap();
                assert!(queue.has_room());
                queue
            }
        });
        let queue = tokio::time::timeout(std::time::Duration::from_secs(10), waiting).await.unwrap().unwrap();
        assert_eq!(queue.high_water_bytes(), (0..pushed).map(|n| event_bytes(&final_text(n, &text))).sum::<usize>());
        queue.close();
        let mut rest = 0;
        while queue.next().await.is_some() {
            rest += 1;
        }
        assert_eq!(rest, pushed - 1, "nothing dropped");
        assert_eq!(queue.queued_bytes(), 0);
    }

    #[test]
    fn the_byte_count_bounds_the_text_a_tool_event_holds() {
        let arguments = serde_json::json!({"command": "x".repeat(5000), "nested": [[["deep"]]]});
        let call = crate::events::ToolCall {
            call_id: "c".into(),
            tool_name: "shell".into(),
            arguments,
            native: true,
            native_mutation: None,
        };
        let counted = event_bytes(&Event::ToolStarted(call.clone()));
        let serialised = serde_json::to_vec(&call).unwrap().len();
        assert!(counted > serialised, "counted {counted} < serialised {serialised}");
    }

    #[test]
    fn while_interrupting_deltas_past_the_cap_are_dropped_and_other_events_queue_up_to_twice_the_cap() {
        let queue = EventQueue::with_cap(4096);
        let chunk = "x".repeat(1000);
        let mut n = 0;
        while queue.has_room() {
            queue.push(final_text(n, &chunk));
            n += 1;
        }
        queue.shed_deltas();
        assert!(queue.has_room(), "the turn being stopped reads on");
        let before = queue.queued_bytes();
        for _ in 0..1000 {
            queue.push(Event::ToolOutputDelta { call_id: "c".into(), delta: chunk.clone() });
        }
        assert_eq!(queue.queued_bytes(), before, "deltas past the cap are not queued");
        assert_eq!(queue.dropped_bytes(), 1000 * 1000);
        while queue.has_room() {
            queue.push(final_text(n, &chunk));
            n += 1;
        }
        assert!(queue.queued_bytes() >= 2 * 4096, "only past twice the cap does the producer wait again");
        assert!(queue.queued_bytes() < 2 * 4096 + event_bytes(&final_text(n, &chunk)));
    }

    #[tokio::test]
    async fn a_closed_queue_always_has_room() {
        let queue = EventQueue::with_cap(1);
        queue.push(final_text(0, "a"));
        assert!(!queue.has_room());
        queue.close();
        assert!(queue.has_room(), "a producer that waits on a finished pipeline must not hang");
        queue.room().await;
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
