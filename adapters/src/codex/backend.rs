//! The Codex app-server as a [`Backend`]: `clawbridge-codex` runs a real `codex app-server`; the
//! demo (`clawbridge-demo`) is the same backend playing a bundled recording of one through an
//! executable that speaks it (the `clawbridge` binary's hidden `demo-agent` role).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::backend::{
    Backend, BackendError, FixedApproval, GateRefusal, HarnessFacts, NativeSession, OpenFuture, OpenSettings,
    ProbeReport, ProgramNotFound, Steering, Supports, TurnFuture, TurnRequest,
};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::events::Event;
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_protocol::codex::version::VersionPolicy;
use futures::future::BoxFuture;

use super::config::{CodexConfig, CodexRemote};
use super::session::{CodexError, CodexSession, Steering as CodexSteering, ThreadOptions, ThreadReady};
use super::shared::{ServerMode, ServerPool};
use super::tool_policy::{self, CodexToolPolicy};

/// The environment variable that names the `codex` executable.
pub const CODEX_BIN_ENV: &str = "CLAWBRIDGE_CODEX_BIN";
/// The override that lets Codex ask the user (`request_user_input`) in its default mode
/// (docs/peers/codex.md#questions-for-the-user).
const ASK_IN_DEFAULT_MODE: &str = "features.default_mode_request_user_input=true";
/// The tools Codex 0.169 offers besides the native tool classes (`multi_agent`: `spawn_agent`,
/// `send_input`, `wait_agent`, …; `goals`: `get_goal`, `create_goal`, `update_goal`), turned off
/// for side work (`OpenSettings::ephemeral`).
const SIDE_WORK_OVERRIDES: &[&str] = &["features.multi_agent=false", "features.goals=false"];
/// How long `codex --version` may take.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Which executable speaks Codex's protocol.
#[derive(Clone, Debug)]
enum Flavour {
    /// A real `codex app-server`, found by [`CODEX_BIN_ENV`] or `PATH`.
    Native,
    /// An executable replaying a bundled recording of codex `version`, started with `args`.
    Replay {
        /// The replaying executable.
        program: PathBuf,
        /// Its arguments before Codex's own (`demo-agent`).
        args: Vec<OsString>,
        /// The recorded server's version.
        version: &'static str,
    },
}

/// A Codex app-server backend.
#[derive(Clone, Debug)]
pub struct CodexBackend {
    /// What its harness is.
    facts: HarnessFacts,
    /// What it runs.
    flavour: Flavour,
    /// What the operator configured.
    options: crate::AgentOptions,
    /// Codex's home given to every app-server; `None`: the bridge's `CODEX_HOME`, if set.
    codex_home: Option<PathBuf>,
    /// A listening app-server every session connects to instead of spawning one.
    connect: Option<CodexRemote>,
    /// Whether attempts share warm app-servers (the native flavour only; a replay plays one
    /// recorded thread per process).
    servers: ServerMode,
    /// The shared servers, made on the first shared attempt (inside the runtime) and kept by every
    /// clone of this backend.
    pool: Arc<std::sync::OnceLock<Arc<ServerPool>>>,
}

impl CodexBackend {
    /// The real `codex app-server` (`clawbridge-codex`).
    pub fn native() -> Self {
        CodexBackend {
            facts: HarnessFacts {
                id: "clawbridge-codex",
                backend: "codex",
                label: "Codex (clawbridge)",
                process: "codex app-server",
                native_session: "thread",
                transcript_api: "codex-app-server",
                supports: Supports {
                    images: true,
                    reasoning_level: true,
                    steering: true,
                    user_input: true,
                    host_tools: true,
                    native_tool_policy: true,
                    resume: true,
                    ephemeral: true,
                    ..Supports::default()
                },
                notice: None,
                fixed_approval: None,
            },
            flavour: Flavour::Native,
            options: crate::AgentOptions::default(),
            codex_home: None,
            connect: None,
            servers: ServerMode::PerAttempt,
            pool: Arc::default(),
        }
    }

    /// The backend under the operator's settings: its executable, Codex's home, deadlines.
    #[must_use]
    pub fn configured(mut self, options: crate::AgentOptions, codex_home: Option<PathBuf>) -> Self {
        self.options = options;
        self.codex_home = codex_home;
        self
    }

