//! `clawbridge run`: one turn on a backend, shown as a person would want it — streamed text, a line
//! per tool, approvals at the terminal (or by flag), a summary — or as normalized-event JSONL.
//! The transcript and the session binding are kept under the state directory, so running again
//! with the same `--session` resumes the native thread (Codex) or session (Claude Code).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, NoHostTools, NoObserver};
use clawbridge_bridge::attempt::{AttemptResult, SessionHooks};
use clawbridge_bridge::backend::{Backend, OpenSettings, Registry, TurnInput, TurnRequest};
use clawbridge_bridge::binding::{Binding, FingerprintKey, sidecar_path};
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::sink::{MirrorSpec, Pipeline, StoreError, TranscriptStore};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_bridge::transcript::{
    JsonlSink, Message, ModelLabel, SessionHeader, TranscriptError, TranscriptMirror, TranscriptSink, os_error,
};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::interrupt::CtrlC;
use crate::view::{Screen, View, approver};

/// What `run` was asked to do.
#[derive(Debug)]
pub struct RunArgs {
    /// The backend's short name (`clawbridge run --backend`).
    pub backend: String,
    /// Session name; `None` runs a one-off session.
    pub session: Option<String>,
    /// Print normalized events as JSONL.
    pub json: bool,
    /// Fixed approval answer; `None` asks at the terminal (or denies when there is none).
    pub approval: Option<ApprovalDecision>,
    /// The backend's executable, instead of the one its probe finds.
    pub program: Option<PathBuf>,
    /// The model (for the binding's fingerprint and the native session).
    pub model: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// How long the turn may go without progress (`agents.turn-idle-timeout-ms`); `None`: the
    /// backend's own.
    pub turn_idle_timeout: Option<std::time::Duration>,
}

/// Why a run stopped before its agent was asked anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The turn's prompt row could not be stored (a full disk, say), so nothing else of the turn
    /// was written and the agent was neither started nor asked.
    #[error("the turn's prompt could not be stored in {store}: {}; the agent was not asked", describe_store_error(.source))]
    PromptNotStored {
        /// The transcript that refused it.
        store: String,
        /// What refused it, with the OS error.
        #[source]
        source: TranscriptError,
    },
    /// The turn's prompt row was written but could not be made durable (the sync failed): the row
    /// is in the file and may or may not survive a crash; the agent was neither started nor asked.
    #[error(
        "the turn's prompt was written to {store} but not synced: {}; the agent was not asked",
        describe_store_error(.source)
    )]
    PromptNotSynced {
        /// The transcript that holds the unsynced row.
        store: String,
        /// Why the sync failed, with the OS error.
        #[source]
        source: TranscriptError,
    },
}

/// The OS error behind a store failure when there is one, else the failure itself.
fn describe_store_error(error: &TranscriptError) -> String {
    os_error(error).map_or_else(|| error.to_string(), ToString::to_string)
}

/// A run's transcript: the pipeline appends the turn's rows to it, the run syncs it at the end.
pub type SharedTranscript = Arc<tokio::sync::Mutex<Box<dyn TranscriptSink>>>;

/// Where a run keeps its session, and what every backend shares.
struct Place {
    /// The working directory the agent runs in.
    cwd: PathBuf,
    /// The pid registry the agent is recorded in (reaped of crashed runs' agents first).
    registry: PidRegistry,
    /// The session's name.
    session_name: String,
    /// `sessions/<name>/transcript.jsonl`.
    transcript_path: PathBuf,
    /// The binding sidecar beside it.
    binding_path: PathBuf,
    /// The transcript itself (shared with the turn's pipeline task).
    transcript: SharedTranscript,
    /// Keys the binding's secret fingerprints (auth), kept in the state dir.
    fingerprint_key: FingerprintKey,
}

/// Runs one turn on `registry`'s backend named `args.backend`.
pub async fn run(args: RunArgs, state_dir: &Path, registry: &Registry) -> anyhow::Result<()> {
    let open = |path: &Path, header: &SessionHeader| -> Result<Box<dyn TranscriptSink>, TranscriptError> {
        Ok(Box::new(JsonlSink::open(path, header)?))
    };
    run_with_transcript(args, state_dir, registry, open).await
}

