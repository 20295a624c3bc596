//! Where a spawn per attempt spends its time before the turn: the pinned `codex app-server`
//! spawned on the gateway run's CODEX_HOME, timed to its `initialize` answer, then to its
//! `thread/resume` answer for the thread the gateway bound (`excludeTurns: true`, as clawbridge
//! resumes), then from stdin closed to its exit. Plain JSON-RPC lines, no bridge in between: the
//! floor of what serve pays per attempt while it spawns one server per attempt.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clawbridge_fixtures::peers::Sandbox;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdout, Command};

use super::super::Scenario;
use super::super::report::Row;
use super::median_p90;

/// The longest answer line read; `thread/resume` without turns is a few KiB.
const LINE_LIMIT: u64 = 16 << 20;
/// How long one step may take before the measurement is called broken.
const STEP_LIMIT: Duration = Duration::from_secs(30);

/// One spawn's figures, in milliseconds.
struct Spawn {
    /// Spawned → `initialize` answered.
    initialize: f64,
    /// `thread/resume` sent → answered.
    resume: f64,
    /// stdin closed → exited.
    stop: f64,
}

/// Spawns codex `spawns` times and returns the median rows.
pub async fn measure(codex: &Path, sandbox: &Sandbox, thread: &str, spawns: usize) -> anyhow::Result<Vec<Row>> {
    let mut all = Vec::with_capacity(spawns);
    for _ in 0..spawns.max(1) {
        all.push(once(codex, sandbox, thread).await?);
    }
    let k = all.len();
    let median = |pick: fn(&Spawn) -> f64| median_p90(&mut all.iter().map(pick).collect::<Vec<_>>()).0;
    let (init, resume, stop) = (median(|s| s.initialize), median(|s| s.resume), median(|s| s.stop));
    Ok(vec![
        Row::info(
            Scenario::Gateway,
            format!("codex app-server spawned → initialize answered, median of {k}"),
            init,
            "ms",
        )
        .with_note("paid once per attempt while serve spawns a server per attempt; once for the pool's server"),
        Row::info(Scenario::Gateway, format!("… thread/resume answered, median of {k}"), resume, "ms"),
        Row::info(Scenario::Gateway, format!("… stdin closed → exited, median of {k}"), stop, "ms")
            .with_note("serve awaits this stop before it answers attempt/run"),
        Row::info(Scenario::Gateway, "… spawn + initialize + resume + stop per attempt", init + resume + stop, "ms"),
    ])
}

async fn once(codex: &Path, sandbox: &Sandbox, thread: &str) -> anyhow::Result<Spawn> {
    let started = Instant::now();
    let mut child = Command::new(codex)
        .arg("app-server")
        .current_dir(sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home())
        .env("TMPDIR", sandbox.tmp())
        .env("CODEX_HOME", sandbox.codex_home())
        .env("LANG", "C.UTF-8")
        .env("TZ", "UTC")
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {} app-server", codex.display()))?;
    let mut stdin = child.stdin.take().context("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "clientInfo": {"name": "clawbridge_bench", "version": env!("CARGO_PKG_VERSION")},
        "capabilities": {"experimentalApi": false}}});
    send(&mut stdin, &initialize).await?;
    answer(&mut stdout, 1).await?;
    let initialized = started.elapsed();
    send(&mut stdin, &json!({"jsonrpc": "2.0", "method": "initialized"})).await?;
    let resume_sent = Instant::now();
    let resume = json!({"jsonrpc": "2.0", "id": 2, "method": "thread/resume", "params": {
        "threadId": thread, "cwd": sandbox.work(), "excludeTurns": true}});
    send(&mut stdin, &resume).await?;
    let resumed = answer(&mut stdout, 2).await?;
    let resume_took = resume_sent.elapsed();
    if resumed["thread"]["id"] != thread {
        bail!("thread/resume answered for another thread: {resumed}");
    }
    let closed = Instant::now();
    drop(stdin);
    match tokio::time::timeout(STEP_LIMIT, child.wait()).await {
        Ok(status) => {
            status.context("waiting for codex app-server")?;
        }
        Err(_) => {
            child.kill().await.context("killing codex app-server")?;
            bail!("codex app-server did not exit within {STEP_LIMIT:?} of stdin closing");
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(Spawn { initialize: ms(initialized), resume: ms(resume_took), stop: ms(closed.elapsed()) })
}

async fn send(stdin: &mut tokio::process::ChildStdin, message: &Value) -> anyhow::Result<()> {
    let mut line = message.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).await.context("writing to codex app-server")
}

/// Reads lines until the answer to request `id`; its `result`, or its error as one.
async fn answer(stdout: &mut BufReader<ChildStdout>, id: u64) -> anyhow::Result<Value> {
    let read = async {
        loop {
            let mut line = Vec::new();
            let n = (&mut *stdout).take(LINE_LIMIT).read_until(b'\n', &mut line).await?;
            if n == 0 {
                bail!("codex app-server closed its output before answering request {id}");
            }
            if line.last() != Some(&b'\n') {
                bail!("codex app-server wrote a line over {LINE_LIMIT} bytes");
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else { continue };
            if message["id"] != id {
                continue;
            }
            if let Some(error) = message.get("error") {
                bail!("codex app-server refused request {id}: {error}");
            }
            return Ok(message["result"].clone());
        }
    };
    tokio::time::timeout(STEP_LIMIT, read)
        .await
        .map_err(|_| anyhow!("no answer to request {id} within {STEP_LIMIT:?}"))?
}
