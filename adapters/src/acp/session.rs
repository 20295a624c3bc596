//! One ACP agent process: the handshake with its version gate, the session (new, loaded or
//! resumed), and one turn at a time through the shared turn driver.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clawbridge_bridge::attempt::driver::stream_end;
use clawbridge_bridge::attempt::hooks::ToolTerminalObserver;
use clawbridge_bridge::attempt::{
    AttemptResult, NativeTurn, SessionHooks, Step, TurnActivity, TurnDriver, TurnLimits, TurnSink,
};
use clawbridge_bridge::backend::TurnInput;
use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::mcp::{McpLimits, McpServerHandle};
use clawbridge_bridge::rpc::{PeerConfig, PeerEvent, PeerEvents, RpcError};
use clawbridge_bridge::supervisor::{SpawnError, SpawnOptions, StopOutcome};
use clawbridge_protocol::acp::{
    AgentCapabilities, AuthenticateParams, CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapability,
    Implementation, InitializeParams, InitializeResponse, LoadSessionParams, NewSessionParams, NewSessionResponse,
    PROTOCOL_VERSION, PromptParams, PromptResponse, SessionNotification, VersionRefused, codes as acp_codes, methods,
    negotiated_version,
};
use clawbridge_protocol::host::limits::MAX_LINE_BYTES;
use clawbridge_protocol::mcp::McpServer;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::AcpConfig;
use super::fs::FsRoot;
use super::handler::{AcpRequestHandler, FsAccess};
use super::mapping::{Asked, Declined, TurnMapper};

/// The methods whose answers the peer marks in the event stream: the updates they cause come before
/// their answers, and a consumer must know it has read them all.
const MARKED: [&str; 4] =
    [methods::SESSION_NEW, methods::SESSION_LOAD, methods::SESSION_RESUME, methods::SESSION_PROMPT];

/// Why an ACP session could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The agent could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The launcher's command could not be built (docs/remote.md); nothing was started. Not retryable.
    #[error("cannot run the ACP agent through the launcher")]
    Launcher(#[from] clawbridge_bridge::remote::LauncherError),
    /// The loopback MCP server for the host's tools could not start; the child was stopped.
    #[error(transparent)]
    McpServer(#[from] clawbridge_bridge::mcp::McpServerError),
    /// The session's directory cannot be used as the root of file requests.
    #[error("the session directory {dir} cannot be used: {source}")]
    Cwd {
        /// The directory.
        dir: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The agent's protocol version is refused; the child was stopped. Not retryable.
    #[error("{refused} (agent: {agent})")]
    VersionRejected {
        /// Both versions.
        #[source]
        refused: VersionRefused,
        /// The agent's name and version, as far as it said.
        agent: String,
    },
    /// `initialize` failed or timed out; the child was stopped.
    #[error("the ACP agent's handshake failed")]
    Handshake(#[source] RpcError),
    /// The agent's `initialize` answer (of the right version) does not decode; the child was stopped.
    #[error("the ACP agent's initialize answer does not decode: {0}")]
    HandshakeAnswer(#[source] serde_json::Error),
    /// The agent needs a login the bridge was not told to use; the child was stopped.
    #[error(
        "the ACP agent requires authentication; it offers the methods [{}]; set CLAWBRIDGE_ACP_AUTH_METHOD to one of them, or configure the agent's own credentials (its environment, passed with --agent-env)",
        methods.join(", ")
    )]
    AuthRequired {
        /// The `authMethods[].id`s the agent offered.
        methods: Vec<String>,
    },
    /// The configured auth method is not among the agent's.
    #[error("the ACP agent offers no auth method `{wanted}` (it offers [{}])", offered.join(", "))]
    UnknownAuthMethod {
        /// The configured method.
        wanted: String,
        /// What the agent offers.
        offered: Vec<String>,
    },
    /// A request failed.
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

impl AcpError {
    /// Whether trying again could help (a refused version or missing login never does).
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            AcpError::VersionRejected { .. }
                | AcpError::Launcher(_)
                | AcpError::HandshakeAnswer(_)
                | AcpError::AuthRequired { .. }
                | AcpError::UnknownAuthMethod { .. }
        )
    }
}

/// A session ready for turns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionReady {
    /// Its id (kept in the binding).
    pub session_id: String,
    /// True when an earlier session was loaded or resumed.
    pub resumed: bool,
    /// Why a requested resume did not happen and a new session started (never silent).
    pub resume_failure: Option<String>,
}

