//! The command line. Subcommands that later work fills in say so plainly instead of pretending.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use clawbridge_bridge::attempt::hooks::ApprovalDecision;
use clawbridge_bridge::supervisor::{PassEnvGroup, PidRegistry};

#[derive(Debug, Parser)]
#[command(
    name = "clawbridge",
    version,
    about = "Run native coding-agent runtimes (Codex app-server, Claude Code) under OpenClaw"
)]
pub struct Cli {
    /// Where clawbridge keeps its state (sessions, pid registry).
    #[arg(long, global = true, env = "CLAWBRIDGE_STATE_DIR")]
    state_dir: Option<PathBuf>,

    /// Environment groups passed to the agents besides the defaults, comma-separated: `bedrock`
    /// (Claude Code on Amazon Bedrock: AWS region, profile, keys), `vertex` (on Google Vertex AI).
    /// Their credentials pass as secrets and name the session's auth fingerprint (README).
    #[arg(long, global = true, env = "CLAWBRIDGE_PASS_ENV", value_name = "GROUPS", value_parser = parse_pass_env)]
    pass_env: Option<PassEnvGroups>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one turn on a backend and show it as a person would.
    Run {
        /// Which backend: demo (a bundled Codex recording played back, no peers needed), codex, claude
        /// or acp (any Agent Client Protocol agent, named by --agent).
        #[arg(long, default_value = "demo")]
        backend: String,
        /// Session name; running again with the same name resumes the native thread or session.
        #[arg(long)]
        session: Option<String>,
        /// Print normalized events as JSONL (and the attempt result last) instead of the person's view.
        #[arg(long)]
        json: bool,
        /// Approve every approval request.
        #[arg(long, conflicts_with = "deny")]
        approve: bool,
        /// Decline every approval request (the default without a terminal to ask at).
        #[arg(long)]
        deny: bool,
        /// The backend's executable, instead of the one it finds itself (each backend also reads its
        /// own variable: CLAWBRIDGE_CODEX_BIN, CLAWBRIDGE_CLAUDE_BIN).
        #[arg(long)]
        program: Option<PathBuf>,
        /// The model to ask the backend for.
        #[arg(long)]
        model: Option<String>,
        /// The ACP agent's command line, split as a shell would (`--agent "npx -y some-agent --acp"`);
        /// without it, CLAWBRIDGE_ACP_AGENT. Only with `--backend acp`.
        #[arg(long, value_name = "COMMAND")]
        agent: Option<String>,
        /// A variable of this environment the ACP agent also sees (repeatable), besides the default
        /// allowlist and CLAWBRIDGE_ACP_AGENT_ENV's list: its own configuration and credentials.
        #[arg(long = "agent-env", value_name = "NAME")]
        agent_env: Vec<String>,
        /// The prompt.
        prompt: String,
    },
    /// Serve the clawbridge host protocol on stdio (started by the OpenClaw plugin).
    Serve,
    /// (internal) Play the demo's bundled Codex recording on stdio, as `codex app-server` would.
    #[command(hide = true)]
    DemoAgent {
        /// Ignored: the arguments a Codex launch passes (`app-server`, `-c …`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ignored: Vec<String>,
    },
    /// Stop process groups left behind by a bridge that crashed.
    Reap {
        /// How long an orphan gets after SIGTERM before SIGKILL, in milliseconds.
        #[arg(long, default_value_t = 2000)]
        grace_ms: u64,
    },
}

impl Cli {
    /// The state dir whose log file this command writes: `serve` only, whose stderr only a host's
    /// bounded tail sees (`run` shows a person its stderr; the hidden roles are children).
    pub fn log_state_dir(&self) -> Option<PathBuf> {
        matches!(self.command, Command::Serve).then(|| self.state_dir.clone().unwrap_or_else(default_state_dir))
    }
}

/// The groups of one `--pass-env` list, as one value (clap would take a `Vec` for repeated flags).
#[derive(Clone, Debug)]
struct PassEnvGroups(Vec<PassEnvGroup>);

/// `--pass-env bedrock,vertex`: the named groups (clawbridge_bridge::supervisor::PassEnvGroup).
fn parse_pass_env(list: &str) -> Result<PassEnvGroups, clawbridge_bridge::supervisor::UnknownPassEnvGroup> {
    PassEnvGroup::parse_list(list).map(PassEnvGroups)
}

pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let state_dir = cli.state_dir.unwrap_or_else(default_state_dir);
    let pass_env = cli.pass_env.map(|groups| groups.0).unwrap_or_default();
    match cli.command {
        Command::Run { backend, session, json, approve, deny, program, model, agent, agent_env, prompt } => {
            let approval = match (approve, deny) {
                (true, _) => Some(ApprovalDecision::Allow),
                (_, true) => Some(ApprovalDecision::Deny { message: None }),
                _ => None,
            };
            let registry = crate::acp_cli::with_agent(
                crate::demo::registry_passing(&pass_env),
                &backend,
                agent.as_deref(),
                agent_env,
            )?;
            let args = crate::run::RunArgs { backend, session, json, approval, program, model, prompt };
            crate::run::run(args, &state_dir, &registry).await
        }
        Command::DemoAgent { ignored: _ } => crate::demo::play(),
        Command::Serve => crate::serve::serve(&state_dir, crate::demo::registry_passing(&pass_env)).await,
        Command::Reap { grace_ms } => reap(&state_dir, Duration::from_millis(grace_ms)).await,
    }
}

async fn reap(state_dir: &std::path::Path, grace: Duration) -> anyhow::Result<()> {
    let registry = PidRegistry::open(state_dir.join("pids")).context("opening the pid registry")?;
    let reaped = registry.reap_orphans(grace).await.context("reaping orphaned agents")?;
    for orphan in &reaped {
        let group = orphan.pgid.map_or_else(
            || "an agent whose bridge died before recording its pid".to_string(),
            |pgid| format!("process group {pgid}"),
        );
        let cgroup = orphan.cgroup.as_ref().map(|dir| format!(", cgroup {}", dir.display())).unwrap_or_default();
        println!(
            "reaped {group} ({} live processes, {} of them outside the group{cgroup}) left by bridge pid {}",
            orphan.members, orphan.outside_group, orphan.owner_pid
        );
    }
    println!("{} orphaned process group(s) reaped from {}", reaped.len(), registry.dir().display());
    Ok(())
}

fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("clawbridge");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/clawbridge"),
        None => std::env::temp_dir().join("clawbridge-state"),
    }
}
