//! One warm `claude -p --input-format stream-json --output-format stream-json` process: the version
//! gate, the `initialize` handshake, and turns, over an [`AgentConnection`] whose peer speaks the
//! control protocol ([`Dialect::ClaudeControl`]).
//!
//! - **Version gate**: `claude --version` runs before the spawn and is judged by the protocol
//!   crate's [`VersionPolicy`] (refused below the floor or when unreadable, warned above the tested
//!   version); the `initialize` answer's `claude_code_version` must name the same version (a
//!   mismatch refuses the process), and `system/init`'s is cross-checked on every turn (logged).
//! - **The peer** owns stdout (lines up to [`ClaudeConfig::max_line_bytes`], 64 MiB by default, pass
//!   intact) and stdin. Control requests never block it: each runs in its own task
//!   ([`ClaudeControlHandler`]), whose notes for the mapper (denials) are queued *before* its answer
//!   is returned to the peer, which writes it only then; the turn reads notes before lines, so they
//!   always precede the `tool_result` the answer causes. `control_cancel_request` aborts the matching
//!   task (no answer is sent). Conversation lines reach the turn loop in order, as notifications.
//! - **Turns** ([`ClaudeSession::run_turn`]): one user line, every line through the
//!   [`TurnMapper`]; the `result` ends the turn (docs/peers/claude.md#result-ends-the-turn,
//!   docs/peers/claude.md#error-results). Cancel sends the `interrupt` control request (never a
//!   signal, docs/peers/claude.md#interrupt-is-never-a-signal), whose answer nobody waits for, then
//!   waits for the `result` up to [`ClaudeConfig::interrupt_grace`]; past it, or past the idle
//!   watchdog, the turn is abandoned and the process group is stopped, so a late `result` can never
//!   be taken for the next turn's. A dying process ends the turn as `failed`, with its exit status
//!   and stderr tail.
//! - **Warm process**: the next turn reuses the process; when it is gone (stopped, crashed) the next
//!   turn spawns a new one with `--resume <session id>`.
//! - **Resume only what exists**: before any `--resume` (configured or a respawn) the CLI's own
//!   session file is looked up ([`ClaudeConfig::session_file`]); when it is gone the process starts
//!   a fresh session and [`ClaudeSession::resume_failure`] names why
//!   (docs/peers/claude.md#missing-session-file).

use std::sync::Arc;
use std::time::Duration;

pub use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::driver::stream_end;
use clawbridge_bridge::attempt::hooks::{Approver, HostTools, ToolTerminalObserver, UserInputAsker};
use clawbridge_bridge::attempt::{AttemptResult, NativeTurn, Step, TurnActivity, TurnDriver, TurnLimits, TurnSink};
use clawbridge_bridge::backend::{NativeIdListener, TurnInput};
use clawbridge_bridge::binding::InvalidationReason;
use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::events::{Event, TerminalCause, TerminalKind};
use clawbridge_bridge::probe::{ProbeError, VersionProbe};
use clawbridge_bridge::rpc::{PeerConfig, PeerEvent, PeerEvents, RpcError};
use clawbridge_bridge::supervisor::{SpawnError, SpawnOptions, StopOutcome};
use clawbridge_protocol::claude::version::{Version, same_version};
use clawbridge_protocol::claude::{
    CliMessage, InitializeRequest, InitializeResponse, InterruptRequest, SystemMessage, VersionRejected,
};
use clawbridge_protocol::jsonrpc::Dialect;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::config::ClaudeConfig;
use super::handler::{ClaudeControlHandler, ControlNote};
use super::mapping::TurnMapper;
use super::questions::{self, SharedAsker};
use super::steering::SteerGate;

/// Lines queued from the peer to the turn loop (a full queue applies backpressure to the CLI).
const INBOUND_CAPACITY: usize = 1024;

/// How long the interrupt may wait for room in the writer's queue: a CLI that stopped reading
/// fills it, and the turn's grace must still be what ends such a turn.
const INTERRUPT_QUEUE_LIMIT: Duration = Duration::from_secs(2);
/// Lines queued for the CLI's stdin.
const OUTBOUND_CAPACITY: usize = 64;
/// Notes queued from the control handlers to the turn loop (a full queue makes a handler wait).
const NOTES_CAPACITY: usize = 256;
/// How much longer than its own deadlines a control handler may take before the peer answers for it.
const HANDLER_BACKSTOP: Duration = Duration::from_secs(5);

