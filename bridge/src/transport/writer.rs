//! The one writer of a peer's input: whole lines from a queue bounded in lines and bytes, with a
//! no-progress limit when one is set (docs/peers/pipes.md#write-timeout): a write may take as long
//! as its reader keeps taking bytes, and the clock stands still while our own reading of that peer
//! is held back ([`ReadHold`]), since a peer blocked on its full output may stop reading its input.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Why a line could not be queued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// The writer task has stopped: the pipe broke (the peer is gone) or the writer was closed.
    #[error("the outgoing stream is closed")]
    Closed,
    /// The message could not be serialised as JSON.
    #[error("could not serialise an outgoing message: {0}")]
    Serialize(#[from] serde_json::Error),
    /// The peer stopped reading: a write made no progress within the write timeout, so the writer
    /// stopped and closed the stream.
    #[error("the peer stopped reading its input for {after:?}")]
    Stalled {
        /// The write timeout that passed.
        after: Duration,
    },
}

/// How long a write to a native agent's stdin may go without progress by default (a setting:
/// [`WRITE_TIMEOUT_ENV`]). A reading agent takes bytes in microseconds; one that has taken none for
/// this long (while we kept reading its output) has stopped reading, and waiting longer only hangs
/// the turn.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// `CLAWBRIDGE_WRITE_TIMEOUT_MS`: the write timeout for native agents, in milliseconds (0 or
/// unreadable: the default).
pub const WRITE_TIMEOUT_ENV: &str = "CLAWBRIDGE_WRITE_TIMEOUT_MS";

/// The write timeout for native agents: [`WRITE_TIMEOUT_ENV`] when set, else [`DEFAULT_WRITE_TIMEOUT`].
/// Read once per process.
pub fn agent_write_timeout() -> Duration {
    static TIMEOUT: OnceLock<Duration> = OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        std::env::var(WRITE_TIMEOUT_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map_or(DEFAULT_WRITE_TIMEOUT, Duration::from_millis)
    })
}

/// How long closing the stream may take (closing a pipe does not wait for its reader).
const SHUTDOWN_LIMIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The most bytes queued for a writer at once (a longer line waits until it is the only one):
/// counting lines alone would let a peer that reads slowly hold that many of the largest lines.
pub const MAX_QUEUED_BYTES: usize = 4 << 20;

/// Queues whole lines for a writer task. Cloneable; the queue is bounded in lines and in bytes
/// ([`MAX_QUEUED_BYTES`]), so a peer that stops reading makes senders wait instead of growing memory.
#[derive(Clone, Debug)]
pub struct LineSender {
    /// Lines waiting for the writer task, each already ending in `\n`, with the byte budget they
    /// hold until written.
    queue: mpsc::Sender<(Bytes, OwnedSemaphorePermit)>,
    /// The byte budget: one permit per queued byte.
    budget: Arc<Semaphore>,
    /// Cancelling it makes the writer task stop and drop the stream (closing the child's stdin).
    close: CancellationToken,
    /// Cancelling it makes the writer task stop once the queue is empty: what was sent is written.
    finish: CancellationToken,
    /// Set by the writer task when a write made no progress within the write timeout: why it stopped.
    stalled: Arc<OnceLock<Duration>>,
    /// Whether our reading of this peer is held back now, which stops the write clock.
    hold: Arc<ReadHold>,
    /// Cancelled by the writer task as its last act, once the stream is shut down.
    ended: CancellationToken,
}

/// Counts the places where our reading of the peer's output is held back by our own backpressure
/// (a consumer that lags). While it is held, the peer may be blocked writing its output and so not
/// read its input: that is not its fault, so the write clock does not run then.
#[derive(Debug, Default)]
pub struct ReadHold {
    /// How many holds are active.
    held: AtomicUsize,
    /// Wakes the writer whenever a hold starts or ends, so its clock restarts.
    changed: tokio::sync::Notify,
}

