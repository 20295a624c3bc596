//! One `codex app-server` process: the handshake with its version gate, threads, and turns.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

pub use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::driver::stream_end;
use clawbridge_bridge::attempt::hooks::{HostTools, ToolTerminalObserver, UserInputAsker};
use clawbridge_bridge::attempt::{AttemptResult, NativeTurn, Step, TurnActivity, TurnDriver, TurnLimits, TurnSink};
use clawbridge_bridge::backend::TurnInput;
use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::connection::PipeLaunch;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::rpc::{PeerConfig, PeerEvent, PeerEvents, RpcError};
use clawbridge_bridge::supervisor::{SpawnError, SpawnOptions, StopOutcome};
use clawbridge_bridge::transport::endpoint::{ConnectError, Endpoint};
use clawbridge_protocol::codex::initialize::{
    ClientInfo, InitializeCapabilities, InitializeParams, InitializeResponse,
};
use clawbridge_protocol::codex::methods;
use clawbridge_protocol::codex::notifications::TurnCompletedNotification;
use clawbridge_protocol::codex::notifications::{ConfigWarningNotification, ServerNotification};
use clawbridge_protocol::codex::policy::{ApprovalPolicy, SandboxMode};
use clawbridge_protocol::codex::thread::ThreadStatus;
use clawbridge_protocol::codex::thread::{
    DynamicToolFunction, DynamicToolSpec, ThreadForkParams, ThreadResumeParams, ThreadStartParams, ThreadStartResponse,
};
use clawbridge_protocol::codex::turn::{
    ThreadTurnsListParams, ThreadTurnsListResponse, Turn, TurnInterruptParams, TurnStartParams, TurnStartResponse,
    TurnStatus, TurnSteerParams, TurnSteerResponse, UserInput,
};
use clawbridge_protocol::codex::version::{Version, VersionRejected};
use clawbridge_protocol::jsonrpc::Dialect;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::CodexConfig;
use super::handler::CodexRequestHandler;
use super::mapping::TurnMapper;
use super::retry::{self, OverloadRetry};

/// How many of the newest turns a reconcile reads; ours is the newest unless the thread moved on.
const RECONCILE_PAGE: u32 = 5;

/// Our turn from a `thread/turns/list` answer, if the server says it has ended.
fn ended_turn(
    listed: Result<Result<ThreadTurnsListResponse, RpcError>, tokio::task::JoinError>,
    ours: Option<&str>,
) -> Option<Turn> {
    let list = match listed {
        Ok(Ok(list)) => list,
        Ok(Err(error)) => {
            tracing::debug!(%error, "thread/turns/list failed; the idle watchdog decides");
            return None;
        }
        Err(join) => {
            tracing::debug!(%join, "thread/turns/list was dropped");
            return None;
        }
    };
    let turn = list.data.into_iter().find(|turn| Some(turn.id.as_str()) == ours)?;
    match turn.status {
        Some(TurnStatus::Completed | TurnStatus::Interrupted | TurnStatus::Failed) => Some(turn),
        _ => None,
    }
}

/// Why a Codex session could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodexError {
    /// The app-server could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The configured app-server could not be reached, or refused us.
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The server's version is refused; the child was stopped. Not retryable.
    #[error("{rejected} (userAgent: {user_agent:?})")]
    VersionRejected {
        /// Why, naming found and required versions.
        #[source]
        rejected: VersionRejected,
        /// The userAgent as the server sent it.
        user_agent: Option<String>,
    },
    /// `initialize` failed or timed out; the child was stopped.
    #[error("the codex app-server handshake failed")]
    Handshake(#[source] RpcError),
    /// A request failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
    /// The launcher's command could not be built (docs/remote.md); nothing was started. Not retryable.
    #[error("cannot run codex through the launcher")]
    Launcher(#[from] clawbridge_bridge::remote::LauncherError),
    /// The daemon behind `codex app-server proxy` could not be reached through it (stopped, no
    /// such socket, the launcher failed); the error names the launcher and the socket.
    #[error(transparent)]
    Pipe(#[from] clawbridge_bridge::connection::PipeError),
    /// A compaction did not end within its limit, or the server ended it without compacting.
    #[error("the codex compaction did not complete: {0}")]
    Compaction(String),
}

impl CodexError {
    /// Whether trying again could help (a version refusal never does).
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            CodexError::VersionRejected { .. }
                | CodexError::Connect(ConnectError::Refused { .. })
                | CodexError::Launcher(_)
                | CodexError::Pipe(clawbridge_bridge::connection::PipeError::Upgrade {
                    source: ConnectError::Refused { .. },
                    ..
                })
        )
    }
}

/// How many `configWarning`s a session keeps: a person reads a few, a looping server sends many.
const MAX_CONFIG_WARNINGS: usize = 8;

/// Settings of a thread, sent on start and resume.
#[derive(Clone, Debug, Default)]
pub struct ThreadOptions {
    /// The thread's working directory.
    pub cwd: Option<String>,
    /// The model to use.
    pub model: Option<String>,
    /// When Codex asks before running things.
    pub approval_policy: Option<ApprovalPolicy>,
    /// How much the sandbox allows.
    pub sandbox: Option<SandboxMode>,
    /// Extra instructions for the model.
    pub developer_instructions: Option<String>,
    /// Side work: the thread is not persisted (`ephemeral: true`), and not remembered as a
    /// loaded thread a later session could take.
    pub ephemeral: bool,
    /// Config overrides for the thread (`config` of `thread/start` / `thread/resume`): the user's
    /// MCP servers as `{"mcp_servers": {...}}`.
    pub config: Option<serde_json::Map<String, Value>>,
}

