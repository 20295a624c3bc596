//! `clawbridge-bench`: speed and memory measured end to end, every scenario in one invocation, one
//! table at the end (BENCHMARKS.md records a run). Benchmarks are not tests: nothing here fails on a
//! missed target; it reports the figure, the target and whether it was met.
//!
//! Every attempt goes through the seam and the pipeline the product uses ([`session`]): a backend
//! of the product's own ([`session::registry`]) is located, opened and driven
//! (`Backend::open` → `NativeSession::run_turn`), and its events go through serve's own pipeline
//! (`clawbridge::serve::host_pipeline`) to a host end this binary plays ([`host`]).
//!
//! - [`throughput`]: large generated Codex and Claude recordings replayed through the whole path
//!   (replay peer → backend session → normalized events → `attempt/event` notifications and
//!   acknowledged `host/transcript/append` requests), the product's `clawbridge run --json` and
//!   `clawbridge serve` processes, against the typed parse limit of the same lines ([`limit`]).
//! - [`latency`]: native line written → host notification received, at a steady rate.
//! - [`memory`]: peak RSS of a separate child process (a 1 GiB output turn, many concurrent
//!   attempts, idle sessions), so the figures hold nothing of the bench itself.
//! - [`startup`]: the product's `clawbridge serve` spawned → `initialize` answered.
//! - [`host_input`]: the product's `serve` under the worst host input (huge requests of tiny values,
//!   many attempts with huge unknown members, prompts up to the input budget), peak RSS vs idle.
//! - [`codex_shared`]: the real codex's per-turn overhead, a warm shared app-server vs a spawn per
//!   attempt, on the mock model.
//! - [`anchor`]: the official Python Claude Agent SDK on the same Claude stream, side by side.
//! - [`gateway`] (only with `--scenario gateway`): a warm real OpenClaw gateway runs the same
//!   tool-call turn through `clawbridge-codex` and through OpenClaw's built-in runtime, turn for
//!   turn, and where a spawn per attempt spends its time.
//!
//! The native peers and the measured child are this binary re-run in hidden roles ([`agent`]): a
//! fast replay of a recording, a Codex turn that floods command output, a Codex turn paced at a
//! fixed rate, one memory scenario measured in a process of its own.

// The allocator of the product binary, from the very same file: the bridge's work runs in this
// process (and in the measured child), and its figures depend on the allocator (BENCHMARKS.md).
#[path = "../../src/allocator.rs"]
mod allocator;

mod agent;
mod anchor;
mod codex_shared;
mod gateway;
mod generate;
mod host;
mod host_input;
mod latency;
mod limit;
mod memory;
mod report;
mod serve_process;
mod session;
mod startup;
mod sys;
mod throughput;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, anyhow};
use clap::Parser;
use clawbridge_bridge::backend::{Backend, Registry};

use report::Report;

/// `clawbridge-bench` arguments.
#[derive(Debug, Parser)]
#[command(
    name = "clawbridge-bench",
    version,
    about = "Measure clawbridge: throughput, latency, memory, serve start-up and the Python SDK anchor, in one table",
    args_conflicts_with_subcommands = true
)]
struct BenchArgs {
    /// Scenarios to run (comma separated or repeated); all but `gateway` when none is given.
    #[arg(long = "scenario", value_enum, value_delimiter = ',')]
    scenarios: Vec<Scenario>,
    /// Tiny sizes: checks that every scenario runs and prints its table in seconds. Not for figures.
    #[arg(long)]
    quick: bool,
    /// Print the results as one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// The product's `clawbridge` executable, whose `serve` start-up is timed (default: the
    /// `clawbridge` beside this executable, where cargo builds both).
    #[arg(long, env = "CLAWBRIDGE_BENCH_PRODUCT")]
    clawbridge: Option<PathBuf>,
    /// The Python of the SDK anchor's virtualenv (`bash scripts/bench-sdk-anchor.sh` prints it);
    /// by default `.peers/sdk-anchor/venv/bin/python` is used when it exists.
    #[arg(long, env = "CLAWBRIDGE_BENCH_SDK_PYTHON")]
    sdk_python: Option<PathBuf>,
    /// The anchor's script (default: `scripts/sdk-anchor/anchor.py` beside the venv's repository).
    #[arg(long, hide = true)]
    sdk_script: Option<PathBuf>,
    /// Timed turns of each harness per run of the gateway scenario (default 10; 2 with --quick).
    #[arg(long)]
    turns: Option<usize>,
    /// Runs of the gateway scenario's turns; the best one is reported (default 3; 1 with --quick).
    #[arg(long)]
    runs: Option<usize>,
    /// Internal roles this binary plays for the benchmarks (native peers, measured children).
    #[command(subcommand)]
    role: Option<agent::Role>,
}

