//! The Claude Code CLI as a [`Backend`] (`clawbridge-claude`).
//!
//! - **Probe**: [`CLAUDE_BIN_ENV`] or `claude` on `PATH`, whose `--version` must pass the Claude
//!   version gate; otherwise the harness is unavailable with the reason.
//! - **Warm processes**: after its turn a session's CLI stays parked in the backend's own
//!   [`SessionPool`] (owned here, stopped by [`Backend::shutdown`]), so the host session's next
//!   attempt pays no start-up. It is reused only while the attempt resumes the very Claude session
//!   the CLI holds and the settings it started under (cwd, model, system prompt, host tools, auth
//!   profile) are unchanged. Otherwise a new CLI starts, continuing the bound session with
//!   `--resume`, which the session only tries while the CLI's own session file exists
//!   (docs/peers/claude.md).
//! - The CLI keeps the environment it needs from the bridge's ([`ClaudeConfig::inherit_cli_environment`]):
//!   its endpoint, config dir and switches; credentials reach it only through its environment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::NoUserInput;
use clawbridge_bridge::backend::{
    Backend, BackendError, GateRefusal, HarnessFacts, NativeIdListener, NativeSession, OpenFuture, OpenSettings,
    ProbeReport, ProgramNotFound, Steering, Supports, TurnFuture, TurnRequest,
};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::native_tools::Unenforceable;
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_bridge::supervisor::PassEnvGroup;
use futures::future::BoxFuture;

use super::config::ClaudeConfig;
use super::pool::{PoolConfig, SessionPool, WarmSession};
use super::session::check_version;
use super::tool_policy;

/// The environment variable that names the `claude` executable.
pub const CLAUDE_BIN_ENV: &str = "CLAWBRIDGE_CLAUDE_BIN";

/// The Claude Code backend and its warm CLIs.
pub struct ClaudeBackend {
    /// What its harness is.
    facts: HarnessFacts,
    /// The sessions' parked CLIs, by host session.
    pool: Arc<SessionPool>,
    /// The operator's opt-in environment groups (`--pass-env`): Bedrock and Vertex modes need them.
    pass_env: Vec<PassEnvGroup>,
    /// The doctor's checks, under the same groups.
    diagnostics: super::diagnose::ClaudeDiagnostics,
    /// What the operator configured.
    options: crate::AgentOptions,
}

impl std::fmt::Debug for ClaudeBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeBackend").field("warm", &self.pool.warm_count()).finish()
    }
}

impl Default for ClaudeBackend {
    fn default() -> Self {
        ClaudeBackend::new(PoolConfig::default())
    }
}

impl ClaudeBackend {
    /// The backend, keeping warm CLIs under `pool`'s limits.
    pub fn new(pool: PoolConfig) -> Self {
        ClaudeBackend {
            facts: HarnessFacts {
                id: "clawbridge-claude",
                backend: "claude",
                label: "Claude Code (clawbridge)",
                process: "claude",
                native_session: "claude session",
                transcript_api: "claude-code-cli",
                supports: Supports {
                    images: true,
                    reasoning_level: true,
                    steering: true,
                    host_tools: true,
                    native_tool_policy: true,
                    user_input: true,
                    resume: true,
                    ephemeral: true,
                    ..Supports::default()
                },
                notice: None,
                fixed_approval: None,
            },
            pool: SessionPool::new(pool),
            pass_env: Vec::new(),
            diagnostics: super::diagnose::ClaudeDiagnostics::default(),
            options: crate::AgentOptions::default(),
        }
    }

    /// The backend under the operator's settings: its executable, deadlines.
    #[must_use]
    pub fn configured(mut self, options: crate::AgentOptions) -> Self {
        self.diagnostics.program.clone_from(&options.program);
        self.diagnostics.remote.clone_from(&options.remote);
        self.options = options;
        self
    }

    /// The backend passing the operator's environment `groups` to every CLI it starts.
    #[must_use]
    pub fn passing_env(mut self, groups: &[PassEnvGroup]) -> Self {
        self.pass_env = groups.to_vec();
        self.diagnostics.pass_env = groups.to_vec();
        self
    }

