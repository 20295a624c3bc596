//! The block the wrapper reads on stdin before the agent's own stream: its environment, which
//! must not travel on a command line (every user of the far side sees argv in `ps`; ssh forwards
//! no environment without server configuration).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::AsyncWrite;

/// The largest environment block sent: the wrapper reads it a byte at a time (as `sh`'s `read`
/// must on a pipe), and a settings block is a few kilobytes.
pub const MAX_PREAMBLE_BYTES: usize = 256 << 10;

/// The bytes written to the launcher's stdin first. Holds credentials: its `Debug` shows only its size.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StdinPreamble(Vec<u8>);

impl StdinPreamble {
    /// A block of `bytes`.
    pub fn new(bytes: Vec<u8>) -> StdinPreamble {
        StdinPreamble(bytes)
    }

    /// Its bytes (for tests and the writer).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for StdinPreamble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StdinPreamble({} bytes)", self.0.len())
    }
}

/// A writer that sends a preamble before the first byte written through it (or at flush or
/// shutdown, so an agent that is never written to still gets its environment, then its EOF).
#[derive(Debug)]
pub struct PrefixedWriter<W> {
    /// What is still to go first; emptied as it is written.
    prefix: Vec<u8>,
    /// How much of `prefix` is written.
    written: usize,
    /// The stream itself.
    inner: W,
}

impl<W: AsyncWrite + Unpin> PrefixedWriter<W> {
    /// `inner`, with `preamble` going first.
    pub fn new(inner: W, preamble: StdinPreamble) -> Self {
        PrefixedWriter { prefix: preamble.0, written: 0, inner }
    }

    /// Writes what is left of the prefix.
    fn poll_prefix(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.prefix.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.prefix[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        if !self.prefix.is_empty() {
            // Credentials need not stay in memory once they are in the pipe.
            self.prefix.fill(0);
            self.prefix = Vec::new();
            self.written = 0;
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for PrefixedWriter<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_prefix(cx))?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_prefix(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_prefix(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn the_preamble_goes_before_the_first_write_and_once() {
        let mut writer = PrefixedWriter::new(Vec::new(), StdinPreamble::new(b"A=1\n\n".to_vec()));
        writer.write_all(b"{\"id\":1}\n").await.unwrap();
        writer.write_all(b"{\"id\":2}\n").await.unwrap();
        assert_eq!(writer.inner, b"A=1\n\n{\"id\":1}\n{\"id\":2}\n");
    }

    #[tokio::test]
    async fn a_stream_closed_unwritten_still_gets_the_preamble() {
        let mut writer = PrefixedWriter::new(Vec::new(), StdinPreamble::new(b"\n".to_vec()));
        writer.shutdown().await.unwrap();
        assert_eq!(writer.inner, b"\n");
    }

    #[test]
    fn debug_shows_no_value() {
        let shown = format!("{:?}", StdinPreamble::new(b"OPENAI_API_KEY=sk-secret\n\n".to_vec()));
        assert!(!shown.contains("sk-secret"), "{shown}");
    }
}