impl ReadHold {
    fn is_held(&self) -> bool {
        self.held.load(Ordering::SeqCst) > 0
    }
}

/// One active hold of a [`ReadHold`], from [`LineSender::hold_reading`]; released when dropped.
#[derive(Debug)]
pub struct ReadHoldGuard {
    /// The hold this guard counts in.
    hold: Arc<ReadHold>,
}

impl Drop for ReadHoldGuard {
    fn drop(&mut self) {
        self.hold.held.fetch_sub(1, Ordering::SeqCst);
        self.hold.changed.notify_waiters();
    }
}

impl LineSender {
    /// Serialises `message` as one compact JSON line and queues it, waiting while the queue is full.
    pub async fn send_json<T: serde::Serialize + ?Sized>(&self, message: &T) -> Result<(), SendError> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.send_line(Bytes::from(line)).await
    }

    /// Queues bytes that already form one line ending in `\n` (compact JSON never holds a raw newline).
    pub async fn send_line(&self, line: Bytes) -> Result<(), SendError> {
        debug_assert!(line.ends_with(b"\n") && memchr::memchr(b'\n', &line) == Some(line.len() - 1));
        if self.close.is_cancelled() {
            return Err(self.stopped());
        }
        // A line longer than the whole budget takes all of it: it waits for the queue to drain.
        // Either wait ends at `close` (a peer that stopped reading must not hold a sender forever).
        let cost = u32::try_from(line.len().min(MAX_QUEUED_BYTES)).unwrap_or(u32::MAX);
        let permit = tokio::select! {
            biased;
            () = self.close.cancelled() => return Err(self.stopped()),
            permit = self.budget.clone().acquire_many_owned(cost) => permit.map_err(|_| self.stopped())?,
        };
        tokio::select! {
            biased;
            () = self.close.cancelled() => Err(self.stopped()),
            sent = self.queue.send((line, permit)) => sent.map_err(|_| self.stopped()),
        }
    }

    /// Why sending fails now that the writer stopped.
    fn stopped(&self) -> SendError {
        match self.stalled.get() {
            Some(after) => SendError::Stalled { after: *after },
            None => SendError::Closed,
        }
    }

    /// The write timeout that passed, once the writer stopped because the peer stopped reading.
    pub fn stalled(&self) -> Option<Duration> {
        self.stalled.get().copied()
    }

    /// Waits until the writer stops because the peer stopped reading, with the timeout that passed;
    /// never ends for a writer that stops otherwise (closed, EPIPE) or keeps going.
    pub async fn stalled_wait(&self) -> Duration {
        self.close.cancelled().await;
        match self.stalled() {
            Some(after) => after,
            None => std::future::pending().await,
        }
    }

    /// Our reading of the peer's output is held back (by a consumer that lags) until the guard is
    /// dropped: meanwhile the write clock stands still.
    pub fn hold_reading(&self) -> ReadHoldGuard {
        self.hold.held.fetch_add(1, Ordering::SeqCst);
        self.hold.changed.notify_waiters();
        ReadHoldGuard { hold: self.hold.clone() }
    }

    /// Stops the writer: lines still queued are dropped and the stream is closed (stdin EOF).
    pub fn close(&self) {
        self.close.cancel();
    }

    /// Stops the writer once every line queued so far is written, then closes the stream: for a
    /// peer that still reads (a host that closed only its input must still get every answer).
    pub fn finish(&self) {
        self.finish.cancel();
    }

    /// Waits until the writer task has ended and shut the stream down (after [`finish`](Self::finish):
    /// everything sent was written).
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// Whether the writer has stopped.
    pub fn is_closed(&self) -> bool {
        self.close.is_cancelled() || self.queue.is_closed()
    }
}

