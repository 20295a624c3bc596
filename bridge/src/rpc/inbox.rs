//! The channel from a peer's reader to its consumer, bounded in lines and in bytes
//! (docs/peers/pipes.md#backpressure): a line may be up to the line cap (64 MiB), so a bound in
//! lines alone would let a consumer that lags hold that many of the largest lines.
//!
//! Each event takes a share of a byte budget (its line's length, at least [`MIN_EVENT_BYTES`], at
//! most the whole budget) and one of the line slots before it is queued, and gives both back when
//! the consumer takes it ([`PeerEvents::recv`]). The reader hands events over in batches: what it
//! read before its next read would wait (at most [`MAX_BATCH_EVENTS`]), so a burst of lines wakes
//! the consumer once, not once per line. A batch also goes out before the reader waits for room,
//! completes one of our requests or passes a request of the peer's to its handler, so nothing
//! that follows a line is seen before it. While the reader waits for room it says so to the
//! peer's writer ([`LineSender::hold_reading`]): a peer blocked on its output, because we stopped
//! reading it, may stop reading its input without being at fault.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, mpsc};

use super::peer::PeerEvent;
use crate::transport::LineSender;

/// The bytes of events a peer's reader may have queued for its consumer by default.
pub const DEFAULT_EVENT_BYTES: usize = 8 << 20;

/// What an event costs at least, however short its line: the event itself and its slot.
pub const MIN_EVENT_BYTES: usize = 256;

/// The most events one hand-over carries: a stream that never makes the reader wait is still
/// handed over in pieces, so the consumer starts on the first lines while the next are read.
pub const MAX_BATCH_EVENTS: usize = 256;

/// The consumer is gone: nobody takes events any more.
#[derive(Debug)]
pub(super) struct ConsumerGone;

/// An event with the share of the budget it holds until the consumer takes it.
#[derive(Debug)]
struct Queued {
    /// What the consumer gets.
    event: PeerEvent,
    /// Its bytes of the byte budget.
    _bytes: OwnedSemaphorePermit,
    /// Its line slot.
    _slot: OwnedSemaphorePermit,
}

/// The reader's side of the inbox.
pub(super) struct InboxSender {
    /// Batches handed over; unbounded in batches because every event in one holds its share of
    /// `budget` and `slots`, which bound what is queued.
    queue: mpsc::UnboundedSender<Vec<Queued>>,
    /// Events read and not yet handed over (the reader's next read has not waited yet).
    batch: Mutex<Vec<Queued>>,
    /// One permit per byte queued and not yet taken by the consumer.
    budget: Arc<Semaphore>,
    /// One permit per event queued and not yet taken: the bound in lines.
    slots: Arc<Semaphore>,
    /// The budget's size: the most one event takes.
    budget_bytes: u32,
    /// Told while the reader waits for room, so the write clock stands still; `None` for a queue a
    /// router fills ([`routed`]), whose own source holds its peer's reader back.
    out: Option<LineSender>,
}

/// The consumer's side of a peer's events, in arrival order: from the peer's own reader, or from a
/// router that fills one queue per session ([`routed`]); in batches, each event's share of the
/// budget given back as it is taken.
#[derive(Debug)]
pub struct PeerEvents {
    /// Where the events come from.
    inbox: Inbox,
}

/// The receiving end of a reader's batches.
#[derive(Debug)]
struct Inbox {
    /// Batches as the reader handed them over.
    batches: mpsc::UnboundedReceiver<Vec<Queued>>,
    /// The rest of the batch being taken.
    current: VecDeque<Queued>,
    /// Closed when the consumer goes, so the reader never waits for room again.
    budget: Arc<Semaphore>,
    /// Closed with `budget`.
    slots: Arc<Semaphore>,
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.budget.close();
        self.slots.close();
    }
}

