use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_protocol::jsonrpc::{
    Dialect, Envelope, ErrorObject, Incoming, LenientMembers, LineError, Message, Notification, RawMessage, Refusal,
    Request, RequestId, ShapeError, classify_control_line, codes, decode_error_object, outgoing,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, oneshot, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::task::TaskTracker;

use super::caps::LineCaps;
use super::error::{GoneCause, PeerGone, RpcError, StreamProblem};
use super::handler::{ExitReporter, HandlerError, HandlerFailure, RequestHandler};
use super::inbox::{InboxSender, PeerEvents};
use crate::transport::{DEFAULT_MAX_LINE_BYTES, Frame, LineSender, frame_reader, spawn_line_writer_with_timeout};

/// How a peer connection behaves.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// Envelope flavour for what we write and read (a JSON-RPC peer accepts input in either JSON-RPC
    /// dialect).
    pub dialect: Dialect,
    /// Longest accepted line; longer ones become [`StreamProblem::Oversize`].
    pub max_line_bytes: usize,
    /// Smaller caps by method, for the peer's requests and notifications and the answers to ours.
    pub caps: LineCaps,
    /// Refuse incoming lines whose `jsonrpc` is not `"2.0"` and answer every invalid request whose id
    /// could be read with `-32600` and that id (strict JSON-RPC 2.0, as the host connection speaks
    /// it). Off, a JSON-RPC peer reads either JSON-RPC dialect and skips what it cannot use.
    pub strict_jsonrpc: bool,
    /// Keep a copy of each request's params while its handler runs, for
    /// [`RequestHandler::fallback`]. A handler whose fallback never reads them (the host
    /// connection's) turns this off, so a long-running request holds nothing but what its handler
    /// decoded from them.
    pub keep_params_for_fallback: bool,
    /// Hand each notification's params (their raw JSON text) on to the consumer. A consumer that
    /// only reads a notification's method (the host connection's) turns this off, so a queued
    /// notification holds its method alone, not a copy of its line.
    pub decode_notification_params: bool,
    /// Default deadline for our requests.
    pub request_timeout: Duration,
    /// How long a handler may take before the peer gets the fallback answer.
    pub handler_timeout: Duration,
    /// Requests from the peer handled at once; beyond this the reader waits (backpressure).
    pub max_concurrent_handlers: usize,
    /// Outgoing lines queued before senders wait.
    pub outgoing_queue: usize,
    /// How long a write to the peer may go without progress before the peer counts as no longer
    /// reading: the writer stops and the stream ends as [`GoneCause::InputStalled`]. `None` (the
    /// default) waits as long as it takes, as a host may read slowly on purpose; native agents set
    /// [`agent_write_timeout`](crate::transport::agent_write_timeout).
    pub write_timeout: Option<Duration>,
    /// Events queued for the consumer before the reader waits.
    pub event_queue: usize,
    /// Bytes of events (by their lines' lengths) queued for the consumer before the reader waits.
    pub event_bytes: usize,
    /// Tag for logs.
    pub label: String,
    /// Abort the handlers still running when the peer's output ends, instead of letting them finish
    /// (their answers are not sent). For a child process whose end means nobody can read an answer
    /// any more, so a handler waiting on a person stops asking.
    pub abort_handlers_on_close: bool,
    /// Methods whose answers are also marked in the event stream ([`PeerEvent::Answered`]), in
    /// line order: for a protocol whose answer ends a stream of notifications (ACP's
    /// `session/prompt` answer follows every update of its turn), so the consumer knows when it has
    /// read every notification written before the answer.
    pub answers_in_order: Vec<String>,
}

impl Default for PeerConfig {
    fn default() -> Self {
        Self {
            dialect: Dialect::JsonRpc2,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            caps: LineCaps::default(),
            strict_jsonrpc: false,
            keep_params_for_fallback: true,
            decode_notification_params: true,
            request_timeout: Duration::from_secs(60),
            handler_timeout: Duration::from_secs(600),
            max_concurrent_handlers: 64,
            outgoing_queue: 256,
            write_timeout: None,
            event_queue: 1024,
            event_bytes: super::inbox::DEFAULT_EVENT_BYTES,
            label: "peer".into(),
            abort_handlers_on_close: false,
            answers_in_order: Vec::new(),
        }
    }
}

/// What the reader delivers, in arrival order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum PeerEvent {
    /// A notification from the peer.
    Notification(Notification),
    /// A line that was not a usable message; reading continued.
    Problem(StreamProblem),
    /// The stream ended; this is the last event.
    Closed(Arc<PeerGone>),
    /// The peer answered one of our requests to a method in [`PeerConfig::answers_in_order`]: every
    /// notification it wrote before that answer came before this event.
    Answered {
        /// The method that was answered.
        method: String,
    },
}

enum Reply {
    Answer(Result<Box<RawValue>, ErrorObject>),
    /// A line named the request but was no answer: the request fails now, not at its deadline.
    Malformed(ShapeError),
    /// The answer's line was over the method's answer cap; it was not decoded.
    TooLarge {
        bytes: usize,
        limit: usize,
    },
    Gone(Arc<PeerGone>),
}

/// One of our requests awaiting its answer.
struct Waiter {
    /// Completes the caller's future.
    reply: oneshot::Sender<Reply>,
    /// The largest answer line accepted for its method ([`LineCaps::answer`]).
    answer_cap: usize,
    /// The method, when its answer is marked in the event stream ([`PeerConfig::answers_in_order`]).
    marked: Option<String>,
}

#[derive(Default)]
struct Pending {
    /// Our requests awaiting an answer, by the number in our id.
    waiting: HashMap<i64, Waiter>,
    /// Set once the stream ended, under the same lock, so no request can slip in unanswered.
    gone: Option<Arc<PeerGone>>,
}

struct Shared {
    pending: Mutex<Pending>,
    /// Our ids; a separate space from the peer's ids.
    next_id: AtomicI64,
    /// Mirrors `pending.gone` for waiters.
    gone_watch: watch::Sender<Option<Arc<PeerGone>>>,
    /// Set by [`RpcPeer::close`], so a send after it fails at once instead of waiting for the peer.
    closed_locally: std::sync::atomic::AtomicBool,
    /// The peer's requests whose handlers still run, by the peer's id: what a cancel aborts. Bounded
    /// by `max_concurrent_handlers`.
    running: Mutex<HashMap<RequestId, RunningHandler>>,
    /// Tells apart handlers of requests that reuse an id, so one finishing never forgets another.
    next_handler: AtomicU64,
    /// The tasks that answer the peer's requests: a connection that ends still owes their answers
    /// ([`RpcPeer::answered`]). Closed by the reader when the stream ends.
    answering: TaskTracker,
}

/// A handler task a cancel can abort.
struct RunningHandler {
    /// Its number from [`Shared::next_handler`].
    token: u64,
    /// Aborts it.
    abort: AbortHandle,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, RunningHandler>> {
        self.running.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers a handler task under the request's id; the token is for [`forget`](Self::forget).
    fn track(&self, id: &RequestId, abort: AbortHandle) -> u64 {
        let token = self.next_handler.fetch_add(1, Ordering::Relaxed);
        self.running().insert(id.clone(), RunningHandler { token, abort });
        token
    }

    /// Drops the registration of a handler that finished (unless a later request took its id).
    fn forget(&self, id: &RequestId, token: u64) {
        let mut running = self.running();
        if running.get(id).is_some_and(|r| r.token == token) {
            running.remove(id);
        }
    }
}

/// Our ids carry a number, unique per peer, that keys the pending map. Claude's control protocol
/// wants string ids, and its CLI uses UUIDs, so a prefix keeps ours apart from anything it sends.
const OUR_ID_PREFIX: &str = "clawbridge-";

fn our_id(dialect: Dialect, n: i64) -> RequestId {
    match dialect {
        Dialect::ClaudeControl => RequestId::String(format!("{OUR_ID_PREFIX}{n}")),
        _ => RequestId::from(n),
    }
}

/// The number in one of our ids, or `None` when `id` is not one we could have sent.
fn our_number(dialect: Dialect, id: &RequestId) -> Option<i64> {
    match (dialect, id) {
        (Dialect::ClaudeControl, RequestId::String(s)) => s.strip_prefix(OUR_ID_PREFIX)?.parse().ok(),
        (Dialect::ClaudeControl, _) => None,
        _ => id.as_i64(),
    }
}

/// Our side of a JSON-RPC (or Claude control protocol) connection. Cheap to clone.
#[derive(Clone)]
pub struct RpcPeer {
    shared: Arc<Shared>,
    out: LineSender,
    config: Arc<PeerConfig>,
}

impl std::fmt::Debug for RpcPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcPeer").field("label", &self.config.label).finish_non_exhaustive()
    }
}

