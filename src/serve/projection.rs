//! The transcript projection: when a session's native thread cannot or must not be resumed, the new
//! native session is seeded with the OpenClaw transcript's history (`attempt/run` `history`), so the
//! model never starts without the conversation it is part of (docs/host-protocol.md#transcript-history).
//!
//! A binding records the transcript position it was made at (the idempotency scope of the attempt
//! that last ran in the native session); [`moved`] compares it with the host's transcript, whose last
//! entry is that attempt's row only while nothing else (OpenClaw's own runtime, a rewind, a branch)
//! moved it.

use clawbridge_bridge::binding::InvalidationReason;
use clawbridge_protocol::host::{TranscriptHistory, limits};

/// Why an attempt starts a new native session instead of resuming the session's thread.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FreshReason {
    /// The session has no binding yet (its first turn on this harness, or after a reset).
    #[error("the session has no native thread bound yet")]
    Unbound,
    /// The binding no longer fits the settings.
    #[error("{0}")]
    Invalid(#[from] InvalidationReason),
    /// The transcript moved without the native session.
    #[error(transparent)]
    Moved(#[from] TranscriptMoved),
    /// The backend tried to resume and could not (its session file is gone, the resume failed).
    #[error("the native session could not be resumed: {0}")]
    ResumeFailed(String),
    /// The run finalizes a settled tool turn (`isolation: "settle"`), which always starts from the
    /// transcript in a tool-less session of its own.
    #[error("a settled tool turn is finalized in a tool-less session seeded with the transcript")]
    SettledTurn,
}

/// How the host's transcript moved away from the position a binding was made at.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptMoved {
    /// The transcript holds no entry now (it was rewound to its start or replaced).
    #[error("the transcript was emptied since the native thread last ran (a rewind or a new branch)")]
    Emptied,
    /// The last entry is not one this bridge mirrored: another runtime ran a turn, or the session
    /// was rewound or branched to an earlier entry.
    #[error(
        "the transcript's last entry ({role}) was not written by the attempt that last ran in the native thread \
         (another runtime ran a turn, or the session was rewound or branched)"
    )]
    Foreign {
        /// The role of the transcript's last entry.
        role: String,
    },
}

/// Why a `history` is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The entries hold more text than the cap.
    #[error("the transcript history holds {bytes} bytes of text, over the cap of {limit} bytes")]
    TooLarge {
        /// The bytes sent.
        bytes: usize,
        /// [`limits::MAX_HISTORY_BYTES`].
        limit: usize,
    },
}

/// Refuses a history over [`limits::MAX_HISTORY_BYTES`] (the host keeps the newest entries within it).
pub fn check_cap(history: &TranscriptHistory) -> Result<(), HistoryError> {
    let bytes = history.text_bytes();
    if bytes > limits::MAX_HISTORY_BYTES {
        return Err(HistoryError::TooLarge { bytes, limit: limits::MAX_HISTORY_BYTES });
    }
    Ok(())
}

/// Whether the host's transcript moved away from `position` (a binding's): `None` while its last
/// entry that is no user prompt is a row of the attempt at `position` (or of its run).
pub fn moved(history: &TranscriptHistory, position: &str) -> Option<TranscriptMoved> {
    if history.entries.is_empty() {
        return Some(TranscriptMoved::Emptied);
    }
    // Prompts no answer followed (the bound attempt's own, when it failed or its bridge was killed
    // mid-turn) move nothing: the native thread took them, or never answered them either.
    let last = history.entries.iter().rev().find(|e| e.role != "user")?;
    let key = last.key.as_deref().unwrap_or_default();
    // One of the attempt's own rows, or a row OpenClaw keyed to the same run (`<runId>:…`).
    let of = |scope: &str| key.strip_prefix(scope).is_some_and(|rest| rest.starts_with(':'));
    let ours = of(position) || position.strip_prefix("clawbridge:").is_some_and(of);
    (!ours).then(|| TranscriptMoved::Foreign { role: last.role.clone() })
}

/// The prompt a new native session's first turn is given: the history, then `prompt`. The history
/// is a block the model reads as context, each entry under its role; an empty history leaves the
/// prompt as it is.
pub fn seeded_prompt(history: &TranscriptHistory, prompt: &str) -> String {
    if history.entries.is_empty() {
        return prompt.to_string();
    }
    let mut out = String::with_capacity(history.text_bytes() + prompt.len() + 256);
    out.push_str("The conversation so far, from this session's transcript");
    if history.omitted > 0 {
        out.push_str(&format!(" ({} older entries left out)", history.omitted));
    }
    out.push_str(". It is context; the request follows after it.\n<conversation_history>\n");
    for entry in &history.entries {
        out.push('[');
        out.push_str(&entry.role);
        out.push_str("]\n");
        out.push_str(entry.text.trim_end());
        out.push('\n');
    }
    out.push_str("</conversation_history>\n\n");
    out.push_str(prompt);
    out
}

#[cfg(test)]
mod tests {
    use clawbridge_protocol::host::HistoryEntry;

    use super::*;

    fn entry(role: &str, text: &str, key: Option<&str>) -> HistoryEntry {
        HistoryEntry { role: role.into(), text: text.into(), key: key.map(Into::into) }
    }