    /// How the session's CLI is launched under `settings`, and the auth profile it uses.
    pub(super) fn config(&self, settings: &OpenSettings) -> Result<(ClaudeConfig, String), Unenforceable> {
        let denied = tool_policy::disallowed_tools(&settings.native_tools)?;
        let (mut config, auth_profile) = self.base_config(settings);
        config.disallowed_tools.extend(denied);
        Ok((config, auth_profile))
    }

    /// [`config`](Self::config) before the native tool policy.
    fn base_config(&self, settings: &OpenSettings) -> (ClaudeConfig, String) {
        let mut config = ClaudeConfig::new(settings.program.clone());
        self.options.apply(&mut config.write_timeout, &mut config.containment);
        config.remote.clone_from(&self.options.remote);
        config.cwd.clone_from(&settings.cwd);
        config.model = settings.model.clone().filter(|m| !m.is_empty());
        config.append_system_prompt = settings.system_prompt.clone().filter(|p| !p.is_empty());
        config.bootstrap_context = settings.bootstrap_context.clone().filter(|p| !p.is_empty());
        let mut auth_profile = config.inherit_cli_environment();
        config.pass_env_groups(&self.pass_env, std::env::vars_os());
        // The environment the host prepared for this attempt, on top of the CLI's own; the route's
        // auth goes last, so it is never overridden by it.
        config.env.set.extend(settings.process_env.iter().map(|(name, value)| (name.into(), value.into())));
        if let Some(auth) = &settings.route_auth {
            auth_profile = super::auth::apply(&mut config, auth);
        }
        settings.apply_deadlines(&mut config.approval_timeout, &mut config.tool_timeout, &mut config.interrupt_grace);
        settings.apply_idle_timeout(&mut config.turn_idle_timeout);
        config.registry.clone_from(&settings.registry);
        config.resume.clone_from(&settings.resume);
        config.ephemeral = settings.ephemeral;
        config.skip_project_docs = settings.skip_native_project_docs;
        // Side work gets none of the user's MCP servers (as on Codex's ephemeral threads).
        if !settings.ephemeral {
            config.mcp_servers.0.clone_from(&settings.mcp_servers);
        }
        (config, auth_profile)
    }

    /// Stops `key`'s parked CLI, if there is one.
    pub(super) fn discard_warm(&self, key: &str) -> bool {
        self.pool.discard(key)
    }

    /// The session's parked CLI when it may run this attempt (the same bound Claude session, the
    /// same settings), else a new one.
    async fn lease(&self, settings: &OpenSettings, hooks: SessionHooks) -> Result<WarmSession, BackendError> {
        let (config, auth_profile) = self.config(settings)?;
        // A warm CLI runs under the variables and the bootstrap files it was started with: one
        // started under another attempt's prepared environment or older files must not serve this
        // one. Only the pool keys by them; the session's binding does not, so the conversation
        // carries over to a new CLI (which resumes it under the new files).
        let fingerprints = config
            .fingerprints(&settings.host_tools, &auth_profile)
            .with("processEnv", settings.process_env_material())
            .with("bootstrapContext", config.bootstrap_context.as_deref().unwrap_or_default())
            .with("skipProjectDocs", if config.skip_project_docs { "1" } else { "" });
        let key = &settings.session_key;
        if let Some(mut warm) = self.pool.take(key, &fingerprints) {
            if settings.resume.is_some() && warm.session().session_id() == settings.resume.as_deref() {
                warm.set_hooks(hooks);
                return Ok(warm);
            }
            tracing::info!(session = %key, "the session is no longer bound to the warm CLI's Claude session; starting another");
            tokio::spawn(warm.shutdown());
        }
        WarmSession::connect(config, hooks, fingerprints).await.map_err(|error| {
            let retryable = error.is_retryable();
            BackendError::Start { source: Box::new(error), retryable }
        })
    }
}

impl Backend for ClaudeBackend {
    fn facts(&self) -> &HarnessFacts {
        &self.facts
    }

    fn locate(&self, requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        self.options.locate(requested, CLAUDE_BIN_ENV, "claude")
    }

