//! `clawbridge run` stores a turn's prompt row, durably, before anything else of the turn: on a
//! store that fails as a full disk does (ENOSPC), the run fails naming the store and the OS error,
//! nothing else of the turn is written, and the agent is never started, let alone asked. A run
//! that cannot find its agent writes nothing; a retried turn does not store its question twice.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use clawbridge::run::{RunArgs, RunError};
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::backend::{
    Backend, BackendError, HarnessFacts, OpenFuture, OpenSettings, ProbeReport, ProgramNotFound, Registry, Supports,
};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_bridge::transcript::{AppendOutcome, Message, SessionHeader, TranscriptError, TranscriptSink};
use futures::future::BoxFuture;

/// A backend that only counts how often it was asked to start an agent (and never starts one).
struct Counting {
    facts: HarnessFacts,
    opened: Arc<AtomicUsize>,
    /// Whether its program is found (a run that cannot find it must write nothing).
    installed: bool,
}

impl Backend for Counting {
    fn facts(&self) -> &HarnessFacts {
        &self.facts
    }

    fn locate(&self, _requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        if self.installed {
            Ok(PathBuf::from("/nonexistent/agent"))
        } else {
            Err(ProgramNotFound { name: "agent".into(), why: "not installed in this test".into() })
        }
    }

    fn probe<'a>(&'a self, program: &'a Path, _versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
        Box::pin(async move { ProbeReport::available(program.to_path_buf(), None) })
    }

    fn fingerprints(&self, _settings: &OpenSettings) -> Fingerprints {
        Fingerprints::new(self.facts.id, "/", "")
    }

    fn open(&self, _settings: OpenSettings, _hooks: SessionHooks) -> OpenFuture<'_> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(BackendError::Start { source: "this test starts no agent".into(), retryable: false }) })
    }
}

/// What the run asked of its transcript, in order.
#[derive(Clone, Debug, PartialEq)]
enum Op {
    /// An append of rows that the disk took, with how many user rows it held.
    Appended { prompts: usize },
    /// An append the full disk refused.
    Refused,
    /// A sync, and whether it succeeded.
    Synced(bool),
}

/// A transcript on a disk that is full once `room` groups were written: each group after that is
/// refused with ENOSPC, as a write(2) on a full filesystem is; syncs fail when `sync_fails`.
struct FullDisk {
    path: PathBuf,
    room: usize,
    sync_fails: bool,
    written: Arc<Mutex<Vec<Message>>>,
    ops: Arc<Mutex<Vec<Op>>>,
    groups: usize,
}

impl TranscriptSink for FullDisk {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<Vec<AppendOutcome>, TranscriptError>> {
        Box::pin(async move {
            if self.groups >= self.room {
                self.ops.lock().unwrap().push(Op::Refused);
                let source = std::io::Error::from_raw_os_error(nix::libc::ENOSPC);
                return Err(TranscriptError::Io { path: self.path.clone(), source });
            }
            self.groups += 1;
            let prompts = messages.iter().filter(|m| matches!(m, Message::User(_))).count();
            self.ops.lock().unwrap().push(Op::Appended { prompts });
            self.written.lock().unwrap().extend(messages);
            Ok(Vec::new())
        })
    }

    fn sync(&mut self) -> BoxFuture<'_, Result<(), TranscriptError>> {
        let fails = self.sync_fails;
        self.ops.lock().unwrap().push(Op::Synced(!fails));
        let path = self.path.clone();
        Box::pin(async move {
            if fails {
                return Err(TranscriptError::Io { path, source: std::io::Error::from_raw_os_error(nix::libc::EIO) });
            }
            Ok(())
        })
    }
}

fn registry(opened: &Arc<AtomicUsize>) -> Registry {
    registry_with(opened, true)
}

fn registry_with(opened: &Arc<AtomicUsize>, installed: bool) -> Registry {
    let facts = HarnessFacts {
        id: "test-counting",
        backend: "counting",
        label: "Counting (test)",
        process: "the counting agent",
        native_session: "counting session",
        transcript_api: "counting",
        supports: Supports::default(),
        notice: None,
        fixed_approval: None,
    };
    Registry::new().with(Arc::new(Counting { facts, opened: opened.clone(), installed }))
}

fn args() -> RunArgs {
    RunArgs {
        backend: "counting".into(),
        session: Some("full".into()),
        json: true,
        approval: None,
        program: None,
        model: None,
        prompt: "the question".into(),
        turn_idle_timeout: None,
    }
}

/// What a run on a [`FullDisk`] did.
struct Outcome {
    result: anyhow::Result<()>,
    rows: Vec<Message>,
    ops: Vec<Op>,
    opened: usize,
}

async fn run_on_disk(room: usize, sync_fails: bool) -> Outcome {
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(Mutex::new(Vec::new()));
    let ops = Arc::new(Mutex::new(Vec::new()));
    let (kept, log) = (written.clone(), ops.clone());
    let open = move |path: &Path, _header: &SessionHeader| -> Result<Box<dyn TranscriptSink>, TranscriptError> {
        Ok(Box::new(FullDisk { path: path.to_path_buf(), room, sync_fails, written: kept, ops: log, groups: 0 }))
    };
    let result = clawbridge::run::run_with_transcript(args(), state.path(), &registry(&opened), open).await;
    let rows = written.lock().unwrap().clone();
    let ops = ops.lock().unwrap().clone();
    Outcome { result, rows, ops, opened: opened.load(Ordering::SeqCst) }
}