    /// Every session connects to the app-server at `remote` instead of spawning one (the native
    /// backend only: a replay has nothing to connect to).
    #[must_use]
    pub fn connecting(mut self, remote: Option<CodexRemote>) -> Self {
        if matches!(self.flavour, Flavour::Native) {
            self.connect = remote;
        }
        self
    }

    /// Whether attempts share warm app-servers (docs/peers/codex.md#shared-app-servers). A replay
    /// stays per attempt whatever is asked.
    #[must_use]
    pub fn with_servers(mut self, servers: ServerMode) -> Self {
        self.servers = servers;
        self
    }

    /// The shared servers, if this backend shares them and has started any.
    pub fn server_pool(&self) -> Option<&Arc<ServerPool>> {
        self.pool.get()
    }

    /// The pool to open a session on, when attempts share servers.
    fn shared_pool(&self) -> Option<&Arc<ServerPool>> {
        match (&self.flavour, self.servers) {
            (Flavour::Native, ServerMode::Shared(limits)) => Some(self.pool.get_or_init(|| ServerPool::new(limits))),
            _ => None,
        }
    }

    /// The demo (`clawbridge-demo`): `program args… app-server` replays a recorded real codex
    /// `version` turn. The recording holds one fresh thread with no host tools, and its approval
    /// was granted, so the demo never resumes, offers no tools and grants its approval.
    pub fn demo(program: PathBuf, args: Vec<OsString>, version: &'static str) -> Self {
        CodexBackend {
            facts: HarnessFacts {
                id: "clawbridge-demo",
                backend: "demo",
                label: "Demo replay (clawbridge)",
                process: "the demo agent",
                native_session: "thread",
                transcript_api: "codex-app-server",
                supports: Supports::default(),
                notice: Some(
                    "demo backend: playing a bundled codex 0.169.0 recording; its approval is granted as recorded",
                ),
                fixed_approval: Some(FixedApproval::Allow),
            },
            flavour: Flavour::Replay { program, args, version },
            options: crate::AgentOptions::default(),
            codex_home: None,
            connect: None,
            servers: ServerMode::PerAttempt,
            pool: Arc::default(),
        }
    }

    /// The scripted demo (`clawbridge-demo` in `clawbridge run`): `program args… app-server` is a
    /// scripted agent speaking the app-server dialect that answers the prompt it is given and runs
    /// the harmless command it names for real, so its approval is asked like any agent's.
    pub fn scripted_demo(program: PathBuf, args: Vec<OsString>, version: &'static str) -> Self {
        let mut backend = Self::demo(program, args, version);
        backend.facts.label = "Demo (clawbridge, scripted)";
        backend.facts.notice = Some(
            "demo backend: a scripted agent (no model) that quotes your prompt and runs a harmless command it names once you allow it",
        );
        backend.facts.fixed_approval = None;
        backend
    }

    /// The listening app-server sessions connect to, if one is configured.
    pub(super) fn connected(&self) -> Option<&CodexRemote> {
        self.connect.as_ref()
    }

    /// The executable the operator configured (config file, variable, flag), if any.
    pub(super) fn configured_program(&self) -> Option<&clawbridge_bridge::backend::ConfiguredProgram> {
        self.options.program.as_ref()
    }

    /// Codex's home for the processes this backend starts: the configured one, else the bridge's
    /// own `CODEX_HOME`, if set.
    fn codex_home(&self) -> Option<PathBuf> {
        self.codex_home.clone().or_else(|| std::env::var_os("CODEX_HOME").map(PathBuf::from))
    }

    /// The launcher and the far side's codex, when the operator configured one.
    pub(super) fn remote(&self) -> Option<&clawbridge_bridge::remote::RemoteSpec> {
        self.options.remote.as_ref()
    }

