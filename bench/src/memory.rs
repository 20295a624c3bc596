//! Memory: each scenario runs in a child process of its own (`clawbridge-bench measure …`, with the
//! product's allocator), so its peak RSS (`VmHWM`) holds the bridge's work and nothing of the bench
//! (generated recordings, other scenarios). The child prints its figures as one JSON line.
//!
//! - flood: one Codex turn whose command streams 1 GiB of output, through serve's pipeline;
//! - concurrent: N Codex attempts at once (each its own replay peer, session, pipeline and host
//!   connection), all of which must complete;
//! - idle: N sessions opened (a thread started) and no turn; the RSS growth per session.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::generate;
use super::report::{Report, Row, Target, number};
use super::session::{self, HostSide};
use super::sys;
use super::{Scenario, Setup};

/// The target for the 1 GiB output turn, in MiB.
const FLOOD_TARGET_MIB: f64 = 48.0;
/// Runs of the 1 GiB turn (the worst peak is the figure).
const FLOOD_RUNS: usize = 10;
/// Lines of the recording each concurrent attempt replays.
const CONCURRENT_LINES: usize = 1_000;

/// `clawbridge-bench measure …` arguments.
#[derive(Debug, clap::Args)]
pub struct MeasureArgs {
    /// Which scenario.
    #[command(subcommand)]
    what: Measured,
}

/// The scenarios a measured child runs.
#[derive(Debug, clap::Subcommand)]
enum Measured {
    /// One Codex turn streaming `bytes` of command output.
    Flood {
        /// Bytes of command output.
        #[arg(long)]
        bytes: u64,
        /// Where the peer's launcher goes.
        #[arg(long)]
        work: PathBuf,
    },
    /// `attempts` Codex attempts at once, each replaying `recording`.
    Concurrent {
        /// How many.
        #[arg(long)]
        attempts: usize,
        /// The recording each peer plays.
        #[arg(long)]
        recording: PathBuf,
        /// Tool calls in it (each attempt must report them all).
        #[arg(long)]
        tools: u64,
        /// Where the peers' launcher goes.
        #[arg(long)]
        work: PathBuf,
    },
    /// `sessions` idle Codex sessions.
    Idle {
        /// How many.
        #[arg(long)]
        sessions: usize,
        /// The recording each peer plays (it waits at the turn start).
        #[arg(long)]
        recording: PathBuf,
        /// Where the peers' launcher goes.
        #[arg(long)]
        work: PathBuf,
    },
}

/// Runs each memory scenario in a measured child and adds its rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let mib = |bytes: &Value| bytes.as_f64().unwrap_or(0.0) / (1024.0 * 1024.0);

    let bytes = ctx.sizes.flood_bytes;
    // The peak depends on how far the queues between reader, session, forwarder and host fill, which
    // varies with scheduling: the judged figure is the worst of several runs.
    let runs = if bytes >= 1 << 30 { FLOOD_RUNS } else { 1 };
    let mut floods = Vec::new();
    for _ in 0..runs {
        let args = vec!["flood".into(), format!("--bytes={bytes}"), format!("--work={}", ctx.work.display())];
        floods.push(child(ctx, args).await.context("the 1 GiB output turn")?);
    }
    let mut peaks: Vec<f64> = floods.iter().map(|f| mib(&f["peakRss"])).collect();
    peaks.sort_by(f64::total_cmp);
    let seconds: f64 = floods.iter().map(|f| f["seconds"].as_f64().unwrap_or(f64::NAN)).sum::<f64>() / runs as f64;
    let size = if bytes >= 1 << 30 { format!("{} GiB", bytes >> 30) } else { format!("{} MiB", bytes >> 20) };
    let runs_text = if runs > 1 { format!(", worst of {runs}") } else { String::new() };
    report.push(
        Row::judged(
            Scenario::Memory,
            format!("codex turn streaming {size} of command output: peak RSS{runs_text}"),
            peaks[peaks.len() - 1],
            "MiB",
            Target::AtMost(FLOOD_TARGET_MIB),
        )
        .with_note(format!(
            "peaks {} MiB; {} events per turn, {} s on average ({} MB/s of output)",
            peaks.iter().map(|p| number(*p)).collect::<Vec<_>>().join(" / "),
            number(floods[0]["events"].as_f64().unwrap_or(0.0)),
            number(seconds),
            number(bytes as f64 / 1e6 / seconds)
        )),
    );

    let generated = generate::codex(ctx.work, "memory-attempt", CONCURRENT_LINES)?;
    let attempts = ctx.sizes.concurrent_attempts;
    let concurrent = child(
        ctx,
        vec![
            "concurrent".into(),
            format!("--attempts={attempts}"),
            format!("--recording={}", generated.recording.display()),
            format!("--tools={}", generated.tool_calls),
            format!("--work={}", ctx.work.display()),
        ],
    )
    .await
    .context("the concurrent attempts")?;
    let completed = concurrent["completed"].as_f64().unwrap_or(0.0);
    let mut row = Row::judged(
        Scenario::Memory,
        format!("{attempts} concurrent codex attempts ({CONCURRENT_LINES}-line replays): completed"),
        completed,
        "attempts",
        Target::AtLeast(attempts as f64),
    );
    if let Some(error) = concurrent["firstError"].as_str() {
        row = row.with_note(format!("first failure: {error}"));
    }
    report.push(row);
    report.push(
        Row::info(
            Scenario::Memory,
            format!("{attempts} concurrent codex attempts: peak RSS"),
            mib(&concurrent["peakRss"]),
            "MiB",
        )
        .with_note(format!("all done in {} s", number(concurrent["seconds"].as_f64().unwrap_or(0.0)))),
    );

    let sessions = ctx.sizes.idle_sessions;
    let idle = child(
        ctx,
        vec![
            "idle".into(),
            format!("--sessions={sessions}"),
            format!("--recording={}", generated.recording.display()),
            format!("--work={}", ctx.work.display()),
        ],
    )
    .await
    .context("the idle sessions")?;
    let grown = idle["rssAfter"].as_f64().unwrap_or(0.0) - idle["baselineRss"].as_f64().unwrap_or(0.0);
    report.push(Row::info(
        Scenario::Memory,
        "bridge process with one session run and stopped: RSS",
        mib(&idle["baselineRss"]),
        "MiB",
    ));
    report.push(
        Row::info(
            Scenario::Memory,
            format!("idle codex session (RSS growth over {sessions}, each)"),
            grown / sessions as f64 / 1024.0,
            "KiB",
        )
        .with_note("a session opened (a thread started) and no turn; its peer process is not counted"),
    );
    Ok(())
}

