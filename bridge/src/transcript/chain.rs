//! The bookkeeping every sink shares: which identities are already in the transcript, which entry
//! ids are taken, and which entry the next one hangs from.

use std::collections::{HashMap, HashSet};

use sha2::{Digest, Sha256};

use super::entry::{Message, MessageEntry, StopReason, iso_now};
use super::{AppendOutcome, PromptHistory, UnansweredPrompt};

/// What a sink knows about the transcript it writes.
#[derive(Debug, Default)]
pub(crate) struct Chain {
    /// Entry id per idempotency key, so a re-append is recognised and answered with the first id.
    ids_by_key: HashMap<String, String>,
    /// Every entry id present, so a new id never collides with one written by someone else.
    ids: HashSet<String>,
    /// The newest entry, parent of the next one.
    last_id: Option<String>,
    /// The turns' prompts so far, so a retried run of an unanswered turn reuses its prompt row.
    prompts: PromptHistory,
}

/// What one row says about the turns it belongs to.
pub(crate) enum TurnRow<'a> {
    /// A user row: a turn's prompt, with its text when the text is a plain string.
    Prompt { key: Option<&'a str>, text: Option<&'a str> },
    /// An assistant row that ends its turn (any stop reason but a tool call).
    Answer,
    /// Anything else (a tool call, a tool result): the turn goes on.
    Other,
}

/// Entries to write for one append, and what to report once they are written.
#[derive(Debug)]
pub(crate) struct Planned {
    /// The new entries, in order.
    pub(crate) entries: Vec<MessageEntry>,
    /// One outcome per message passed in.
    pub(crate) outcomes: Vec<AppendOutcome>,
}

impl Chain {
    /// Records an entry already in the transcript (read back on open).
    pub(crate) fn observe(&mut self, id: Option<&str>, key: Option<&str>) {
        let Some(id) = id else { return };
        if let Some(key) = key {
            self.ids_by_key.entry(key.to_string()).or_insert_with(|| id.to_string());
        }
        self.ids.insert(id.to_string());
        self.last_id = Some(id.to_string());
    }

    /// Records what a row present in (or just written to) the transcript says about its turn.
    pub(crate) fn observe_turn(&mut self, row: &TurnRow<'_>) {
        match row {
            TurnRow::Prompt { key, text } => {
                self.prompts.prompts += 1;
                self.prompts.unanswered = match (key, text) {
                    (Some(key), Some(text)) => {
                        Some(UnansweredPrompt { key: (*key).to_string(), text: (*text).to_string() })
                    }
                    _ => None,
                };
            }
            TurnRow::Answer => self.prompts.unanswered = None,
            TurnRow::Other => {}
        }
    }

    /// The turns' prompts so far.
    pub(crate) fn prompts(&self) -> &PromptHistory {
        &self.prompts
    }

    /// Whether a message with this identity is present.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.ids_by_key.contains_key(key)
    }

    /// Works out the entries for `messages` without changing the chain, so a failed write leaves it
    /// as it was. Messages whose key is present (or repeated in the batch) are skipped.
    pub(crate) fn plan(&self, messages: Vec<Message>) -> Planned {
        let mut parent = self.last_id.clone();
        let mut batch_keys: HashMap<String, String> = HashMap::new();
        let mut batch_ids: HashSet<String> = HashSet::new();
        let mut entries = Vec::new();
        let mut outcomes = Vec::with_capacity(messages.len());
        for message in messages {
            let key = message.idempotency_key().map(str::to_string);
            if let Some(key) = &key {
                let existing = self.ids_by_key.get(key).or_else(|| batch_keys.get(key));
                if let Some(entry_id) = existing {
                    outcomes.push(AppendOutcome::AlreadyPresent { key: key.clone(), entry_id: entry_id.clone() });
                    continue;
                }
            }
            let id = self.fresh_id(key.as_deref(), parent.as_deref(), &batch_ids);
            batch_ids.insert(id.clone());
            if let Some(key) = &key {
                batch_keys.insert(key.clone(), id.clone());
            }
            outcomes.push(AppendOutcome::Appended { key, entry_id: id.clone(), parent_id: parent.clone() });
            entries.push(MessageEntry { id: id.clone(), parent_id: parent.replace(id), timestamp: iso_now(), message });
        }
        Planned { entries, outcomes }
    }

    /// Adopts entries once they are written.
    pub(crate) fn commit(&mut self, entries: &[MessageEntry]) {
        for entry in entries {
            self.observe(Some(&entry.id), entry.message.idempotency_key());
            self.observe_turn(&TurnRow::of(&entry.message));
        }
    }

    /// An id derived from the identity, so a re-run produces the same id; salted on the rare
    /// collision with an id already present.
    fn fresh_id(&self, key: Option<&str>, parent: Option<&str>, batch: &HashSet<String>) -> String {
        let seed = match key {
            Some(key) => format!("key\n{key}"),
            // No identity: unique by position instead (never deduplicated anyway).
            None => format!("anon\n{}\n{}\n{}", parent.unwrap_or(""), self.ids.len() + batch.len(), iso_now()),
        };
        for salt in 0..=u32::MAX {
            let digest = Sha256::digest(format!("{seed}\n{salt}").as_bytes());
            let id: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            if !self.ids.contains(&id) && !batch.contains(&id) {
                return id;
            }
        }
        // 2^32 collisions in a row cannot happen; fall back to something unique-looking anyway.
        format!("{}-{}", self.ids.len(), batch.len())
    }
}

impl<'a> TurnRow<'a> {
    /// What a message says about its turn.
    pub(crate) fn of(message: &'a Message) -> Self {
        match message {
            Message::User(user) => {
                TurnRow::Prompt { key: user.idempotency_key.as_deref(), text: Some(user.content.as_str()) }
            }
            Message::Assistant(assistant) if assistant.stop_reason != StopReason::ToolUse => TurnRow::Answer,
            _ => TurnRow::Other,
        }
    }
}
