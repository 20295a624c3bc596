//! One `attempt/run`: a Codex session per attempt (spawn, handshake, start or resume the thread,
//! one turn) — or, for the Claude harness, a turn on the session's CLI (`super::claude`) — every
//! event streamed as `attempt/event`, the transcript mirrored through `host/transcript/append`
//! (awaited, so the result never outruns it), the result last.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions, ThreadReady};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{Approver, HostToolSpec, HostTools, ToolTerminalObserver};
use clawbridge_bridge::events::{Event, TerminalKind, TurnTerminal};
use clawbridge_bridge::rpc::RpcPeer;
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_bridge::transcript::{Message, ModelLabel, TranscriptMirror};
use clawbridge_protocol::host::errors::{self, PreflightErrorData};
use clawbridge_protocol::host::{
    AttemptEventParams, AttemptRunParams, AttemptRunResponse, HostCapabilities, TranscriptAppendParams, methods,
};
use clawbridge_protocol::jsonrpc::ErrorObject;
use tokio_util::sync::CancellationToken;

use super::harness::{BackendKind, Harness};
use super::hooks::{HostApprover, HostObserver, HostToolsClient, HostUserInput};
use super::queue::EventQueue;

/// How long the host may take to store one group of transcript rows.
const APPEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Everything one attempt needs.
pub struct AttemptJob {
    /// The host connection.
    pub peer: RpcPeer,
    /// What the host serves.
    pub caps: HostCapabilities,
    /// The attempt as the host sent it.
    pub params: AttemptRunParams,
    /// The harness that runs it.
    pub harness: Harness,
    /// The session's native thread from an earlier attempt, to resume.
    pub previous_thread: Option<String>,
    /// Cancelled by `attempt/cancel`, `shutdown` or the host going away.
    pub cancel: CancellationToken,
    /// Where the app-server is recorded for orphan reaping.
    pub registry: Option<PidRegistry>,
}

/// What an attempt produced: the response, and the thread to bind to the session.
pub struct AttemptOutcome {
    /// The `attempt/run` result.
    pub response: AttemptRunResponse,
    /// The native thread the turn ran in.
    pub thread_id: Option<String>,
}

/// Runs one attempt. `Err` only for attempts that never started (preflight failures).
pub async fn run(job: AttemptJob) -> Result<AttemptOutcome, ErrorObject> {
    let attempt_id = job.params.attempt_id.clone();
    if job.cancel.is_cancelled() {
        return Ok(not_run(&attempt_id, TerminalKind::Aborted, "cancelled before it started"));
    }
    let timed_out = Arc::new(AtomicBool::new(false));
    let budget = job.params.timeout_ms.map(|ms| {
        let cancel = job.cancel.clone();
        let timed_out = timed_out.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            timed_out.store(true, Ordering::Relaxed);
            cancel.cancel();
        })
    });
    let outcome = match job.harness.backend {
        BackendKind::Claude => super::claude::run_started(&job, &timed_out).await,
        _ => run_started(&job, &timed_out).await,
    };
    if let Some(budget) = budget {
        budget.abort();
    }
    outcome
}

async fn run_started(job: &AttemptJob, timed_out: &AtomicBool) -> Result<AttemptOutcome, ErrorObject> {
    let params = &job.params;
    let attempt_id = params.attempt_id.clone();
    let demo = job.harness.backend == BackendKind::Demo;
    let cwd = params.cwd.clone().unwrap_or_else(|| params.workspace_dir.clone());

    let mut config = CodexConfig::new(job.harness.program.clone());
    if demo {
        config.launcher_args = vec![OsString::from("demo-agent")];
    } else {
        config.codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
    }
    if !cwd.is_empty() && std::path::Path::new(&cwd).is_dir() {
        config.cwd = Some(PathBuf::from(&cwd));
    }
    config.approval_timeout = super::hooks::APPROVAL_TIMEOUT;
    config.tool_timeout = super::hooks::TOOL_TIMEOUT;
    config.interrupt_grace = Duration::from_secs(5);
    config.registry = job.registry.clone();

    let (approver, tools, observer) = host_hooks(job, host_tool_specs(job));
    let hooks = SessionHooks { approver, tools, observer };
    let backend_name = if demo { "the demo agent" } else { "codex app-server" };
    let mut session = match CodexSession::connect(config, hooks).await {
        Ok(session) => session,
        Err(error) => {
            return Err(preflight(
                format!("{backend_name} could not start: {error}"),
                format!("{} could not start: {error}", job.harness.info.label),
            ));
        }
    };
    if job.caps.user_input {
        session
            .answer_user_input_with(Arc::new(HostUserInput { peer: job.peer.clone(), attempt_id: attempt_id.clone() }));
    }
    if job.cancel.is_cancelled() {
        session.shutdown().await;
        return Ok(not_run(&attempt_id, TerminalKind::Aborted, "cancelled before the turn started"));
    }

    let options = ThreadOptions {
        cwd: (!cwd.is_empty()).then(|| cwd.clone()),
        model: (!params.model_id.is_empty() && !demo).then(|| params.model_id.clone()),
        developer_instructions: params.extra_system_prompt.clone(),
        ..ThreadOptions::default()
    };
    // The demo's recording holds one fresh thread, so a demo session never resumes.
    let thread: Result<ThreadReady, _> = match (&job.previous_thread, demo) {
        (Some(previous), false) => session.resume_or_start(previous, &options).await,
        _ => session.start_thread(&options).await,
    };
    let thread = match thread {
        Ok(thread) => thread,
        Err(error) => {
            session.shutdown().await;
            return Err(preflight(
                format!("{backend_name} could not start a thread: {error}"),
                format!("{} could not start a conversation: {error}", job.harness.info.label),
            ));
        }
    };
    if let Some(why) = &thread.resume_failure {
        tracing::warn!(attempt = %attempt_id, "could not resume the session's thread ({why}); started a new one");
    }

    let label = ModelLabel {
        api: params.model_api.clone().unwrap_or_else(|| "codex-app-server".into()),
        provider: params.provider.clone(),
        model: params.model_id.clone(),
    };
    let streaming = Streaming::start(job, label);
    let turn = {
        let mut sink = |event: &Event| streaming.push(event);
        session.run_turn(&thread.thread_id, &params.prompt, &mut sink, &job.cancel).await
    };
    let result = match turn {
        Ok(result) => result,
        Err(error) => failed_result(Some(&thread.thread_id), format!("the turn could not run: {error}")),
    };
    let mirrored = streaming.finish(&result).await;
    let stop = session.shutdown().await;
    tracing::debug!(attempt = %attempt_id, ?stop, "native process stopped");
    Ok(outcome(job, timed_out, result, mirrored, Some(thread.thread_id)))
}

