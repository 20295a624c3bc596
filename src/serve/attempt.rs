//! One `attempt/run` on any backend: open the native session (spawn, handshake, start or resume the
//! conversation), run one turn, every event streamed as `attempt/event`, the transcript mirrored
//! through `host/transcript/append` (awaited, so the result never outruns it), the result last.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{HostToolSpec, UserInputAsker};
use clawbridge_bridge::attempt::{AttemptResult, SessionHooks};
use clawbridge_bridge::backend::{BackendError, OpenSettings, TurnInput, TurnRequest};
use clawbridge_bridge::events::{Event, TerminalCause, TerminalKind, TurnTerminal};
use clawbridge_bridge::native_tools::NativeToolPolicy;
use clawbridge_bridge::rpc::RpcPeer;
use clawbridge_bridge::sink::{EventStage, MirrorSpec, Mirrored, Pipeline, StoreError, TranscriptStore};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_bridge::transcript::{Message, ModelLabel};
use clawbridge_protocol::host::errors::{self, PreflightErrorData, PreflightPhase};
use clawbridge_protocol::host::{
    AttemptEventRef, AttemptRunParams, AttemptRunResponse, HostCapabilities, Isolation, ProjectionNotice,
    TranscriptAppendParams, methods,
};
use clawbridge_protocol::jsonrpc::ErrorObject;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::budget::{AttemptBudget, PausingApprover, PausingAsker};
use super::harness::Harness;
use super::hooks::{HostApprover, HostObserver, HostToolsClient, HostUserInput};

/// How long the host may take to store one group of transcript rows.
const APPEND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an interrupted turn gets to confirm under `serve`.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);
/// The environment variable that sets the turn idle limit under `serve`.
pub const TURN_IDLE_TIMEOUT_ENV: &str = "CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS";

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
    /// How its native session is opened (the resume filled in from the session's binding).
    pub settings: OpenSettings,
    /// Cancelled by `attempt/cancel`, `shutdown` or the host going away.
    pub cancel: CancellationToken,
    /// Filled with the native session's steering handle and running turn, for `attempt/steer`.
    pub steer: Arc<super::steer::SteerSlot>,
    /// Why the attempt does not resume the session's native thread (`None`: it resumes it); a new
    /// native session is then seeded with the params' `history`.
    pub fresh: Option<super::projection::FreshReason>,
}

/// What an attempt produced: the response, and the native session to bind to the host session.
pub struct AttemptOutcome {
    /// The `attempt/run` result.
    pub response: AttemptRunResponse,
    /// The native thread or session the turn ran in.
    pub native_id: Option<String>,
}

/// The directory the attempt's agent works in: `cwd` when the host sets one, else `workspaceDir`.
/// It must be an absolute path to an existing directory: an agent started anywhere else would work
/// on the wrong files (or in the bridge's own directory) and still report `ok`, so a missing,
/// relative or non-directory path is a preflight failure that names it.
pub fn working_dir(params: &AttemptRunParams) -> Result<PathBuf, ErrorObject> {
    let (name, dir) = match &params.cwd {
        Some(cwd) => ("cwd", cwd.as_str()),
        None => ("workspaceDir", params.workspace_dir.as_str()),
    };
    let path = Path::new(dir);
    let problem = if dir.is_empty() {
        Some("is empty".to_string())
    } else if !path.is_absolute() {
        Some(format!("{dir:?} is not an absolute path"))
    } else {
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => None,
            Ok(_) => Some(format!("{dir:?} is not a directory")),
            Err(error) => Some(format!("{dir:?} cannot be used: {error}")),
        }
    };
    match problem {
        None => Ok(path.to_path_buf()),
        Some(problem) => Err(preflight(
            format!("the attempt's {name} {problem}"),
            format!("The agent's working directory {problem}."),
        )),
    }
}

