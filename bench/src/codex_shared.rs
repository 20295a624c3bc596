//! Per-turn overhead of a warm shared `codex app-server` against a spawn per attempt: the real
//! pinned codex on the scripted mock model, each attempt opened, run and ended through the seam
//! (`Backend::open` → `NativeSession::run_turn` → `shutdown`) exactly as `serve` runs one, once with
//! `[codex] server = "per-attempt"` and once with `"shared"`. Each attempt resumes the previous
//! attempt's thread, as a host session's next turn does. Skipped when codex is not installed
//! (`bash scripts/install-peers.sh codex`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clawbridge_adapters::codex::CodexBackend;
use clawbridge_adapters::codex::shared::ServerMode;
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::backend::{Backend, OpenSettings, TurnInput, TurnRequest};
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_fixtures::peers::codex::config_toml;
use clawbridge_fixtures::peers::{Sandbox, find_peer, start_mock};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::report::{Report, Row};
use super::{Scenario, Setup};

/// Measured attempts per mode (after one unmeasured warm-up each).
fn attempts(ctx: &Setup<'_>) -> usize {
    if ctx.sizes.startup_runs < 10 { 3 } else { 20 }
}

/// Runs both modes and adds their rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let codex = match find_peer("codex") {
        Ok(codex) => codex,
        Err(why) => {
            report.skipped(Scenario::CodexShared, &format!("the real codex is not installed: {why}"));
            return Ok(());
        }
    };
    let sandbox = Sandbox::new().context("a sandbox for codex")?;
    let mock = start_mock(&json!({"default": {"text": "Hello from the mock model."}}))
        .await
        .map_err(|why| anyhow::anyhow!("the mock model: {why}"))?;
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock))?;
    let runs = attempts(ctx);
    let mut medians = Vec::new();
    for (label, mode) in
        [("per-attempt", ServerMode::PerAttempt), ("shared", ServerMode::Shared(ServerMode::DEFAULT_LIMITS))]
    {
        let backend = CodexBackend::native()
            .configured(clawbridge_adapters::AgentOptions::default(), Some(sandbox.codex_home()))
            .with_servers(mode);
        let times = turns(&backend, &codex, &sandbox.work(), runs + 1).await;
        backend.shutdown().await;
        let mut times = times?;
        // The first attempt starts the shared server: warm-up, not measured.
        times.remove(0);
        times.sort_unstable();
        let median = times[times.len() / 2];
        medians.push(median);
        report.push(Row::info(
            Scenario::CodexShared,
            format!("codex attempt (open, one turn, end), {label}: median of {runs}"),
            millis(median),
            "ms",
        ));
    }
    let (per_attempt, shared) = (millis(medians[0]), millis(medians[1]));
    // A ratio, never negative however noisy the machine; the difference is the note.
    report.push(
        Row::info(Scenario::CodexShared, "codex attempt, per-attempt ÷ shared", per_attempt / shared.max(0.001), "×")
            .with_note(format!(
                "a warm shared server saves {:.1} ms per turn here (per-attempt median minus shared median; same mock, the same thread resumed each attempt)",
                per_attempt - shared
            )),
    );
    Ok(())
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `count` attempts on `backend`, each resuming the thread the one before it used; their times.
async fn turns(backend: &CodexBackend, codex: &Path, work: &Path, count: usize) -> anyhow::Result<Vec<Duration>> {
    let mut thread: Option<String> = None;
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let started = Instant::now();
        let settings = OpenSettings {
            program: codex.to_path_buf(),
            session_key: "bench-shared".into(),
            cwd: Some(work.to_path_buf()),
            resume: thread.clone(),
            ..OpenSettings::default()
        };
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
            tools: Arc::new(NoHostTools),
            observer: Arc::new(NoObserver),
        };
        let mut native = backend.open(settings, hooks).await.context("opening a codex session")?;
        let input = TurnInput::text("Say hello.");
        let cancel = CancellationToken::new();
        let mut sink = |_: &Event| {};
        let result = native.run_turn(TurnRequest { input: &input, sink: &mut sink, cancel: &cancel }).await;
        thread = native.native_id();
        native.shutdown().await;
        let result = result.context("running a codex turn")?;
        anyhow::ensure!(result.terminal.kind == TerminalKind::Ok, "attempt {n} ended {:?}", result.terminal);
        times.push(started.elapsed());
    }
    Ok(times)
}