/// Why a Claude session could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaudeError {
    /// The CLI could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    /// The launcher's command could not be built (docs/remote.md); nothing was started. Not retryable.
    #[error("cannot run claude through the launcher")]
    Launcher(#[from] clawbridge_bridge::remote::LauncherError),
    /// `claude --version` could not be run, failed, or did not finish in time.
    #[error(transparent)]
    VersionCheck(#[from] ProbeError),
    /// The CLI's version is refused; nothing was spawned. Not retryable.
    #[error("{rejected} (`claude --version` printed {output:?})")]
    VersionRejected {
        /// Why, naming found and required versions.
        #[source]
        rejected: VersionRejected,
        /// What `--version` printed (trimmed).
        output: String,
    },
    /// The running CLI reports another version than `claude --version` did (a swapped binary or a
    /// wrapper running another CLI); the process was stopped. Not retryable.
    #[error("`claude --version` said {expected}, but the running CLI reports {reported:?}")]
    VersionMismatch {
        /// What `--version` said.
        expected: Version,
        /// What the CLI reported in band.
        reported: String,
    },
    /// `initialize` failed or timed out; the process was stopped.
    #[error("the claude initialize handshake failed")]
    Handshake(#[source] RpcError),
    /// The private `--mcp-config` file of the user's MCP servers could not be written; nothing was
    /// started.
    #[error("cannot write the MCP server config for claude")]
    McpConfig(#[source] std::io::Error),
    /// A control request outside a turn (`mcp_status`) failed or timed out.
    #[error("claude did not answer {subtype}")]
    Control {
        /// The request's subtype.
        subtype: &'static str,
        /// Why.
        #[source]
        source: RpcError,
    },
    /// A handshake or turn was asked of a session whose CLI process is not running (a bug in the
    /// caller's order, reported rather than panicking).
    #[error("no claude process is running for this session")]
    NotRunning,
    /// `/compact` in the session ended without a `compact_boundary` (the CLI refused or failed to
    /// compact, or did not end within its limit); the text says what the CLI answered.
    #[error("claude code did not compact the session: {0}")]
    Compaction(String),
}

impl ClaudeError {
    /// Whether trying again could help (a version refusal never does).
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            ClaudeError::VersionRejected { .. } | ClaudeError::VersionMismatch { .. } | ClaudeError::Launcher(_)
        )
    }
}

/// A running CLI process and what it sends.
struct Live {
    /// The process (its own group) and the control-protocol peer on its stdio.
    conn: AgentConnection,
    /// Conversation lines in order, then the end of the stream.
    events: PeerEvents,
    /// What this process's control answers mean for the turn, each queued before its answer was
    /// written. Per process, so nothing a stopped process's handler still queues reaches a later one.
    notes: mpsc::Receiver<ControlNote>,
    /// The private `--mcp-config` file of the user's MCP servers, removed when the process is.
    _mcp_file: Option<tempfile::NamedTempFile>,
}

/// A Claude Code CLI session: one warm process (respawned with `--resume` when it is gone) after a
/// passed version gate and `initialize` handshake.
pub struct ClaudeSession {
    /// Launch settings and deadlines.
    config: ClaudeConfig,
    /// Receives tool terminals.
    observer: Arc<dyn ToolTerminalObserver>,
    /// Decides the CLI's `can_use_tool` requests.
    approver: Arc<dyn Approver>,
    /// Host tools, served over SDK MCP when there are any.
    tools: Arc<dyn HostTools>,
    /// What the control handlers saw.
    activity: Arc<TurnActivity>,
    /// Who answers the agent's questions (`AskUserQuestion`), for every process of the session.
    user_input: SharedAsker,
    /// The CLI's version, from `claude --version`.
    version: Version,
    /// The SDK MCP server host tools are served as, when there are host tools.
    host_server: Option<String>,
    /// The current process, if any.
    live: Option<Live>,
    /// The native session id (the `--resume` handle), once known.
    session_id: Option<String>,
    /// Why the last resume was not tried (its session file was gone), if it was not.
    resume_failure: Option<InvalidationReason>,
    /// Processes spawned so far.
    spawns: usize,
    /// Turns started so far.
    turns: u64,
    /// Prefix of the turn ids used when the CLI names no turn (`system/init`'s `uuid`): unique per
    /// session object, so ids never repeat across restarts.
    fallback_turn_base: String,
    /// Lets steered user lines into the running turn (docs/peers/claude.md#steering).
    steer_gate: Arc<SteerGate>,
    /// The model set the last `initialize` answer offered (its `/model` picker's choices).
    models: Vec<clawbridge_bridge::native_ops::NativeModel>,
}

impl std::fmt::Debug for ClaudeSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaudeSession").finish_non_exhaustive()
    }
}
impl ClaudeSession {
    /// Checks the CLI's version, spawns it and performs the `initialize` handshake. A refused version
    /// spawns nothing; a failed handshake stops the process.
    pub async fn connect(config: ClaudeConfig, hooks: SessionHooks) -> Result<ClaudeSession, ClaudeError> {
        let version = check_version(&config, &VersionProbe::in_memory()).await?;
        let host_server = (!hooks.tools.specs().is_empty()).then(|| config.host_mcp_server.clone());
        let resume = config.resume.clone();
        let mut session = ClaudeSession {
            config,
            observer: hooks.observer,
            approver: hooks.approver,
            tools: hooks.tools,
            activity: Arc::new(TurnActivity::default()),
            user_input: questions::nobody(),
            version,
            host_server,
            live: None,
            session_id: resume.clone(),
            resume_failure: None,
            spawns: 0,
            turns: 0,
            fallback_turn_base: fallback_turn_base(),
            steer_gate: Arc::new(SteerGate::default()),
            models: Vec::new(),
        };
        session.spawn(resume.as_deref()).await?;
        Ok(session)
    }

