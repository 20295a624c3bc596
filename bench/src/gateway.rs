//! The real OpenClaw gateway (openclaw 2026.9.6 on Node 24, issue #15): one warm gateway on
//! 127.0.0.1 runs the same tool-call turn (one shell command, auto-approved, then a final text
//! quoting its output) through up to three agents on the same mock model, turn for turn:
//!
//! - `main`: the model's runtime is `clawbridge-codex` (the plugin from `openclaw-plugin/`, its one
//!   shared `clawbridge serve` — the product executable — and the real codex app-server);
//! - `builtin`: the same mock model with no runtime override, so OpenClaw's own embedded runner
//!   calls the mock's Responses API itself and runs its own `exec` tool;
//! - `codexplugin` (when `scripts/install-peers.sh openclaw-codex` installed it): OpenClaw's
//!   official Codex plugin (`@openclaw/codex`, its own app-server client and pool) on the same
//!   pinned codex binary and the same mock ([`official`]).
//!
//! One Node client ([`DRIVER`]) stays connected for the whole run and times each `agent` request
//! to its final answer; what the gateway does before and after a turn is inside the figure, what
//! the CLI would add (a new Node process per turn) is not. A turn counts only when its answer
//! quotes the command's output and it ran on the expected harness. Each round runs every agent
//! twice in a row, and the turns that follow their own agent's turn and those that follow another
//! agent's are separate figures ([`After`]): OpenClaw spends 1–2 s more before the second kind,
//! whatever the runtime (docs/peers/openclaw.md, *OpenClaw's own runtimes on the mock*).
//!
//! Afterwards [`split`] times, on the same CODEX_HOME and the thread the gateway bound, what a
//! spawn per attempt costs before the turn can start: `codex app-server` spawned → `initialize`
//! answered, `thread/resume` answered, and the stop after stdin closes. When serve keeps a warm
//! shared app-server (its default once it has one), the same bench measures that instead.

mod official;
mod split;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard, processes_with_env};
use clawbridge_fixtures::peers::openclaw_gateway::{GATEWAY_TOKEN, Gateway, free_port, with_gateway};
use clawbridge_fixtures::peers::{Sandbox, find_peer, start_mock};
use serde_json::{Value, json};

use super::report::{Report, Row, Target};
use super::{Scenario, Setup};

/// The gateway client that runs and times the turns (Node 24, OpenClaw's own `GatewayClient`).
const DRIVER: &str = include_str!("gateway_driver.mjs");
/// The prompt of every turn.
const PROMPT: &str = "Please run the live test command.";
/// What only the command's output contains (`echo live-$((6*7))`).
const MARKER: &str = "live-42";
/// Each turn's share of the driver's limit: a turn takes 1–3 s on a quiet machine, over 5 s on a
/// 2-core machine at a load of 10 (the default run holds ~200 turns).
const DRIVER_LIMIT_PER_TURN: Duration = Duration::from_secs(15);
/// The agent whose runtime is the clawbridge harness, and its model.
const BRIDGE_AGENT: &str = "main";
/// The agent on OpenClaw's own embedded runner, and its model.
const BUILTIN_AGENT: &str = "builtin";
/// Turns of each agent before the timed ones: the first starts the plugin's bridge, both fill
/// OpenClaw's caches. Each run then opens its own session with one more untimed turn.
const WARM_TURNS: usize = 2;
/// The issue's target: clawbridge's median turn no slower than the built-in runtime's.
const RATIO_TARGET: f64 = 1.0;
/// Names a file the driver's turn lines are copied to (one JSON line per turn, with `startedAt`).
const TURN_LOG_ENV: &str = "CLAWBRIDGE_BENCH_GATEWAY_TURNS";

/// How many turns to time.
#[derive(Clone, Copy, Debug)]
pub struct Turns {
    /// Timed turns of each agent per run.
    pub turns: usize,
    /// Runs; the best one (lowest median) is reported.
    pub runs: usize,
    /// Spawns of `codex app-server` for the per-attempt split.
    pub spawns: usize,
}

