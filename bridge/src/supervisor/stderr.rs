use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

/// How much of a child's stderr is kept for error reports.
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 64 * 1024;

/// Longest stderr line forwarded to tracing; longer lines are cut (the tail keeps the raw bytes).
const MAX_LOGGED_LINE: usize = 2048;

/// The last bytes a child wrote to stderr. Cheap to clone; every clone sees the same buffer.
#[derive(Clone, Debug)]
pub struct StderrTail {
    /// The newest `capacity` bytes, oldest first.
    ring: Arc<Mutex<Ring>>,
    /// Becomes true when the drain reached EOF (or failed), so the tail is final.
    done: watch::Receiver<bool>,
}

#[derive(Debug)]
struct Ring {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Everything ever written, to tell a reader how much was dropped.
    total: u64,
}

impl StderrTail {
    /// Starts draining `stream` into a ring of `capacity` bytes and into tracing (target
    /// `clawbridge::child_stderr`, level debug), tagged with `label`. Draining never stops before
    /// EOF, so a chatty child can never block on a full stderr pipe.
    pub fn drain<R>(stream: R, capacity: usize, label: String) -> StderrTail
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let ring =
            Arc::new(Mutex::new(Ring { bytes: VecDeque::with_capacity(capacity.min(8192)), capacity, total: 0 }));
        let (done_tx, done) = watch::channel(false);
        tokio::spawn(drain_task(stream, ring.clone(), label, done_tx));
        StderrTail { ring, done }
    }

    /// The kept bytes as text (lossy), starting at a line boundary when bytes were dropped.
    pub fn snapshot(&self) -> String {
        let ring = self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (a, b) = ring.bytes.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let start =
            if ring.total > ring.bytes.len() as u64 { memchr::memchr(b'\n', &bytes).map_or(0, |p| p + 1) } else { 0 };
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }

    /// Bytes currently held (at most the capacity).
    pub fn held_bytes(&self) -> usize {
        self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner).bytes.len()
    }

    /// Bytes the child wrote to stderr in total.
    pub fn total_bytes(&self) -> u64 {
        self.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner).total
    }

    /// Waits until the drain reached EOF, or `limit` passed (a grandchild may hold stderr open).
    pub async fn settle(&self, limit: std::time::Duration) {
        let mut done = self.done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }
}

async fn drain_task<R: AsyncRead + Unpin>(
    mut stream: R,
    ring: Arc<Mutex<Ring>>,
    label: String,
    done: watch::Sender<bool>,
) {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(child = %label, error = %e, "reading the child's stderr failed");
                break;
            }
        };
        let data = &chunk[..n];
        {
            let mut ring = ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            ring.total += n as u64;
            let keep = data.len().min(ring.capacity);
            let overflow = (ring.bytes.len() + keep).saturating_sub(ring.capacity);
            ring.bytes.drain(..overflow);
            ring.bytes.extend(&data[data.len() - keep..]);
        }
        if tracing::enabled!(target: "clawbridge::child_stderr", tracing::Level::DEBUG) {
            log_lines(&label, &mut partial, data);
        }
    }
    if !partial.is_empty() {
        tracing::debug!(target: "clawbridge::child_stderr", child = %label, "{}", String::from_utf8_lossy(&partial));
    }
    let _ = done.send(true);
}

fn log_lines(label: &str, partial: &mut Vec<u8>, mut data: &[u8]) {
    while let Some(pos) = memchr::memchr(b'\n', data) {
        if partial.len() < MAX_LOGGED_LINE {
            let room = MAX_LOGGED_LINE - partial.len();
            partial.extend_from_slice(&data[..pos.min(room)]);
        }
        tracing::debug!(target: "clawbridge::child_stderr", child = %label, "{}", String::from_utf8_lossy(partial));
        partial.clear();
        data = &data[pos + 1..];
    }
    let room = MAX_LOGGED_LINE.saturating_sub(partial.len());
    partial.extend_from_slice(&data[..data.len().min(room)]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn keeps_only_the_newest_bytes_starting_at_a_line() {
        let (mut w, r) = tokio::io::duplex(1024);
        let tail = StderrTail::drain(r, 100, "test".into());
        for i in 0..1000 {
            w.write_all(format!("line {i}\n").as_bytes()).await.unwrap();
        }
        drop(w);
        tail.settle(std::time::Duration::from_secs(5)).await;
        let text = tail.snapshot();
        assert!(text.len() <= 100);
        assert!(text.starts_with("line "), "cut at a line boundary: {text:?}");
        assert!(text.ends_with("line 999\n"));
        assert!(tail.held_bytes() <= 100);
        assert_eq!(tail.total_bytes(), (0..1000).map(|i: i32| format!("line {i}\n").len() as u64).sum::<u64>());
    }
}