/// A live ACP agent after a successful handshake.
pub struct AcpSession {
    conn: Option<AgentConnection>,
    events: PeerEvents,
    activity: Arc<TurnActivity>,
    observer: Arc<dyn ToolTerminalObserver>,
    handler: Arc<AcpRequestHandler>,
    declined: Declined,
    /// The turn's permission requests, shared with the request handler like `declined`.
    asked: Asked,
    config: AcpConfig,
    /// What the agent said it supports.
    pub capabilities: AgentCapabilities,
    /// Who the agent said it is.
    pub agent_info: Option<Implementation>,
    /// The `authMethods` it offered.
    auth_methods: Vec<String>,
    /// Whether the agent stopped answering a cancelled turn and was stopped.
    stopped: bool,
    /// The loopback MCP server offering the host's tools, when the agent takes HTTP MCP servers and
    /// there are tools; it stops with the session (dropping it stops it too).
    mcp: Option<McpServerHandle>,
}

use super::mapping::MCP_SERVER_NAME;

/// Whether the host's tools are offered over MCP: only to an agent that said it takes HTTP MCP
/// servers, and only when there are tools.
pub fn offers_mcp(capabilities: &AgentCapabilities, tool_count: usize) -> bool {
    capabilities.mcp_capabilities.http && tool_count > 0
}

impl std::fmt::Debug for AcpSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpSession").field("agent_info", &self.agent_info).finish_non_exhaustive()
    }
}

/// `name version` of an agent, for messages.
pub fn describe_agent(info: Option<&Implementation>) -> String {
    match info {
        Some(info) if !info.version.is_empty() => format!("{} {}", info.name, info.version),
        Some(info) => info.name.clone(),
        None => "an agent that sent no agentInfo".into(),
    }
}

