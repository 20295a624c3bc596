//! Warm Claude sessions kept between the turns of one host session, so the next turn pays no CLI
//! start-up: a [`SessionPool`] (the bridge's generic `WarmPool`, park-and-take) parks each session's [`WarmSession`] after its turn, under a cap on
//! live processes (the least recently used is stopped first) and an idle timeout (a background
//! reaper stops sessions nobody used for that long). A stopped session is not lost: its binding
//! still names the native session, and the next turn starts a process with `--resume`.
//!
//! Each turn brings its own host hooks (approver, host tools, observer: they name the attempt), but
//! a process's hooks are fixed when it starts; [`TurnHooks`] is the indirection that lets a warm
//! process serve the next turn's hooks. A parked session is only handed out again under the same
//! [`Fingerprints`] (cwd, model, system prompt, tool set, auth profile): the CLI took those at start.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, HostToolCall, HostToolOutput, HostToolSpec, HostTools,
    ToolTerminalObserver, ToolTerminalReport, ToolTerminalResolution,
};
use clawbridge_bridge::binding::{Binding, Fingerprints};
use clawbridge_bridge::pool::{PoolLimits, WarmPool};
use futures::future::BoxFuture;

use super::config::ClaudeConfig;
use super::session::{ClaudeError, ClaudeSession, SessionHooks};

/// Limits of a [`SessionPool`].
#[derive(Clone, Copy, Debug)]
pub struct PoolConfig {
    /// Most parked processes at once; parking one more stops the least recently used.
    pub max_warm: usize,
    /// A parked process unused for this long is stopped.
    pub idle_timeout: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self { max_warm: 8, idle_timeout: Duration::from_secs(600) }
    }
}

/// Host hooks whose target is swapped for every turn, so a warm process always asks the hooks of
/// the turn it is running.
pub struct TurnHooks {
    /// The current turn's hooks.
    current: Mutex<SessionHooks>,
}

impl std::fmt::Debug for TurnHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnHooks").finish_non_exhaustive()
    }
}
impl TurnHooks {
    /// Hooks that start out as `hooks`.
    pub fn new(hooks: SessionHooks) -> Arc<Self> {
        Arc::new(Self { current: Mutex::new(hooks) })
    }

    /// Points every later request at `hooks`.
    pub fn set(&self, hooks: SessionHooks) {
        *self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = hooks;
    }

    fn current(&self) -> SessionHooks {
        self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// These hooks as a session's hooks.
    pub fn as_session_hooks(self: &Arc<Self>) -> SessionHooks {
        SessionHooks { approver: self.clone(), tools: self.clone(), observer: self.clone() }
    }
}

impl Approver for TurnHooks {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        self.current().approver.decide(request)
    }
}

impl HostTools for TurnHooks {
    fn specs(&self) -> Vec<HostToolSpec> {
        self.current().tools.specs()
    }

    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
        self.current().tools.call(call)
    }
}

impl ToolTerminalObserver for TurnHooks {
    fn observe(&self, report: ToolTerminalReport) -> BoxFuture<'static, ToolTerminalResolution> {
        self.current().observer.observe(report)
    }
}

/// A session that can be parked in a [`SessionPool`] between turns.
pub struct WarmSession {
    /// The session.
    session: ClaudeSession,
    /// Its swappable hooks.
    hooks: Arc<TurnHooks>,
    /// The settings its process was started with.
    fingerprints: Fingerprints,
}

impl std::fmt::Debug for WarmSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WarmSession").finish_non_exhaustive()
    }
}
impl WarmSession {
    /// Connects a session (see [`ClaudeSession::connect`]) started under `fingerprints`.
    pub async fn connect(
        config: ClaudeConfig,
        hooks: SessionHooks,
        fingerprints: Fingerprints,
    ) -> Result<WarmSession, ClaudeError> {
        let hooks = TurnHooks::new(hooks);
        let session = ClaudeSession::connect(config, hooks.as_session_hooks()).await?;
        Ok(WarmSession { session, hooks, fingerprints })
    }

    /// Who answers the agent's questions from the next request on.
    pub fn answer_user_input_with(&self, asker: Arc<dyn clawbridge_bridge::attempt::hooks::UserInputAsker>) {
        self.session.answer_user_input_with(asker);
    }

    /// Gives the next turn's requests to `hooks`.
    pub fn set_hooks(&self, hooks: SessionHooks) {
        self.hooks.set(hooks);
    }

    /// The session, to run a turn on.
    pub fn session(&mut self) -> &mut ClaudeSession {
        &mut self.session
    }

    /// The session, to read its state.
    pub fn session_ref(&self) -> &ClaudeSession {
        &self.session
    }

    /// The settings its process was started with.
    pub fn fingerprints(&self) -> &Fingerprints {
        &self.fingerprints
    }

    /// Stops its process.
    pub async fn shutdown(self) {
        self.session.shutdown().await;
    }
}

impl clawbridge_bridge::pool::PoolItem for WarmSession {
    fn retire(self) -> BoxFuture<'static, ()> {
        Box::pin(self.shutdown())
    }
}

/// Warm sessions by host session key (see the module docs), on the bridge's generic pool.
pub struct SessionPool {
    /// The parked sessions under the cap and idle timeout.
    parked: Arc<WarmPool<String, WarmSession>>,
}

impl std::fmt::Debug for SessionPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionPool").finish_non_exhaustive()
    }
}
impl SessionPool {
    /// An empty pool, with a background reaper that stops idle sessions (it ends with the pool). Call
    /// it inside a tokio runtime.
    pub fn new(config: PoolConfig) -> Arc<SessionPool> {
        let limits = PoolLimits { max_items: config.max_warm, idle_timeout: config.idle_timeout, max_uses: None };
        Arc::new(SessionPool { parked: WarmPool::new(limits) })
    }

    /// The warm session of `key`, if one is parked and was started under `current`; one started
    /// under other settings is stopped (the caller starts a new one, resuming the native session).
    pub fn take(&self, key: &str, current: &Fingerprints) -> Option<WarmSession> {
        let warm = self.parked.take(&key.to_owned())?;
        match Binding::new("", warm.fingerprints()).check(current) {
            Ok(()) => Some(warm),
            Err(reason) => {
                tracing::info!(session = key, %reason, "stopping a warm claude process started under other settings");
                stop_in_background(warm);
                None
            }
        }
    }

    /// Parks `warm` for `key`'s next turn. Past the cap, the least recently used session is stopped.
    pub fn park(&self, key: &str, warm: WarmSession) {
        self.parked.put(key.to_owned(), warm);
    }

    /// Stops every session parked for longer than the idle timeout; how many.
    pub fn evict_idle(&self) -> usize {
        self.parked.evict_idle()
    }

    /// Forgets `key`'s warm session (the host reset the session), stopping its process.
    pub fn discard(&self, key: &str) -> bool {
        self.parked.remove(&key.to_owned())
    }

    /// How many sessions are parked.
    pub fn warm_count(&self) -> usize {
        self.parked.len()
    }

    /// Stops every parked session and waits until they are all stopped.
    pub async fn shutdown(&self) {
        self.parked.shutdown().await;
    }
}

/// Stops a session's process without making the caller wait for the staged stop.
fn stop_in_background(warm: WarmSession) {
    tokio::spawn(warm.shutdown());
}