impl RpcPeer {
    /// Starts the reader and writer tasks. `exit` is asked, once the stream ends, what became of
    /// the process behind it.
    ///
    /// The returned events must be drained (or the receiver dropped): once `event_queue` events or
    /// `event_bytes` bytes of them are waiting, the reader waits too, and answers to our requests queue up behind them.
    pub fn start<R, W>(
        reader: R,
        writer: W,
        config: PeerConfig,
        handler: Arc<dyn RequestHandler>,
        exit: Arc<dyn ExitReporter>,
    ) -> (RpcPeer, PeerEvents)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let frames = frame_reader(reader, config.max_line_bytes);
        Self::start_framed(frames, writer, config, handler, exit)
    }

    /// [`start`](Self::start) over a transport that frames messages itself (a WebSocket): `frames`
    /// yields what the line decoder yields on a pipe, and `writer` takes whole `\n`-terminated lines.
    /// Everything above the frames — caps, problems, backpressure, the write timeout — is the same.
    pub fn start_framed<F, W>(
        frames: F,
        writer: W,
        config: PeerConfig,
        handler: Arc<dyn RequestHandler>,
        exit: Arc<dyn ExitReporter>,
    ) -> (RpcPeer, PeerEvents)
    where
        F: futures::Stream<Item = std::io::Result<Frame>> + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, _writer_task) = spawn_line_writer_with_timeout(writer, config.outgoing_queue, config.write_timeout);
        let (events_tx, events) = super::inbox::inbox(config.event_queue, config.event_bytes, out.clone());
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            next_id: AtomicI64::new(1),
            gone_watch: watch::channel(None).0,
            closed_locally: Default::default(),
            running: Mutex::new(HashMap::new()),
            next_handler: AtomicU64::new(0),
            answering: TaskTracker::new(),
        });
        let peer = RpcPeer { shared, out, config: Arc::new(config) };
        let reader_task = ReaderTask { peer: peer.clone(), events: events_tx, handler, exit };
        tokio::spawn(reader_task.run(frames));
        (peer, events)
    }

    /// Sends a request and waits for its answer under the configured default deadline.
    pub async fn request<P: Serialize>(&self, method: &str, params: Option<&P>) -> Result<Value, RpcError> {
        self.request_with_timeout(method, params, self.config.request_timeout).await
    }

    /// Sends a request and decodes its result as `R`, straight from the answer's JSON text.
    pub async fn request_typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<R, RpcError> {
        self.request_typed_with_timeout(method, params, self.config.request_timeout).await
    }

    /// [`request_typed`](Self::request_typed) with its own deadline.
    pub async fn request_typed_with_timeout<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Duration,
    ) -> Result<R, RpcError> {
        let raw = self.request_raw_with_timeout(method, params, timeout).await?;
        serde_json::from_str(raw.get())
            .map_err(|e| RpcError::BadResult { method: method.to_string(), reason: e.to_string() })
    }

    /// Sends a request and waits at most `timeout` for its answer.
    pub async fn request_with_timeout<P: Serialize>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        self.request_typed_with_timeout(method, params, timeout).await
    }

    /// Sends a request and waits at most `timeout` for its answer, returned as the JSON text the
    /// peer wrote.
    pub async fn request_raw_with_timeout<P: Serialize>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Duration,
    ) -> Result<Box<RawValue>, RpcError> {
        self.send_request(method, params, timeout).await?.await
    }

    /// Queues a request for the writer and returns the wait (at most `timeout`) for its answer,
    /// as the JSON text the peer wrote, without waiting for it: whatever is sent after this
    /// returns is written after this request. Dropping the wait forgets the request.
    pub async fn send_request<P: Serialize>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Duration,
    ) -> Result<BoxFuture<'static, Result<Box<RawValue>, RpcError>>, RpcError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.shared.lock();
            if let Some(gone) = &pending.gone {
                return Err(RpcError::PeerGone { method: method.into(), gone: gone.clone() });
            }
            let marked = self.config.answers_in_order.iter().any(|m| m == method).then(|| method.to_owned());
            pending.waiting.insert(id, Waiter { reply: tx, answer_cap: self.config.caps.answer(method), marked });
        }
        // However this future ends — answered, failed, timed out, or dropped by a caller that gave
        // up (an aborted handler) — the waiter leaves the pending map: a long-lived peer must not
        // collect entries nobody waits for.
        let pending = PendingGuard { shared: self.shared.clone(), id };
        let request_id = our_id(self.config.dialect, id);
        let call = outgoing::Call::new(self.config.dialect, Some(&request_id), method, params);
        if let Err(e) = self.out.send_json(&call).await {
            return Err(self.explain_send_failure(method, e).await);
        }
        let method = method.to_owned();
        Ok(Box::pin(async move {
            let _pending = pending;
            wait_for_answer(&method, rx, timeout).await
        }))
    }

    /// How many of our requests wait for an answer (for tests of the pending map's bounds).
    pub fn pending_requests(&self) -> usize {
        self.shared.lock().waiting.len()
    }

    /// Sends a notification. In [`Dialect::ClaudeControl`] that is a conversation line: `type` is
    /// `method` and the params' members are the rest of the line.
    pub async fn notify<P: Serialize>(&self, method: &str, params: Option<&P>) -> Result<(), RpcError> {
        let call = outgoing::Call::new(self.config.dialect, None, method, params);
        match self.out.send_json(&call).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.explain_send_failure(method, e).await),
        }
    }

    /// Closes our output (the child sees stdin EOF). Reading continues until the peer's output ends.
    pub fn close(&self) {
        self.shared.closed_locally.store(true, Ordering::Relaxed);
        self.out.close();
    }

    /// Closes our output once every line sent so far is written (the peer sees EOF after its
    /// last answer), for a peer that still reads what we write.
    pub fn finish_output(&self) {
        self.shared.closed_locally.store(true, Ordering::Relaxed);
        self.out.finish();
    }

    /// Waits until our output has ended: after [`finish_output`](Self::finish_output), once every
    /// line sent before it is written and the stream is shut down.
    pub async fn output_ended(&self) {
        self.out.ended().await;
    }

    /// Answers a line the peer wrote that could not be read as a request, with `id: null` as
    /// JSON-RPC asks (its id, if it had one, was never read), in order with everything else we send.
    pub async fn answer_unreadable(&self, error: ErrorObject) -> Result<(), RpcError> {
        let outcome = Err(error);
        let reply = outgoing::Reply::new(self.config.dialect, &RequestId::Null, &outcome);
        match self.out.send_json(&reply).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.explain_send_failure("(an answer with id null)", e).await),
        }
    }

    /// Waits until the stream has ended and every request read from it is answered (or was
    /// withdrawn): what a server waits for before it closes its output after the peer closed its
    /// side, so answers to requests pipelined just before the end are not lost.
    pub async fn answered(&self) {
        self.shared.answering.wait().await;
    }

    /// What ended the stream, once it has ended.
    pub fn gone(&self) -> Option<Arc<PeerGone>> {
        self.shared.gone_watch.borrow().clone()
    }

    /// Waits until the peer's stream has ended.
    pub async fn closed(&self) -> Arc<PeerGone> {
        let mut watch = self.shared.gone_watch.subscribe();
        let gone = watch.wait_for(Option::is_some).await.expect("the sender lives in `self`");
        gone.clone().expect("wait_for returned a Some")
    }

    /// A write failure usually means the peer died; prefer reporting its exit over "broken pipe".
    async fn explain_send_failure(&self, method: &str, error: crate::transport::SendError) -> RpcError {
        let local = self.shared.closed_locally.load(Ordering::Relaxed);
        if let Some(gone) = self.gone() {
            return RpcError::PeerGone { method: method.into(), gone };
        }
        // A stall names its cause itself, and the stream's end may wait on our own reader, held
        // back by a lagging consumer: not worth a wait that may never end.
        let stopped = matches!(error, crate::transport::SendError::Closed);
        if stopped && !local {
            if let Ok(gone) = tokio::time::timeout(Duration::from_secs(5), self.closed()).await {
                return RpcError::PeerGone { method: method.into(), gone };
            }
        }
        RpcError::not_sent(method, error)
    }
}