/// `write` (one piece of progress), unless it makes no progress for `limit` while our reading of
/// the peer is not held back: then the stall is recorded in `stalled` and it fails as `TimedOut`. The
/// clock restarts whenever a hold starts or ends.
async fn progress<T>(
    limit: Option<Duration>,
    hold: &ReadHold,
    stalled: &OnceLock<Duration>,
    write: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    let Some(limit) = limit else { return write.await };
    tokio::pin!(write);
    loop {
        let changed = hold.changed.notified();
        tokio::pin!(changed);
        // Registered before the hold is read, so a change in between still wakes this wait.
        changed.as_mut().enable();
        let held = hold.is_held();
        tokio::select! {
            biased;
            written = &mut write => return written,
            // A hold started or ended: the clock restarts.
            () = &mut changed => {}
            () = tokio::time::sleep(limit), if !held => {
                // Recorded before `close` fires, so every sender it wakes sees why.
                let _ = stalled.set(limit);
                tracing::warn!(after = ?limit, "the peer stopped reading its input; closing it");
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the peer stopped reading its input"));
            }
        }
    }
}

/// Starts a task that writes queued lines to `stream` in order, flushing whenever the queue runs dry.
/// The task ends when every sender is dropped, [`LineSender::close`] is called, or a write fails
/// (EPIPE: the peer is gone); the stream is dropped at that point. No write timeout.
pub fn spawn_line_writer<W>(stream: W, queue_capacity: usize) -> (LineSender, JoinHandle<std::io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    spawn_line_writer_with_timeout(stream, queue_capacity, None)
}

/// [`spawn_line_writer`], and a write that makes no progress for `write_timeout` (while our reading
/// of the peer is not held back, [`LineSender::hold_reading`]) stops the writer as a peer that
/// stopped reading: the stream is closed and every send from then on fails with
/// [`SendError::Stalled`].
pub fn spawn_line_writer_with_timeout<W>(
    stream: W,
    queue_capacity: usize,
    write_timeout: Option<Duration>,
) -> (LineSender, JoinHandle<std::io::Result<()>>)
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(queue_capacity.max(1));
    let close = CancellationToken::new();
    let finish = CancellationToken::new();
    let budget = Arc::new(Semaphore::new(MAX_QUEUED_BYTES));
    let stalled = Arc::new(OnceLock::new());
    let hold = Arc::new(ReadHold::default());
    let ended = CancellationToken::new();
    let writer = Writer {
        close: close.clone(),
        finish: finish.clone(),
        budget: budget.clone(),
        stalled: stalled.clone(),
        write_timeout,
        hold: hold.clone(),
        ended: ended.clone(),
    };
    let task = tokio::spawn(writer.write_lines(stream, rx));
    (LineSender { queue: tx, budget, close, finish, stalled, hold, ended }, task)
}

/// The writer task's side of a [`LineSender`].
struct Writer {
    /// Stops the task; cancelled by the task itself whenever it ends.
    close: CancellationToken,
    /// Stops the task once the queue is empty.
    finish: CancellationToken,
    /// The senders' byte budget, closed when the task ends so waiting senders wake.
    budget: Arc<Semaphore>,
    /// Where the task says it stopped because a write timed out.
    stalled: Arc<OnceLock<Duration>>,
    /// How long a write may go without progress; `None`: as long as it takes.
    write_timeout: Option<Duration>,
    /// While held, the write clock stands still.
    hold: Arc<ReadHold>,
    /// Cancelled when the task ends.
    ended: CancellationToken,
}