    fn probe<'a>(&'a self, program: &'a Path, versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
        Box::pin(async move {
            let program = program.to_path_buf();
            let mut config = ClaudeConfig::new(program.clone());
            self.options.apply(&mut config.write_timeout, &mut config.containment);
            config.remote.clone_from(&self.options.remote);
            config.inherit_cli_environment();
            match check_version(&config, versions).await {
                Ok(version) => ProbeReport::available(program, Some(version.to_string())),
                Err(error) => {
                    // A version below the floor is still the version found (the doctor says "too old").
                    use clawbridge_protocol::claude::VersionRejected;
                    let (found, refusal) = match &error {
                        super::session::ClaudeError::VersionRejected {
                            rejected: VersionRejected::BelowFloor { found, .. },
                            ..
                        } => (Some(found.to_string()), GateRefusal::BelowFloor),
                        super::session::ClaudeError::VersionRejected { .. } => (None, GateRefusal::Unversioned),
                        _ => (None, GateRefusal::CannotRun),
                    };
                    ProbeReport::unavailable(program, found, error.to_string()).refused(refusal)
                }
            }
        })
    }

    fn fingerprints(&self, settings: &OpenSettings) -> Fingerprints {
        // A policy this backend cannot enforce never opens a session, so its fingerprints do not matter.
        let (config, auth_profile) = self.config(settings).unwrap_or_else(|_| self.base_config(settings));
        config.fingerprints(&settings.host_tools, &auth_profile)
    }

    fn open(&self, settings: OpenSettings, hooks: SessionHooks) -> OpenFuture<'_> {
        Box::pin(async move {
            let warm = self.lease(&settings, hooks).await?;
            // Per turn, like the hooks: the asker names this attempt.
            warm.answer_user_input_with(settings.user_input.clone().unwrap_or_else(|| Arc::new(NoUserInput)));
            let on_native_id = settings.on_native_id.clone();
            let native = ClaudeNative {
                warm: Some(warm),
                pool: self.pool.clone(),
                key: settings.session_key,
                on_native_id,
                started_background_work: false,
                ephemeral: settings.ephemeral,
            };
            Ok(Box::new(native) as Box<dyn NativeSession>)
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.pool.shutdown().await })
    }

    fn diagnostics(&self) -> Option<&dyn clawbridge_bridge::diagnose::Diagnostics> {
        Some(&self.diagnostics)
    }

    fn native_ops(&self) -> Option<&dyn clawbridge_bridge::native_ops::NativeOps> {
        Some(self)
    }
}

/// A Claude session on lease from the backend's pool; handed back (parked) when it ends.
struct ClaudeNative {
    /// The warm CLI; `None` only while it is being handed back.
    warm: Option<WarmSession>,
    /// Where it goes back to.
    pool: Arc<SessionPool>,
    /// The host session it serves.
    key: String,
    /// Told the Claude session id as soon as the CLI names it.
    on_native_id: Option<NativeIdListener>,
    /// A turn started a command the CLI keeps running in the background (Bash
    /// `run_in_background`): the CLI is stopped with the attempt instead of kept warm, so no native
    /// work outlives the attempt that the host admitted it under.
    started_background_work: bool,
    /// Side work (`OpenSettings::ephemeral`): nothing continues it, so its CLI stops with the
    /// attempt instead of being parked.
    ephemeral: bool,
}

/// Whether `call` starts work the CLI keeps running after the call returns.
fn starts_background_work(call: &clawbridge_bridge::events::ToolCall) -> bool {
    call.native && call.arguments.get("run_in_background").and_then(serde_json::Value::as_bool) == Some(true)
}