/// One benchmark scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// Lines/s through each full path vs the typed parse limit (Codex, Claude, ACP).
    Throughput,
    /// Native line → host notification at a steady rate.
    Latency,
    /// Peak RSS: 1 GiB output turn, concurrent attempts, idle sessions.
    Memory,
    /// `clawbridge serve` spawn → `initialize` answered.
    Startup,
    /// The Python Claude Agent SDK on the same stream (needs its virtualenv).
    Anchor,
    /// Peak RSS of `clawbridge serve` under the worst host input, against its idle RSS.
    HostInput,
    /// Per-turn overhead: a warm shared codex app-server vs a spawn per attempt (the real codex).
    CodexShared,
    /// A warm real OpenClaw gateway: a tool-call turn through `clawbridge-codex` against
    /// OpenClaw's built-in runtime on the same mock (needs the peers; not run by default).
    Gateway,
}

impl Scenario {
    /// The scenarios run when none is named (the gateway needs the peers and a minute).
    const ALL: [Scenario; 7] = [
        Scenario::Throughput,
        Scenario::Latency,
        Scenario::Memory,
        Scenario::Startup,
        Scenario::HostInput,
        Scenario::CodexShared,
        Scenario::Anchor,
    ];
    /// Every scenario, in the order they run.
    const ORDER: [Scenario; 8] = [
        Scenario::Throughput,
        Scenario::Latency,
        Scenario::Memory,
        Scenario::Startup,
        Scenario::HostInput,
        Scenario::CodexShared,
        Scenario::Anchor,
        Scenario::Gateway,
    ];
}

/// How big each scenario runs.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Lines of the generated Codex recording (the issue asks for ≥ 200k).
    pub codex_lines: usize,
    /// Lines of the generated Claude recording (the issue asks for ≥ 100k).
    pub claude_lines: usize,
    /// Events streamed in the latency scenario.
    pub latency_events: usize,
    /// Their rate, per second.
    pub latency_rate: u64,
    /// Command output of the one-turn memory scenario, in bytes.
    pub flood_bytes: u64,
    /// Attempts running at once in the concurrency scenario.
    pub concurrent_attempts: usize,
    /// Sessions kept idle to measure the cost of one.
    pub idle_sessions: usize,
    /// `serve` start-ups timed.
    pub startup_runs: usize,
    /// The big member of each worst host input (tiny values, unknown members, prompts), in bytes.
    pub host_input_bytes: usize,
    /// `attempt/run`s sent at once with such an unknown member.
    pub host_input_attempts: usize,
}

impl Sizes {
    /// The sizes the targets are stated for.
    pub const FULL: Sizes = Sizes {
        codex_lines: 200_000,
        claude_lines: 100_000,
        latency_events: 50_000,
        latency_rate: 10_000,
        flood_bytes: 1 << 30,
        concurrent_attempts: 256,
        idle_sessions: 64,
        startup_runs: 50,
        host_input_bytes: 60_000_000,
        host_input_attempts: 64,
    };
    /// Seconds-long sizes for `--quick` (tests, smoke runs).
    pub const QUICK: Sizes = Sizes {
        codex_lines: 2_000,
        claude_lines: 1_000,
        latency_events: 500,
        latency_rate: 10_000,
        flood_bytes: 8 << 20,
        concurrent_attempts: 8,
        idle_sessions: 4,
        startup_runs: 3,
        host_input_bytes: 2_000_000,
        host_input_attempts: 4,
    };
}

