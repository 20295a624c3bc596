//! `clawbridge serve`: the bridge side of host protocol v1 (docs/host-protocol.md) on stdin/stdout.
//!
//! - [`harness`]: the harnesses offered, their backends' availability, `harness/supports`.
//! - [`handler`]: the host's requests (`initialize`, `attempt/run`, …) and the connection state.
//! - [`attempt`]: one attempt on a Codex session (real or the demo replay).
//! - [`hooks`]: approvals, host tools and tool terminals routed to the host.
//! - [`claude`]: the Claude Code harness (probe; attempts on the session's warm CLI).
//! - [`bindings`]: the sessions' native threads, persisted under the state directory.
//! - [`queue`]: the non-blocking, bounded event queue between a native reader and the host.
//! - [`probe`]: finding backend executables; their `--version`, cached while the file is unchanged.
//!
//! stdout carries only protocol lines: the peer writes through an in-process pipe that a pump copies
//! to stdout line by line, so the pump can also answer lines the peer could not parse (`-32700`)
//! without ever tearing a line.

mod attempt;
mod bindings;
mod claude;
mod handler;
mod harness;
mod hooks;
mod probe;
// `clawbridge bench` feeds its measured attempts through the same queue.
pub(crate) mod queue;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::rpc::{NoProcess, PeerConfig, PeerEvent, RpcPeer, StreamProblem};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_protocol::jsonrpc::{Dialect, codes};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};

use handler::{Server, ServerHandler};

/// Error answers to unusable lines that may wait for stdout; more are dropped (they answer no id).
const EXTRA_LINES: usize = 256;

/// How long running attempts get to wind down when the host leaves.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Serves the host protocol until the host closes stdin (or after `shutdown`).
pub async fn serve(state_dir: &Path) -> anyhow::Result<()> {
    let registry = match PidRegistry::open(state_dir.join("pids")) {
        Ok(registry) => {
            match registry.reap_orphans(Duration::from_secs(2)).await {
                Ok(reaped) => {
                    for orphan in reaped {
                        tracing::warn!(pgid = orphan.pgid, "stopped a process group left behind by a crashed bridge");
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
    let versions = probe::VersionProbe::open(Some(state_dir));
    let catalog = harness::Catalog::probe(&versions).await;
    versions.save();

    // The peer writes into a pipe; the pump copies whole lines to stdout and adds its own.
    let (peer_out, pump_in) = tokio::io::duplex(1 << 20);
    // Bounded: a host that floods garbage while not reading must not grow memory.
    let (extra_tx, extra_rx) = mpsc::channel::<String>(EXTRA_LINES);
    let pump = tokio::spawn(pump(pump_in, extra_rx));

    let (peer_tx, peer_rx) = watch::channel(None);
    let bindings = bindings::Bindings::new(Some(state_dir.join("serve").join("bindings")));
    let server = Arc::new(Server::new(catalog, registry, peer_rx, bindings));
    let config = PeerConfig {
        dialect: Dialect::JsonRpc2,
        // Attempts run long; each call inside has its own deadline.
        handler_timeout: Duration::from_secs(24 * 3600),
        max_concurrent_handlers: 1024,
        label: "host".into(),
        ..PeerConfig::default()
    };
    let (peer, mut events) = RpcPeer::start(
        tokio::io::stdin(),
        peer_out,
        config,
        Arc::new(ServerHandler(server.clone())),
        Arc::new(NoProcess),
    );
    let _ = peer_tx.send(Some(peer.clone()));
    let mut shutdown = server.shutdown_watch();

    loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(PeerEvent::Problem(problem)) => {
                    if let Some(line) = problem_reply(&problem) {
                        if extra_tx.try_send(line).is_err() {
                            tracing::warn!("the host is not reading; dropped the error answer to an unusable line");
                        }
                    }
                }
                Some(PeerEvent::Notification(note)) => {
                    tracing::debug!(method = %note.method, "ignoring a host notification");
                }
                Some(PeerEvent::Closed(gone)) => {
                    tracing::info!(%gone, "the host closed the connection; stopping every attempt");
                    server.stop_all(DRAIN_TIMEOUT).await;
                    break;
                }
                None => {
                    server.stop_all(DRAIN_TIMEOUT).await;
                    break;
                }
                Some(_) => {}
            },
            _ = shutdown.wait_for(|done| *done) => {
                // The answer is on its way; give the host a moment to close stdin, then leave.
                let _ = tokio::time::timeout(Duration::from_secs(2), peer.closed()).await;
                break;
            }
        }
    }
    // No attempt runs any more: the Claude CLIs kept warm for their sessions' next attempts stop.
    claude::shutdown().await;
    peer.close();
    drop(extra_tx);
    drop(peer);
    let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
    Ok(())
}

/// The error answer for a line the peer could not use, when JSON-RPC asks for one.
fn problem_reply(problem: &StreamProblem) -> Option<String> {
    let (code, message) = match problem {
        StreamProblem::NotJson { error, .. } => (codes::PARSE_ERROR, format!("parse error: {error}")),
        StreamProblem::NotJsonRpc { error, .. } => (codes::INVALID_REQUEST, format!("invalid request: {error}")),
        StreamProblem::InvalidUtf8 { len } => (codes::PARSE_ERROR, format!("a {len}-byte line is not UTF-8")),
        StreamProblem::Oversize { len } => (codes::INVALID_REQUEST, format!("a {len}-byte line is over the size cap")),
        _ => return None,
    };
    Some(json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}).to_string())
}

/// Copies the peer's lines and the extra lines to stdout, a whole line at a time.
async fn pump(from_peer: tokio::io::DuplexStream, mut extra: mpsc::Receiver<String>) {
    let mut stdout = tokio::io::stdout();
    let mut lines = BufReader::new(from_peer).lines();
    let mut extra_open = true;
    loop {
        let line = tokio::select! {
            line = lines.next_line() => match line {
                Ok(Some(line)) => line,
                _ => break,
            },
            line = extra.recv(), if extra_open => match line {
                Some(line) => line,
                None => {
                    extra_open = false;
                    continue;
                }
            },
        };
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if stdout.write_all(&bytes).await.is_err() || stdout.flush().await.is_err() {
            break;
        }
    }
}