/// A thread ready for turns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadReady {
    /// Its id (kept in the session binding).
    pub thread_id: String,
    /// True when an existing thread was resumed.
    pub resumed: bool,
    /// Why a requested resume failed and a new thread was started instead (never silent).
    pub resume_failure: Option<String>,
    /// The model the thread runs on, as Codex answered (`model` of `thread/start` / `thread/resume`).
    pub model: Option<String>,
    /// True when the shared server still had the thread loaded and idle under the same settings,
    /// so no `thread/resume` was sent.
    pub still_loaded: bool,
}

/// Sends more input into a running turn (`turn/steer`) from outside [`CodexSession::run_turn`],
/// which holds the session while the turn runs.
#[derive(Clone, Debug)]
pub struct Steering {
    /// The session's peer; steering is just another request on it.
    peer: clawbridge_bridge::rpc::RpcPeer,
    /// The session's overload retry policy.
    retry: OverloadRetry,
}

impl Steering {
    /// Adds `text` to the running turn `expected_turn_id` (from [`Event::TurnStarted`]); Codex refuses
    /// it when that turn is no longer the active one. Returns the turn that took the input.
    pub async fn steer(&self, thread_id: &str, expected_turn_id: &str, text: &str) -> Result<String, CodexError> {
        let params = TurnSteerParams {
            thread_id: thread_id.into(),
            input: vec![UserInput::text(text)],
            expected_turn_id: expected_turn_id.into(),
            ..TurnSteerParams::default()
        };
        let response: TurnSteerResponse =
            retry::request_typed(&self.peer, self.retry, methods::TURN_STEER, Some(&params)).await?;
        Ok(response.turn_id)
    }
}

/// A live `codex app-server` after a successful handshake.
pub struct CodexSession {
    /// The process and its JSON-RPC peer: its own, or a seat on a shared one.
    link: ServerLink,
    /// Notifications in arrival order.
    events: PeerEvents,
    /// What the request handler saw (pending approvals, accepted approvals).
    activity: Arc<TurnActivity>,
    /// Receives tool terminals.
    observer: Arc<dyn ToolTerminalObserver>,
    /// Answers Codex's requests; its answer cache is cleared after each turn.
    handler: Arc<CodexRequestHandler>,
    /// Host tools, declared on every thread.
    tools: Arc<dyn HostTools>,
    /// Timeouts and policies.
    config: CodexConfig,
    /// The server's version, parsed from its userAgent.
    server_version: Version,
    /// Unknown notification methods already logged, so each is logged once.
    unknown_methods: HashSet<String>,
    /// The summaries of the `configWarning`s seen between turns (the first few), for the doctor.
    config_warnings: Vec<String>,
    /// On a shared server: the thread this session started, resumed or adopted, with the keyed
    /// hash of its settings and its model, handed back to the server when a turn on it completes
    /// so the next session continuing it skips `thread/resume`.
    loaded: Option<LoadedThread>,
}

/// A thread loaded on this session's shared server, and the settings it was loaded under.
#[derive(Clone, Debug)]
struct LoadedThread {
    /// The thread's id.
    thread_id: String,
    /// The keyed hash of its settings ([`super::shared::ServerSeat::settings_key`]).
    settings: u64,
    /// The model Codex named for it.
    model: Option<String>,
}

impl std::fmt::Debug for CodexSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodexSession").finish_non_exhaustive()
    }
}
/// The process a session talks to: its own, or a seat on a shared one.
#[derive(Debug)]
enum ServerLink {
    /// An app-server started for this session alone, stopped with it (boxed: the other variant is
    /// a handle).
    Own(Box<AgentConnection>),
    /// A seat on a shared app-server (super::shared); leaving it leaves the server running.
    Shared(super::shared::ServerSeat),
}

impl ServerLink {
    fn peer(&self) -> &clawbridge_bridge::rpc::RpcPeer {
        match self {
            ServerLink::Own(conn) => conn.peer(),
            ServerLink::Shared(seat) => seat.peer(),
        }
    }
}

/// A session's request handler and the activity it shares with the turn loop.
fn session_handler(config: &CodexConfig, hooks: &SessionHooks) -> (Arc<TurnActivity>, Arc<CodexRequestHandler>) {
    let activity = Arc::new(TurnActivity::default());
    let handler = CodexRequestHandler::new(
        hooks.approver.clone(),
        hooks.tools.clone(),
        activity.clone(),
        config.approval_timeout,
        config.tool_timeout,
    );
    (activity, handler)
}

/// Spawns the app-server `config` describes (or connects to the listening one it names,
/// [`CodexConfig::connect`]), its requests answered by `handler`.
pub(super) async fn open_server(
    config: &CodexConfig,
    handler: Arc<dyn clawbridge_bridge::rpc::RequestHandler>,
) -> Result<(AgentConnection, PeerEvents), CodexError> {
    let peer_config = PeerConfig {
        dialect: Dialect::Codex,
        request_timeout: config.request_timeout,
        // The handler applies the approval and tool deadlines itself; this is the backstop.
        handler_timeout: config.approval_timeout.max(config.tool_timeout) + Duration::from_secs(5),
        label: "codex".into(),
        // A Codex that stops reading its stdin must fail the turn, not hang it.
        write_timeout: Some(config.write_timeout),
        ..PeerConfig::default()
    };
    if let Some(endpoint @ Endpoint::Proxy { socket }) = &config.connect {
        let (command, preamble, via) = config.proxy_launch(socket.as_deref())?;
        let spawn = SpawnOptions {
            registry: config.registry.clone(),
            containment: config.containment,
            ..SpawnOptions::default()
        };
        let launch = PipeLaunch { command, preamble, spawn, stop: config.stop, via };
        return Ok(AgentConnection::spawn_websocket(
            launch,
            endpoint,
            &config.ws_auth,
            config.handshake_timeout,
            peer_config,
            handler,
        )
        .await?);
    }
    if let Some(endpoint) = &config.connect {
        // The handshake's deadline covers reaching the server, as it covers a child's start-up.
        return Ok(
            AgentConnection::connect(endpoint, &config.ws_auth, config.handshake_timeout, peer_config, handler).await?
        );
    }
    let spawn =
        SpawnOptions { registry: config.registry.clone(), containment: config.containment, ..SpawnOptions::default() };
    let (command, preamble) = config.launch()?;
    Ok(AgentConnection::spawn_prefixed(&command, preamble, spawn, peer_config, handler)?)
}

