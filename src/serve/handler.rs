//! The host's requests and the connection's state: the handshake, the running attempts (by id and
//! by session), the sessions' native thread bindings, and shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use clawbridge_bridge::rpc::{HandlerError, RequestHandler, RpcPeer};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_protocol::host::errors;
use clawbridge_protocol::host::{
    AttemptCancelParams, AttemptCancelResponse, AttemptRunParams, AttemptSteerParams, AttemptSteerResponse,
    BridgeCapabilities, CancelStatus, HarnessListParams, HarnessListResponse, HostCapabilities, InitializeParams,
    InitializeResponse, Isolation, PeerInfo, ResetAction, ResetReason, SessionContextResetParams,
    SessionContextResetResponse, SessionDeleteParams, SessionDeleteResponse, SessionResetParams, SessionResetResponse,
    ShutdownParams, ShutdownResponse, SteerStatus, SupportsParams, VersionRange, methods, negotiate,
};
use clawbridge_protocol::jsonrpc::{ErrorObject, Request, codes};
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::{Notify, oneshot, watch};
use tokio_util::sync::CancellationToken;

mod native;

use super::attempt::{self, AttemptJob};
use super::bindings::Bindings;
use super::harness::Catalog;
use super::projection::FreshReason;
use super::steer::SteerSlot;

/// The most attempts that run at once on the connection.
pub const MAX_CONCURRENT_ATTEMPTS: u32 = 64;
/// The most session changes (`session/reset`, `session/delete`, `session/contextReset`) that may
/// wait for one running attempt; past it they are refused with `sessionBusy`.
pub const MAX_DEFERRED_CHANGES: usize = 32;

/// A running attempt.
struct Running {
    /// Its session.
    session_id: String,
    /// Interrupts its turn.
    cancel: CancellationToken,
    /// Where `attempt/steer` finds its running turn.
    steer: Arc<SteerSlot>,
    /// What it is charged against the input budget ([`AttemptRunParams::input_bytes`]), given back
    /// when it ends.
    input_bytes: usize,
}

/// Connection state, behind one lock (never held across an await).
#[derive(Default)]
struct State {
    /// The host's capabilities once `initialize` succeeded.
    initialized: Option<HostCapabilities>,
    /// Set by `shutdown` or the host leaving: no new attempts.
    shutting_down: bool,
    /// Running attempts by attempt id.
    attempts: HashMap<String, Running>,
    /// The sum of the running attempts' `input_bytes`, kept within `Server::input_budget`.
    input_bytes_in_use: usize,
    /// Binding changes (`session/reset`, `session/delete`, `session/contextReset`) that arrived
    /// while an attempt ran on their session, by that attempt's id: applied, in arrival order, when
    /// it leaves the registry (after it stored its binding), then answered.
    deferred: HashMap<String, Vec<Deferred>>,
}

/// What a session-lifecycle request does to the bindings.
#[derive(Clone, Debug)]
enum BindingChange {
    /// `session/reset`: drop the binding, or keep it for `compaction`.
    Reset { session: String, reason: ResetReason },
    /// `session/delete`: forget the binding.
    Delete { session: String },
    /// `session/contextReset`: drop the bindings of the session and its recorded predecessor.
    ContextReset { sessions: Vec<String> },
}

impl BindingChange {
    fn sessions(&self) -> &[String] {
        match self {
            BindingChange::Reset { session, .. } | BindingChange::Delete { session } => std::slice::from_ref(session),
            BindingChange::ContextReset { sessions } => sessions,
        }
    }
}

/// A binding change waiting for a running attempt to end, and where its answer goes.
struct Deferred {
    change: BindingChange,
    answer: oneshot::Sender<Applied>,
}

/// A binding change applied: its answer, and the binding a deletion forgot (to archive its native
/// session before answering).
struct Applied {
    response: Result<Value, HandlerError>,
    archive: Option<clawbridge_bridge::binding::Binding>,
    /// A `session/delete`'s answer, completed with `archived` once the archive was tried.
    deletion: Option<SessionDeleteResponse>,
}

