//! The seam every backend implements once: what its harness is and supports ([`HarnessFacts`]),
//! whether it can run here ([`Backend::probe`]), which settings invalidate a resume
//! ([`Backend::fingerprints`]), and how a native session is opened ([`Backend::open`]) and driven
//! ([`NativeSession`]). `clawbridge run`, `serve` and the benchmarks hold a [`Registry`] of backends
//! and never ask which backend they hold.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::attempt::driver::EventSink;
use crate::attempt::hooks::{HostToolSpec, UserInputAsker};
use crate::attempt::{AttemptResult, SessionHooks};
use crate::binding::Fingerprints;
pub use crate::input::{ImageData, ThinkLevel};
use crate::native_tools::{NativeToolPolicy, Unenforceable};
use crate::probe::VersionProbe;
use crate::supervisor::PidRegistry;

/// What a backend's harness is, and what it supports, as the host sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HarnessFacts {
    /// The harness id (`clawbridge-codex`), unique in a registry.
    pub id: &'static str,
    /// The backend's short name (`codex`): `clawbridge run --backend` and the host's backend list.
    pub backend: &'static str,
    /// What a person reads (`Codex (clawbridge)`).
    pub label: &'static str,
    /// The native process as log and error messages name it (`codex app-server`).
    pub process: &'static str,
    /// What the backend calls its resumable session (`thread`), in the person's view.
    pub native_session: &'static str,
    /// The `api` stamped on mirrored assistant rows when the host names none (`codex-app-server`).
    pub transcript_api: &'static str,
    /// What the harness can do.
    pub supports: Supports,
    /// Said to a person before the turn (`clawbridge run`), when the backend has something to say.
    pub notice: Option<&'static str>,
    /// The approval answer this backend's sessions need regardless of the person (a replayed
    /// recording can only go the recorded way); `clawbridge run` uses it instead of asking.
    pub fixed_approval: Option<FixedApproval>,
}

/// The approval answer a backend fixes (see [`HarnessFacts::fixed_approval`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FixedApproval {
    /// Every approval is granted.
    Allow,
}

/// What a harness supports. Each flag is a promise the backend keeps in [`Backend::open`] and
/// [`NativeSession::run_turn`]; the host routes on them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // independent yes/no facts, each read on its own
pub struct Supports {
    /// Images attached to the prompt reach the model.
    pub images: bool,
    /// The host's thinking level is applied.
    pub reasoning_level: bool,
    /// More input can be added to a running turn ([`NativeSession::steering`]).
    pub steering: bool,
    /// The native session can compact its own context.
    pub compaction: bool,
    /// The native side asks the user questions (answered through [`OpenSettings::user_input`]).
    pub user_input: bool,
    /// The host's tools are offered to the native agent.
    pub host_tools: bool,
    /// The native tools obey a policy the host sets (allow lists, sandbox).
    pub native_tool_policy: bool,
    /// A later session can continue this one ([`OpenSettings::resume`]).
    pub resume: bool,
    /// A session can be opened that the native side never stores, fresh or as a fork of an
    /// earlier one ([`OpenSettings::ephemeral`]).
    pub ephemeral: bool,
}

/// A backend's executable is not where it was looked for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct ProgramNotFound {
    /// The name or path that was looked for.
    pub name: PathBuf,
    /// Where it was looked for, for a person.
    pub why: String,
}

/// Finds `backend`'s executable and probes it: what a host lists about the backend.
pub async fn locate_and_probe(backend: &dyn Backend, requested: Option<&Path>, versions: &VersionProbe) -> ProbeReport {
    match backend.locate(requested) {
        Ok(program) => backend.probe(&program, versions).await,
        Err(missing) => ProbeReport::unavailable(missing.name, None, missing.why),
    }
}

/// What a probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeReport {
    /// The executable sessions will run (as found, or as requested when it was not found).
    pub program: PathBuf,
    /// Whether sessions can be opened here.
    pub available: bool,
    /// The version the executable reported, when it reported one.
    pub version: Option<String>,
    /// Why the backend is unavailable (or what is worth knowing about it).
    pub detail: Option<String>,
    /// How the version gate refused it, when the backend says (`None`: available, or refused for a
    /// reason the backend did not classify).
    pub refusal: Option<GateRefusal>,
}