    /// How a session of this backend is launched under `settings`.
    pub(super) fn config(&self, settings: &OpenSettings, tools: &CodexToolPolicy) -> CodexConfig {
        let mut config = CodexConfig::new(settings.program.clone());
        config.config_overrides.extend(tools.config_overrides.iter().cloned());
        self.options.apply(&mut config.write_timeout, &mut config.containment);
        match &self.flavour {
            Flavour::Native => {
                config.remote.clone_from(&self.options.remote);
                // The user's CODEX_HOME (config, provider, threads) carries over; it is not
                // inherited otherwise.
                config.codex_home = self.codex_home();
                // Without host auth the provider config.toml selects takes its key from the
                // variable it names: that one variable passes (super::provider_env).
                let home = super::provider_env::resolve_home(config.codex_home.as_deref());
                if let Some(key) = home
                    .as_deref()
                    .filter(|_| settings.route_auth.is_none())
                    .and_then(super::provider_env::selected_env_key)
                {
                    config.env.inherit.push(key);
                }
            }
            Flavour::Replay { args, .. } => config.launcher_args.clone_from(args),
        }
        if let Some(auth) = &settings.route_auth {
            super::auth::apply(&mut config, auth);
        }
        config.cwd.clone_from(&settings.cwd);
        // The environment the host prepared for this attempt: part of a shared server's key, so no
        // process ever runs under another attempt's variables.
        config.env.set.extend(settings.process_env.iter().map(|(name, value)| (name.into(), value.into())));
        config.registry.clone_from(&settings.registry);
        if let Some(remote) = &self.connect {
            config.connect = Some(remote.endpoint.clone());
            config.ws_auth = remote.auth.clone();
        }
        settings.apply_deadlines(&mut config.approval_timeout, &mut config.tool_timeout, &mut config.interrupt_grace);
        settings.apply_idle_timeout(&mut config.turn_idle_timeout);
        config
    }

    /// The thread settings under `settings` (a replay asks for nothing it did not record).
    pub(super) fn thread_options(&self, settings: &OpenSettings, tools: &CodexToolPolicy) -> ThreadOptions {
        let replay = matches!(self.flavour, Flavour::Replay { .. });
        ThreadOptions {
            cwd: settings.cwd.as_ref().map(|cwd| cwd.display().to_string()),
            model: settings.model.clone().filter(|m| !m.is_empty() && !replay),
            developer_instructions: settings.system_guidance(),
            sandbox: tools.sandbox.clone(),
            ephemeral: settings.ephemeral,
            config: thread_config(settings, replay),
            ..ThreadOptions::default()
        }
    }

    async fn open_session(&self, settings: OpenSettings, mut hooks: SessionHooks) -> Result<CodexNative, BackendError> {
        if !self.facts.supports.host_tools {
            hooks.tools = Arc::new(clawbridge_bridge::attempt::hooks::NoHostTools);
        }
        let tools = tool_policy::apply(&settings.native_tools)?;
        let mut config = self.config(&settings, &tools);
        if settings.ephemeral {
            // Side work has a literal zero-tool surface: Codex's own agent and goal tools go too
            // (the native tool policy already took the shell, edits, reads and the web).
            config.config_overrides.extend(SIDE_WORK_OVERRIDES.iter().map(|o| (*o).to_owned()));
        }
        if settings.user_input.is_some() && self.facts.supports.user_input {
            // Codex 0.169 answers `request_user_input` itself outside plan mode ("unavailable in
            // Default mode") unless this feature is on; with a person to ask, let it ask.
            config.config_overrides.push(ASK_IN_DEFAULT_MODE.into());
        }
        let connected = match self.shared_pool() {
            Some(pool) => CodexSession::on_shared(pool, config, hooks).await,
            None => CodexSession::connect(config, hooks).await,
        };
        let mut session = connected.map_err(start_error)?;
        if let Some(asker) = settings.user_input.clone().filter(|_| self.facts.supports.user_input) {
            session.answer_user_input_with(asker);
        }
        let options = self.thread_options(&settings, &tools);
        let resume = settings.resume.as_deref().filter(|_| self.facts.supports.resume);
        let thread = match resume {
            // Side work sees the conversation through a copy; the session's thread stays as it was.
            Some(previous) if settings.ephemeral => session.fork_ephemeral(previous, &options).await,
            Some(previous) => session.resume_or_start(previous, &options).await,
            None => session.start_thread(&options).await,
        };
        match thread {
            Ok(thread) => {
                settings.announce_native_id(&thread.thread_id);
                Ok(CodexNative { session, thread })
            }
            Err(error) => {
                session.shutdown().await;
                Err(BackendError::Conversation { source: Box::new(error) })
            }
        }
    }
}