/// One harness under test.
#[derive(Clone, Copy, Debug)]
struct Harnessed {
    /// The row label.
    label: &'static str,
    /// The OpenClaw agent whose model runs on it.
    agent: &'static str,
    /// The `agentHarnessId` its turns must report.
    harness: &'static str,
}

/// clawbridge's harness, the one judged.
const BRIDGE: Harnessed = Harnessed { label: "clawbridge-codex", agent: BRIDGE_AGENT, harness: "clawbridge-codex" };
/// OpenClaw's embedded runner.
const EMBEDDED: Harnessed =
    Harnessed { label: "openclaw built-in (embedded runner)", agent: BUILTIN_AGENT, harness: "openclaw" };

/// Runs the gateway bench and adds its rows (skipped when a peer is missing).
pub async fn run(ctx: &Setup<'_>, report: &mut Report, turns: Turns) -> anyhow::Result<()> {
    let peers = ["codex", "node", "openclaw"].map(find_peer);
    if let Some(Err(why)) = peers.iter().find(|p| p.is_err()) {
        report.skipped(Scenario::Gateway, &format!("{why}; run `bash scripts/install-peers.sh all`"));
        return Ok(());
    }
    let [codex, node, openclaw] = peers.map(Result::unwrap_or_default);
    let product = ctx.product.to_path_buf();
    if !product.is_file() {
        bail!("no clawbridge executable at {}: build it or pass --clawbridge", product.display());
    }
    // The fixtures' OpenClaw helpers panic on what a test would fail on; here that ends this
    // scenario with its message instead of the whole bench.
    let official = official::template();
    if let Err(why) = &official {
        report.skipped(Scenario::Gateway, &format!("the official Codex plugin's row: {why}"));
    }
    let rows = tokio::spawn(measure(Peers { codex, node, openclaw, product, official: official.ok() }, turns))
        .await
        .map_err(|join| anyhow!("the gateway bench broke off: {}", panic_text(join)))??;
    for row in rows {
        report.push(row);
    }
    Ok(())
}

/// The executables the bench runs.
struct Peers {
    /// The pinned codex.
    codex: PathBuf,
    /// Node 24.
    node: PathBuf,
    /// OpenClaw's `openclaw.mjs`.
    openclaw: PathBuf,
    /// The `clawbridge` executable the plugin starts.
    product: PathBuf,
    /// The state dir OpenClaw installed its official Codex plugin into, when it did.
    official: Option<PathBuf>,
}

/// Which agent ran the turn before a timed one: OpenClaw takes far longer before a turn whose agent
/// differs from the previous turn's, whatever the harness, so each is its own figure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum After {
    /// Its own agent's turn: the warm gateway turn of one busy chat.
    Same,
    /// Another agent's turn.
    #[default]
    Other,
}

impl After {
    /// How the rows name the condition.
    fn label(self) -> &'static str {
        match self {
            After::Same => "after its own turn",
            After::Other => "after another agent's turn",
        }
    }
}

/// One timed turn, as the driver reported it.
#[derive(Debug, serde::Deserialize)]
struct TurnLine {
    /// Which target.
    label: String,
    /// Which run (`-1` for the warm-up before the first).
    run: i64,
    /// Whether it was untimed: a warm-up turn, or the turn that opens a run's session.
    warm: bool,
    /// Whether the turn before it was its own agent's (`same`) or another's (`other`).
    #[serde(default)]
    after: After,
    /// Wall time of the `agent` request, in milliseconds.
    ms: f64,
    /// Whether the answer quoted the command's output.
    ok: bool,
    /// The harness OpenClaw says ran it.
    harness: Option<String>,
    /// The answer's start, for the error message.
    text: String,
    /// The request's error, if any.
    error: Option<String>,
}

