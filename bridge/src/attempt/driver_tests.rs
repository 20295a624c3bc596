//! Which cause the driver gives each way a turn can end.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::attempt::hooks::NoObserver;
use crate::events::TurnTerminal;

/// A scripted native turn: each `next` takes the following step; once the script is out it waits
/// forever (a native side that went quiet), unless an interrupt queued the native answer to it.
struct Scripted {
    steps: VecDeque<Step>,
    complete: bool,
    /// What the native side answers an interrupt with (`None`: it never confirms).
    on_interrupt: Option<TerminalKind>,
}

impl Scripted {
    fn new(steps: Vec<Step>, on_interrupt: Option<TerminalKind>) -> Self {
        Scripted { steps: steps.into(), complete: false, on_interrupt }
    }
}

fn terminal(kind: TerminalKind) -> Event {
    Event::TurnTerminal(TurnTerminal::new(kind, None))
}

impl NativeTurn for Scripted {
    async fn next(&mut self) -> Step {
        match self.steps.pop_front() {
            Some(step) => {
                if let Step::Events(events) = &step {
                    self.complete |= events.iter().any(|e| matches!(e, Event::TurnTerminal(_)));
                }
                step
            }
            None => std::future::pending().await,
        }
    }

    fn has_queued(&self) -> bool {
        !self.steps.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        if let Some(kind) = self.on_interrupt.take() {
            self.steps.push_back(Step::Events(vec![terminal(kind)]));
        }
        Ok(true)
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        vec![Event::TurnTerminal(TurnTerminal::new(kind, Some(message)))]
    }

    fn is_complete(&self) -> bool {
        self.complete
    }
}

const LIMITS: TurnLimits =
    TurnLimits { idle: Duration::from_millis(200), interrupt_grace: Duration::from_millis(200), backend: "scripted" };

/// Drives `turn` (cancelled at once when `cancel` is set) and returns the result's terminal and
/// the terminal event the sink saw.
async fn drive(mut turn: Scripted, cancel_now: bool) -> (TurnTerminal, Vec<TurnTerminal>) {
    let mut seen = Vec::new();
    let mut sink = |event: &Event| {
        if let Event::TurnTerminal(t) = event {
            seen.push(t.clone());
        }
    };
    let cancel = CancellationToken::new();
    if cancel_now {
        cancel.cancel();
    }
    let driver = TurnDriver::new(Arc::new(NoObserver), Arc::new(TurnActivity::default()), &mut sink);
    let driven = driver.run(&mut turn, LIMITS, &cancel).await;
    let result = driven.finish(None);
    (result.terminal, seen)
}

#[tokio::test]
async fn each_way_a_turn_ends_has_its_own_cause() {
    let cases: Vec<(&str, Scripted, bool, TerminalKind, TerminalCause)> = vec![
        (
            "the native side completes",
            Scripted::new(vec![Step::Events(vec![terminal(TerminalKind::Ok)])], None),
            false,
            TerminalKind::Ok,
            TerminalCause::Native,
        ),
        (
            "the native side reports a provider error",
            Scripted::new(vec![Step::Events(vec![terminal(TerminalKind::Failed)])], None),
            false,
            TerminalKind::Failed,
            TerminalCause::Native,
        ),
        (
            "nothing happens for the idle limit",
            Scripted::new(Vec::new(), None),
            false,
            TerminalKind::Timeout,
            TerminalCause::IdleTimeout,
        ),
        (
            "the process goes away mid-turn",
            Scripted::new(vec![Step::Ended(vec![terminal(TerminalKind::Failed)])], None),
            false,
            TerminalKind::Failed,
            TerminalCause::BackendExited,
        ),
        (
            "a cancel the native side confirms",
            Scripted::new(Vec::new(), Some(TerminalKind::Aborted)),
            true,
            TerminalKind::Aborted,
            TerminalCause::Cancelled,
        ),
        (
            "a cancel the native side never confirms",
            Scripted::new(Vec::new(), None),
            true,
            TerminalKind::Aborted,
            TerminalCause::Cancelled,
        ),
    ];
    for (what, turn, cancel, kind, cause) in cases {
        let (result, seen) = drive(turn, cancel).await;
        assert_eq!((result.kind, result.cause), (kind, Some(cause)), "{what}");
        assert_eq!(seen.len(), 1, "{what}: one terminal event");
        assert_eq!(seen[0].cause, Some(cause), "{what}: the streamed terminal names the cause too");
    }
}