    /// The models the CLI's `initialize` answer offered (docs/peers/claude.md#the-model-set).
    pub fn models(&self) -> &[clawbridge_bridge::native_ops::NativeModel] {
        &self.models
    }

    /// The CLI's MCP servers and their tools, as its `mcp_status` control request answers
    /// (docs/peers/claude.md#mcp_status), between turns.
    pub async fn mcp_status(&mut self) -> Result<Vec<clawbridge_bridge::native_ops::NativeMcpServer>, ClaudeError> {
        let Some(live) = self.live.as_mut() else {
            return Err(ClaudeError::NotRunning);
        };
        let request = serde_json::json!({});
        let answer = live
            .conn
            .peer()
            .request_with_timeout("mcp_status", Some(&request), self.config.handshake_timeout)
            .await
            .map_err(|source| ClaudeError::Control { subtype: "mcp_status", source })?;
        Ok(super::native_ops::mcp_servers_of(&answer))
    }

    /// The CLI's version (from `claude --version`).
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The current process's pid (its process group), if one runs.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().and_then(|live| live.conn.process()).map(clawbridge_bridge::supervisor::ChildProcess::pid)
    }

    /// How many CLI processes this session has spawned (1 while the first stays warm).
    pub fn spawn_count(&self) -> usize {
        self.spawns
    }

    /// The gate a [`ClaudeSteering`](super::steering::ClaudeSteering) handle steers through.
    pub fn steer_gate(&self) -> Arc<SteerGate> {
        self.steer_gate.clone()
    }

    /// The native session id (the `--resume` handle), once the CLI named it.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Why the last resume was not tried and a fresh session started instead (the CLI's session
    /// file was gone); `None` when every resume so far was tried.
    pub fn resume_failure(&self) -> Option<&InvalidationReason> {
        self.resume_failure.as_ref()
    }

    /// The answerer of one process's control requests, queueing its notes to `notes`.
    fn control_handler(&self, notes: mpsc::Sender<ControlNote>) -> Arc<ClaudeControlHandler> {
        let (approver, activity, approval_timeout) =
            (self.approver.clone(), self.activity.clone(), self.config.approval_timeout);
        match &self.host_server {
            Some(server) => ClaudeControlHandler::with_host_tools(
                approver,
                activity,
                approval_timeout,
                self.tools.clone(),
                server.clone(),
                self.config.tool_timeout,
                notes,
            ),
            None => ClaudeControlHandler::new(approver, activity, approval_timeout, notes),
        }
        .answering_questions_with(self.user_input.clone())
    }

    /// Who answers the agent's questions from now on (by default nobody: the model is told so).
    pub fn answer_user_input_with(&self, asker: Arc<dyn UserInputAsker>) {
        questions::set(&self.user_input, asker);
    }

    /// Spawns a process (continuing `resume` when its session file exists, else a fresh session) and
    /// performs the handshake.
    async fn spawn(&mut self, resume: Option<&str>) -> Result<(), ClaudeError> {
        let resume = match resume.map(|id| (id, self.config.session_file(id))) {
            Some((id, Ok(_))) => Some(id),
            Some((_, Err(reason))) => {
                tracing::warn!(%reason, "not resuming; starting a fresh claude session");
                self.resume_failure = Some(reason);
                self.session_id = None;
                None
            }
            None => None,
        };
        let host_tools = self.host_server.is_some();
        let mcp_file = match self.config.mcp_config(host_tools) {
            Some(_) if self.config.remote.is_some() => {
                tracing::warn!(
                    "the user's MCP servers are not given to a claude run through a launcher (the file is local)"
                );
                None
            }
            Some(servers) => Some(super::mcp::write_config(&servers).map_err(ClaudeError::McpConfig)?),
            None => None,
        };
        let (spec, preamble) =
            self.config.launch(resume, host_tools, mcp_file.as_ref().map(tempfile::NamedTempFile::path))?;
        let options = SpawnOptions {
            registry: self.config.registry.clone(),
            containment: self.config.containment,
            ..SpawnOptions::default()
        };
        let peer = PeerConfig {
            dialect: Dialect::ClaudeControl,
            max_line_bytes: self.config.max_line_bytes,
            request_timeout: self.config.handshake_timeout,
            // The handler applies the approval and tool deadlines itself; this is the backstop.
            handler_timeout: self.config.approval_timeout.max(self.config.tool_timeout) + HANDLER_BACKSTOP,
            outgoing_queue: OUTBOUND_CAPACITY,
            event_queue: INBOUND_CAPACITY,
            label: "claude".into(),
            // Once stdout ends nobody reads an answer: a handler still asking a person stops.
            abort_handlers_on_close: true,
            // A CLI that stops reading its stdin must fail the turn, not hang it.
            write_timeout: Some(self.config.write_timeout),
            ..PeerConfig::default()
        };
        let (notes_tx, notes) = mpsc::channel(NOTES_CAPACITY);
        let handler = self.control_handler(notes_tx);
        let (conn, events) = AgentConnection::spawn_prefixed(&spec, preamble, options, peer, handler)?;
        self.spawns += 1;
        self.live = Some(Live { conn, events, notes, _mcp_file: mcp_file });
        match self.initialize().await {
            Ok(()) => Ok(()),
            Err(error) => {
                self.stop_live().await;
                Err(error)
            }
        }
    }

    /// Sends `initialize` and waits for its answer (the peer answers the CLI's own requests
    /// meanwhile), then cross-checks the reported version.
    async fn initialize(&mut self) -> Result<(), ClaudeError> {
        let Some(live) = self.live.as_mut() else {
            return Err(ClaudeError::NotRunning);
        };
        let peer = live.conn.peer().clone();
        let timeout = self.config.handshake_timeout;
        let params = InitializeRequest::default();
        let request = peer.request_with_timeout("initialize", Some(&params), timeout);
        tokio::pin!(request);
        let mut reading = true;
        let answer = loop {
            tokio::select! {
                answer = &mut request => break answer,
                // Nothing of a turn runs yet: lines before the answer carry nothing we need, but they
                // are read, or a full queue would stop the peer reading the answer.
                event = live.events.recv(), if reading => match event {
                    Some(event) => tracing::trace!(?event, "line before the initialize answer"),
                    None => reading = false,
                },
            }
        };
        let answer = answer.map_err(ClaudeError::Handshake)?;
        // The answer also holds `account` (personal data): only the version is read, nothing logged.
        let response: InitializeResponse = serde_json::from_value(answer).unwrap_or_default();
        self.models = response.extra.get("models").map(super::native_ops::models_of).unwrap_or_default();
        match response.claude_code_version {
            Some(reported) if !same_version(&self.version, &reported) => {
                Err(ClaudeError::VersionMismatch { expected: self.version.clone(), reported })
            }
            Some(_) => Ok(()),
            None => {
                tracing::warn!("the CLI's initialize answer names no claude_code_version; relying on --version");
                Ok(())
            }
        }
    }

    /// Makes sure a live process is there: drops what the old one left queued between turns, and
    /// respawns (with `--resume`) when it is gone.
    async fn ensure_live(&mut self) -> Result<(), ClaudeError> {
        if let Some(live) = self.live.as_mut() {
            let mut gone =
                live.conn.process().is_some_and(|p| p.try_exit().is_some()) || live.conn.peer().gone().is_some();
            while let Ok(stale) = live.events.try_recv() {
                match stale {
                    PeerEvent::Closed(why) => {
                        tracing::warn!(%why, "the claude process went away between turns");
                        gone = true;
                    }
                    other => tracing::debug!(?other, "line between turns"),
                }
            }
            while let Ok(note) = live.notes.try_recv() {
                tracing::debug!(?note, "control note between turns");
            }
            if !gone {
                return Ok(());
            }
            self.stop_live().await;
        }
        let resume = self.session_id.clone();
        self.spawn(resume.as_deref()).await
    }

    /// Runs one turn: writes `prompt` as a user line, passes every normalized event to `sink` as it
    /// happens and every tool terminal to the observer (once each, before the result). The `result`
    /// line ends the turn. Cancelling `cancel` interrupts it (in band); a process that dies ends it
    /// as `failed`; one that stops making progress ends it as `timeout` — never a hang. The process
    /// stays warm for the next turn unless the turn had to be abandoned.
    pub async fn run_turn(
        &mut self,
        prompt: &str,
        mut sink: &mut (dyn FnMut(&Event) + Send),
        cancel: &CancellationToken,
    ) -> Result<AttemptResult, ClaudeError> {
        self.run_turn_with(&TurnInput::text(prompt), None, &mut sink, cancel).await
    }

    /// [`run_turn`](Self::run_turn) with a whole turn input (images as `image` blocks of the user
    /// line, the thinking level as the budget set just before it) and a listener told the session
    /// id as soon as `system/init` names it (docs/peers/claude.md#turn-input).
    pub async fn run_turn_with(
        &mut self,
        input: &TurnInput,
        on_native_id: Option<&NativeIdListener>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<AttemptResult, ClaudeError> {
        self.ensure_live().await?;
        self.turns += 1;
        let mut mapper = TurnMapper::new(format!("{}-turn-{}", self.fallback_turn_base, self.turns));
        if let Some(server) = &self.host_server {
            mapper = mapper.with_host_mcp_server(server.clone());
        }
        let limits = TurnLimits {
            idle: self.config.turn_idle_timeout,
            interrupt_grace: self.config.interrupt_grace,
            backend: "claude",
        };
        let driver = TurnDriver::new(self.observer.clone(), self.activity.clone(), sink);
        let Some(live) = self.live.as_mut() else {
            return Err(ClaudeError::NotRunning);
        };
        if let Some((level, (subtype, request))) =
            input.think_level.and_then(|level| Some((level, super::input::thinking_request(level)?)))
        {
            let answer =
                live.conn.peer().request_with_timeout(subtype, Some(&request), self.config.handshake_timeout).await;
            if let Err(error) = answer {
                tracing::warn!(%error, ?level, "claude did not take the thinking level; the turn runs at its default");
            }
        }
        let prompt_sent = live.conn.peer().notify("user", Some(&super::input::user_line(input))).await;
        let (driven, mapper) = if let Err(error) = prompt_sent {
            let closing = mapper.abandon(TerminalKind::Failed, format!("cannot write the prompt to claude: {error}"));
            (driver.close(closing).await, mapper)
        } else {
            self.steer_gate.open(live.conn.peer().clone());
            let gate = &self.steer_gate;
            let answer_timeout = self.config.handshake_timeout;
            let mut turn = ClaudeTurn {
                live,
                mapper,
                version: &self.version,
                turn_begun: false,
                on_native_id,
                gate,
                answer_timeout,
            };
            let driven = driver.run(&mut turn, limits, cancel).await;
            self.steer_gate.close();
            (driven, turn.mapper)
        };
        if let Some(id) = mapper.session_id() {
            self.session_id = Some(id.to_owned());
        }
        // An abandoned turn may still be running in the process, and its late `result` must never
        // be taken for the next turn's: the process is stopped (the next turn resumes the session).
        if driven.abandoned {
            let outcome = self.stop_live().await;
            tracing::debug!(?outcome, "stopped the claude process of an abandoned turn");
        }
        Ok(driven.finish(self.session_id.clone()))
    }

    /// Stops the current process, if any (staged: stdin EOF, then signals to its group). Its
    /// handlers still running are aborted by the peer once stdout ends; notes they might still queue
    /// go nowhere.
    async fn stop_live(&mut self) -> Option<StopOutcome> {
        let live = self.live.take()?;
        drop(live.notes);
        Some(live.conn.shutdown(self.config.stop).await)
    }

    /// Stops the process (staged: stdin EOF, then SIGTERM and SIGKILL to its group). `None` when no
    /// process was running.
    pub async fn shutdown(mut self) -> Option<StopOutcome> {
        self.stop_live().await
    }
}