async fn measure(peers: Peers, turns: Turns) -> anyhow::Result<Vec<Row>> {
    let sandbox = Sandbox::new().context("creating the sandbox")?;
    let mock = start_mock(&scenario()).await.map_err(|e| anyhow!(e))?;
    let mut home = OpenClawHome::new(
        &peers.node,
        &peers.openclaw,
        &peers.product,
        &sandbox,
        Harness::Codex(peers.codex.clone()),
        &mock,
    );
    let port = free_port();
    let mut config = two_agents(home.config());
    let mut targets = vec![BRIDGE, EMBEDDED];
    if let Some(template) = &peers.official {
        official::prepare(template, &mut home, &mut config, &peers.codex, &mock)?;
        targets.push(official::TARGET);
    }
    home.write_config(&with_gateway(config, port));
    let _temp_root = TempRootGuard::snapshot();
    let gateway = Gateway::start(&home, port).await;
    let outcome = drive(&home, port, turns, &targets).await;
    let log = gateway.output();
    gateway.stop().await;
    let leftovers = wait_until_gone(&home).await;
    let lines = outcome.with_context(|| format!("gateway log:\n{}", tail(&log, 4000)))?;
    let mut rows = figures(&lines, turns, &targets)?;
    let thread = bound_thread(&home.bridge_state)?;
    rows.extend(split::measure(&peers.codex, &sandbox, &thread, turns.spawns).await?);
    if !leftovers.is_empty() {
        bail!("processes of the bridge outlived the gateway: {leftovers:?}");
    }
    Ok(rows)
}

/// The mock: Codex gets a shell command for its `exec_command`, the embedded runner the same
/// command for its `exec` tool (both tools' own argument shapes); after the command's result,
/// both get a text quoting it. Matching on the offered tool, not the prompt, because OpenClaw
/// puts a context message after the user's text.
fn scenario() -> Value {
    json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The command printed:", "text_quoting_tool_result": true,
                   "usage": {"input_tokens": 300, "output_tokens": 12}}},
        {"when": {"tool_offered": "exec_command"},
         "reply": {"run_command": {"command": "echo live-$((6*7))", "escalated": false, "shell": "/bin/bash"}}},
        {"when": {"tool_offered": "exec"},
         "reply": {"tool_call": {"name": "exec", "arguments": {"command": "echo live-$((6*7))"}}}}
    ], "default": {"text": "Hello from the mock."}})
}

/// The fixtures' config (the plugin, the `mock` provider, `mock/mock-model` on the clawbridge
/// harness) plus a second model of the same provider on no harness, the agent that uses it, and
/// the provider on the Responses API, the one route the mock serves (the clawbridge model never
/// calls it: codex talks to the mock itself).
fn two_agents(mut config: Value) -> Value {
    let provider = &mut config["models"]["providers"]["mock"];
    provider["api"] = json!("openai-responses");
    let mut builtin = provider["models"][0].clone();
    builtin["id"] = json!("mock-builtin");
    if let Some(models) = provider["models"].as_array_mut() {
        models.push(builtin);
    }
    config["agents"]["defaults"]["models"]["mock/mock-builtin"] = json!({"alias": "Mock built-in"});
    config["agents"]["entries"] = json!({
        BRIDGE_AGENT: {"model": "mock/mock-model"},
        BUILTIN_AGENT: {"model": "mock/mock-builtin"},
    });
    config
}