/// How `params` opens a native session on `harness` in `workdir` (without the resume, which comes
/// from the session's binding): the model, the host's system prompt and tools, serve's deadlines,
/// and the host as the user's voice when it takes questions.
pub fn open_settings(
    peer: &RpcPeer,
    caps: HostCapabilities,
    params: &AttemptRunParams,
    harness: &Harness,
    workdir: PathBuf,
    registry: Option<PidRegistry>,
) -> OpenSettings {
    // Side work asks nobody anything: it has no tools, the question tool included.
    let user_input = (caps.user_input && params.isolation.is_none()).then(|| {
        Arc::new(HostUserInput { peer: peer.clone(), attempt_id: params.attempt_id.clone() }) as Arc<dyn UserInputAsker>
    });
    // Side work has a literal zero-tool surface: no host tools, every native tool taken away.
    let isolated = params.isolation.is_some();
    OpenSettings {
        program: harness.program.clone(),
        cwd: Some(workdir),
        model: (!params.model_id.is_empty()).then(|| params.model_id.clone()),
        system_prompt: params.extra_system_prompt.clone(),
        bootstrap_context: params.bootstrap_context.clone(),
        host_tools: if isolated { Vec::new() } else { host_tool_specs(caps, params, harness) },
        resume: None,
        session_key: params.session_id.clone(),
        registry,
        user_input,
        approval_timeout: Some(super::hooks::APPROVAL_TIMEOUT),
        tool_timeout: Some(super::hooks::TOOL_TIMEOUT),
        interrupt_grace: Some(INTERRUPT_GRACE),
        route_auth: params.auth.clone(),
        // The server's setting (Server::with_turn_idle_timeout) replaces this.
        turn_idle_timeout: None,
        on_native_id: None,
        native_tools: NativeToolPolicy::from_host(params.disable_tools || isolated, params.tools_allow.as_deref())
            .intersect(NativeToolPolicy::from_host(false, params.tool_execution_allow.as_deref())),
        process_env: params.process_env.iter().map(|(name, value)| (name.clone(), value.clone())).collect(),
        ephemeral: isolated,
        mcp_servers: params.mcp_servers.clone(),
        context_window: params.context_window.filter(|w| *w > 0),
        skip_native_project_docs: params.skip_native_project_docs,
    }
}

/// `CLAWBRIDGE_TURN_IDLE_TIMEOUT_MS`: how long a turn may go without progress before the bridge's
/// watchdog ends it (a `timeout` whose cause is `idleTimeout`); each backend's default otherwise.
/// An unreadable or zero value is ignored, with a warning.
pub(crate) fn turn_idle_timeout_from_env() -> Option<Duration> {
    let raw = std::env::var(TURN_IDLE_TIMEOUT_ENV).ok()?;
    match raw.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Some(Duration::from_millis(ms)),
        _ => {
            tracing::warn!(value = %raw, "{TURN_IDLE_TIMEOUT_ENV} is not a positive number of milliseconds; ignored");
            None
        }
    }
}

/// Runs one attempt. `Err` only for attempts that never started (preflight failures).
pub async fn run(job: AttemptJob) -> Result<AttemptOutcome, ErrorObject> {
    let attempt_id = job.params.attempt_id.clone();
    if job.cancel.is_cancelled() {
        return Ok(not_run(&attempt_id, TerminalKind::Aborted, "cancelled before it started"));
    }
    // Paused while a person is asked (super::budget); cancels the attempt when it runs out.
    let budget = job.params.timeout_ms.map(|ms| AttemptBudget::start(Duration::from_millis(ms), job.cancel.clone()));
    let outcome = run_started(job, budget.as_ref()).await;
    if let Some(budget) = budget {
        budget.close();
    }
    outcome
}