fn main() -> ExitCode {
    allocator::tune();
    let args = BenchArgs::parse();
    // Warnings only unless asked: stdout is the table, or a peer role's protocol.
    let _logs = clawbridge::shell::init_logging("warn", None);
    clawbridge::shell::run_to_exit("clawbridge-bench", run(args))
}

/// Runs the scenarios asked for (or plays a hidden role).
async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(role) = args.role {
        return agent::play(role).await;
    }
    let sizes = if args.quick { Sizes::QUICK } else { Sizes::FULL };
    let scenarios: Vec<Scenario> = if args.scenarios.is_empty() { Scenario::ALL.to_vec() } else { args.scenarios };
    let work = tempfile::Builder::new().prefix("clawbridge-bench-").tempdir().context("creating a temp dir")?;
    let me = std::env::current_exe().context("cannot find the clawbridge-bench executable")?;
    let product = args.clawbridge.clone().unwrap_or_else(|| me.with_file_name("clawbridge"));
    let backends = session::registry();
    let mut report = Report::new(args.quick);
    let ctx = Setup { me: &me, work: work.path(), sizes, backends: &backends, product: &product };
    for scenario in Scenario::ORDER.into_iter().filter(|s| scenarios.contains(s)) {
        if !args.json {
            eprintln!("clawbridge-bench: {scenario:?}…");
        }
        let outcome = match scenario {
            Scenario::Throughput => throughput::run(&ctx, &mut report).await,
            Scenario::Latency => latency::run(&ctx, &mut report).await,
            Scenario::Memory => memory::run(&ctx, &mut report).await,
            Scenario::Startup => startup::run(&ctx, &mut report).await,
            Scenario::HostInput => host_input::run(&ctx, &mut report).await,
            Scenario::CodexShared => codex_shared::run(&ctx, &mut report).await,
            Scenario::Gateway => {
                let (turns, runs) = if args.quick { (2, 1) } else { (10, 3) };
                let turns = gateway::Turns {
                    turns: args.turns.unwrap_or(turns).max(1),
                    runs: args.runs.unwrap_or(runs).max(1),
                    spawns: if args.quick { 2 } else { 10 },
                };
                gateway::run(&ctx, &mut report, turns).await
            }
            Scenario::Anchor => {
                let python = args.sdk_python.clone().or_else(anchor::default_python);
                anchor::run(&ctx, python, args.sdk_script.clone(), &mut report).await
            }
        };
        // What a backend keeps warm between a session's attempts (parked Claude CLIs) stops here,
        // so no scenario runs beside the previous one's idle peers.
        backends.shutdown().await;
        if let Err(error) = outcome {
            report.failed(scenario, &error);
        }
    }
    report.finish();
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    if report.has_failures() {
        anyhow::bail!("some scenarios could not run (see the table)");
    }
    Ok(())
}

/// What every scenario needs.
pub struct Setup<'a> {
    /// This executable, re-run for the native peers and the measured children.
    pub me: &'a Path,
    /// A temp dir for recordings and peer launchers, removed at the end.
    pub work: &'a Path,
    /// How big to run.
    pub sizes: Sizes,
    /// The backends attempts run on.
    pub backends: &'a Registry,
    /// The product's `clawbridge` executable (for `serve` start-up).
    pub product: &'a Path,
}

impl<'a> std::fmt::Debug for Setup<'a> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup").finish_non_exhaustive()
    }
}
impl Setup<'_> {
    /// The backend named `name` (`codex`, `claude`).
    pub fn backend(&self, name: &str) -> anyhow::Result<Arc<dyn Backend>> {
        self.backends.by_name(name).cloned().ok_or_else(|| anyhow!("no `{name}` backend is registered"))
    }
}
