//! The one turn loop every backend runs: it owns the attempt's recorder, reports each tool terminal
//! to the host (once per tool, before anything else sees it), counts the native tools still
//! running, keeps the idle deadline (suspended while a person or a tool is pending), and gives an
//! interrupted turn its grace. A backend supplies only its [`NativeTurn`]: how its stream advances,
//! how it interrupts, and how it closes a turn it must abandon. While the [`TurnSink`] is full (a
//! lagging host) the driver takes no further step, so the native side waits on its own pipe; once
//! a cancel interrupts the turn the sink sheds streaming deltas instead, so the native side's own
//! answer to the interrupt is still read within the grace.
//!
//! Why each guard exists: `docs/peers/codex.md` (idle watchdog, tools that run silently) and
//! `docs/peers/claude.md` (interrupt grace, a late `result`).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::activity::TurnActivity;
use super::hooks::{Approver, HostTools, ToolTerminalObserver};
use super::{AttemptRecorder, AttemptResult};
use crate::events::{Event, TerminalCause, TerminalKind};

/// How long the host gets to take in a tool terminal before the turn goes on without its answer.
pub const OBSERVE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the host lends a native session for its turns.
#[derive(Clone)]
pub struct SessionHooks {
    /// Decides the native side's approval requests.
    pub approver: Arc<dyn Approver>,
    /// The host's tools, offered to the native side in its own way (dynamic tools, SDK MCP, …).
    pub tools: Arc<dyn HostTools>,
    /// Receives every tool terminal.
    pub observer: Arc<dyn ToolTerminalObserver>,
}

impl std::fmt::Debug for SessionHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHooks").finish_non_exhaustive()
    }
}

/// Where a turn's events go as they happen (the person's view, a transcript, the host), and when
/// it can take more: while [`room`](Self::room) says to wait, the driver reads no further native
/// line, so a consumer that lags holds the native side back instead of growing memory
/// (docs/peers/pipes.md#backpressure).
pub trait TurnSink: Send {
    /// Takes one event; never waits.
    fn push(&mut self, event: &Event);

    /// `None` while the sink has room; else a wait that ends once it has room again. The default
    /// (any closure) always has room.
    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        None
    }

    /// The turn is being interrupted: from now on the sink must let the driver read on to the
    /// native side's answer, with its bytes still bounded (the pipeline's queue drops streaming
    /// deltas). The default (any closure) has nothing to do.
    fn interrupting(&mut self) {}
}

impl<F: FnMut(&Event) + Send> TurnSink for F {
    fn push(&mut self, event: &Event) {
        self(event);
    }
}

/// The sink a turn's events go to.
pub type EventSink<'a> = &'a mut dyn TurnSink;

/// A sink in front of another that looks at (or adds to) each event and keeps the other's room, so
/// a backend watching its events does not lose the host's backpressure. From [`relay`].
pub struct Relay<'a, F> {
    /// Where the events end up, and whose room counts.
    inner: EventSink<'a>,
    /// Gets each event with the inner sink to push it (and any it adds) to.
    each: F,
}

impl<F> std::fmt::Debug for Relay<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").finish_non_exhaustive()
    }
}

/// A [`Relay`]: `each` gets every event and `inner` to push it to.
pub fn relay<'a, F: FnMut(&mut dyn TurnSink, &Event) + Send>(inner: EventSink<'a>, each: F) -> Relay<'a, F> {
    Relay { inner, each }
}

impl<F: FnMut(&mut dyn TurnSink, &Event) + Send> TurnSink for Relay<'_, F> {
    fn push(&mut self, event: &Event) {
        (self.each)(&mut *self.inner, event);
    }

    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        self.inner.room()
    }

    fn interrupting(&mut self) {
        self.inner.interrupting();
    }
}

/// One step of a native turn's stream.
#[derive(Debug)]
pub enum Step {
    /// Events of this turn, in order; none when the native line was chatter, not progress.
    Events(Vec<Event>),
    /// The stream ended without the turn's own terminal: the closing events (a terminal among them).
    Ended(Vec<Event>),
}

/// A backend's side of one running turn, driven by [`TurnDriver::run`].
pub trait NativeTurn: Send {
    /// The next step of the native stream. Must be cancel-safe: the driver drops it whenever the
    /// deadline or the cancel token fires first, and calls it again later.
    fn next(&mut self) -> impl Future<Output = Step> + Send;

    /// Whether native output is already queued (a late wake-up of the deadline must not beat it).
    fn has_queued(&self) -> bool;