/// The answer to one of our requests, at most `timeout` after it was sent.
async fn wait_for_answer(
    method: &str,
    rx: oneshot::Receiver<Reply>,
    timeout: Duration,
) -> Result<Box<RawValue>, RpcError> {
    match tokio::time::timeout(timeout, rx).await {
        Ok(Ok(Reply::Answer(Ok(value)))) => Ok(value),
        Ok(Ok(Reply::Answer(Err(error)))) => Err(RpcError::Remote { method: method.into(), error }),
        Ok(Ok(Reply::Malformed(error))) => Err(RpcError::MalformedAnswer { method: method.into(), error }),
        Ok(Ok(Reply::TooLarge { bytes, limit })) => {
            Err(RpcError::AnswerTooLarge { method: method.into(), bytes, limit })
        }
        Ok(Ok(Reply::Gone(gone))) => Err(RpcError::PeerGone { method: method.into(), gone }),
        Ok(Err(_)) => {
            Err(RpcError::NotSent { method: method.into(), reason: "the peer connection was dropped".into() })
        }
        Err(_) => Err(RpcError::Timeout { method: method.into(), after: timeout }),
    }
}

struct ReaderTask {
    peer: RpcPeer,
    events: InboxSender,
    handler: Arc<dyn RequestHandler>,
    exit: Arc<dyn ExitReporter>,
}

impl ReaderTask {
    async fn run<F>(self, mut frames: F)
    where
        F: futures::Stream<Item = std::io::Result<Frame>> + Unpin,
    {
        let config = self.peer.config.clone();
        let handlers = Arc::new(Semaphore::new(config.max_concurrent_handlers.max(1)));
        let exited = self.exit.exited();
        tokio::pin!(exited);
        // Set when the process exited: from then on, output that is not already readable by this
        // deadline can only come from another process holding the pipe.
        let mut drain_deadline: Option<tokio::time::Instant> = None;
        let cause = loop {
            let next = tokio::select! {
                // Output first: what the process wrote before it exited is already in the pipe.
                biased;
                // Except from a peer that stopped reading: it is unusable (a line may be half
                // written), so its stream ends now, even while it keeps writing, and the turn on it
                // with it.
                after = self.peer.out.stalled_wait() => break GoneCause::InputStalled { after },
                next = next_frame(&mut frames, &self.events) => next,
                () = &mut exited, if drain_deadline.is_none() => {
                    drain_deadline = Some(tokio::time::Instant::now() + OUTPUT_DRAIN_AFTER_EXIT);
                    continue;
                }
                () = sleep_until_some(drain_deadline) => break GoneCause::OutputHeldOpen,
            };
            let frame = match next {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => break GoneCause::ReadFailed(e.to_string()),
                None => break GoneCause::OutputClosed,
            };
            match frame {
                Frame::Line(line) => self.on_line(line, &handlers).await,
                Frame::Oversize { len } => self.problem(StreamProblem::Oversize { len }).await,
                Frame::InvalidUtf8 { len, .. } => self.problem(StreamProblem::InvalidUtf8 { len }).await,
                Frame::TruncatedAtEof { len } => self.problem(StreamProblem::TruncatedAtEof { len }).await,
            }
        };
        // What was read last goes to the consumer now, not after the exit report's wait.
        let _ = self.events.flush();
        // No request comes after the stream's end: the answers owed are those already spawned.
        self.peer.shared.answering.close();
        if config.abort_handlers_on_close {
            let running = std::mem::take(&mut *self.peer.shared.running());
            for (_, handler) in running {
                handler.abort.abort();
            }
        }
        let (exit, stderr_tail) = self.exit.report().await;
        let gone = Arc::new(PeerGone { cause, exit, stderr_tail });
        tracing::debug!(peer = %config.label, %gone, "peer stream ended");
        let waiting = {
            let mut pending = self.peer.shared.lock();
            pending.gone = Some(gone.clone());
            std::mem::take(&mut pending.waiting)
        };
        self.peer.shared.gone_watch.send_replace(Some(gone.clone()));
        for (_, waiter) in waiting {
            let _ = waiter.reply.send(Reply::Gone(gone.clone()));
        }
        let _ = self.events.send(PeerEvent::Closed(gone), 0).await;
    }