impl Writer {
    async fn write_lines<W: AsyncWrite + Unpin>(
        self,
        stream: W,
        mut queue: mpsc::Receiver<(Bytes, OwnedSemaphorePermit)>,
    ) -> std::io::Result<()> {
        let Writer { close, finish, budget, stalled, write_timeout, hold, ended } = self;
        let _ended = ended.drop_guard();
        let mut out = tokio::io::BufWriter::new(stream);
        let result = async {
            loop {
                // The permit is released once the line is written (or dropped with the writer).
                let (line, _budget) = tokio::select! {
                    biased;
                    _ = close.cancelled() => return Ok(()),
                    line = queue.recv() => match line {
                        Some(line) => line,
                        None => return out.flush().await,
                    },
                    // Polled only while the queue has nothing ready (biased): queued lines first.
                    () = finish.cancelled() => return out.flush().await,
                };
                // A peer that stopped reading blocks the write; closing must still close its stdin.
                tokio::select! {
                    biased;
                    _ = close.cancelled() => return Ok(()),
                    written = async {
                        // Each piece that moves restarts the clock: a big line to a slow reader
                        // that keeps reading is progress, not a stall.
                        let mut at = 0;
                        while at < line.len() {
                            let n = progress(write_timeout, &hold, &stalled, out.write(&line[at..])).await?;
                            if n == 0 {
                                return Err(std::io::Error::from(std::io::ErrorKind::WriteZero));
                            }
                            at += n;
                        }
                        if queue.is_empty() {
                            // What the buffer holds is at most its capacity: one piece of progress.
                            progress(write_timeout, &hold, &stalled, out.flush()).await?;
                        }
                        Ok::<(), std::io::Error>(())
                    } => written?,
                }
            }
        }
        .await;
        // Whatever ended the loop, later sends must fail fast rather than queue into the void, and
        // senders waiting for the byte budget wake up.
        close.cancel();
        budget.close();
        if let Err(e) = &result {
            tracing::debug!(error = %e, "outgoing stream failed; the peer is probably gone");
        }
        // The stream itself is shut down, not the buffer around it: flushing what is buffered would wait
        // forever on a peer that stopped reading, keeping its stdin open (a normal end has flushed
        // already). Shutting down, rather than dropping, also ends the stream when it is one half of a
        // split, whose drop alone closes nothing.
        let mut stream = out.into_inner();
        let _ = tokio::time::timeout(SHUTDOWN_LIMIT, stream.shutdown()).await;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// A line of half the byte budget.
    fn half_budget_line() -> Bytes {
        let mut line = vec![b'x'; MAX_QUEUED_BYTES / 2 - 1];
        line.push(b'\n');
        Bytes::from(line)
    }

    #[tokio::test]
    async fn closing_ends_a_writer_and_its_waiting_senders_even_when_the_peer_reads_nothing() {
        // Nobody reads `server`: the writer blocks on the pipe, the budget fills, a sender waits.
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, task) = spawn_line_writer(client, 100);
        tx.send_line(half_budget_line()).await.unwrap();
        tx.send_line(half_budget_line()).await.unwrap();
        let waiting = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send_line(half_budget_line()).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        tx.close();
        let limit = std::time::Duration::from_secs(5);
        let sent = tokio::time::timeout(limit, waiting).await.expect("the waiting sender wakes").unwrap();
        assert!(matches!(sent, Err(SendError::Closed)), "{sent:?}");
        tokio::time::timeout(limit, task).await.expect("the writer ends").unwrap().unwrap();
        // The pipe was closed: the reader reaches EOF after what it had been sent.
        let mut rest = Vec::new();
        tokio::time::timeout(limit, server.read_to_end(&mut rest)).await.expect("EOF comes").unwrap();
    }