/// The thread's config overrides (`config` of `thread/start` / `thread/resume`), `None` when there
/// are none; a replay asks for nothing it did not record. The user's MCP servers go under
/// `mcp_servers`, except for side work (an ephemeral thread runs with no tools, MCP servers
/// included). The host's context-window cap is `model_context_window`: Codex then reports that
/// window in `thread/tokenUsage/updated` and compacts within it.
fn thread_config(settings: &OpenSettings, replay: bool) -> Option<serde_json::Map<String, serde_json::Value>> {
    if replay {
        return None;
    }
    let mut config = serde_json::Map::new();
    if !settings.mcp_servers.is_empty() && !settings.ephemeral {
        let servers = settings.mcp_servers.iter().map(|(name, server)| (name.clone(), server.clone()));
        config.insert("mcp_servers".to_string(), serde_json::Value::Object(servers.collect()));
    }
    if let Some(window) = settings.context_window {
        config.insert("model_context_window".to_string(), window.into());
    }
    if settings.skip_native_project_docs {
        // Codex's budget for the project docs it reads itself; none is read at 0.
        config.insert("project_doc_max_bytes".to_string(), 0.into());
    }
    (!config.is_empty()).then_some(config)
}

pub(super) fn start_error(error: CodexError) -> BackendError {
    let retryable = error.is_retryable();
    BackendError::Start { source: Box::new(error), retryable }
}

/// The server at `remote` reached and its `initialize` answer judged by the version gate, as a
/// session would: an endpoint that cannot be reached, or refuses our credential, is reported so.
/// A daemon behind `codex app-server proxy` is reached the same way, the proxy launched as a
/// session launches it (`program` under the launcher, with Codex's home).
async fn probe_remote(program: &Path, remote: &CodexRemote, backend: &CodexBackend) -> ProbeReport {
    let mut config = CodexConfig::new(program);
    if remote.endpoint.is_proxy() {
        backend.options.apply(&mut config.write_timeout, &mut config.containment);
        config.remote.clone_from(&backend.options.remote);
        config.codex_home = backend.codex_home();
    }
    config.connect = Some(remote.endpoint.clone());
    config.ws_auth = remote.auth.clone();
    config.handshake_timeout = VERSION_TIMEOUT;
    let hooks = SessionHooks {
        approver: Arc::new(clawbridge_bridge::attempt::hooks::FixedApprover(
            clawbridge_bridge::attempt::hooks::ApprovalDecision::Deny { message: None },
        )),
        tools: Arc::new(clawbridge_bridge::attempt::hooks::NoHostTools),
        observer: Arc::new(clawbridge_bridge::attempt::hooks::NoObserver),
    };
    let program = program.to_path_buf();
    match CodexSession::connect(config, hooks).await {
        Ok(session) => {
            let version = session.server_version().to_string();
            session.shutdown().await;
            ProbeReport::available(program, Some(version))
        }
        Err(CodexError::VersionRejected { rejected, .. }) => {
            let refusal = match rejected {
                clawbridge_protocol::codex::version::VersionRejected::BelowFloor { .. } => GateRefusal::BelowFloor,
                _ => GateRefusal::Unversioned,
            };
            ProbeReport::unavailable(program, None, rejected.to_string()).refused(refusal)
        }
        // Its version cannot be asked: as for a binary that does not run.
        Err(error) => ProbeReport::unavailable(program, None, clawbridge_bridge::supervisor::error_chain(&error))
            .refused(GateRefusal::CannotRun),
    }
}