    async fn on_line(&self, line: String, handlers: &Arc<Semaphore>) {
        let dialect = self.peer.config.dialect;
        if dialect == Dialect::ClaudeControl {
            return self.on_control_line(&line, handlers).await;
        }
        // One pass over the line, building nothing: the members stay slices of `line`.
        let envelope = match Envelope::parse(&line) {
            Ok(envelope) => envelope,
            Err(LineError::NotJson(error)) => {
                return self.problem(StreamProblem::NotJson { preview: preview(&line), error }).await;
            }
            Err(LineError::Shape(error)) => {
                // An answer-shaped line with a member twice (or a name that is not Unicode) still
                // names our request by its first `id`: that request fails now, not at its deadline.
                let named = LenientMembers::read(&line)
                    .filter(|members| !members.has_method)
                    .and_then(|members| members.id)
                    .and_then(|raw| RequestId::from_raw(raw).ok())
                    .and_then(|id| self.waiter(&id));
                if let Some((waiter, _)) = named {
                    let _ = waiter.reply.send(Reply::Malformed(error.clone()));
                    return self.malformed_answer(&line, error).await;
                }
                return self.problem(StreamProblem::NotJsonRpc { preview: preview(&line), error }).await;
            }
            Err(other) => {
                let error = other.to_string();
                return self.problem(StreamProblem::NotJson { preview: preview(&line), error }).await;
            }
        };
        let caps = &self.peer.config.caps;
        let strict = self.peer.config.strict_jsonrpc;
        // A line without `method` can only be an answer: the id of one that turns out malformed
        // still names our request, which must fail now rather than wait for its deadline.
        let answer_id = if envelope.method.is_none() { envelope.id } else { None };
        match envelope.classify(strict) {
            Ok(RawMessage::Notification { method, params }) => {
                let limit = caps.notification();
                if line.len() > limit {
                    return self.problem(StreamProblem::MessageTooLarge { method, len: line.len(), limit }).await;
                }
                // The params stay the text the peer wrote (copied out of the line, not parsed
                // again): the consumer decodes them once, into its typed notification.
                let params = params.filter(|_| self.peer.config.decode_notification_params).map(RawValue::to_owned);
                // A consumer that stopped listening must not stop us reading: the child would block.
                let _ = self.events.send(PeerEvent::Notification(Notification { method, params }), line.len()).await;
            }
            Ok(RawMessage::Request { id, method, params }) => {
                let limit = caps.incoming(&method);
                if line.len() > limit {
                    let bytes = line.len();
                    tracing::warn!(peer = %self.peer.config.label, %method, bytes, limit, "refusing a request over its cap");
                    let error = ErrorObject::with_data(
                        caps.too_large_code,
                        format!("the `{method}` request has {bytes} bytes, over its cap of {limit} bytes"),
                        &serde_json::json!({"method": method, "bytes": bytes, "limit": limit}),
                    );
                    return self.refuse(id, error, handlers).await;
                }
                let params = match params.map(|raw| span_of(&line, raw.get()).ok_or(raw)) {
                    None => None,
                    Some(Ok(span)) => params_in_place(line, span),
                    Some(Err(raw)) => Some(raw.to_owned()),
                };
                let request = Request { id, method, params };
                self.dispatch(request, handlers).await;
            }
            Ok(RawMessage::Response { id, outcome }) => {
                let Some((waiter, number)) = self.waiter(&id) else {
                    // A malformed answer is refused as one whether or not its request still waits
                    // (that request may just have timed out): the peer hears of its bad line either way.
                    if let Err(Err(shape)) = outcome.map_err(decode_error_object) {
                        return self.malformed_answer(&line, shape).await;
                    }
                    return self.problem(StreamProblem::UnmatchedResponse { id }).await;
                };
                if line.len() > waiter.answer_cap {
                    tracing::warn!(peer = %self.peer.config.label, id = number, bytes = line.len(), "an answer over its cap");
                    let _ = waiter.reply.send(Reply::TooLarge { bytes: line.len(), limit: waiter.answer_cap });
                    return;
                }
                let reply = match outcome.map_err(decode_error_object) {
                    Ok(result) => Reply::Answer(Ok(result.to_owned())),
                    Err(Ok(error)) => Reply::Answer(Err(error)),
                    Err(Err(shape)) => {
                        let _ = waiter.reply.send(Reply::Malformed(shape.clone()));
                        return self.malformed_answer(&line, shape).await;
                    }
                };
                let _ = waiter.reply.send(reply);
                if let Some(method) = waiter.marked {
                    let _ = self.events.send(PeerEvent::Answered { method }, 0).await;
                }
            }
            Err(Refusal { id, error }) => {
                // An answer-shaped line that is no answer, naming one of our requests: that request
                // fails at once (its caller applies its own fallback), and the line is refused like
                // any other invalid one, with `id: null` (the id is ours, not a request of the peer's).
                let named = answer_id.and_then(|raw| RequestId::from_raw(raw).ok()).and_then(|id| self.waiter(&id));
                if let Some((waiter, _)) = named {
                    let _ = waiter.reply.send(Reply::Malformed(error.clone()));
                    return self.malformed_answer(&line, error).await;
                }
                match id {
                    // Strict JSON-RPC answers an invalid request whose id it could read with that
                    // id; an invalid answer never (the peer would read it as our answer to a
                    // request of its own).
                    Some(id) if strict && answer_id.is_none() => {
                        tracing::debug!(peer = %self.peer.config.label, %id, %error, "refusing an invalid request");
                        let refusal = ErrorObject::new(codes::INVALID_REQUEST, format!("invalid request: {error}"));
                        self.refuse(id, refusal, handlers).await;
                    }
                    _ => self.problem(StreamProblem::NotJsonRpc { preview: preview(&line), error }).await,
                }
            }
        }
    }

    /// Reports an answer to one of our requests that was no JSON-RPC answer (its request has
    /// already failed): a problem, as for any line that is no message.
    async fn malformed_answer(&self, line: &str, error: ShapeError) {
        tracing::warn!(peer = %self.peer.config.label, %error, "a malformed answer failed its request");
        self.problem(StreamProblem::NotJsonRpc { preview: preview(line), error }).await;
    }

    /// A line of Claude's control protocol (its envelopes differ from JSON-RPC's and its
    /// conversation lines go to the mapper whole): checked as JSON in one pass that copies it into
    /// raw JSON text, then sorted by a peek at its `type`.
    async fn on_control_line(&self, line: &str, handlers: &Arc<Semaphore>) {
        let raw: Box<RawValue> = match serde_json::from_str(line) {
            Ok(raw) => raw,
            Err(e) => {
                return self.problem(StreamProblem::NotJson { preview: preview(line), error: e.to_string() }).await;
            }
        };
        match classify_control_line(raw) {
            Ok(Incoming::Message(Message::Notification(n))) => {
                // A consumer that stopped listening must not stop us reading: the child would block.
                let _ = self.events.send(PeerEvent::Notification(n), line.len()).await;
            }
            Ok(Incoming::Message(Message::Response(response))) => {
                let Some((waiter, _)) = self.waiter(&response.id) else {
                    return self.problem(StreamProblem::UnmatchedResponse { id: response.id }).await;
                };
                let reply = if line.len() > waiter.answer_cap {
                    Reply::TooLarge { bytes: line.len(), limit: waiter.answer_cap }
                } else {
                    // Serialising a `Value` cannot fail.
                    let raw = response.outcome.map(|value| {
                        serde_json::value::to_raw_value(&value).unwrap_or_else(|_| RawValue::NULL.to_owned())
                    });
                    Reply::Answer(raw)
                };
                let _ = waiter.reply.send(reply);
            }
            Ok(Incoming::Message(Message::Request(request))) => self.dispatch(request, handlers).await,
            Ok(Incoming::Cancel(id)) => {
                let running = self.peer.shared.running().remove(&id);
                match running {
                    Some(handler) => {
                        tracing::debug!(peer = %self.peer.config.label, %id, "the peer withdrew its request");
                        handler.abort.abort();
                    }
                    None => tracing::debug!(peer = %self.peer.config.label, %id, "a cancel for no running request"),
                }
            }
            Ok(Incoming::Malformed { id, error }) => {
                tracing::debug!(peer = %self.peer.config.label, %id, %error, "refusing a request that cannot be read");
                let refusal = ErrorObject::new(codes::INVALID_REQUEST, format!("malformed request: {error}"));
                self.refuse(id, refusal, handlers).await;
            }
            Ok(other) => tracing::debug!(peer = %self.peer.config.label, ?other, "ignored a message of a newer kind"),
            Err(error) => self.problem(StreamProblem::NotAMessage { preview: preview(line), error }).await,
        }
    }

    /// Hands a request to the handler (in arrival order) and answers it from its own task.
    async fn dispatch(&self, request: Request, handlers: &Arc<Semaphore>) {
        // What came before the request is the consumer's before its handler runs.
        let _ = self.events.flush();
        let permit = handlers.clone().acquire_owned().await.expect("the semaphore is never closed");
        let id = request.id.clone();
        let method = request.method.clone();
        let kept = if self.peer.config.keep_params_for_fallback { request.params.clone() } else { None };
        // `handle` is called here, in arrival order, so what a handler decides before it returns
        // its future takes effect in the order the requests were written; the future is spawned
        // and registered before the next line is read, so a cancel that follows the request always
        // finds its handler. A panic in `handle` becomes the fallback answer (re-raised in the
        // task), never the reader's end.
        let handler = self.handler.clone();
        let admitted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handler.handle(request)));
        let work = match admitted {
            Ok(future) => tokio::spawn(future),
            Err(panic) => tokio::spawn(async move { std::panic::resume_unwind(panic) }),
        };
        let token = self.peer.shared.track(&id, work.abort_handle());
        let peer = self.peer.clone();
        self.peer.shared.answering.spawn(async move {
            answer(peer, handler, Answering { id, method, params: kept }, work, token).await;
            drop(permit);
        });
    }

    /// Answers a request with an error without calling the handler.
    async fn refuse(&self, id: RequestId, error: ErrorObject, handlers: &Arc<Semaphore>) {
        let _ = self.events.flush();
        let permit = handlers.clone().acquire_owned().await.expect("the semaphore is never closed");
        let peer = self.peer.clone();
        // Not from the reader itself: a full output queue must not stop it reading.
        self.peer.shared.answering.spawn(async move {
            send_answer(&peer, &id, Err(error)).await;
            drop(permit);
        });
    }

    /// Takes the waiter of our request `id` answers, with the number of that request.
    fn waiter(&self, id: &RequestId) -> Option<(Waiter, i64)> {
        // The notifications read before an answer reach the consumer before its caller wakes.
        let _ = self.events.flush();
        let number = our_number(self.peer.config.dialect, id)?;
        self.peer.shared.lock().waiting.remove(&number).map(|waiter| (waiter, number))
    }

    async fn problem(&self, problem: StreamProblem) {
        // The Claude CLI prints debug lines on stdout and answers interrupts after their turn ended:
        // routine there, so they must not flood the log.
        let routine = self.peer.config.dialect == Dialect::ClaudeControl
            && matches!(
                problem,
                StreamProblem::NotJson { .. }
                    | StreamProblem::NotAMessage { .. }
                    | StreamProblem::UnmatchedResponse { .. }
            );
        if routine {
            tracing::debug!(peer = %self.peer.config.label, "{problem}");
        } else {
            tracing::warn!(peer = %self.peer.config.label, "{problem}");
        }
        let _ = self.events.send(PeerEvent::Problem(problem), 0).await;
    }
}

