//! A `serve_on_with` server on one end of an in-memory pipe, the test writing and reading raw lines
//! on the other as a host would (tests/serve_order.rs, tests/serve_wire.rs).

use std::ffi::OsString;
use std::sync::Arc;
use std::time::Duration;

use clawbridge::serve::ServeLimits;
use clawbridge_adapters::codex::CodexBackend;
use clawbridge_bridge::backend::Registry;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

/// How long a test waits for one line or for the server's end: a hang is a failure.
const LINE_LIMIT: Duration = Duration::from_secs(60);

/// A server on one end of a pipe; the test writes and reads raw lines on the other.
pub struct Connection {
    /// The host's end: what the bridge reads.
    pub to_bridge: tokio::io::WriteHalf<DuplexStream>,
    /// The host's end: what the bridge writes, by line.
    pub from_bridge: Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
    /// The server, to see it end cleanly.
    server: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// The state directory, removed with the connection.
    _state: tempfile::TempDir,
}

/// Only the demo harness: no peer needed.
pub fn demo_only() -> Registry {
    let clawbridge = std::path::PathBuf::from(env!("CARGO_BIN_EXE_clawbridge"));
    Registry::new().with(Arc::new(CodexBackend::demo(clawbridge, vec![OsString::from("demo-agent")], "0.169.0")))
}

/// A fresh server (its own state dir) under `limits`.
pub fn connect(limits: ServeLimits) -> Connection {
    let state = tempfile::tempdir().unwrap();
    let (host, bridge) = tokio::io::duplex(1 << 20);
    let (bridge_in, bridge_out) = tokio::io::split(bridge);
    let dir = state.path().to_path_buf();
    let server = tokio::spawn(async move {
        clawbridge::serve::serve_on_with(bridge_in, bridge_out, &dir, demo_only(), limits).await
    });
    let (from_bridge, to_bridge) = tokio::io::split(host);
    Connection { to_bridge, from_bridge: BufReader::new(from_bridge).lines(), server, _state: state }
}

impl Connection {
    /// Writes `lines` in one write, as a host that pipelines its requests would.
    pub async fn write_together(&mut self, lines: &[impl std::fmt::Display]) {
        let mut bytes = String::new();
        for line in lines {
            bytes.push_str(&line.to_string());
            bytes.push('\n');
        }
        self.to_bridge.write_all(bytes.as_bytes()).await.unwrap();
    }

    /// Writes one line.
    pub async fn write_line(&mut self, line: &str) {
        self.write_together(&[line]).await;
    }

    /// The next line the bridge writes, as written.
    pub async fn next_line(&mut self) -> String {
        tokio::time::timeout(LINE_LIMIT, self.from_bridge.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("the bridge is still there")
    }

    /// End of input, as a host that exits: the bridge stops and `serve_on_with` returns cleanly.
    pub async fn close(mut self) {
        self.to_bridge.shutdown().await.unwrap();
        tokio::time::timeout(LINE_LIMIT, self.server).await.expect("serve ends").unwrap().unwrap();
    }
}
