//! An agent's socket reached through a spawned byte pipe — `codex app-server proxy`, directly or
//! under a launcher (`ssh -T host`) — instead of by connecting to it: the child is supervised as
//! any agent, and the WebSocket upgrade and then the frames run over its stdin and stdout
//! (docs/remote.md#codexs-managed-daemon-and-app-server-proxy).

use std::sync::Arc;
use std::time::Duration;

use super::{AgentConnection, EXIT_REPORT_WAIT, ProcessExit};
use crate::exit::ExitState;
use crate::remote::{PrefixedWriter, StdinPreamble};
use crate::rpc::{PeerConfig, PeerEvents, RequestHandler, RpcPeer};
use crate::supervisor::{ChildProcess, CommandSpec, SpawnError, SpawnOptions, StopPolicy};
use crate::transport::bearer::WsAuth;
use crate::transport::child_duplex::{ChildDuplex, StdinWriter};
use crate::transport::endpoint::{self, BoxedIo, ConnectError, Endpoint};

/// What to spawn to reach a socket through its stdio, and how errors name it.
#[derive(Debug)]
pub struct PipeLaunch {
    /// The command: the proxy, or the launcher running it on the far side.
    pub command: CommandSpec,
    /// What goes on the child's stdin before the upgrade (the remote wrapper's environment).
    pub preamble: Option<StdinPreamble>,
    /// How the child is supervised.
    pub spawn: SpawnOptions,
    /// How the child is stopped when the upgrade fails.
    pub stop: StopPolicy,
    /// The pipe as the user configured it, for messages: the proxy's command line and the
    /// launcher it runs through (the wrapped command line holds the whole wrapper script).
    pub via: String,
}

/// Why the connection through a spawned pipe could not be opened. Every message names the pipe
/// (launcher and proxy command) and the socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PipeError {
    /// The command could not be started (the launcher or the proxy is missing here).
    #[error("cannot start {via} to reach {endpoint}")]
    Spawn {
        /// The pipe.
        via: String,
        /// The socket.
        endpoint: Endpoint,
        /// The supervisor's error.
        #[source]
        source: SpawnError,
    },
    /// The pipe ended before the upgrade was answered: nothing listens on the socket (the daemon
    /// is stopped), the launcher could not log in, or the far side has no such program.
    #[error("nothing answered at {endpoint}: the proxy ended ({}){}; launched as {via}", exit_text(*.exit), stderr_suffix(.stderr))]
    Ended {
        /// The pipe.
        via: String,
        /// The socket.
        endpoint: Endpoint,
        /// How the child ended, if it was seen to.
        exit: Option<ExitState>,
        /// The start of what it wrote to stderr, without a backtrace.
        stderr: String,
    },
    /// The upgrade through the pipe was refused or broken (a credential refused, not a
    /// WebSocket server at the far end).
    #[error("the WebSocket upgrade through {via} failed")]
    Upgrade {
        /// The pipe.
        via: String,
        /// What the upgrade reported (it names the socket).
        #[source]
        source: ConnectError,
    },
    /// Starting the pipe and the upgrade took longer than allowed.
    #[error("{via} did not bring up the app-server at {endpoint} within {after:?}")]
    TimedOut {
        /// The pipe.
        via: String,
        /// The socket.
        endpoint: Endpoint,
        /// The limit.
        after: Duration,
    },
}

fn exit_text(exit: Option<ExitState>) -> String {
    exit.map_or_else(|| "its output closed".to_owned(), |exit| exit.to_string())
}

fn stderr_suffix(stderr: &str) -> String {
    if stderr.is_empty() { String::new() } else { format!(": {stderr}") }
}

/// The most characters of the child's stderr kept for the error.
const MAX_STDERR_CHARS: usize = 600;

/// `stderr` without the backtrace a Rust CLI appends to its error (codex's proxy prints a page
/// of `<unknown>` frames), blank lines dropped and lines joined, so the error fits on one line.
fn reason(stderr: &str) -> String {
    let before_backtrace = stderr.split("Stack backtrace:").next().unwrap_or_default();
    // Warnings printed before it say nothing about why it ended.
    let before_backtrace = before_backtrace.find("Error:").map_or(before_backtrace, |at| &before_backtrace[at..]);
    let joined = before_backtrace.lines().map(str::trim).filter(|line| !line.is_empty()).collect::<Vec<_>>().join(" ");
    joined.chars().filter(|c| !c.is_control()).take(MAX_STDERR_CHARS).collect()
}