/// `program --version` (the last word that starts with a digit) judged by the Codex version gate.
async fn probe_native(program: &Path, versions: &VersionProbe, options: &crate::AgentOptions) -> ProbeReport {
    let program = program.to_path_buf();
    let mut config = CodexConfig::new(program.clone());
    options.apply(&mut config.write_timeout, &mut config.containment);
    config.remote.clone_from(&options.remote);
    let text = match versions.version_output(&config.probe_command(), VERSION_TIMEOUT, config.containment).await {
        Ok(text) => text,
        Err(error) => {
            return ProbeReport::unavailable(program, None, error.to_string()).refused(GateRefusal::CannotRun);
        }
    };
    let version = text.split_whitespace().rev().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let Some(version) = version.map(str::to_string) else {
        let why = format!("`{} --version` printed no version: {}", program.display(), text.trim());
        return ProbeReport::unavailable(program, None, why).refused(GateRefusal::Unversioned);
    };
    match VersionPolicy::default().check(Some(&format!("codex/{version}"))) {
        Ok(_) => ProbeReport::available(program, Some(version)),
        Err(rejected) => {
            let refusal = match rejected {
                clawbridge_protocol::codex::version::VersionRejected::BelowFloor { .. } => GateRefusal::BelowFloor,
                _ => GateRefusal::Unversioned,
            };
            ProbeReport::unavailable(program, Some(version), rejected.to_string()).refused(refusal)
        }
    }
}

impl Backend for CodexBackend {
    fn facts(&self) -> &HarnessFacts {
        &self.facts
    }

    fn locate(&self, requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        // A server reached over a connection needs no local binary; the name only labels reports.
        // One reached through `codex app-server proxy` needs the proxy (or its launcher) here.
        if self.connect.as_ref().is_some_and(|remote| !remote.endpoint.is_proxy()) {
            return Ok(requested.map_or_else(|| PathBuf::from("codex"), Path::to_path_buf));
        }
        match &self.flavour {
            Flavour::Native => self.options.locate(requested, CODEX_BIN_ENV, "codex"),
            Flavour::Replay { program, .. } => Ok(requested.map_or_else(|| program.clone(), Path::to_path_buf)),
        }
    }

    fn probe<'a>(&'a self, program: &'a Path, versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
        Box::pin(async move {
            match (&self.flavour, &self.connect) {
                (Flavour::Native, Some(remote)) => probe_remote(program, remote, self).await,
                (Flavour::Native, None) => probe_native(program, versions, &self.options).await,
                (Flavour::Replay { version, .. }, _) => {
                    let program = program.to_path_buf();
                    if program.exists() {
                        ProbeReport::available(program, Some((*version).to_string()))
                    } else {
                        let why = format!("{} no longer exists", program.display());
                        ProbeReport::unavailable(program, Some((*version).to_string()), why)
                    }
                }
            }
        })
    }

    fn fingerprints(&self, settings: &OpenSettings) -> Fingerprints {
        let cwd = settings.cwd.as_ref().map(|cwd| cwd.display().to_string()).unwrap_or_default();
        let mut fingerprints = Fingerprints::new(self.facts.id, cwd, settings.model.clone().unwrap_or_default());
        // A thread lives in the server's home: one on another server is not the same thread.
        if let Some(remote) = &self.connect {
            fingerprints = fingerprints.with("endpoint", remote.endpoint.to_string());
            // A proxy's socket path says nothing of the host: the launcher does.
            if let Some(launched) = self.remote().filter(|_| remote.endpoint.is_proxy()) {
                fingerprints = fingerprints.with("launcher", launched.launcher.display());
            }
        }
        // The user's MCP servers are part of the thread's tools; their env and headers may hold
        // credentials, so only a keyed hash of them is kept.
        if let Some(material) = settings.mcp_servers_material() {
            fingerprints = fingerprints.with_secret("mcp", material);
        }
        // Host auth names the endpoint and credential the thread talks to; the native login does not.
        match &settings.route_auth {
            Some(auth) => fingerprints.with_secret("auth", auth.fingerprint_material()),
            None => fingerprints.with("auth", "codex-login"),
        }
    }

    fn archive<'a>(&'a self, settings: OpenSettings, native_id: &'a str) -> BoxFuture<'a, Result<bool, BackendError>> {
        Box::pin(async move {
            // A replayed recording answers only what it recorded.
            if !matches!(self.flavour, Flavour::Native) {
                return Ok(false);
            }
            // The shared server that still holds the thread loaded archives it (Codex refuses it
            // from any other process); else a process of its own, outside any turn.
            if let Some(archived) = match self.shared_pool() {
                Some(pool) => pool.archive_loaded(native_id).await,
                None => None,
            } {
                return archived.map(|()| true).map_err(|error| BackendError::Conversation { source: Box::new(error) });
            }
            let tools = tool_policy::apply(&settings.native_tools)?;
            let config = self.config(&settings, &tools);
            let hooks = SessionHooks {
                approver: Arc::new(clawbridge_bridge::attempt::hooks::FixedApprover(
                    clawbridge_bridge::attempt::hooks::ApprovalDecision::Deny { message: None },
                )),
                tools: Arc::new(clawbridge_bridge::attempt::hooks::NoHostTools),
                observer: Arc::new(clawbridge_bridge::attempt::hooks::NoObserver),
            };
            let mut session = CodexSession::connect(config, hooks).await.map_err(start_error)?;
            let archived = session.archive_thread(native_id).await;
            session.shutdown().await;
            archived.map(|()| true).map_err(|error| BackendError::Conversation { source: Box::new(error) })
        })
    }

    fn diagnostics(&self) -> Option<&dyn clawbridge_bridge::diagnose::Diagnostics> {
        // The demo's recording answers only the requests it recorded: nothing to diagnose.
        matches!(self.flavour, Flavour::Native).then_some(self as &dyn clawbridge_bridge::diagnose::Diagnostics)
    }

    fn native_ops(&self) -> Option<&dyn clawbridge_bridge::native_ops::NativeOps> {
        // A replay answers only what it recorded: no catalog, no compactor.
        matches!(self.flavour, Flavour::Native).then_some(self as &dyn clawbridge_bridge::native_ops::NativeOps)
    }

    fn open(&self, settings: OpenSettings, hooks: SessionHooks) -> OpenFuture<'_> {
        Box::pin(async move {
            let native = self.open_session(settings, hooks).await?;
            Ok(Box::new(native) as Box<dyn NativeSession>)
        })
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(pool) = self.pool.get() {
                pool.shutdown().await;
            }
        })
    }
}