/// How a backend's version gate refused its executable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GateRefusal {
    /// It reported a version below the gate's floor.
    BelowFloor,
    /// It ran but reported no version the gate can read.
    Unversioned,
    /// It could not be run to ask its version (not executable, crashed, timed out).
    CannotRun,
}

impl ProbeReport {
    /// An available backend.
    pub fn available(program: PathBuf, version: Option<String>) -> Self {
        ProbeReport { program, available: true, version, detail: None, refusal: None }
    }

    /// An unavailable backend, and why.
    pub fn unavailable(program: PathBuf, version: Option<String>, why: impl Into<String>) -> Self {
        ProbeReport { program, available: false, version, detail: Some(why.into()), refusal: None }
    }

    /// This report, saying how the gate refused the executable.
    #[must_use]
    pub fn refused(mut self, refusal: GateRefusal) -> Self {
        self.refusal = Some(refusal);
        self
    }
}

/// How a native session is opened: backend-neutral settings, each backend applies what it can.
#[derive(Clone, Default)]
pub struct OpenSettings {
    /// The executable to run (from [`Backend::probe`]).
    pub program: PathBuf,
    /// The working directory the agent runs in.
    pub cwd: Option<PathBuf>,
    /// The model to ask for; `None` keeps the backend's default.
    pub model: Option<String>,
    /// Extra system prompt text from the host; part of the session's identity where a backend
    /// fingerprints it.
    pub system_prompt: Option<String>,
    /// The host's workspace bootstrap files as system guidance, given after
    /// [`system_prompt`](Self::system_prompt) but never fingerprinted: an edited file reaches the
    /// next turn of the same native session.
    pub bootstrap_context: Option<String>,
    /// The host's tools offered to the agent (ignored by backends that do not support them).
    pub host_tools: Vec<HostToolSpec>,
    /// The native session to continue (a thread or session id from an earlier attempt).
    pub resume: Option<String>,
    /// The host's session this native session serves; backends that keep processes warm between
    /// turns key them by it.
    pub session_key: String,
    /// Where spawned processes are recorded for orphan reaping.
    pub registry: Option<PidRegistry>,
    /// Who answers the native side's questions for the user; `None` answers nothing.
    pub user_input: Option<Arc<dyn UserInputAsker>>,
    /// How long one approval may take; the backend's default when `None`.
    pub approval_timeout: Option<Duration>,
    /// How long one host tool call may take; the backend's default when `None`.
    pub tool_timeout: Option<Duration>,
    /// How long an interrupted turn gets to confirm; the backend's default when `None`.
    pub interrupt_grace: Option<Duration>,
    /// The host's prepared endpoint and credentials; `None` leaves auth to the native login.
    pub route_auth: Option<clawbridge_protocol::host::RouteAuth>,
    /// How long a turn may go without progress before the idle watchdog ends it; the backend's
    /// default when `None`.
    pub turn_idle_timeout: Option<Duration>,
    /// Told the native session id as soon as it is known (and again whenever it changes).
    pub on_native_id: Option<NativeIdListener>,
    /// Which of the agent's own tools the host allows; a backend that cannot remove a denied class
    /// (no [`Supports::native_tool_policy`]) must not be opened under a restricted policy.
    pub native_tools: NativeToolPolicy,
    /// Variables the host prepared for this attempt's native processes, set on top of the child
    /// environment. The bridge is shared between attempts, so a process started under other
    /// variables must not serve this attempt (backends that keep processes warm key them by it).
    pub process_env: Vec<(String, String)>,
    /// Side work: the native side must not store this session (a Codex `ephemeral` thread, Claude
    /// Code's `--no-session-persistence`); with [`resume`](Self::resume) it starts as an ephemeral
    /// fork of that session, which is left as it was. Only for a backend that
    /// [`Supports::ephemeral`].
    pub ephemeral: bool,
    /// The user's MCP servers for the native runtime, as Codex's `mcp_servers` table (server name
    /// → `{command, args, env, cwd}` or `{url, http_headers}`); empty: none. A backend that applies
    /// them includes [`mcp_servers_material`](Self::mcp_servers_material) in its fingerprints.
    pub mcp_servers: std::collections::BTreeMap<String, serde_json::Value>,
    /// The context window the host capped the model to, in tokens, for a backend with a knob for
    /// it (Codex `model_context_window`); `None`: the runtime's own.
    pub context_window: Option<u64>,
    /// The native runtime must not read the working directory's project docs (AGENTS.md,
    /// CLAUDE.md) of its own: the host runs a lightweight or tool-less turn.
    pub skip_native_project_docs: bool,
}