#[tokio::test]
async fn a_cause_the_native_side_already_named_is_kept() {
    let mut named = TurnTerminal::new(TerminalKind::Failed, None);
    named.cause = Some(TerminalCause::BackendError);
    let turn = Scripted::new(vec![Step::Events(vec![Event::TurnTerminal(named)])], None);
    let (result, _) = drive(turn, false).await;
    assert_eq!(result.cause, Some(TerminalCause::BackendError));
}

/// A sink whose consumer never takes anything: full after its first event.
struct NeverDrained {
    /// Events pushed.
    pushed: Vec<Event>,
}

impl TurnSink for NeverDrained {
    fn push(&mut self, event: &Event) {
        self.pushed.push(event.clone());
    }

    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        (!self.pushed.is_empty()).then(|| Box::pin(std::future::pending()) as BoxFuture<'static, ()>)
    }
}

/// A pipeline's queue nobody drains (a host that stopped reading), as a turn's sink.
struct Undrained(Arc<crate::sink::EventQueue>);

impl TurnSink for Undrained {
    fn push(&mut self, event: &Event) {
        self.0.push(event.clone());
    }

    fn room(&self) -> Option<BoxFuture<'static, ()>> {
        crate::sink::queue::room_in(&self.0)
    }

    fn interrupting(&mut self) {
        self.0.shed_deltas();
    }
}

#[tokio::test]
async fn a_full_sink_stops_the_reading_without_counting_as_idle_and_a_cancel_reads_on_to_the_native_end() {
    let delta = |n: usize| Event::AssistantDelta { item_id: format!("m{n}"), delta: "x".repeat(1000) };
    // The native side answers the interrupt after everything it streamed before.
    let mut turn = Scripted::new((0..100).map(|n| Step::Events(vec![delta(n)])).collect(), Some(TerminalKind::Aborted));
    let queue = Arc::new(crate::sink::EventQueue::with_cap(4096));
    let mut sink = Undrained(queue.clone());
    let cancel = CancellationToken::new();
    let driver = TurnDriver::new(Arc::new(NoObserver), Arc::new(TurnActivity::default()), &mut sink);
    let canceller = async {
        // Many idle limits pass while the sink is full: the native side is not idle, it is held.
        tokio::time::sleep(LIMITS.idle * 5).await;
        assert!(!queue.has_room(), "reading stopped while the sink was full");
        cancel.cancel();
    };
    let (driven, ()) = tokio::join!(driver.run(&mut turn, LIMITS, &cancel), canceller);
    assert!(!driven.abandoned, "the native side's own answer to the interrupt ended the turn");
    let result = driven.finish(None);
    assert_eq!((result.terminal.kind, result.terminal.cause), (TerminalKind::Aborted, Some(TerminalCause::Cancelled)));
    assert!(result.terminal.message.is_none(), "not the driver's abandon: {:?}", result.terminal.message);
    assert!(turn.steps.is_empty(), "everything the native side wrote was read");
    assert!(queue.dropped_bytes() > 0, "streaming deltas were shed while the turn was stopped");
    assert!(queue.queued_bytes() < 2 * 4096 + 2048, "the queue stayed bounded: {}", queue.queued_bytes());
}

#[test]
fn a_relay_keeps_the_room_of_the_sink_behind_it() {
    let mut full = NeverDrained { pushed: vec![terminal(TerminalKind::Ok)] };
    let mut added = 0;
    let mut relay = relay(&mut full, |sink, event| {
        sink.push(event);
        sink.push(event);
        added += 1;
    });
    assert!(relay.room().is_some(), "a backend watching its events must not hide the host's lag");
    relay.push(&terminal(TerminalKind::Ok));
    assert_eq!((full.pushed.len(), added), (3, 1));
}