/// A Codex session with its thread ready.
struct CodexNative {
    /// The app-server and its handshake.
    session: CodexSession,
    /// The thread turns run in.
    thread: ThreadReady,
}

impl NativeSession for CodexNative {
    fn run_turn<'a>(&'a mut self, turn: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let TurnRequest { input, sink, cancel } = turn;
            // Codex named the thread's model when the thread opened; the rows name it, not the
            // host's request (an alias or an empty default). Said right after the turn starts, so
            // `turnStarted` stays the turn's first event.
            let mut model = self.thread.model.clone().filter(|m| !m.trim().is_empty());
            let mut named = clawbridge_bridge::attempt::relay(sink, |sink, event| {
                sink.push(event);
                if matches!(event, Event::TurnStarted { .. }) {
                    if let Some(model) = model.take() {
                        sink.push(&Event::ModelInUse { model });
                    }
                }
            });
            self.session
                .run_turn_with(&self.thread.thread_id, input, &mut named, cancel)
                .await
                .map_err(|error| BackendError::Turn { source: Box::new(error) })
        })
    }

    fn steering(&self) -> Option<Arc<dyn Steering>> {
        let thread_id = self.thread.thread_id.clone();
        Some(Arc::new(ThreadSteering { steering: self.session.steering(), thread_id }))
    }

    fn native_id(&self) -> Option<String> {
        Some(self.thread.thread_id.clone())
    }

    fn resume_failure(&self) -> Option<String> {
        self.thread.resume_failure.clone()
    }

    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let stop = self.session.shutdown().await;
            tracing::debug!(?stop, "codex app-server stopped (none: left a shared server)");
        })
    }
}

/// Steers the running turn of one thread.
struct ThreadSteering {
    /// The session's steering handle.
    steering: CodexSteering,
    /// The thread whose turn is steered.
    thread_id: String,
}

impl Steering for ThreadSteering {
    fn steer<'a>(&'a self, turn_id: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            self.steering
                .steer(&self.thread_id, turn_id, text)
                .await
                .map(drop)
                .map_err(|error| BackendError::Steer { source: Box::new(error) })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clawbridge_bridge::backend::ConfiguredProgram;
    use clawbridge_bridge::supervisor::Containment;

    use super::*;

