//! One measured attempt through the seam the product uses, the same for every backend: the backend
//! comes from the [`registry`], its executable from `Backend::locate` (a launcher of one of this
//! binary's peer roles, [`peer_program`]), its session from `Backend::open`, its turn from
//! `NativeSession::run_turn`, and the turn's events go through serve's own pipeline
//! (`clawbridge::serve::host_pipeline`: `attempt/event` notifications, the transcript mirrored into
//! acknowledged `host/transcript/append` requests) to the host end this bench plays ([`super::host`]).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clawbridge_adapters::acp::AcpBackend;
use clawbridge_adapters::claude::ClaudeBackend;
use clawbridge_adapters::codex::CodexBackend;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::attempt::{AttemptRecorder, AttemptResult, SessionHooks};
use clawbridge_bridge::backend::{Backend, NativeSession, OpenSettings, Registry, TurnInput, TurnRequest};
use clawbridge_bridge::events::{Event, TerminalKind, TurnTerminal};
use clawbridge_bridge::sink::MirrorSpec;
use clawbridge_bridge::transcript::ModelLabel;
use tokio_util::sync::CancellationToken;

use super::host::{Delivered, HostConnection};

/// The prompt of every measured turn (the peers do not read it).
pub const PROMPT: &str = "Run the test suite and tell me what failed.";

/// The host session every measured attempt belongs to (the rows' `sessionId`).
const HOST_SESSION: &str = "bench-session";

/// The backends measured: the product's own Codex, Claude Code and ACP backends, as
/// `clawbridge::demo::registry()` holds them, without the demo, which replays through the product
/// binary's hidden role (this bench plays its peers itself; the ACP agent is the program each
/// attempt names). Call inside a tokio runtime.
pub fn registry() -> Registry {
    Registry::new()
        .with(Arc::new(CodexBackend::native()))
        .with(Arc::new(ClaudeBackend::default()))
        .with(Arc::new(AcpBackend::default()))
}

/// A launcher for this binary's `role` (the role's name and arguments), to hand a backend as its
/// executable: a shell script that execs `me role… "$@"`, so the backend's own arguments follow
/// (`app-server …`, `--version`, Claude's flags). The Python SDK's `cli_path` takes one path too,
/// so the anchor and clawbridge launch the very same file.
pub fn peer_program(dir: &Path, name: &str, me: &Path, role: &[&OsStr]) -> anyhow::Result<PathBuf> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec!["exec".to_string(), quote(&me.display().to_string())];
    line.extend(role.iter().map(|arg| quote(&arg.to_string_lossy())));
    line.push("\"$@\"".into());
    let path = dir.join(format!("peer-{name}"));
    std::fs::write(&path, format!("#!/bin/sh\n{}\n", line.join(" ")))
        .with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))?;
    Ok(path)
}

/// A finished attempt.
pub struct Attempt {
    /// The session's result.
    pub result: AttemptResult,
    /// What the pipeline and the host handled.
    pub totals: Totals,
    /// From opening the session (spawning the peer) to the last notification received by the host.
    pub elapsed: Duration,
}

/// What one attempt's pipeline handled.
#[derive(Debug, Default)]
pub struct Totals {
    /// Events the session delivered to the pipeline's sink.
    pub events: u64,
    /// Delta bytes the pipeline's queue merged away while its stages lagged.
    pub dropped_bytes: u64,
    /// Whether the host's transcript holds every row of the turn.
    pub transcript_owned: bool,
    /// What reached the host.
    pub delivered: Delivered,
}

impl Attempt {
    /// Fails unless the turn ended `ok` with `tool_calls` tools, each reported once, every
    /// notification reached the host in order, and the host's transcript holds the turn.
    pub fn check(&self, tool_calls: u64) -> anyhow::Result<()> {
        if self.result.terminal.kind != TerminalKind::Ok {
            bail!("the turn ended as {} ({:?})", self.result.terminal.kind, self.result.terminal.message);
        }
        if self.result.tools.len() as u64 != tool_calls {
            bail!("the turn reported {} tool calls, the recording holds {tool_calls}", self.result.tools.len());
        }
        let Totals { events, transcript_owned, delivered, .. } = &self.totals;
        let notes = delivered.notifications;
        if notes == 0 || notes > *events || delivered.last_seq != Some(notes - 1) {
            bail!(
                "{events} events, but the host received {notes} attempt/event notifications, the last numbered {:?}",
                delivered.last_seq
            );
        }
        if !transcript_owned || delivered.rows == 0 {
            bail!("the host's transcript does not hold the turn ({} rows appended)", delivered.rows);
        }
        Ok(())
    }
}

