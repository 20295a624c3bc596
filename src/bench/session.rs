//! One measured attempt on a real adapter session (Codex or Claude), its events going through the
//! host pipeline; the peer is whatever program the caller names (a bench role of this binary).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clawbridge_adapters::{claude, codex};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::events::TerminalKind;
use tokio_util::sync::CancellationToken;

use super::pipeline::{HostPipeline, PipelineOptions, Totals};

/// The prompt of every measured turn (the peers do not read it).
pub const PROMPT: &str = "Run the test suite and tell me what failed.";

/// A finished attempt.
pub struct Attempt {
    /// The session's result.
    pub result: AttemptResult,
    /// What the host side handled.
    pub totals: Totals,
    /// From spawning the peer to the last notification delivered and transcript row written.
    pub elapsed: Duration,
}

impl Attempt {
    /// Fails unless the turn ended `ok` with `tool_calls` tools, each reported once.
    pub fn check(&self, tool_calls: u64) -> anyhow::Result<()> {
        if self.result.terminal.kind != TerminalKind::Ok {
            bail!("the turn ended as {} ({:?})", self.result.terminal.kind, self.result.terminal.message);
        }
        if self.result.tools.len() as u64 != tool_calls {
            bail!("the turn reported {} tool calls, the recording holds {tool_calls}", self.result.tools.len());
        }
        let totals = &self.totals;
        if totals.delivered.lines != totals.forwarded || totals.forwarded > totals.events || totals.forwarded == 0 {
            bail!(
                "{} events, {} forwarded, but {} notifications reached the host",
                totals.events,
                totals.forwarded,
                totals.delivered.lines
            );
        }
        Ok(())
    }
}

/// Where the host side of an attempt keeps its transcript, and whether it times stamps.
pub struct HostSide {
    /// The attempt id.
    pub attempt_id: String,
    /// The transcript file.
    pub transcript: PathBuf,
    /// Whether the latency stamps are timed.
    pub stamps: bool,
}

impl HostSide {
    /// An attempt `attempt_id` whose transcript is `transcript`, not timing stamps.
    pub fn new(attempt_id: impl Into<String>, transcript: PathBuf) -> HostSide {
        HostSide { attempt_id: attempt_id.into(), transcript, stamps: false }
    }

    fn pipeline(&self) -> anyhow::Result<HostPipeline> {
        HostPipeline::start(PipelineOptions {
            attempt_id: &self.attempt_id,
            transcript: &self.transcript,
            prompt: PROMPT,
            stamps: self.stamps,
        })
    }
}

fn allow_all() -> (Arc<FixedApprover>, Arc<NoHostTools>, Arc<NoObserver>) {
    (Arc::new(FixedApprover(ApprovalDecision::Allow)), Arc::new(NoHostTools), Arc::new(NoObserver))
}

/// A Codex session on `program launcher_args… app-server`.
pub async fn connect_codex(program: &Path, launcher_args: Vec<OsString>) -> anyhow::Result<codex::CodexSession> {
    let mut config = codex::CodexConfig::new(program);
    config.launcher_args = launcher_args;
    let (approver, tools, observer) = allow_all();
    let hooks = codex::SessionHooks { approver, tools, observer };
    codex::CodexSession::connect(config, hooks).await.context("connecting the codex session")
}

/// Runs one Codex attempt in its own task (as `serve` runs each attempt): connect, start a thread,
/// one turn through the host pipeline, stop.
pub async fn codex_attempt(program: &Path, launcher_args: Vec<OsString>, host: HostSide) -> anyhow::Result<Attempt> {
    let program = program.to_path_buf();
    tokio::spawn(async move { codex_attempt_here(&program, launcher_args, host).await })
        .await
        .context("the attempt's task panicked")?
}

async fn codex_attempt_here(program: &Path, launcher_args: Vec<OsString>, host: HostSide) -> anyhow::Result<Attempt> {
    let started = Instant::now();
    let mut session = connect_codex(program, launcher_args).await?;
    let thread = session.start_thread(&codex::ThreadOptions::default()).await.context("starting a thread")?;
    let pipeline = host.pipeline()?;
    let mut sink = pipeline.sink();
    let turn = session.run_turn(&thread.thread_id, PROMPT, &mut sink, &CancellationToken::new()).await;
    drop(sink);
    let totals = pipeline.finish().await;
    let elapsed = started.elapsed();
    session.shutdown().await;
    Ok(Attempt { result: turn.context("running the turn")?, totals: totals?, elapsed })
}

/// A shell script standing in for `claude`: runs this binary replaying `recording`, passing on the
/// CLI's arguments (so `--version` is answered). The Python SDK's `cli_path` takes one path, so the
/// anchor and clawbridge both launch this very file.
pub fn claude_wrapper(dir: &Path, me: &Path, recording: &Path) -> anyhow::Result<PathBuf> {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let path = dir.join(format!(
        "claude-{}",
        recording.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let script = format!("#!/bin/sh\nexec {} bench replay {} \"$@\"\n", quote(me), quote(recording));
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Runs one Claude attempt on `cli` in its own task (version gate, spawn, `initialize`, one turn
/// through the host pipeline, stop).
pub async fn claude_attempt(cli: &Path, host: HostSide) -> anyhow::Result<Attempt> {
    let cli = cli.to_path_buf();
    tokio::spawn(async move { claude_attempt_here(&cli, host).await }).await.context("the attempt's task panicked")?
}

async fn claude_attempt_here(cli: &Path, host: HostSide) -> anyhow::Result<Attempt> {
    let started = Instant::now();
    let (approver, tools, observer) = allow_all();
    let hooks = claude::SessionHooks { approver, tools, observer };
    let mut session =
        claude::ClaudeSession::connect(claude::ClaudeConfig::new(cli), hooks).await.context("connecting claude")?;
    let pipeline = host.pipeline()?;
    let mut sink = pipeline.sink();
    let turn = session.run_turn(PROMPT, &mut sink, &CancellationToken::new()).await;
    drop(sink);
    let totals = pipeline.finish().await;
    let elapsed = started.elapsed();
    session.shutdown().await;
    Ok(Attempt { result: turn.context("running the turn")?, totals: totals?, elapsed })
}

/// `["bench", role, args…]` as launcher arguments.
pub fn role_args<I, S>(args: I) -> Vec<OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let mut all: Vec<OsString> = vec!["bench".into()];
    all.extend(args.into_iter().map(Into::into));
    all
}