    #[test]
    fn the_hosts_context_window_cap_is_the_threads_model_context_window_and_side_work_keeps_it() {
        let backend = CodexBackend::native();
        let mut settings = OpenSettings { context_window: Some(64_000), ..OpenSettings::default() };
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let config = backend.thread_options(&settings, &tools).config.unwrap();
        assert_eq!(serde_json::Value::Object(config), serde_json::json!({"model_context_window": 64_000}));
        settings.ephemeral = true;
        settings.mcp_servers.insert("probe".into(), serde_json::json!({"command": "node"}));
        let config = backend.thread_options(&settings, &tools).config.unwrap();
        assert_eq!(serde_json::Value::Object(config), serde_json::json!({"model_context_window": 64_000}));
        settings.context_window = None;
        assert_eq!(backend.thread_options(&settings, &tools).config, None);
    }

    #[test]
    fn a_turn_without_native_project_docs_sets_codexs_project_doc_budget_to_zero() {
        let backend = CodexBackend::native();
        let mut settings = OpenSettings { skip_native_project_docs: true, ..OpenSettings::default() };
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let config = backend.thread_options(&settings, &tools).config.expect("a config override");
        assert_eq!(serde_json::Value::Object(config), serde_json::json!({"project_doc_max_bytes": 0}));
        settings.skip_native_project_docs = false;
        assert_eq!(backend.thread_options(&settings, &tools).config, None, "Codex's own budget otherwise");
    }

    #[test]
    fn the_users_mcp_servers_go_into_the_thread_config_and_only_their_keyed_hash_into_the_binding() {
        let backend = CodexBackend::native();
        let mut settings = OpenSettings { cwd: Some(PathBuf::from("/w")), ..OpenSettings::default() };
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let without = backend.fingerprints(&settings);
        assert_eq!(backend.thread_options(&settings, &tools).config, None, "no servers, no config override");
        let server = serde_json::json!({"command": "node", "args": ["probe.mjs"], "env": {"TOKEN": "s3cret"}});
        settings.mcp_servers.insert("probe".into(), server.clone());
        let config = backend.thread_options(&settings, &tools).config.expect("a config override");
        assert_eq!(serde_json::Value::Object(config), serde_json::json!({"mcp_servers": {"probe": server}}));
        let key = clawbridge_bridge::binding::FingerprintKey::process();
        let with = backend.fingerprints(&settings).keyed(key);
        let bound_without = clawbridge_bridge::binding::Binding::new("th-1", &without.keyed(key));
        assert!(bound_without.check(&with).is_err(), "a thread bound without the servers is not resumed with them");
        let bound_with = clawbridge_bridge::binding::Binding::new("th-1", &with);
        assert!(bound_with.check(&with).is_ok());
        settings.mcp_servers.insert("probe".into(), serde_json::json!({"command": "node", "env": {"TOKEN": "other"}}));
        assert!(
            bound_with.check(&backend.fingerprints(&settings).keyed(key)).is_err(),
            "another secret, another binding"
        );
        let stored = serde_json::to_string(&bound_with).unwrap();
        assert!(!stored.contains("s3cret") && !stored.contains("probe.mjs"), "no raw server config: {stored}");
    }

    #[test]
    fn under_a_launcher_codex_is_named_for_the_far_side_and_its_secrets_go_on_stdin() {
        use clawbridge_bridge::remote::{Launcher, RemoteSpec};
        let launcher = Launcher::new(vec!["env".into()]).unwrap();
        let options = crate::AgentOptions {
            remote: Some(RemoteSpec { launcher, program: "/far/codex".into() }),
            ..crate::AgentOptions::default()
        };
        let backend = CodexBackend::native().configured(options, Some(PathBuf::from("/far/codex-home")));
        let located = backend.locate(Some(Path::new("/nonexistent/local-codex"))).unwrap();
        assert_eq!(located.file_name(), Some(std::ffi::OsStr::new("env")), "the launcher, found here");
        let settings = OpenSettings { program: located.clone(), ..OpenSettings::default() };
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let mut config = backend.config(&settings, &tools);
        config.secret_env.push(("CLAWBRIDGE_ROUTE_API_KEY".into(), crate::claude::Secret::new("sk-far-secret")));
        let (command, preamble) = config.launch().unwrap();
        assert_eq!(command.program, located);
        assert!(command.args.contains(&"/far/codex".into()) && command.args.contains(&"app-server".into()));
        let argv = format!("{:?}", command.args);
        assert!(!argv.contains("sk-far-secret") && !argv.contains("/far/codex-home"), "{argv}");
        let block = String::from_utf8(preamble.unwrap().as_bytes().to_vec()).unwrap();
        assert!(block.contains("CLAWBRIDGE_ROUTE_API_KEY=sk-far-secret\n"), "{block}");
        assert!(block.contains("CODEX_HOME=/far/codex-home\n"), "{block}");
    }

