//! The line codec against a model of it: any bytes, cut into any chunks, with any line cap, must
//! give exactly the frames that splitting the whole input on `\n` gives, and never an error.
//!
//! Input: byte 0 picks the cap (0..=63 bytes, so oversize lines are common), byte 1 seeds the chunk
//! sizes, the rest is the stream.

#![no_main]

use bytes::BytesMut;
use clawbridge_bridge::transport::{Frame, LineCodec};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&[cap, seed], stream)) = data.split_first_chunk::<2>() else { return };
    let cap = usize::from(cap % 64);
    assert_eq!(decode_in_chunks(stream, cap, seed), model(stream, cap));
});

/// What the codec yields for `stream` arriving in pseudo-random chunks, then EOF.
fn decode_in_chunks(stream: &[u8], cap: usize, seed: u8) -> Vec<Frame> {
    let mut codec = LineCodec::new(cap);
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut state = u32::from(seed) | 1;
    let mut rest = stream;
    while !rest.is_empty() {
        // xorshift: chunk sizes 1..=16, with the occasional big one.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let size = if state % 7 == 0 { 256 } else { (state % 16 + 1) as usize };
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).expect("the codec never fails on input") {
            frames.push(frame);
        }
    }
    while let Some(frame) = codec.decode_eof(&mut buf).expect("the codec never fails at EOF") {
        frames.push(frame);
        assert!(frames.len() <= stream.len() + 1, "decode_eof must end");
    }
    frames
}

/// The frames by definition: split on `\n`; a line longer than `cap` (counting a trailing `\r`) is
/// oversize; otherwise one trailing `\r` is stripped and the rest must be UTF-8; a non-empty
/// unterminated tail is truncated at EOF.
fn model(stream: &[u8], cap: usize) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut parts: Vec<&[u8]> = stream.split(|&b| b == b'\n').collect();
    let tail = parts.pop().unwrap_or_default();
    for line in parts {
        if line.len() > cap {
            frames.push(Frame::Oversize { len: line.len() });
            continue;
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        frames.push(match std::str::from_utf8(line) {
            Ok(text) => Frame::Line(text.to_string()),
            Err(e) => Frame::InvalidUtf8 { len: line.len(), valid_up_to: e.valid_up_to() },
        });
    }
    if !tail.is_empty() {
        frames.push(Frame::TruncatedAtEof { len: tail.len() });
    }
    frames
}
