//! A WebSocket as the same framed line pipeline a pipe feeds: each message the peer sends becomes
//! one [`Frame`], and each line our writer task writes goes out as one text message. The rpc peer
//! above reads frames and writes lines as it does on stdio and never learns which transport it has
//! (docs/peers/pipes.md#websocket-frames).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use futures::stream::{SplitSink, SplitStream};
use futures::{Sink, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::Frame;

/// The most bytes of one outgoing line held while its newline has not been written yet: our own
/// lines are whole JSON values, so this only bounds a writer that misbehaves.
pub const MAX_OUTGOING_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// The tungstenite limits for a peer whose messages are capped at `max_message_bytes`: one message
/// and one frame of it are both held to the line cap, so no message larger than the cap is ever
/// buffered.
pub fn ws_config(max_message_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(Some(max_message_bytes)).max_frame_size(Some(max_message_bytes))
}

/// Splits an open WebSocket into the frame source the rpc reader reads and the byte sink its
/// writer task writes lines into.
pub fn split_websocket<S>(socket: WebSocketStream<S>) -> (WsFrames<S>, WsLineWriter<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (sink, stream) = socket.split();
    (
        WsFrames { inner: stream, state: ReadState::Open },
        WsLineWriter { sink, pending: Vec::new(), max_pending: MAX_OUTGOING_MESSAGE_BYTES },
    )
}

/// Where the frame source stands.
#[derive(Debug)]
enum ReadState {
    /// Messages are read.
    Open,
    /// A problem was reported for a message the protocol cannot skip (over the cap, a text
    /// message that is not UTF-8): the connection cannot go on, and this error ends it next.
    FailNext(String),
    /// The stream has ended; it stays ended.
    Done,
}

/// The peer's messages as [`Frame`]s, in order. Ends (`None`) when the peer closes the connection,
/// however it does it (a close frame, or the socket closing under it), as EOF ends a pipe.
pub struct WsFrames<S> {
    /// The read half of the socket.
    inner: SplitStream<WebSocketStream<S>>,
    /// Whether a fatal problem or the end was already seen.
    state: ReadState,
}

impl<S> std::fmt::Debug for WsFrames<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsFrames").field("state", &self.state).finish_non_exhaustive()
    }
}

impl<S> Stream for WsFrames<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Item = io::Result<Frame>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            match std::mem::replace(&mut this.state, ReadState::Open) {
                ReadState::Open => {}
                ReadState::FailNext(why) => {
                    this.state = ReadState::Done;
                    return Poll::Ready(Some(Err(io::Error::new(io::ErrorKind::InvalidData, why))));
                }
                ReadState::Done => {
                    this.state = ReadState::Done;
                    return Poll::Ready(None);
                }
            }
            let Some(next) = ready!(this.inner.poll_next_unpin(cx)) else {
                this.state = ReadState::Done;
                return Poll::Ready(None);
            };
            match classify(next) {
                Read::Frame(frame) => return Poll::Ready(Some(Ok(frame))),
                Read::Skip => {}
                Read::FatalProblem(frame, why) => {
                    this.state = ReadState::FailNext(why);
                    return Poll::Ready(Some(Ok(frame)));
                }
                Read::End => {
                    this.state = ReadState::Done;
                    return Poll::Ready(None);
                }
                Read::Failed(error) => {
                    this.state = ReadState::Done;
                    return Poll::Ready(Some(Err(error)));
                }
            }
        }
    }
}

/// What one read from tungstenite means for the line pipeline.
enum Read {
    /// A frame to deliver; reading goes on.
    Frame(Frame),
    /// Control traffic (ping, pong) tungstenite answers itself.
    Skip,
    /// A problem to report, after which the connection cannot go on.
    FatalProblem(Frame, String),
    /// The peer closed the connection.
    End,
    /// Reading failed.
    Failed(io::Error),
}