/// The host's system prompt, then the bootstrap files, a blank line between; `None` when both
/// are empty. One spelling for every backend that sends them as one text.
pub fn join_system_guidance(system_prompt: Option<&str>, bootstrap: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [system_prompt, bootstrap].into_iter().flatten().filter(|p| !p.is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

impl OpenSettings {
    /// All the system guidance of the session: the host's system prompt, then the bootstrap
    /// files, a blank line between; `None` when both are empty.
    pub fn system_guidance(&self) -> Option<String> {
        join_system_guidance(self.system_prompt.as_deref(), self.bootstrap_context.as_deref())
    }

    /// The MCP servers as hash material (canonical JSON: keys sorted), `None` when there are none.
    /// It holds their env and headers, so it only goes into a keyed (secret) fingerprint.
    pub fn mcp_servers_material(&self) -> Option<String> {
        (!self.mcp_servers.is_empty()).then(|| serde_json::to_string(&self.mcp_servers).unwrap_or_default())
    }
}

impl OpenSettings {
    /// The host's process variables as hash material (names and values, in order), for the
    /// fingerprint of a warm process.
    pub fn process_env_material(&self) -> String {
        serde_json::to_string(&self.process_env).unwrap_or_default()
    }

    /// Tells the listener, if any, that the native session is `native_id`.
    pub fn announce_native_id(&self, native_id: &str) {
        if let Some(listener) = &self.on_native_id {
            listener(native_id);
        }
    }
}

impl OpenSettings {
    /// Overrides a backend's own deadlines with the ones these settings set (approval, host tool,
    /// interrupt grace), leaving the others as they are.
    pub fn apply_deadlines(&self, approval: &mut Duration, tool: &mut Duration, interrupt_grace: &mut Duration) {
        for (set, deadline) in
            [(self.approval_timeout, approval), (self.tool_timeout, tool), (self.interrupt_grace, interrupt_grace)]
        {
            if let Some(value) = set {
                *deadline = value;
            }
        }
    }
}

impl OpenSettings {
    /// Overrides a backend's idle limit with the one these settings set, if any.
    pub fn apply_idle_timeout(&self, idle: &mut Duration) {
        if let Some(value) = self.turn_idle_timeout {
            *idle = value;
        }
    }
}

impl std::fmt::Debug for OpenSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenSettings")
            .field("program", &self.program)
            .field("cwd", &self.cwd)
            .field("model", &self.model)
            .field("host_tools", &self.host_tools.len())
            .field("resume", &self.resume)
            .field("session_key", &self.session_key)
            .field("route_auth", &self.route_auth)
            .field("native_tools", &self.native_tools)
            .field("process_env", &self.process_env.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("mcp_servers", &self.mcp_servers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// The input of one turn.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnInput {
    /// The prompt text.
    pub text: String,
    /// Images attached to the prompt, already bounded ([`crate::input::images`]); only given to a
    /// backend whose [`Supports::images`] is true.
    pub images: Vec<ImageData>,
    /// The host's thinking level; a backend whose [`Supports::reasoning_level`] is false ignores it.
    pub think_level: Option<ThinkLevel>,
}

impl TurnInput {
    /// A text-only turn.
    pub fn text(text: impl Into<String>) -> Self {
        TurnInput { text: text.into(), ..TurnInput::default() }
    }
}

/// Told the native session id (thread, session) as soon as the backend knows it — a Codex thread
/// once `thread/start` answered, a Claude session once `system/init` named it — so the host's
/// session is bound to it even when the bridge dies before the turn ends.
pub type NativeIdListener = Arc<dyn Fn(&str) + Send + Sync>;

/// Why a backend could not do what was asked. The source is the backend's own typed error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The native process could not be started or refused the handshake (a version gate, say).
    #[error("could not start: {source}")]
    Start {
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
        /// Whether trying again could help (a refused version never does).
        retryable: bool,
    },
    /// The process runs but the conversation (thread, session) could not be started or resumed.
    #[error("could not start a conversation: {source}")]
    Conversation {
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A turn could not run at all (its events never started).
    #[error("the turn could not run: {source}")]
    Turn {
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Steering input into a running turn failed.
    #[error("could not steer the turn: {source}")]
    Steer {
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The host's native tool policy denies what this backend cannot take away; nothing started.
    #[error(transparent)]
    ToolPolicy(#[from] Unenforceable),
}

impl BackendError {
    /// Whether trying again could help.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, BackendError::Start { retryable: false, .. } | BackendError::ToolPolicy(_))
    }
}

/// One backend: implemented once per native runtime, held by a [`Registry`].
pub trait Backend: Send + Sync + 'static {
    /// What its harness is and supports.
    fn facts(&self) -> &HarnessFacts;

    /// The executable sessions run: `requested`, else the backend's own default (an environment
    /// variable, a name on `PATH`). Cheap: nothing is run.
    fn locate(&self, requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound>;

    /// Whether sessions of `program` can run here: its version through the backend's gate, read
    /// through `versions` (the one `--version` mechanism every gate shares).
    fn probe<'a>(&'a self, program: &'a Path, versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport>;

    /// The settings that, when changed, make an earlier native session unfit to continue.
    fn fingerprints(&self, settings: &OpenSettings) -> Fingerprints;

    /// Opens a native session: spawns (or reuses) the process, performs the handshake with its
    /// version gate, and starts or resumes the conversation (`settings.resume`).
    fn open(&self, settings: OpenSettings, hooks: SessionHooks) -> OpenFuture<'_>;

    /// Archives the native session `native_id` after the host deleted the session it served (Codex:
    /// `thread/archive`), opened like a session under `settings` (executable, working directory) but
    /// without a conversation. `Ok(false)`: the backend has nothing to archive (the default; Claude
    /// Code's sessions are files of its own, kept by its retention).
    fn archive<'a>(&'a self, settings: OpenSettings, native_id: &'a str) -> BoxFuture<'a, Result<bool, BackendError>> {
        let _ = (settings, native_id);
        Box::pin(async { Ok(false) })
    }

    /// Stops what the backend keeps between sessions (warm processes). The default keeps nothing.
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// The checks `clawbridge doctor` makes of this backend beyond the shared ones (handshake,
    /// auth, endpoint, sandbox). The default offers none, and the doctor says so.
    fn diagnostics(&self) -> Option<&dyn crate::diagnose::Diagnostics> {
        None
    }

    /// The backend's native work outside attempts (model catalog, compaction); the default offers
    /// none, and `serve` answers that the native side cannot.
    fn native_ops(&self) -> Option<&dyn crate::native_ops::NativeOps> {
        None
    }
}

/// One turn asked of a [`NativeSession`]: its input, where its events go, and what interrupts it.
pub struct TurnRequest<'a> {
    /// What the turn is about.
    pub input: &'a TurnInput,
    /// Every normalized event, as it happens.
    pub sink: EventSink<'a>,
    /// Cancelling it interrupts the turn natively.
    pub cancel: &'a CancellationToken,
}

impl std::fmt::Debug for TurnRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnRequest").field("input", self.input).finish_non_exhaustive()
    }
}

/// What [`Backend::open`] returns.
pub type OpenFuture<'a> = BoxFuture<'a, Result<Box<dyn NativeSession>, BackendError>>;

/// What [`NativeSession::run_turn`] returns.
pub type TurnFuture<'a> = BoxFuture<'a, Result<AttemptResult, BackendError>>;

/// A native session, opened by [`Backend::open`].
pub trait NativeSession: Send {
    /// Runs one turn, passing every normalized event to the request's sink as it happens and every
    /// tool terminal to the hooks' observer (once each, before the result). Cancelling the
    /// request's token interrupts the turn natively. Never hangs: a stalled turn ends as `timeout`,
    /// a dying process as `failed`.
    fn run_turn<'a>(&'a mut self, turn: TurnRequest<'a>) -> TurnFuture<'a>;

    /// A handle that adds input to a running turn, when the backend supports steering.
    fn steering(&self) -> Option<Arc<dyn Steering>> {
        None
    }

    /// The native session id (thread, session) to bind to the host's session, once known.
    fn native_id(&self) -> Option<String>;

    /// Why a requested resume did not happen and a fresh native session started instead.
    fn resume_failure(&self) -> Option<String>;

    /// Ends the session: stops its process, or hands it back to its backend to keep warm.
    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()>;
}

/// Adds input to a running turn (from outside [`NativeSession::run_turn`], which holds the session).
pub trait Steering: Send + Sync {
    /// Adds `text` to the running turn `turn_id` (from `Event::TurnStarted`); refused when that turn
    /// is no longer the active one.
    fn steer<'a>(&'a self, turn_id: &'a str, text: &'a str) -> BoxFuture<'a, Result<(), BackendError>>;
}

/// The backends a process offers, in a stable order.
#[derive(Clone, Default)]
pub struct Registry {
    /// Each backend once, harness ids unique.
    backends: Vec<Arc<dyn Backend>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.backends.iter().map(|b| b.facts().id)).finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds `backend`; a backend with the same harness id or backend name replaces the earlier one
    /// (so a test or a configuration can swap one in).
    #[must_use]
    pub fn with(mut self, backend: Arc<dyn Backend>) -> Self {
        let facts = backend.facts();
        let (id, name) = (facts.id, facts.backend);
        self.backends.retain(|b| b.facts().id != id && b.facts().backend != name);
        self.backends.push(backend);
        self
    }

    /// Every backend, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Backend>> {
        self.backends.iter()
    }

    /// The backend whose harness id is `id`.
    pub fn by_harness(&self, id: &str) -> Option<&Arc<dyn Backend>> {
        self.backends.iter().find(|b| b.facts().id == id)
    }

    /// The backend whose short name is `name` (`clawbridge run --backend`).
    pub fn by_name(&self, name: &str) -> Option<&Arc<dyn Backend>> {
        self.backends.iter().find(|b| b.facts().backend == name)
    }

    /// The backends' short names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.backends.iter().map(|b| b.facts().backend).collect()
    }

    /// Stops what every backend keeps between sessions.
    pub async fn shutdown(&self) {
        futures::future::join_all(self.backends.iter().map(|b| b.shutdown())).await;
    }
}