/// `initialize` with the version gate, then `initialized`; a failed or refused handshake stops the child.
pub(super) async fn handshake(
    conn: AgentConnection,
    config: &CodexConfig,
    experimental_api: bool,
) -> Result<(AgentConnection, Version), CodexError> {
    let params = InitializeParams {
        client_info: ClientInfo::new(config.client_name.clone(), env!("CARGO_PKG_VERSION")),
        capabilities: Some(InitializeCapabilities { experimental_api, ..InitializeCapabilities::default() }),
        ..InitializeParams::default()
    };
    let answer =
        match conn.peer().request_with_timeout(methods::INITIALIZE, Some(&params), config.handshake_timeout).await {
            Ok(answer) => answer,
            Err(error) => {
                conn.shutdown(config.stop).await;
                return Err(CodexError::Handshake(error));
            }
        };
    let response: InitializeResponse = serde_json::from_value(answer).unwrap_or_default();
    let server_version = match config.version_policy.check(response.user_agent.as_deref()) {
        Ok(verdict) => {
            if let Some(warning) = verdict.warning("Codex app-server") {
                tracing::warn!("{warning}");
            }
            verdict.found().clone()
        }
        Err(rejected) => {
            let stop = conn.shutdown(config.stop).await;
            tracing::debug!(?stop, "stopped a codex app-server of a refused version");
            return Err(CodexError::VersionRejected { rejected, user_agent: response.user_agent });
        }
    };
    if let Err(error) = conn.peer().notify::<Value>(methods::INITIALIZED, None).await {
        conn.shutdown(config.stop).await;
        return Err(error.into());
    }
    Ok((conn, server_version))
}

impl CodexSession {
    /// Spawns the app-server (or connects to the configured one, [`CodexConfig::connect`]) and
    /// performs the handshake. No other request can go out before it succeeds: the session only
    /// exists afterwards. A refused version stops the child (or closes the connection).
    pub async fn connect(config: CodexConfig, hooks: SessionHooks) -> Result<CodexSession, CodexError> {
        let (activity, handler) = session_handler(&config, &hooks);
        let (conn, events) = open_server(&config, handler.clone()).await?;
        let experimental_api = !hooks.tools.specs().is_empty();
        let (conn, server_version) = handshake(conn, &config, experimental_api).await?;
        Ok(CodexSession::assemble(
            ServerLink::Own(Box::new(conn)),
            events,
            activity,
            handler,
            hooks,
            config,
            server_version,
        ))
    }

    /// A session on a warm app-server shared with other sessions (super::shared), from `pool`: no
    /// process start, no handshake. Its thread's notifications and requests are routed to it.
    pub async fn on_shared(
        pool: &super::shared::ServerPool,
        config: CodexConfig,
        hooks: SessionHooks,
    ) -> Result<CodexSession, CodexError> {
        let (activity, handler) = session_handler(&config, &hooks);
        let experimental_api = !hooks.tools.specs().is_empty();
        let mut seat = pool.seat(&config, experimental_api, handler.clone()).await?;
        let events = seat.take_events().expect("a new seat has its events");
        let server_version = seat.version().clone();
        Ok(CodexSession::assemble(ServerLink::Shared(seat), events, activity, handler, hooks, config, server_version))
    }

    /// A session on the shared server of `pool` that keeps `thread_id` loaded between attempts
    /// ([`ServerPool::seat_holding`](super::shared::ServerPool::seat_holding)), for native work
    /// on that thread; `None` when no server of the pool has it loaded.
    pub fn on_server_holding(
        pool: &super::shared::ServerPool,
        thread_id: &str,
        config: CodexConfig,
        hooks: SessionHooks,
    ) -> Option<CodexSession> {
        let (activity, handler) = session_handler(&config, &hooks);
        let mut seat = pool.seat_holding(thread_id, handler.clone())?;
        let events = seat.take_events()?;
        let server_version = seat.version().clone();
        Some(CodexSession::assemble(ServerLink::Shared(seat), events, activity, handler, hooks, config, server_version))
    }

    fn assemble(
        link: ServerLink,
        events: PeerEvents,
        activity: Arc<TurnActivity>,
        handler: Arc<CodexRequestHandler>,
        hooks: SessionHooks,
        config: CodexConfig,
        server_version: Version,
    ) -> CodexSession {
        CodexSession {
            link,
            events,
            activity,
            observer: hooks.observer,
            handler,
            tools: hooks.tools,
            config,
            server_version,
            unknown_methods: HashSet::new(),
            config_warnings: Vec::new(),
            loaded: None,
        }
    }

