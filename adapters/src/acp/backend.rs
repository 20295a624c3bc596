//! Any Agent Client Protocol agent as a [`Backend`] (`clawbridge-acp`): the agent's command line comes
//! from `--agent` (`clawbridge run`) or `CLAWBRIDGE_ACP_AGENT`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoObserver};
use clawbridge_bridge::backend::{
    Backend, BackendError, HarnessFacts, NativeSession, OpenFuture, OpenSettings, ProbeReport, ProgramNotFound,
    Supports, TurnFuture, TurnRequest, find_program,
};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::native_tools::{NativeToolClass, Unenforceable};
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_bridge::remote::{Launcher, RemoteSpec};
use futures::future::BoxFuture;

use crate::AgentOptions;

use super::config::{
    AGENT_ENV, AGENT_ENV_PASS, AUTH_METHOD_ENV, AcpConfig, AgentCommand, AgentCommandError, env_names,
};
use super::session::{AcpError, AcpSession, SessionReady, describe_agent};

/// How long the probe's `initialize` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// An ACP agent backend.
#[derive(Debug)]
pub struct AcpBackend {
    /// Its facts before a probe said whether the agent takes images and HTTP MCP servers.
    base: HarnessFacts,
    /// Its facts once a probe's `initialize` told what the agent takes.
    probed: OnceLock<HarnessFacts>,
    /// The agent's command line, if one was configured (or why the configured one is unusable).
    agent: Option<Result<AgentCommand, AgentCommandError>>,
    /// Variables of the bridge's environment the agent also sees (`--agent-env`).
    pass_env: Vec<String>,
    /// The auth method to use when the agent says it needs one.
    auth_method: Option<String>,
    /// Where the agent's command line came from, so a message about it names the setting to fix.
    agent_named_by: String,
    /// The agent process's write timeout and containment as the operator configured them.
    process: AgentOptions,
    /// The agent's name as the probe read it, for fingerprints.
    agent_name: OnceLock<String>,
    /// Runs the agent's command line elsewhere (`ssh -T host`); `None`: here.
    launcher: Option<Launcher>,
}

fn facts() -> HarnessFacts {
    HarnessFacts {
        id: "clawbridge-acp",
        backend: "acp",
        label: "ACP agent (clawbridge)",
        process: "the ACP agent",
        native_session: "session",
        transcript_api: "acp",
        supports: Supports { resume: true, ..Supports::default() },
        notice: None,
        fixed_approval: None,
    }
}

impl Default for AcpBackend {
    /// No agent configured: sessions run the program they are opened with (`--program`, a test's).
    fn default() -> Self {
        AcpBackend {
            base: facts(),
            probed: OnceLock::new(),
            agent: None,
            pass_env: Vec::new(),
            auth_method: None,
            agent_named_by: AGENT_ENV.into(),
            process: AgentOptions::default(),
            agent_name: OnceLock::new(),
            launcher: None,
        }
    }
}

/// What the operator configured for the ACP backend (each as its variable means it).
#[derive(Clone, Debug, Default)]
pub struct AcpOptions {
    /// The agent's command line (`CLAWBRIDGE_ACP_AGENT`).
    pub agent: Option<String>,
    /// Variables the agent also sees (`CLAWBRIDGE_ACP_AGENT_ENV`).
    pub agent_env: Vec<String>,
    /// The auth method to authenticate with (`CLAWBRIDGE_ACP_AUTH_METHOD`).
    pub auth_method: Option<String>,
    /// Where `agent` came from, as a person names it (`acp.agent (file:/etc/clawbridge.toml:3)`,
    /// `CLAWBRIDGE_ACP_AGENT`, `--agent`); `None`: `CLAWBRIDGE_ACP_AGENT`.
    pub agent_named_by: Option<String>,
    /// The agent process's write timeout and containment (`agents.write-timeout-ms`,
    /// `containment.cgroups`). Its `program` is not used: the command line names the program.
    pub process: AgentOptions,
    /// Runs the agent's command line elsewhere through this launcher (`acp.launcher`); `None`: here.
    pub launcher: Option<Launcher>,
}

