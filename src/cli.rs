//! The command line. Subcommands that later work fills in say so plainly instead of pretending.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use clawbridge_bridge::attempt::hooks::ApprovalDecision;
use clawbridge_bridge::supervisor::PidRegistry;

use crate::config::value::PassEnvList;
use crate::config::{CONFIG_ENV, ConfigError, DEFAULT_REAP_GRACE_MS, DEFAULT_RUN_BACKEND, FileChoice, Flags, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "clawbridge",
    version,
    about = "Run native coding-agent runtimes (Codex app-server, Claude Code) under OpenClaw"
)]
pub struct Cli {
    /// The config file (default: $XDG_CONFIG_HOME/clawbridge/config.toml, else
    /// ~/.config/clawbridge/config.toml, read when it exists). Also CLAWBRIDGE_CONFIG.
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,

    /// Where clawbridge keeps its state (sessions, pid registry). Also CLAWBRIDGE_STATE_DIR, or
    /// `bridge.state-dir` in the config file.
    // The variables and the file are read by crate::config, which knows which one gave a value.
    #[arg(long, global = true)]
    state_dir: Option<PathBuf>,

    /// Environment groups passed to the agents besides the defaults, comma-separated: `bedrock`
    /// (Claude Code on Amazon Bedrock: AWS region, profile, keys), `vertex` (on Google Vertex AI).
    /// Their credentials pass as secrets and name the session's auth fingerprint (README). Also
    /// CLAWBRIDGE_PASS_ENV, or `bridge.pass-env` in the config file.
    #[arg(long, global = true, value_name = "GROUPS", value_parser = parse_pass_env)]
    pass_env: Option<PassEnvList>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one turn on a backend and show it as a person would.
    Run {
        /// Which backend: demo (a scripted agent that answers your prompt, no peers needed), codex,
        /// claude or acp (any Agent Client Protocol agent, named by --agent) [default: demo, or
        /// `run.backend` in the config file].
        #[arg(long)]
        backend: Option<String>,
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
        /// own variable and config key: CLAWBRIDGE_CODEX_BIN or codex.bin, CLAWBRIDGE_CLAUDE_BIN or
        /// claude.bin).
        #[arg(long)]
        program: Option<PathBuf>,
        /// The model to ask the backend for.
        #[arg(long)]
        model: Option<String>,
        /// The ACP agent's command line, split as a shell would (`--agent "npx -y some-agent --acp"`);
        /// without it, CLAWBRIDGE_ACP_AGENT, else acp.agent in the config file. Only with `--backend acp`.
        #[arg(long, value_name = "COMMAND")]
        agent: Option<String>,
        /// Run the backend's agent elsewhere through this command, split as a shell would
        /// (`--launcher "ssh -T build-box"`, `docker exec -i ctr`); the backend's bin then names
        /// its program there. Over codex.launcher, claude.launcher, acp.launcher (docs/remote.md).
        #[arg(long, value_name = "COMMAND", value_parser = parse_launcher)]
        launcher: Option<crate::config::value::LauncherWords>,
        /// A variable of this environment the ACP agent also sees (repeatable), besides the default
        /// allowlist and CLAWBRIDGE_ACP_AGENT_ENV's list: its own configuration and credentials.
        #[arg(long = "agent-env", value_name = "NAME")]
        agent_env: Vec<String>,
        /// Connect to a listening `codex app-server --listen …` instead of spawning one
        /// (unix:///path, ws://host:port, wss://host:port), or to a running daemon through
        /// `codex app-server proxy` (proxy, or proxy:///socket/path; under --launcher on the far
        /// side); its auth comes from codex.ws-auth and codex.ws-token-file in the config file.
        /// Only with `--backend codex`.
        #[arg(long, value_name = "URL")]
        connect: Option<crate::config::value::ConnectUrl>,
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
    /// Check that each backend can run here (found, version, handshake, auth, model endpoint,
    /// sandbox) and that the state dir is usable; every failure with its fix.
    Doctor(crate::doctor::DoctorArgs),
    /// (internal) The scripted demo agent `run`'s demo backend talks to, as to `codex app-server`.
    #[command(hide = true)]
    DemoListen {
        /// Ignored: the arguments a Codex launch passes (`app-server`, `-c …`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        ignored: Vec<String>,
    },
    /// Print the shell completion script for SHELL (README "Install" says where it goes).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff); with --out-dir write one page per subcommand there instead.
    Man {
        /// Write clawbridge.1 and clawbridge-<subcommand>.1 into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Stop process groups left behind by a bridge that crashed.
    Reap {
        /// How long an orphan gets after SIGTERM before SIGKILL, in milliseconds [default: 2000,
        /// or `reap.grace-ms` in the config file].
        #[arg(long)]
        grace_ms: Option<u64>,
    },
    /// The settings: what each is, and where it came from.
    Config {
        #[command(subcommand)]
        action: ConfigCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Print every effective setting and where it came from (default, file:line, env, flag).
    Show {
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Print the config file this command line reads (and whether it exists).
    Path,
}

impl Cli {
    /// The state dir whose log file this command writes: `serve`, whose stderr only a host's
    /// bounded tail sees, and `run`, whose failures name the file (the hidden roles are children;
    /// `doctor` and `reap` report on stdout).
    pub fn log_state_dir(&self, settings: &Settings) -> Option<PathBuf> {
        matches!(self.command, Command::Serve | Command::Run { .. }).then(|| state_dir(settings))
    }

    /// Which config file this command line reads: `--config`, else `CLAWBRIDGE_CONFIG`, else the
    /// default one if it exists.
    pub fn config_file(&self) -> FileChoice {
        match (&self.config, crate::config::process_env(CONFIG_ENV)) {
            (Some(path), _) => FileChoice::Named(path.clone()),
            (None, Some(path)) => FileChoice::Named(PathBuf::from(path)),
            (None, None) => FileChoice::Default(crate::config::default_config_path()),
        }
    }

    /// The settings this command line gives as flags.
    fn flags(&self) -> Flags {
        let mut flags = Flags::default();
        flags.bridge.state_dir.clone_from(&self.state_dir);
        flags.bridge.pass_env.clone_from(&self.pass_env);
        match &self.command {
            Command::Run { backend, agent, connect, launcher, .. } => {
                flags.run.backend.clone_from(backend);
                flags.acp.agent.clone_from(agent);
                flags.codex.connect.clone_from(connect);
                // Only the backend `run` uses reads its own.
                flags.codex.launcher.clone_from(launcher);
                flags.claude.launcher.clone_from(launcher);
                flags.acp.launcher.clone_from(launcher);
            }
            Command::Reap { grace_ms } => flags.reap.grace_ms = *grace_ms,
            // The agent the gateway's environment names is not in the user's shell: the doctor takes it too.
            Command::Doctor(args) => flags.acp.agent = args.agent().cloned(),
            _ => {}
        }
        flags
    }

    /// The effective settings: flags over the process's variables over the config file over defaults.
    pub fn settings(&self) -> Result<Settings, ConfigError> {
        // A child playing a recording or the scripted demo has no settings, so nothing the operator
        // set can stop it; `config path` reads none, so it still names the file when that file is broken.
        if matches!(
            self.command,
            Command::DemoAgent { .. } | Command::DemoListen { .. } | Command::Config { action: ConfigCommand::Path }
        ) {
            return Settings::resolve(None, Flags::default(), &|_| None);
        }
        Settings::load(&self.config_file(), self.flags(), &crate::config::process_env)
    }
}

/// `--pass-env bedrock,vertex`: the named groups (clawbridge_bridge::supervisor::PassEnvGroup).
fn parse_pass_env(list: &str) -> Result<PassEnvList, clawbridge_bridge::supervisor::UnknownPassEnvGroup> {
    list.parse()
}

/// The state dir under `settings` (it always has a default).
fn state_dir(settings: &Settings) -> PathBuf {
    settings.bridge.state_dir.value.clone().unwrap_or_else(crate::config::default_state_dir)
}

pub async fn run(cli: Cli, settings: Settings) -> anyhow::Result<()> {
    let state_dir = state_dir(&settings);
    let config_file = cli.config_file();
    match cli.command {
        Command::Run {
            backend: _,
            session,
            json,
            approve,
            deny,
            program,
            model,
            agent,
            agent_env,
            connect,
            launcher: _,
            prompt,
        } => {
            let approval = match (approve, deny) {
                (true, _) => Some(ApprovalDecision::Allow),
                (_, true) => Some(ApprovalDecision::Deny { message: None }),
                _ => None,
            };
            let backend = settings.run.backend.value.clone().unwrap_or_else(|| DEFAULT_RUN_BACKEND.into());
            if connect.is_some() && backend != "codex" {
                anyhow::bail!("--connect is for --backend codex (not `{backend}`)");
            }
            // 0 means "each backend's own", as in serve.
            let turn_idle_timeout =
                settings.agents.turn_idle_timeout_ms.value.filter(|ms| *ms > 0).map(std::time::Duration::from_millis);
            let registry = crate::acp_cli::with_agent(
                crate::demo::run_registry_configured(&settings),
                &backend,
                agent.is_some(),
                &settings.backend_options(),
                agent_env,
            )?;
            let args =
                crate::run::RunArgs { backend, session, json, approval, program, model, prompt, turn_idle_timeout };
            crate::run::run(args, &state_dir, &registry).await
        }
        Command::DemoAgent { ignored: _ } => crate::demo::play(),
        Command::DemoListen { ignored: _ } => Ok(crate::demo::listen()?),
        Command::Serve => {
            let limits = crate::serve::ServeLimits::from_settings(&settings);
            crate::serve::serve_configured(&state_dir, crate::demo::registry_configured(&settings), limits).await
        }
        Command::Completions { shell } => crate::docs_gen::completions(shell, &mut std::io::stdout().lock()),
        Command::Man { out_dir } => crate::docs_gen::man(out_dir.as_deref(), &mut std::io::stdout().lock()),
        Command::Doctor(args) => {
            Ok(crate::doctor::run(args, &state_dir, &crate::demo::registry_configured(&settings)).await?)
        }
        Command::Reap { grace_ms: _ } => {
            let grace = settings.reap.grace_ms.value.unwrap_or(DEFAULT_REAP_GRACE_MS);
            reap(&state_dir, Duration::from_millis(grace)).await
        }
        Command::Config { action: ConfigCommand::Show { json: true } } => {
            println!("{}", crate::config::show::json(&settings));
            Ok(())
        }
        Command::Config { action: ConfigCommand::Show { json: false } } => {
            print!("{}", crate::config::show::text(&settings));
            Ok(())
        }
        Command::Config { action: ConfigCommand::Path } => {
            config_path(&config_file);
            Ok(())
        }
    }
}

/// `clawbridge config path`: the file, and whether it is there.
fn config_path(choice: &FileChoice) {
    match choice.path() {
        Some(path) if path.exists() => println!("{}", path.display()),
        Some(path) => println!("{} (does not exist; defaults apply)", path.display()),
        None => println!("(no config file: no HOME or XDG_CONFIG_HOME to find one in)"),
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

/// `--launcher`'s value: a command line a shell would split into at least a program.
fn parse_launcher(line: &str) -> Result<crate::config::value::LauncherWords, crate::config::value::ValueError> {
    line.parse()
}