    #[tokio::test]
    async fn queued_lines_are_bounded_in_bytes_not_only_in_count() {
        // Room for 100 lines, but nobody reads: two 2 MiB lines fill the byte budget (one being
        // written, one queued) and a third must wait until the reader takes the first.
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, _task) = spawn_line_writer(client, 100);
        tx.send_line(half_budget_line()).await.unwrap();
        tx.send_line(half_budget_line()).await.unwrap();
        let third = tokio::time::timeout(std::time::Duration::from_millis(300), tx.send_line(half_budget_line())).await;
        assert!(third.is_err(), "a third line waits while the budget is spent");
        let drain = tokio::spawn(async move {
            let mut sink = vec![0u8; 1 << 16];
            let mut total = 0usize;
            while total < 3 * (MAX_QUEUED_BYTES / 2) {
                let n = server.read(&mut sink).await.unwrap();
                assert!(n > 0);
                total += n;
            }
        });
        tokio::time::timeout(std::time::Duration::from_secs(30), tx.send_line(half_budget_line()))
            .await
            .unwrap()
            .unwrap();
        drain.await.unwrap();
    }

    #[tokio::test]
    async fn lines_arrive_whole_and_in_order() {
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, task) = spawn_line_writer(client, 4);
        let reader = tokio::spawn(async move {
            let mut all = String::new();
            server.read_to_string(&mut all).await.unwrap();
            all
        });
        for i in 0..100 {
            tx.send_json(&serde_json::json!({"n": i, "s": "a\nb"})).await.unwrap();
        }
        drop(tx);
        let all = reader.await.unwrap();
        task.await.unwrap().unwrap();
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!(lines.len(), 100);
        assert_eq!(lines[7], r#"{"n":7,"s":"a\nb"}"#);
    }

    #[tokio::test]
    async fn finishing_writes_every_queued_line_then_ends_while_a_sender_lives_on() {
        // The reader is slow to start: lines are still queued when `finish` is called, and a
        // clone of the sender is alive, so only `finish` can end the stream.
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, task) = spawn_line_writer(client, 100);
        let kept = tx.clone();
        for i in 0..50 {
            tx.send_json(&serde_json::json!({"n": i})).await.unwrap();
        }
        tx.finish();
        let mut all = String::new();
        server.read_to_string(&mut all).await.unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(all.lines().count(), 50, "every line queued before `finish` was written");
        assert!(kept.is_closed(), "a finished writer takes no more lines");
    }

    #[tokio::test]
    async fn a_stalled_reader_applies_backpressure() {
        let (client, _server) = tokio::io::duplex(16);
        let (tx, _task) = spawn_line_writer(client, 2);
        let mut sent = 0;
        let blocked = tokio::time::timeout(std::time::Duration::from_millis(200), async {
            loop {
                tx.send_json(&"0123456789").await.unwrap();
                sent += 1;
            }
        })
        .await;
        assert!(blocked.is_err(), "sends must block once the queue and the pipe are full");
        assert!(sent < 10, "only a bounded number of lines may be queued, got {sent}");
    }

    #[tokio::test]
    async fn a_line_the_peer_does_not_take_in_time_stops_the_writer_and_every_send_names_the_stall() {
        // Nobody reads `server`: a line bigger than the pipe cannot be written.
        let (client, mut server) = tokio::io::duplex(64);
        let limit = std::time::Duration::from_millis(200);
        let (tx, task) = spawn_line_writer_with_timeout(client, 4, Some(limit));
        tx.send_line(half_budget_line()).await.unwrap();
        let stalled = tokio::time::timeout(std::time::Duration::from_secs(30), tx.stalled_wait()).await;
        assert_eq!(stalled.expect("the writer gives up"), limit);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), task).await.unwrap().unwrap();
        assert_eq!(ended.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
        match tx.send_json(&1).await {
            Err(SendError::Stalled { after }) => assert_eq!(after, limit),
            other => panic!("expected the stall, got {other:?}"),
        }
        // The stream was closed: the reader reaches EOF after the bytes that went out.
        let mut rest = Vec::new();
        tokio::time::timeout(std::time::Duration::from_secs(5), server.read_to_end(&mut rest)).await.unwrap().unwrap();
        assert!(rest.len() < MAX_QUEUED_BYTES / 2);
    }

    #[tokio::test]
    async fn a_slow_reader_within_the_write_timeout_loses_nothing() {
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, task) = spawn_line_writer_with_timeout(client, 4, Some(std::time::Duration::from_secs(30)));
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            let mut chunk = [0u8; 16];
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                match server.read(&mut chunk).await.unwrap() {
                    0 => break all,
                    n => all.extend_from_slice(&chunk[..n]),
                }
            }
        });
        for i in 0..20 {
            tx.send_json(&i).await.unwrap();
        }
        drop(tx);
        task.await.unwrap().unwrap();
        let all = reader.await.unwrap();
        assert_eq!(memchr::memchr_iter(b'\n', &all).count(), 20);
    }

    #[tokio::test]
    async fn a_big_line_to_a_slow_reader_that_keeps_reading_is_not_a_stall() {
        let (client, mut server) = tokio::io::duplex(16 * 1024);
        let limit = std::time::Duration::from_secs(1);
        let (tx, task) = spawn_line_writer_with_timeout(client, 4, Some(limit));
        // 2 MiB taken 16 KiB at a time with a pause between reads: far longer than the limit in
        // all, never near it between two pieces.
        let mut line = vec![b'x'; 2 << 20];
        line.push(b'\n');
        let reader = tokio::spawn(async move {
            let mut total = 0usize;
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                match server.read(&mut chunk).await.unwrap() {
                    0 => break total,
                    n => total += n,
                }
            }
        });
        tx.send_line(Bytes::from(line)).await.unwrap();
        drop(tx);
        tokio::time::timeout(std::time::Duration::from_secs(120), task).await.unwrap().unwrap().unwrap();
        assert_eq!(reader.await.unwrap(), (2 << 20) + 1);
    }

    #[tokio::test]
    async fn a_reader_that_stops_partway_through_a_big_line_is_a_stall() {
        let (client, mut server) = tokio::io::duplex(16 * 1024);
        let limit = std::time::Duration::from_millis(300);
        let (tx, task) = spawn_line_writer_with_timeout(client, 4, Some(limit));
        let mut line = vec![b'x'; 2 << 20];
        line.push(b'\n');
        tx.send_line(Bytes::from(line)).await.unwrap();
        // Takes the first 256 KiB, then reads no more (and keeps its end open).
        let mut taken = 0usize;
        let mut chunk = vec![0u8; 16 * 1024];
        while taken < 256 * 1024 {
            taken += server.read(&mut chunk).await.unwrap();
        }
        let stalled = tokio::time::timeout(std::time::Duration::from_secs(30), tx.stalled_wait()).await;
        assert_eq!(stalled.expect("the writer gives up"), limit);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), task).await.unwrap().unwrap();
        assert_eq!(ended.unwrap_err().kind(), std::io::ErrorKind::TimedOut);
        drop(server);
    }

    #[tokio::test]
    async fn the_write_clock_stands_still_while_our_reading_of_the_peer_is_held_back() {
        // The peer reads nothing: blocked, as it would be, on the output we stopped reading.
        let (client, _server) = tokio::io::duplex(64);
        let limit = std::time::Duration::from_millis(200);
        let (tx, task) = spawn_line_writer_with_timeout(client, 4, Some(limit));
        let held = tx.hold_reading();
        tx.send_line(half_budget_line()).await.unwrap();
        tokio::time::sleep(limit * 5).await;
        assert_eq!(tx.stalled(), None, "our own backpressure is not the peer's stall");
        assert!(!task.is_finished());
        drop(held);
        // Once we read again and it still takes nothing, it has stopped reading.
        let stalled = tokio::time::timeout(std::time::Duration::from_secs(30), tx.stalled_wait()).await;
        assert_eq!(stalled.expect("the writer gives up once the hold ends"), limit);
    }

    #[tokio::test]
    async fn closing_drops_the_stream_and_fails_later_sends() {
        let (client, mut server) = tokio::io::duplex(64);
        let (tx, task) = spawn_line_writer(client, 4);
        tx.send_json(&1).await.unwrap();
        tokio::task::yield_now().await;
        tx.close();
        task.await.unwrap().unwrap();
        let mut rest = Vec::new();
        server.read_to_end(&mut rest).await.unwrap();
        assert!(matches!(tx.send_json(&2).await, Err(SendError::Closed)));
    }
}