/// Waits for the handler of one peer request and sends exactly one answer — unless the peer
/// withdrew the request (the handler was aborted), when it sends none.
/// Removes one of our requests from the pending map when its caller's future ends.
struct PendingGuard {
    /// Holds the map.
    shared: Arc<Shared>,
    /// The request's id.
    id: i64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.shared.lock().waiting.remove(&self.id);
    }
}

/// What answering a request needs once its handler has it.
struct Answering {
    /// The request's id, echoed.
    id: RequestId,
    /// Its method, for logs and the fallback.
    method: String,
    /// Its params, only when [`PeerConfig::keep_params_for_fallback`] is set.
    params: Option<Box<RawValue>>,
}

async fn answer(
    peer: RpcPeer,
    handler: Arc<dyn RequestHandler>,
    request: Answering,
    work: JoinHandle<Result<Value, HandlerError>>,
    token: u64,
) {
    let Answering { id, method, params } = request;
    let timeout = peer.config.handler_timeout;
    let abort = work.abort_handle();
    let outcome = tokio::time::timeout(timeout, work).await;
    peer.shared.forget(&id, token);
    let failure = match outcome {
        Ok(Ok(Ok(value))) => return send_answer(&peer, &id, Ok(value)).await,
        Ok(Ok(Err(HandlerError::Reply(error)))) => {
            return send_answer(&peer, &id, Err(error)).await;
        }
        Ok(Ok(Err(HandlerError::Failed(reason)))) => HandlerFailure::Failed(reason),
        Ok(Err(join_error)) if join_error.is_cancelled() => {
            tracing::debug!(peer = %peer.config.label, %method, %id, "not answering a withdrawn request");
            return;
        }
        Ok(Err(_join_error)) => HandlerFailure::Panicked,
        Err(_) => {
            abort.abort();
            HandlerFailure::TimedOut(timeout)
        }
    };
    tracing::warn!(peer = %peer.config.label, %method, %failure, "answering with the fallback");
    let params: Option<Value> = params.and_then(|raw| serde_json::from_str(raw.get()).ok());
    let fallback = handler.fallback(&method, params.as_ref(), &failure);
    send_answer(&peer, &id, fallback).await;
}

async fn send_answer(peer: &RpcPeer, id: &RequestId, outcome: Result<Value, ErrorObject>) {
    let reply = outgoing::Reply::new(peer.config.dialect, id, &outcome);
    if let Err(e) = peer.out.send_json(&reply).await {
        tracing::debug!(peer = %peer.config.label, %id, error = %e, "could not answer: the peer is gone");
    }
}

/// How long the reader keeps waiting for EOF after the process exited. Its own output is readable at
/// once; this only bounds the wait when a grandchild inherited the pipe and keeps it open.
const OUTPUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

/// The next frame; when it is not ready yet, the events read so far are handed to the consumer
/// first, so a burst read at once wakes the consumer once and a lone line is never held back.
async fn next_frame<F>(frames: &mut F, events: &InboxSender) -> Option<std::io::Result<Frame>>
where
    F: futures::Stream<Item = std::io::Result<Frame>> + Unpin,
{
    std::future::poll_fn(|cx| {
        let next = frames.poll_next_unpin(cx);
        if next.is_pending() {
            // A consumer that is gone is found at the next send.
            let _ = events.flush();
        }
        next
    })
    .await
}

async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Where `part` sits in `line`, when it is a slice of it (borrowed raw members always are).
fn span_of(line: &str, part: &str) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= line.len()).then_some(start..end)
}

/// The params of a request as raw JSON, made from the line itself: the bytes around them are cut
/// away in place, so a big request's params cost no second allocation of its size.
fn params_in_place(mut line: String, span: std::ops::Range<usize>) -> Option<Box<RawValue>> {
    line.truncate(span.end);
    line.drain(..span.start);
    // What surrounded small params of a big line must not stay allocated with them.
    if line.capacity() > 2 * line.len() + 4096 {
        line.shrink_to_fit();
    }
    RawValue::from_string(line).ok()
}