/// A prefix no other session object of any bridge process is likely to use: pid and start time.
fn fallback_turn_base() -> String {
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("clawbridge-{}-{}", std::process::id(), started.as_nanos())
}

/// Runs `claude --version` through `versions` (same environment as the session, never a secret in
/// argv) and judges it by the configured version gate.
pub async fn check_version(config: &ClaudeConfig, versions: &VersionProbe) -> Result<Version, ClaudeError> {
    let text = versions.version_output(&config.probe_command(), config.version_timeout, config.containment).await?;
    let shown = (!text.is_empty()).then_some(text.as_str());
    match config.version_policy.check_cli_output(shown) {
        Ok(verdict) => {
            if let Some(warning) = verdict.warning("Claude Code CLI") {
                tracing::warn!("{warning}");
            }
            Ok(verdict.found().clone())
        }
        Err(rejected) => Err(ClaudeError::VersionRejected { rejected, output: text }),
    }
}

/// One running Claude turn, as the turn driver sees it: the peer's conversation lines through the
/// mapper, the control answers' notes, and the in-band interrupt (docs/peers/claude.md).
struct ClaudeTurn<'a> {
    /// The process the turn runs in.
    live: &'a mut Live,
    /// Maps the turn's lines to normalized events.
    mapper: TurnMapper,
    /// The CLI's version from `claude --version`, cross-checked against `system/init`.
    version: &'a Version,
    /// An interrupt sent before the turn began is accepted but does nothing, so it waits for the
    /// turn's first line (docs/peers/claude.md#interrupt-before-the-turn-began).
    turn_begun: bool,
    /// Told the session id the moment `system/init` names it.
    on_native_id: Option<&'a NativeIdListener>,
    /// Says whether a `result` ends the turn or a steered line's part follows.
    gate: &'a SteerGate,
    /// How long the interrupt's answer is waited for (in its own task, for the log only).
    answer_timeout: Duration,
}

