//! `clawbridge serve`: the bridge side of host protocol v1 (docs/host-protocol.md) on stdin/stdout.
//!
//! - [`harness`]: the harnesses offered, their backends' availability, `harness/supports`.
//! - [`handler`]: the host's requests (`initialize`, `attempt/run`, …) and the connection state.
//! - [`attempt`]: one attempt on any backend's native session.
//! - [`hooks`]: approvals, host tools and tool terminals routed to the host.
//! - [`bindings`]: the sessions' native threads, persisted under the state directory.
//! - [`projection`]: whether the transcript moved without the native thread, and the history a new
//!   native session is seeded with.
//! - [`host_pipeline`]: a turn's events and transcript rows on the host connection (public: the
//!   benchmarks measure this very pipeline).
//!
//! stdout carries only protocol lines, every one from the peer's one writer (answers to lines the
//! peer could not read, `-32700` / `-32600` with `id: null`, go through it too, so no line is ever
//! torn), and reaches the process's stdout through a thread of its own
//! ([`ThreadWriter`](clawbridge_bridge::transport::thread_writer::ThreadWriter)): a flush hands the
//! bytes over without waiting for the write.

mod attempt;
mod bindings;
mod budget;
mod handler;
mod harness;
mod hooks;
mod inputs;
mod prepared_env;
mod projection;
mod steer;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::backend::Registry;
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_bridge::rpc::{LineCaps, NoProcess, PeerConfig, PeerEvent, RpcPeer, StreamProblem};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_bridge::transport::thread_writer::ThreadWriter;
use clawbridge_protocol::host::{errors, limits, methods};
use clawbridge_protocol::jsonrpc::{Dialect, ErrorObject, codes};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

pub use attempt::host_pipeline;
use handler::{Server, ServerHandler};

/// How long running attempts get to wind down when the host leaves.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves the host protocol on stdin/stdout for `backends` until the host closes stdin (or after
/// `shutdown`); then stops what the backends keep warm.
pub async fn serve(state_dir: &Path, backends: Registry) -> anyhow::Result<()> {
    serve_on(tokio::io::stdin(), ThreadWriter::stdout()?, state_dir, backends).await
}

/// [`serve`] on stdin/stdout under `limits` (the effective settings').
pub async fn serve_configured(state_dir: &Path, backends: Registry, limits: ServeLimits) -> anyhow::Result<()> {
    serve_on_with(tokio::io::stdin(), ThreadWriter::stdout()?, state_dir, backends, limits).await
}

/// [`serve`] on any byte streams: the host's lines arrive on `input`, the bridge's go to `output`.
pub async fn serve_on<R, W>(input: R, output: W, state_dir: &Path, backends: Registry) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_on_with(input, output, state_dir, backends, ServeLimits::from_env()).await
}

/// The limits of one `serve` connection that are not fixed by the protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// The bytes the running attempts' inputs may hold together
    /// ([`limits::ATTEMPT_INPUT_BUDGET_BYTES`] by default, [`INPUT_BUDGET_VAR`] to change it).
    pub input_budget_bytes: usize,
    /// How long a turn may go without progress before the bridge ends it; `None`: each backend's own.
    pub turn_idle_timeout: Option<Duration>,
}

impl ServeLimits {
    /// The defaults, with [`INPUT_BUDGET_VAR`] and [`attempt::TURN_IDLE_TIMEOUT_ENV`] applied when set.
    pub fn from_env() -> Self {
        Self { input_budget_bytes: input_budget(), turn_idle_timeout: attempt::turn_idle_timeout_from_env() }
    }

    /// The limits under the effective settings (`serve.input-budget-bytes`, `agents.turn-idle-timeout-ms`).
    pub fn from_settings(settings: &crate::config::Settings) -> Self {
        let input_budget_bytes = settings
            .serve
            .input_budget_bytes
            .value
            .map_or(limits::ATTEMPT_INPUT_BUDGET_BYTES, |bytes| usize::try_from(bytes).unwrap_or(usize::MAX));
        // 0 means "each backend's own", as the variable always did.
        let turn_idle_timeout =
            settings.agents.turn_idle_timeout_ms.value.filter(|ms| *ms > 0).map(Duration::from_millis);
        Self { input_budget_bytes, turn_idle_timeout }
    }
}