/// [`run`] with the session's transcript opened by `open_transcript` instead of as its JSONL file:
/// for tests whose store fails as a full disk would.
#[doc(hidden)]
pub async fn run_with_transcript(
    args: RunArgs,
    state_dir: &Path,
    registry: &Registry,
    open_transcript: impl FnOnce(&Path, &SessionHeader) -> Result<Box<dyn TranscriptSink>, TranscriptError>,
) -> anyhow::Result<()> {
    let Some(backend) = registry.by_name(&args.backend).cloned() else {
        bail!("unknown backend `{}` (known: {})", args.backend, registry.names().join(", "));
    };
    let session_name = match &args.session {
        Some(name) => checked_session_name(name)?,
        None => format!("run-{}", std::process::id()),
    };
    let cwd = std::env::current_dir().context("no current directory")?;
    // Record the agent so a later run (or `clawbridge reap`) can stop it should this one crash, and
    // reap what crashed runs left behind before starting another.
    let pids = PidRegistry::open(state_dir.join("pids")).context("opening the pid registry")?;
    for orphan in pids.reap_orphans(std::time::Duration::from_secs(2)).await.context("reaping orphans")? {
        match orphan.pgid {
            Some(pgid) => eprintln!("clawbridge: stopped process group {pgid} left behind by a crashed run"),
            None => eprintln!("clawbridge: stopped {} process(es) left behind by a crashed run", orphan.members),
        }
    }
    // Found before anything of the turn is written: a run that cannot start its agent leaves no row.
    let facts = backend.facts();
    let program = backend.locate(args.program.as_deref()).with_context(|| format!("finding {}", facts.process))?;
    let session_dir = state_dir.join("sessions").join(&session_name);
    clawbridge_bridge::state_files::create_dir_all_durably(&session_dir)
        .with_context(|| format!("creating {}", session_dir.display()))?;
    let transcript_path = session_dir.join("transcript.jsonl");
    let binding_path = sidecar_path(&transcript_path);
    // A new transcript starts with its header, written here: a disk too full for it cannot hold
    // the prompt either, and is reported the same way.
    let transcript =
        open_transcript(&transcript_path, &SessionHeader::new(&session_name, cwd.display().to_string()))
            .map_err(|source| RunError::PromptNotStored { store: transcript_path.display().to_string(), source })?;
    let transcript = Arc::new(tokio::sync::Mutex::new(transcript));
    let fingerprint_key = FingerprintKey::load_or_create(state_dir);
    let place = Place { cwd, registry: pids, session_name, transcript_path, binding_path, transcript, fingerprint_key };
    let outcome = run_on(backend.as_ref(), &args, program, place).await;
    backend.shutdown().await;
    outcome
}

/// The longest session name `run` accepts.
const MAX_SESSION_NAME: usize = 128;

/// A session name is one directory under `<state>/sessions`: it must not name another place
/// (`..`, `/`), hide itself (a leading `.`) or collide with another spelling, so only letters,
/// digits, `-`, `_` and `.` are taken, at most [`MAX_SESSION_NAME`] of them, not starting with `.`.
fn checked_session_name(name: &str) -> anyhow::Result<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    if name.is_empty() || name.len() > MAX_SESSION_NAME || name.starts_with('.') || !name.chars().all(allowed) {
        bail!(
            "--session {name:?} is not a usable session name: use 1–{MAX_SESSION_NAME} letters, digits, `-`, `_` or `.`, not starting with `.`"
        );
    }
    Ok(name.to_string())
}