    /// Who answers Codex's questions for the user (`item/tool/requestUserInput`). Without one they
    /// go unanswered and Codex carries on.
    pub fn answer_user_input_with(&self, asker: Arc<dyn UserInputAsker>) {
        self.handler.set_user_input(asker);
    }

    /// A handle for steering running turns.
    pub fn steering(&self) -> Steering {
        Steering { peer: self.link.peer().clone(), retry: self.config.overload_retry }
    }

    /// The server's version.
    pub fn server_version(&self) -> &Version {
        &self.server_version
    }

    /// The app-server's pid (its process group), when the bridge spawned it.
    pub fn pid(&self) -> Option<u32> {
        match &self.link {
            ServerLink::Own(conn) => conn.process().map(clawbridge_bridge::supervisor::ChildProcess::pid),
            ServerLink::Shared(seat) => seat.pid(),
        }
    }

    /// Whether the session runs on a shared app-server.
    pub fn is_shared(&self) -> bool {
        matches!(self.link, ServerLink::Shared(_))
    }

    fn dynamic_tools(&self) -> Option<Vec<DynamicToolSpec>> {
        let specs = self.tools.specs();
        (!specs.is_empty()).then(|| {
            specs
                .into_iter()
                .map(|spec| {
                    let input_schema = spec.schema_value();
                    DynamicToolSpec::Function(DynamicToolFunction {
                        name: spec.name,
                        description: spec.description,
                        input_schema,
                        ..DynamicToolFunction::default()
                    })
                })
                .collect()
        })
    }

    /// A request made between turns. Notifications keep coming meanwhile (`thread/started`, rate
    /// limits, config warnings); nobody else reads them now, so they are drained here — otherwise a
    /// full queue would stall the reader, and with it this very answer.
    async fn request_outside_turn<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, RpcError> {
        let peer = self.link.peer().clone();
        let request = retry::request_typed::<P, R>(&peer, self.config.overload_retry, method, Some(params));
        tokio::pin!(request);
        loop {
            tokio::select! {
                answer = &mut request => return answer,
                event = self.events.recv() => match event {
                    Some(PeerEvent::Notification(note)) => {
                        tracing::trace!(method = %note.method, "notification between turns");
                        self.keep_config_warning(&note);
                    }
                    Some(PeerEvent::Closed(_)) | None => return request.await,
                    Some(_) => {}
                },
            }
        }
    }

    /// Keeps the summary of a `configWarning` (the first [`MAX_CONFIG_WARNINGS`] of them).
    fn keep_config_warning(&mut self, note: &clawbridge_protocol::jsonrpc::Notification) {
        if note.method != methods::CONFIG_WARNING || self.config_warnings.len() >= MAX_CONFIG_WARNINGS {
            return;
        }
        let params = note.params.as_deref().map_or("null", serde_json::value::RawValue::get);
        if let Ok(warning) = serde_json::from_str::<ConfigWarningNotification>(params) {
            self.config_warnings.push(warning.summary);
        }
    }

    /// The `configWarning` summaries Codex sent between turns so far (its sandbox and config
    /// problems, as it words them).
    pub fn config_warnings(&self) -> &[String] {
        &self.config_warnings
    }

    /// A request outside any turn, its params an empty object (`config/read`, `account/read`).
    pub async fn request_between_turns<R: serde::de::DeserializeOwned>(&mut self, method: &str) -> Result<R, RpcError> {
        self.request_outside_turn(method, &serde_json::json!({})).await
    }

    /// Archives `thread_id` (`thread/archive`): Codex moves it out of its list of live threads.
    pub async fn archive_thread(&mut self, thread_id: &str) -> Result<(), RpcError> {
        let params = serde_json::json!({ "threadId": thread_id });
        self.request_outside_turn::<_, serde_json::Value>(methods::THREAD_ARCHIVE, &params).await.map(|_| ())
    }

    /// Starts a new thread.
    pub async fn start_thread(&mut self, options: &ThreadOptions) -> Result<ThreadReady, CodexError> {
        let params = ThreadStartParams {
            cwd: options.cwd.clone(),
            model: options.model.clone(),
            approval_policy: options.approval_policy.clone(),
            sandbox: options.sandbox.clone(),
            developer_instructions: options.developer_instructions.clone(),
            dynamic_tools: self.dynamic_tools(),
            ephemeral: options.ephemeral.then_some(true),
            config: options.config.clone(),
            ..ThreadStartParams::default()
        };
        let response: ThreadStartResponse = self.request_outside_turn(methods::THREAD_START, &params).await?;
        self.claim_thread(&response.thread.id);
        if !options.ephemeral {
            self.note_loaded(&response.thread.id, options, response.model.clone());
        }
        Ok(ThreadReady {
            thread_id: response.thread.id,
            resumed: false,
            resume_failure: None,
            model: response.model,
            still_loaded: false,
        })
    }

    /// Starts an ephemeral thread that begins with a copy of `thread_id`'s history
    /// (`thread/fork` with `ephemeral: true`), leaving `thread_id` as it was: side work that must
    /// see the conversation but never add to it. If the fork fails, a fresh ephemeral thread is
    /// started and `resume_failure` says why.
    pub async fn fork_ephemeral(
        &mut self,
        thread_id: &str,
        options: &ThreadOptions,
    ) -> Result<ThreadReady, CodexError> {
        let params = ThreadForkParams {
            thread_id: thread_id.to_owned(),
            ephemeral: Some(true),
            exclude_turns: Some(true),
            cwd: options.cwd.clone(),
            model: options.model.clone(),
            approval_policy: options.approval_policy.clone(),
            sandbox: options.sandbox.clone(),
            developer_instructions: options.developer_instructions.clone(),
            ..ThreadForkParams::default()
        };
        let fresh = ThreadOptions { ephemeral: true, ..options.clone() };
        match self.request_outside_turn::<_, ThreadStartResponse>(methods::THREAD_FORK, &params).await {
            Ok(response) => {
                self.claim_thread(&response.thread.id);
                Ok(ThreadReady {
                    thread_id: response.thread.id,
                    resumed: false,
                    resume_failure: None,
                    model: response.model,
                    still_loaded: false,
                })
            }
            Err(error) => {
                tracing::warn!(%thread_id, %error, "could not fork the codex thread; starting a fresh ephemeral one");
                let mut ready = self.start_thread(&fresh).await?;
                ready.resume_failure = Some(error.to_string());
                Ok(ready)
            }
        }
    }