/// [`serve_on`] under explicit limits.
pub async fn serve_on_with<R, W>(
    input: R,
    output: W,
    state_dir: &Path,
    backends: Registry,
    serve_limits: ServeLimits,
) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let registry = match PidRegistry::open(state_dir.join("pids")) {
        Ok(registry) => {
            match registry.reap_orphans(Duration::from_secs(2)).await {
                Ok(reaped) => {
                    for orphan in reaped {
                        tracing::warn!(pgid = ?orphan.pgid, members = orphan.members, outside_group = orphan.outside_group, "stopped an agent left behind by a crashed bridge");
                    }
                }
                Err(error) => tracing::warn!(%error, "could not reap orphaned agents"),
            }
            Some(registry)
        }
        Err(error) => {
            tracing::warn!(%error, "no pid registry; orphans of a crash will not be reaped");
            None
        }
    };
    let versions = VersionProbe::open(state_dir.join("serve").join("version-cache.json"));
    let catalog = harness::Catalog::probe(&backends, &versions).await;
    versions.save();

    let (peer_tx, peer_rx) = watch::channel(None);
    let bindings = bindings::Bindings::new(Some(state_dir.join("serve").join("bindings")));
    let server = Arc::new(
        Server::new(catalog, registry, peer_rx, bindings, serve_limits.input_budget_bytes)
            .with_turn_idle_timeout(serve_limits.turn_idle_timeout),
    );
    let config = PeerConfig {
        dialect: Dialect::JsonRpc2,
        max_line_bytes: limits::MAX_LINE_BYTES,
        caps: host_caps(),
        // The server's fallback never reads params: keeping them would hold every attempt's whole
        // request (unknown members too) for as long as it runs.
        keep_params_for_fallback: false,
        // Serve only logs a host notification's method.
        decode_notification_params: false,
        strict_jsonrpc: true,
        // Attempts run long; each call inside has its own deadline.
        handler_timeout: Duration::from_secs(24 * 3600),
        max_concurrent_handlers: 1024,
        label: "host".into(),
        // A host may read slowly: its lag holds the attempts' native agents back, never ends them.
        write_timeout: None,
        ..PeerConfig::default()
    };
    let (peer, mut events) =
        RpcPeer::start(input, output, config, Arc::new(ServerHandler(server.clone())), Arc::new(NoProcess));
    let _ = peer_tx.send(Some(peer.clone()));
    let mut shutdown = server.shutdown_watch();

    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(PeerEvent::Problem(problem)) => {
                    if let Some(error) = problem_reply(&problem) {
                        // Waits while stdout is busy (reading the host waits too): the answers are
                        // backpressure, never dropped, and a host that floods garbage while not
                        // reading grows no memory.
                        if let Err(error) = peer.answer_unreadable(error).await {
                            tracing::debug!(%error, "stdout is gone; an unusable line goes unanswered");
                        }
                    }
                }
                Some(PeerEvent::Notification(note)) => {
                    tracing::debug!(method = %note.method, "ignoring a host notification");
                }
                Some(PeerEvent::Closed(gone)) => {
                    tracing::info!(%gone, "the host closed the connection; stopping every attempt");
                    server.stop_all(DRAIN_TIMEOUT).await;
                    answers_owed(&peer).await;
                    break;
                }
                None => {
                    server.stop_all(DRAIN_TIMEOUT).await;
                    answers_owed(&peer).await;
                    break;
                }
                Some(_) => {}
            },
            // The watch's guard must not live across the awaits below (the server future is Send).
            () = async { drop(shutdown.wait_for(|done| *done).await) } => {
                // The answer is on its way; give the host a moment to close stdin, then leave.
                let _ = tokio::time::timeout(Duration::from_secs(2), peer.closed()).await;
                break;
            }
        }
    }
    // No attempt runs any more: what backends kept warm for their sessions' next attempts stops.
    backends.shutdown().await;
    // Every answer already sent is still written: a host that closed only its input reads on.
    peer.finish_output();
    let _ = tokio::time::timeout(Duration::from_secs(2), peer.output_ended()).await;
    Ok(())
}

/// Waits, for at most [`DRAIN_TIMEOUT`], until every request the host wrote before it closed its
/// input is answered: a host that pipelines and closes at once still reads every answer.
async fn answers_owed(peer: &RpcPeer) {
    if tokio::time::timeout(DRAIN_TIMEOUT, peer.answered()).await.is_err() {
        tracing::warn!("some requests of the closed connection were still unanswered after {DRAIN_TIMEOUT:?}");
    }
}

/// The environment variable that lowers (or raises) the attempts' input budget, in bytes: for
/// machines with little memory, and for tests.
pub const INPUT_BUDGET_VAR: &str = "CLAWBRIDGE_SERVE_INPUT_BUDGET_BYTES";

/// The attempts' input budget: [`limits::ATTEMPT_INPUT_BUDGET_BYTES`] unless [`INPUT_BUDGET_VAR`]
/// names another number of bytes.
fn input_budget() -> usize {
    let Ok(value) = std::env::var(INPUT_BUDGET_VAR) else {
        return limits::ATTEMPT_INPUT_BUDGET_BYTES;
    };
    match value.trim().parse() {
        Ok(bytes) => bytes,
        Err(_) => {
            tracing::warn!(%value, "{INPUT_BUDGET_VAR} is not a number of bytes; using the default budget");
            limits::ATTEMPT_INPUT_BUDGET_BYTES
        }
    }
}

/// The host protocol's caps by method (docs/host-protocol.md#limits).
fn host_caps() -> LineCaps {
    LineCaps {
        default_incoming: limits::DEFAULT_REQUEST_MAX_BYTES,
        incoming: [methods::ATTEMPT_RUN, methods::ATTEMPT_STEER]
            .into_iter()
            .map(|method| (method, limits::request_cap(method)))
            .collect(),
        default_answer: limits::DEFAULT_ANSWER_MAX_BYTES,
        answers: vec![(methods::HOST_TOOL_EXECUTE, limits::answer_cap(methods::HOST_TOOL_EXECUTE))],
        too_large_code: errors::REQUEST_TOO_LARGE,
    }
}

/// The error answer for a line the peer could not use, when JSON-RPC asks for one.
fn problem_reply(problem: &StreamProblem) -> Option<ErrorObject> {
    let (code, message) = match problem {
        StreamProblem::NotJson { error, .. } => (codes::PARSE_ERROR, format!("parse error: {error}")),
        StreamProblem::NotJsonRpc { error, .. } => (codes::INVALID_REQUEST, format!("invalid request: {error}")),
        StreamProblem::InvalidUtf8 { len } => (codes::PARSE_ERROR, format!("a {len}-byte line is not UTF-8")),
        StreamProblem::Oversize { len } => (codes::INVALID_REQUEST, format!("a {len}-byte line is over the size cap")),
        _ => return None,
    };
    Some(ErrorObject::new(code, message))
}
