//! A native agent as one object: the JSON-RPC peer talking to it and, when the bridge started it,
//! its supervised process. A spawned agent is spoken to on its stdio; an agent that already runs
//! is reached at its [`Endpoint`] (a Unix socket or a WebSocket), and then no process is owned;
//! one reached through a spawned pipe (`codex app-server proxy`, [`AgentConnection::spawn_websocket`])
//! owns the pipe's process, not the server's.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::exit::ExitState;
use crate::remote::{PrefixedWriter, StdinPreamble};
use crate::rpc::NoProcess;
use crate::rpc::{ExitReporter, PeerConfig, PeerEvents, RequestHandler, RpcPeer};
use crate::supervisor::{ChildProcess, CommandSpec, ExitWatch, SpawnError, SpawnOptions, StopOutcome, StopPolicy};
use crate::transport::bearer::WsAuth;
use crate::transport::endpoint::{self, ConnectError, Endpoint};

mod over_child;
pub use over_child::{PipeError, PipeLaunch};

/// How long, after the agent's stdout closes, to wait for its exit status before reporting without it.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// An agent speaking JSON-RPC: on the stdio of a child we spawned, or over a connection to one
/// that already listens.
#[derive(Debug)]
pub struct AgentConnection {
    /// The process and its group, when we spawned it; stopping it is this connection's last step.
    /// `None` for a connection to a listening agent: its process is not ours to stop.
    process: Option<ChildProcess>,
    /// Where we connected to, for a connection to a listening agent.
    endpoint: Option<Endpoint>,
    /// Closes the child's stdin when the protocol runs over a stream that never closes it itself
    /// (a WebSocket over a proxy's stdio): the proxy ends on its input's end.
    stdin_closer: Option<crate::transport::child_duplex::StdinCloser>,
    /// The protocol peer on the process's stdin/stdout, or on the connection.
    peer: RpcPeer,
}

impl AgentConnection {
    /// Spawns `spec` and starts a peer on its stdio.
    pub fn spawn(
        spec: &CommandSpec,
        spawn: SpawnOptions,
        peer: PeerConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<(AgentConnection, PeerEvents), SpawnError> {
        Self::spawn_prefixed(spec, None, spawn, peer, handler)
    }

    /// [`AgentConnection::spawn`], writing `preamble` to the child's stdin before the peer's first
    /// line: the environment block a launcher's remote wrapper reads (crate::remote).
    pub fn spawn_prefixed(
        spec: &CommandSpec,
        preamble: Option<StdinPreamble>,
        spawn: SpawnOptions,
        peer: PeerConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<(AgentConnection, PeerEvents), SpawnError> {
        let mut process = ChildProcess::spawn(spec, spawn)?;
        let stdin = process.take_stdin().expect("stdin is piped");
        let stdout = process.take_stdout().expect("stdout is piped");
        let reporter = Arc::new(ProcessExit(process.exit_watch()));
        let (peer, events) = match preamble {
            Some(preamble) => RpcPeer::start(stdout, PrefixedWriter::new(stdin, preamble), peer, handler, reporter),
            None => RpcPeer::start(stdout, stdin, peer, handler, reporter),
        };
        Ok((AgentConnection { process: Some(process), endpoint: None, stdin_closer: None, peer }, events))
    }

    /// Connects to an agent listening at `endpoint`, upgrading with `auth`, within `limit`, and
    /// starts a peer on the connection. Messages are capped at `peer.max_line_bytes`, as lines
    /// are on stdio; the rest of `peer` applies unchanged.
    pub async fn connect(
        endpoint: &Endpoint,
        auth: &WsAuth,
        limit: Duration,
        peer: PeerConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<(AgentConnection, PeerEvents), ConnectError> {
        let (frames, writer) = endpoint::open(endpoint, auth, peer.max_line_bytes, limit).await?;
        let (peer, events) = RpcPeer::start_framed(frames, writer, peer, handler, Arc::new(NoProcess));
        Ok((AgentConnection { process: None, endpoint: Some(endpoint.clone()), stdin_closer: None, peer }, events))
    }

    /// The protocol peer.
    pub fn peer(&self) -> &RpcPeer {
        &self.peer
    }

    /// The supervised process, when we spawned it.
    pub fn process(&self) -> Option<&ChildProcess> {
        self.process.as_ref()
    }

    /// The endpoint, for a connection to a listening agent.
    pub fn endpoint(&self) -> Option<&Endpoint> {
        self.endpoint.as_ref()
    }

    /// The staged stop: close stdin (through the peer, which owns it), then the process ladder.
    /// A connection to a listening agent is only closed (a close frame), waiting at most the
    /// policy's stdin grace for the agent to close its side; its process runs on.
    pub async fn shutdown(mut self, policy: StopPolicy) -> StopOutcome {
        self.peer.close();
        if let Some(closer) = self.stdin_closer.take() {
            // The close frame first (the server answers it, which ends our reading), then the
            // child's end of input, so the proxy exits on its own instead of by the ladder.
            let _ = tokio::time::timeout(policy.after_stdin_close, self.peer.closed()).await;
            closer.close();
        }
        match self.process.as_mut() {
            Some(process) => process.stop(policy).await,
            None => {
                let _ = tokio::time::timeout(policy.after_stdin_close, self.peer.closed()).await;
                StopOutcome::not_owned()
            }
        }
    }
}

struct ProcessExit(ExitWatch);

impl ExitReporter for ProcessExit {
    fn report(&self) -> BoxFuture<'static, (Option<ExitState>, String)> {
        let watch = self.0.clone();
        Box::pin(async move { watch.report(EXIT_REPORT_WAIT).await })
    }

    fn exited(&self) -> BoxFuture<'static, ()> {
        let watch = self.0.clone();
        Box::pin(async move { watch.exited().await })
    }
}