impl AcpSession {
    /// Spawns the agent and performs `initialize` with the version gate. A refused version stops
    /// the child.
    pub async fn connect(config: AcpConfig, hooks: SessionHooks, edits_allowed: bool) -> Result<AcpSession, AcpError> {
        let root = FsRoot::new(&config.cwd)
            .map_err(|source| AcpError::Cwd { dir: config.cwd.display().to_string(), source })?;
        let activity = Arc::new(TurnActivity::default());
        let declined = Declined::default();
        let asked = Asked::default();
        let fs = FsAccess {
            root,
            edits_allowed,
            max_read_bytes: config.max_read_bytes,
            max_write_bytes: config.max_write_bytes,
        };
        let handler = AcpRequestHandler::new(
            hooks.approver.clone(),
            activity.clone(),
            config.approval_timeout,
            fs,
            declined.clone(),
            asked.clone(),
        );
        let peer_config = PeerConfig {
            request_timeout: config.request_timeout,
            handler_timeout: config.approval_timeout + Duration::from_secs(5),
            label: "acp".into(),
            write_timeout: Some(config.write_timeout),
            abort_handlers_on_close: true,
            answers_in_order: [
                methods::SESSION_NEW,
                methods::SESSION_LOAD,
                methods::SESSION_RESUME,
                methods::SESSION_PROMPT,
            ]
            .map(String::from)
            .to_vec(),
            ..PeerConfig::default()
        };
        let spawn = SpawnOptions {
            registry: config.registry.clone(),
            containment: config.containment,
            ..SpawnOptions::default()
        };
        let (command, preamble) = config.launch()?;
        let (conn, events) = AgentConnection::spawn_prefixed(&command, preamble, spawn, peer_config, handler.clone())?;
        // A remote agent's paths are the far side's: the bridge cannot serve its files from here.
        let local_files = config.remote.is_none();
        let params = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client_capabilities: ClientCapabilities {
                fs: FileSystemCapability { read_text_file: local_files, write_text_file: local_files },
                terminal: false,
            },
            client_info: Some(Implementation {
                name: "clawbridge".into(),
                title: Some("clawbridge".into()),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
        };
        let answer = match conn
            .peer()
            .request_with_timeout(methods::INITIALIZE, Some(&params), config.handshake_timeout)
            .await
        {
            Ok(answer) => answer,
            Err(error) => {
                conn.shutdown(config.stop).await;
                return Err(AcpError::Handshake(error));
            }
        };
        // The version first, from the raw answer: an agent of another version may answer in a shape
        // this decoder does not know, and must be refused for its version, not for the shape.
        let version = answer.get("protocolVersion").cloned().unwrap_or(Value::Null);
        if let Err(refused) = negotiated_version(&version) {
            let stop = conn.shutdown(config.stop).await;
            tracing::debug!(?stop, "stopped an ACP agent of a refused protocol version");
            let info = answer.get("agentInfo").and_then(|i| serde_json::from_value(i.clone()).ok());
            return Err(AcpError::VersionRejected { refused, agent: describe_agent(info.as_ref()) });
        }
        let response: InitializeResponse = match serde_json::from_value(answer) {
            Ok(response) => response,
            Err(error) => {
                conn.shutdown(config.stop).await;
                return Err(AcpError::HandshakeAnswer(error));
            }
        };
        tracing::info!(agent = %describe_agent(response.agent_info.as_ref()), "ACP agent initialized");
        let specs = hooks.tools.specs();
        let mcp = if offers_mcp(&response.agent_capabilities, specs.len()) {
            let limits = McpLimits { max_body_bytes: MAX_LINE_BYTES, tool_timeout: config.tool_timeout };
            match clawbridge_bridge::mcp::start(hooks.tools.clone(), limits, &CancellationToken::new()).await {
                Ok(handle) => {
                    handler.serve_host_tools(specs.iter().map(|spec| spec.name.clone()).collect());
                    Some(handle)
                }
                Err(error) => {
                    conn.shutdown(config.stop).await;
                    return Err(AcpError::McpServer(error));
                }
            }
        } else {
            None
        };
        Ok(AcpSession {
            mcp,
            conn: Some(conn),
            events,
            activity,
            observer: hooks.observer,
            handler,
            declined,
            asked,
            capabilities: response.agent_capabilities,
            agent_info: response.agent_info,
            auth_methods: response.auth_methods.into_iter().map(|m| m.id).collect(),
            config,
            stopped: false,
        })
    }

    fn peer(&self) -> Result<clawbridge_bridge::rpc::RpcPeer, RpcError> {
        match &self.conn {
            Some(conn) => Ok(conn.peer().clone()),
            None => Err(RpcError::NotSent { method: "session".into(), reason: "the ACP agent was stopped".into() }),
        }
    }

    /// A request made outside a turn. Updates that arrive meanwhile (a loaded session's replayed
    /// history) belong to no turn: they are dropped, never mirrored or counted.
    async fn request_outside_turn<P: serde::Serialize>(&mut self, method: &str, params: &P) -> Result<Value, RpcError> {
        let peer = self.peer()?;
        let request = peer.request(method, Some(params));
        tokio::pin!(request);
        let mut dropped = 0usize;
        let mut answer = None;
        // Done once answered and every update written before the answer was read (its mark came).
        let mut marked = !MARKED.contains(&method);
        loop {
            if let Some(answer) = answer.take_if(|a: &mut Result<Value, RpcError>| marked || !has_answer_line(a)) {
                if dropped > 0 {
                    tracing::debug!(%method, dropped, "updates outside a turn (a replayed history) were not mirrored");
                }
                return answer;
            }
            tokio::select! {
                got = &mut request, if answer.is_none() => answer = Some(got),
                event = self.events.recv() => match event {
                    Some(PeerEvent::Notification(_)) => dropped += 1,
                    Some(PeerEvent::Answered { method: answered }) if answered == method => marked = true,
                    Some(PeerEvent::Closed(_)) | None => {
                        marked = true;
                        if answer.is_none() {
                            answer = Some((&mut request).await);
                        }
                    }
                    Some(_) => {}
                },
            }
        }
    }

    /// A session request, with `authenticate` first when the agent asks for it and one was configured.
    async fn session_request<P: serde::Serialize>(&mut self, method: &str, params: &P) -> Result<Value, AcpError> {
        match self.request_outside_turn(method, params).await {
            Err(RpcError::Remote { error, .. }) if error.code == acp_codes::AUTH_REQUIRED => {
                let Some(wanted) = self.config.auth_method.clone() else {
                    return Err(AcpError::AuthRequired { methods: self.auth_methods.clone() });
                };
                if !self.auth_methods.contains(&wanted) {
                    return Err(AcpError::UnknownAuthMethod { wanted, offered: self.auth_methods.clone() });
                }
                let auth = AuthenticateParams { method_id: wanted };
                self.request_outside_turn(methods::AUTHENTICATE, &auth).await?;
                Ok(self.request_outside_turn(method, params).await?)
            }
            other => Ok(other?),
        }
    }

    /// `mcpServers` for `session/new`, `session/load` and `session/resume`.
    fn mcp_servers(&self) -> Vec<McpServer> {
        self.mcp.iter().map(|handle| handle.acp_server(MCP_SERVER_NAME)).collect()
    }

    fn cwd(&self) -> String {
        self.config.cwd.display().to_string()
    }

    /// A new session.
    pub async fn new_session(&mut self) -> Result<SessionReady, AcpError> {
        let params = NewSessionParams { cwd: self.cwd(), mcp_servers: self.mcp_servers() };
        let answer = self.session_request(methods::SESSION_NEW, &params).await?;
        let response: NewSessionResponse = serde_json::from_value(answer).map_err(|e| RpcError::NotSent {
            method: methods::SESSION_NEW.into(),
            reason: format!("the answer has no sessionId: {e}"),
        })?;
        Ok(SessionReady { session_id: response.session_id, resumed: false, resume_failure: None })
    }

    /// Continues `session_id`: `session/load` when the agent offers it (its replayed history is
    /// dropped), else `session/resume`, else a new session that names why.
    pub async fn resume_or_new(&mut self, session_id: &str) -> Result<SessionReady, AcpError> {
        let params =
            LoadSessionParams { session_id: session_id.into(), cwd: self.cwd(), mcp_servers: self.mcp_servers() };
        let method = if self.capabilities.load_session {
            methods::SESSION_LOAD
        } else if self.capabilities.session_capabilities.can_resume() {
            methods::SESSION_RESUME
        } else {
            let mut ready = self.new_session().await?;
            ready.resume_failure = Some(format!(
                "{} cannot continue a session (it offers neither session/load nor session/resume); a new session was started",
                describe_agent(self.agent_info.as_ref())
            ));
            return Ok(ready);
        };
        match self.session_request(method, &params).await {
            Ok(_) => Ok(SessionReady { session_id: session_id.into(), resumed: true, resume_failure: None }),
            Err(error) if error.is_retryable() => {
                tracing::warn!(%session_id, %error, "could not continue the ACP session; starting a new one");
                let mut ready = self.new_session().await?;
                ready.resume_failure = Some(format!("{method} failed: {error}"));
                Ok(ready)
            }
            Err(error) => Err(error),
        }
    }

    /// Runs one turn in `session_id`. Never hangs: a stalled turn ends as `timeout`, a dying agent as
    /// `failed`, and a cancel the agent does not confirm within the grace stops the agent.
    pub async fn run_turn(
        &mut self,
        session_id: &str,
        input: &TurnInput,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> AttemptResult {
        let driver = TurnDriver::new(self.observer.clone(), self.activity.clone(), sink);
        let mut mapper = TurnMapper::new(new_turn_id(session_id), self.declined.clone()).with_asked(self.asked.clone());
        // Whatever is still queued belongs to an earlier turn.
        while let Ok(stale) = self.events.try_recv() {
            if let PeerEvent::Closed(gone) = stale {
                let closing = mapper.abandon(TerminalKind::Failed, format!("the ACP agent went away: {gone}"));
                return driver.close(closing).await.finish(Some(session_id.into()));
            }
        }
        let peer = match self.peer() {
            Ok(peer) => peer,
            Err(error) => {
                let closing = mapper.abandon(TerminalKind::Failed, error.to_string());
                return driver.close(closing).await.finish(Some(session_id.into()));
            }
        };
        self.handler.begin_turn();
        let mut prompt = vec![ContentBlock::Text { text: input.text.clone() }];
        if self.capabilities.prompt_capabilities.image {
            prompt.extend(input.images.iter().map(|image| ContentBlock::Image {
                data: image.base64().to_owned(),
                mime_type: image.mime_type().to_owned(),
            }));
        }
        let params = PromptParams { session_id: session_id.into(), prompt };
        // A turn has no deadline of its own: the idle watchdog and the cancel grace bound it.
        let answer_peer = peer.clone();
        let prompt = tokio::spawn(async move {
            answer_peer
                .request_with_timeout(methods::SESSION_PROMPT, Some(&params), Duration::from_secs(86_400 * 7))
                .await
        });
        let limits = TurnLimits {
            idle: self.config.turn_idle_timeout,
            interrupt_grace: self.config.interrupt_grace,
            backend: "the ACP agent",
        };
        let mut turn = AcpTurn {
            events: &mut self.events,
            handler: &self.handler,
            peer,
            session_id,
            mapper,
            prompt,
            prompt_pending: true,
            answer: None,
            marked: false,
            announced: false,
        };
        let driven = driver.run(&mut turn, limits, cancel).await;
        let unanswered = turn.prompt_pending;
        if unanswered {
            turn.prompt.abort();
        }
        if driven.abandoned && unanswered {
            // The agent still works on a turn nobody waits for (it ignored the cancel, or hangs):
            // stop it, so nothing it does later lands anywhere.
            if let Some(conn) = self.conn.take() {
                let stop = conn.shutdown(self.config.stop).await;
                tracing::warn!(?stop, "stopped an ACP agent that did not end its turn");
                self.stopped = true;
            }
        }
        driven.finish(Some(session_id.into()))
    }

    /// The `authMethods[].id`s the agent offered in `initialize`.
    pub fn auth_methods(&self) -> &[String] {
        &self.auth_methods
    }

    /// Whether the agent was stopped because it did not end a turn.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The agent's pid (its process group), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.conn.as_ref().and_then(|c| c.process()).map(clawbridge_bridge::supervisor::ChildProcess::pid)
    }

    /// Stops the agent (stdin EOF, then signals to its group).
    pub async fn shutdown(mut self) -> Option<StopOutcome> {
        if let Some(mcp) = self.mcp.take() {
            mcp.shutdown().await;
        }
        match self.conn.take() {
            Some(conn) => Some(conn.shutdown(self.config.stop).await),
            None => None,
        }
    }
}

/// Whether an outcome came from an answer line of the agent's (so its mark in the event stream follows).
fn has_answer_line(outcome: &Result<Value, RpcError>) -> bool {
    matches!(outcome, Ok(_) | Err(RpcError::Remote { .. }))
}

/// A turn id unique across processes and sessions (transcript rows are keyed by it).
fn new_turn_id(session_id: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{session_id}-{:x}-{:x}-{n}", nanos, std::process::id())
}

/// One running ACP turn as the driver sees it.
struct AcpTurn<'a> {
    events: &'a mut PeerEvents,
    handler: &'a Arc<AcpRequestHandler>,
    peer: clawbridge_bridge::rpc::RpcPeer,
    session_id: &'a str,
    mapper: TurnMapper,
    prompt: tokio::task::JoinHandle<Result<Value, RpcError>>,
    prompt_pending: bool,
    /// The prompt's answer, held until its mark says every update before it was read.
    answer: Option<Result<Value, String>>,
    /// The answer's mark came through the event stream.
    marked: bool,
    announced: bool,
}