    /// Sends the native interrupt. `Ok(false)` when the turn cannot take one yet (it is retried
    /// after the next step); `Err(why)` when the native side is gone (the driver then reads what
    /// it wrote before going, to the stream's end).
    fn interrupt(&mut self) -> impl Future<Output = Result<bool, String>> + Send;

    /// The user asked to stop; called once, before the first [`interrupt`](Self::interrupt).
    fn on_cancel(&mut self) {}

    /// The watchdog gave up on the turn: a best-effort stop of work nobody waits for any more.
    fn on_idle_timeout(&mut self) {}

    /// The closing events of a turn that ends without its native terminal.
    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event>;

    /// Whether the native turn has delivered its own terminal.
    fn is_complete(&self) -> bool;
}

/// Why a native stream ended, for the terminal of a turn it ended without its own: `event` is what
/// the peer delivered (`None`: the channel closed), `process` names the native side. `None` while
/// the stream goes on.
pub fn stream_end(event: Option<&crate::rpc::PeerEvent>, process: &str) -> Option<String> {
    match event {
        Some(crate::rpc::PeerEvent::Closed(gone)) => Some(format!("{process} went away: {gone}")),
        Some(
            crate::rpc::PeerEvent::Notification(_)
            | crate::rpc::PeerEvent::Problem(_)
            | crate::rpc::PeerEvent::Answered { .. },
        ) => None,
        _ => Some(format!("the stream from {process} ended")),
    }
}

/// The time limits of one turn.
#[derive(Clone, Copy, Debug)]
pub struct TurnLimits {
    /// How long the turn may go without progress (while no person and no tool is pending).
    pub idle: Duration,
    /// How long an interrupted turn gets to confirm before it is abandoned.
    pub interrupt_grace: Duration,
    /// The backend's name in the messages of abandoned turns ("no progress from codex …").
    pub backend: &'static str,
}

/// How a driven turn ended.
#[derive(Debug)]
pub struct DrivenTurn {
    /// The attempt so far, ready for [`AttemptRecorder::finish`].
    pub recorder: AttemptRecorder,
    /// True when the turn ended without the native side's own terminal (the process may still be
    /// working on it).
    pub abandoned: bool,
}

impl DrivenTurn {
    /// The attempt's result, naming the native session it ran in.
    pub fn finish(self, native_session_id: Option<String>) -> AttemptResult {
        self.recorder.finish(native_session_id)
    }
}

/// Delivers one turn's events: recorder first, then the host's tool-terminal observer, then the sink.
pub struct TurnDriver<'s> {
    /// The attempt's record (texts, tools, usage, replay safety).
    recorder: AttemptRecorder,
    /// Receives each tool's first terminal.
    observer: Arc<dyn ToolTerminalObserver>,
    /// The request side's facts (people pending, approvals granted, requests seen).
    activity: Arc<TurnActivity>,
    /// Where every event goes after it was recorded.
    sink: EventSink<'s>,
    /// Native tools started and not yet finished: while one runs, the turn is not idle.
    active_tools: usize,
    /// The cause given to a terminal that arrives without one: the native side's own, until the
    /// driver decides otherwise (a cancel, the watchdog, the stream's end).
    cause: TerminalCause,
}

impl<'s> std::fmt::Debug for TurnDriver<'s> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnDriver").finish_non_exhaustive()
    }
}
impl<'s> TurnDriver<'s> {
    /// A driver for one turn.
    pub fn new(observer: Arc<dyn ToolTerminalObserver>, activity: Arc<TurnActivity>, sink: EventSink<'s>) -> Self {
        TurnDriver {
            recorder: AttemptRecorder::new(),
            observer,
            activity,
            sink,
            active_tools: 0,
            cause: TerminalCause::Native,
        }
    }

    /// Delivers `events` in order: each is recorded, a tool's terminal is reported to the host
    /// (before anything else sees the result), then the event goes to the sink.
    pub async fn deliver(&mut self, events: Vec<Event>) {
        for mut event in events {
            if let Event::TurnTerminal(terminal) = &mut event {
                terminal.cause.get_or_insert(self.cause);
            }
            match &event {
                Event::ToolStarted(_) => self.active_tools += 1,
                Event::ToolFinished(_) => self.active_tools = self.active_tools.saturating_sub(1),
                _ => {}
            }
            if let Some(report) = self.recorder.record(&event) {
                match tokio::time::timeout(OBSERVE_TIMEOUT, self.observer.observe(report)).await {
                    Ok(resolution) => self.recorder.set_last_tool_error(resolution.last_tool_error),
                    Err(_) => tracing::warn!("the host did not acknowledge a tool terminal in time"),
                }
            }
            self.sink.push(&event);
        }
    }