impl ClaudeTurn<'_> {
    fn on_note(&mut self, note: ControlNote) {
        match note {
            ControlNote::Denied { tool_use_id, message } => self.mapper.note_denied(&tool_use_id, message),
            ControlNote::InterruptRequested => self.mapper.note_interrupt_requested(),
        }
    }
}

impl NativeTurn for ClaudeTurn<'_> {
    async fn next(&mut self) -> Step {
        loop {
            tokio::select! {
                // Notes first: one queued before its answer was written must reach the mapper before
                // the line that answer caused, which can only have been read after it.
                biased;
                Some(note) = self.live.notes.recv() => self.on_note(note),
                // A steered part the turn waits for will never come: end now, with why, rather
                // than wait for the watchdog (the CLI's stdin is broken; the process is stopped).
                why = self.gate.lost() => {
                    self.mapper.drop_continuations();
                    let mut closing = self.mapper.abandon(TerminalKind::Failed, why);
                    for event in &mut closing {
                        if let Event::TurnTerminal(terminal) = event {
                            terminal.cause.get_or_insert(TerminalCause::BackendError);
                        }
                    }
                    return Step::Ended(closing);
                }
                event = self.live.events.recv() => match event {
                    Some(PeerEvent::Notification(line)) => {
                        self.turn_begun = true;
                        let message = line.params.as_deref().map_or_else(|| CliMessage::from_value(serde_json::Value::Null), CliMessage::from_raw);
                        if matches!(message, CliMessage::Result(_)) && self.gate.on_result() {
                            self.mapper.expect_continuation();
                        }
                        if let CliMessage::System(SystemMessage::Init(init)) = &message {
                            if let (Some(listener), Some(id)) = (self.on_native_id, init.session_id.as_deref()) {
                                listener(id);
                            }
                            match &init.claude_code_version {
                                Some(reported) if !same_version(self.version, reported) => tracing::warn!(
                                    expected = %self.version, %reported,
                                    "system/init names another CLI version than `claude --version`"
                                ),
                                _ => {}
                            }
                        }
                        return Step::Events(self.mapper.on_message(&message));
                    }
                    // A problem is logged by the peer and the stream goes on; its end fails the turn.
                    other => {
                        if let Some(why) = stream_end(other.as_ref(), "the claude process") {
                            return Step::Ended(self.mapper.abandon(TerminalKind::Failed, why));
                        }
                    }
                },
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.live.events.is_empty() || !self.live.notes.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        if !self.turn_begun {
            return Ok(false);
        }
        let peer = self.live.conn.peer().clone();
        if let Some(gone) = peer.gone() {
            return Err(format!("the claude process went away: {gone}"));
        }
        // Steered lines still queued are dropped with the turn, so no `result` of theirs follows.
        let dropped = self.gate.drop_pending() + self.mapper.pending_continuations();
        self.mapper.drop_continuations();
        let request = InterruptRequest { cancel_queued: (dropped > 0).then_some(true), ..InterruptRequest::default() };
        // The line is queued here, before the turn can end, so it reaches the CLI ahead of the
        // next turn's prompt. The turn's `result` line ends the turn; the answer only says whether
        // the CLI took the interrupt, so nobody waits for it.
        // Queuing waits for room in the writer's queue; a CLI that stopped reading must not hold
        // the driver here past its grace (the driver then reads on to the stream's end).
        let queued = tokio::time::timeout(
            INTERRUPT_QUEUE_LIMIT,
            peer.send_request("interrupt", Some(&request), self.answer_timeout),
        );
        let answer = match queued.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(error)) => return Err(format!("cannot write the interrupt to claude: {error}")),
            Err(_) => return Err(format!("the interrupt could not be queued for claude in {INTERRUPT_QUEUE_LIMIT:?}")),
        };
        tokio::spawn(async move {
            match answer.await {
                Ok(_) => tracing::debug!("claude accepted the interrupt"),
                Err(error) => tracing::debug!(%error, "claude did not confirm the interrupt"),
            }
        });
        Ok(true)
    }

    fn on_cancel(&mut self) {
        self.mapper.note_interrupt_requested();
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        self.mapper.abandon(kind, message)
    }

    fn is_complete(&self) -> bool {
        self.mapper.is_complete()
    }
}