/// The host tools an attempt declares to its backend: none for the demo (its recording declared
/// none), when tools are disabled or the host serves none; else the host's, filtered by `toolsAllow`.
pub(super) fn host_tool_specs(job: &AttemptJob) -> Vec<HostToolSpec> {
    let params = &job.params;
    if job.harness.backend == BackendKind::Demo || params.disable_tools || !job.caps.host_tools {
        return Vec::new();
    }
    params
        .host_tools
        .iter()
        .filter(|t| params.tools_allow.as_ref().is_none_or(|allow| allow.contains(&t.name)))
        .cloned()
        .collect()
}

/// The attempt's hooks wired to the host: approvals, the host tools `specs`, tool terminals.
pub(super) fn host_hooks(
    job: &AttemptJob,
    specs: Vec<HostToolSpec>,
) -> (Arc<dyn Approver>, Arc<dyn HostTools>, Arc<dyn ToolTerminalObserver>) {
    let attempt_id = job.params.attempt_id.clone();
    let approver =
        Arc::new(HostApprover { peer: job.peer.clone(), attempt_id: attempt_id.clone(), enabled: job.caps.approvals });
    let tools = Arc::new(HostToolsClient { peer: job.peer.clone(), attempt_id: attempt_id.clone(), specs });
    let observer = Arc::new(HostObserver { peer: job.peer.clone(), attempt_id, enabled: job.caps.tool_terminals });
    (approver, tools, observer)
}

/// A turn's events on their way to the host: they leave the (synchronous) sink through a queue that
/// never blocks the native reader and stays bounded by merging deltas while the host lags (lessons
/// F5); one task streams and mirrors them in order.
pub(super) struct Streaming {
    /// Filled by the sink.
    queue: Arc<EventQueue>,
    /// The task streaming and mirroring the queue.
    forwarding: tokio::task::JoinHandle<Forwarder>,
}

/// How a turn's transcript mirroring went.
pub(super) struct Mirrored {
    /// Whether the host holds every row (so it writes no copy of its own).
    owned: bool,
    /// The final assistant row's key.
    key: Option<String>,
}

impl Streaming {
    /// Starts streaming `job`'s events; assistant rows name `label`.
    pub(super) fn start(job: &AttemptJob, label: ModelLabel) -> Streaming {
        let params = &job.params;
        let queue = Arc::new(EventQueue::default());
        let forwarder = Forwarder {
            peer: job.peer.clone(),
            attempt_id: params.attempt_id.clone(),
            session_id: params.session_id.clone(),
            mirror_enabled: job.caps.transcript_append,
            scope: format!("clawbridge:{}", params.run_id.clone().unwrap_or_else(|| params.attempt_id.clone())),
            label,
            mirror: None,
            owned: job.caps.transcript_append,
            seq: 0,
        };
        let forwarding = tokio::spawn(forwarder.run(queue.clone()));
        Streaming { queue, forwarding }
    }

    /// The sink: queues one event (never blocks).
    pub(super) fn push(&self, event: &Event) {
        self.queue.push(event.clone());
    }