async fn run_started(mut job: AttemptJob, budget: Option<&AttemptBudget>) -> Result<AttemptOutcome, ErrorObject> {
    let timed_out = || budget.is_some_and(AttemptBudget::timed_out);
    if let Some(budget) = budget {
        pause_budget_while_asking(&mut job, budget);
    }
    let backend = job.harness.backend.clone();
    let facts = backend.facts();
    // Moves the prompt and the images out of the params: from here the turn input holds the only
    // copy an attempt keeps.
    let mut input = super::inputs::turn_input(&mut job.params, facts).map_err(|error| {
        preflight(
            format!("{}: {error}", facts.id),
            format!("{} cannot run this prompt: {error}.", job.harness.info.label),
        )
    })?;
    let attempt_id = job.params.attempt_id.clone();
    if let Err(problem) = super::prepared_env::check(&job.params.process_env) {
        return Err(preflight(
            format!("the attempt's processEnv {problem}"),
            format!("{} cannot start with the environment OpenClaw prepared: {problem}.", job.harness.info.label),
        ));
    }
    if let Some(Err(problem)) = job.params.auth.as_ref().map(super::prepared_env::check_route_auth) {
        return Err(preflight(
            format!("the attempt's route auth {problem}"),
            format!("{} cannot use the route's credentials OpenClaw prepared: {problem}.", job.harness.info.label),
        ));
    }
    if job.params.isolation.is_some() && !facts.supports.ephemeral {
        return Err(preflight(
            format!("{} cannot open a session it never stores, which side work needs", facts.process),
            format!("{} cannot run side work (isolated completions, side questions).", job.harness.info.label),
        ));
    }
    // A settled turn is finalized from the transcript that holds its tool calls, or not at all: a
    // session without it would answer without knowing the work it is to sum up.
    let no_history = job.params.history.as_ref().is_none_or(|history| history.entries.is_empty());
    if job.params.isolation == Some(Isolation::Settle) && no_history {
        return Err(preflight(
            "the run sent no transcript history, so the settled tool turn cannot be finalized".to_string(),
            format!(
                "{} cannot finalize this settled turn: the session's transcript could not be read.",
                job.harness.info.label
            ),
        ));
    }
    if let Some(denied) = job.settings.native_tools.denied().first().filter(|_| !facts.supports.native_tool_policy) {
        return Err(preflight(
            format!("{} cannot take {denied} away from its agent, which the host's tool policy denies", facts.process),
            format!("{} cannot run with this chat's tool restrictions.", job.harness.info.label),
        ));
    }
    let mut hooks = host_hooks(&job, job.settings.host_tools.clone());
    if let Some(budget) = budget.filter(|_| job.caps.approvals) {
        hooks.approver = Arc::new(PausingApprover { inner: hooks.approver, budget: budget.clone() });
    }
    let mut native = match backend.open(job.settings.clone(), hooks).await {
        Ok(native) => native,
        Err(error) => {
            // The backend itself is unusable: the host points the user at the doctor for it.
            let data = PreflightErrorData {
                user_message: Some(format!("{} {}", job.harness.info.label, user_facing(&error))),
                phase: Some(PreflightPhase::Open),
                backend: Some(facts.backend.to_owned()),
            };
            return Err(ErrorObject::with_data(errors::PREFLIGHT_FAILED, format!("{} {error}", facts.process), &data));
        }
    };
    // Bound before the turn runs, so a bridge that dies mid-turn still resumes this native session.
    if let Some(native_id) = native.native_id() {
        job.settings.announce_native_id(&native_id);
    }
    if let Some(why) = native.resume_failure() {
        tracing::warn!(attempt = %attempt_id, "could not resume the session's {} ({why}); started a new one", facts.native_session);
        job.fresh = Some(super::projection::FreshReason::ResumeFailed(why));
    }
    // Never amnesia: a new native session starts from the transcript's history.
    let projection = seed_fresh_session(&job, &mut input);
    if job.cancel.is_cancelled() {
        native.shutdown().await;
        return Ok(not_run(&attempt_id, TerminalKind::Aborted, "cancelled before the turn started"));
    }

    let params = &job.params;
    let label = ModelLabel {
        api: params.model_api.clone().unwrap_or_else(|| facts.transcript_api.into()),
        provider: params.provider.clone(),
        model: params.model_id.clone(),
    };
    let pipeline = host_pipeline_for(&job, label);
    job.steer.opened(native.steering());
    let mut tools = RunningTools::default();
    let turn = {
        let mut sink = pipeline.gated(|event: &Event| {
            if let Event::TurnStarted { turn_id } = event {
                job.steer.turn_started(turn_id);
            }
            tools.observe(event, timed_out());
            match budget_terminal(event, timed_out(), params.timeout_ms) {
                Some(timeout) => pipeline.push(&timeout),
                None => pipeline.push(event),
            }
            if let Event::TurnStarted { .. } = event {
                // The budget's pauses join the stream only after `turnStarted`, which stays the
                // first event: an approval is handled beside the turn's own lines and can be asked
                // before the turn's start went through (a pause already under way is told then).
                if let Some(budget) = budget {
                    budget.attach(pipeline.sender());
                }
            }
        });
        native.run_turn(TurnRequest { input: &input, sink: &mut sink, cancel: &job.cancel }).await
    };
    job.steer.turn_ended();
    let native_id = native.native_id();
    let result = match turn {
        Ok(result) => result,
        Err(error) => failed_result(native_id.as_deref(), error.to_string()),
    };
    let mirrored = pipeline.finish(&result).await;
    if mirrored.dropped_delta_bytes > 0 {
        tracing::info!(attempt = %attempt_id, dropped = mirrored.dropped_delta_bytes, "the host read slowly; some streamed delta bytes were merged away");
    }
    native.shutdown().await;
    let mut outcome = outcome(&job, timed_out(), result, mirrored, native_id, tools.at_timeout());
    outcome.response.projection = projection;
    Ok(outcome)
}

