//! An [`AsyncWrite`] over a blocking writer (the process's own stdout) that hands bytes to one
//! thread of its own and never waits for a write to finish unless its buffer is full.
//!
//! `tokio::io::stdout()` runs each write on the blocking pool and makes the next write or flush
//! wait for it: a flush per event costs a hand-over to a pool thread and a wake-up back, so a
//! `serve` that streams events spends most of its time switching threads. Here a flush only hands
//! the bytes over; the thread writes everything handed over since its last write in one call, so
//! a fast producer gets batched writes and a slow one a write per flush, with no round trip.
//! Nothing changes the file's flags (no `O_NONBLOCK` on a description the host may share), so it
//! works on any stdout: a pipe, a socket, a file or a terminal.

use std::io::Write;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::io::AsyncWrite;

/// The most bytes handed over and not yet taken by the thread: past it, writes wait (the thread
/// holds one more batch of at most this size while it writes).
pub const HANDOVER_CAPACITY: usize = 1 << 20;

/// Writes to `out` on a thread of its own; see the module docs.
#[derive(Debug)]
pub struct ThreadWriter {
    /// What the writer and its thread share.
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Wakes the thread when bytes arrive or the writer closes.
    work: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Handed over, not taken by the thread yet.
    pending: Vec<u8>,
    /// The thread waits for work (only then does a hand-over need to wake it).
    idle: bool,
    /// Shutdown asked: the thread ends once everything handed over is written.
    closing: bool,
    /// The thread has ended (written everything and flushed, or failed).
    ended: bool,
    /// Why a write failed; every later call fails with it.
    failure: Option<(std::io::ErrorKind, String)>,
    /// The task waiting for room or for the end.
    waiter: Option<Waker>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn failed(&self) -> Option<std::io::Error> {
        self.failure.as_ref().map(|(kind, message)| std::io::Error::new(*kind, message.clone()))
    }

    fn wake_waiter(&mut self) {
        if let Some(waker) = self.waiter.take() {
            waker.wake();
        }
    }
}

impl ThreadWriter {
    /// Starts the thread that writes to `out`. `name` names the thread.
    pub fn spawn<W: Write + Send + 'static>(name: &str, out: W) -> std::io::Result<ThreadWriter> {
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        std::thread::Builder::new().name(name.to_string()).spawn(move || write_loop(&theirs, out))?;
        Ok(ThreadWriter { shared })
    }

    /// The process's stdout, through a duplicate of its descriptor (so nothing buffers in front of
    /// it and the descriptor's flags stay as they are).
    pub fn stdout() -> std::io::Result<ThreadWriter> {
        use std::os::fd::AsFd;
        let fd = std::io::stdout().as_fd().try_clone_to_owned()?;
        Self::spawn("clawbridge-stdout", std::fs::File::from(fd))
    }
}

