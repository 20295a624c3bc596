use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_protocol::jsonrpc::{Dialect, Message, Notification, Request, RequestId, Response, outgoing};
use futures::StreamExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use super::error::{GoneCause, PeerGone, RpcError, StreamProblem};
use super::handler::{ExitReporter, HandlerError, HandlerFailure, RequestHandler};
use crate::transport::{DEFAULT_MAX_LINE_BYTES, Frame, LineSender, frame_reader, spawn_line_writer};

/// How a peer connection behaves.
#[derive(Clone, Debug)]
pub struct PeerConfig {
    /// Envelope flavour for what we write (input is accepted in either).
    pub dialect: Dialect,
    /// Longest accepted line; longer ones become [`StreamProblem::Oversize`].
    pub max_line_bytes: usize,
    /// Default deadline for our requests.
    pub request_timeout: Duration,
    /// How long a handler may take before the peer gets the fallback answer.
    pub handler_timeout: Duration,
    /// Requests from the peer handled at once; beyond this the reader waits (backpressure).
    pub max_concurrent_handlers: usize,
    /// Outgoing lines queued before senders wait.
    pub outgoing_queue: usize,
    /// Events queued for the consumer before the reader waits.
    pub event_queue: usize,
    /// Tag for logs.
    pub label: String,
}

impl Default for PeerConfig {
    fn default() -> Self {
        Self {
            dialect: Dialect::JsonRpc2,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            request_timeout: Duration::from_secs(60),
            handler_timeout: Duration::from_secs(600),
            max_concurrent_handlers: 64,
            outgoing_queue: 256,
            event_queue: 1024,
            label: "peer".into(),
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
}

enum Reply {
    Answer(Result<Value, clawbridge_protocol::jsonrpc::ErrorObject>),
    Gone(Arc<PeerGone>),
}

#[derive(Default)]
struct Pending {
    /// Our requests awaiting an answer, by our (integer) id.
    waiting: HashMap<i64, oneshot::Sender<Reply>>,
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
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Our side of a JSON-RPC connection. Cheap to clone.
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
    /// The returned events must be drained (or the receiver dropped): once `event_queue` events are
    /// waiting, the reader waits too, and answers to our requests queue up behind them.
    pub fn start<R, W>(
        reader: R,
        writer: W,
        config: PeerConfig,
        handler: Arc<dyn RequestHandler>,
        exit: Arc<dyn ExitReporter>,
    ) -> (RpcPeer, mpsc::Receiver<PeerEvent>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, _writer_task) = spawn_line_writer(writer, config.outgoing_queue);
        let (events_tx, events) = mpsc::channel(config.event_queue.max(1));
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            next_id: AtomicI64::new(1),
            gone_watch: watch::channel(None).0,
            closed_locally: Default::default(),
        });
        let peer = RpcPeer { shared, out, config: Arc::new(config) };
        let reader_task = ReaderTask { peer: peer.clone(), events: events_tx, handler, exit };
        tokio::spawn(reader_task.run(reader));
        (peer, events)
    }

    /// Sends a request and waits for its answer under the configured default deadline.
    pub async fn request<P: Serialize>(&self, method: &str, params: Option<&P>) -> Result<Value, RpcError> {
        self.request_with_timeout(method, params, self.config.request_timeout).await
    }

    /// Sends a request and decodes its result as `R`.
    pub async fn request_typed<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<&P>,
    ) -> Result<R, RpcError> {
        let value = self.request(method, params).await?;
        serde_json::from_value(value)
            .map_err(|e| RpcError::BadResult { method: method.to_string(), reason: e.to_string() })
    }

    /// Sends a request and waits at most `timeout` for its answer.
    pub async fn request_with_timeout<P: Serialize>(
        &self,
        method: &str,
        params: Option<&P>,
        timeout: Duration,
    ) -> Result<Value, RpcError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.shared.lock();
            if let Some(gone) = &pending.gone {
                return Err(RpcError::PeerGone { method: method.into(), gone: gone.clone() });
            }
            pending.waiting.insert(id, tx);
        }
        let request_id = RequestId::from(id);
        let call = outgoing::Call::new(self.config.dialect, Some(&request_id), method, params);
        if let Err(e) = self.out.send_json(&call).await {
            self.shared.lock().waiting.remove(&id);
            return Err(self.explain_send_failure(method, e).await);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(Reply::Answer(Ok(value)))) => Ok(value),
            Ok(Ok(Reply::Answer(Err(error)))) => Err(RpcError::Remote { method: method.into(), error }),
            Ok(Ok(Reply::Gone(gone))) => Err(RpcError::PeerGone { method: method.into(), gone }),
            Ok(Err(_)) => {
                Err(RpcError::NotSent { method: method.into(), reason: "the peer connection was dropped".into() })
            }
            Err(_) => {
                self.shared.lock().waiting.remove(&id);
                Err(RpcError::Timeout { method: method.into(), after: timeout })
            }
        }
    }

    /// Sends a notification.
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
        if matches!(error, crate::transport::SendError::Closed) && !local {
            if let Ok(gone) = tokio::time::timeout(Duration::from_secs(5), self.closed()).await {
                return RpcError::PeerGone { method: method.into(), gone };
            }
        }
        RpcError::not_sent(method, error)
    }
}

