//! Line-delimited framing over a byte stream: a decoder that turns bytes into [`Frame`]s without ever
//! failing on peer input, and a writer task that sends whole lines with backpressure
//! (docs/peers/pipes.md#framing, #oversize-lines, #backpressure). A WebSocket ([`ws`]) feeds the
//! same frames and takes the same lines, so the layers above never know which transport they have.

pub mod bearer;
pub mod child_duplex;
mod codec;
pub mod endpoint;
pub mod thread_writer;
mod writer;
pub mod ws;

pub use codec::{DEFAULT_MAX_LINE_BYTES, Frame, LineCodec};
pub use writer::{
    DEFAULT_WRITE_TIMEOUT, LineSender, ReadHold, ReadHoldGuard, SendError, WRITE_TIMEOUT_ENV, agent_write_timeout,
    spawn_line_writer, spawn_line_writer_with_timeout,
};

use tokio::io::AsyncRead;
use tokio_util::codec::FramedRead;

/// A stream of [`Frame`]s read from `reader`, with lines capped at `max_line_bytes`.
///
/// The codec never returns a decode error for bad input, so the stream only ends at EOF (or an I/O
/// error): an oversize line does not make `FramedRead` yield `None` early.
pub fn frame_reader<R: AsyncRead>(reader: R, max_line_bytes: usize) -> FramedRead<R, LineCodec> {
    // A pipe holds 64 KiB; reading it in one call instead of eight 8 KiB ones (FramedRead's default)
    // saves syscalls and wake-ups of the writer on busy streams.
    FramedRead::with_capacity(reader, LineCodec::new(max_line_bytes), READ_CAPACITY)
}

/// The read buffer's starting capacity.
const READ_CAPACITY: usize = 64 * 1024;