impl AgentConnection {
    /// Spawns `launch` and runs the WebSocket upgrade to `endpoint` over the child's stdio, with
    /// `auth`'s bearer, within `limit`; then starts a peer on the frames, as
    /// [`AgentConnection::connect`] does on a socket. The child is owned as a spawned agent is:
    /// [`AgentConnection::shutdown`] closes the WebSocket and stops it; the server behind the
    /// socket is not ours and runs on.
    pub async fn spawn_websocket(
        launch: PipeLaunch,
        endpoint: &Endpoint,
        auth: &WsAuth,
        limit: Duration,
        peer: PeerConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<(AgentConnection, PeerEvents), PipeError> {
        let PipeLaunch { command, preamble, spawn, stop, via } = launch;
        let mut process = ChildProcess::spawn(&command, spawn).map_err(|source| PipeError::Spawn {
            via: via.clone(),
            endpoint: endpoint.clone(),
            source,
        })?;
        let stdin = process.take_stdin().expect("stdin is piped");
        let stdout = process.take_stdout().expect("stdout is piped");
        let writer: StdinWriter = match preamble {
            Some(preamble) => Box::new(PrefixedWriter::new(stdin, preamble)),
            None => Box::new(stdin),
        };
        let (duplex, stdin_closer) = ChildDuplex::new(stdout, writer);
        let io: BoxedIo = Box::new(duplex);
        let upgraded = tokio::time::timeout(limit, endpoint::upgrade(endpoint, io, auth, peer.max_line_bytes)).await;
        let error = match upgraded {
            Ok(Ok((frames, writer))) => {
                let reporter = Arc::new(ProcessExit(process.exit_watch()));
                let (peer, events) = RpcPeer::start_framed(frames, writer, peer, handler, reporter);
                let conn = AgentConnection {
                    process: Some(process),
                    endpoint: Some(endpoint.clone()),
                    stdin_closer: Some(stdin_closer),
                    peer,
                };
                return Ok((conn, events));
            }
            Ok(Err(error)) => error,
            Err(_) => {
                process.stop(stop).await;
                return Err(PipeError::TimedOut { via, endpoint: endpoint.clone(), after: limit });
            }
        };
        let failed = match error {
            // An answer came through the pipe: the far end is there and said no.
            ConnectError::Refused { .. } | ConnectError::Rejected { .. } | ConnectError::BadToken { .. } => {
                PipeError::Upgrade { via, source: error }
            }
            // Otherwise the pipe broke: how the child ended says why.
            _ => {
                let (exit, stderr) = process.exit_watch().report(EXIT_REPORT_WAIT).await;
                match exit {
                    Some(exit) => {
                        PipeError::Ended { via, endpoint: endpoint.clone(), exit: Some(exit), stderr: reason(&stderr) }
                    }
                    None if stderr.trim().is_empty() => PipeError::Upgrade { via, source: error },
                    None => PipeError::Ended { via, endpoint: endpoint.clone(), exit: None, stderr: reason(&stderr) },
                }
            }
        };
        process.stop(stop).await;
        Err(failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_is_the_error_without_its_backtrace_on_one_line() {
        let stderr = "WARNING: proceeding\nError: failed to connect to socket at /s.sock\n\nCaused by:\n    No such file or directory (os error 2)\n\nStack backtrace:\n   0: <unknown>\n   1: <unknown>\n";
        assert_eq!(
            reason(stderr),
            "Error: failed to connect to socket at /s.sock Caused by: No such file or directory (os error 2)"
        );
        let long = format!("warning\nError: the start{}", "x".repeat(5000));
        assert!(reason(&long).starts_with("Error: the start") && reason(&long).chars().count() == MAX_STDERR_CHARS);
        assert_eq!(reason("no error line\n  at all\n"), "no error line at all");
    }
}
