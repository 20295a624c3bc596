//! One warm `claude -p --input-format stream-json --output-format stream-json` process: the version
//! gate, the `initialize` handshake, the stdout reader with its control-request handling, and turns.
//!
//! - **Version gate**: `claude --version` runs before the spawn and is judged by the protocol
//!   crate's [`VersionPolicy`] (refused below the floor or when unreadable, warned above the tested
//!   version); the `initialize` answer's `claude_code_version` must name the same version (a
//!   mismatch refuses the process), and `system/init`'s is cross-checked on every turn (logged).
//! - **One reader task** owns stdout (lines up to [`ClaudeConfig::max_line_bytes`], 64 MiB by default,
//!   pass intact). Control requests never block it: each runs in its own task
//!   ([`ClaudeControlHandler`]), whose notes for the mapper (denials) are queued *before* its answer is
//!   written, so they always precede the `tool_result` the answer causes. `control_cancel_request`
//!   aborts the matching task (no answer is sent). Conversation lines go, in order, to the turn loop.
//! - **Turns** ([`ClaudeSession::run_turn`]): one user line, every line through the
//!   [`TurnMapper`]; the `result` ends the turn (lessons A2, H3). Cancel sends the enveloped
//!   `interrupt` control request (never a signal, lessons H4), then waits for the `result` up to
//!   [`ClaudeConfig::interrupt_grace`]; past it, or past the idle watchdog, the turn is abandoned and
//!   the process group is stopped, so a late `result` can never be taken for the next turn's. A dying
//!   process ends the turn as `failed`.
//! - **Warm process**: the next turn reuses the process; when it is gone (stopped, crashed) the next
//!   turn spawns a new one with `--resume <session id>`.
//! - **Resume only what exists**: before any `--resume` (configured or a respawn) the CLI's own
//!   session file is looked up ([`ClaudeConfig::session_file`]); when it is gone the process starts
//!   a fresh session and [`ClaudeSession::resume_failure`] names why (lessons H2).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::ToolTerminalObserver;
use clawbridge_bridge::attempt::{AttemptResult, NativeTurn, Step, TurnActivity, TurnDriver, TurnLimits};
use clawbridge_bridge::binding::InvalidationReason;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::probe::{ProbeError, VersionProbe};
use clawbridge_bridge::supervisor::{ChildProcess, ExitWatch, SpawnError, SpawnOptions, StopOutcome};
use clawbridge_bridge::transport::{Frame, LineSender, frame_reader, spawn_line_writer};
use clawbridge_protocol::claude::version::{Version, same_version};
use clawbridge_protocol::claude::{
    CliMessage, ControlRequest, ControlResponse, ControlResponseBody, InitializeResponse, SystemMessage, UserLine,
    VersionRejected,
};
use futures::StreamExt;
use serde_json::Value;
use tokio::process::ChildStdout;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::config::ClaudeConfig;
use super::handler::{ClaudeControlHandler, ControlNote};
use super::mapping::TurnMapper;

/// Lines queued from the reader to the turn loop (a full queue applies backpressure to the CLI).
const INBOUND_CAPACITY: usize = 1024;
/// Lines queued for the CLI's stdin.
const OUTBOUND_CAPACITY: usize = 64;
/// How long the reader waits for the exit status and stderr when stdout closes.
const EXIT_REPORT: Duration = Duration::from_secs(2);
/// How much of the stderr tail goes into a "process went away" message.
const STDERR_IN_MESSAGE: usize = 1000;

/// Why a Claude session could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClaudeError {
    /// The CLI could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
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
    #[error("the claude initialize handshake failed: {0}")]
    Handshake(String),
}

impl ClaudeError {
    /// Whether trying again could help (a version refusal never does).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, ClaudeError::VersionRejected { .. } | ClaudeError::VersionMismatch { .. })
    }
}

/// What the reader hands the turn loop, in order.
#[derive(Debug)]
enum Inbound {
    /// A conversation line (control traffic is handled by the reader).
    Message(Box<CliMessage>),
    /// What a control answer means for the turn, queued before the answer is written.
    Note(ControlNote),
    /// stdout ended: why (exit status, stderr tail).
    Closed(String),
}