impl AcpTurn<'_> {
    /// The turn's end from the prompt's answer (every update before it already mapped).
    fn finish(&mut self, answer: Result<Value, String>) -> Vec<Event> {
        let decoded = answer.and_then(|value| {
            serde_json::from_value::<PromptResponse>(value)
                .map_err(|e| format!("the session/prompt answer did not decode: {e}"))
        });
        match decoded {
            Ok(answer) => self.mapper.finish(&answer),
            Err(why) => self.mapper.abandon(TerminalKind::Failed, why),
        }
    }

    fn on_event(&mut self, event: PeerEvent, out: &mut Vec<Event>) -> Option<String> {
        match event {
            PeerEvent::Notification(note) if note.method == methods::SESSION_UPDATE => {
                let note = SessionNotification::decode_raw(note.params.as_deref());
                if note.session_id.is_empty() || note.session_id == self.session_id {
                    out.extend(self.mapper.on_update(note.update));
                } else {
                    tracing::debug!(session_id = %note.session_id, "an update of another session; skipped");
                }
                None
            }
            PeerEvent::Notification(note) => {
                tracing::debug!(method = %note.method, "an ACP notification with no meaning here; skipped");
                None
            }
            other => stream_end(Some(&other), "the ACP agent"),
        }
    }
}