impl NativeSession for ClaudeNative {
    fn run_turn<'a>(&'a mut self, turn: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let TurnRequest { input, sink, cancel } = turn;
            let Some(warm) = self.warm.as_mut() else {
                let source = "the Claude session was already handed back".into();
                return Err(BackendError::Turn { source });
            };
            let mut background = false;
            let mut watched = clawbridge_bridge::attempt::relay(sink, |sink, event| {
                if let clawbridge_bridge::events::Event::ToolStarted(call) = event {
                    background |= starts_background_work(call);
                }
                sink.push(event);
            });
            let result = warm
                .session()
                .run_turn_with(input, self.on_native_id.as_ref(), &mut watched, cancel)
                .await
                .map_err(|error| BackendError::Turn { source: Box::new(error) });
            self.started_background_work |= background;
            result
        })
    }

    fn steering(&self) -> Option<Arc<dyn Steering>> {
        let gate = self.warm.as_ref()?.session_ref().steer_gate();
        Some(Arc::new(super::steering::ClaudeSteering { gate }))
    }

    fn native_id(&self) -> Option<String> {
        let warm = self.warm.as_ref()?;
        warm.session_ref().session_id().map(str::to_owned)
    }

    fn resume_failure(&self) -> Option<String> {
        let warm = self.warm.as_ref()?;
        warm.session_ref().resume_failure().map(ToString::to_string)
    }

    fn shutdown(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        let Some(warm) = self.warm.take() else { return Box::pin(async {}) };
        if self.ephemeral {
            return Box::pin(warm.shutdown());
        }
        if self.started_background_work {
            // Its background commands stop with it (they run in its process group); the next
            // attempt resumes the Claude session in a new CLI.
            tracing::info!(session = %self.key, "stopping the claude process: it ran commands in the background");
            return Box::pin(warm.shutdown());
        }
        // Kept warm for the session's next attempt; a process the turn had to stop is respawned
        // (with `--resume`) by that attempt.
        self.pool.park(&self.key, warm);
        Box::pin(async {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_or_old_cli_makes_the_harness_unavailable_with_the_reason() {
        let backend = ClaudeBackend::default();
        let missing = backend.locate(Some(Path::new("/nonexistent/claude"))).unwrap_err();
        assert!(missing.why.contains("/nonexistent/claude is not an executable file"), "{missing}");

        let dir = tempfile::tempdir().unwrap();
        let cli = dir.path().join("claude");
        std::fs::write(&cli, "#!/bin/sh\necho '2.0.1 (Claude Code)'\n").unwrap();
        std::fs::set_permissions(&cli, <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755))
            .unwrap();
        let versions = VersionProbe::in_memory();
        let old = backend.probe(&cli, &versions).await;
        assert!(!old.available);
        let why = old.detail.unwrap_or_default();
        assert!(why.contains("2.0.1") && why.contains("2.1.328"), "{why}");

        std::fs::write(&cli, "#!/bin/sh\necho '2.1.328 (Claude Code)'\n").unwrap();
        let current = backend.probe(&cli, &versions).await;
        assert!(current.available, "{current:?}");
        assert_eq!(current.version.as_deref(), Some("2.1.328"));
    }

    #[tokio::test]
    async fn the_operators_options_reach_the_launch_config_and_the_lookup() {
        use std::time::Duration;

        use clawbridge_bridge::backend::ConfiguredProgram;
        use clawbridge_bridge::supervisor::Containment;

        let options = crate::AgentOptions {
            program: Some(ConfiguredProgram {
                path: "/nonexistent/my-claude".into(),
                named_by: "claude.bin (file:/cfg/config.toml:2)".into(),
            }),
            write_timeout: Some(Duration::from_millis(1234)),
            containment: Some(Containment::TokenOnly),
            remote: None,
        };
        let backend = ClaudeBackend::default().configured(options);
        let (config, _) = backend.base_config(&OpenSettings::default());
        assert_eq!(config.write_timeout, Duration::from_millis(1234));
        assert_eq!(config.containment, Containment::TokenOnly);
        let missing = backend.locate(None).unwrap_err();
        assert!(
            missing
                .why
                .contains("claude.bin (file:/cfg/config.toml:2)=/nonexistent/my-claude is not an executable file"),
            "{missing}"
        );

        let unconfigured = ClaudeBackend::default();
        let (config, _) = unconfigured.base_config(&OpenSettings::default());
        assert_eq!(config.write_timeout, clawbridge_bridge::transport::agent_write_timeout(), "the default stays");
    }
}