/// Seeds a new native session's first turn with the transcript's history (projection.rs), when the
/// attempt does not resume and the host sent history; the notice the host shows says why.
fn seed_fresh_session(job: &AttemptJob, input: &mut TurnInput) -> Option<ProjectionNotice> {
    let why = job.fresh.as_ref()?;
    let history = job.params.history.as_ref().filter(|h| !h.entries.is_empty())?;
    input.text = super::projection::seeded_prompt(history, &input.text);
    let entries = u32::try_from(history.entries.len()).unwrap_or(u32::MAX);
    tracing::info!(attempt = %job.params.attempt_id, entries, omitted = history.omitted, reason = %why, "seeding a new native session with the transcript's history");
    Some(ProjectionNotice { reason: why.to_string(), entries, omitted: history.omitted })
}

/// The idempotency scope of the attempt's mirrored rows (`clawbridge:<runId>`), which is also the
/// transcript position a binding made by the attempt records.
pub fn mirror_scope(params: &AttemptRunParams) -> String {
    format!("clawbridge:{}", params.run_id.as_deref().unwrap_or(&params.attempt_id))
}

/// The agent's questions to the host's user stop `budget` while they wait for an answer (approvals
/// are wrapped with the hooks).
fn pause_budget_while_asking(job: &mut AttemptJob, budget: &AttemptBudget) {
    if let Some(inner) = job.settings.user_input.take() {
        job.settings.user_input = Some(Arc::new(PausingAsker { inner, budget: budget.clone() }));
    }
}

/// Which tool calls are running (started, no terminal yet), and whether any was when the attempt's
/// budget ran out. The budget's cancel makes running tools end, so the state is taken before the
/// first event seen after the budget fired is applied: what ran then was running at the timeout.
#[derive(Default)]
struct RunningTools {
    /// Call ids started and not finished; bounded by the calls one turn starts.
    running: std::collections::HashSet<String>,
    /// Whether any call was running when the budget fired, once an event after it was seen.
    at_budget: Option<bool>,
}

impl RunningTools {
    fn observe(&mut self, event: &Event, budget_spent: bool) {
        if budget_spent && self.at_budget.is_none() {
            self.at_budget = Some(!self.running.is_empty());
        }
        match event {
            Event::ToolStarted(call) => {
                self.running.insert(call.call_id.clone());
            }
            Event::ToolFinished(finish) => {
                self.running.remove(&finish.call.call_id);
            }
            _ => {}
        }
    }

    /// Whether a call was running when the budget fired (the current state if no event came after).
    fn at_timeout(&self) -> bool {
        self.at_budget.unwrap_or(!self.running.is_empty())
    }
}

/// What a person reads about a session that could not be opened.
fn user_facing(error: &BackendError) -> String {
    match error {
        BackendError::Start { source, .. } => format!("could not start: {source}"),
        BackendError::Conversation { source } => format!("could not start a conversation: {source}"),
        other => other.to_string(),
    }
}

/// The host tools an attempt declares to its backend: none when the harness takes none, when tools
/// are disabled or the host serves none; else the host's, filtered by `toolsAllow`.
fn host_tool_specs(caps: HostCapabilities, params: &AttemptRunParams, harness: &Harness) -> Vec<HostToolSpec> {
    if !harness.backend.facts().supports.host_tools || params.disable_tools || !caps.host_tools {
        return Vec::new();
    }
    // A set: thousands of tools against thousands of names must not cost their product.
    let allowed: Option<std::collections::HashSet<&str>> =
        params.tools_allow.as_ref().map(|allow| allow.iter().map(String::as_str).collect());
    params
        .host_tools
        .iter()
        .filter(|t| allowed.as_ref().is_none_or(|allow| allow.contains(t.name.as_str())))
        .cloned()
        .collect()
}

