//! The side-by-side anchor: the official Python Claude Agent SDK (`claude-agent-sdk`, pinned by
//! `scripts/bench-sdk-anchor.sh` into its own virtualenv) and clawbridge consume the same generated
//! Claude stream from the same stand-in CLI, one after the other in this run.
//!
//! Both are timed from launching the CLI to the turn's last message, the version check and the
//! `initialize` handshake included. A message is one line the CLI writes other than control traffic
//! (the SDK yields exactly those from `query()`); clawbridge's figure is those lines over its time
//! through the full path (the Claude backend's session → events → serve's pipeline to the host).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

use super::generate;
use super::report::{Report, Row, Target, number};
use super::session::{self, HostSide};
use super::throughput::{Output, keep_best, product_run};
use super::{Scenario, Setup};

/// The target: clawbridge at ten times the SDK's messages/s or better.
const SPEEDUP_TARGET: f64 = 10.0;
/// Where the install script puts the venv, relative to the repository.
const VENV_PYTHON: &str = ".peers/sdk-anchor/venv/bin/python";
/// The anchor script, relative to the repository.
const SCRIPT: &str = "scripts/sdk-anchor/anchor.py";

/// Places the repository may be: the working directory and the executable's ancestors
/// (`target*/release/clawbridge-bench`).
fn repo_candidates() -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = std::env::current_dir().into_iter().collect();
    if let Ok(me) = std::env::current_exe() {
        candidates.extend(me.ancestors().skip(1).take(4).map(Path::to_path_buf));
    }
    candidates
}

/// The venv's Python, when the install script has run.
pub fn default_python() -> Option<PathBuf> {
    repo_candidates().into_iter().map(|r| r.join(VENV_PYTHON)).find(|p| p.exists())
}

fn default_script(python: &Path) -> Option<PathBuf> {
    // `<repo>/.peers/sdk-anchor/venv/bin/python` → `<repo>`.
    let from_venv = python.ancestors().nth(5).map(Path::to_path_buf);
    from_venv.into_iter().chain(repo_candidates()).map(|r| r.join(SCRIPT)).find(|p| p.is_file())
}

/// Runs the anchor: the SDK, then clawbridge, on the same generated stream and CLI (skipped, with
/// what to do, without the SDK's venv).
pub async fn run(
    ctx: &Setup<'_>,
    python: Option<PathBuf>,
    script: Option<PathBuf>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let Some(python) = python.filter(|p| p.exists()) else {
        report.skipped(
            Scenario::Anchor,
            "the Python SDK's venv is not installed: run `bash scripts/bench-sdk-anchor.sh` (or pass --sdk-python)",
        );
        return Ok(());
    };
    let Some(script) = script.or_else(|| default_script(&python)) else {
        bail!("cannot find {SCRIPT}; pass --sdk-script");
    };
    let generated = generate::claude(ctx.work, "anchor-claude", ctx.sizes.claude_lines)?;
    let role = [std::ffi::OsStr::new("replay"), generated.recording.as_os_str()];
    let cli = session::peer_program(ctx.work, "anchor-claude", ctx.me, &role)?;
    let claude = ctx.backend("claude")?;
    // Every line but the answer to `initialize` is a message.
    let messages = generated.native_lines - 1;
    let runs = if ctx.sizes.claude_lines < 50_000 { 1 } else { 3 };

    // The three take turns, the order rotating from round to round, each keeping its best run.
    let mut sdk: Option<Duration> = None;
    let mut sdk_version = String::new();
    let mut ours: Option<Duration> = None;
    let mut run_pipe: Option<Duration> = None;
    for round in 0..runs {
        for step in 0..3 {
            match (step + round) % 3 {
                0 => {
                    let (seconds, version) = sdk_run(&python, &script, &cli, messages).await?;
                    keep_best(&mut sdk, Duration::from_secs_f64(seconds));
                    sdk_version = version;
                }
                1 => {
                    let host = HostSide::new(format!("bench-anchor-{round}"));
                    let attempt = session::attempt(&claude, &cli, host).await?;
                    attempt.check(generated.tool_calls)?;
                    keep_best(&mut ours, attempt.elapsed);
                }
                _ => keep_best(&mut run_pipe, product_run(ctx, "claude", &generated, Output::Pipe)?),
            }
        }
    }
    let (Some(sdk), Some(ours), Some(run_pipe)) = (sdk, ours, run_pipe) else { bail!("the anchor ran no round") };
    let rate = |time: Duration| messages as f64 / time.as_secs_f64();
    let what = format!("{} messages", number(messages as f64));
    report.push(Row::info(
        Scenario::Anchor,
        format!("Python claude-agent-sdk {sdk_version} query(), {what}"),
        rate(sdk),
        "msg/s",
    ));
    report.push(Row::info(
        Scenario::Anchor,
        "clawbridge full path (in-process serve pipeline), same stream and CLI",
        rate(ours),
        "msg/s",
    ));
    report.push(Row::judged(
        Scenario::Anchor,
        "clawbridge full path (in-process serve pipeline) ÷ Python SDK",
        rate(ours) / rate(sdk),
        "×",
        Target::AtLeast(SPEEDUP_TARGET),
    ));
    report.push(Row::info(
        Scenario::Anchor,
        "`clawbridge run --backend claude --json` to a pipe, same stream and CLI",
        rate(run_pipe),
        "msg/s",
    ));
    report.push(Row::info(
        Scenario::Anchor,
        "`clawbridge run --json` to a pipe ÷ Python SDK",
        rate(run_pipe) / rate(sdk),
        "×",
    ));
    Ok(())
}

/// One run of the SDK's `query()` on `cli`: its seconds, and the SDK's version.
async fn sdk_run(python: &Path, script: &Path, cli: &Path, messages: u64) -> anyhow::Result<(f64, String)> {
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg("--cli")
        .arg(cli)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", python.display()))?;
    if !output.status.success() {
        bail!("the SDK anchor failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let figures: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .with_context(|| format!("the SDK anchor printed {stdout:?}"))?;
    let seen = figures["messages"].as_u64().unwrap_or(0);
    if seen != messages {
        bail!("the SDK yielded {seen} messages, the stream holds {messages}: {figures}");
    }
    let seconds = figures["seconds"].as_f64().filter(|s| s.is_finite() && *s > 0.0);
    let seconds = seconds.ok_or_else(|| anyhow::anyhow!("the SDK anchor printed no time: {figures}"))?;
    Ok((seconds, figures["sdkVersion"].as_str().unwrap_or("?").to_string()))
}
