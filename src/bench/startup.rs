//! Start-up: `clawbridge serve` spawned → its answer to `initialize` read, over many runs.
//!
//! `serve` probes its backends before it answers (`codex --version`, `claude --version`), so the
//! figure depends on what is installed. The judged row runs with no backend to find
//! (`CLAWBRIDGE_CODEX_BIN` and `CLAWBRIDGE_CLAUDE_BIN` name a missing file): clawbridge's own
//! start-up. When a backend is configured by those variables or on `PATH`, a second row shows
//! start-up with its probe.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::report::{Report, Row, Target};
use super::{Scenario, Setup};

/// The issue's target for the median, in milliseconds.
const P50_TARGET_MS: f64 = 10.0;

pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let runs = ctx.sizes.startup_runs;
    let state = ctx.work.join("startup-state");
    let me = ctx.me.to_path_buf();
    let missing = ctx.work.join("no-such-backend");
    let bare = Backends { codex: missing.clone(), claude: missing };
    let times_bare = {
        let (me, state) = (me.clone(), state.clone());
        tokio::task::spawn_blocking(move || times(&me, &state, &bare, runs)).await??
    };
    let (p50, max) = summary(&times_bare);
    report.push(Row::judged(
        Scenario::Startup,
        format!("serve spawn → initialize answered, p50 of {runs} (no backend to probe)"),
        p50,
        "ms",
        Target::AtMost(P50_TARGET_MS),
    ));
    report.push(Row::info(Scenario::Startup, format!("… max of {runs}"), max, "ms"));

    let (codex, claude) =
        (find_backend("CLAWBRIDGE_CODEX_BIN", "codex"), find_backend("CLAWBRIDGE_CLAUDE_BIN", "claude"));
    if codex.is_some() || claude.is_some() {
        let names: Vec<&str> = [("codex", codex.is_some()), ("claude", claude.is_some())]
            .into_iter()
            .filter_map(|(name, found)| found.then_some(name))
            .collect();
        let missing = ctx.work.join("no-such-backend");
        let probed = Backends { codex: codex.unwrap_or_else(|| missing.clone()), claude: claude.unwrap_or(missing) };
        let runs = runs.clamp(2, 11);
        // The state dir has no version cache for these executables yet: the first start probes them.
        let times_probed = tokio::task::spawn_blocking(move || times(&me, &state, &probed, runs)).await??;
        let cold = times_probed[0].as_secs_f64() * 1e3;
        let (p50, _) = summary(&times_probed[1..]);
        report.push(
            Row::info(Scenario::Startup, format!("… first start probing {} (cold)", names.join(" and ")), cold, "ms")
                .with_note("runs each backend's `--version` before it answers initialize"),
        );
        report.push(
            Row::judged(
                Scenario::Startup,
                format!("… p50 of the next {} starts probing {}", runs - 1, names.join(" and ")),
                p50,
                "ms",
                Target::AtMost(P50_TARGET_MS),
            )
            .with_note("`--version` answers come from the state dir's cache while the executables are unchanged"),
        );
    }
    Ok(())
}

/// The backend executables `serve` is told to probe.
struct Backends {
    /// `CLAWBRIDGE_CODEX_BIN`.
    codex: PathBuf,
    /// `CLAWBRIDGE_CLAUDE_BIN`.
    claude: PathBuf,
}

/// A backend named by `variable`, else `name` on `PATH`.
fn find_backend(variable: &str, name: &str) -> Option<PathBuf> {
    let named = std::env::var_os(variable).map(PathBuf::from);
    let on_path = || {
        std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()))
    };
    named.or_else(on_path).filter(|p| p.is_file())
}

/// Median and maximum, in milliseconds.
fn summary(times: &[Duration]) -> (f64, f64) {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[ms.len() - 1])
}

/// Spawns `serve` `runs` times, each timed from spawn to the `initialize` answer.
fn times(me: &Path, state: &Path, backends: &Backends, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let request = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"host":{"name":"bench","version":"0"}}}"#;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let mut child = Command::new(me)
            .arg("serve")
            .env("CLAWBRIDGE_STATE_DIR", state)
            .env("CLAWBRIDGE_CODEX_BIN", &backends.codex)
            .env("CLAWBRIDGE_CLAUDE_BIN", &backends.claude)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("spawning clawbridge serve")?;
        let mut stdin = child.stdin.take().context("no stdin")?;
        writeln!(stdin, "{request}").context("writing initialize")?;
        let mut answer = String::new();
        BufReader::new(child.stdout.take().context("no stdout")?).read_line(&mut answer)?;
        let elapsed = started.elapsed();
        drop(stdin);
        let status = child.wait()?;
        let value: serde_json::Value =
            serde_json::from_str(&answer).with_context(|| format!("serve answered {answer:?}"))?;
        if value["result"]["protocolVersion"] != 1 {
            bail!("serve did not accept initialize: {answer}");
        }
        if !status.success() {
            bail!("serve exited with {status} after its stdin closed");
        }
        times.push(elapsed);
    }
    Ok(times)
}