/// The server: answers the host's requests.
pub struct Server {
    catalog: Catalog,
    registry: Option<PidRegistry>,
    /// The host connection, set right after it starts.
    peer: watch::Receiver<Option<RpcPeer>>,
    /// Native thread bindings by session id, persisted so a later bridge process resumes them.
    bindings: Bindings,
    state: Mutex<State>,
    /// Woken whenever an attempt ends.
    attempt_ended: Notify,
    /// Set once `shutdown` has been answered.
    shutdown_done: watch::Sender<bool>,
    /// The bytes the running attempts' inputs may hold together; past it `attempt/run` is refused
    /// with `inputBudgetExceeded`.
    input_budget: usize,
    /// The operator's turn idle timeout (`agents.turn-idle-timeout-ms`); `None`: each backend's own.
    turn_idle_timeout: Option<std::time::Duration>,
}

impl Server {
    /// A server over `catalog`; `peer` delivers the host connection once it exists; `bindings`
    /// keeps the sessions' native threads.
    pub fn new(
        catalog: Catalog,
        registry: Option<PidRegistry>,
        peer: watch::Receiver<Option<RpcPeer>>,
        bindings: Bindings,
        input_budget: usize,
    ) -> Self {
        Self {
            input_budget,
            catalog,
            registry,
            peer,
            bindings,
            state: Mutex::new(State::default()),
            attempt_ended: Notify::new(),
            shutdown_done: watch::channel(false).0,
            turn_idle_timeout: None,
        }
    }

    /// The server ending turns that make no progress for `timeout` (`None`: each backend's own).
    #[must_use]
    pub fn with_turn_idle_timeout(mut self, timeout: Option<std::time::Duration>) -> Self {
        self.turn_idle_timeout = timeout;
        self
    }

