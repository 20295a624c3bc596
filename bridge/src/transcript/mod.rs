//! The transcript mirror: normalized events of a turn become OpenClaw v4 session entries, appended
//! to a sink by stable identity so a retried or re-run mirror never duplicates a row
//! (docs/peers/openclaw.md#duplicated-transcript-rows).
//!
//! [`TranscriptMirror`] turns one turn's events into [`Message`]s, each carrying its idempotency key;
//! a [`TranscriptSink`] chains them (`id`, `parentId`, timestamp) and skips keys it already holds.
//! [`JsonlSink`] writes a crash-safe JSONL file for standalone runs; [`MemorySink`] is for tests and
//! for collecting a turn before handing it to the host's append-by-identity API.

mod chain;
pub mod entry;
mod jsonl;
mod memory;
mod mirror;

use std::path::PathBuf;

use futures::future::BoxFuture;

pub use entry::Message;
pub use entry::{
    AssistantMessage, ContentBlock, Cost, Entry, MessageEntry, SESSION_VERSION, SessionHeader, StopReason,
    ToolResultMessage, TranscriptUsage, UserMessage,
};
pub use jsonl::JsonlSink;
pub use memory::MemorySink;
pub use mirror::{EntryRole, ModelLabel, TranscriptMirror, idempotency_key};

/// Why a transcript could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// Another writer holds the transcript's lock; two writers would interleave and fork the chain.
    #[error("transcript {path} is already open for writing elsewhere (lock {lock_path} is held)")]
    Locked {
        /// The transcript.
        path: PathBuf,
        /// The lock file whose lock is held.
        lock_path: PathBuf,
    },
    /// Reading, writing or syncing a file failed.
    #[error("transcript I/O at {path}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An entry could not be encoded as JSON.
    #[error("cannot encode a transcript entry")]
    Encode(#[source] serde_json::Error),
    /// The blocking writer task did not finish (it panicked, or the runtime is shutting down).
    #[error("the transcript writer task did not finish: {0}")]
    Task(String),
}

/// What became of one message passed to [`TranscriptSink::append`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AppendOutcome {
    /// It was written as a new entry.
    Appended {
        /// Its idempotency key (`None` for messages without one, which are never deduplicated).
        key: Option<String>,
        /// The new entry's id.
        entry_id: String,
        /// The entry it was chained to.
        parent_id: Option<String>,
    },
    /// An entry with the same key was already there; nothing was written.
    AlreadyPresent {
        /// The key.
        key: String,
        /// The id of the entry already holding it.
        entry_id: String,
    },
}

impl AppendOutcome {
    /// Whether a new entry was written.
    pub fn is_new(&self) -> bool {
        matches!(self, AppendOutcome::Appended { .. })
    }
}

/// Where mirrored messages go. Appends are acknowledged: the returned future resolves only once the
/// entries are written (or known to be present already).
pub trait TranscriptSink: Send {
    /// Appends `messages` in order as one group, chaining each to the previous entry. A message whose
    /// idempotency key is already present is skipped and reported as [`AppendOutcome::AlreadyPresent`].
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<Vec<AppendOutcome>, TranscriptError>>;

    /// Makes everything appended so far durable; called at the end of a turn.
    fn sync(&mut self) -> BoxFuture<'_, Result<(), TranscriptError>>;

    /// What the transcript holds of its turns' prompts (a sink that does not track them: nothing).
    fn prompt_history(&self) -> PromptHistory {
        PromptHistory::default()
    }
}

/// What a transcript holds of its turns' prompts: lets a retried run of a turn that never got its
/// answer (the agent failed to start, the bridge was killed) reuse the prompt row it already wrote
/// instead of adding the same question twice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PromptHistory {
    /// How many user rows the transcript holds: numbers the next turn.
    pub prompts: usize,
    /// The last user row, when no answer (a final assistant row) follows it.
    pub unanswered: Option<UnansweredPrompt>,
}

/// A prompt row whose turn has no answer yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnansweredPrompt {
    /// Its idempotency key, reused by a retry of the same turn.
    pub key: String,
    /// Its text, compared with the retry's, so a different question is a new turn.
    pub text: String,
}

/// The OS error behind a transcript failure, when there is one (`No space left on device`, …).
pub fn os_error(error: &TranscriptError) -> Option<&std::io::Error> {
    match error {
        TranscriptError::Io { source, .. } => Some(source),
        TranscriptError::Locked { .. } | TranscriptError::Encode(_) | TranscriptError::Task(_) => None,
    }
}

#[cfg(test)]
mod tests;