struct ReaderTask {
    peer: RpcPeer,
    events: mpsc::Sender<PeerEvent>,
    handler: Arc<dyn RequestHandler>,
    exit: Arc<dyn ExitReporter>,
}

impl ReaderTask {
    async fn run<R: AsyncRead + Unpin>(self, reader: R) {
        let config = self.peer.config.clone();
        let handlers = Arc::new(Semaphore::new(config.max_concurrent_handlers.max(1)));
        let mut frames = frame_reader(reader, config.max_line_bytes);
        let exited = self.exit.exited();
        tokio::pin!(exited);
        // Set when the process exited: from then on, output that is not already readable by this
        // deadline can only come from another process holding the pipe.
        let mut drain_deadline: Option<tokio::time::Instant> = None;
        let cause = loop {
            let next = tokio::select! {
                // Output first: what the process wrote before it exited is already in the pipe.
                biased;
                next = frames.next() => next,
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
                Frame::Line(line) => self.on_line(&line, &handlers).await,
                Frame::Oversize { len } => self.problem(StreamProblem::Oversize { len }).await,
                Frame::InvalidUtf8 { len, .. } => self.problem(StreamProblem::InvalidUtf8 { len }).await,
                Frame::TruncatedAtEof { len } => self.problem(StreamProblem::TruncatedAtEof { len }).await,
            }
        };
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
            let _ = waiter.send(Reply::Gone(gone.clone()));
        }
        let _ = self.events.send(PeerEvent::Closed(gone)).await;
    }

    async fn on_line(&self, line: &str, handlers: &Arc<Semaphore>) {
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(e) => {
                return self.problem(StreamProblem::NotJson { preview: preview(line), error: e.to_string() }).await;
            }
        };
        match Message::from_value(value) {
            Ok(Message::Notification(n)) => {
                // A consumer that stopped listening must not stop us reading: the child would block.
                let _ = self.events.send(PeerEvent::Notification(n)).await;
            }
            Ok(Message::Response(response)) => self.on_response(response).await,
            Ok(Message::Request(request)) => {
                let permit = handlers.clone().acquire_owned().await.expect("the semaphore is never closed");
                let peer = self.peer.clone();
                let handler = self.handler.clone();
                tokio::spawn(async move {
                    answer(peer, handler, request).await;
                    drop(permit);
                });
            }
            Err(error) => self.problem(StreamProblem::NotJsonRpc { preview: preview(line), error }).await,
        }
    }

    async fn on_response(&self, response: Response) {
        let waiter = response.id.as_i64().and_then(|id| self.peer.shared.lock().waiting.remove(&id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(Reply::Answer(response.outcome));
            }
            None => self.problem(StreamProblem::UnmatchedResponse { id: response.id }).await,
        }
    }

    async fn problem(&self, problem: StreamProblem) {
        tracing::warn!(peer = %self.peer.config.label, "{problem}");
        let _ = self.events.send(PeerEvent::Problem(problem)).await;
    }
}

/// Runs the handler for one peer request and always sends exactly one answer.
async fn answer(peer: RpcPeer, handler: Arc<dyn RequestHandler>, request: Request) {
    let Request { id, method, params } = request;
    let timeout = peer.config.handler_timeout;
    let work = tokio::spawn(handler.handle(Request { id: id.clone(), method: method.clone(), params: params.clone() }));
    let abort = work.abort_handle();
    let failure = match tokio::time::timeout(timeout, work).await {
        Ok(Ok(Ok(value))) => return send_answer(&peer, &id, Ok(value)).await,
        Ok(Ok(Err(HandlerError::Reply(error)))) => {
            return send_answer(&peer, &id, Err(error)).await;
        }
        Ok(Ok(Err(HandlerError::Failed(reason)))) => HandlerFailure::Failed(reason),
        Ok(Err(_join_error)) => HandlerFailure::Panicked,
        Err(_) => {
            abort.abort();
            HandlerFailure::TimedOut(timeout)
        }
    };
    tracing::warn!(peer = %peer.config.label, %method, %failure, "answering with the fallback");
    let fallback = handler.fallback(&method, params.as_ref(), &failure);
    send_answer(&peer, &id, fallback).await;
}

async fn send_answer(
    peer: &RpcPeer,
    id: &RequestId,
    outcome: Result<Value, clawbridge_protocol::jsonrpc::ErrorObject>,
) {
    let reply = outgoing::Reply::new(peer.config.dialect, id, &outcome);
    if let Err(e) = peer.out.send_json(&reply).await {
        tracing::debug!(peer = %peer.config.label, %id, error = %e, "could not answer: the peer is gone");
    }
}

/// How long the reader keeps waiting for EOF after the process exited. Its own output is readable at
/// once; this only bounds the wait when a grandchild inherited the pipe and keeps it open.
const OUTPUT_DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
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
    async fn without_a_process_only_eof_ends_the_stream() {
        let (output, held) = tokio::io::duplex(1024);
        let (_peer, mut events) =
            RpcPeer::start(output, tokio::io::sink(), PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
        assert!(tokio::time::timeout(OUTPUT_DRAIN_AFTER_EXIT * 2, events.recv()).await.is_err(), "still open");
        drop(held);
        assert!(matches!(events.recv().await, Some(PeerEvent::Closed(gone)) if gone.cause == GoneCause::OutputClosed));
    }
}