fn preview(line: &str) -> String {
    const MAX: usize = 200;
    match line.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::ExitState;
    use crate::rpc::{NoProcess, RejectAll};
    use clawbridge_protocol::jsonrpc::ShapeError;
    use futures::future::BoxFuture;
    use tokio::io::AsyncWriteExt;

    /// A process that has already exited.
    struct AlreadyExited;

    impl ExitReporter for AlreadyExited {
        fn report(&self) -> BoxFuture<'static, (Option<ExitState>, String)> {
            Box::pin(async { (Some(ExitState::Code(9)), "crashed".into()) })
        }

        fn exited(&self) -> BoxFuture<'static, ()> {
            Box::pin(async {})
        }
    }

    #[tokio::test]
    async fn an_exited_process_whose_output_stays_open_ends_the_stream_after_what_it_wrote() {
        // `held` plays the grandchild: it keeps the pipe open, so EOF never comes.
        let (output, mut held) = tokio::io::duplex(1024);
        held.write_all(b"{\"method\":\"before/exit\"}\n").await.unwrap();
        let (_peer, mut events) = RpcPeer::start(
            output,
            tokio::io::sink(),
            PeerConfig::default(),
            Arc::new(RejectAll),
            Arc::new(AlreadyExited),
        );
        let first = tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap();
        assert!(matches!(first, Some(PeerEvent::Notification(n)) if n.method == "before/exit"), "output first");
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap() {
            Some(PeerEvent::Closed(gone)) => {
                assert_eq!(gone.cause, GoneCause::OutputHeldOpen);
                assert_eq!(gone.exit, Some(ExitState::Code(9)));
            }
            other => panic!("expected Closed, got {other:?}"),
        }
        drop(held);
    }

    #[tokio::test]
    async fn a_malformed_answer_fails_the_request_it_names_at_once_and_is_reported() {
        use tokio::io::AsyncBufReadExt;
        let malformed = [
            r#""error":null"#,
            r#""error":{"code":"x","message":5}"#,
            r#""error":{"code":-32603}"#,
            r#""neither":"result nor error""#,
            // No envelope at all: a member twice, a name that is not Unicode (the id still counts).
            r#""result":{},"result":{}"#,
            r#""\ud800":1,"result":{}"#,
        ];
        for (jsonrpc, member) in malformed.iter().map(|m| ("2.0", *m)).chain([("1.0", r#""result":{}"#)]) {
            let (output, mut host_writes) = tokio::io::duplex(4096);
            let (bridge_writes, host_reads) = tokio::io::duplex(4096);
            let config = PeerConfig { strict_jsonrpc: true, ..PeerConfig::default() };
            let (peer, mut events) =
                RpcPeer::start(output, bridge_writes, config, Arc::new(RejectAll), Arc::new(NoProcess));
            // A deadline far past the test's own guard: only the malformed answer can end it in time.
            let asking = tokio::spawn({
                let peer = peer.clone();
                async move {
                    peer.request_with_timeout("host/approval/decide", None::<&Value>, Duration::from_secs(3600)).await
                }
            });
            let mut sent = String::new();
            tokio::io::BufReader::new(host_reads).read_line(&mut sent).await.unwrap();
            let id = serde_json::from_str::<Value>(&sent).unwrap()["id"].clone();
            let answer = format!("{{\"jsonrpc\":\"{jsonrpc}\",\"id\":{id},{member}}}\n");
            host_writes.write_all(answer.as_bytes()).await.unwrap();
            let failed = tokio::time::timeout(Duration::from_secs(60), asking)
                .await
                .unwrap_or_else(|_| panic!("{answer}: the request still waits"))
                .unwrap();
            assert!(matches!(failed, Err(RpcError::MalformedAnswer { .. })), "{answer}: {failed:?}");
            assert_eq!(peer.pending_requests(), 0, "{answer}");
            let problem = events.recv().await;
            assert!(
                matches!(problem, Some(PeerEvent::Problem(StreamProblem::NotJsonRpc { .. }))),
                "{answer}: {problem:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_malformed_answer_to_no_waiting_request_is_still_reported_as_malformed() {
        // Its request may just have timed out: whether the peer hears of its bad line must not
        // depend on that race.
        let (output, mut host_writes) = tokio::io::duplex(4096);
        let config = PeerConfig { strict_jsonrpc: true, ..PeerConfig::default() };
        let (_peer, mut events) =
            RpcPeer::start(output, tokio::io::sink(), config, Arc::new(RejectAll), Arc::new(NoProcess));
        for (line, malformed) in [
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":5}}"#, true),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"late"}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, false),
        ] {
            host_writes.write_all(format!("{line}\n").as_bytes()).await.unwrap();
            let problem = tokio::time::timeout(Duration::from_secs(60), events.recv()).await.unwrap();
            let reported_malformed = match problem {
                Some(PeerEvent::Problem(StreamProblem::NotJsonRpc { .. })) => true,
                Some(PeerEvent::Problem(StreamProblem::UnmatchedResponse { .. })) => false,
                other => panic!("{line}: {other:?}"),
            };
            assert_eq!(reported_malformed, malformed, "{line}");
        }
    }

    #[tokio::test]
    async fn a_request_whose_caller_gives_up_leaves_nothing_pending() {
        // The other side never answers.
        let (output, _held) = tokio::io::duplex(1024);
        let (peer, _events) =
            RpcPeer::start(output, tokio::io::sink(), PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
        let asking = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request_with_timeout("slow/thing", None::<&Value>, Duration::from_secs(600)).await }
        });
        tokio::time::timeout(Duration::from_secs(5), async {
            while peer.pending_requests() == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the request is pending");
        asking.abort();
        let _ = asking.await;
        assert_eq!(peer.pending_requests(), 0, "an abandoned request does not stay pending");
    }

    /// Answers every request after a pause, as a handler doing real work would.
    struct AnswersLate;

    impl RequestHandler for AnswersLate {
        fn handle(&self, _request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
            Box::pin(async {
                tokio::time::sleep(Duration::from_millis(200)).await;
                Ok(Value::Null)
            })
        }
    }

    #[tokio::test]
    async fn requests_written_just_before_the_end_are_all_answered_once_answered_returns() {
        use tokio::io::AsyncReadExt;
        let (output, mut host_writes) = tokio::io::duplex(4096);
        let (bridge_writes, mut host_reads) = tokio::io::duplex(4096);
        let (peer, mut events) =
            RpcPeer::start(output, bridge_writes, PeerConfig::default(), Arc::new(AnswersLate), Arc::new(NoProcess));
        for id in 1..=3 {
            host_writes
                .write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"m\"}}\n").as_bytes())
                .await
                .unwrap();
        }
        drop(host_writes);
        loop {
            match events.recv().await {
                Some(PeerEvent::Closed(_)) => break,
                Some(_) => {}
                None => panic!("the events ended without Closed"),
            }
        }
        tokio::time::timeout(Duration::from_secs(10), peer.answered()).await.expect("every answer is sent");
        peer.finish_output();
        drop(peer);
        let mut written = String::new();
        host_reads.read_to_string(&mut written).await.unwrap();
        let ids: Vec<Value> =
            written.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].clone()).collect();
        assert_eq!(ids.len(), 3, "{written}");
        for id in 1..=3 {
            assert!(ids.contains(&Value::from(id)), "{id} answered: {written}");
        }
    }

    #[tokio::test]
    async fn without_a_process_only_eof_ends_the_stream() {
        let (output, held) = tokio::io::duplex(1024);
        let (_peer, mut events) =
            RpcPeer::start(output, tokio::io::sink(), PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
        assert!(tokio::time::timeout(OUTPUT_DRAIN_AFTER_EXIT * 2, events.recv()).await.is_err(), "still open");
        drop(held);
        assert!(matches!(events.recv().await, Some(PeerEvent::Closed(gone)) if gone.cause == GoneCause::OutputClosed));
    }

    /// A peer in Claude's control dialect, with the ends the CLI would hold: its stdout (we write) and
    /// its stdin (we read what the peer wrote).
    fn claude_peer(
        handler: Arc<dyn RequestHandler>,
    ) -> (RpcPeer, PeerEvents, tokio::io::DuplexStream, tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>)
    {
        use tokio::io::AsyncBufReadExt;
        let (output, cli_stdout) = tokio::io::duplex(64 * 1024);
        let (input, cli_stdin) = tokio::io::duplex(64 * 1024);
        let config =
            PeerConfig { dialect: Dialect::ClaudeControl, label: "claude-test".into(), ..PeerConfig::default() };
        let (peer, events) = RpcPeer::start(output, input, config, handler, Arc::new(NoProcess));
        (peer, events, cli_stdout, tokio::io::BufReader::new(cli_stdin).lines())
    }

    async fn write_line(to: &mut tokio::io::DuplexStream, line: serde_json::Value) {
        to.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn next_written(
        from: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>,
    ) -> serde_json::Value {
        let line = tokio::time::timeout(Duration::from_secs(10), from.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    }

    struct SetOnDrop(Arc<std::sync::atomic::AtomicBool>);

    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// `hang` never finishes (and says when it started and when it was dropped); anything else is
    /// answered with its params.
    struct ControlScript {
        hang_started: Arc<std::sync::atomic::AtomicBool>,
        hang_dropped: Arc<std::sync::atomic::AtomicBool>,
    }

    impl RequestHandler for ControlScript {
        fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
            let hang = (request.method == "hang").then(|| {
                self.hang_started.store(true, Ordering::SeqCst);
                SetOnDrop(self.hang_dropped.clone())
            });
            Box::pin(async move {
                if let Some(_dropped_with_the_task) = hang {
                    std::future::pending::<()>().await;
                }
                Ok(serde_json::json!({"echo": request.params}))
            })
        }
    }

    type Flag = Arc<std::sync::atomic::AtomicBool>;

    /// The script, and flags for its `hang` handler having run and having been dropped.
    fn control_script() -> (Arc<ControlScript>, Flag, Flag) {
        let (started, dropped) = (Flag::default(), Flag::default());
        let script = ControlScript { hang_started: started.clone(), hang_dropped: dropped.clone() };
        (Arc::new(script), started, dropped)
    }

    async fn eventually(what: &str, flag: &Flag) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !flag.load(Ordering::SeqCst) {
            assert!(tokio::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn claude_control_requests_are_answered_in_their_envelope_and_conversation_is_delivered() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (_peer, mut events, mut cli_out, mut cli_in) = claude_peer(handler);
        write_line(&mut cli_out, json!({"type": "system", "subtype": "init", "session_id": "s"})).await;
        cli_out.write_all(b"[SandboxDebug] not a protocol line\n").await.unwrap();
        write_line(&mut cli_out, json!(42)).await;
        write_line(
            &mut cli_out,
            json!({"type": "control_request", "request_id": "u-1", "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}),
        )
        .await;
        match tokio::time::timeout(Duration::from_secs(10), events.recv()).await.unwrap() {
            Some(PeerEvent::Notification(n)) => {
                assert_eq!(n.method, "system");
                assert_eq!(
                    n.params_value(),
                    Some(json!({"type": "system", "subtype": "init", "session_id": "s"})),
                    "the whole line"
                );
            }
            other => panic!("expected the conversation line, got {other:?}"),
        }
        assert!(matches!(events.recv().await, Some(PeerEvent::Problem(StreamProblem::NotJson { .. }))));
        assert!(matches!(
            events.recv().await,
            Some(PeerEvent::Problem(StreamProblem::NotAMessage { error: ShapeError::NotAnObject, .. }))
        ));
        assert_eq!(
            next_written(&mut cli_in).await,
            json!({"type": "control_response", "response": {"subtype": "success", "request_id": "u-1",
                   "response": {"echo": {"subtype": "can_use_tool", "tool_name": "Bash"}}}})
        );
    }

    #[tokio::test]
    async fn our_claude_control_requests_carry_unique_string_ids_and_their_answers_match() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (peer, mut events, mut cli_out, mut cli_in) = claude_peer(handler);
        let first = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("initialize", Some(&json!({"hooks": null}))).await }
        });
        let sent = next_written(&mut cli_in).await;
        assert_eq!(sent["type"], "control_request");
        assert_eq!(sent["request"], json!({"subtype": "initialize", "hooks": null}));
        let first_id = sent["request_id"].as_str().unwrap().to_owned();
        let second = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request::<Value>("interrupt", None).await }
        });
        let sent = next_written(&mut cli_in).await;
        assert_eq!(sent["request"], json!({"subtype": "interrupt"}));
        let second_id = sent["request_id"].as_str().unwrap().to_owned();
        assert_ne!(first_id, second_id);
        assert!(first_id.starts_with(OUR_ID_PREFIX) && second_id.starts_with(OUR_ID_PREFIX));

        // Answers in the other order, and one to an id we never sent (as a number, too).
        write_line(
            &mut cli_out,
            json!({"type": "control_response",
            "response": {"subtype": "error", "request_id": second_id, "error": "no turn is running"}}),
        )
        .await;
        write_line(
            &mut cli_out,
            json!({"type": "control_response",
            "response": {"subtype": "success", "request_id": "clawbridge-99", "response": {}}}),
        )
        .await;
        write_line(
            &mut cli_out,
            json!({"type": "control_response",
            "response": {"subtype": "success", "request_id": 1, "response": {}}}),
        )
        .await;
        write_line(
            &mut cli_out,
            json!({"type": "control_response",
            "response": {"subtype": "success", "request_id": first_id, "response": {"pid": 7}}}),
        )
        .await;
        assert_eq!(first.await.unwrap().unwrap(), json!({"pid": 7}));
        match second.await.unwrap() {
            Err(RpcError::Remote { method, error }) => {
                assert_eq!(method, "interrupt");
                assert_eq!(error.message, "no turn is running");
            }
            other => panic!("expected the CLI's error, got {other:?}"),
        }
        for _ in 0..2 {
            assert!(matches!(events.recv().await, Some(PeerEvent::Problem(StreamProblem::UnmatchedResponse { .. }))));
        }
    }

    #[tokio::test]
    async fn a_claude_cancel_aborts_the_handler_and_nothing_is_answered() {
        use serde_json::json;
        let (handler, hang_started, hang_dropped) = control_script();
        let (_peer, _events, mut cli_out, mut cli_in) = claude_peer(handler);
        write_line(
            &mut cli_out,
            json!({"type": "control_request", "request_id": "u-1", "request": {"subtype": "hang"}}),
        )
        .await;
        // Only a handler that runs has anything to abort; one aborted before it ran never asked anyone.
        eventually("the handler runs", &hang_started).await;
        write_line(&mut cli_out, json!({"type": "control_cancel_request", "request_id": "u-1"})).await;
        // A cancel for nothing that runs changes nothing.
        write_line(&mut cli_out, json!({"type": "control_cancel_request", "request_id": "u-7"})).await;
        write_line(
            &mut cli_out,
            json!({"type": "control_request", "request_id": "u-2", "request": {"subtype": "echo"}}),
        )
        .await;
        let written = next_written(&mut cli_in).await;
        assert_eq!(written["response"]["request_id"], "u-2", "the withdrawn request got no answer: {written}");
        eventually("the withdrawn handler is aborted", &hang_dropped).await;
        // Nothing else was written for it.
        assert!(tokio::time::timeout(Duration::from_millis(200), cli_in.next_line()).await.is_err());
    }

    #[tokio::test]
    async fn a_claude_control_request_that_cannot_be_typed_is_answered_with_an_error() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (_peer, _events, mut cli_out, mut cli_in) = claude_peer(handler);
        write_line(&mut cli_out, json!({"type": "control_request", "request_id": "u-3", "request": "interrupt"})).await;
        write_line(&mut cli_out, json!({"type": "control_request", "request_id": "u-4", "request": {"tool": 1}})).await;
        for id in ["u-3", "u-4"] {
            let written = next_written(&mut cli_in).await;
            assert_eq!(written["type"], "control_response");
            assert_eq!(written["response"]["subtype"], "error", "{written}");
            assert_eq!(written["response"]["request_id"], id);
        }
    }

    #[tokio::test]
    async fn a_claude_notification_is_written_as_the_conversation_line() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (peer, _events, _cli_out, mut cli_in) = claude_peer(handler);
        let user = json!({"session_id": "", "message": {"role": "user", "content": "hi"}});
        peer.notify("user", Some(&user)).await.unwrap();
        assert_eq!(
            next_written(&mut cli_in).await,
            json!({"type": "user", "session_id": "", "message": {"role": "user", "content": "hi"}})
        );
    }

    #[tokio::test]
    async fn handlers_still_running_when_the_output_ends_are_aborted_when_asked() {
        use serde_json::json;
        let (handler, hang_started, hang_dropped) = control_script();
        let (output, mut cli_out) = tokio::io::duplex(1024);
        let config =
            PeerConfig { dialect: Dialect::ClaudeControl, abort_handlers_on_close: true, ..PeerConfig::default() };
        let (_peer, mut events) = RpcPeer::start(output, tokio::io::sink(), config, handler, Arc::new(NoProcess));
        write_line(
            &mut cli_out,
            json!({"type": "control_request", "request_id": "u-1", "request": {"subtype": "hang"}}),
        )
        .await;
        // Only a handler that runs has anything to abort; one aborted before it ran never asked anyone.
        eventually("the handler runs", &hang_started).await;
        drop(cli_out);
        assert!(matches!(events.recv().await, Some(PeerEvent::Closed(_))));
        eventually("the handler is aborted with the stream", &hang_dropped).await;
    }

    /// Panics before it returns its future.
    struct PanicsAtOnce;

    impl RequestHandler for PanicsAtOnce {
        fn handle(&self, _request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
            panic!("a handler bug");
        }
    }

    #[tokio::test]
    async fn a_handler_that_panics_before_its_future_gets_the_fallback_and_reading_goes_on() {
        use serde_json::json;
        let (peer, mut events, mut cli_out, mut cli_in) = claude_peer(Arc::new(PanicsAtOnce));
        write_line(&mut cli_out, json!({"type": "control_request", "request_id": "u-1", "request": {"subtype": "x"}}))
            .await;
        let written = next_written(&mut cli_in).await;
        assert_eq!(written["response"]["subtype"], "error", "{written}");
        assert_eq!(written["response"]["request_id"], "u-1");
        write_line(&mut cli_out, json!({"type": "result", "subtype": "success"})).await;
        assert!(matches!(events.recv().await, Some(PeerEvent::Notification(n)) if n.method == "result"));
        assert!(peer.gone().is_none());
    }

    /// A strict JSON-RPC peer with small caps: requests `small/*` 100 bytes, answers to `tiny` 60.
    fn capped_peer(
        handler: Arc<dyn RequestHandler>,
    ) -> (RpcPeer, PeerEvents, tokio::io::DuplexStream, tokio::io::Lines<tokio::io::BufReader<tokio::io::DuplexStream>>)
    {
        use tokio::io::AsyncBufReadExt;
        let (output, other_stdout) = tokio::io::duplex(64 * 1024);
        let (input, other_stdin) = tokio::io::duplex(64 * 1024);
        let caps = LineCaps {
            default_incoming: 100,
            incoming: vec![("big", 10_000)],
            default_answer: 10_000,
            answers: vec![("tiny", 60)],
            too_large_code: -32014,
        };
        let config = PeerConfig { strict_jsonrpc: true, caps, ..PeerConfig::default() };
        let (peer, events) = RpcPeer::start(output, input, config, handler, Arc::new(NoProcess));
        (peer, events, other_stdout, tokio::io::BufReader::new(other_stdin).lines())
    }

    #[tokio::test]
    async fn a_request_over_its_methods_cap_is_refused_unread_and_one_under_it_is_handled() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (_peer, _events, mut other_out, mut other_in) = capped_peer(handler);
        let padding = "x".repeat(200);
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"p": padding}}))
            .await;
        let refused = next_written(&mut other_in).await;
        assert_eq!(refused["id"], 1);
        assert_eq!(refused["error"]["code"], -32014, "{refused}");
        assert_eq!(refused["error"]["data"]["method"], "echo");
        assert_eq!(refused["error"]["data"]["limit"], 100);
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "id": 2, "method": "big", "params": {"p": padding}})).await;
        let served = next_written(&mut other_in).await;
        assert_eq!(served["id"], 2);
        assert_eq!(served["result"]["echo"]["p"], padding, "{served}");
    }

    #[tokio::test]
    async fn an_answer_over_its_methods_cap_fails_the_request_and_the_next_is_answered() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (peer, _events, mut other_out, mut other_in) = capped_peer(handler);
        let ask = |method: &'static str| {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request::<Value>(method, None).await })
        };
        let tiny = ask("tiny");
        let sent = next_written(&mut other_in).await;
        let big = "y".repeat(100);
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"big": big}})).await;
        match tiny.await.unwrap() {
            Err(RpcError::AnswerTooLarge { method, limit, bytes }) => {
                assert_eq!((method.as_str(), limit), ("tiny", 60));
                assert!(bytes > 100);
            }
            other => panic!("expected the cap to refuse the answer, got {other:?}"),
        }
        let other = ask("other");
        let sent = next_written(&mut other_in).await;
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"big": big}})).await;
        assert_eq!(other.await.unwrap().unwrap(), json!({"big": big}));
    }

    #[tokio::test]
    async fn a_notification_named_like_a_large_request_gets_the_default_cap() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (_peer, mut events, mut other_out, _other_in) = capped_peer(handler);
        let padding = "x".repeat(200);
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "method": "big", "params": {"p": padding}})).await;
        match events.recv().await {
            Some(PeerEvent::Problem(StreamProblem::MessageTooLarge { method, limit, .. })) => {
                assert_eq!((method.as_str(), limit), ("big", 100));
            }
            other => panic!("expected the notification refused at the default cap, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn notification_params_and_claude_lines_are_handed_on_as_the_peer_wrote_them() {
        let (output, mut other_out) = tokio::io::duplex(64 * 1024);
        let (input, _other_in) = tokio::io::duplex(64 * 1024);
        let (handler, _, _) = control_script();
        let (_peer, mut events) = RpcPeer::start(output, input, PeerConfig::default(), handler, Arc::new(NoProcess));
        // A `Value` would write `1.50` as `1.5` and sort the members: the text shows nothing was rebuilt.
        other_out.write_all(b"{\"method\":\"note\",\"params\":{\"z\":1.50, \"a\":[]}}\n").await.unwrap();
        match events.recv().await {
            Some(PeerEvent::Notification(note)) => {
                assert_eq!(note.params.as_deref().map(RawValue::get), Some(r#"{"z":1.50, "a":[]}"#));
            }
            other => panic!("expected the notification, got {other:?}"),
        }
        let (handler, _, _) = control_script();
        let (_peer, mut events, mut cli_out, _cli_in) = claude_peer(handler);
        let line = r#"{"type":"assistant","z":1.50, "message":{}}"#;
        cli_out.write_all(format!("  {line}\n").as_bytes()).await.unwrap();
        match events.recv().await {
            Some(PeerEvent::Notification(n)) => {
                assert_eq!(n.method, "assistant");
                assert_eq!(n.params.as_deref().map(RawValue::get), Some(line), "the line itself, trimmed");
            }
            other => panic!("expected the conversation line, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_peer_that_does_not_decode_notification_params_delivers_the_method_alone() {
        use serde_json::json;
        let (output, mut other_out) = tokio::io::duplex(64 * 1024);
        let (input, _other_in) = tokio::io::duplex(64 * 1024);
        let config = PeerConfig { decode_notification_params: false, ..PeerConfig::default() };
        let (handler, _, _) = control_script();
        let (_peer, mut events) = RpcPeer::start(output, input, config, handler, Arc::new(NoProcess));
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "method": "note", "params": [0, 0, 0]})).await;
        match events.recv().await {
            Some(PeerEvent::Notification(note)) => {
                assert_eq!(note.method, "note");
                assert!(note.params.is_none());
            }
            other => panic!("expected the notification, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_notification_over_its_cap_is_reported_and_skipped() {
        use serde_json::json;
        let (handler, _, _) = control_script();
        let (_peer, mut events, mut other_out, _other_in) = capped_peer(handler);
        let padding = "x".repeat(200);
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "method": "note", "params": {"p": padding}})).await;
        write_line(&mut other_out, json!({"jsonrpc": "2.0", "method": "after"})).await;
        match events.recv().await {
            Some(PeerEvent::Problem(StreamProblem::MessageTooLarge { method, limit, .. })) => {
                assert_eq!((method.as_str(), limit), ("note", 100));
            }
            other => panic!("expected the oversize notification, got {other:?}"),
        }
        assert!(matches!(events.recv().await, Some(PeerEvent::Notification(n)) if n.method == "after"));
    }

    #[test]
    fn params_are_cut_from_the_line_in_place() {
        let padding = "x".repeat(100_000);
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":[1, 2]}},"pad":"{padding}"}}"#);
        let Ok(Envelope { params: Some(params), .. }) = Envelope::parse(&line) else { panic!() };
        let span = span_of(&line, params.get()).expect("a slice of the line");
        assert_eq!(span_of(&line, "elsewhere"), None);
        let raw = params_in_place(line.clone(), span).unwrap();
        assert_eq!(raw.get(), r#"{"a":[1, 2]}"#);
    }

    #[test]
    fn a_peer_has_no_write_timeout_unless_it_asks_for_one() {
        // A host may read slowly on purpose; only the native agents' adapters set one.
        assert_eq!(PeerConfig::default().write_timeout, None);
    }
}