    /// Resumes `thread_id`; if that fails, starts a new thread and says why in `resume_failure`.
    pub async fn resume_or_start(
        &mut self,
        thread_id: &str,
        options: &ThreadOptions,
    ) -> Result<ThreadReady, CodexError> {
        if let Some(ready) = self.adopt_live(thread_id, options) {
            return Ok(ready);
        }
        let params = resume_params(thread_id, options);
        match self.request_outside_turn::<_, ThreadStartResponse>(methods::THREAD_RESUME, &params).await {
            Ok(response) => {
                self.claim_thread(&response.thread.id);
                self.note_loaded(&response.thread.id, options, response.model.clone());
                Ok(ThreadReady {
                    thread_id: response.thread.id,
                    resumed: true,
                    resume_failure: None,
                    model: response.model,
                    still_loaded: false,
                })
            }
            Err(error) => {
                tracing::warn!(%thread_id, %error, "could not resume the codex thread; starting a new one");
                let mut ready = self.start_thread(options).await?;
                ready.resume_failure = Some(error.to_string());
                Ok(ready)
            }
        }
    }

    /// The canonical text of what `thread/resume` applies to a thread (`options`), keyed by the
    /// shared server; `None` on a server of the session's own.
    fn settings_key(&self, options: &ThreadOptions) -> Option<u64> {
        let ServerLink::Shared(seat) = &self.link else { return None };
        let text = serde_json::to_string(&serde_json::json!([
            options.cwd,
            options.model,
            options.approval_policy,
            options.sandbox,
            options.developer_instructions,
            options.config,
        ]))
        .ok()?;
        Some(seat.settings_key(&text))
    }

    /// On a shared server, remembers `thread_id` as loaded under `options` (see [`Self::loaded`]).
    fn note_loaded(&mut self, thread_id: &str, options: &ThreadOptions, model: Option<String>) {
        self.loaded = self.settings_key(options).map(|settings| LoadedThread {
            thread_id: thread_id.to_owned(),
            settings,
            model,
        });
    }

    /// `thread_id` taken without a resume: the shared server still has it loaded, idle and held by
    /// no session, under the same settings (docs/peers/codex.md#shared-app-servers).
    fn adopt_live(&mut self, thread_id: &str, options: &ThreadOptions) -> Option<ThreadReady> {
        let settings = self.settings_key(options)?;
        let ServerLink::Shared(seat) = &self.link else { return None };
        let model = seat.adopt_live(thread_id, settings)?;
        tracing::debug!(%thread_id, "the shared codex app-server still has the thread loaded under these settings; no resume");
        self.loaded = Some(LoadedThread { thread_id: thread_id.to_owned(), settings, model: model.clone() });
        Some(ThreadReady {
            thread_id: thread_id.to_owned(),
            resumed: true,
            resume_failure: None,
            model,
            still_loaded: true,
        })
    }

    /// After a turn on `thread_id`: a completed turn leaves the thread idle and loaded, so the
    /// shared server may lend it to the next session as it is; any other end (failed, aborted,
    /// timed out: a turn may still run in it) leaves it to a resume.
    fn hand_back_loaded(&mut self, thread_id: &str, result: &AttemptResult) {
        self.release_loaded(thread_id, result.terminal.kind == TerminalKind::Ok);
    }

    /// Lets go of `thread_id`: when it ended `idle` (a completed turn or compaction), the shared
    /// server lists it as loaded again, so a later session on that server adopts it without a
    /// resume, and a compaction or deletion finds the process that holds it (no other may resume
    /// or archive it).
    fn release_loaded(&mut self, thread_id: &str, idle: bool) {
        let ServerLink::Shared(seat) = &self.link else { return };
        let Some(loaded) = self.loaded.take_if(|loaded| loaded.thread_id == thread_id) else { return };
        if idle {
            seat.remember_live(&loaded.thread_id, loaded.settings, loaded.model);
        }
    }

    /// Runs one turn on `thread_id`, passing every normalized event to `sink` as it happens and
    /// every tool terminal to the observer (once each, before the result). Cancelling `cancel`
    /// interrupts the turn. A turn that stops making progress ends as `timeout`; a dying server
    /// ends it as `failed` — never a hang.
    pub async fn run_turn(
        &mut self,
        thread_id: &str,
        prompt: &str,
        mut sink: &mut (dyn FnMut(&Event) + Send),
        cancel: &CancellationToken,
    ) -> Result<AttemptResult, CodexError> {
        self.run_turn_with(thread_id, &TurnInput::text(prompt), &mut sink, cancel).await
    }