/// Runs [`DRIVER`] against the gateway and returns its turn lines.
async fn drive(
    home: &OpenClawHome<'_>,
    port: u16,
    turns: Turns,
    targets: &[Harnessed],
) -> anyhow::Result<Vec<TurnLine>> {
    let script = home.sandbox.root().join("gateway-bench.mjs");
    std::fs::write(&script, DRIVER).context("writing the driver")?;
    let dist = home.openclaw.parent().context("openclaw's package dir")?.join("dist");
    let plan_targets: Vec<Value> = targets
        .iter()
        .map(
            |t| json!({"label": t.label, "agentId": t.agent, "sessionKey": format!("agent:{}:gateway-bench", t.agent)}),
        )
        .collect();
    let plan = json!({"warm": WARM_TURNS, "runs": turns.runs, "turns": turns.turns, "prompt": PROMPT,
                      "marker": MARKER, "targets": plan_targets});
    let child = tokio::process::Command::new(&home.node)
        .arg(&script)
        .arg(&dist)
        .arg(port.to_string())
        .arg(GATEWAY_TOKEN)
        .arg(plan.to_string())
        .current_dir(home.sandbox.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.sandbox.home())
        .env("TMPDIR", home.sandbox.tmp())
        .env("OPENCLAW_STATE_DIR", &home.state)
        .env("OPENCLAW_CONFIG_PATH", &home.config_path)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("starting the gateway driver")?;
    // Warm-up turns, then per run one opening turn and two per round, for every target.
    let planned = targets.len() * (WARM_TURNS + turns.runs * (1 + 2 * turns.turns));
    let limit = DRIVER_LIMIT_PER_TURN * u32::try_from(planned).unwrap_or(u32::MAX);
    let output = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .map_err(|_| anyhow!("the gateway's {planned} turns did not finish within {limit:?}"))?
        .context("running the gateway driver")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Each turn's line (with its wall-clock start), for lining turns up with a profile of the bridge.
    if let Some(path) = std::env::var_os(TURN_LOG_ENV) {
        std::fs::write(&path, stdout.as_bytes())
            .with_context(|| format!("writing the turns to {}", PathBuf::from(&path).display()))?;
    }
    let describe = || format!("driver stdout:\n{}\ndriver stderr:\n{}", tail(&stdout, 4000), tail(&stderr, 2000));
    if !output.status.success() || !stdout.contains(r#"{"done":true}"#) {
        bail!("the gateway driver ended with {}\n{}", output.status, describe());
    }
    let lines: Vec<TurnLine> = stdout
        .lines()
        .filter(|line| line.starts_with(r#"{"label""#))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(describe)?;
    for line in &lines {
        let expected = targets.iter().find(|t| t.label == line.label).map(|t| t.harness);
        if !line.ok || line.harness.as_deref() != expected {
            bail!(
                "a {} turn did not run the command on {expected:?} (harness {:?}, error {:?}, answer {:?})\n{}",
                line.label,
                line.harness,
                line.error,
                line.text,
                describe()
            );
        }
    }
    Ok(lines)
}

/// Median and p90 (nearest rank) of `ms`, which must not be empty.
fn median_p90(ms: &mut [f64]) -> (f64, f64) {
    ms.sort_by(f64::total_cmp);
    let rank = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
    (rank(0.5), rank(0.9))
}

/// The rows: for each condition ([`After`]), each target's best run (median and p90) and
/// clawbridge's ratio to each of the others; then each target's warm-up turns.
fn figures(lines: &[TurnLine], turns: Turns, targets: &[Harnessed]) -> anyhow::Result<Vec<Row>> {
    let (n, r) = (turns.turns, turns.runs);
    let mut rows = Vec::new();
    for target in targets {
        for run in 0..r {
            if !lines.iter().any(|l| l.label == target.label && !l.warm && l.run == run as i64) {
                bail!("no timed {} turn in run {run}", target.label);
            }
        }
    }
    for after in [After::Same, After::Other] {
        let mut best_medians = Vec::new();
        for target in targets {
            let mut runs: Vec<(f64, f64)> = Vec::new();
            for run in 0..r {
                let mut ms: Vec<f64> = lines
                    .iter()
                    .filter(|l| l.label == target.label && !l.warm && l.run == run as i64 && l.after == after)
                    .map(|l| l.ms)
                    .collect();
                if !ms.is_empty() {
                    runs.push(median_p90(&mut ms));
                }
            }
            let Some((median, p90)) = runs.iter().copied().min_by(|a, b| a.0.total_cmp(&b.0)) else {
                // One target alone never follows another agent.
                best_medians.push(f64::NAN);
                continue;
            };
            let all: Vec<String> = runs.iter().map(|(m, _)| super::report::number(m.round())).collect();
            best_medians.push(median);
            rows.push(
                Row::info(
                    Scenario::Gateway,
                    format!("{} turn {}, median (best of {r} runs × {n})", target.label, after.label()),
                    median,
                    "ms",
                )
                .with_note(format!("every run's median: {} ms", all.join(", "))),
            );
            rows.push(Row::info(Scenario::Gateway, format!("… {} p90 of that run", target.label), p90, "ms"));
        }
        if best_medians.iter().any(|m| m.is_nan()) {
            continue;
        }
        for (other, median) in targets.iter().zip(&best_medians).skip(1) {
            rows.push(
                Row::judged(
                    Scenario::Gateway,
                    format!("clawbridge-codex ÷ {}, {}, best medians", other.label, after.label()),
                    best_medians[0] / median,
                    "×",
                    Target::AtMost(RATIO_TARGET),
                )
                .with_note("same gateway, same mock, turns interleaved"),
            );
        }
    }
    for target in targets {
        let warm: Vec<String> = lines
            .iter()
            .filter(|l| l.label == target.label && l.warm)
            .map(|l| super::report::number(l.ms.round()))
            .collect();
        rows.push(
            Row::info(
                Scenario::Gateway,
                format!("… {} first warm-up turn", target.label),
                first_warm(lines, target),
                "ms",
            )
            .with_note(format!(
                "untimed turns (warm-up, then each run's first on its session): {} ms",
                warm.join(", ")
            )),
        );
    }
    Ok(rows)
}

fn first_warm(lines: &[TurnLine], target: &Harnessed) -> f64 {
    lines.iter().find(|l| l.label == target.label && l.warm).map_or(f64::NAN, |l| l.ms)
}

/// The Codex thread of one of the sessions the bridge bound (every run has its own).
fn bound_thread(bridge_state: &std::path::Path) -> anyhow::Result<String> {
    let dir = bridge_state.join("serve/bindings");
    for entry in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|x| x == "json") {
            let binding: Value = serde_json::from_slice(&std::fs::read(&path)?)
                .with_context(|| format!("reading {}", path.display()))?;
            if let Some(thread) = binding["nativeSessionId"].as_str() {
                return Ok(thread.to_string());
            }
        }
    }
    bail!("the bridge bound no Codex thread in {}", dir.display())
}

