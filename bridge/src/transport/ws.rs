//! A WebSocket as the same framed line pipeline a pipe feeds: each message the peer sends becomes
//! one [`Frame`], and each line our writer task writes goes out as one text message. The rpc peer
//! above reads frames and writes lines as it does on stdio and never learns which transport it has
//! (docs/peers/pipes.md#websocket-frames).
//!
//! Unlike a pipe, a WebSocket can go silent without ending: a daemon behind `codex app-server proxy`
//! that dies is only noticed by the proxy when it next copies bytes to it, and a far host that drops
//! off the network sends no FIN. So the reading half pings the peer whenever the connection has been
//! silent for a while, and ends the stream when a ping goes unanswered ([`Keepalive`]).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::{SinkExt, Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};
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

/// When the reading half pings a silent peer, and how long it waits for an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Silence (no message either way the reader can see) after which a ping is sent. It bounds how
    /// late a peer that vanished without a FIN is noticed, together with `timeout`.
    pub interval: Duration,
    /// How long a ping may go without any message coming back (a pong, or anything else) before the
    /// peer is taken as gone.
    pub timeout: Duration,
}

impl Keepalive {
    /// Every connection's: a ping after 5 s of silence costs a few bytes, and 20 s is long for a
    /// pong, which the peer's WebSocket layer sends without waiting for its own work.
    pub const DEFAULT: Keepalive = Keepalive { interval: Duration::from_secs(5), timeout: Duration::from_secs(20) };
}

/// The socket both halves use. A lock rather than a split: the reading half must be able to send a
/// ping, and every use is one synchronous poll, never held across an `.await`.
struct Shared<S> {
    /// The socket itself.
    socket: WebSocketStream<S>,
    /// Whether the writing half is waiting for the socket to take its bytes. Then it has a waker
    /// registered for writability that a ping's poll would replace, and the writer's own timeout
    /// watches the peer anyway, so the reading half sends no ping.
    writer_waiting: bool,
}

type SharedSocket<S> = Arc<Mutex<Shared<S>>>;

fn lock<S>(shared: &SharedSocket<S>) -> MutexGuard<'_, Shared<S>> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Splits an open WebSocket into the frame source the rpc reader reads and the byte sink its
/// writer task writes lines into, with the default [`Keepalive`].
pub fn split_websocket<S>(socket: WebSocketStream<S>) -> (WsFrames<S>, WsLineWriter<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    split_websocket_with(socket, Keepalive::DEFAULT)
}

/// [`split_websocket`] with the given keepalive.
pub fn split_websocket_with<S>(socket: WebSocketStream<S>, keepalive: Keepalive) -> (WsFrames<S>, WsLineWriter<S>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let shared = Arc::new(Mutex::new(Shared { socket, writer_waiting: false }));
    (
        WsFrames {
            shared: shared.clone(),
            state: ReadState::Open,
            keepalive,
            timer: Box::pin(tokio::time::sleep(keepalive.interval)),
            ping: PingState::Idle,
        },
        WsLineWriter { shared, pending: Vec::new(), max_pending: MAX_OUTGOING_MESSAGE_BYTES },
    )
}

/// Where the keepalive stands between two messages from the peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PingState {
    /// No ping is out; the timer runs to the next one.
    Idle,
    /// A ping is out, and some of it may still sit in tungstenite's buffer; the timer runs to the
    /// answer's deadline.
    Sent {
        /// Whether the ping still has to be flushed.
        unflushed: bool,
    },
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
    /// The socket, shared with the writing half.
    shared: SharedSocket<S>,
    /// Whether a fatal problem or the end was already seen.
    state: ReadState,
    /// When to ping and how long to wait.
    keepalive: Keepalive,
    /// The next ping's time, or the deadline of the one that is out.
    timer: Pin<Box<Sleep>>,
    /// Whether a ping is out.
    ping: PingState,
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
            let polled = lock(&this.shared).socket.poll_next_unpin(cx);
            let next = match polled {
                Poll::Ready(Some(next)) => next,
                Poll::Ready(None) => {
                    this.state = ReadState::Done;
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    let gone = ready!(this.poll_keepalive(cx));
                    this.state = ReadState::Done;
                    return Poll::Ready(Some(Err(gone)));
                }
            };
            // Anything from the peer, a pong included, shows it is there.
            this.ping = PingState::Idle;
            this.timer.as_mut().reset(Instant::now() + this.keepalive.interval);
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

impl<S> WsFrames<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    /// Called while the peer is silent: sends a ping when the interval has passed, and is ready
    /// (with the error that ends the stream) only when a ping went unanswered for the timeout.
    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        loop {
            if let PingState::Sent { unflushed: true } = self.ping {
                let mut shared = lock(&self.shared);
                if !shared.writer_waiting {
                    // Pending leaves this task's waker for writability: it comes back to finish.
                    if let Poll::Ready(flushed) = shared.socket.poll_flush_unpin(cx) {
                        if let Err(error) = flushed {
                            return Poll::Ready(ws_io(error));
                        }
                        self.ping = PingState::Sent { unflushed: false };
                    }
                }
            }
            ready!(self.timer.as_mut().poll(cx));
            if let PingState::Sent { .. } = self.ping {
                let why = format!(
                    "the WebSocket peer did not answer a ping within {} s: it is gone",
                    self.keepalive.timeout.as_secs_f32()
                );
                return Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, why));
            }
            let now = Instant::now();
            let mut shared = lock(&self.shared);
            if shared.writer_waiting {
                // The writer is blocked on the peer and its own timeout ends a stalled one.
                drop(shared);
                self.timer.as_mut().reset(now + self.keepalive.interval);
                continue;
            }
            match shared.socket.poll_ready_unpin(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(error)) => return Poll::Ready(ws_io(error)),
                Poll::Pending => {
                    drop(shared);
                    self.timer.as_mut().reset(now + self.keepalive.interval);
                    continue;
                }
            }
            if let Err(error) = shared.socket.start_send_unpin(Message::Ping(Vec::new().into())) {
                return Poll::Ready(ws_io(error));
            }
            drop(shared);
            self.ping = PingState::Sent { unflushed: true };
            self.timer.as_mut().reset(now + self.keepalive.timeout);
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
    /// The socket, shared with the reading half.
    shared: SharedSocket<S>,
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
        let mut shared = lock(&this.shared);
        // Nothing is taken before the socket can take a message: that is the backpressure.
        ready!(writer_poll(&mut shared, |socket| socket.poll_ready_unpin(cx))).map_err(ws_io)?;
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
        shared.socket.start_send_unpin(Message::text(line)).map_err(ws_io)?;
        Poll::Ready(Ok(end + 1))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        writer_poll(&mut lock(&self.get_mut().shared), |socket| socket.poll_flush_unpin(cx)).map_err(ws_io)
    }

    /// Sends a close frame: the peer sees the connection end as a child sees stdin EOF.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match ready!(writer_poll(&mut lock(&self.get_mut().shared), |socket| socket.poll_close_unpin(cx))) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(error) => Poll::Ready(Err(ws_io(error))),
        }
    }
}

/// One poll of the socket by the writing half, noting whether it now waits for the peer (see
/// [`Shared::writer_waiting`]).
fn writer_poll<S, T>(
    shared: &mut Shared<S>,
    poll: impl FnOnce(&mut WebSocketStream<S>) -> Poll<Result<T, WsError>>,
) -> Poll<Result<T, WsError>> {
    let polled = poll(&mut shared.socket);
    shared.writer_waiting = polled.is_pending();
    polled
}

#[cfg(test)]
mod tests;