/// `name` itself when it has a directory part, else the first match on `PATH`; always absolute, since
/// sessions are spawned in another working directory than the one the name was found from.
pub fn find_program(name: &Path) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if name.components().count() > 1 || name.is_absolute() {
        executable(name).then(|| name.to_path_buf())
    } else {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| executable(p))
    }?;
    std::path::absolute(&found).ok()
}

/// A backend's executable as the operator configured it, and what named it (for the error when
/// it is not there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfiguredProgram {
    /// The path or name given.
    pub path: PathBuf,
    /// What gave it, as the user wrote it: a variable's name (`CLAWBRIDGE_CODEX_BIN`) or a config
    /// key and its place (`codex.bin (file:/home/u/.config/clawbridge/config.toml:3)`).
    pub named_by: String,
}

/// Resolves a backend's executable: `requested`, else the program named by the environment
/// variable `env_var`, else `default_name` on `PATH`.
pub fn locate_program(requested: Option<&Path>, env_var: &str, default_name: &str) -> Result<PathBuf, ProgramNotFound> {
    let from_env =
        std::env::var_os(env_var).map(|path| ConfiguredProgram { path: PathBuf::from(path), named_by: env_var.into() });
    locate_configured(requested, from_env.as_ref(), default_name)
}

/// Resolves a backend's executable: `requested`, else the `configured` one, else `default_name` on `PATH`.
pub fn locate_configured(
    requested: Option<&Path>,
    configured: Option<&ConfiguredProgram>,
    default_name: &str,
) -> Result<PathBuf, ProgramNotFound> {
    let (name, origin) = match (requested, configured) {
        (Some(path), _) => (path.to_path_buf(), Some(format!("{} is not an executable file", path.display()))),
        (None, Some(configured)) => {
            let why = format!("{}={} is not an executable file", configured.named_by, configured.path.display());
            (configured.path.clone(), Some(why))
        }
        (None, None) => (PathBuf::from(default_name), None),
    };
    match find_program(&name) {
        Some(program) => Ok(program),
        None => {
            let why = origin.unwrap_or_else(|| format!("{default_name} not found on PATH"));
            Err(ProgramNotFound { name, why })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_guidance_is_the_system_prompt_then_the_bootstrap_files() {
        let settings = |system: Option<&str>, bootstrap: Option<&str>| OpenSettings {
            system_prompt: system.map(str::to_owned),
            bootstrap_context: bootstrap.map(str::to_owned),
            ..OpenSettings::default()
        };
        assert_eq!(
            settings(Some("Be brief."), Some("# Project Context")).system_guidance().as_deref(),
            Some("Be brief.\n\n# Project Context")
        );
        assert_eq!(settings(None, Some("# Project Context")).system_guidance().as_deref(), Some("# Project Context"));
        assert_eq!(settings(Some("Be brief."), Some("")).system_guidance().as_deref(), Some("Be brief."));
        assert_eq!(settings(Some(""), None).system_guidance(), None);
    }

    struct Named(HarnessFacts);

    impl Backend for Named {
        fn facts(&self) -> &HarnessFacts {
            &self.0
        }
        fn locate(&self, _: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
            Ok(PathBuf::from("x"))
        }
        fn probe<'a>(&'a self, _: &'a Path, _: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
            Box::pin(async { ProbeReport::available(PathBuf::from("x"), None) })
        }
        fn fingerprints(&self, _: &OpenSettings) -> Fingerprints {
            Fingerprints::new("x", "", "")
        }
        fn open(
            &self,
            _: OpenSettings,
            _: SessionHooks,
        ) -> BoxFuture<'_, Result<Box<dyn NativeSession>, BackendError>> {
            Box::pin(async { Err(BackendError::Start { source: "never".into(), retryable: false }) })
        }
    }

    fn facts(id: &'static str, backend: &'static str) -> HarnessFacts {
        HarnessFacts {
            id,
            backend,
            label: id,
            process: backend,
            native_session: "session",
            transcript_api: backend,
            supports: Supports::default(),
            notice: None,
            fixed_approval: None,
        }
    }

    #[test]
    fn a_registered_backend_replaces_one_with_the_same_id_or_name_and_order_is_kept() {
        let registry = Registry::new()
            .with(Arc::new(Named(facts("h-a", "a"))))
            .with(Arc::new(Named(facts("h-b", "b"))))
            .with(Arc::new(Named(facts("h-a2", "a"))));
        assert_eq!(registry.names(), ["b", "a"]);
        assert_eq!(registry.by_name("a").map(|b| b.facts().id), Some("h-a2"));
        assert!(registry.by_harness("h-a").is_none());
        assert_eq!(registry.by_harness("h-b").map(|b| b.facts().backend), Some("b"));
    }

    #[test]
    fn a_program_named_relative_to_the_bridge_s_directory_is_found_as_an_absolute_path() {
        // A program in a folder below the current directory, named relatively (`./<dir>/agent`).
        let dir = tempfile::tempdir_in(".").unwrap();
        let name = dir.path().file_name().unwrap();
        let program = dir.path().join("agent");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            &program,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        let relative = Path::new(".").join(name).join("agent");
        let found = find_program(&relative).expect("found");
        assert!(found.is_absolute(), "{}", found.display());
        assert!(found.ends_with(Path::new(name).join("agent")));
    }

    #[test]
    fn a_missing_program_says_where_it_was_looked_for() {
        let missing = Path::new("/nonexistent/agent");
        let ProgramNotFound { why, .. } =
            locate_program(Some(missing), "CLAWBRIDGE_TEST_UNSET_VAR", "agent").unwrap_err();
        assert!(why.contains("/nonexistent/agent is not an executable file"), "{why}");
        let ProgramNotFound { name, why } =
            locate_program(None, "CLAWBRIDGE_TEST_UNSET_VAR", "no-such-agent-anywhere").unwrap_err();
        assert_eq!(name, PathBuf::from("no-such-agent-anywhere"));
        assert!(why.contains("no-such-agent-anywhere not found on PATH"), "{why}");
    }
}