    /// Becomes true once `shutdown` finished its work.
    pub fn shutdown_watch(&self) -> watch::Receiver<bool> {
        self.shutdown_done.subscribe()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn peer(&self) -> Option<RpcPeer> {
        let mut peer = self.peer.clone();
        peer.wait_for(Option::is_some).await.ok().and_then(|p| p.clone())
    }

    /// Refuses new attempts, cancels the running ones and waits (at most `timeout`) until each has
    /// ended and stopped its native process. Returns how many were running.
    pub async fn stop_all(&self, timeout: Duration) -> u32 {
        let count = self.begin_stop();
        self.drain(timeout).await;
        count
    }

    /// Refuses new attempts and cancels the running ones; how many were running.
    fn begin_stop(&self) -> u32 {
        let mut state = self.lock();
        state.shutting_down = true;
        for running in state.attempts.values() {
            running.cancel.cancel();
        }
        u32::try_from(state.attempts.len()).unwrap_or(u32::MAX)
    }

    /// Waits (at most `timeout`) until every attempt has ended.
    async fn drain(&self, timeout: Duration) {
        let drained = async {
            loop {
                let ended = self.attempt_ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if self.lock().attempts.is_empty() {
                    return;
                }
                ended.await;
            }
        };
        if tokio::time::timeout(timeout, drained).await.is_err() {
            tracing::warn!("some attempts did not end within {timeout:?}");
        }
    }

    fn capabilities(&self) -> Result<HostCapabilities, HandlerError> {
        self.lock().initialized.ok_or_else(|| {
            reply(errors::NOT_INITIALIZED, "the connection is not initialized: send `initialize` first".into())
        })
    }

    /// Takes one request in arrival order (the peer calls this on its reader, one request after
    /// the other): everything that decides its effect — the handshake, a cancel, a reset, an
    /// attempt's admission — happens here, so requests of one connection take effect in the order
    /// they were written (a `cancel` never overtakes its `run`, nothing overtakes `initialize`).
    /// Only the long work (an admitted attempt's run, shutdown's drain) is left to the returned
    /// future, which runs concurrently with later requests.
    fn admit(self: &Arc<Self>, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        match self.decide(request) {
            Ok(Admitted::Answer(value)) => Box::pin(std::future::ready(Ok(value))),
            Ok(Admitted::Later(work)) => work,
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }

    fn decide(self: &Arc<Self>, request: Request) -> Result<Admitted, HandlerError> {
        let Request { method, params, .. } = request;
        let known = [
            methods::INITIALIZE,
            methods::HARNESS_LIST,
            methods::HARNESS_SUPPORTS,
            methods::ATTEMPT_RUN,
            methods::ATTEMPT_CANCEL,
            methods::ATTEMPT_STEER,
            methods::SESSION_RESET,
            methods::SESSION_DELETE,
            methods::SESSION_CONTEXT_RESET,
            methods::CATALOG_MODELS,
            methods::SESSION_COMPACT,
            methods::CATALOG_MCP_TOOLS,
            methods::SHUTDOWN,
        ];
        if !known.contains(&method.as_str()) {
            return Err(reply(codes::METHOD_NOT_FOUND, format!("unknown method `{method}`")));
        }
        // Before the connection's state is looked at, so params by position are `-32602` for
        // every method, before `initialize` as after it.
        by_name(params.as_deref())?;
        if method == methods::INITIALIZE {
            return self.initialize(decode(params)?).map(Admitted::Answer);
        }
        let caps = self.capabilities()?;
        let answer = match method.as_str() {
            methods::HARNESS_LIST => {
                let _: HarnessListParams = decode(params)?;
                encode(HarnessListResponse { harnesses: self.catalog.infos() })
            }
            methods::HARNESS_SUPPORTS => {
                let params: SupportsParams = decode(params)?;
                encode(self.catalog.supports(&params))
            }
            methods::ATTEMPT_RUN => return self.admit_attempt(caps, decode(params)?).map(Admitted::Later),
            methods::ATTEMPT_CANCEL => {
                let params: AttemptCancelParams = decode(params)?;
                let status = match self.lock().attempts.get(&params.attempt_id) {
                    Some(running) => {
                        tracing::info!(attempt = %params.attempt_id, reason = ?params.reason, "cancelling");
                        running.cancel.cancel();
                        CancelStatus::Cancelling
                    }
                    None => CancelStatus::NotRunning,
                };
                encode(AttemptCancelResponse { status })
            }
            methods::ATTEMPT_STEER => {
                let params: AttemptSteerParams = decode(params)?;
                let slot = self.lock().attempts.get(&params.attempt_id).map(|running| running.steer.clone());
                let Some(slot) = slot else {
                    return encode(AttemptSteerResponse { status: SteerStatus::NotRunning, message: None })
                        .map(Admitted::Answer);
                };
                // Claimed here, on the reader, so a burst of steers holds one text, not one each.
                let Some(claim) = slot.claim() else {
                    return encode(super::steer::busy()).map(Admitted::Answer);
                };
                return Ok(Admitted::Later(Box::pin(async move { encode(claim.steer(&params.text).await) })));
            }
            methods::SESSION_RESET => {
                let params: SessionResetParams = decode(params)?;
                let Some(session) = params.session_id.or(params.session_key) else {
                    return Err(reply(codes::INVALID_PARAMS, "session/reset needs a sessionId or sessionKey".into()));
                };
                let reason = params.reason.unwrap_or(ResetReason::Unknown);
                return self.change_bindings(BindingChange::Reset { session, reason });
            }
            methods::SESSION_DELETE => {
                let params: SessionDeleteParams = decode(params)?;
                if params.session_id.is_empty() {
                    return Err(reply(codes::INVALID_PARAMS, "session/delete needs a sessionId".into()));
                }
                return self.change_bindings(BindingChange::Delete { session: params.session_id });
            }
            methods::SESSION_CONTEXT_RESET => {
                let params: SessionContextResetParams = decode(params)?;
                if params.session_id.is_empty() {
                    return Err(reply(codes::INVALID_PARAMS, "session/contextReset needs a sessionId".into()));
                }
                let mut sessions = vec![params.session_id];
                sessions.extend(params.previous_session_id.filter(|p| !p.is_empty() && *p != sessions[0]));
                return self.change_bindings(BindingChange::ContextReset { sessions });
            }
            methods::CATALOG_MODELS => return self.catalog_models(decode(params)?).map(Admitted::Later),
            methods::SESSION_COMPACT => return self.compact_session(decode(params)?).map(Admitted::Later),
            methods::CATALOG_MCP_TOOLS => return self.catalog_mcp_tools(decode(params)?).map(Admitted::Later),
            methods::SHUTDOWN => {
                let params: ShutdownParams = decode(params)?;
                tracing::info!(reason = ?params.reason, "shutdown requested");
                // Refused and cancelled now, in order; the drain runs beside later requests.
                let cancelled_attempts = self.begin_stop();
                let server = self.clone();
                return Ok(Admitted::Later(Box::pin(async move {
                    server.drain(super::DRAIN_TIMEOUT).await;
                    // Each attempt's answer is queued just after its handler ends; let those go out
                    // before this one, so the host sees every `attempt/run` result first.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    server.shutdown_done.send_replace(true);
                    encode(ShutdownResponse { cancelled_attempts })
                })));
            }
            _ => Err(reply(codes::METHOD_NOT_FOUND, format!("unknown method `{method}`"))),
        };
        answer.map(Admitted::Answer)
    }

    /// Applies a binding change now, under the state lock (so no attempt on its sessions can start
    /// and bind in between), or, when an attempt runs on one of its sessions, registers it to be
    /// applied the moment that attempt ends (its binding stored): a reset is never lost and never
    /// races the attempt's own binding, and the answer says which attempt it waited for. A
    /// deletion then archives the native session it forgot (`Server::finish`).
    fn change_bindings(self: &Arc<Self>, change: BindingChange) -> Result<Admitted, HandlerError> {
        let mut state = self.lock();
        let running =
            state.attempts.iter().find(|(_, r)| change.sessions().contains(&r.session_id)).map(|(id, _)| id.clone());
        let server = self.clone();
        let Some(attempt_id) = running else {
            let applied = self.apply_change(&change, None);
            drop(state);
            if applied.archive.is_none() {
                return applied.response.map(Admitted::Answer);
            }
            return Ok(Admitted::Later(Box::pin(async move { server.finish(applied).await })));
        };
        let waiting = state.deferred.entry(attempt_id.clone()).or_default();
        if waiting.len() >= MAX_DEFERRED_CHANGES {
            return Err(reply(
                errors::SESSION_BUSY,
                format!(
                    "{MAX_DEFERRED_CHANGES} session changes already wait for attempt {attempt_id}; retry when it ends"
                ),
            ));
        }
        tracing::info!(attempt = %attempt_id, ?change, "a session change waits for the running attempt");
        let (answer, answered) = oneshot::channel();
        waiting.push(Deferred { change, answer });
        drop(state);
        Ok(Admitted::Later(Box::pin(async move {
            match answered.await {
                Ok(applied) => server.finish(applied).await,
                Err(_) => Err(HandlerError::Failed("the session change was dropped before its attempt ended".into())),
            }
        })))
    }

    /// Applies `change` to the bindings (the caller holds the state lock); `after` names the attempt
    /// it waited for.
    fn apply_change(&self, change: &BindingChange, after: Option<&str>) -> Applied {
        let after_attempt = after.map(str::to_owned);
        match change {
            BindingChange::Reset { session, reason } if *reason == ResetReason::Deleted => {
                // The host deleted the session: as `session/delete`, answered as a reset.
                let archive = self.bindings.take(session);
                let action = if archive.is_some() { ResetAction::Dropped } else { ResetAction::Unbound };
                tracing::info!(session = %session, ?reason, ?action, after = ?after_attempt, "session reset");
                let response = encode(SessionResetResponse { dropped: archive.is_some(), action, after_attempt });
                Applied { response, archive, deletion: None }
            }
            BindingChange::Reset { session, reason } => {
                let action = if reason.keeps_native_session() {
                    if self.bindings.contains(session) { ResetAction::Kept } else { ResetAction::Unbound }
                } else if self.bindings.reset(session) {
                    ResetAction::Dropped
                } else {
                    ResetAction::Unbound
                };
                tracing::info!(session = %session, ?reason, ?action, after = ?after_attempt, "session reset");
                let response =
                    encode(SessionResetResponse { dropped: action == ResetAction::Dropped, action, after_attempt });
                Applied { response, archive: None, deletion: None }
            }
            BindingChange::Delete { session } => {
                let archive = self.bindings.take(session);
                let forgotten = archive.is_some();
                tracing::info!(session = %session, forgotten, after = ?after_attempt, "session deleted: binding forgotten");
                let deletion = SessionDeleteResponse { forgotten, archived: false, after_attempt };
                Applied { response: encode(&deletion), archive, deletion: Some(deletion) }
            }
            BindingChange::ContextReset { sessions } => {
                let invalidated: Vec<String> = sessions.iter().filter(|s| self.bindings.reset(s)).cloned().collect();
                tracing::info!(
                    ?sessions, ?invalidated, after = ?after_attempt,
                    "the session's history was cut: its native thread is not resumed"
                );
                Applied {
                    response: encode(SessionContextResetResponse { invalidated, after_attempt }),
                    archive: None,
                    deletion: None,
                }
            }
        }
    }

    /// Completes an applied change: archives the native session a deletion forgot (never
    /// failing the answer: the binding is gone either way, and the log says why it was not
    /// archived), then answers.
    async fn finish(self: Arc<Self>, applied: Applied) -> Result<Value, HandlerError> {
        let Some(binding) = applied.archive else { return applied.response };
        let archived = match self.catalog.get(&binding.backend) {
            Some(harness) if harness.info.available => {
                let settings = clawbridge_bridge::backend::OpenSettings {
                    program: harness.program.clone(),
                    cwd: Some(std::path::PathBuf::from(&binding.cwd)).filter(|_| !binding.cwd.is_empty()),
                    registry: self.registry.clone(),
                    ..Default::default()
                };
                match harness.backend.archive(settings, &binding.native_session_id).await {
                    Ok(archived) => archived,
                    Err(error) => {
                        tracing::warn!(%error, native = %binding.native_session_id, "could not archive the deleted session's native thread");
                        false
                    }
                }
            }
            _ => false,
        };
        tracing::info!(native = %binding.native_session_id, archived, "the deleted session's native thread");
        match applied.deletion {
            Some(deletion) => encode(SessionDeleteResponse { archived, ..deletion }),
            None => applied.response,
        }
    }

    fn initialize(&self, params: InitializeParams) -> Result<Value, HandlerError> {
        let bridge_version = env!("CARGO_PKG_VERSION");
        let mut state = self.lock();
        if state.initialized.is_some() {
            return Err(reply(errors::ALREADY_INITIALIZED, "the connection is already initialized".into()));
        }
        let version = negotiate(params.protocol_version, bridge_version).map_err(HandlerError::Reply)?;
        state.initialized = Some(params.capabilities);
        drop(state);
        tracing::info!(host = %params.host.name, host_version = %params.host.version, version, "host connected");
        encode(InitializeResponse {
            protocol_version: version,
            supported_protocol_versions: VersionRange::SUPPORTED,
            bridge: PeerInfo { name: "clawbridge".into(), version: bridge_version.into() },
            harnesses: self.catalog.infos(),
            backends: self.catalog.backends.clone(),
            capabilities: BridgeCapabilities {
                max_concurrent_attempts: Some(MAX_CONCURRENT_ATTEMPTS),
                streaming_deltas: true,
            },
            log_file: crate::shell::log_file().map(|path| path.display().to_string()),
        })
    }

    /// Admits an attempt (validated and registered now, so a cancel written after it finds it) and
    /// returns its run.
    fn admit_attempt(
        self: &Arc<Self>,
        caps: HostCapabilities,
        params: AttemptRunParams,
    ) -> Result<BoxFuture<'static, Result<Value, HandlerError>>, HandlerError> {
        let Some(harness) = self.catalog.get(&params.harness_id).cloned() else {
            return Err(reply(errors::UNKNOWN_HARNESS, format!("no harness named {}", params.harness_id)));
        };
        if !harness.info.available {
            let why = harness.info.unavailable_reason.clone().unwrap_or_else(|| "its backend is unavailable".into());
            return Err(reply(errors::HARNESS_UNAVAILABLE, format!("{} is unavailable: {why}", harness.info.id)));
        }
        if params.attempt_id.is_empty() || params.session_id.is_empty() {
            return Err(reply(codes::INVALID_PARAMS, "attempt/run needs an attemptId and a sessionId".into()));
        }
        // A schema a backend could not read as a tree would reach it as `null`: refused instead.
        for tool in &params.host_tools {
            if let Err(error) = tool.check_schema() {
                let message =
                    format!("invalid params: host tool `{}` has an unreadable inputSchema: {error}", tool.name);
                return Err(reply(codes::INVALID_PARAMS, message));
            }
        }
        // A verified continuation names the exact implementation that must run it: any other is
        // refused before a native session is opened (OpenClaw's `expectedRuntimeArtifact`).
        if let Some(expected) = &params.expected_runtime_artifact {
            if harness.info.runtime_artifact.as_ref() != Some(expected) {
                let message = format!(
                    "{} runs {}, not the runtime artifact {} this continuation expects",
                    harness.info.id,
                    harness.info.runtime_artifact.as_ref().map_or("no known artifact", |a| a.id.as_str()),
                    expected.id
                );
                let data = serde_json::json!({"userMessage": format!(
                    "The agent runtime changed since this session was verified ({message}); start a new session."
                )});
                return Err(HandlerError::Reply(ErrorObject::with_data(errors::PREFLIGHT_FAILED, message, &data)));
            }
        }
        if let Some(Err(error)) = params.history.as_ref().map(super::projection::check_cap) {
            return Err(reply(codes::INVALID_PARAMS, format!("invalid params: {error}")));
        }
        let workdir = attempt::working_dir(&params).map_err(HandlerError::Reply)?;
        let cancel = CancellationToken::new();
        let steer = Arc::new(SteerSlot::default());
        let input_bytes = params.input_bytes();
        {
            let mut state = self.lock();
            if state.shutting_down {
                return Err(reply(errors::SHUTTING_DOWN, "the bridge is shutting down".into()));
            }
            if state.attempts.contains_key(&params.attempt_id) {
                return Err(reply(
                    errors::ATTEMPT_ALREADY_RUNNING,
                    format!("attempt {} is already running", params.attempt_id),
                ));
            }
            if let Some((id, _)) = state.attempts.iter().find(|(_, r)| r.session_id == params.session_id) {
                return Err(reply(
                    errors::SESSION_BUSY,
                    format!("session {} already runs attempt {id}", params.session_id),
                ));
            }
            if state.attempts.len() as u32 >= MAX_CONCURRENT_ATTEMPTS {
                return Err(reply(
                    errors::BRIDGE_BUSY,
                    format!("{MAX_CONCURRENT_ATTEMPTS} attempts are already running"),
                ));
            }
            let in_use = state.input_bytes_in_use;
            if in_use.saturating_add(input_bytes) > self.input_budget {
                let limit = self.input_budget;
                return Err(HandlerError::Reply(ErrorObject::with_data(
                    errors::INPUT_BUDGET_EXCEEDED,
                    format!(
                        "the attempt's {input_bytes} bytes of input would take the running attempts' {in_use} bytes \
                         over the bridge's input budget of {limit} bytes; retry when an attempt ends"
                    ),
                    &serde_json::json!({"bytes": input_bytes, "inUse": in_use, "limit": limit}),
                )));
            }
            state.input_bytes_in_use = in_use + input_bytes;
            state.attempts.insert(
                params.attempt_id.clone(),
                Running {
                    session_id: params.session_id.clone(),
                    cancel: cancel.clone(),
                    steer: steer.clone(),
                    input_bytes,
                },
            );
        }
        // Whatever happens below, the attempt leaves the registry.
        let guard = Deregister { server: self.clone(), attempt_id: params.attempt_id.clone() };
        Ok(Box::pin(self.clone().run_attempt(caps, params, harness, workdir, (cancel, steer), guard)))
    }

    /// Runs an admitted attempt to its result and binds its native session.
    async fn run_attempt(
        self: Arc<Self>,
        caps: HostCapabilities,
        params: AttemptRunParams,
        harness: super::harness::Harness,
        workdir: std::path::PathBuf,
        (cancel, steer): (CancellationToken, Arc<SteerSlot>),
        _guard: Deregister,
    ) -> Result<Value, HandlerError> {
        let Some(peer) = self.peer().await else {
            return Err(reply(codes::INTERNAL_ERROR, "the host connection is gone".into()));
        };
        let mut settings = attempt::open_settings(&peer, caps, &params, &harness, workdir, self.registry.clone());
        settings.turn_idle_timeout = self.turn_idle_timeout;
        let mut fingerprints = harness.backend.fingerprints(&settings);
        // A `thread_bootstrap` context epoch: the thread made in one epoch is not continued in
        // another, which starts a fresh thread and gets the context again (below).
        if let Some(epoch) = params.context.as_ref().and_then(|context| context.epoch.as_deref()) {
            fingerprints = fingerprints.with("contextEpoch", epoch);
        }
        // A detached run leaves the session's durable state alone: continuing its native thread
        // would write to it, and binding the run's own thread would change which one it continues.
        let durable = !params.is_detached();
        if !durable {
            // Nor may it take or replace what a backend keeps for the session between attempts
            // (Claude's warm CLI): it runs under a key of its own.
            settings.session_key = format!("{}#detached:{}", settings.session_key, params.attempt_id);
        }
        // Resumed only while the binding fits the settings and the transcript is where the native
        // thread left it; otherwise a new native session is seeded with the history (projection.rs).
        // A detached run or side work is never seeded: it leaves the session's history to the session.
        let mut fresh = durable.then_some(FreshReason::Unbound);
        if durable && harness.backend.facts().supports.resume {
            match self.bindings.lookup(&params.session_id, &fingerprints) {
                Ok(bound) => {
                    let moved = bound
                        .transcript_position
                        .as_deref()
                        .zip(params.history.as_ref())
                        .and_then(|(position, history)| super::projection::moved(history, position));
                    match moved {
                        None => {
                            settings.resume = Some(bound.native_session_id);
                            fresh = None;
                        }
                        Some(moved) => {
                            tracing::info!(session = %params.session_id, reason = %moved, "not resuming the session's native thread; re-projecting the transcript");
                            fresh = Some(moved.into());
                        }
                    }
                }
                Err(reason) => fresh = Some(reason),
            }
        }
        // A side question sees the conversation through an ephemeral copy of the bound thread.
        if params.isolation == Some(Isolation::Fork) && harness.backend.facts().supports.ephemeral {
            let cwd = settings.cwd.as_ref().map(|cwd| cwd.display().to_string()).unwrap_or_default();
            settings.resume = self.bindings.thread_to_fork(&params.session_id, &fingerprints.backend, &cwd);
        }
        // A settled turn's final answer starts from the transcript that holds its tool calls.
        if params.isolation == Some(Isolation::Settle) {
            fresh = Some(FreshReason::SettledTurn);
        }
        let mut params = params;
        inject_context(&mut params, settings.resume.is_some());
        // A settle run is seeded too (never durable): what a reset put behind the session is not
        // history it may sum up.
        let settles = params.isolation == Some(Isolation::Settle);
        if fresh.is_some() && (durable || settles) {
            if let (Some(mark), Some(history)) = (self.bindings.reset_mark(&params.session_id), params.history.as_mut())
            {
                super::projection::after_reset(history, mark.as_deref());
            }
        }
        let position = attempt::mirror_scope(&params);
        // Saved the moment the backend knows it, not after the attempt: a bridge killed mid-turn
        // must still resume the same native session next time.
        if durable {
            let (server, session, bound_under) = (self.clone(), params.session_id.clone(), fingerprints.clone());
            let position = position.clone();
            settings.on_native_id = Some(Arc::new(move |native_id: &str| {
                server.bindings.save_if_changed(&session, native_id, &bound_under, Some(&position));
            }));
        }
        let session_id = params.session_id.clone();
        let artifact = harness.info.runtime_artifact.clone().filter(|_| params.capture_runtime_artifact);
        let job = AttemptJob { peer, caps, params, harness, settings, cancel, steer, fresh };
        let outcome = attempt::run(job).await.map_err(HandlerError::Reply)?;
        if let Some(native_id) = outcome.native_id.filter(|_| durable) {
            self.bindings.save_if_changed(&session_id, &native_id, &fingerprints, Some(&position));
        }
        let mut response = outcome.response;
        response.runtime_artifact = artifact;
        encode(response)
    }
}

/// Puts the context engine's assembled context (`attempt/run` `context`) before the prompt: on
/// every turn for `per_turn` projection, and for a `thread_bootstrap` epoch only on the turn that
/// starts the epoch's native thread (a continued thread of the same epoch has it already).
fn inject_context(params: &mut AttemptRunParams, continues_thread: bool) {
    let Some(context) = params.context.take() else { return };
    if context.text.is_empty() || (context.epoch.is_some() && continues_thread) {
        return;
    }
    let mut prompt = context.text;
    prompt.push_str("\n\n");
    prompt.push_str(&params.prompt);
    params.prompt = prompt;
}

/// Removes an attempt from the registry when its handler ends, however it ends.
struct Deregister {
    server: Arc<Server>,
    attempt_id: String,
}

impl Drop for Deregister {
    fn drop(&mut self) {
        let mut state = self.server.lock();
        if let Some(running) = state.attempts.remove(&self.attempt_id) {
            state.input_bytes_in_use = state.input_bytes_in_use.saturating_sub(running.input_bytes);
        }
        // Under the same lock as the removal, so no attempt on the session starts in between.
        let deferred = state.deferred.remove(&self.attempt_id).unwrap_or_default();
        let answers: Vec<_> = deferred
            .into_iter()
            .map(|d| (d.answer, self.server.apply_change(&d.change, Some(&self.attempt_id))))
            .collect();
        drop(state);
        for (answer, result) in answers {
            // The host may have gone; nobody is left to answer then.
            let _ = answer.send(result);
        }
        self.server.attempt_ended.notify_waiters();
    }
}

/// The [`RequestHandler`] the peer calls: an owned handle on the server.
pub struct ServerHandler(pub Arc<Server>);

impl RequestHandler for ServerHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        self.0.admit(request)
    }
}