impl AcpBackend {
    /// The agent `CLAWBRIDGE_ACP_AGENT` names (none when unset), seeing the variables
    /// `CLAWBRIDGE_ACP_AGENT_ENV` lists, authenticating with `CLAWBRIDGE_ACP_AUTH_METHOD` if asked.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        AcpBackend {
            agent: var(AGENT_ENV).map(|line| AgentCommand::parse(&line)),
            pass_env: var(AGENT_ENV_PASS).map(|list| env_names(&list)).unwrap_or_default(),
            auth_method: var(AUTH_METHOD_ENV),
            ..AcpBackend::default()
        }
    }

    /// The agent the operator's settings name (the `[acp]` area: file, variables, `--agent`).
    pub fn from_options(options: &AcpOptions) -> Self {
        let set = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
        AcpBackend {
            agent: set(&options.agent).map(|line| AgentCommand::parse(&line)),
            pass_env: options.agent_env.clone(),
            auth_method: set(&options.auth_method),
            agent_named_by: options.agent_named_by.clone().unwrap_or_else(|| AGENT_ENV.into()),
            process: options.process.clone(),
            launcher: options.launcher.clone(),
            ..AcpBackend::default()
        }
    }

    /// This backend running `agent` (`clawbridge run --agent`), with `pass_env` added to what the
    /// environment lists.
    #[must_use]
    pub fn with_agent(mut self, agent: AgentCommand) -> Self {
        self.agent = Some(Ok(agent));
        self.agent_named_by = "--agent".into();
        self
    }

    /// Adds variables of the bridge's environment the agent sees (`--agent-env`).
    #[must_use]
    pub fn passing(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.pass_env.extend(names);
        self
    }

    /// Whether an agent command was configured (even one that does not parse: its error is shown).
    pub fn is_configured(&self) -> bool {
        self.agent.is_some()
    }

    fn agent(&self) -> Result<&AgentCommand, ProgramNotFound> {
        match &self.agent {
            Some(Ok(agent)) => Ok(agent),
            // Named by the setting that held the line, so the operator fixes the right one.
            Some(Err(error)) => {
                Err(ProgramNotFound { name: PathBuf::from(&self.agent_named_by), why: error.to_string() })
            }
            None => Err(ProgramNotFound {
                name: PathBuf::from("acp agent"),
                why: format!(
                    "no ACP agent is configured: pass --agent \"<command line>\", set {AGENT_ENV} or acp.agent in \
                     the config file"
                ),
            }),
        }
    }

    fn config(&self, program: PathBuf, cwd: PathBuf) -> AcpConfig {
        let args = self.agent.as_ref().and_then(|a| a.as_ref().ok()).map(|a| a.args.clone()).unwrap_or_default();
        let mut config = AcpConfig::new(program, args, cwd);
        // Under a launcher the located program is the launcher's; the command line's program is
        // looked up on the far side.
        let far_program = self.agent.as_ref().and_then(|a| a.as_ref().ok()).map(|a| a.program.clone());
        config.remote = self
            .launcher
            .clone()
            .zip(far_program)
            .map(|(launcher, program)| RemoteSpec { launcher, program: program.into_os_string() });
        config.env.inherit.extend(self.pass_env.iter().cloned());
        config.auth_method.clone_from(&self.auth_method);
        self.process.apply(&mut config.write_timeout, &mut config.containment);
        config
    }

    /// Where the agent's command line came from (`acp.agent (file:…)`, `CLAWBRIDGE_ACP_AGENT`, `--agent`).
    pub(super) fn agent_named_by(&self) -> &str {
        &self.agent_named_by
    }

    /// The launch config of `program` in `cwd` (for the doctor's checks).
    pub(super) fn config_for(&self, program: PathBuf, cwd: PathBuf) -> AcpConfig {
        self.config(program, cwd)
    }

    async fn open_session(&self, settings: OpenSettings, hooks: SessionHooks) -> Result<AcpNative, BackendError> {
        // The agent's own tools live in its process and ACP has no way to take one away.
        if let Some(denied) = settings.native_tools.denied().first().copied() {
            return Err(BackendError::ToolPolicy(Unenforceable {
                backend: "the ACP agent",
                denied,
                why: "ACP gives a client no way to remove an agent's own tools",
            }));
        }
        let cwd = match settings.cwd.clone() {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|e| start_error(AcpError::Cwd { dir: ".".into(), source: e }))?,
        };
        let mut config = self.config(settings.program.clone(), cwd);
        config.env.set.extend(settings.process_env.iter().map(|(name, value)| (name.into(), value.into())));
        config.registry.clone_from(&settings.registry);
        settings.apply_deadlines(&mut config.approval_timeout, &mut config.tool_timeout, &mut config.interrupt_grace);
        settings.apply_idle_timeout(&mut config.turn_idle_timeout);
        if settings.model.as_deref().is_some_and(|m| !m.is_empty()) {
            tracing::debug!("ACP v1 has no way to choose the model; the agent's own configuration decides");
        }
        let edits = settings.native_tools.allows(NativeToolClass::FileEdits);
        let mut session = AcpSession::connect(config, hooks, edits).await.map_err(start_error)?;
        let ready = match settings.resume.as_deref() {
            Some(previous) => session.resume_or_new(previous).await,
            None => session.new_session().await,
        };
        match ready {
            Ok(ready) => {
                settings.announce_native_id(&ready.session_id);
                Ok(AcpNative { session: Some(session), ready })
            }
            Err(error) => {
                session.shutdown().await;
                Err(match error {
                    AcpError::AuthRequired { .. } | AcpError::UnknownAuthMethod { .. } => start_error(error),
                    other => BackendError::Conversation { source: Box::new(other) },
                })
            }
        }
    }
}

