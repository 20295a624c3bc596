//! The backend-neutral event model: every adapter turns its native notifications into [`Event`]s, and
//! every sink (transcript mirror, host, `clawbridge run --json`) consumes only these.
//!
//! The event types are wire data, defined once in `clawbridge_protocol::event` (the host protocol
//! carries them as they are) and re-exported here; this module adds what produces them, such as the
//! bounded accumulation of tool output.

pub use clawbridge_protocol::event::{
    CappedOutput, Event, LastCall, NativeMutation, Plan, PlanStep, PlanStepStatus, TerminalCause, TerminalKind,
    ToolCall, ToolFinish, ToolImage, ToolOutcome, TurnTerminal, Usage,
};

/// Default bytes kept from the start of a tool's output.
pub const DEFAULT_HEAD_BYTES: usize = 64 * 1024;
/// Default bytes kept from the end of a tool's output (where errors and summaries usually are).
pub const DEFAULT_TAIL_BYTES: usize = 64 * 1024;

/// Accumulates text of any size in bounded memory: the first `head` bytes and the last `tail` bytes
/// are kept, the middle is counted and dropped. A command that prints 1 GB costs about
/// `head + 2 * tail` bytes here.
#[derive(Clone, Debug)]
pub struct CappedText {
    /// Most bytes kept from the start.
    head_limit: usize,
    /// Most bytes kept from the end.
    tail_limit: usize,
    /// The start, up to `head_limit` bytes, cut at a character boundary.
    head: String,
    /// The newest bytes. It may grow to `2 * tail_limit` before its front is dropped, so dropping is
    /// amortised instead of a memmove on every small push.
    tail: String,
    /// Every byte pushed, to report how many were dropped.
    total: u64,
}

impl Default for CappedText {
    fn default() -> Self {
        Self::new(DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES)
    }
}

impl CappedText {
    /// Keeps at most `head` bytes from the start and `tail` bytes from the end.
    pub fn new(head: usize, tail: usize) -> Self {
        Self { head_limit: head, tail_limit: tail, head: String::new(), tail: String::new(), total: 0 }
    }

    /// Adds text at the end.
    pub fn push(&mut self, mut text: &str) {
        self.total = self.total.saturating_add(text.len() as u64);
        if self.tail.is_empty() && self.head.len() < self.head_limit {
            let room = self.head_limit - self.head.len();
            let cut = floor_char_boundary(text, room.min(text.len()));
            self.head.push_str(&text[..cut]);
            text = &text[cut..];
        }
        if text.is_empty() {
            return;
        }
        if text.len() >= self.tail_limit {
            // A big push replaces the tail entirely; only its end can survive.
            self.tail.clear();
            let start = ceil_char_boundary(text, text.len() - self.tail_limit);
            self.tail.push_str(&text[start..]);
            return;
        }
        self.tail.push_str(text);
        if self.tail.len() > self.tail_limit.saturating_mul(2) {
            self.trim_tail();
        }
    }

    /// Bytes pushed in total.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Bytes of memory the kept text currently occupies (its buffers' capacity).
    pub fn held_capacity(&self) -> usize {
        self.head.capacity() + self.tail.capacity()
    }

    /// The kept text and the count of dropped bytes.
    pub fn snapshot(&self) -> CappedOutput {
        let tail = &self.tail[ceil_char_boundary(&self.tail, self.tail.len().saturating_sub(self.tail_limit))..];
        let kept = self.head.len() as u64 + tail.len() as u64;
        let omitted = self.total.saturating_sub(kept);
        let mut text = String::with_capacity(self.head.len() + tail.len() + 64);
        text.push_str(&self.head);
        if omitted > 0 {
            text.push_str(&format!("\n[… {omitted} bytes omitted …]\n"));
        }
        text.push_str(tail);
        CappedOutput { text, omitted_bytes: omitted, images: Vec::new() }
    }

    /// Consumes the accumulator, returning what [`snapshot`](Self::snapshot) would.
    pub fn finish(self) -> CappedOutput {
        self.snapshot()
    }

    fn trim_tail(&mut self) {
        let start = ceil_char_boundary(&self.tail, self.tail.len() - self.tail_limit);
        self.tail.drain(..start);
    }
}

/// The largest character boundary at or below `at` (`str::floor_char_boundary` is newer than our MSRV).
fn floor_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary at or above `at`.
fn ceil_char_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        let mut text = CappedText::new(8, 8);
        text.push("hello ");
        text.push("world");
        let out = text.snapshot();
        assert_eq!(out, CappedOutput { text: "hello world".into(), omitted_bytes: 0, images: Vec::new() });
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let mut text = CappedText::new(4, 4);
        for chunk in ["abcd", "efgh", "ijkl", "mnop"] {
            text.push(chunk);
        }
        let out = text.finish();
        assert_eq!(out.omitted_bytes, 8);
        assert_eq!(out.text, "abcd\n[… 8 bytes omitted …]\nmnop");
    }

    #[test]
    fn never_splits_a_character() {
        let mut text = CappedText::new(5, 5);
        text.push(&"é".repeat(100));
        let out = text.snapshot();
        // 5-byte caps hold two 2-byte characters each.
        assert!(out.text.starts_with("éé\n"), "{:?}", out.text);
        assert!(out.text.ends_with("\néé"), "{:?}", out.text);
        assert_eq!(out.omitted_bytes, 200 - 8);
    }

    #[test]
    fn a_gigabyte_in_big_chunks_costs_bounded_memory() {
        let chunk = "x".repeat(1024 * 1024);
        let mut text = CappedText::default();
        for _ in 0..1024 {
            text.push(&chunk);
        }
        text.push("THE END");
        assert!(text.held_capacity() <= DEFAULT_HEAD_BYTES + 2 * DEFAULT_TAIL_BYTES + 1024 * 1024);
        let out = text.finish();
        assert_eq!(text_total(&out), 1024 * 1024 * 1024 + 7);
        assert!(out.text.ends_with("THE END"));
        assert!(out.text.len() < DEFAULT_HEAD_BYTES + DEFAULT_TAIL_BYTES + 64);
    }

    #[test]
    fn many_small_pushes_stay_bounded() {
        let mut text = CappedText::new(1024, 1024);
        let line = "0123456789abcdef\n";
        for _ in 0..200_000 {
            text.push(line);
        }
        // Buffers grow by doubling, so allow twice the kept bytes, never anything like the 3.4 MB pushed.
        assert!(text.held_capacity() <= 2 * (1024 + 2 * 1024 + 17), "{}", text.held_capacity());
        let out = text.snapshot();
        assert_eq!(out.omitted_bytes + out.text.len() as u64 - marker_len(&out), 200_000 * 17);
        assert!(out.text.ends_with(line));
    }

    fn marker_len(out: &CappedOutput) -> u64 {
        format!("\n[… {} bytes omitted …]\n", out.omitted_bytes).len() as u64
    }

    fn text_total(out: &CappedOutput) -> u64 {
        out.omitted_bytes + out.text.len() as u64 - marker_len(out)
    }
}
