//! A sink that keeps entries in memory: for tests, and for collecting a turn before it goes to the
//! host's append-by-identity API.

use futures::future::BoxFuture;

use super::chain::Chain;
use super::entry::{Message, MessageEntry, SessionHeader};
use super::{AppendOutcome, PromptHistory, TranscriptError, TranscriptSink};

/// Entries held in a `Vec`, with the same idempotency and chaining rules as the file sink.
#[derive(Debug, Default)]
pub struct MemorySink {
    /// The header, when the caller gave one (the host writes its own).
    header: Option<SessionHeader>,
    /// Every entry appended, in order.
    entries: Vec<MessageEntry>,
    /// Identities present and the chain's end.
    chain: Chain,
    /// How often `sync` was called, so tests can check that a turn end syncs.
    syncs: usize,
}

impl MemorySink {
    /// An empty sink without a header.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty sink with a header.
    pub fn with_header(header: SessionHeader) -> Self {
        Self { header: Some(header), ..Self::default() }
    }

    /// The header, if any.
    pub fn header(&self) -> Option<&SessionHeader> {
        self.header.as_ref()
    }

    /// The entries appended so far, oldest first.
    pub fn entries(&self) -> &[MessageEntry] {
        &self.entries
    }

    /// How often [`TranscriptSink::sync`] was called.
    pub fn sync_count(&self) -> usize {
        self.syncs
    }

    /// Whether a message with this idempotency key is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.chain.contains_key(key)
    }

    /// Appends without a future; see [`TranscriptSink::append`].
    pub fn append_now(&mut self, messages: Vec<Message>) -> Vec<AppendOutcome> {
        let planned = self.chain.plan(messages);
        self.chain.commit(&planned.entries);
        self.entries.extend(planned.entries);
        planned.outcomes
    }
}

impl TranscriptSink for MemorySink {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<Vec<AppendOutcome>, TranscriptError>> {
        let outcomes = self.append_now(messages);
        Box::pin(async move { Ok(outcomes) })
    }

    fn sync(&mut self) -> BoxFuture<'_, Result<(), TranscriptError>> {
        self.syncs += 1;
        Box::pin(async { Ok(()) })
    }

    fn prompt_history(&self) -> PromptHistory {
        self.chain.prompts().clone()
    }
}
