//! Start-up: the product's `clawbridge serve` spawned → its answer to `initialize` read, over many
//! runs.
//!
//! `serve` probes its backends before it answers (`codex --version`, `claude --version`), so the
//! figure depends on what it finds. The judged row runs it in an empty environment (no `PATH`, no
//! backend variables, only its state dir), where no backend of the registry finds an executable:
//! clawbridge's own start-up. When a backend of the bench's registry finds one in this environment
//! (`Backend::locate`: its variable or `PATH`), a second row shows start-up with the probes, which
//! `serve` then runs as well.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::report::{Report, Row, Target};
use super::{Scenario, Setup};

/// The issue's target for the median, in milliseconds.
const P50_TARGET_MS: f64 = 10.0;

/// Times the product's `serve` start-up and adds its rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let product = ctx.product.to_path_buf();
    if !product.is_file() {
        bail!(
            "no clawbridge executable at {}: build it (`cargo build --release -p clawbridge`) or pass --clawbridge",
            product.display()
        );
    }
    let runs = ctx.sizes.startup_runs;
    let state = ctx.work.join("startup-state");
    let times_bare = {
        let (product, state) = (product.clone(), state.clone());
        tokio::task::spawn_blocking(move || times(&product, &state, Environment::Empty, runs)).await??
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

    let found: Vec<&str> = ctx.backends.iter().filter(|b| b.locate(None).is_ok()).map(|b| b.facts().backend).collect();
    if !found.is_empty() {
        let names = found.join(" and ");
        let runs = runs.clamp(2, 11);
        // The state dir has no version cache for these executables yet: the first start probes them.
        let times_probed =
            tokio::task::spawn_blocking(move || times(&product, &state, Environment::Inherited, runs)).await??;
        let cold = times_probed[0].as_secs_f64() * 1e3;
        let (p50, _) = summary(&times_probed[1..]);
        report.push(
            Row::info(Scenario::Startup, format!("… first start probing {names} (cold)"), cold, "ms")
                .with_note("runs each backend's `--version` before it answers initialize"),
        );
        report.push(
            Row::judged(
                Scenario::Startup,
                format!("… p50 of the next {} starts probing {names}", runs - 1),
                p50,
                "ms",
                Target::AtMost(P50_TARGET_MS),
            )
            .with_note("`--version` answers come from the state dir's cache while the executables are unchanged"),
        );
    }
    Ok(())
}

/// The environment `serve` is started in.
#[derive(Clone, Copy, Debug)]
enum Environment {
    /// Nothing but its state dir: no backend finds an executable.
    Empty,
    /// The bench's own, so `serve` finds what the bench's backends find.
    Inherited,
}

/// Median and maximum, in milliseconds.
fn summary(times: &[Duration]) -> (f64, f64) {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], ms[ms.len() - 1])
}

/// Spawns `serve` `runs` times, each timed from spawn to the `initialize` answer.
fn times(product: &Path, state: &Path, environment: Environment, runs: usize) -> anyhow::Result<Vec<Duration>> {
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":{},"host":{{"name":"bench","version":"0"}}}}}}"#,
        clawbridge_protocol::host::PROTOCOL_VERSION
    );
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let mut command = Command::new(product);
        if let Environment::Empty = environment {
            command.env_clear();
        }
        let mut child = command
            .arg("serve")
            .env("CLAWBRIDGE_STATE_DIR", state)
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
        if value["result"]["protocolVersion"] != clawbridge_protocol::host::PROTOCOL_VERSION {
            bail!("serve did not accept initialize: {answer}");
        }
        if !status.success() {
            bail!("serve exited with {status} after its stdin closed");
        }
        times.push(elapsed);
    }
    Ok(times)
}