fn classify(next: Result<Message, WsError>) -> Read {
    match next {
        Ok(Message::Text(text)) => Read::Frame(Frame::Line(text.as_str().to_owned())),
        // A binary message is read as a line's bytes would be: JSON in UTF-8 is still a message,
        // anything else is the problem a line with those bytes would be.
        Ok(Message::Binary(bytes)) => match std::str::from_utf8(&bytes) {
            Ok(text) => Read::Frame(Frame::Line(text.to_owned())),
            Err(error) => Read::Frame(Frame::InvalidUtf8 { len: bytes.len(), valid_up_to: error.valid_up_to() }),
        },
        Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => Read::Skip,
        Ok(Message::Close(_)) => Read::End,
        // The cap is checked on the frame's header, before its payload is read: the payload is
        // still in the socket, so nothing after it can be read as a message.
        Err(WsError::Capacity(CapacityError::MessageTooLong { size, max_size })) => Read::FatalProblem(
            Frame::Oversize { len: size },
            format!(
                "a WebSocket message of {size} bytes was over the {max_size}-byte cap; the connection cannot skip it"
            ),
        ),
        Err(WsError::Utf8(why)) => Read::FatalProblem(
            Frame::InvalidUtf8 { len: 0, valid_up_to: 0 },
            format!("a WebSocket text message was not UTF-8 ({why}); the connection cannot go on"),
        ),
        // A peer that goes away without a closing handshake (a killed process) is EOF, as on a pipe.
        Err(
            WsError::ConnectionClosed
            | WsError::AlreadyClosed
            | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake),
        ) => Read::End,
        Err(WsError::Io(error)) if error.kind() == io::ErrorKind::UnexpectedEof => Read::End,
        Err(WsError::Io(error)) => Read::Failed(error),
        Err(other) => Read::Failed(io::Error::other(other)),
    }
}

/// The byte sink the line writer task writes into: each `\n`-terminated line becomes one text
/// message. Backpressure is the socket's: a peer that stops reading fills the socket buffer, the
/// sink stops accepting, and the writer task's write timeout ends the connection as a stalled
/// peer, as on a pipe.
pub struct WsLineWriter<S> {
    /// The write half of the socket.
    sink: SplitSink<WebSocketStream<S>, Message>,
    /// The line being assembled until its newline arrives (the writer may hand a line over in
    /// pieces).
    pending: Vec<u8>,
    /// The longest line held in `pending`.
    max_pending: usize,
}

impl<S> std::fmt::Debug for WsLineWriter<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsLineWriter").field("pending", &self.pending.len()).finish_non_exhaustive()
    }
}

fn ws_io(error: WsError) -> io::Error {
    match error {
        WsError::Io(error) => error,
        WsError::ConnectionClosed | WsError::AlreadyClosed => io::Error::from(io::ErrorKind::BrokenPipe),
        other => io::Error::other(other),
    }
}

impl<S> AsyncWrite for WsLineWriter<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Nothing is taken before the socket can take a message: that is the backpressure.
        ready!(Pin::new(&mut this.sink).poll_ready(cx)).map_err(ws_io)?;
        let end = memchr::memchr(b'\n', buf);
        let piece = &buf[..end.unwrap_or(buf.len())];
        if this.pending.len() + piece.len() > this.max_pending {
            let why = format!("an outgoing line was over {} bytes", this.max_pending);
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, why)));
        }
        this.pending.extend_from_slice(piece);
        let Some(end) = end else { return Poll::Ready(Ok(buf.len())) };
        let line = String::from_utf8(std::mem::take(&mut this.pending))
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "an outgoing line was not UTF-8"))?;
        Pin::new(&mut this.sink).start_send(Message::text(line)).map_err(ws_io)?;
        Poll::Ready(Ok(end + 1))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().sink).poll_flush(cx).map_err(ws_io)
    }

    /// Sends a close frame: the peer sees the connection end as a child sees stdin EOF.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(Pin::new(&mut self.get_mut().sink).poll_close(cx)) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(error) => Poll::Ready(Err(ws_io(error))),
        }
    }
}

#[cfg(test)]
mod tests;