impl PeerEvents {
    /// The next event, waiting for one; `None` once the reader is done and everything was taken.
    /// Cancel-safe: an event is only taken when this returns it.
    pub async fn recv(&mut self) -> Option<PeerEvent> {
        let inbox = &mut self.inbox;
        loop {
            if let Some(queued) = inbox.current.pop_front() {
                return Some(queued.event);
            }
            inbox.current = inbox.batches.recv().await?.into();
        }
    }

    /// The next event if one is ready now.
    pub fn try_recv(&mut self) -> Result<PeerEvent, TryRecvError> {
        let inbox = &mut self.inbox;
        loop {
            if let Some(queued) = inbox.current.pop_front() {
                return Ok(queued.event);
            }
            inbox.current = inbox.batches.try_recv()?.into();
        }
    }

    /// Whether no event is ready now (the reader may still hold what it read last).
    pub fn is_empty(&self) -> bool {
        self.inbox.current.is_empty() && self.inbox.batches.is_empty()
    }
}

/// An inbox for `lines` events and `bytes` bytes; waits for room are reported to `out`.
pub(super) fn inbox(lines: usize, bytes: usize, out: LineSender) -> (InboxSender, PeerEvents) {
    inbox_reporting_to(lines, bytes, Some(out))
}

/// A queue of one session's events that a router fills (a shared server's router hands each of
/// its sessions one), bounded like a reader's inbox in events and in bytes: a session that lags
/// makes the router wait, and the router waiting holds back the server's own reader, never more
/// than `bytes` of this session's events in between.
pub fn routed(events: usize, bytes: usize) -> (RoutedSender, PeerEvents) {
    let (sender, events) = inbox_reporting_to(events, bytes, None);
    (RoutedSender { inner: Arc::new(sender) }, events)
}

/// The router's side of a [`routed`] queue; cheap to clone.
#[derive(Clone)]
pub struct RoutedSender {
    /// The queue, handing over each event as it is sent.
    inner: Arc<InboxSender>,
}

impl std::fmt::Debug for RoutedSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoutedSender").finish_non_exhaustive()
    }
}

/// The session of a [`routed`] queue is gone.
#[derive(Debug, thiserror::Error)]
#[error("the session taking these events is gone")]
pub struct SessionGone;

impl RoutedSender {
    /// Queues `event` and hands it over, waiting while the queue is full.
    pub async fn send(&self, event: PeerEvent) -> Result<(), SessionGone> {
        let bytes = event_bytes(&event);
        self.inner.send(event, bytes).await.map_err(|_| SessionGone)?;
        self.inner.flush().map_err(|_| SessionGone)
    }

    /// Queues `event` and hands it over if there is room now (for an event that must not wait);
    /// whether it was queued.
    pub fn try_send(&self, event: PeerEvent) -> bool {
        let cost = self.inner.cost(event_bytes(&event));
        let Ok(bytes) = self.inner.budget.clone().try_acquire_many_owned(cost) else { return false };
        let Ok(slot) = self.inner.slots.clone().try_acquire_owned() else { return false };
        self.inner.lock().push(Queued { event, _bytes: bytes, _slot: slot });
        self.inner.flush().is_ok()
    }
}

/// What an event weighs in a queue's byte budget: what its line held, as far as it is kept.
fn event_bytes(event: &PeerEvent) -> usize {
    match event {
        PeerEvent::Notification(note) => {
            note.method.len() + note.params.as_ref().map_or(0, |params| params.get().len())
        }
        PeerEvent::Answered { method } => method.len(),
        PeerEvent::Problem(_) | PeerEvent::Closed(_) => 0,
    }
}

