//! The host side of a measured attempt, built the way `clawbridge serve` builds it
//! (`src/serve/attempt.rs`, `src/serve/mod.rs`): the session's sink pushes each event into serve's
//! own non-blocking, delta-coalescing [`EventQueue`]; one task encodes each event it takes as an
//! `attempt/event` JSON-RPC notification (same typed params, same `outgoing::Call` encoding and
//! bounded line writer as `RpcPeer::notify`) into an in-process pipe, whose pump copies whole lines
//! to the host's stream — here a null sink that counts (and, for the latency scenario, times) what
//! arrives. The same task mirrors the turn into a JSONL transcript (`TranscriptMirror` →
//! `JsonlSink`, as `clawbridge run` does; serve hands the rows to the host instead).

use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use anyhow::Context;
use clawbridge_bridge::events::Event;
use clawbridge_bridge::transcript::{JsonlSink, ModelLabel, SessionHeader, TranscriptMirror};
use clawbridge_bridge::transport::spawn_line_writer;
use clawbridge_protocol::host::{AttemptEventParams, methods};
use clawbridge_protocol::jsonrpc::{Dialect, outgoing};
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::task::JoinHandle;

use super::agent::STAMP_MARK;
use super::sys;
use clawbridge_bridge::sink::EventQueue;

/// What reached the host's stream.
#[derive(Debug, Default)]
pub struct Delivered {
    /// Notification lines.
    pub lines: u64,
    /// Their bytes.
    pub bytes: u64,
    /// For stamped lines: wall-clock nanoseconds from the peer writing the native line to the host
    /// stream receiving its notification.
    pub latencies_ns: Vec<u64>,
    /// The earliest and latest stamps seen (when the peer wrote its first and last stamped line).
    pub stamp_span: Option<(u64, u64)>,
}

/// What one attempt's host side handled.
#[derive(Debug, Default)]
pub struct Totals {
    /// Events the session delivered.
    pub events: u64,
    /// Events the forwarder took from the queue (fewer than `events` when deltas were merged
    /// because the forwarder lagged).
    pub forwarded: u64,
    /// Delta bytes the queue cut (a merged delta is capped while the forwarder lags).
    pub dropped_bytes: u64,
    /// Rows appended to the transcript.
    pub transcript_rows: u64,
    /// What the host stream received.
    pub delivered: Delivered,
}

/// A running host side for one attempt.
pub struct HostPipeline {
    /// Where the session's sink puts events.
    queue: Arc<EventQueue>,
    /// Events pushed.
    pushed: Arc<AtomicU64>,
    /// The forwarder (encoding, transcript).
    forwarder: JoinHandle<anyhow::Result<(u64, u64)>>,
    /// The pump (pipe → host stream).
    pump: JoinHandle<()>,
    /// The writer of the pipe.
    writer: JoinHandle<std::io::Result<()>>,
    /// What the host stream received.
    delivered: Arc<Mutex<Delivered>>,
}

/// How the host side is set up.
pub struct PipelineOptions<'a> {
    /// The attempt's id (in every notification).
    pub attempt_id: &'a str,
    /// The transcript file to append to.
    pub transcript: &'a Path,
    /// The prompt (the transcript's first row of the turn).
    pub prompt: &'a str,
    /// Whether to time stamped lines (the latency scenario).
    pub stamps: bool,
}

