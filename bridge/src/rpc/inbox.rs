//! The channel from a peer's reader to its consumer, bounded in lines and in bytes
//! (docs/peers/pipes.md#backpressure): a line may be up to the line cap (64 MiB), so a bound in
//! lines alone would let a consumer that lags hold that many of the largest lines.
//!
//! Each event takes a share of a byte budget (its line's length, at least [`MIN_EVENT_BYTES`], at
//! most the whole budget) before it is queued, and gives it back only once the consumer has taken
//! it. A relay task moves events into the consumer's one-slot channel and knows the consumer took
//! the last one when that slot is free again. While the reader waits for room it says so to the
//! peer's writer ([`LineSender::hold_reading`]): a peer blocked on its output, because we stopped
//! reading it, may stop reading its input without being at fault.

use std::sync::Arc;

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, mpsc};

use super::peer::PeerEvent;
use crate::transport::LineSender;

/// The bytes of events a peer's reader may have queued for its consumer by default.
pub const DEFAULT_EVENT_BYTES: usize = 8 << 20;

/// What an event costs at least, however short its line: the event itself and its slot.
pub const MIN_EVENT_BYTES: usize = 256;

/// The consumer is gone: nobody takes events any more.
#[derive(Debug)]
pub(super) struct ConsumerGone;

/// The reader's side of the inbox.
pub(super) struct InboxSender {
    /// Events queued with their share of the budget.
    queue: mpsc::Sender<(PeerEvent, OwnedSemaphorePermit)>,
    /// One permit per byte queued and not yet taken by the consumer.
    budget: Arc<Semaphore>,
    /// The budget's size: the most one event takes.
    budget_bytes: u32,
    /// Told while the reader waits for room, so the write clock stands still.
    out: LineSender,
}

/// An inbox for `lines` events and `bytes` bytes; waits for room are reported to `out`.
pub(super) fn inbox(lines: usize, bytes: usize, out: LineSender) -> (InboxSender, mpsc::Receiver<PeerEvent>) {
    let budget_bytes = u32::try_from(bytes.clamp(MIN_EVENT_BYTES, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let budget = Arc::new(Semaphore::new(budget_bytes as usize));
    let (queue, queued) = mpsc::channel(lines.max(1));
    // One slot: the event in it is still counted, so what the consumer has not taken is bounded.
    let (slot, taken) = mpsc::channel(1);
    tokio::spawn(relay(queued, slot, budget.clone()));
    (InboxSender { queue, budget, budget_bytes, out }, taken)
}

impl InboxSender {
    /// Queues `event`, read from a line of `line_bytes` bytes, waiting while the inbox is full.
    pub(super) async fn send(&self, event: PeerEvent, line_bytes: usize) -> Result<(), ConsumerGone> {
        let cost = u32::try_from(line_bytes.max(MIN_EVENT_BYTES)).unwrap_or(u32::MAX).min(self.budget_bytes);
        let permit = match self.budget.clone().try_acquire_many_owned(cost) {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(ConsumerGone),
            Err(TryAcquireError::NoPermits) => {
                let _held = self.out.hold_reading();
                self.budget.clone().acquire_many_owned(cost).await.map_err(|_| ConsumerGone)?
            }
        };
        match self.queue.try_send((event, permit)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Closed(_)) => Err(ConsumerGone),
            Err(TrySendError::Full(queued)) => {
                let _held = self.out.hold_reading();
                self.queue.send(queued).await.map_err(|_| ConsumerGone)
            }
        }
    }
}

/// Moves events into the consumer's slot, giving an event's bytes back once the consumer took it
/// (the slot is free again). Ends when the reader is done and everything was handed over, or when
/// the consumer is gone, which closes the budget so the reader never waits for it.
async fn relay(
    mut queued: mpsc::Receiver<(PeerEvent, OwnedSemaphorePermit)>,
    slot: mpsc::Sender<PeerEvent>,
    budget: Arc<Semaphore>,
) {
    let mut in_slot: Option<OwnedSemaphorePermit> = None;
    loop {
        let Ok(free) = slot.reserve().await else { break };
        drop(in_slot.take());
        let Some((event, permit)) = queued.recv().await else { break };
        free.send(event);
        in_slot = Some(permit);
    }
    budget.close();
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawbridge_protocol::jsonrpc::Notification;

    use super::*;
    use crate::transport::spawn_line_writer;

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
}