    /// Ends the stream after the turn: waits until every event is streamed and mirrored, and closes
    /// the rows of a turn whose terminal never reached the mirror.
    pub(super) async fn finish(self, result: &AttemptResult) -> Mirrored {
        self.queue.close();
        let mut forwarder = match self.forwarding.await {
            Ok(forwarder) => forwarder,
            Err(join) => {
                tracing::error!(%join, "the event forwarder died");
                return Mirrored { owned: false, key: None };
            }
        };
        if let Some(mirror) = forwarder.mirror.as_mut() {
            if !mirror.is_finished() {
                let messages = mirror.finish(&result.terminal);
                forwarder.append(messages).await;
            }
        }
        let key = forwarder.mirror.as_ref().map(|m| m.assistant_key());
        Mirrored { owned: forwarder.owned && forwarder.mirror.is_some(), key }
    }
}

/// The attempt's outcome from its turn's `result`: an abort caused by the attempt's budget is a
/// timeout; `native` is the native thread or session to bind to the host session.
pub(super) fn outcome(
    job: &AttemptJob,
    timed_out: &AtomicBool,
    mut result: AttemptResult,
    mirrored: Mirrored,
    native: Option<String>,
) -> AttemptOutcome {
    if timed_out.load(Ordering::Relaxed) && result.terminal.kind == TerminalKind::Aborted {
        let ms = job.params.timeout_ms.unwrap_or_default();
        result.terminal = TurnTerminal {
            kind: TerminalKind::Timeout,
            message: Some(format!("the attempt's budget of {ms} ms ran out")),
        };
    }
    let response = to_response(&job.params.attempt_id, result, mirrored.owned, mirrored.key);
    AttemptOutcome { response, thread_id: native }
}

/// Streams events as `attempt/event` and mirrors them into the host transcript.
struct Forwarder {
    peer: RpcPeer,
    attempt_id: String,
    session_id: String,
    mirror_enabled: bool,
    scope: String,
    label: ModelLabel,
    mirror: Option<TranscriptMirror>,
    /// False once an append failed (or the host does not append at all).
    owned: bool,
    seq: u64,
}

impl Forwarder {
    async fn run(mut self, queue: Arc<EventQueue>) -> Self {
        while let Some(event) = queue.next().await {
            let note = AttemptEventParams { attempt_id: self.attempt_id.clone(), seq: self.seq, event };
            self.seq += 1;
            if let Err(error) = self.peer.notify(methods::ATTEMPT_EVENT, Some(&note)).await {
                tracing::debug!(%error, "could not stream an attempt event");
            }
            let event = note.event;
            if !self.mirror_enabled {
                continue;
            }
            if let Event::TurnStarted { turn_id } = &event {
                if self.mirror.is_none() {
                    self.mirror = Some(TranscriptMirror::new(self.scope.clone(), turn_id.clone(), self.label.clone()));
                }
            }
            let messages = match self.mirror.as_mut() {
                Some(mirror) => mirror.on_event(&event),
                None => Vec::new(),
            };
            self.append(messages).await;
        }
        let dropped = queue.dropped_bytes();
        if dropped > 0 {
            tracing::info!(attempt = %self.attempt_id, dropped, "the host read slowly; some streamed delta bytes were merged away");
        }
        self
    }

    /// Appends one group of rows and waits for the host's acknowledgement.
    async fn append(&mut self, messages: Vec<Message>) {
        if messages.is_empty() || !self.mirror_enabled {
            return;
        }
        let params = TranscriptAppendParams {
            attempt_id: self.attempt_id.clone(),
            session_id: self.session_id.clone(),
            messages,
        };
        if let Err(error) =
            self.peer.request_with_timeout(methods::HOST_TRANSCRIPT_APPEND, Some(&params), APPEND_TIMEOUT).await
        {
            tracing::warn!(attempt = %self.attempt_id, %error, "the host did not store transcript rows");
            self.owned = false;
        }
    }
}

/// The `attempt/run` result for a finished turn; it names the final assistant row only when the host
/// holds the rows.
fn to_response(attempt_id: &str, result: AttemptResult, owned: bool, key: Option<String>) -> AttemptRunResponse {
    AttemptRunResponse {
        attempt_id: attempt_id.to_string(),
        result,
        transcript_owned: owned,
        transcript_idempotency_key: key.filter(|_| owned),
    }
}

pub(super) fn failed_result(native: Option<&str>, message: String) -> AttemptResult {
    let mut recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
    recorder.record(&Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Failed, message: Some(message) }));
    recorder.finish(native.map(str::to_string))
}

/// A result for an attempt that ended before its turn started (cancelled early).
pub(super) fn not_run(attempt_id: &str, kind: TerminalKind, message: &str) -> AttemptOutcome {
    let mut recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
    let message = (!message.is_empty()).then(|| message.to_string());
    recorder.record(&Event::TurnTerminal(TurnTerminal { kind, message }));
    let result = recorder.finish(None);
    AttemptOutcome { response: to_response(attempt_id, result, false, None), thread_id: None }
}

pub(super) fn preflight(message: String, user_message: String) -> ErrorObject {
    let data = PreflightErrorData { user_message: Some(user_message) };
    ErrorObject { code: errors::PREFLIGHT_FAILED, message, data: serde_json::to_value(data).ok() }
}
