//! One module per native backend, each implementing [`clawbridge_bridge::backend::Backend`] once:
//! its config, the mapping of native events to normalized events, its request handler and its
//! session. An adapter never reaches into another; the [`registry`] is the one place that lists
//! them.

pub mod acp;
pub mod claude;
pub mod codex;

#[cfg(test)]
mod test_support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::backend::{ConfiguredProgram, Registry};
use clawbridge_bridge::supervisor::{Containment, PassEnvGroup};

/// The executable that plays the demo's bundled recording, and its arguments.
#[derive(Clone, Debug)]
pub struct DemoAgent {
    /// The program (the `clawbridge` binary).
    pub program: PathBuf,
    /// Its arguments before Codex's own (`demo-agent`).
    pub args: Vec<OsString>,
    /// The version of the codex app-server the recording was made with.
    pub recorded_version: &'static str,
    /// The program is the scripted demo agent (it answers the prompt and asks before it runs a
    /// command) rather than the recording's player (whose approval was granted when recorded).
    pub scripted: bool,
}

/// Every backend clawbridge ships, in the order hosts list them: the demo (played by `demo`), Codex,
/// Claude Code, and the ACP agent `CLAWBRIDGE_ACP_AGENT` names (only when it names one, as the plugin
/// registers its harness). Adding a backend is one line here. Call inside a tokio runtime (backends that
/// keep warm processes start their reapers).
pub fn registry(demo: DemoAgent) -> Registry {
    registry_passing(demo, &[])
}

/// [`registry`] with the operator's opt-in environment groups (`--pass-env`) passed to the
/// backends whose modes need them (Claude Code's Bedrock and Vertex modes).
pub fn registry_passing(demo: DemoAgent, pass_env: &[PassEnvGroup]) -> Registry {
    registry_configured(demo, &BackendOptions { pass_env: pass_env.to_vec(), ..BackendOptions::default() })
}

/// [`registry`] under the operator's settings (the `clawbridge` binary's config file, variables and flags).
pub fn registry_configured(demo: DemoAgent, options: &BackendOptions) -> Registry {
    let claude = claude::ClaudeBackend::new(options.claude_pool.unwrap_or_default());
    let registry = Registry::new()
        .with(Arc::new(if demo.scripted {
            codex::CodexBackend::scripted_demo(demo.program, demo.args, demo.recorded_version)
        } else {
            codex::CodexBackend::demo(demo.program, demo.args, demo.recorded_version)
        }))
        .with(Arc::new(
            codex::CodexBackend::native()
                .configured(options.codex.clone(), options.codex_home.clone())
                .connecting(options.codex_connect.clone())
                .with_servers(options.codex_servers.unwrap_or(codex::shared::ServerMode::PerAttempt)),
        ))
        .with(Arc::new(claude.passing_env(&options.pass_env).configured(options.claude.clone())));
    let acp = options.acp.as_ref().map_or_else(acp::AcpBackend::from_env, acp::AcpBackend::from_options);
    if acp.is_configured() { registry.with(Arc::new(acp)) } else { registry }
}

/// What the operator configured for the backends; every `None` keeps a backend's own behaviour
/// (its variable, its default).
#[derive(Clone, Debug, Default)]
pub struct BackendOptions {
    /// Opt-in environment groups (`--pass-env`).
    pub pass_env: Vec<PassEnvGroup>,
    /// The Codex backend's executable and deadlines.
    pub codex: AgentOptions,
    /// Codex's home for every app-server.
    pub codex_home: Option<PathBuf>,
    /// A listening app-server to connect to instead of spawning one (`[codex] connect`).
    pub codex_connect: Option<codex::CodexRemote>,
    /// Whether Codex attempts share warm app-servers; `None`: one app-server per attempt.
    pub codex_servers: Option<codex::shared::ServerMode>,
    /// The Claude backend's executable and deadlines.
    pub claude: AgentOptions,
    /// How many Claude CLIs stay warm, and for how long.
    pub claude_pool: Option<claude::pool::PoolConfig>,
    /// The ACP agent; `None`: its variables (`CLAWBRIDGE_ACP_AGENT`, …).
    pub acp: Option<acp::AcpOptions>,
}

/// What the operator configured for one native backend's processes.
#[derive(Clone, Debug, Default)]
pub struct AgentOptions {
    /// Its executable, and what named it; `None`: its variable, else its name on `PATH`.
    pub program: Option<ConfiguredProgram>,
    /// The write timeout on its stdin; `None`: `CLAWBRIDGE_WRITE_TIMEOUT_MS`, else the default.
    pub write_timeout: Option<Duration>,
    /// Its containment; `None`: `CLAWBRIDGE_CGROUPS`, else cgroups where available.
    pub containment: Option<Containment>,
    /// Run it elsewhere through a launcher (`ssh -T host`), and its program there; `None`: here.
    pub remote: Option<clawbridge_bridge::remote::RemoteSpec>,
}

impl AgentOptions {
    /// Where the executable is: the launcher's program under a launcher (found on this machine's
    /// PATH; the agent's own program is looked up on the far side, so a requested local path
    /// means nothing there and is not used), else the usual lookup.
    fn locate(
        &self,
        requested: Option<&std::path::Path>,
        env_var: &str,
        default_name: &str,
    ) -> Result<PathBuf, clawbridge_bridge::backend::ProgramNotFound> {
        match (&self.remote, &self.program) {
            (Some(remote), _) => {
                let launcher = remote.launcher.program();
                clawbridge_bridge::backend::find_program(launcher).ok_or_else(|| {
                    clawbridge_bridge::backend::ProgramNotFound {
                        name: launcher.to_path_buf(),
                        why: format!("the launcher `{}` is not found on PATH", remote.launcher.display()),
                    }
                })
            }
            (_, Some(configured)) => {
                clawbridge_bridge::backend::locate_configured(requested, Some(configured), default_name)
            }
            (_, None) => clawbridge_bridge::backend::locate_program(requested, env_var, default_name),
        }
    }

    /// Puts what is configured over a launch config's defaults.
    fn apply(&self, write_timeout: &mut Duration, containment: &mut Containment) {
        if let Some(value) = self.write_timeout {
            *write_timeout = value;
        }
        if let Some(value) = self.containment {
            *containment = value;
        }
    }
}
