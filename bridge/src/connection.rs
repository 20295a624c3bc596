//! A native agent as one object: its supervised process and the JSON-RPC peer on its stdio.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::exit::ExitState;
use crate::remote::{PrefixedWriter, StdinPreamble};
use crate::rpc::{ExitReporter, PeerConfig, PeerEvent, RequestHandler, RpcPeer};
use crate::supervisor::{ChildProcess, CommandSpec, ExitWatch, SpawnError, SpawnOptions, StopOutcome, StopPolicy};

/// How long, after the agent's stdout closes, to wait for its exit status before reporting without it.
const EXIT_REPORT_WAIT: Duration = Duration::from_secs(2);

/// A spawned agent speaking JSON-RPC on its stdio.
#[derive(Debug)]
pub struct AgentConnection {
    /// The process and its group; stopping it is this connection's last step.
    process: ChildProcess,
    /// The protocol peer on the process's stdin/stdout.
    peer: RpcPeer,
}

impl AgentConnection {
    /// Spawns `spec` and starts a peer on its stdio.
    pub fn spawn(
        spec: &CommandSpec,
        spawn: SpawnOptions,
        peer: PeerConfig,
        handler: Arc<dyn RequestHandler>,
    ) -> Result<(AgentConnection, mpsc::Receiver<PeerEvent>), SpawnError> {
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
    ) -> Result<(AgentConnection, mpsc::Receiver<PeerEvent>), SpawnError> {
        let mut process = ChildProcess::spawn(spec, spawn)?;
        let stdin = process.take_stdin().expect("stdin is piped");
        let stdout = process.take_stdout().expect("stdout is piped");
        let reporter = Arc::new(ProcessExit(process.exit_watch()));
        let (peer, events) = match preamble {
            Some(preamble) => RpcPeer::start(stdout, PrefixedWriter::new(stdin, preamble), peer, handler, reporter),
            None => RpcPeer::start(stdout, stdin, peer, handler, reporter),
        };
        Ok((AgentConnection { process, peer }, events))
    }

    /// The protocol peer.
    pub fn peer(&self) -> &RpcPeer {
        &self.peer
    }

    /// The supervised process.
    pub fn process(&self) -> &ChildProcess {
        &self.process
    }

    /// The staged stop: close stdin (through the peer, which owns it), then the process ladder.
    pub async fn shutdown(mut self, policy: StopPolicy) -> StopOutcome {
        self.peer.close();
        self.process.stop(policy).await
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
