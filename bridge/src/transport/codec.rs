use bytes::BytesMut;
use tokio_util::codec::Decoder;

/// Default line cap. Real Codex lines exceed 1 MiB routinely (images, resume payloads, big diffs).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Capacity of the read buffer after an oversize line was dropped.
const READ_CHUNK: usize = 64 * 1024;

/// From this length on, a line taken out of the read buffer leaves with the buffer's allocation and
/// the rest is moved to a buffer of its own. A big line grows the buffer to its size (and more);
/// kept, that allocation would stay for the life of the stream, and while it is shared with the
/// line the line cannot take it over without a copy. A smaller line leaves the rest in place.
const KEPT_CAPACITY: usize = 1024 * 1024;

/// One unit read from a line-delimited stream. Bad input is an item, not an error, so a reader loop
/// reports it and keeps going.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame {
    /// A complete line: valid UTF-8, without its `\n` and one trailing `\r`.
    Line(String),
    /// A line longer than the cap. Its bytes were discarded; reading resumes after its newline.
    Oversize {
        /// The line's full length in bytes (excluding the newline).
        len: usize,
    },
    /// A complete line that is not valid UTF-8. Its bytes were discarded.
    InvalidUtf8 {
        /// The line's length in bytes.
        len: usize,
        /// How many leading bytes were valid UTF-8 (for diagnostics).
        valid_up_to: usize,
    },
    /// The stream ended inside a line; the partial line was discarded.
    TruncatedAtEof {
        /// How many bytes the unfinished line had (counting discarded oversize bytes).
        len: usize,
    },
}

/// Splits on `\n` only. `\r\n` is accepted (one trailing `\r` is stripped) and U+2028/U+2029 are
/// ordinary characters, unlike Node's `readline` (docs/peers/pipes.md#framing).
#[derive(Debug)]
pub struct LineCodec {
    /// Longest line accepted, in bytes, excluding the newline.
    max_line_bytes: usize,
    /// How far the current buffer has already been searched for `\n`, so a long line that arrives in
    /// many chunks is scanned once, not once per chunk.
    searched: usize,
    /// Bytes of an oversize line dropped so far; `Some` while skipping to the next newline.
    discarding: Option<usize>,
}

impl LineCodec {
    /// A codec that reports lines longer than `max_line_bytes` as [`Frame::Oversize`].
    pub fn new(max_line_bytes: usize) -> Self {
        Self { max_line_bytes, searched: 0, discarding: None }
    }

    fn finish_line(mut line: BytesMut) -> Frame {
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        let len = line.len();
        match String::from_utf8(Vec::from(line)) {
            Ok(s) => Frame::Line(s),
            Err(e) => Frame::InvalidUtf8 { len, valid_up_to: e.utf8_error().valid_up_to() },
        }
    }