/// State shared by the reader, the control tasks and the session.
#[derive(Default)]
struct Shared {
    /// Our control requests waiting for their `control_response`, by request id.
    pending: Mutex<HashMap<String, oneshot::Sender<ControlResponseBody>>>,
    /// The CLI's control requests still being answered, by request id (for `control_cancel_request`).
    handlers: Mutex<HashMap<String, AbortHandle>>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<ControlResponseBody>>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn handlers(&self) -> std::sync::MutexGuard<'_, HashMap<String, AbortHandle>> {
        self.handlers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Aborts every running control task and fails every pending request of ours.
    fn close(&self) {
        for (_, task) in self.handlers().drain() {
            task.abort();
        }
        self.pending().clear();
    }
}

/// A running CLI process and its pipes.
struct Live {
    /// The process (its own group).
    process: ChildProcess,
    /// The single writer of its stdin.
    out: LineSender,
    /// Lines and notes from the reader.
    inbound: mpsc::Receiver<Inbound>,
    /// Pending requests and running control tasks.
    shared: Arc<Shared>,
    /// The stdout reader.
    reader: JoinHandle<()>,
}

/// A Claude Code CLI session: one warm process (respawned with `--resume` when it is gone) after a
/// passed version gate and `initialize` handshake.
pub struct ClaudeSession {
    /// Launch settings and deadlines.
    config: ClaudeConfig,
    /// Receives tool terminals.
    observer: Arc<dyn ToolTerminalObserver>,
    /// Answers the CLI's control requests.
    handler: Arc<ClaudeControlHandler>,
    /// What the handler saw.
    activity: Arc<TurnActivity>,
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
    /// Counter for our control request ids.
    next_request: u64,
}

impl ClaudeSession {
    /// Checks the CLI's version, spawns it and performs the `initialize` handshake. A refused version
    /// spawns nothing; a failed handshake stops the process.
    pub async fn connect(config: ClaudeConfig, hooks: SessionHooks) -> Result<ClaudeSession, ClaudeError> {
        let version = check_version(&config, &VersionProbe::in_memory()).await?;
        let activity = Arc::new(TurnActivity::default());
        let host_server = (!hooks.tools.specs().is_empty()).then(|| config.host_mcp_server.clone());
        let handler = match &host_server {
            Some(server) => ClaudeControlHandler::with_host_tools(
                hooks.approver,
                activity.clone(),
                config.approval_timeout,
                hooks.tools,
                server.clone(),
                config.tool_timeout,
            ),
            None => ClaudeControlHandler::new(hooks.approver, activity.clone(), config.approval_timeout),
        };
        let resume = config.resume.clone();
        let mut session = ClaudeSession {
            config,
            observer: hooks.observer,
            handler,
            activity,
            version,
            host_server,
            live: None,
            session_id: resume.clone(),
            resume_failure: None,
            spawns: 0,
            turns: 0,
            fallback_turn_base: fallback_turn_base(),
            next_request: 0,
        };
        session.spawn(resume.as_deref()).await?;
        Ok(session)
    }