fn inbox_reporting_to(lines: usize, bytes: usize, out: Option<LineSender>) -> (InboxSender, PeerEvents) {
    let budget_bytes = u32::try_from(bytes.clamp(MIN_EVENT_BYTES, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let budget = Arc::new(Semaphore::new(budget_bytes as usize));
    let slots = Arc::new(Semaphore::new(lines.clamp(1, Semaphore::MAX_PERMITS)));
    let (queue, batches) = mpsc::unbounded_channel();
    let events = Inbox { batches, current: VecDeque::new(), budget: budget.clone(), slots: slots.clone() };
    let sender = InboxSender { queue, batch: Mutex::new(Vec::new()), budget, slots, budget_bytes, out };
    (sender, PeerEvents { inbox: events })
}

impl InboxSender {
    /// Queues `event`, read from a line of `line_bytes` bytes, waiting while the inbox is full. It
    /// reaches the consumer with the batch it joins ([`flush`](Self::flush)).
    pub(super) async fn send(&self, event: PeerEvent, line_bytes: usize) -> Result<(), ConsumerGone> {
        let bytes = self.take(&self.budget, self.cost(line_bytes)).await?;
        let slot = self.take(&self.slots, 1).await?;
        let full = {
            let mut batch = self.lock();
            batch.push(Queued { event, _bytes: bytes, _slot: slot });
            batch.len() >= MAX_BATCH_EVENTS
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// The permits of the byte budget an event of `line_bytes` takes.
    fn cost(&self, line_bytes: usize) -> u32 {
        u32::try_from(line_bytes.max(MIN_EVENT_BYTES)).unwrap_or(u32::MAX).min(self.budget_bytes)
    }

    /// Hands the events read so far to the consumer. Never waits.
    pub(super) fn flush(&self) -> Result<(), ConsumerGone> {
        let batch = std::mem::take(&mut *self.lock());
        if batch.is_empty() {
            return if self.queue.is_closed() { Err(ConsumerGone) } else { Ok(()) };
        }
        self.queue.send(batch).map_err(|_| ConsumerGone)
    }

    /// `cost` permits of `from`; while there are not enough, what was read goes to the consumer
    /// (whose taking it is what makes room) and the wait is reported to the writer.
    async fn take(&self, from: &Arc<Semaphore>, cost: u32) -> Result<OwnedSemaphorePermit, ConsumerGone> {
        match from.clone().try_acquire_many_owned(cost) {
            Ok(permit) => Ok(permit),
            Err(TryAcquireError::Closed) => Err(ConsumerGone),
            Err(TryAcquireError::NoPermits) => {
                self.flush()?;
                let _held = self.out.as_ref().map(LineSender::hold_reading);
                from.clone().acquire_many_owned(cost).await.map_err(|_| ConsumerGone)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Queued>> {
        // A panic while pushing leaves a vector that is still whole.
        self.batch.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for InboxSender {
    /// What the reader read last still reaches the consumer, however the reader ends.
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawbridge_protocol::jsonrpc::Notification;

    use super::*;
    use crate::transport::{Frame, spawn_line_writer};

    fn event(n: usize) -> PeerEvent {
        PeerEvent::Notification(Notification { method: format!("n{n}"), params: None })
    }

    #[tokio::test]
    async fn a_consumer_that_lags_holds_the_reader_at_the_byte_budget_whatever_the_line_count() {
        let (out, _writer) = spawn_line_writer(tokio::io::sink(), 1);
        let (inbox, mut taken) = inbox(1024, 4 << 20, out);
        // Lines of 1 MiB: the line bound (1024) is far off, the byte bound (4 MiB) is not.
        let mut sent = 0;
        while tokio::time::timeout(Duration::from_millis(200), inbox.send(event(sent), 1 << 20)).await.is_ok() {
            sent += 1;
            assert!(sent <= 4, "more than the byte budget was queued: {sent} lines of 1 MiB");
        }
        assert_eq!(sent, 4, "the budget's worth was queued");
        // Once the consumer takes one, one more fits.
        assert!(matches!(taken.recv().await, Some(PeerEvent::Notification(n)) if n.method == "n0"));
        tokio::time::timeout(Duration::from_secs(30), inbox.send(event(9), 1 << 20))
            .await
            .expect("room again once the consumer took an event")
            .unwrap();
    }

    #[tokio::test]
    async fn events_arrive_in_order_and_a_line_over_the_budget_still_goes_through() {
        let (out, _writer) = spawn_line_writer(tokio::io::sink(), 1);
        let (inbox, mut taken) = inbox(4, 1 << 20, out);
        let consumer = tokio::spawn(async move {
            let mut methods = Vec::new();
            while let Some(PeerEvent::Notification(n)) = taken.recv().await {
                methods.push(n.method);
            }
            methods
        });
        for n in 0..100 {
            let bytes = if n == 50 { 64 << 20 } else { 10 };
            inbox.send(event(n), bytes).await.unwrap();
        }
        drop(inbox);
        let methods = consumer.await.unwrap();
        assert_eq!(methods, (0..100).map(|n| format!("n{n}")).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn while_the_reader_waits_for_room_the_write_clock_stands_still() {
        // The peer reads nothing, as one blocked on the output we stopped reading would.
        let (input, _peer_stdin) = tokio::io::duplex(64);
        let limit = Duration::from_millis(200);
        let (out, _writer) = crate::transport::spawn_line_writer_with_timeout(input, 4, Some(limit));
        let mut line = vec![b'x'; 64 * 1024];
        line.push(b'\n');
        out.send_line(bytes::Bytes::from(line)).await.unwrap();
        let (inbox, _taken) = inbox(1024, 1 << 20, out.clone());
        inbox.send(event(0), 1 << 20).await.unwrap();
        // The budget is spent by the event the consumer has not taken: this send waits.
        let waiting = tokio::time::timeout(limit * 5, inbox.send(event(1), 1 << 20)).await;
        assert!(waiting.is_err(), "the inbox is full");
        assert_eq!(out.stalled(), None, "our own backpressure is not the peer's stall");
    }

    #[tokio::test]
    async fn a_consumer_that_is_gone_never_holds_the_reader() {
        let (out, _writer) = spawn_line_writer(tokio::io::sink(), 1);
        let (inbox, taken) = inbox(1024, 1 << 20, out);
        drop(taken);
        for n in 0..100 {
            let sent = tokio::time::timeout(Duration::from_secs(30), inbox.send(event(n), 1 << 20)).await;
            // Queued (before the relay saw the consumer go) or refused; never a wait.
            let _ = sent.expect("no wait for a consumer that is gone");
        }
    }

    /// A peer reading `output`, writing to `input`, with the defaults.
    fn peer_on(output: tokio::io::DuplexStream, input: tokio::io::DuplexStream) -> (crate::rpc::RpcPeer, PeerEvents) {
        use crate::rpc::{NoProcess, PeerConfig, RejectAll, RpcPeer};
        RpcPeer::start(output, input, PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess))
    }

    fn method(event: Option<PeerEvent>) -> String {
        match event {
            Some(PeerEvent::Notification(n)) => n.method,
            other => panic!("expected a notification, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn lines_read_at_once_reach_the_consumer_in_one_hand_over() {
        use tokio::io::AsyncWriteExt;
        let (output, mut child) = tokio::io::duplex(1 << 20);
        let (input, _child_stdin) = tokio::io::duplex(1024);
        let burst: String = (0..100).map(|n| format!("{{\"method\":\"n{n}\"}}\n")).collect();
        child.write_all(burst.as_bytes()).await.unwrap();
        let (_peer, mut events) = peer_on(output, input);
        assert_eq!(method(tokio::time::timeout(Duration::from_secs(30), events.recv()).await.unwrap()), "n0");
        // The other 99 came with the first: they are there without another wait. One event per
        // hand-over (a wake-up of the consumer per line) would leave them behind.
        for n in 1..100 {
            assert_eq!(method(events.try_recv().ok()), format!("n{n}"), "event {n} was not handed over with the first");
        }
        assert!(events.is_empty());
    }

    #[tokio::test]
    async fn a_lone_line_is_handed_over_before_the_next_is_written() {
        use tokio::io::AsyncWriteExt;
        let (output, mut child) = tokio::io::duplex(1 << 20);
        let (input, _child_stdin) = tokio::io::duplex(1024);
        let (_peer, mut events) = peer_on(output, input);
        for n in 0..20 {
            child.write_all(format!("{{\"method\":\"lone{n}\"}}\n").as_bytes()).await.unwrap();
            // Nothing more comes until it arrived: a reader holding it for a fuller batch would
            // never deliver it (the guard only turns that hang into a failure).
            let got = tokio::time::timeout(Duration::from_secs(30), events.recv()).await;
            assert_eq!(method(got.expect("a lone line was held back")), format!("lone{n}"));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn notifications_before_an_answer_are_the_consumers_when_the_caller_wakes() {
        use crate::rpc::{NoProcess, PeerConfig, RejectAll, RpcPeer};
        use tokio::io::AsyncBufReadExt;
        // Frames the test feeds; after the answer the reader is kept from ever finding the stream
        // waiting (its thread blocks until the test has looked), so only what is handed over with
        // the answer can be seen.
        let (feed, mut fed) = mpsc::unbounded_channel::<Frame>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let frames = futures::stream::poll_fn(move |cx| match fed.poll_recv(cx) {
            std::task::Poll::Ready(Some(Frame::Line(line))) if line == "hold" => {
                let _ = released.recv();
                std::task::Poll::Ready(None)
            }
            other => other.map(|frame| frame.map(Ok)),
        });
        let (input, child_stdin) = tokio::io::duplex(1 << 20);
        let (peer, mut events) =
            RpcPeer::start_framed(frames, input, PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
        let request = peer.request("ask", None::<&serde_json::Value>);
        tokio::pin!(request);
        let mut sent = String::new();
        let mut asked = tokio::io::BufReader::new(child_stdin);
        tokio::select! {
            answered = &mut request => panic!("answered before it was asked: {answered:?}"),
            read = asked.read_line(&mut sent) => read.unwrap(),
        };
        let id = serde_json::from_str::<serde_json::Value>(&sent).unwrap()["id"].clone();
        for n in 0..10 {
            feed.send(Frame::Line(format!("{{\"method\":\"n{n}\"}}"))).unwrap();
        }
        feed.send(Frame::Line(format!("{{\"id\":{id},\"result\":{{}}}}"))).unwrap();
        feed.send(Frame::Line("hold".into())).unwrap();
        tokio::time::timeout(Duration::from_secs(30), request).await.expect("the answer was read").unwrap();
        let before: Vec<String> = std::iter::from_fn(|| events.try_recv().ok()).map(|e| method(Some(e))).collect();
        release.send(()).unwrap();
        assert_eq!(before, (0..10).map(|n| format!("n{n}")).collect::<Vec<_>>(), "still with the reader");
    }

    #[tokio::test]
    async fn a_batch_holds_at_most_its_cap_and_every_event_still_arrives_in_order() {
        let (out, _writer) = spawn_line_writer(tokio::io::sink(), 1);
        let (inbox, mut taken) = inbox(4096, 8 << 20, out);
        let total = MAX_BATCH_EVENTS * 3 + 7;
        for n in 0..total {
            inbox.send(event(n), 10).await.unwrap();
        }
        // Without a flush only the full batches went over.
        let mut handed = 0;
        while taken.try_recv().is_ok() {
            handed += 1;
        }
        assert_eq!(handed, MAX_BATCH_EVENTS * 3);
        drop(inbox);
        let rest: Vec<String> = std::iter::from_fn(|| taken.try_recv().ok()).map(|e| method(Some(e))).collect();
        assert_eq!(rest, (MAX_BATCH_EVENTS * 3..total).map(|n| format!("n{n}")).collect::<Vec<_>>());
    }
}