    /// [`run_turn`](Self::run_turn) with a whole turn input: the prompt's images as `image` input
    /// items and the thinking level as the turn's `effort` (docs/peers/codex.md#turn-input).
    pub async fn run_turn_with(
        &mut self,
        thread_id: &str,
        input: &TurnInput,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<AttemptResult, CodexError> {
        let driver = TurnDriver::new(self.observer.clone(), self.activity.clone(), sink);
        // Whatever is still queued belongs to an earlier turn (one abandoned by the watchdog, say):
        // it must neither count as progress nor lend this turn its turn id.
        while let Ok(stale) = self.events.try_recv() {
            if let PeerEvent::Closed(gone) = stale {
                let closing = TurnMapper::new(thread_id)
                    .abandon(TerminalKind::Failed, format!("the codex app-server went away: {gone}"));
                return Ok(driver.close(closing).await.finish(Some(thread_id.to_string())));
            }
        }
        if let ServerLink::Shared(seat) = &self.link {
            seat.count_turn();
        }
        let peer = self.link.peer().clone();
        let mut params = TurnStartParams::new(thread_id, super::input::user_inputs(input));
        params.effort = input.think_level.and_then(super::input::effort).map(str::to_owned);
        // The answer may come after the notifications it causes: keep reading while it is pending.
        let policy = self.config.overload_retry;
        let start =
            tokio::spawn(async move { retry::request(&peer, policy, methods::TURN_START, Some(&params)).await });
        let limits = TurnLimits {
            idle: self.config.turn_idle_timeout,
            interrupt_grace: self.config.interrupt_grace,
            backend: "codex",
        };
        let mut turn = CodexTurn {
            session: self,
            thread_id,
            mapper: TurnMapper::new(thread_id),
            start,
            start_pending: true,
            started_turn: None,
            reconcile_at: None,
            reconcile: None,
        };
        let driven = driver.run(&mut turn, limits, cancel).await;
        if turn.start_pending {
            turn.start.abort();
        }
        if let Some(reconcile) = turn.reconcile.take() {
            reconcile.abort();
        }
        // Re-sent requests arrive within a turn (or on a resume, which is a new connection).
        self.handler.forget_answers();
        let result = driven.finish(Some(thread_id.to_string()));
        self.hand_back_loaded(thread_id, &result);
        Ok(result)
    }

    fn send_interrupt(&self, thread_id: &str, turn_id: &str) {
        let peer = self.link.peer().clone();
        let params = TurnInterruptParams { thread_id: thread_id.into(), turn_id: turn_id.into(), ..Default::default() };
        let policy = self.config.overload_retry;
        tokio::spawn(async move {
            if let Err(error) = retry::request(&peer, policy, methods::TURN_INTERRUPT, Some(&params)).await {
                tracing::debug!(%error, "turn/interrupt failed");
            }
        });
    }

    /// Stops the app-server (staged: stdin EOF, then signals to its group); a session on a shared
    /// server leaves it instead (`None`), and the pool decides when it stops.
    pub async fn shutdown(self) -> Option<StopOutcome> {
        match self.link {
            ServerLink::Own(conn) => Some(conn.shutdown(self.config.stop).await),
            ServerLink::Shared(seat) => {
                drop(seat);
                None
            }
        }
    }

    /// On a shared server, routes `thread_id`'s traffic to this session.
    fn claim_thread(&self, thread_id: &str) {
        if let ServerLink::Shared(seat) = &self.link {
            seat.claim_thread(thread_id);
        }
    }
}

/// The most `model/list` pages read (100 models each): a catalog is short, a looping cursor is not.
const MAX_MODEL_PAGES: usize = 10;

/// What a finished `thread/compact/start` reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactReport {
    /// The context's input tokens of the last model call before the compaction, when known.
    pub tokens_before: Option<u64>,
    /// The context's input tokens after it, when Codex reported them.
    pub tokens_after: Option<u64>,
    /// The `contextCompaction` item's id, when Codex sent the item.
    pub item_id: Option<String>,
}

impl CodexSession {
    /// `model/list`, every page (at most [`MAX_MODEL_PAGES`]): the models this server offers, in
    /// its order.
    pub async fn list_models(&mut self) -> Result<Vec<clawbridge_protocol::host::NativeModel>, CodexError> {
        let mut models = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_MODEL_PAGES {
            let params = serde_json::json!({"limit": 100, "cursor": cursor, "includeHidden": false});
            let page: ModelListPage = self.request_outside_turn(methods::MODEL_LIST, &params).await?;
            models.extend(page.data.into_iter().filter(|m| !m.id.is_empty()).map(ListedModel::into_native));
            cursor = page.next_cursor.filter(|c| !c.is_empty());
            if cursor.is_none() {
                break;
            }
        }
        Ok(models)
    }