/// The attempt's hooks wired to the host: approvals, the host tools `specs`, tool terminals.
fn host_hooks(job: &AttemptJob, specs: Vec<HostToolSpec>) -> SessionHooks {
    let attempt_id = job.params.attempt_id.clone();
    let approver =
        Arc::new(HostApprover { peer: job.peer.clone(), attempt_id: attempt_id.clone(), enabled: job.caps.approvals });
    let tools = Arc::new(HostToolsClient { peer: job.peer.clone(), attempt_id: attempt_id.clone(), specs });
    let observer = Arc::new(HostObserver { peer: job.peer.clone(), attempt_id, enabled: job.caps.tool_terminals });
    SessionHooks { approver, tools, observer }
}

/// The turn's pipeline to the host for `job` (mirrored only when the host appends transcripts).
fn host_pipeline_for(job: &AttemptJob, label: ModelLabel) -> Pipeline {
    let params = &job.params;
    // A detached run writes nothing durable: no rows in the session's transcript.
    let mirror = (job.caps.transcript_append && !params.is_detached()).then(|| MirrorSpec {
        scope: mirror_scope(params),
        label,
        prompt: None,
    });
    host_pipeline(&job.peer, &params.attempt_id, &params.session_id, mirror)
}

/// The pipeline `serve` runs an attempt's turn through on the host connection `peer`: every event
/// streamed as a numbered `attempt/event` notification, then (when `mirror` is given) mirrored into
/// the host session `session_id`'s transcript, the rows of each burst of events one
/// `host/transcript/append` the host acknowledges before the next event is taken; while the queue in front holds its byte cap, the
/// turn reads no further native line (docs/peers/pipes.md#backpressure). Public so the benchmarks measure this very pipeline.
pub fn host_pipeline(peer: &RpcPeer, attempt_id: &str, session_id: &str, mirror: Option<MirrorSpec>) -> Pipeline {
    let stream = HostEventStream { peer: peer.clone(), attempt_id: attempt_id.to_string(), seq: 0 };
    let mirror = mirror.map(|spec| {
        let store = HostTranscript {
            peer: peer.clone(),
            attempt_id: attempt_id.to_string(),
            session_id: session_id.to_string(),
        };
        (spec, Box::new(store) as Box<dyn TranscriptStore>)
    });
    Pipeline::start(vec![Box::new(stream)], mirror)
}

/// The attempt's outcome from its turn's `result`: an abort caused by the attempt's budget is a
/// timeout; `native` is the native thread or session to bind to the host session.
fn outcome(
    job: &AttemptJob,
    timed_out: bool,
    mut result: AttemptResult,
    mirrored: Mirrored,
    native: Option<String>,
    tool_running: bool,
) -> AttemptOutcome {
    let budget_spent = timed_out && stopped_for_budget(&result.terminal);
    if budget_spent {
        result.terminal = budget_timeout(job.params.timeout_ms);
    }
    let mut response = to_response(&job.params.attempt_id, result, mirrored.owned, mirrored.key);
    response.tool_running_at_timeout = budget_spent && tool_running;
    AttemptOutcome { response, native_id: native }
}

/// The terminal of a turn the attempt's budget cut short.
fn budget_timeout(timeout_ms: Option<u64>) -> TurnTerminal {
    let ms = timeout_ms.unwrap_or_default();
    TurnTerminal {
        kind: TerminalKind::Timeout,
        message: Some(format!("the attempt's budget of {ms} ms ran out")),
        cause: Some(TerminalCause::RunBudget),
    }
}

/// The budget cancels the turn: whatever did not complete after that cancel ran out of budget.
fn stopped_for_budget(terminal: &TurnTerminal) -> bool {
    terminal.kind == TerminalKind::Aborted
        || (terminal.kind != TerminalKind::Ok && terminal.cause == Some(TerminalCause::Cancelled))
}

/// The streamed `turnTerminal` of a turn the budget cancelled says `timeout`, as the result will:
/// the host learns that its deadline fired when it happens, not only from the result.
fn budget_terminal(event: &Event, timed_out: bool, timeout_ms: Option<u64>) -> Option<Event> {
    match event {
        Event::TurnTerminal(terminal) if timed_out && stopped_for_budget(terminal) => {
            Some(Event::TurnTerminal(budget_timeout(timeout_ms)))
        }
        _ => None,
    }
}