    /// The CLI's version (from `claude --version`).
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The current process's pid (its process group), if one runs.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().map(|live| live.process.pid())
    }

    /// How many CLI processes this session has spawned (1 while the first stays warm).
    pub fn spawn_count(&self) -> usize {
        self.spawns
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

    fn request_id(&mut self, what: &str) -> String {
        self.next_request += 1;
        format!("req_{}_{what}", self.next_request)
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
        let spec = self.config.command(resume, self.host_server.is_some());
        let options = SpawnOptions { registry: self.config.registry.clone(), ..SpawnOptions::default() };
        let mut process = ChildProcess::spawn(&spec, options)?;
        self.spawns += 1;
        let (stdin, stdout) = match (process.take_stdin(), process.take_stdout()) {
            (Some(stdin), Some(stdout)) => (stdin, stdout),
            _ => {
                process.stop(self.config.stop).await;
                return Err(ClaudeError::Handshake("the CLI's stdio is not piped".into()));
            }
        };
        let (out, _writer) = spawn_line_writer(stdin, OUTBOUND_CAPACITY);
        let (tx, inbound) = mpsc::channel(INBOUND_CAPACITY);
        let shared = Arc::new(Shared::default());
        let reader = tokio::spawn(read_stdout(
            stdout,
            self.config.max_line_bytes,
            tx,
            shared.clone(),
            self.handler.clone(),
            out.clone(),
            process.exit_watch(),
        ));
        self.live = Some(Live { process, out, inbound, shared, reader });
        match self.initialize().await {
            Ok(()) => Ok(()),
            Err(error) => {
                self.stop_live().await;
                Err(error)
            }
        }
    }

    /// Sends `initialize` and waits for its answer (answering the CLI's requests meanwhile: the reader
    /// does that on its own), then cross-checks the reported version.
    async fn initialize(&mut self) -> Result<(), ClaudeError> {
        let id = self.request_id("init");
        let Some(live) = self.live.as_mut() else {
            return Err(ClaudeError::Handshake("no process".into()));
        };
        let (answer_tx, answer) = oneshot::channel();
        live.shared.pending().insert(id.clone(), answer_tx);
        if let Err(error) = live.out.send_json(&ControlRequest::initialize(&id).to_line()).await {
            return Err(ClaudeError::Handshake(format!("cannot write to the CLI: {error}")));
        }
        let deadline = Instant::now() + self.config.handshake_timeout;
        tokio::pin!(answer);
        let body = loop {
            tokio::select! {
                body = &mut answer => match body {
                    Ok(body) => break body,
                    Err(_) => {
                        // The reader ended: its `Closed` says why.
                        let why = match live.inbound.recv().await {
                            Some(Inbound::Closed(why)) => why,
                            _ => "stdout closed".into(),
                        };
                        return Err(ClaudeError::Handshake(format!("the CLI went away: {why}")));
                    }
                },
                // Nothing of a turn is running yet; lines before the answer carry nothing we need.
                inbound = live.inbound.recv() => match inbound {
                    Some(Inbound::Closed(why)) => {
                        return Err(ClaudeError::Handshake(format!("the CLI went away: {why}")));
                    }
                    Some(other) => tracing::trace!(?other, "line before the initialize answer"),
                    None => return Err(ClaudeError::Handshake("the CLI's reader stopped".into())),
                },
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(ClaudeError::Handshake(format!(
                        "no answer to initialize within {:?}",
                        self.config.handshake_timeout
                    )));
                }
            }
        };
        let success = match body {
            ControlResponseBody::Success(success) => success,
            ControlResponseBody::Error(error) => return Err(ClaudeError::Handshake(error.error)),
            ControlResponseBody::Other(other) => {
                return Err(ClaudeError::Handshake(format!(
                    "unexpected initialize answer (subtype {:?})",
                    other.get_str("subtype")
                )));
            }
        };
        // The answer also holds `account` (personal data): only the version is read, nothing logged.
        let response: InitializeResponse = serde_json::from_value(success.response).unwrap_or_default();
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
            let mut gone = live.process.try_exit().is_some();
            while let Ok(stale) = live.inbound.try_recv() {
                match stale {
                    Inbound::Closed(why) => {
                        tracing::warn!(%why, "the claude process went away between turns");
                        gone = true;
                    }
                    other => tracing::debug!(?other, "line between turns"),
                }
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
        sink: &mut (dyn FnMut(&Event) + Send),
        cancel: &CancellationToken,
    ) -> Result<AttemptResult, ClaudeError> {
        self.ensure_live().await?;
        self.turns += 1;
        let mut mapper = TurnMapper::new(format!("{}-turn-{}", self.fallback_turn_base, self.turns));
        if let Some(server) = &self.host_server {
            mapper = mapper.with_host_mcp_server(server.clone());
        }
        let interrupt_id = self.request_id("interrupt");
        let limits = TurnLimits {
            idle: self.config.turn_idle_timeout,
            interrupt_grace: self.config.interrupt_grace,
            backend: "claude",
        };
        let driver = TurnDriver::new(self.observer.clone(), self.activity.clone(), sink);
        let Some(live) = self.live.as_mut() else {
            return Err(ClaudeError::Handshake("no process".into()));
        };
        let (driven, mapper) = if let Err(error) = live.out.send_json(&UserLine::text(prompt).to_line()).await {
            let closing = mapper.abandon(TerminalKind::Failed, format!("cannot write the prompt to claude: {error}"));
            (driver.close(closing).await, mapper)
        } else {
            let mut turn = ClaudeTurn { live, mapper, version: &self.version, interrupt_id, turn_begun: false };
            let driven = driver.run(&mut turn, limits, cancel).await;
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

    /// Stops the current process, if any (staged: stdin EOF, then signals to its group).
    async fn stop_live(&mut self) -> Option<StopOutcome> {
        let mut live = self.live.take()?;
        live.out.close();
        let outcome = live.process.stop(self.config.stop).await;
        live.shared.close();
        live.reader.abort();
        Some(outcome)
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
    let text = versions.version_output(&config.probe_command(), config.version_timeout).await?;
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

/// The stdout reader: one per process. Conversation lines go to the turn loop in order; control
/// requests are answered in their own tasks; answers to ours complete their waiters. When stdout
/// ends, every control task is aborted, every pending request fails, and `Closed` says why.
async fn read_stdout(
    stdout: ChildStdout,
    max_line_bytes: usize,
    tx: mpsc::Sender<Inbound>,
    shared: Arc<Shared>,
    handler: Arc<ClaudeControlHandler>,
    out: LineSender,
    exit: ExitWatch,
) {
    let mut frames = frame_reader(stdout, max_line_bytes);
    // A grandchild (a Bash tool's background job) may hold stdout open after the CLI exited, so EOF
    // may never come: end the stream a grace after the exit. What the CLI wrote before exiting is
    // readable at once and read first (biased).
    let held_open = async {
        exit.exited().await;
        tokio::time::sleep(OUTPUT_DRAIN_AFTER_EXIT).await;
    };
    tokio::pin!(held_open);
    loop {
        let next = tokio::select! {
            biased;
            next = frames.next() => next,
            () = &mut held_open => {
                tracing::debug!("claude exited but its stdout is held open; ending the stream");
                break;
            }
        };
        let Some(frame) = next else { break };
        let line = match frame {
            Ok(Frame::Line(line)) => line,
            Ok(other) => {
                tracing::warn!(?other, "dropped an unusable line from claude");
                continue;
            }
            Err(error) => {
                tracing::warn!(%error, "reading claude's stdout failed");
                break;
            }
        };
        // Some builds print non-JSON debug lines on stdout; only objects are protocol.
        if !line.trim_start().starts_with('{') {
            tracing::debug!(len = line.len(), "skipped a non-JSON line from claude");
            continue;
        }
        let value: Value = match serde_json::from_str(&line) {
            Ok(value) => value,
            Err(error) => {
                tracing::debug!(%error, len = line.len(), "skipped a line from claude that is not JSON");
                continue;
            }
        };
        match CliMessage::from_value(value) {
            CliMessage::ControlRequest(request) => {
                answer_in_task(request, &shared, &handler, &out, &tx);
            }
            CliMessage::ControlCancelRequest(cancel) => {
                if let Some(task) = shared.handlers().remove(&cancel.request_id) {
                    task.abort();
                }
            }
            CliMessage::ControlResponse(response) => {
                let waiter = response.request_id().and_then(|id| shared.pending().remove(id));
                match waiter {
                    Some(waiter) => {
                        let _ = waiter.send(response.response);
                    }
                    None => tracing::debug!(request_id = ?response.request_id(), "an answer nobody waits for"),
                }
            }
            CliMessage::Unknown(raw) if raw.get_str("type") == Some("control_request") => {
                // A request we cannot type must still be answered, or the CLI blocks.
                let id = raw.raw.get("request_id").and_then(Value::as_str).unwrap_or_default().to_owned();
                let answer = ControlResponse::error(id, "malformed control request");
                let out = out.clone();
                tokio::spawn(async move {
                    let _ = out.send_json(&answer.to_line()).await;
                });
            }
            message => {
                if tx.send(Inbound::Message(Box::new(message))).await.is_err() {
                    break; // the session is gone
                }
            }
        }
    }
    shared.close();
    let (state, stderr) = exit.report(EXIT_REPORT).await;
    let mut why = match state {
        Some(state) => format!("{state}"),
        None => "stdout closed".into(),
    };
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        let mut start = stderr.len().saturating_sub(STDERR_IN_MESSAGE);
        while !stderr.is_char_boundary(start) {
            start += 1;
        }
        why.push_str(&format!("; stderr: {}", &stderr[start..]));
    }
    let _ = tx.send(Inbound::Closed(why)).await;
}

/// How long the reader waits for EOF after the CLI exited (only a process that inherited its stdout
/// can keep it open longer).
const OUTPUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

/// Answers one control request in its own task: notes first (to the turn loop), then the answer.
/// The task is registered under its request id until it answers, so a `control_cancel_request` can
/// abort it (and no answer is sent).
fn answer_in_task(
    request: ControlRequest,
    shared: &Arc<Shared>,
    handler: &Arc<ClaudeControlHandler>,
    out: &LineSender,
    tx: &mpsc::Sender<Inbound>,
) {
    let id = request.request_id.clone();
    let (shared_in_task, handler, out, tx) = (shared.clone(), handler.clone(), out.clone(), tx.clone());
    let key = id.clone();
    // Registered under the lock, so the task cannot deregister before it is registered.
    let mut handlers = shared.handlers();
    let task = tokio::spawn(async move {
        let (answer, notes) = handler.answer(request).await;
        for note in notes {
            let _ = tx.send(Inbound::Note(note)).await;
        }
        shared_in_task.handlers().remove(&key);
        if let Err(error) = out.send_json(&answer.to_line()).await {
            tracing::debug!(%error, "could not answer a claude control request");
        }
    });
    handlers.insert(id, task.abort_handle());
}

/// One running Claude turn, as the turn driver sees it: the reader's lines through the mapper, the
/// control answers' notes, and the in-band interrupt (docs/peers/claude.md).
struct ClaudeTurn<'a> {
    /// The process the turn runs in.
    live: &'a mut Live,
    /// Maps the turn's lines to normalized events.
    mapper: TurnMapper,
    /// The CLI's version from `claude --version`, cross-checked against `system/init`.
    version: &'a Version,
    /// The request id of this turn's interrupt.
    interrupt_id: String,
    /// An interrupt sent before the turn began is accepted but does nothing, so it waits for the
    /// turn's first line.
    turn_begun: bool,
}

impl NativeTurn for ClaudeTurn<'_> {
    async fn next(&mut self) -> Step {
        loop {
            match self.live.inbound.recv().await {
                Some(Inbound::Message(message)) => {
                    self.turn_begun = true;
                    if let CliMessage::System(SystemMessage::Init(init)) = message.as_ref() {
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
                Some(Inbound::Note(ControlNote::Denied { tool_use_id, message })) => {
                    self.mapper.note_denied(&tool_use_id, message);
                }
                Some(Inbound::Note(ControlNote::InterruptRequested)) => self.mapper.note_interrupt_requested(),
                Some(Inbound::Closed(why)) => {
                    let why = format!("the claude process went away: {why}");
                    return Step::Ended(self.mapper.abandon(TerminalKind::Failed, why));
                }
                None => {
                    let why = "the claude reader stopped".to_string();
                    return Step::Ended(self.mapper.abandon(TerminalKind::Failed, why));
                }
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.live.inbound.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        if !self.turn_begun {
            return Ok(false);
        }
        match self.live.out.send_json(&ControlRequest::interrupt(&self.interrupt_id).to_line()).await {
            Ok(()) => Ok(true),
            Err(error) => Err(error.to_string()),
        }
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