/// The thread: takes what was handed over, writes it in one call, until closed or failed.
fn write_loop<W: Write>(shared: &Shared, mut out: W) {
    let mut batch = Vec::new();
    loop {
        {
            let mut state = shared.lock();
            while state.pending.is_empty() && !state.closing {
                state.idle = true;
                state = shared.work.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            state.idle = false;
            if state.pending.is_empty() {
                break; // closing, and everything is written
            }
            std::mem::swap(&mut state.pending, &mut batch);
            // Room was made: a writer waiting for it may go on.
            state.wake_waiter();
        }
        let written = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        if let Err(error) = written {
            let mut state = shared.lock();
            state.failure = Some((error.kind(), error.to_string()));
            state.pending = Vec::new();
            break;
        }
    }
    let mut state = shared.lock();
    state.ended = true;
    state.wake_waiter();
}

impl AsyncWrite for ThreadWriter {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut state = self.shared.lock();
        if let Some(error) = state.failed() {
            return Poll::Ready(Err(error));
        }
        if state.closing || state.ended {
            return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
        }
        let room = HANDOVER_CAPACITY.saturating_sub(state.pending.len());
        if room == 0 {
            state.waiter = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = room.min(buf.len());
        state.pending.extend_from_slice(&buf[..n]);
        if state.idle {
            state.idle = false;
            self.shared.work.notify_one();
        }
        Poll::Ready(Ok(n))
    }

    /// Ready once the bytes are handed over: the thread writes them in order without being asked
    /// again. Only a failure already seen is reported here.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.shared.lock().failed() {
            Some(error) => Poll::Ready(Err(error)),
            None => Poll::Ready(Ok(())),
        }
    }

    /// Ready once the thread has written everything handed over and ended.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut state = self.shared.lock();
        if !state.closing {
            state.closing = true;
            self.shared.work.notify_one();
        }
        if state.ended {
            return Poll::Ready(state.failed().map_or(Ok(()), Err));
        }
        state.waiter = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for ThreadWriter {
    /// The thread still writes what was handed over, then ends.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.work.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A writer that records every `write` call it gets, and can be made to block or fail.
    #[derive(Clone, Default)]
    struct Recorder {
        writes: Arc<Mutex<Vec<Vec<u8>>>>,
        /// While set, writes wait.
        held: Arc<std::sync::atomic::AtomicBool>,
        fail: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            while self.held.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if self.fail.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.writes.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Waits until the thread has taken everything handed over (it may still be writing it).
    async fn taken(writer: &ThreadWriter) {
        tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while !writer.shared.lock().pending.is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        })
        .await
        .expect("the thread takes what was handed over");
    }

    #[tokio::test]
    async fn what_is_handed_over_while_the_thread_writes_goes_out_in_one_later_write_in_order() {
        let recorder = Recorder::default();
        let mut writer = ThreadWriter::spawn("test-writer", recorder.clone()).unwrap();
        recorder.held.store(true, std::sync::atomic::Ordering::SeqCst);
        writer.write_all(b"first\n").await.unwrap();
        writer.flush().await.unwrap();
        // The thread is now stuck writing "first": everything after it waits for one write.
        taken(&writer).await;
        for n in 0..100 {
            writer.write_all(format!("line {n}\n").as_bytes()).await.unwrap();
            writer.flush().await.unwrap();
        }
        recorder.held.store(false, std::sync::atomic::Ordering::SeqCst);
        tokio::time::timeout(std::time::Duration::from_secs(30), writer.shutdown()).await.unwrap().unwrap();
        let writes = recorder.writes.lock().unwrap().clone();
        let all: Vec<u8> = writes.concat();
        let expected: String =
            std::iter::once("first\n".to_string()).chain((0..100).map(|n| format!("line {n}\n"))).collect();
        assert_eq!(String::from_utf8(all).unwrap(), expected);
        assert_eq!(writes.len(), 2, "one write for the first flush, one for the 100 handed over meanwhile");
    }

    #[tokio::test]
    async fn a_full_hand_over_makes_the_writer_wait_until_the_thread_takes_it() {
        let recorder = Recorder::default();
        let mut writer = ThreadWriter::spawn("test-writer", recorder.clone()).unwrap();
        recorder.held.store(true, std::sync::atomic::Ordering::SeqCst);
        let chunk = vec![b'x'; HANDOVER_CAPACITY];
        writer.write_all(&chunk).await.unwrap(); // taken by the thread, which blocks on the gate
        taken(&writer).await;
        writer.write_all(&chunk).await.unwrap(); // fills the hand-over
        let third = tokio::time::timeout(std::time::Duration::from_millis(200), writer.write_all(b"y")).await;
        assert!(third.is_err(), "a third write waits while the hand-over is full");
        recorder.held.store(false, std::sync::atomic::Ordering::SeqCst);
        tokio::time::timeout(std::time::Duration::from_secs(30), writer.write_all(b"y")).await.unwrap().unwrap();
        writer.shutdown().await.unwrap();
        let total: usize = recorder.writes.lock().unwrap().iter().map(Vec::len).sum();
        assert_eq!(total, 2 * HANDOVER_CAPACITY + 1);
    }

    #[tokio::test]
    async fn a_failed_write_fails_every_later_call() {
        let recorder = Recorder::default();
        recorder.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut writer = ThreadWriter::spawn("test-writer", recorder.clone()).unwrap();
        writer.write_all(b"lost\n").await.unwrap();
        let failed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                match writer.write_all(b"more\n").await {
                    Ok(()) => tokio::time::sleep(std::time::Duration::from_millis(5)).await,
                    Err(error) => return error,
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(failed.kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(writer.flush().await.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
        assert_eq!(writer.shutdown().await.unwrap_err().kind(), std::io::ErrorKind::BrokenPipe);
    }
}