/// What the host side of an attempt is called, and whether it times stamps.
pub struct HostSide {
    /// The attempt id (each attempt its own, which also keys the backend's warm processes).
    pub attempt_id: String,
    /// Whether the latency stamps are timed.
    pub stamps: bool,
}

impl HostSide {
    /// An attempt `attempt_id`, not timing stamps.
    pub fn new(attempt_id: impl Into<String>) -> HostSide {
        HostSide { attempt_id: attempt_id.into(), stamps: false }
    }
}

/// Every approval granted, no host tools, no tool-terminal observer (the host end takes no
/// requests but transcript appends).
fn allow_all() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

/// Opens a session of `backend` on `program` (found through `Backend::locate`), keyed `key`.
pub async fn open(backend: &dyn Backend, program: &Path, key: &str) -> anyhow::Result<Box<dyn NativeSession>> {
    let facts = backend.facts();
    let program = backend.locate(Some(program)).with_context(|| format!("finding {}", facts.process))?;
    let settings = OpenSettings { program, session_key: key.to_string(), ..OpenSettings::default() };
    backend.open(settings, allow_all()).await.with_context(|| format!("starting {}", facts.process))
}

/// Runs one attempt on `backend` with `program` as its executable, in its own task (as serve runs
/// each attempt): open, one turn through serve's pipeline to the host end, stop.
pub async fn attempt(backend: &Arc<dyn Backend>, program: &Path, host: HostSide) -> anyhow::Result<Attempt> {
    let (backend, program) = (backend.clone(), program.to_path_buf());
    tokio::spawn(async move { attempt_here(backend.as_ref(), &program, host).await })
        .await
        .context("the attempt's task panicked")?
}

async fn attempt_here(backend: &dyn Backend, program: &Path, host: HostSide) -> anyhow::Result<Attempt> {
    let started = Instant::now();
    let mut native = open(backend, program, &host.attempt_id).await?;
    let connection = HostConnection::start(host.stamps);
    let label =
        ModelLabel { api: backend.facts().transcript_api.into(), provider: "bench".into(), model: "bench".into() };
    let mirror = MirrorSpec { scope: format!("clawbridge:{}", host.attempt_id), label, prompt: None };
    let pipeline = clawbridge::serve::host_pipeline(connection.peer(), &host.attempt_id, HOST_SESSION, Some(mirror));
    let input = TurnInput::text(PROMPT);
    let mut events = 0u64;
    let turn = {
        let mut sink = pipeline.gated(|event: &Event| {
            events += 1;
            pipeline.push(event);
        });
        let cancel = CancellationToken::new();
        native.run_turn(TurnRequest { input: &input, sink: &mut sink, cancel: &cancel }).await
    };
    let (result, failure) = match turn {
        Ok(result) => (result, None),
        Err(error) => (failed(&error.to_string()), Some(error)),
    };
    let mirrored = pipeline.finish(&result).await;
    let delivered = connection.finish().await;
    let elapsed = started.elapsed();
    native.shutdown().await;
    if let Some(error) = failure {
        return Err(anyhow::Error::new(error).context("running the turn"));
    }
    if let Some(error) = mirrored.error {
        return Err(anyhow::Error::new(error).context("mirroring the transcript into the host's"));
    }
    let totals = Totals {
        events,
        dropped_bytes: mirrored.dropped_delta_bytes,
        transcript_owned: mirrored.owned,
        delivered: delivered?,
    };
    Ok(Attempt { result, totals, elapsed })
}

/// The result the pipeline closes a turn with when the turn could not run (as serve does).
fn failed(message: &str) -> AttemptResult {
    let mut recorder = AttemptRecorder::new();
    let terminal = TurnTerminal { kind: TerminalKind::Failed, message: Some(message.to_string()), cause: None };
    recorder.record(&Event::TurnTerminal(terminal));
    recorder.finish(None)
}