/// Waits until no process runs with the bridge's state dir; returns the ones still there after 15 s.
async fn wait_until_gone(home: &OpenClawHome<'_>) -> Vec<i32> {
    let needle = format!("CLAWBRIDGE_STATE_DIR={}\0", home.bridge_state.display());
    for _ in 0..150 {
        let alive = processes_with_env(&needle);
        if alive.is_empty() {
            return alive;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    processes_with_env(&needle)
}

/// The end of `text`, at most `bytes` long (on a character boundary).
fn tail(text: &str, bytes: usize) -> &str {
    let mut start = text.len().saturating_sub(bytes);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

fn panic_text(join: tokio::task::JoinError) -> String {
    match join.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_else(|| "a panic without a message".into()),
        Err(join) => join.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(label: &str, run: i64, warm: bool, ms: f64) -> TurnLine {
        after(label, run, warm, ms, After::Other)
    }

    fn after(label: &str, run: i64, warm: bool, ms: f64, after: After) -> TurnLine {
        TurnLine {
            label: label.into(),
            run,
            warm,
            after,
            ms,
            ok: true,
            harness: None,
            text: String::new(),
            error: None,
        }
    }

    #[test]
    fn median_and_p90_are_nearest_rank() {
        let mut ms: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        assert_eq!(median_p90(&mut ms), (5.0, 9.0));
        assert_eq!(median_p90(&mut [7.0]), (7.0, 7.0));
    }

    #[test]
    fn each_target_reports_its_best_run_and_clawbridge_is_divided_by_the_others() {
        let turns = Turns { turns: 3, runs: 2, spawns: 1 };
        let mut lines = vec![line(BRIDGE.label, -1, true, 9000.0), line(EMBEDDED.label, -1, true, 8000.0)];
        for (run, bridge, embedded) in
            [(0, [300.0, 100.0, 200.0], [500.0, 400.0, 450.0]), (1, [90.0, 80.0, 70.0], [900.0, 950.0, 990.0])]
        {
            for i in 0..3 {
                lines.push(line(BRIDGE.label, run, false, bridge[i]));
                lines.push(line(EMBEDDED.label, run, false, embedded[i]));
            }
        }
        let rows = figures(&lines, turns, &[BRIDGE, EMBEDDED]).unwrap();
        let value = |start: &str| rows.iter().find(|r| r.measure.starts_with(start)).map(|r| r.value).unwrap();
        // clawbridge's best run is run 1 (median 80), the embedded runner's run 0 (median 450);
        // warm-up turns are in neither.
        assert_eq!(value("clawbridge-codex turn after another agent's turn"), 80.0);
        assert_eq!(value("openclaw built-in (embedded runner) turn after another agent's turn"), 450.0);
        assert_eq!(value("… clawbridge-codex first warm-up turn"), 9000.0);
        let ratio = rows.iter().find(|r| r.measure.starts_with("clawbridge-codex ÷")).unwrap();
        assert!((ratio.value - 80.0 / 450.0).abs() < 1e-9);
        assert_eq!(ratio.met(), Some(true));
    }

    #[test]
    fn turns_after_their_own_agent_and_after_another_are_separate_figures_and_ratios() {
        let turns = Turns { turns: 2, runs: 1, spawns: 1 };
        let mut lines = Vec::new();
        for (label, other, same) in
            [(BRIDGE.label, [2000.0, 2100.0], [900.0, 950.0]), (EMBEDDED.label, [1800.0, 1900.0], [1000.0, 1100.0])]
        {
            for i in 0..2 {
                lines.push(after(label, 0, false, other[i], After::Other));
                lines.push(after(label, 0, false, same[i], After::Same));
            }
        }
        let rows = figures(&lines, turns, &[BRIDGE, EMBEDDED]).unwrap();
        let value = |start: &str| rows.iter().find(|r| r.measure.starts_with(start)).map(|r| r.value).unwrap();
        assert_eq!(value("clawbridge-codex turn after its own turn"), 900.0, "nearest rank of [900, 950]");
        assert_eq!(value("clawbridge-codex turn after another agent's turn"), 2000.0);
        let same = value("clawbridge-codex ÷ openclaw built-in (embedded runner), after its own turn");
        let other = value("clawbridge-codex ÷ openclaw built-in (embedded runner), after another agent's turn");
        assert!((same - 0.9).abs() < 1e-9 && (other - 2000.0 / 1800.0).abs() < 1e-9, "{same} {other}");
    }

    #[test]
    fn a_run_without_timed_turns_is_an_error_not_a_figure() {
        let turns = Turns { turns: 1, runs: 2, spawns: 1 };
        let lines = vec![line(BRIDGE.label, 0, false, 1.0), line(EMBEDDED.label, 0, false, 1.0)];
        assert!(figures(&lines, turns, &[BRIDGE, EMBEDDED]).is_err());
    }

    #[test]
    fn the_builtin_agent_gets_its_own_model_on_the_responses_api() {
        let config = json!({"models": {"providers": {"mock": {"api": "openai-completions", "models": [{"id": "mock-model"}]}}},
                            "agents": {"defaults": {"models": {"mock/mock-model": {"agentRuntime": {"id": "clawbridge-codex"}}}}}});
        let config = two_agents(config);
        assert_eq!(config["models"]["providers"]["mock"]["api"], "openai-responses");
        assert_eq!(config["models"]["providers"]["mock"]["models"][1]["id"], "mock-builtin");
        assert_eq!(config["agents"]["entries"][BUILTIN_AGENT]["model"], "mock/mock-builtin");
        assert!(config["agents"]["defaults"]["models"]["mock/mock-builtin"].get("agentRuntime").is_none());
        assert_eq!(config["agents"]["entries"][BRIDGE_AGENT]["model"], "mock/mock-model");
    }
}