fn user_rows(transcript: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|row| row["message"]["role"] == "user")
        .collect()
}

#[tokio::test]
async fn on_a_full_disk_the_run_fails_before_the_agent_is_started_and_writes_nothing_of_the_turn() {
    let Outcome { result, rows, ops, opened } = run_on_disk(0, false).await;
    let error = result.expect_err("a run whose prompt cannot be stored fails");
    let typed = error.downcast_ref::<RunError>().unwrap_or_else(|| panic!("a typed error: {error:#}"));
    assert!(matches!(typed, RunError::PromptNotStored { .. }), "{typed:?}");
    let message = typed.to_string();
    assert!(message.contains("transcript.jsonl"), "names the store: {message}");
    assert!(message.contains("No space left on device"), "names the OS error: {message}");
    assert_eq!(opened, 0, "the agent was not started");
    assert!(rows.is_empty(), "nothing of the turn was written: {rows:?}");
    assert_eq!(ops, [Op::Refused], "a refused row is not synced as if written");
}

#[tokio::test]
async fn with_room_for_it_the_prompt_row_is_stored_and_synced_before_the_agent_is_started() {
    let Outcome { result, rows, ops, opened } = run_on_disk(1, false).await;
    let error = result.expect_err("the counting backend starts no agent");
    assert!(error.downcast_ref::<RunError>().is_none(), "the prompt was stored: {error:#}");
    assert_eq!(opened, 1, "the agent was asked for once the prompt was stored");
    assert!(
        matches!(rows.as_slice(), [Message::User(user)] if user.content == "the question"),
        "the prompt row alone, first: {rows:?}"
    );
    assert_eq!(ops, [Op::Appended { prompts: 1 }, Op::Synced(true)], "written, then synced, then the agent");
}

#[tokio::test]
async fn a_prompt_written_but_not_synced_is_reported_as_such_and_the_agent_is_not_started() {
    let Outcome { result, ops, opened, .. } = run_on_disk(1, true).await;
    let error = result.expect_err("a prompt that is not durable fails the run");
    let typed = error.downcast_ref::<RunError>().unwrap_or_else(|| panic!("a typed error: {error:#}"));
    assert!(matches!(typed, RunError::PromptNotSynced { .. }), "{typed:?}");
    assert!(typed.to_string().contains("written to") && typed.to_string().contains("not synced"), "{typed}");
    assert_eq!(opened, 0, "the agent was not started");
    assert_eq!(ops, [Op::Appended { prompts: 1 }, Op::Synced(false)]);
}

#[tokio::test]
async fn a_new_session_whose_header_cannot_be_written_fails_as_a_prompt_not_stored() {
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let open = |path: &Path, _header: &SessionHeader| -> Result<Box<dyn TranscriptSink>, TranscriptError> {
        let source = std::io::Error::from_raw_os_error(nix::libc::ENOSPC);
        Err(TranscriptError::Io { path: path.to_path_buf(), source })
    };
    let error = clawbridge::run::run_with_transcript(args(), state.path(), &registry(&opened), open).await.unwrap_err();
    let typed = error.downcast_ref::<RunError>().unwrap_or_else(|| panic!("a typed error: {error:#}"));
    assert!(matches!(typed, RunError::PromptNotStored { .. }), "{typed:?}");
    assert!(typed.to_string().contains("No space left on device"), "{typed}");
    assert_eq!(opened.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_run_that_cannot_find_its_agent_writes_nothing() {
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let error = clawbridge::run::run(args(), state.path(), &registry_with(&opened, false)).await.unwrap_err();
    assert!(format!("{error:#}").contains("finding"), "{error:#}");
    let transcript = state.path().join("sessions/full/transcript.jsonl");
    assert!(!transcript.exists(), "no transcript, so no stray prompt row");
}

#[tokio::test]
async fn a_retried_turn_keeps_its_one_prompt_row_and_a_new_question_is_a_new_turn() {
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let transcript = state.path().join("sessions/full/transcript.jsonl");
    // The counting agent never starts, so its turn is never answered: each rerun is a retry.
    for _ in 0..3 {
        clawbridge::run::run(args(), state.path(), &registry(&opened)).await.unwrap_err();
    }
    assert_eq!(opened.load(Ordering::SeqCst), 3);
    let rows = user_rows(&transcript);
    assert_eq!(rows.len(), 1, "one prompt row for the retried turn: {rows:#?}");
    assert_eq!(rows[0]["message"]["idempotencyKey"], "clawbridge:full:turn-1:prompt");

    let other = RunArgs { prompt: "another question".into(), ..args() };
    clawbridge::run::run(other, state.path(), &registry(&opened)).await.unwrap_err();
    let rows = user_rows(&transcript);
    assert_eq!(rows.len(), 2, "a different question is a turn of its own: {rows:#?}");
    assert_eq!(rows[1]["message"]["idempotencyKey"], "clawbridge:full:turn-2:prompt");
}