    /// Ends a turn that never ran its loop (it failed before it started): delivers `closing` and
    /// returns the record.
    pub async fn close(mut self, closing: Vec<Event>) -> DrivenTurn {
        self.cause = TerminalCause::BackendError;
        self.deliver(closing).await;
        self.done(true)
    }

    /// Runs `turn` to its end: its own terminal, the stream's end, the idle watchdog, or an
    /// interrupt (on `cancel`) that is confirmed or runs out of grace. Never hangs.
    pub async fn run<T: NativeTurn>(
        mut self,
        turn: &mut T,
        limits: TurnLimits,
        cancel: &CancellationToken,
    ) -> DrivenTurn {
        let backend = limits.backend;
        let mut deadline = Instant::now() + limits.idle;
        let mut interrupting = false;
        let mut interrupt_sent = false;
        let mut requests_seen = self.activity.requests_seen();
        let (closing, abandoned) = loop {
            if interrupting && !interrupt_sent {
                match turn.interrupt().await {
                    Ok(sent) => interrupt_sent = sent,
                    Err(why) => {
                        // Gone, but what it wrote before going may hold the turn's own end: read on
                        // until the stream ends (or the grace runs out).
                        tracing::debug!(%why, "the interrupt could not be sent; reading the stream to its end");
                        interrupt_sent = true;
                    }
                }
            }
            // A sink that lags stops the reading here: the native side waits on its full pipe.
            let mut room = self.sink.room();
            let full = room.is_some();
            tokio::select! {
                // The stream first: a late wake-up must not let the deadline win over progress that
                // is already queued.
                biased;
                () = async { if let Some(room) = room.as_mut() { room.await } }, if full => {
                    // The native side could not progress while it waited for us.
                    if !interrupting {
                        deadline = Instant::now() + limits.idle;
                    }
                }
                step = turn.next(), if !full => match step {
                    Step::Events(events) => {
                        // Only this turn's progress feeds the watchdog (chatter maps to no event).
                        if !interrupting && !events.is_empty() {
                            deadline = Instant::now() + limits.idle;
                        }
                        self.deliver(events).await;
                        if turn.is_complete() {
                            break (Vec::new(), false);
                        }
                    }
                    Step::Ended(closing) => {
                        self.cause = TerminalCause::BackendExited;
                        break (closing, true);
                    }
                },
                () = cancel.cancelled(), if !interrupting => {
                    interrupting = true;
                    // Whatever the native side answers from now on ends the turn for the cancel.
                    self.cause = TerminalCause::Cancelled;
                    // The answer to the interrupt is queued behind what the native side streamed
                    // meanwhile: the sink must let the driver read on to it.
                    self.sink.interrupting();
                    turn.on_cancel();
                    deadline = Instant::now() + limits.interrupt_grace;
                }
                () = tokio::time::sleep_until(deadline) => {
                    // (Only while the stream is read: a full sink holds queued output back.)
                    if turn.has_queued() && !full {
                        continue;
                    }
                    if interrupting {
                        let why = format!("interrupted; {backend} did not end the turn in time");
                        break (turn.abandon(TerminalKind::Aborted, why), true);
                    }
                    if full {
                        // Waiting for the sink is not the native side's idleness.
                        deadline = Instant::now() + limits.idle;
                        continue;
                    }
                    let seen = self.activity.requests_seen();
                    let waiting = self.activity.people_pending() > 0 || self.active_tools > 0;
                    if waiting || seen != requests_seen {
                        requests_seen = seen;
                        deadline = Instant::now() + limits.idle;
                        continue;
                    }
                    turn.on_idle_timeout();
                    self.cause = TerminalCause::IdleTimeout;
                    let why = format!("no progress from {backend} for {:?}", limits.idle);
                    break (turn.abandon(TerminalKind::Timeout, why), true);
                }
            }
        };
        self.deliver(closing).await;
        self.done(abandoned)
    }

    fn done(mut self, abandoned: bool) -> DrivenTurn {
        if self.activity.take_approval_accepted() {
            self.recorder.approval_accepted();
        }
        DrivenTurn { recorder: self.recorder, abandoned }
    }
}

#[cfg(test)]
#[path = "driver_tests.rs"]
mod tests;