fn start_error(error: AcpError) -> BackendError {
    let retryable = error.is_retryable();
    BackendError::Start { source: Box::new(error), retryable }
}

impl Backend for AcpBackend {
    fn facts(&self) -> &HarnessFacts {
        self.probed.get().unwrap_or(&self.base)
    }

    fn locate(&self, requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        if let Some(launcher) = &self.launcher {
            self.agent()?;
            return find_program(launcher.program()).ok_or_else(|| ProgramNotFound {
                name: launcher.program().to_path_buf(),
                why: format!("the launcher `{}` is not found on PATH", launcher.display()),
            });
        }
        let name = match requested {
            Some(requested) => requested,
            None => &self.agent()?.program,
        };
        find_program(name).ok_or_else(|| ProgramNotFound {
            name: name.to_path_buf(),
            why: format!("the ACP agent `{}` is not an executable (on PATH or as a path)", name.display()),
        })
    }

    /// ACP agents have no common `--version`: the probe runs `initialize` and reports `agentInfo`.
    fn probe<'a>(&'a self, program: &'a Path, _versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
        Box::pin(async move {
            let program = program.to_path_buf();
            let mut config = self.config(program.clone(), std::env::temp_dir());
            config.handshake_timeout = PROBE_TIMEOUT;
            let hooks = SessionHooks {
                approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
                tools: Arc::new(clawbridge_bridge::attempt::hooks::NoHostTools),
                observer: Arc::new(NoObserver),
            };
            match AcpSession::connect(config, hooks, false).await {
                Ok(session) => {
                    let version = session.agent_info.as_ref().map(|info| describe_agent(Some(info)));
                    if let Some(info) = &session.agent_info {
                        let _ = self.agent_name.set(info.name.clone());
                    }
                    let mut facts = self.base.clone();
                    facts.supports.images = session.capabilities.prompt_capabilities.image;
                    // Host tools reach the agent only as the bridge's HTTP MCP server.
                    facts.supports.host_tools = session.capabilities.mcp_capabilities.http;
                    let _ = self.probed.set(facts);
                    session.shutdown().await;
                    ProbeReport::available(program, version)
                }
                Err(error) => ProbeReport::unavailable(program, None, error.to_string()),
            }
        })
    }

    fn diagnostics(&self) -> Option<&dyn clawbridge_bridge::diagnose::Diagnostics> {
        Some(self)
    }

    fn fingerprints(&self, settings: &OpenSettings) -> Fingerprints {
        let cwd = settings.cwd.as_ref().map(|cwd| cwd.display().to_string()).unwrap_or_default();
        let line = self.agent.as_ref().and_then(|a| a.as_ref().ok()).map(|a| a.line.clone()).unwrap_or_default();
        let mut fingerprints =
            Fingerprints::new(self.base.id, cwd, settings.model.clone().unwrap_or_default()).with("agent", line);
        if let Some(name) = self.agent_name.get() {
            fingerprints = fingerprints.with("agentName", name);
        }
        fingerprints
    }

    fn open(&self, settings: OpenSettings, hooks: SessionHooks) -> OpenFuture<'_> {
        Box::pin(async move {
            let native = self.open_session(settings, hooks).await?;
            Ok(Box::new(native) as Box<dyn NativeSession>)
        })
    }
}