impl NativeTurn for AcpTurn<'_> {
    async fn next(&mut self) -> Step {
        if !self.announced {
            self.announced = true;
            return Step::Events(self.mapper.start());
        }
        loop {
            if self.marked {
                if let Some(answer) = self.answer.take() {
                    return Step::Events(self.finish(answer));
                }
            }
            tokio::select! {
                biased;
                event = self.events.recv() => {
                    let mut out = Vec::new();
                    let ended = match event {
                        Some(PeerEvent::Answered { method }) if method == methods::SESSION_PROMPT => {
                            self.marked = true;
                            None
                        }
                        Some(event) => self.on_event(event, &mut out),
                        None => Some("the stream from the ACP agent ended".into()),
                    };
                    if let Some(why) = ended {
                        out.extend(self.mapper.abandon(TerminalKind::Failed, why));
                        return Step::Ended(out);
                    }
                    if !out.is_empty() {
                        return Step::Events(out);
                    }
                }
                answer = &mut self.prompt, if self.prompt_pending => {
                    self.prompt_pending = false;
                    let answer = match answer {
                        Ok(Ok(value)) => Ok(value),
                        // The agent went away: what it wrote before going is still queued, and
                        // the stream's end (last) closes the turn naming the exit.
                        Ok(Err(RpcError::PeerGone { .. })) => continue,
                        Ok(Err(error)) => {
                            // No answer line (a timeout, a write that failed): no mark will follow.
                            if !has_answer_line(&Err(error.clone())) {
                                self.marked = true;
                            }
                            Err(format!("session/prompt failed: {error}"))
                        }
                        Err(join) => {
                            self.marked = true;
                            Err(format!("session/prompt failed: {join}"))
                        }
                    };
                    self.answer = Some(answer);
                }
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.events.is_empty()
    }

    fn on_cancel(&mut self) {
        // Pending permission questions of this turn now answer `cancelled`.
        self.handler.cancel_turn();
        self.mapper.note_host_cancel();
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        let params = CancelNotification { session_id: self.session_id.into() };
        self.peer.notify(methods::SESSION_CANCEL, Some(&params)).await.map(|()| true).map_err(|e| e.to_string())
    }

    fn on_idle_timeout(&mut self) {
        self.mapper.note_host_cancel();
        let peer = self.peer.clone();
        let params = CancelNotification { session_id: self.session_id.into() };
        tokio::spawn(async move { peer.notify(methods::SESSION_CANCEL, Some(&params)).await });
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        self.mapper.abandon(kind, message)
    }

    fn is_complete(&self) -> bool {
        self.mapper.is_complete()
    }
}
