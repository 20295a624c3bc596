//! Warm Claude sessions kept between the turns of one host session, so the next turn pays no CLI
//! start-up: a [`SessionPool`] parks each session's [`WarmSession`] after its turn, under a cap on
//! live processes (the least recently used is stopped first) and an idle timeout (a background
//! reaper stops sessions nobody used for that long). A stopped session is not lost: its binding
//! still names the native session, and the next turn starts a process with `--resume`.
//!
//! Each turn brings its own host hooks (approver, host tools, observer: they name the attempt), but
//! a process's hooks are fixed when it starts; [`TurnHooks`] is the indirection that lets a warm
//! process serve the next turn's hooks. A parked session is only handed out again under the same
//! [`Fingerprints`] (cwd, model, system prompt, tool set, auth profile): the CLI took those at start.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, HostToolCall, HostToolOutput, HostToolSpec, HostTools,
    ToolTerminalObserver, ToolTerminalReport, ToolTerminalResolution,
};
use clawbridge_bridge::binding::{Binding, Fingerprints};
use futures::future::BoxFuture;
use tokio::time::Instant;

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

/// A parked session and when it was parked.
struct Parked {
    /// The session.
    warm: WarmSession,
    /// When it was last used (parked).
    since: Instant,
}

/// Warm sessions by host session key (see the module docs).
pub struct SessionPool {
    /// The limits.
    config: PoolConfig,
    /// Parked sessions by key. Never held across an await.
    parked: Mutex<HashMap<String, Parked>>,
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
        let pool = Arc::new(SessionPool { config, parked: Mutex::default() });
        let weak: Weak<SessionPool> = Arc::downgrade(&pool);
        let every = (config.idle_timeout / 4).max(Duration::from_millis(50));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match weak.upgrade() {
                    Some(pool) => {
                        pool.evict_idle();
                    }
                    None => return,
                }
            }
        });
        pool
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The warm session of `key`, if one is parked and was started under `current`; one started
    /// under other settings is stopped (the caller starts a new one, resuming the native session).
    pub fn take(&self, key: &str, current: &Fingerprints) -> Option<WarmSession> {
        let parked = self.parked().remove(key)?;
        match Binding::new("", parked.warm.fingerprints()).check(current) {
            Ok(()) => Some(parked.warm),
            Err(reason) => {
                tracing::info!(session = key, %reason, "stopping a warm claude process started under other settings");
                stop_in_background(parked.warm);
                None
            }
        }
    }

    /// Parks `warm` for `key`'s next turn. Past the cap, the least recently used session is stopped.
    pub fn park(&self, key: &str, warm: WarmSession) {
        let evicted = {
            let mut parked = self.parked();
            let replaced = parked.insert(key.to_owned(), Parked { warm, since: Instant::now() });
            let mut evicted: Vec<WarmSession> = replaced.map(|p| p.warm).into_iter().collect();
            while parked.len() > self.config.max_warm {
                let Some(oldest) = parked.iter().min_by_key(|(_, p)| p.since).map(|(k, _)| k.clone()) else { break };
                if let Some(p) = parked.remove(&oldest) {
                    tracing::debug!(session = %oldest, "stopping the least recently used warm claude process");
                    evicted.push(p.warm);
                }
            }
            evicted
        };
        evicted.into_iter().for_each(stop_in_background);
    }

    /// Stops every session parked for longer than the idle timeout; how many.
    pub fn evict_idle(&self) -> usize {
        let idle = self.config.idle_timeout;
        let stale: Vec<WarmSession> = {
            let mut parked = self.parked();
            let keys: Vec<String> =
                parked.iter().filter(|(_, p)| p.since.elapsed() >= idle).map(|(k, _)| k.clone()).collect();
            keys.iter().filter_map(|k| parked.remove(k)).map(|p| p.warm).collect()
        };
        let count = stale.len();
        stale.into_iter().for_each(stop_in_background);
        count
    }

    /// Forgets `key`'s warm session (the host reset the session), stopping its process.
    pub fn discard(&self, key: &str) -> bool {
        let removed = self.parked().remove(key);
        let found = removed.is_some();
        if let Some(parked) = removed {
            stop_in_background(parked.warm);
        }
        found
    }

    /// How many sessions are parked.
    pub fn warm_count(&self) -> usize {
        self.parked().len()
    }

    /// Stops every parked session and waits until they are all stopped.
    pub async fn shutdown(&self) {
        let all: Vec<WarmSession> = self.parked().drain().map(|(_, p)| p.warm).collect();
        futures::future::join_all(all.into_iter().map(WarmSession::shutdown)).await;
    }
}

/// Stops a session's process without making the caller wait for the staged stop.
fn stop_in_background(warm: WarmSession) {
    tokio::spawn(warm.shutdown());
}
