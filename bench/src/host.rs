//! The host's end of the connection serve's pipeline writes to, played by the bench. The bridge's
//! side is a real `RpcPeer` writing into an in-process pipe as serve's does (1 MiB, the JSON-RPC 2.0
//! dialect); this end reads it line by line, counts the `attempt/event` notifications (and, for the
//! latency scenario, times the stamps in them) and answers each `host/transcript/append` at once,
//! counting its rows, as the OpenClaw plugin acknowledges an append. Serve copies its peer's lines to
//! stdout through a pump for another process to read; here they are read where the pump would.

use std::sync::Arc;

use anyhow::{Context, bail};
use clawbridge_bridge::rpc::{NoProcess, PeerConfig, RejectAll, RpcPeer};
use clawbridge_protocol::host::methods;
use clawbridge_protocol::jsonrpc::Dialect;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::agent::STAMP_MARK;
use super::sys;

/// How every request line the bridge writes starts (`outgoing::Call` puts `jsonrpc`, then `id`).
const REQUEST_START: &str = r#"{"jsonrpc":"2.0","id":"#;
/// How every `attempt/event` notification starts.
const EVENT_START: &str = r#"{"jsonrpc":"2.0","method":"attempt/event","#;

/// What reached the host.
#[derive(Debug, Default)]
pub struct Delivered {
    /// `attempt/event` notifications.
    pub notifications: u64,
    /// Their bytes, newlines included.
    pub bytes: u64,
    /// The `seq` of the last one (the pipeline numbers them from 0, in order).
    pub last_seq: Option<u64>,
    /// `host/transcript/append` requests answered.
    pub appends: u64,
    /// The transcript rows they carried.
    pub rows: u64,
    /// For stamped lines: wall-clock nanoseconds from the peer writing the native line to the host
    /// receiving its notification.
    pub latencies_ns: Vec<u64>,
    /// The earliest and latest stamps seen (when the peer wrote its first and last stamped line).
    pub stamp_span: Option<(u64, u64)>,
}

/// One attempt's host connection: the bridge's peer, and the task playing the host.
pub struct HostConnection {
    /// The bridge's side, for the pipeline's stages.
    peer: RpcPeer,
    /// Cancelled once no request can come any more: the host then closes its side.
    done: CancellationToken,
    /// The host.
    host: JoinHandle<anyhow::Result<Delivered>>,
}

impl HostConnection {
    /// Connects a bridge-side peer to a host that times stamped lines when `stamps` is set.
    pub fn start(stamps: bool) -> HostConnection {
        let (peer_out, host_in) = tokio::io::duplex(1 << 20);
        let (host_out, peer_in) = tokio::io::duplex(64 << 10);
        let config = PeerConfig { dialect: Dialect::JsonRpc2, label: "host".into(), ..PeerConfig::default() };
        // The host sends no requests or notifications of its own, only answers: nothing to consume.
        let (peer, _events) = RpcPeer::start(peer_in, peer_out, config, Arc::new(RejectAll), Arc::new(NoProcess));
        let done = CancellationToken::new();
        let host = tokio::spawn(play(host_in, host_out, stamps, done.clone()));
        HostConnection { peer, done, host }
    }

    /// The bridge's side of the connection.
    pub fn peer(&self) -> &RpcPeer {
        &self.peer
    }

    /// Waits until every line the bridge queued has reached the host. Call once the pipeline has
    /// finished (it holds the other handles of the peer, and its last append is answered): the host
    /// closes its side, the peer's reader ends, and with the last handle gone its writer drains.
    pub async fn finish(self) -> anyhow::Result<Delivered> {
        let HostConnection { peer, done, host } = self;
        drop(peer);
        done.cancel();
        host.await.context("the host task panicked")?
    }
}

/// The parts of a `host/transcript/append` request the host needs.
#[derive(Deserialize)]
struct Append {
    /// The request id, answered with.
    id: Value,
    /// `host/transcript/append`.
    method: String,
    /// The rows.
    params: AppendParams,
}

/// `host/transcript/append` params, the rows left undecoded.
#[derive(Deserialize)]
struct AppendParams {
    /// One per row.
    messages: Vec<IgnoredAny>,
}

/// The host: reads the bridge's lines until they end, answering appends while it may.
async fn play(
    from: DuplexStream,
    to: DuplexStream,
    stamps: bool,
    done: CancellationToken,
) -> anyhow::Result<Delivered> {
    let mut lines = BufReader::with_capacity(64 << 10, from).lines();
    let mut to = Some(to);
    let mut delivered = Delivered::default();
    let mut last = String::new();
    loop {
        let line = tokio::select! {
            biased;
            line = lines.next_line() => match line.context("reading the bridge's lines")? {
                Some(line) => line,
                None => break,
            },
            () = done.cancelled(), if to.is_some() => {
                to = None;
                continue;
            }
        };
        if line.starts_with(EVENT_START) {
            let now = if stamps { sys::wall_nanos() } else { 0 };
            delivered.notifications += 1;
            delivered.bytes += line.len() as u64 + 1;
            if stamps {
                take_stamps(line.as_bytes(), now, &mut delivered);
            }
            last = line;
        } else if line.starts_with(REQUEST_START) {
            let append: Append =
                serde_json::from_str(&line).context("the bridge sent a request the host cannot read")?;
            if append.method != methods::HOST_TRANSCRIPT_APPEND {
                bail!("the bridge asked the host for `{}`", append.method);
            }
            delivered.appends += 1;
            delivered.rows += append.params.messages.len() as u64;
            let Some(to) = to.as_mut() else { bail!("the bridge asked for an append after its pipeline finished") };
            let mut answer = json!({"jsonrpc": "2.0", "id": append.id, "result": {"entries": []}}).to_string();
            answer.push('\n');
            to.write_all(answer.as_bytes()).await.context("answering an append")?;
            to.flush().await.context("answering an append")?;
        } else {
            bail!("the bridge wrote a line the host does not expect: {}", line.chars().take(120).collect::<String>());
        }
    }
    if !last.is_empty() {
        let note: Value = serde_json::from_str(&last).context("the last attempt/event is not JSON")?;
        delivered.last_seq = note["params"]["seq"].as_u64();
    }
    Ok(delivered)
}

/// Times every stamp in `line`, received at `now`.
fn take_stamps(line: &[u8], now: u64, delivered: &mut Delivered) {
    let mut rest = line;
    while let Some(at) = rest.windows(STAMP_MARK.len()).position(|w| w == STAMP_MARK) {
        let digits = &rest[at + STAMP_MARK.len()..];
        let end = digits.iter().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
        if let Some(stamp) = std::str::from_utf8(&digits[..end]).ok().and_then(|d| d.parse::<u64>().ok()) {
            delivered.latencies_ns.push(now.saturating_sub(stamp));
            let (first, last) = delivered.stamp_span.unwrap_or((stamp, stamp));
            delivered.stamp_span = Some((first.min(stamp), last.max(stamp)));
        }
        rest = &digits[end..];
    }
}