#[cfg(test)]
mod tests {
    use clawbridge_bridge::rpc::RejectAll;
    use clawbridge_bridge::supervisor::{CommandSpec, StopPolicy};
    use clawbridge_protocol::claude::UserLine;

    use super::*;

    /// The interrupt's line reaches the CLI before the next turn's prompt, however soon after the
    /// interrupt that prompt is written (the turn can end at once on a `result` already queued).
    #[tokio::test]
    async fn the_interrupt_line_is_written_before_the_next_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("stdin");
        // A stand-in CLI that keeps every line it is given (shell builtins only).
        let keep = "while IFS= read -r line; do printf '%s\\n' \"$line\"; done > \"$0\"";
        let spec = CommandSpec::new("/bin/sh").args(["-c".as_ref(), keep.as_ref(), copy.as_os_str()]);
        let config = PeerConfig { dialect: Dialect::ClaudeControl, ..PeerConfig::default() };
        let (conn, events) =
            AgentConnection::spawn(&spec, SpawnOptions::default(), config, Arc::new(RejectAll)).expect("sh starts");
        let (_notes_tx, notes) = mpsc::channel(1);
        let mut live = Live { conn, events, notes, _mcp_file: None };
        let gate = SteerGate::default();
        let version = Version::new(2, 1, 328);
        let mut turn = ClaudeTurn {
            live: &mut live,
            mapper: TurnMapper::new("t"),
            version: &version,
            turn_begun: true,
            on_native_id: None,
            gate: &gate,
            answer_timeout: Duration::from_secs(1),
        };
        assert_eq!(turn.interrupt().await, Ok(true));
        live.conn.peer().notify("user", Some(&UserLine::text("the next prompt"))).await.unwrap();
        let mut lines = Vec::new();
        for _ in 0..1000 {
            lines = std::fs::read_to_string(&copy).unwrap_or_default().lines().map(str::to_owned).collect();
            if lines.len() >= 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        live.conn.shutdown(StopPolicy::default()).await;
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("\"interrupt\""), "the interrupt first: {lines:?}");
        assert!(lines[1].contains("the next prompt"), "{lines:?}");
    }

    /// A stand-in CLI that reads nothing and keeps its stdout open, its writer stuck on one line
    /// and its queue (of one) full with another, so the next write waits. The notes' sender is
    /// returned so the channel stays open, as under a live handler.
    async fn a_cli_that_stopped_reading() -> (Live, mpsc::Sender<ControlNote>) {
        let spec = CommandSpec::new("/bin/sh").args(["-c", "exec sleep 600"]);
        let config = PeerConfig {
            dialect: Dialect::ClaudeControl,
            outgoing_queue: 1,
            write_timeout: None,
            ..PeerConfig::default()
        };
        let (conn, events) =
            AgentConnection::spawn(&spec, SpawnOptions::default(), config, Arc::new(RejectAll)).expect("sh starts");
        let peer = conn.peer().clone();
        for filler in ["x".repeat(1 << 20), "y".into()] {
            peer.notify("user", Some(&UserLine::text(&filler))).await.unwrap();
        }
        let (notes_tx, notes) = mpsc::channel(1);
        (Live { conn, events, notes, _mcp_file: None }, notes_tx)
    }

    /// A CLI that stops reading fills the writer's queue: the interrupt gives up queuing its line
    /// in bounded time instead of holding the driver (and its grace) forever.
    #[tokio::test]
    async fn an_interrupt_to_a_cli_that_stopped_reading_does_not_hold_the_turn() {
        let (mut live, _notes) = a_cli_that_stopped_reading().await;
        let gate = SteerGate::default();
        let version = Version::new(2, 1, 328);
        let mut turn = ClaudeTurn {
            live: &mut live,
            mapper: TurnMapper::new("t"),
            version: &version,
            turn_begun: true,
            on_native_id: None,
            gate: &gate,
            answer_timeout: Duration::from_secs(600),
        };
        let sent = tokio::time::timeout(Duration::from_secs(60), turn.interrupt()).await;
        let sent = sent.expect("the interrupt does not wait for a CLI that stopped reading");
        assert!(sent.is_err(), "{sent:?}");
        live.conn.shutdown(StopPolicy { after_stdin_close: Duration::ZERO, ..StopPolicy::default() }).await;
    }

    /// A steered line is counted, the turn reads a `result` and so waits for that line's part, and
    /// then the line cannot be written: the turn ends at once, naming why, instead of waiting for
    /// a part that never comes.
    #[tokio::test]
    async fn a_steered_line_lost_while_the_turn_waits_for_it_ends_the_turn_with_the_cause() {
        let (mut live, _notes) = a_cli_that_stopped_reading().await;
        let peer = live.conn.peer().clone();
        let gate = Arc::new(SteerGate::default());
        gate.open(peer.clone());
        let steer = tokio::spawn({
            let gate = gate.clone();
            async move { gate.steer("also this").await }
        });
        tokio::task::yield_now().await;
        let version = Version::new(2, 1, 328);
        let mut turn = ClaudeTurn {
            live: &mut live,
            mapper: TurnMapper::new("t"),
            version: &version,
            turn_begun: true,
            on_native_id: None,
            gate: &gate,
            answer_timeout: Duration::from_secs(1),
        };
        // The steer ran up to its waiting write (one thread: the yield let it), so its line is
        // counted; this is what `next` does on a `result` then.
        assert!(gate.on_result(), "the steered line is counted");
        turn.mapper.expect_continuation();
        peer.close();
        let step = tokio::time::timeout(Duration::from_secs(30), turn.next()).await.expect("the turn ends");
        let Step::Ended(closing) = step else { panic!("the turn ends: {step:?}") };
        let terminal = closing.iter().find_map(|e| match e {
            Event::TurnTerminal(t) => Some(t.clone()),
            _ => None,
        });
        let terminal = terminal.expect("a terminal");
        assert_eq!(terminal.kind, TerminalKind::Failed);
        assert!(terminal.message.as_deref().unwrap_or_default().contains("steered line could not be written"));
        assert!(steer.await.unwrap().is_err());
        live.conn.shutdown(StopPolicy { after_stdin_close: Duration::ZERO, ..StopPolicy::default() }).await;
    }
}