    #[test]
    fn the_transcript_is_in_step_only_while_its_last_entry_is_the_bound_attempts_row() {
        let ours = TranscriptHistory {
            entries: vec![entry("user", "hi", None), entry("assistant", "hello", Some("clawbridge:run-1:assistant:0"))],
            omitted: 0,
        };
        assert_eq!(moved(&ours, "clawbridge:run-1"), None);
        // Another run of ours wrote the last row (the binding is of an older one): moved.
        assert_eq!(moved(&ours, "clawbridge:run-0"), Some(TranscriptMoved::Foreign { role: "assistant".into() }));
        // A prefix of the scope is not the scope.
        assert!(moved(&ours, "clawbridge:run-").is_some());
        // OpenClaw's own runtime answered last.
        let mut other = ours.clone();
        other.entries.push(entry("user", "q", None));
        other.entries.push(entry("assistant", "embedded", None));
        assert_eq!(moved(&other, "clawbridge:run-1"), Some(TranscriptMoved::Foreign { role: "assistant".into() }));
        // The bound attempt's run stored its prompt and mirrored nothing after it: still in step.
        let killed = TranscriptHistory {
            entries: vec![entry("user", "hi", Some("run-0:user")), entry("user", "stall", Some("run-1:user"))],
            omitted: 0,
        };
        assert_eq!(moved(&killed, "clawbridge:run-1"), None);
        let mut partial = killed.clone();
        partial.entries.push(entry("assistant", "Zebras are", Some("run-1:assistant")));
        assert_eq!(moved(&partial, "clawbridge:run-1"), None);
        assert!(moved(&partial, "clawbridge:run-").is_some());
        // Rewound to before the bound attempt (an earlier run answered last).
        let rewound = TranscriptHistory {
            entries: vec![
                entry("user", "hi", None),
                entry("assistant", "hello", Some("clawbridge:run-0:assistant:0")),
                entry("user", "again", None),
            ],
            omitted: 0,
        };
        assert_eq!(moved(&rewound, "clawbridge:run-1"), Some(TranscriptMoved::Foreign { role: "assistant".into() }));
        assert_eq!(moved(&TranscriptHistory::default(), "clawbridge:run-1"), Some(TranscriptMoved::Emptied));
    }

    #[test]
    fn a_history_over_the_byte_cap_is_refused_and_one_at_it_is_not() {
        let text = "x".repeat(limits::MAX_HISTORY_BYTES - "user".len());
        let mut history = TranscriptHistory { entries: vec![entry("user", &text, None)], omitted: 0 };
        assert_eq!(check_cap(&history), Ok(()));
        history.entries[0].text.push('x');
        assert_eq!(
            check_cap(&history),
            Err(HistoryError::TooLarge { bytes: limits::MAX_HISTORY_BYTES + 1, limit: limits::MAX_HISTORY_BYTES })
        );
    }

    #[test]
    fn the_seeded_prompt_carries_every_entry_under_its_role_then_the_prompt() {
        let history = TranscriptHistory {
            entries: vec![entry("user", "my name is Ada", None), entry("assistant", "Hello Ada\n", None)],
            omitted: 2,
        };
        let seeded = seeded_prompt(&history, "what is my name?");
        assert!(seeded.contains("(2 older entries left out)"), "{seeded}");
        assert!(
            seeded.ends_with(
                "<conversation_history>\n[user]\nmy name is Ada\n[assistant]\nHello Ada\n</conversation_history>\n\nwhat is my name?"
            ),
            "{seeded}"
        );
        assert_eq!(seeded_prompt(&TranscriptHistory::default(), "p"), "p");
    }
}

/// What of `history` follows a reset that dropped the binding made at `position`: the entries after
/// the last one that run wrote (its keys start with the scope and `:`, or OpenClaw's `<runId>:`),
/// or none when the position is unknown or not found. A session reset in place keeps its old
/// entries in the transcript; the reset means the model starts without them.
pub fn after_reset(history: &mut TranscriptHistory, position: Option<&str>) {
    let run = position.map(|p| (format!("{p}:"), format!("{}:", p.strip_prefix("clawbridge:").unwrap_or(p))));
    let last = run.as_ref().and_then(|(ours, theirs)| {
        history
            .entries
            .iter()
            .rposition(|e| e.key.as_deref().is_some_and(|k| k.starts_with(ours) || k.starts_with(theirs)))
    });
    match last {
        Some(i) => drop(history.entries.drain(..=i)),
        None => history.entries.clear(),
    }
    history.omitted = 0;
}

#[cfg(test)]
mod reset_tests {
    use clawbridge_protocol::host::{HistoryEntry, TranscriptHistory};

    fn entry(role: &str, key: Option<&str>) -> HistoryEntry {
        HistoryEntry { role: role.into(), text: format!("{role} text"), key: key.map(Into::into) }
    }

    #[test]
    fn after_a_reset_only_what_follows_the_dropped_bindings_run_is_kept() {
        let mut history = TranscriptHistory {
            entries: vec![
                entry("user", Some("run-1:user")),
                entry("assistant", Some("clawbridge:run-1:a")),
                entry("user", Some("run-2:user")),
                entry("assistant", Some("clawbridge:run-2:a")),
                entry("user", Some("later:user")),
            ],
            omitted: 3,
        };
        super::after_reset(&mut history, Some("clawbridge:run-2"));
        let keys: Vec<_> = history.entries.iter().map(|e| e.key.clone().unwrap()).collect();
        assert_eq!(keys, ["later:user"]);
        assert_eq!(history.omitted, 0, "what was left out came before the reset too");
        // Unknown or unseen position: nothing from before the reset can be told apart.
        let mut unknown = TranscriptHistory { entries: vec![entry("user", Some("x:user"))], omitted: 0 };
        super::after_reset(&mut unknown, None);
        assert!(unknown.entries.is_empty());
    }
}