/// An ACP agent with its session ready.
struct AcpNative {
    session: Option<AcpSession>,
    ready: SessionReady,
}

impl NativeSession for AcpNative {
    fn run_turn<'a>(&'a mut self, turn: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let TurnRequest { input, sink, cancel } = turn;
            let Some(session) = self.session.as_mut() else {
                let error = AcpError::Rpc(clawbridge_bridge::rpc::RpcError::NotSent {
                    method: "session/prompt".into(),
                    reason: "the ACP session was shut down".into(),
                });
                return Err(BackendError::Turn { source: Box::new(error) });
            };
            Ok(session.run_turn(&self.ready.session_id, input, sink, cancel).await)
        })
    }

    fn native_id(&self) -> Option<String> {
        Some(self.ready.session_id.clone())
    }

    fn resume_failure(&self) -> Option<String> {
        self.ready.resume_failure.clone()
    }

    fn shutdown(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        let session = self.session.take();
        Box::pin(async move {
            if let Some(session) = session {
                let stop = session.shutdown().await;
                tracing::debug!(?stop, "ACP agent stopped");
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawbridge_bridge::supervisor::Containment;

    use super::*;

    #[test]
    fn under_a_launcher_the_launcher_is_located_here_and_the_agent_command_line_runs_there() {
        let launcher = Launcher::new(vec!["env".into(), "-u".into(), "NOTHING".into()]).unwrap();
        let options = AcpOptions {
            agent: Some("/far/bin/my-agent --acp".into()),
            launcher: Some(launcher.clone()),
            ..AcpOptions::default()
        };
        let backend = AcpBackend::from_options(&options);
        let located = backend.locate(None).unwrap();
        assert_eq!(located.file_name(), Some(std::ffi::OsStr::new("env")), "{}", located.display());
        let config = backend.config_for(located.clone(), std::env::temp_dir());
        assert_eq!(config.remote, Some(RemoteSpec { launcher, program: "/far/bin/my-agent".into() }));
        let (command, preamble) = config.launch().unwrap();
        assert_eq!(command.program, located);
        assert_eq!(command.args[..2], [std::ffi::OsString::from("-u"), "NOTHING".into()]);
        assert!(command.args.contains(&"/far/bin/my-agent".into()) && command.args.contains(&"--acp".into()));
        assert!(preamble.is_some());
    }

    #[test]
    fn the_operators_options_reach_the_launch_config_and_the_lookup() {
        let options = AcpOptions {
            agent: Some("my-agent 'unclosed".into()),
            agent_named_by: Some("acp.agent (file:/etc/clawbridge.toml:3)".into()),
            process: AgentOptions {
                program: None,
                write_timeout: Some(Duration::from_millis(4321)),
                containment: Some(Containment::TokenOnly),
                remote: None,
            },
            ..AcpOptions::default()
        };
        let backend = AcpBackend::from_options(&options);
        let config = backend.config_for("/bin/agent".into(), std::env::temp_dir());
        assert_eq!(config.write_timeout, Duration::from_millis(4321));
        assert_eq!(config.containment, Containment::TokenOnly);
        // The unparsable line is reported as the setting that holds it, not as the variable.
        let refused = backend.locate(None).unwrap_err();
        assert_eq!(refused.name, PathBuf::from("acp.agent (file:/etc/clawbridge.toml:3)"), "{refused}");
        let none = AcpBackend::from_options(&AcpOptions::default()).locate(None).unwrap_err();
        assert!(none.why.contains("acp.agent in the config file"), "{none}");
    }
}