impl HostPipeline {
    /// Opens the transcript and starts the tasks.
    pub fn start(options: PipelineOptions<'_>) -> anyhow::Result<HostPipeline> {
        let transcript = JsonlSink::open(options.transcript, &SessionHeader::new(options.attempt_id, "/bench"))
            .with_context(|| format!("opening the transcript {}", options.transcript.display()))?;
        let delivered = Arc::new(Mutex::new(Delivered::default()));
        let (pipe_in, pipe_out) = tokio::io::duplex(1 << 20);
        let (lines, writer) = spawn_line_writer(pipe_in, 256);
        let sink = HostStream { delivered: delivered.clone(), stamps: options.stamps };
        let pump = tokio::spawn(pump(pipe_out, sink));
        let queue = Arc::new(EventQueue::default());
        let taken = queue.clone();
        let attempt_id = options.attempt_id.to_string();
        let prompt = options.prompt.to_string();
        let forwarder = tokio::spawn(async move {
            let mut seq = 0u64;
            let mut rows = 0u64;
            let mut mirror: Option<TranscriptMirror> = None;
            while let Some(event) = taken.next().await {
                let note = AttemptEventParams { attempt_id: attempt_id.clone(), seq, event };
                seq += 1;
                let call = outgoing::Call::new(Dialect::JsonRpc2, None, methods::ATTEMPT_EVENT, Some(&note));
                lines.send_json(&call).await.context("the host stream closed")?;
                let event = note.event;
                let mut messages = Vec::new();
                if let Event::TurnStarted { turn_id } = &event {
                    if mirror.is_none() {
                        let fresh = TranscriptMirror::new(format!("clawbridge:{attempt_id}"), turn_id.clone(), label());
                        messages.push(fresh.prompt(prompt.clone()));
                        mirror = Some(fresh);
                    }
                }
                if let Some(mirror) = mirror.as_mut() {
                    messages.extend(mirror.on_event(&event));
                }
                if !messages.is_empty() {
                    rows += messages.len() as u64;
                    transcript.append_blocking(messages).context("appending to the transcript")?;
                }
            }
            transcript.sync_blocking().context("syncing the transcript")?;
            Ok((seq, rows))
        });
        Ok(HostPipeline { queue, pushed: Arc::default(), forwarder, pump, writer, delivered })
    }

    /// The session's sink: every event, in order, to the forwarder's queue (never waiting).
    pub fn sink(&self) -> impl FnMut(&Event) + Send + use<> {
        let (queue, pushed) = (self.queue.clone(), self.pushed.clone());
        move |event: &Event| {
            pushed.fetch_add(1, Ordering::Relaxed);
            queue.push(event.clone());
        }
    }

    /// Waits until every event was encoded, delivered and mirrored.
    pub async fn finish(self) -> anyhow::Result<Totals> {
        let HostPipeline { queue, pushed, forwarder, pump, writer, delivered } = self;
        queue.close();
        let (forwarded, transcript_rows) = forwarder.await.context("the forwarder panicked")??;
        writer.await.context("the pipe writer panicked")?.context("writing the pipe")?;
        pump.await.context("the pump panicked")?;
        let delivered = std::mem::take(&mut *delivered.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(Totals {
            events: pushed.load(Ordering::Relaxed),
            forwarded,
            dropped_bytes: queue.dropped_bytes(),
            transcript_rows,
            delivered,
        })
    }
}

fn label() -> ModelLabel {
    ModelLabel { api: "bench".into(), provider: "bench".into(), model: "bench".into() }
}

/// Copies whole lines from the pipe to the host stream, one write and flush per line (as
/// `clawbridge serve`'s pump does with stdout).
async fn pump(from: tokio::io::DuplexStream, mut to: HostStream) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if to.write_all(&bytes).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
}

/// The host's end of the stream: counts lines and bytes and, when asked, times stamped lines.
struct HostStream {
    /// What arrived.
    delivered: Arc<Mutex<Delivered>>,
    /// Whether to look for stamps.
    stamps: bool,
}

impl HostStream {
    fn take(&self, buf: &[u8]) {
        let now = if self.stamps { sys::wall_nanos() } else { 0 };
        let mut delivered = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
        delivered.bytes += buf.len() as u64;
        delivered.lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.stamps {
            let mut rest = buf;
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
    }
}

impl AsyncWrite for HostStream {
    fn poll_write(self: Pin<&mut Self>, _: &mut std::task::Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.take(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