/// What taking a request decided.
enum Admitted {
    /// It is answered already.
    Answer(Value),
    /// Its long work runs in this future, concurrently with later requests.
    Later(BoxFuture<'static, Result<Value, HandlerError>>),
}

fn reply(code: i64, message: String) -> HandlerError {
    HandlerError::Reply(ErrorObject::new(code, message))
}

/// Decodes params straight from their JSON text into `T`, skipping members `T` does not know
/// (nothing of them is kept); absent or `null` params are `{}`. Every host method takes its params
/// by name: an array (by position) or any other non-object is invalid params.
fn decode<T: DeserializeOwned>(params: Option<Box<RawValue>>) -> Result<T, HandlerError> {
    let text = by_name(params.as_deref())?;
    serde_json::from_str(text).map_err(|e| reply(codes::INVALID_PARAMS, format!("invalid params: {e}")))
}

/// The params' JSON text when they are by name (an object; absent or `null` is `{}`), else
/// `-32602`.
fn by_name(params: Option<&RawValue>) -> Result<&str, HandlerError> {
    let text = params.map_or("{}", |raw| raw.get().trim_start());
    let text = if text == "null" { "{}" } else { text };
    if !text.starts_with('{') {
        return Err(reply(codes::INVALID_PARAMS, "invalid params: an object of named params is expected".into()));
    }
    Ok(text)
}

fn encode<T: Serialize>(value: T) -> Result<Value, HandlerError> {
    serde_json::to_value(value).map_err(|e| HandlerError::Failed(format!("could not encode the answer: {e}")))
}

#[cfg(test)]
mod tests {
    use clawbridge_protocol::host::AssembledContext;

    use super::*;

    fn with_context(epoch: Option<&str>) -> AttemptRunParams {
        AttemptRunParams {
            prompt: "the prompt".into(),
            context: Some(AssembledContext { text: "<context>CTX</context>".into(), epoch: epoch.map(Into::into) }),
            ..AttemptRunParams::default()
        }
    }

    #[test]
    fn an_epochs_context_goes_only_to_the_thread_that_starts_it_a_per_turn_one_to_every_turn() {
        let mut starts = with_context(Some("e1"));
        inject_context(&mut starts, false);
        assert_eq!(starts.prompt, "<context>CTX</context>\n\nthe prompt");
        let mut continues = with_context(Some("e1"));
        inject_context(&mut continues, true);
        assert_eq!(continues.prompt, "the prompt", "the continued thread has it already");
        let mut per_turn = with_context(None);
        inject_context(&mut per_turn, true);
        assert_eq!(per_turn.prompt, "<context>CTX</context>\n\nthe prompt");
        let mut none = AttemptRunParams { prompt: "p".into(), ..AttemptRunParams::default() };
        inject_context(&mut none, false);
        assert_eq!(none.prompt, "p");
    }
}