/// Streams each event to the host as `attempt/event`, numbered.
struct HostEventStream {
    /// The host connection.
    peer: RpcPeer,
    /// The attempt the events belong to.
    attempt_id: String,
    /// The next event's number.
    seq: u64,
}

impl EventStage for HostEventStream {
    fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let note = AttemptEventRef { attempt_id: &self.attempt_id, seq: self.seq, event };
            self.seq += 1;
            if let Err(error) = self.peer.notify(methods::ATTEMPT_EVENT, Some(&note)).await {
                tracing::debug!(%error, "could not stream an attempt event");
            }
        })
    }
}

/// The host's transcript: each group of rows is a `host/transcript/append` the host acknowledges.
struct HostTranscript {
    /// The host connection.
    peer: RpcPeer,
    /// The attempt the rows belong to.
    attempt_id: String,
    /// The host session whose transcript takes them.
    session_id: String,
}

impl TranscriptStore for HostTranscript {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let params = TranscriptAppendParams {
                attempt_id: self.attempt_id.clone(),
                session_id: self.session_id.clone(),
                messages,
            };
            self.peer
                .request_with_timeout(methods::HOST_TRANSCRIPT_APPEND, Some(&params), APPEND_TIMEOUT)
                .await
                .map(drop)
                .map_err(|error| StoreError(Box::new(error)))
        })
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
        tool_running_at_timeout: false,
        runtime_artifact: None,
        projection: None,
    }
}

fn failed_result(native: Option<&str>, message: String) -> AttemptResult {
    let mut recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
    // The backend failed the turn itself (a request it refused), not a crash the driver saw.
    let terminal =
        TurnTerminal { kind: TerminalKind::Failed, message: Some(message), cause: Some(TerminalCause::BackendError) };
    recorder.record(&Event::TurnTerminal(terminal));
    recorder.finish(native.map(str::to_string))
}

/// A result for an attempt that ended before its turn started (cancelled early).
fn not_run(attempt_id: &str, kind: TerminalKind, message: &str) -> AttemptOutcome {
    let mut recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
    let message = (!message.is_empty()).then(|| message.to_string());
    recorder.record(&Event::TurnTerminal(TurnTerminal { kind, message, cause: Some(TerminalCause::Cancelled) }));
    let result = recorder.finish(None);
    AttemptOutcome { response: to_response(attempt_id, result, false, None), native_id: None }
}

fn preflight(message: String, user_message: String) -> ErrorObject {
    let data = PreflightErrorData { user_message: Some(user_message), ..PreflightErrorData::default() };
    ErrorObject::with_data(errors::PREFLIGHT_FAILED, message, &data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawbridge_bridge::events::{ToolCall, ToolFinish, ToolOutcome};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            tool_name: "exec".into(),
            arguments: serde_json::json!({"command": "sleep 60"}),
            native: true,
            native_mutation: None,
        }
    }

    fn finished(id: &str) -> Event {
        Event::ToolFinished(ToolFinish {
            call: call(id),
            outcome: ToolOutcome::Cancelled { reason: None },
            exit_code: None,
            execution_started: true,
            output: None,
        })
    }

    #[test]
    fn a_tool_the_budget_cancels_was_running_at_the_timeout() {
        let mut tools = RunningTools::default();
        tools.observe(&Event::ToolStarted(call("c1")), false);
        // The budget fires; the first event after it is the cancelled tool's terminal.
        tools.observe(&finished("c1"), true);
        tools.observe(&Event::TurnTerminal(budget_timeout(Some(10))), true);
        assert!(tools.at_timeout(), "c1 was running when the budget ran out");
    }

    #[test]
    fn a_tool_that_finished_before_the_budget_was_not_running_at_the_timeout() {
        let mut tools = RunningTools::default();
        tools.observe(&Event::ToolStarted(call("c1")), false);
        tools.observe(&finished("c1"), false);
        tools.observe(&Event::TurnTerminal(budget_timeout(Some(10))), true);
        assert!(!tools.at_timeout());
        // No event after the budget fired: the state at the end is the state at the timeout.
        let mut open = RunningTools::default();
        open.observe(&Event::ToolStarted(call("c2")), false);
        assert!(open.at_timeout());
    }
}