/// One turn on `backend`: resumes the session's native session when its binding still holds (else
/// says why and starts fresh), streams the turn to the person and the transcript, and binds what
/// the turn ran in.
async fn run_on(backend: &dyn Backend, args: &RunArgs, program: PathBuf, place: Place) -> anyhow::Result<()> {
    let facts = backend.facts();
    let scope = format!("clawbridge:{}", place.session_name);
    let label = ModelLabel {
        api: facts.transcript_api.into(),
        provider: args.backend.clone(),
        model: args.model.clone().unwrap_or_default(),
    };
    // The session's own handshake gates the version: no separate probe is run.
    if let Some(notice) = facts.notice {
        eprintln!("clawbridge: {notice}");
    }
    let mut settings = OpenSettings {
        program,
        cwd: Some(place.cwd.clone()),
        model: args.model.clone(),
        session_key: place.session_name.clone(),
        registry: Some(place.registry.clone()),
        turn_idle_timeout: args.turn_idle_timeout,
        approval_timeout: crate::view::test_approval_timeout(),
        ..OpenSettings::default()
    };
    let fingerprints = backend.fingerprints(&settings).keyed(&place.fingerprint_key);
    if facts.supports.resume {
        // A binding that cannot be read is not resumed (the run starts fresh and rebinds), as serve does.
        match Binding::load(&place.binding_path) {
            Ok(Some(binding)) => match binding.check(&fingerprints) {
                Ok(()) => settings.resume = Some(binding.native_session_id),
                Err(reason) => eprintln!("clawbridge: not resuming: {reason}"),
            },
            Ok(None) => {}
            Err(error) => eprintln!("clawbridge: not resuming: the session binding is unreadable ({error})"),
        }
    }
    store_prompt_first(&place, &scope, &label, &args.prompt).await?;
    let screen = Screen::new(args.json);
    let resumed = settings.resume.clone();
    let hooks = SessionHooks {
        approver: approver(backend, args.approval.as_ref(), &screen),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let mut native = backend.open(settings, hooks).await.with_context(|| format!("starting {}", facts.process))?;
    if let (Some(why), Some(previous)) = (native.resume_failure(), resumed) {
        eprintln!("clawbridge: could not resume: {why} ({} {previous}); started a new one", facts.native_session);
    }

    // The prompt row is already stored (store_prompt_first).
    let spec = MirrorSpec { scope, label, prompt: None };
    let store = RunStore(place.transcript.clone());
    let view = View::new(args.json, screen.clone(), facts.process);
    let pipeline = Pipeline::start(vec![Box::new(view)], Some((spec, Box::new(store))));
    let cancel = CancellationToken::new();
    let ctrl_c =
        CtrlC::watch(&cancel, place.registry.clone(), screen.clone(), facts.process).context("listening for Ctrl-C")?;
    let input = TurnInput::text(args.prompt.clone());
    let result = native.run_turn(TurnRequest { input: &input, sink: &mut pipeline.sender(), cancel: &cancel }).await;
    let interrupted = ctrl_c.finish();
    let native_id = native.native_id();
    native.shutdown().await;
    let result = match (result, &interrupted) {
        (Ok(result), _) => result,
        // A turn the person interrupted that then failed (its agent stopped mid-turn) ends as
        // interrupted, with its exit status, the failure as the cause.
        (Err(error), Some(interrupted)) => return Err(anyhow::Error::new(error).context(*interrupted)),
        (Err(error), None) => return Err(anyhow::Error::new(error).context("running the turn")),
    };
    let mirrored = pipeline.finish(&result).await;
    place.transcript.lock().await.sync().await.context("syncing the transcript")?;
    if let Some(error) = mirrored.error {
        return Err(anyhow::Error::new(error).context("writing the transcript"));
    }
    if let (Some(native_id), true) = (native_id, facts.supports.resume) {
        Binding::new(native_id, &fingerprints).save(&place.binding_path).context("saving the session binding")?;
    }
    View::new(args.json, screen, facts.process).summary(
        &result,
        &place.session_name,
        &place.transcript_path,
        facts.native_session,
    );
    match interrupted {
        // A turn that completed before the interrupt took effect is not reported as interrupted.
        Some(interrupted) if result.terminal.kind != TerminalKind::Ok => Err(interrupted.into()),
        _ => ended(&result),
    }
}

/// Writes the turn's prompt row and syncs it before anything else of the turn, before the agent is
/// even started: a turn whose question the transcript cannot hold (a full disk) must not run, or
/// its answer would be stored without its question. The native side names its turn only once it
/// runs, so the row's key numbers the session's turns instead (`<scope>:turn-<n>:prompt`, n = the
/// user rows so far + 1); a retry of a turn that never got its answer (same question, no final
/// assistant row after it) keeps the row it already wrote, so no retry adds the question twice.
async fn store_prompt_first(place: &Place, scope: &str, label: &ModelLabel, prompt: &str) -> Result<(), RunError> {
    let store = || place.transcript_path.display().to_string();
    let mut transcript = place.transcript.lock().await;
    let history = transcript.prompt_history();
    let row = match history.unanswered {
        Some(unanswered) if unanswered.text == prompt => None,
        _ => Some(TranscriptMirror::new(scope, format!("turn-{}", history.prompts + 1), label.clone()).prompt(prompt)),
    };
    if let Some(row) = row {
        transcript.append(vec![row]).await.map_err(|source| RunError::PromptNotStored { store: store(), source })?;
    }
    // Synced even when the row was already there: the run that wrote it may have died before its sync.
    transcript.sync().await.map_err(|source| RunError::PromptNotSynced { store: store(), source })
}

/// A run succeeds only when its turn ended `ok`.
fn ended(result: &AttemptResult) -> anyhow::Result<()> {
    match result.terminal.kind {
        TerminalKind::Ok => Ok(()),
        kind => bail!("the turn ended as {kind}"),
    }
}

/// The session's transcript as the pipeline's store.
struct RunStore(SharedTranscript);

impl TranscriptStore for RunStore {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let mut transcript = self.0.lock().await;
            transcript.append(messages).await.map(drop).map_err(|error| StoreError(Box::new(error)))
        })
    }
}
