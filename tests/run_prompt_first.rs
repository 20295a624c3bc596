//! `clawbridge run` stores a turn's prompt row, durably, before anything else of the turn: on a
//! store that fails as a full disk does (ENOSPC), the run fails naming the store and the OS error,
//! nothing else of the turn is written, and the agent is never started, let alone asked.

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
}

impl Backend for Counting {
    fn facts(&self) -> &HarnessFacts {
        &self.facts
    }

    fn locate(&self, _requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        Ok(PathBuf::from("/nonexistent/agent"))
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

/// A transcript on a disk that is full once `room` groups were written: each group after that is
/// refused with ENOSPC, as a write(2) on a full filesystem is.
struct FullDisk {
    path: PathBuf,
    room: usize,
    written: Arc<Mutex<Vec<Message>>>,
    groups: usize,
}

impl TranscriptSink for FullDisk {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<Vec<AppendOutcome>, TranscriptError>> {
        Box::pin(async move {
            if self.groups >= self.room {
                let source = std::io::Error::from_raw_os_error(nix::libc::ENOSPC);
                return Err(TranscriptError::Io { path: self.path.clone(), source });
            }
            self.groups += 1;
            self.written.lock().unwrap().extend(messages);
            Ok(Vec::new())
        })
    }

    fn sync(&mut self) -> BoxFuture<'_, Result<(), TranscriptError>> {
        Box::pin(async { Ok(()) })
    }
}

fn registry(opened: &Arc<AtomicUsize>) -> Registry {
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
    Registry::new().with(Arc::new(Counting { facts, opened: opened.clone() }))
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
    }
}

async fn run_on_disk(room: usize) -> (anyhow::Result<()>, Vec<Message>, usize) {
    let state = tempfile::tempdir().unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let written = Arc::new(Mutex::new(Vec::new()));
    let kept = written.clone();
    let open = move |path: &Path, _header: &SessionHeader| -> Result<Box<dyn TranscriptSink>, TranscriptError> {
        Ok(Box::new(FullDisk { path: path.to_path_buf(), room, written: kept, groups: 0 }))
    };
    let outcome = clawbridge::run::run_with_transcript(args(), state.path(), &registry(&opened), open).await;
    let rows = written.lock().unwrap().clone();
    (outcome, rows, opened.load(Ordering::SeqCst))
}

#[tokio::test]
async fn on_a_full_disk_the_run_fails_before_the_agent_is_started_and_writes_nothing_of_the_turn() {
    let (outcome, rows, opened) = run_on_disk(0).await;
    let error = outcome.expect_err("a run whose prompt cannot be stored fails");
    let typed = error.downcast_ref::<RunError>().unwrap_or_else(|| panic!("a typed error: {error:#}"));
    assert!(matches!(typed, RunError::PromptNotStored { .. }), "{typed:?}");
    let message = typed.to_string();
    assert!(message.contains("transcript.jsonl"), "names the store: {message}");
    assert!(message.contains("No space left on device"), "names the OS error: {message}");
    assert_eq!(opened, 0, "the agent was not started");
    assert!(rows.is_empty(), "nothing of the turn was written: {rows:?}");
}

#[tokio::test]
async fn with_room_for_it_the_prompt_row_is_stored_before_the_agent_is_started() {
    let (outcome, rows, opened) = run_on_disk(1).await;
    let error = outcome.expect_err("the counting backend starts no agent");
    assert!(error.downcast_ref::<RunError>().is_none(), "the prompt was stored: {error:#}");
    assert_eq!(opened, 1, "the agent was asked for once the prompt was stored");
    assert!(
        matches!(rows.as_slice(), [Message::User(user)] if user.content == "the question"),
        "the prompt row alone, first: {rows:?}"
    );
}