    /// Resumes `thread_id` (never starting another: compacting a new thread compacts nothing),
    /// runs `thread/compact/start` on it and waits, at most `limit`, for the compaction turn to
    /// complete (docs/peers/codex.md#compaction).
    pub async fn compact_thread(
        &mut self,
        thread_id: &str,
        options: &ThreadOptions,
        limit: Duration,
    ) -> Result<CompactReport, CodexError> {
        let params = resume_params(thread_id, options);
        let resumed: ThreadStartResponse = self.request_outside_turn(methods::THREAD_RESUME, &params).await?;
        self.note_loaded(thread_id, options, resumed.model);
        self.claim_thread(thread_id);
        let _: Value = self
            .request_outside_turn(methods::THREAD_COMPACT_START, &serde_json::json!({"threadId": thread_id}))
            .await?;
        let deadline = Instant::now() + limit;
        let mut report = CompactReport::default();
        let mut compacted = false;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .map_err(|_| CodexError::Compaction(format!("no turn/completed within {limit:?}")))?;
            let note = match event {
                Some(PeerEvent::Notification(note)) => note,
                Some(PeerEvent::Closed(_)) | None => {
                    return Err(CodexError::Compaction("the codex app-server went away".into()));
                }
                Some(_) => continue,
            };
            match ServerNotification::from_raw(&note.method, note.params.as_deref()) {
                ServerNotification::ThreadCompacted(n) if n.thread_id == thread_id => compacted = true,
                ServerNotification::ItemCompleted(n)
                    if n.thread_id == thread_id && n.item.item_type() == Some("contextCompaction") =>
                {
                    compacted = true;
                    report.item_id = n.item.id().filter(|id| !id.is_empty()).map(str::to_string).or(report.item_id);
                }
                ServerNotification::ThreadTokenUsageUpdated(n) if n.thread_id == thread_id => {
                    let input = n.token_usage.last.input_tokens;
                    if compacted {
                        report.tokens_after = Some(input);
                    } else {
                        report.tokens_before = Some(input);
                    }
                }
                ServerNotification::TurnCompleted(n) if n.thread_id == thread_id => {
                    return if compacted {
                        self.release_loaded(thread_id, true);
                        Ok(report)
                    } else {
                        let why =
                            n.turn.error.map_or_else(|| "the turn ended without a compaction".into(), |e| e.message);
                        Err(CodexError::Compaction(why))
                    };
                }
                _ => {}
            }
        }
    }
}

impl CodexSession {
    /// Resumes `thread_id` under `options` (its `config` carries the user's MCP servers) and lists
    /// the MCP servers of that thread's connections with their tools (`mcpServerStatus/list`, every
    /// page, at most [`MAX_MODEL_PAGES`]).
    pub async fn list_mcp_tools(
        &mut self,
        thread_id: &str,
        options: &ThreadOptions,
    ) -> Result<Vec<clawbridge_protocol::host::NativeMcpServer>, CodexError> {
        let params = resume_params(thread_id, options);
        let _: ThreadStartResponse = self.request_outside_turn(methods::THREAD_RESUME, &params).await?;
        self.claim_thread(thread_id);
        let mut servers = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_MODEL_PAGES {
            let params = serde_json::json!({"threadId": thread_id, "detail": "toolsAndAuthOnly", "cursor": cursor});
            let page: McpStatusPage = self.request_outside_turn(methods::MCP_SERVER_STATUS_LIST, &params).await?;
            servers.extend(page.data.into_iter().filter(|s| !s.name.is_empty()).map(ListedMcpServer::into_native));
            cursor = page.next_cursor.filter(|c| !c.is_empty());
            if cursor.is_none() {
                break;
            }
        }
        Ok(servers)
    }
}

/// One `mcpServerStatus/list` page.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpStatusPage {
    #[serde(default)]
    data: Vec<ListedMcpServer>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// One server of `mcpServerStatus/list`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedMcpServer {
    #[serde(default)]
    name: String,
    #[serde(default)]
    runtime_status: Option<String>,
    #[serde(default)]
    tools_error: Option<String>,
    #[serde(default)]
    tools: std::collections::BTreeMap<String, ListedMcpTool>,
}

/// One tool of a listed server.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedMcpTool {
    #[serde(default)]
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Value,
}

impl ListedMcpServer {
    fn into_native(self) -> clawbridge_protocol::host::NativeMcpServer {
        clawbridge_protocol::host::NativeMcpServer {
            name: self.name,
            status: self.runtime_status,
            error: self.tools_error,
            tools: self
                .tools
                .into_iter()
                .map(|(key, tool)| clawbridge_protocol::host::NativeMcpTool {
                    name: if tool.name.is_empty() { key } else { tool.name },
                    title: tool.title,
                    description: tool.description,
                    input_schema: tool.input_schema,
                })
                .collect(),
        }
    }
}

/// One `model/list` page, as much of it as the catalog uses.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelListPage {
    #[serde(default)]
    data: Vec<ListedModel>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// One model of `model/list`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedModel {
    #[serde(default)]
    id: String,
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    hidden: bool,
    #[serde(default)]
    is_default: bool,
    #[serde(default)]
    input_modalities: Vec<String>,
    #[serde(default)]
    supported_reasoning_efforts: Vec<ListedEffort>,
}

/// One `supportedReasoningEfforts` entry.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListedEffort {
    #[serde(default)]
    reasoning_effort: String,
}

impl ListedModel {
    fn into_native(self) -> clawbridge_protocol::host::NativeModel {
        clawbridge_protocol::host::NativeModel {
            id: self.id,
            display_name: self.display_name.filter(|n| !n.is_empty()),
            description: self.description.filter(|d| !d.is_empty()),
            is_default: self.is_default,
            hidden: self.hidden,
            input: self.input_modalities,
            reasoning_efforts: self
                .supported_reasoning_efforts
                .into_iter()
                .map(|e| e.reasoning_effort)
                .filter(|e| !e.is_empty())
                .collect(),
        }
    }
}

/// One running Codex turn, as the turn driver sees it: the notification stream through the mapper,
/// the pending `turn/start` answer, and the reconcile of a turn whose `turn/completed` never comes
/// (docs/peers/codex.md).
struct CodexTurn<'a> {
    /// The session the turn runs on (its peer events, config, unknown-method log).
    session: &'a mut CodexSession,
    /// The thread the turn runs in.
    thread_id: &'a str,
    /// Maps this turn's notifications to normalized events.
    mapper: TurnMapper,
    /// The `turn/start` request, answered after the notifications it causes may have arrived.
    start: tokio::task::JoinHandle<Result<Value, RpcError>>,
    /// Whether `start` has not answered yet.
    start_pending: bool,
    /// The turn id from the `turn/start` answer, in case `turn/started` was missed.
    started_turn: Option<String>,
    /// The thread went `idle` with our turn still open: unless `turn/completed` follows by then,
    /// ask the server how the turn ended (some releases never send it).
    reconcile_at: Option<Instant>,
    /// The `thread/turns/list` request of a running reconcile.
    reconcile: Option<tokio::task::JoinHandle<Result<ThreadTurnsListResponse, RpcError>>>,
}