/// Runs `clawbridge-bench measure ARGS…` and returns the JSON it printed.
async fn child(ctx: &Setup<'_>, args: Vec<String>) -> anyhow::Result<Value> {
    let output = tokio::process::Command::new(ctx.me)
        .arg("measure")
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .context("spawning the measured child")?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let tail: String =
            stderr.lines().rev().take(10).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        bail!("the measured child failed ({}): {tail}", output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).with_context(|| format!("the measured child printed no figures: {stdout}"))
}

/// The measured child: runs one scenario and prints its figures.
pub async fn measure(args: MeasureArgs) -> anyhow::Result<()> {
    let me = std::env::current_exe().context("cannot find the clawbridge-bench executable")?;
    let backends = session::registry();
    let codex = backends.by_name("codex").cloned().context("no codex backend is registered")?;
    let figures = match args.what {
        Measured::Flood { bytes, work } => {
            let bytes_arg = format!("--bytes={bytes}");
            let program = session::peer_program(&work, "flood", &me, &[OsStr::new("flood"), OsStr::new(&bytes_arg)])?;
            let attempt = session::attempt(&codex, &program, HostSide::new("bench-flood")).await?;
            attempt.check(1)?;
            json!({"peakRss": sys::peak_rss(), "seconds": attempt.elapsed.as_secs_f64(), "events": attempt.totals.events})
        }
        Measured::Concurrent { attempts, recording, tools, work } => {
            let program = replay_program(&work, "concurrent", &me, &recording)?;
            let started = Instant::now();
            let mut running = JoinSet::new();
            for i in 0..attempts {
                let (codex, program) = (codex.clone(), program.clone());
                running.spawn(async move {
                    let attempt =
                        session::attempt(&codex, &program, HostSide::new(format!("bench-concurrent-{i}"))).await?;
                    attempt.check(tools)
                });
            }
            let (mut completed, mut first_error) = (0u64, None::<String>);
            while let Some(joined) = running.join_next().await {
                match joined {
                    Ok(Ok(())) => completed += 1,
                    Ok(Err(error)) => {
                        first_error.get_or_insert(format!("{error:#}"));
                    }
                    Err(join) => {
                        first_error.get_or_insert(join.to_string());
                    }
                }
            }
            json!({"peakRss": sys::peak_rss(), "seconds": started.elapsed().as_secs_f64(), "completed": completed,
                   "firstError": first_error})
        }
        Measured::Idle { sessions, recording, work } => {
            let program = replay_program(&work, "idle", &me, &recording)?;
            // One session first, so the baseline holds the runtime's one-off costs.
            let warm = session::open(codex.as_ref(), &program, "bench-idle-warm").await?;
            warm.shutdown().await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            let baseline = sys::current_rss();
            let mut live = Vec::new();
            for i in 0..sessions {
                live.push(session::open(codex.as_ref(), &program, &format!("bench-idle-{i}")).await?);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let after = sys::current_rss();
            futures::future::join_all(live.into_iter().map(clawbridge_bridge::backend::NativeSession::shutdown)).await;
            json!({"peakRss": sys::peak_rss(), "baselineRss": baseline, "rssAfter": after, "sessions": sessions})
        }
    };
    backends.shutdown().await;
    println!("{figures}");
    Ok(())
}

/// A launcher of the replay role playing `recording`.
fn replay_program(work: &Path, name: &str, me: &Path, recording: &Path) -> anyhow::Result<PathBuf> {
    session::peer_program(work, name, me, &[OsStr::new("replay"), recording.as_os_str()])
}