    #[test]
    fn a_proxy_under_a_launcher_runs_there_without_the_sessions_secrets_and_its_host_is_in_the_binding() {
        use clawbridge_bridge::remote::{Launcher, RemoteSpec};
        let through = |host: &str| {
            let launcher = Launcher::new(vec!["env".into(), host.into()]).unwrap();
            let options = crate::AgentOptions {
                remote: Some(RemoteSpec { launcher, program: "/far/codex".into() }),
                ..crate::AgentOptions::default()
            };
            let endpoint = "proxy:///far/daemon.sock".parse().unwrap();
            CodexBackend::native()
                .configured(options, Some(PathBuf::from("/far/codex-home")))
                .connecting(Some(CodexRemote { endpoint, auth: clawbridge_bridge::transport::bearer::WsAuth::None }))
        };
        let backend = through("A=1");
        let located = backend.locate(None).unwrap();
        assert_eq!(located.file_name(), Some(std::ffi::OsStr::new("env")), "the proxy needs its launcher here");
        let settings = OpenSettings { program: located.clone(), ..OpenSettings::default() };
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let mut config = backend.config(&settings, &tools);
        config.secret_env.push(("CLAWBRIDGE_ROUTE_API_KEY".into(), crate::claude::Secret::new("sk-far-secret")));
        let (command, preamble, via) = config.proxy_launch(Some(Path::new("/far/daemon.sock"))).unwrap();
        assert_eq!(command.program, located);
        let far: Vec<std::ffi::OsString> =
            ["/far/codex", "app-server", "proxy", "--sock", "/far/daemon.sock"].map(Into::into).to_vec();
        assert!(command.args.ends_with(&far), "the wrapper runs the proxy on the far side: {:?}", command.args);
        let block = String::from_utf8(preamble.unwrap().as_bytes().to_vec()).unwrap();
        assert!(block.contains("CODEX_HOME=/far/codex-home\n"), "the default socket is under it: {block}");
        assert!(!block.contains("sk-far-secret"), "the daemon has its own credentials: {block}");
        assert_eq!(via, "`/far/codex app-server proxy --sock /far/daemon.sock` through `env A=1`");
        let binding = |backend: &CodexBackend| format!("{:?}", backend.fingerprints(&settings));
        assert_eq!(binding(&backend), binding(&through("A=1")));
        assert_ne!(binding(&backend), binding(&through("B=1")), "the same socket on another host");
    }

    #[test]
    fn the_operators_options_reach_the_launch_config_and_the_lookup() {
        let options = crate::AgentOptions {
            program: Some(ConfiguredProgram {
                path: "/nonexistent/my-codex".into(),
                named_by: "CLAWBRIDGE_CODEX_BIN".into(),
            }),
            write_timeout: Some(Duration::from_millis(4321)),
            containment: Some(Containment::TokenOnly),
            remote: None,
        };
        let backend = CodexBackend::native().configured(options, Some(PathBuf::from("/srv/codex-home")));
        let settings = OpenSettings::default();
        let tools = tool_policy::apply(&settings.native_tools).unwrap();
        let config = backend.config(&settings, &tools);
        assert_eq!(config.write_timeout, Duration::from_millis(4321));
        assert_eq!(config.containment, Containment::TokenOnly);
        assert_eq!(config.codex_home, Some(PathBuf::from("/srv/codex-home")));
        let missing = backend.locate(None).unwrap_err();
        assert!(
            missing.why.contains("CLAWBRIDGE_CODEX_BIN=/nonexistent/my-codex is not an executable file"),
            "{missing}"
        );
    }
}
