//! A child's stdout and stdin as one byte stream, for a protocol that needs a duplex (a WebSocket
//! handshake over `codex app-server proxy`, which copies its stdio to a daemon's socket).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The write half: the child's stdin (or a writer in front of it).
pub type StdinWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// Where the stdin half lives, shared with its [`StdinCloser`]; `None` once closed.
type SharedStdin = Arc<Mutex<Option<StdinWriter>>>;

/// Reads from the child's stdout and writes to its stdin. Shutting it down closes the stdin pipe
/// for real, so the child sees end of input (a pipe's own `poll_shutdown` does nothing); so does
/// its [`StdinCloser`], because a WebSocket never shuts its stream down, and keeps it (and so the
/// pipe) until both of its halves are dropped.
pub struct ChildDuplex<R> {
    /// The child's stdout.
    reader: R,
    /// The child's stdin.
    writer: SharedStdin,
}

impl<R> std::fmt::Debug for ChildDuplex<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildDuplex").field("stdin_open", &lock(&self.writer).is_some()).finish_non_exhaustive()
    }
}

/// Closes the child's stdin from outside the stream (the connection's shutdown, after the
/// WebSocket's close frame went out).
#[derive(Clone)]
pub struct StdinCloser(SharedStdin);

impl std::fmt::Debug for StdinCloser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StdinCloser")
    }
}

impl StdinCloser {
    /// Drops the stdin pipe: the child reads its end; later writes through the stream fail.
    pub fn close(&self) {
        drop(lock(&self.0).take());
    }
}

/// The guard, whatever a panicking holder left (a writer is only ever replaced by `None`).
fn lock(writer: &SharedStdin) -> MutexGuard<'_, Option<StdinWriter>> {
    writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<R> ChildDuplex<R> {
    /// The two pipes as one stream, and the handle that closes the stdin half.
    pub fn new(reader: R, writer: StdinWriter) -> (Self, StdinCloser) {
        let writer = Arc::new(Mutex::new(Some(writer)));
        (ChildDuplex { reader, writer: writer.clone() }, StdinCloser(writer))
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for ChildDuplex<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().reader).poll_read(cx, buf)
    }
}

fn closed() -> io::Error {
    io::Error::from(io::ErrorKind::BrokenPipe)
}

impl<R: Unpin> AsyncWrite for ChildDuplex<R> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match lock(&self.writer).as_mut() {
            Some(writer) => Pin::new(writer).poll_write(cx, buf),
            None => Poll::Ready(Err(closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match lock(&self.writer).as_mut() {
            Some(writer) => Pin::new(writer).poll_flush(cx),
            None => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut writer = lock(&self.writer);
        let Some(open) = writer.as_mut() else { return Poll::Ready(Ok(())) };
        let result = ready!(Pin::new(open).poll_shutdown(cx));
        *writer = None;
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn reads_one_pipe_writes_the_other_and_shutdown_ends_the_writers_stream() {
        let (mut far_out, near_in) = tokio::io::duplex(64);
        let (near_out, mut far_in) = tokio::io::duplex(64);
        let (mut duplex, _closer) = ChildDuplex::new(near_in, Box::new(near_out));
        far_out.write_all(b"from the child").await.unwrap();
        let mut read = [0u8; 14];
        duplex.read_exact(&mut read).await.unwrap();
        assert_eq!(&read, b"from the child");
        duplex.write_all(b"to the child").await.unwrap();
        duplex.shutdown().await.unwrap();
        let mut written = Vec::new();
        // Ends only because the writer was dropped: the far side sees EOF.
        far_in.read_to_end(&mut written).await.unwrap();
        assert_eq!(written, b"to the child");
        assert_eq!(duplex.write(b"more").await.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }

    #[tokio::test]
    async fn the_closer_ends_the_childs_input_while_the_stream_is_still_held() {
        let (_far_out, near_in) = tokio::io::duplex(64);
        let (near_out, mut far_in) = tokio::io::duplex(64);
        let (mut duplex, closer) = ChildDuplex::new(near_in, Box::new(near_out));
        duplex.write_all(b"last words").await.unwrap();
        closer.close();
        let mut written = Vec::new();
        far_in.read_to_end(&mut written).await.unwrap();
        assert_eq!(written, b"last words");
        assert_eq!(duplex.write(b"more").await.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}