    /// Drops the buffer's contents and its large allocation: after a huge line it would otherwise
    /// stay at the cap for the life of the stream. The fresh buffer is big enough for efficient
    /// reads (an empty one would make `FramedRead` read a byte at a time).
    fn release(buf: &mut BytesMut) {
        *buf = BytesMut::with_capacity(READ_CHUNK);
    }
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(dropped) = self.discarding {
            return Ok(match memchr_newline(buf) {
                Some(pos) => {
                    let _ = buf.split_to(pos + 1);
                    self.discarding = None;
                    self.searched = 0;
                    Some(Frame::Oversize { len: dropped + pos })
                }
                None => {
                    self.discarding = Some(dropped + buf.len());
                    Self::release(buf);
                    None
                }
            });
        }
        let searchable = buf.len().min(self.max_line_bytes + 1);
        match memchr_newline(&buf[self.searched..searchable]) {
            Some(offset) => {
                let pos = self.searched + offset;
                self.searched = 0;
                let mut line = buf.split_to(pos + 1);
                line.truncate(pos);
                if pos >= KEPT_CAPACITY {
                    // A big line: the rest moves to a buffer of its own, once, so the line owns the
                    // big allocation alone and becomes its `String` without a copy. Only after a
                    // big line: after a small one the rest stays where it is, or many small lines
                    // after one big read would each copy the whole remainder again.
                    let fresh = BytesMut::with_capacity(READ_CHUNK.max(buf.len()));
                    let rest = std::mem::replace(buf, fresh);
                    buf.extend_from_slice(&rest);
                }
                Ok(Some(Self::finish_line(line)))
            }
            None if buf.len() > self.max_line_bytes => {
                // The line is already over the cap: stop buffering and skip to its end, which may
                // already be in the buffer past the searched window.
                self.discarding = Some(0);
                self.searched = 0;
                self.decode(buf)
            }
            None => {
                self.searched = buf.len();
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Self::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        let pending = self.discarding.take().unwrap_or(0) + buf.len();
        self.searched = 0;
        buf.clear();
        Ok((pending > 0).then_some(Frame::TruncatedAtEof { len: pending }))
    }
}

fn memchr_newline(haystack: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', haystack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio_util::codec::FramedRead;

    async fn frames(input: &[u8], cap: usize, chunk: usize) -> Vec<Frame> {
        let chunks: Vec<std::io::Result<bytes::Bytes>> =
            input.chunks(chunk.max(1)).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
        let reader = tokio_util::io::StreamReader::new(futures::stream::iter(chunks));
        FramedRead::new(reader, LineCodec::new(cap)).map(|f| f.unwrap()).collect().await
    }

    fn line(s: &str) -> Frame {
        Frame::Line(s.to_string())
    }

    #[tokio::test]
    async fn splits_on_newline_only_and_strips_one_cr() {
        let input = "a\r\nb\u{2028}c\u{2029}\n\r\r\n\n".as_bytes();
        for chunk in [1, 2, 3, 64] {
            assert_eq!(
                frames(input, 1024, chunk).await,
                vec![line("a"), line("b\u{2028}c\u{2029}"), line("\r"), line("")],
                "chunk size {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn oversize_line_is_reported_and_the_stream_continues() {
        let mut input = b"first\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend(b"\nafter\n");
        for chunk in [1, 7, 16, 1000] {
            assert_eq!(
                frames(&input, 10, chunk).await,
                vec![line("first"), Frame::Oversize { len: 100 }, line("after")],
                "chunk size {chunk}"
            );
        }
    }

    #[test]
    fn small_lines_after_a_big_read_are_taken_without_moving_the_rest() {
        let big = KEPT_CAPACITY + 10;
        let small = 1000;
        let count = 3000;
        let mut input = vec![b'x'; big];
        input.push(b'\n');
        for _ in 0..count {
            input.extend(std::iter::repeat_n(b'y', small));
            input.push(b'\n');
        }
        let mut buf = BytesMut::from(&input[..]);
        let mut codec = LineCodec::new(DEFAULT_MAX_LINE_BYTES);
        assert_eq!(codec.decode(&mut buf).unwrap(), Some(Frame::Line("x".repeat(big))));
        // The big line took the first allocation; the rest was moved once, into a buffer its size.
        assert_eq!(buf.len(), count * (small + 1));
        assert!(buf.capacity() < input.len(), "the rest kept {} bytes of capacity", buf.capacity());
        for taken in 0..count {
            let before = buf.as_ptr();
            assert_eq!(codec.decode(&mut buf).unwrap(), Some(Frame::Line("y".repeat(small))));
            if !buf.is_empty() {
                // The same allocation, just past the line: nothing was copied.
                assert_eq!(buf.as_ptr(), before.wrapping_add(small + 1), "line {taken} moved the rest");
            }
        }
        assert!(buf.is_empty());
    }

    /// Serves `data` in reads as large as the caller's buffer allows, counting them.
    struct CountingReader {
        data: std::io::Cursor<Vec<u8>>,
        reads: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    }

    impl tokio::io::AsyncRead for CountingReader {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            std::pin::Pin::new(&mut self.data).poll_read(cx, buf)
        }
    }

    #[tokio::test]
    async fn skipping_an_oversize_line_reads_in_large_chunks() {
        let mut data = vec![b'x'; 8 << 20];
        data.extend(b"\nnext\n");
        let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let reader = CountingReader { data: std::io::Cursor::new(data), reads: reads.clone() };
        let frames: Vec<Frame> = FramedRead::new(reader, LineCodec::new(1024)).map(|f| f.unwrap()).collect().await;
        assert_eq!(frames, vec![Frame::Oversize { len: 8 << 20 }, line("next")]);
        let reads = reads.load(std::sync::atomic::Ordering::Relaxed);
        assert!(reads < 1000, "8 MiB took {reads} reads: the buffer must not shrink to a byte");
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_is_accepted() {
        assert_eq!(
            frames(b"12345\n123456\nok\n", 5, 3).await,
            vec![line("12345"), Frame::Oversize { len: 6 }, line("ok")]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_and_eof_mid_line_are_typed() {
        let input = b"ok\n\xff\xfeab\npartial";
        assert_eq!(
            frames(input, 64, 2).await,
            vec![line("ok"), Frame::InvalidUtf8 { len: 4, valid_up_to: 0 }, Frame::TruncatedAtEof { len: 7 },]
        );
        // EOF while skipping an oversize line counts the skipped bytes too.
        assert_eq!(frames(b"0123456789abc", 4, 3).await, vec![Frame::TruncatedAtEof { len: 13 }]);
    }

    #[tokio::test]
    async fn multibyte_characters_split_across_chunks_survive() {
        let text = "héllo wörld ✓ 🎉\n";
        assert_eq!(frames(text.as_bytes(), 1024, 1).await, vec![line(text.trim_end())]);
    }

    #[test]
    fn after_a_big_line_the_buffer_keeps_only_a_small_allocation() {
        let mut codec = LineCodec::new(64 << 20);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&vec![b'x'; 8 << 20]);
        buf.extend_from_slice(b"\n{\"next\"");
        let line = codec.decode(&mut buf).unwrap();
        assert!(matches!(&line, Some(Frame::Line(l)) if l.len() == 8 << 20));
        assert_eq!(&buf[..], b"{\"next\"", "what followed the line is kept");
        assert!(buf.capacity() <= KEPT_CAPACITY, "the buffer kept {} bytes of capacity", buf.capacity());
    }
}