impl CodexTurn<'_> {
    /// Our turn's id, once known from `turn/started` or the `turn/start` answer.
    fn turn_id(&self) -> Option<String> {
        self.mapper.turn_id().map(str::to_string).or_else(|| self.started_turn.clone())
    }

    fn on_notification(&mut self, note: ServerNotification) -> Vec<Event> {
        if let ServerNotification::Unknown { method, .. } = &note {
            if self.session.unknown_methods.insert(method.clone()) {
                tracing::debug!(%method, "ignoring a codex notification this build does not map");
            }
        }
        if let ServerNotification::ThreadStatusChanged(change) = &note {
            if change.thread_id == self.thread_id && self.reconcile.is_none() {
                self.reconcile_at = (change.status == ThreadStatus::Idle)
                    .then(|| Instant::now() + self.session.config.reconcile_after_idle);
            }
        }
        self.mapper.on_notification(&note)
    }

    fn start_reconcile(&mut self) {
        self.reconcile_at = None;
        let peer = self.session.link.peer().clone();
        let policy = self.session.config.overload_retry;
        let params = ThreadTurnsListParams {
            thread_id: self.thread_id.into(),
            limit: Some(RECONCILE_PAGE),
            ..ThreadTurnsListParams::default()
        };
        self.reconcile = Some(tokio::spawn(async move {
            retry::request_typed(&peer, policy, methods::THREAD_TURNS_LIST, Some(&params)).await
        }));
    }
}

impl NativeTurn for CodexTurn<'_> {
    async fn next(&mut self) -> Step {
        loop {
            tokio::select! {
                biased;
                event = self.session.events.recv() => match event {
                    Some(PeerEvent::Notification(note)) => {
                        let note = ServerNotification::from_raw(&note.method, note.params.as_deref());
                        return Step::Events(self.on_notification(note));
                    }
                    // A problem is logged by the peer and the stream goes on; its end fails the turn.
                    other => {
                        if let Some(why) = stream_end(other.as_ref(), "the codex app-server") {
                            return Step::Ended(self.mapper.abandon(TerminalKind::Failed, why));
                        }
                    }
                },
                answer = &mut self.start, if self.start_pending => {
                    self.start_pending = false;
                    match answer {
                        Ok(Ok(value)) => {
                            self.started_turn = serde_json::from_value::<TurnStartResponse>(value).ok().map(|r| r.turn.id);
                            // If `turn/started` was missed, the answer still pins the turn.
                            if let Some(turn_id) = &self.started_turn {
                                if !self.mapper.expect_turn(turn_id) {
                                    // The mapper adopted another turn's id: start over on this one.
                                    self.mapper = TurnMapper::new(self.thread_id);
                                    self.mapper.expect_turn(turn_id);
                                }
                            }
                        }
                        Ok(Err(error)) => {
                            return Step::Ended(self.mapper.abandon(TerminalKind::Failed, format!("turn/start failed: {error}")));
                        }
                        Err(join) => {
                            return Step::Ended(self.mapper.abandon(TerminalKind::Failed, format!("turn/start failed: {join}")));
                        }
                    }
                }
                () = tokio::time::sleep_until(self.reconcile_at.unwrap_or_else(Instant::now)),
                    if self.reconcile_at.is_some() && self.reconcile.is_none() =>
                {
                    self.start_reconcile();
                }
                listed = async { self.reconcile.as_mut().expect("guarded by is_some").await }, if self.reconcile.is_some() => {
                    self.reconcile = None;
                    let ours = self.turn_id();
                    if let Some(ended) = ended_turn(listed, ours.as_deref()) {
                        tracing::warn!(thread_id = %self.thread_id, turn_id = %ended.id, "turn/completed never came; the turn's end was read from thread/turns/list");
                        let note = ServerNotification::TurnCompleted(TurnCompletedNotification {
                            thread_id: self.thread_id.into(),
                            turn: ended,
                            extra: Default::default(),
                        });
                        return Step::Events(self.mapper.on_notification(&note));
                    }
                }
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.session.events.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        match self.turn_id() {
            Some(turn_id) => {
                self.session.send_interrupt(self.thread_id, &turn_id);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    fn on_idle_timeout(&mut self) {
        // Best effort: stop the server working on a turn nobody waits for any more.
        if let Some(turn_id) = self.turn_id() {
            self.session.send_interrupt(self.thread_id, &turn_id);
        }
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        self.mapper.abandon(kind, message)
    }

    fn is_complete(&self) -> bool {
        self.mapper.is_complete()
    }
}

/// `thread/resume` of `thread_id` under `options`, without its turns: the history stays in the
/// native thread, the bridge only needs it loaded.
fn resume_params(thread_id: &str, options: &ThreadOptions) -> ThreadResumeParams {
    ThreadResumeParams {
        cwd: options.cwd.clone(),
        model: options.model.clone(),
        approval_policy: options.approval_policy.clone(),
        sandbox: options.sandbox.clone(),
        developer_instructions: options.developer_instructions.clone(),
        config: options.config.clone(),
        exclude_turns: Some(true),
        ..ThreadResumeParams::new(thread_id)
    }
}
