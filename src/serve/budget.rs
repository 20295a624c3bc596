//! The attempt's budget (`timeoutMs`) under `serve`: a timer that cancels the attempt when it runs
//! out and that stops counting while a person is asked (a host approval or a question is
//! outstanding), as OpenClaw's own runner pauses its run deadline for approvals. Each pause and
//! resume is streamed to the host (`budgetPaused` / `budgetResumed` with the milliseconds left), so
//! the host can move the deadline it shows its lane (docs/host-protocol.md#the-attempt-budget).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, UserAnswers, UserInputAsker, UserInputRequest,
};
use clawbridge_bridge::events::Event;
use clawbridge_bridge::sink::PipelineSender;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The shortest remaining budget a pause keeps (a pause at the very deadline still leaves the
/// budget something to fire on after the person answered, as the runner does).
const MIN_REMAINING: Duration = Duration::from_millis(1);

/// One attempt's budget; clones share it.
#[derive(Clone)]
pub struct AttemptBudget {
    inner: Arc<Inner>,
}

struct Inner {
    /// Where the budget stands.
    state: Mutex<State>,
    /// Bumped on every state change, so the timer task re-reads the state.
    changed: watch::Sender<u64>,
    /// Set when the budget ran out (before the attempt is cancelled for it).
    timed_out: AtomicBool,
    /// Cancelled when the budget runs out.
    cancel: CancellationToken,
    /// The turn's event stream, once its `turnStarted` went through.
    events: OnceLock<PipelineSender>,
    /// What was told before that: the first pause and the latest change (at most two events),
    /// which is all the host needs to end in the same state; streamed when the stream opens.
    held: Mutex<Vec<Event>>,
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// Counting down to `deadline`.
    Running { deadline: Instant },
    /// Stopped with `remaining` left while `holds` people-questions are outstanding (at least 1).
    Paused { remaining: Duration, holds: usize },
    /// Ran out; the attempt was cancelled.
    Fired,
    /// The attempt ended; nothing more happens.
    Closed,
}

impl AttemptBudget {
    /// Starts a budget of `budget` that cancels `cancel` when it runs out.
    pub fn start(budget: Duration, cancel: CancellationToken) -> AttemptBudget {
        let (changed, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            state: Mutex::new(State::Running { deadline: Instant::now() + budget }),
            changed,
            timed_out: AtomicBool::new(false),
            cancel,
            events: OnceLock::new(),
            held: Mutex::new(Vec::new()),
        });
        tokio::spawn(run_timer(inner.clone()));
        AttemptBudget { inner }
    }

    /// Whether the budget ran out.
    pub fn timed_out(&self) -> bool {
        self.inner.timed_out.load(Ordering::Relaxed)
    }

    /// Streams pauses and resumes into `events` from now on, after what was told before (the first
    /// pause and the latest change), so the host ends in the budget's state.
    pub fn attach(&self, events: PipelineSender) {
        let mut held = self.inner.held.lock().unwrap_or_else(PoisonError::into_inner);
        if self.inner.events.set(events).is_err() {
            return;
        }
        if let Some(events) = self.inner.events.get() {
            for event in held.drain(..) {
                events.push(&event);
            }
        }
    }

    /// Stops the budget until the returned guard is dropped (nested pauses resume at the last drop).
    pub fn pause(&self) -> PauseGuard {
        let paused = {
            let mut state = self.inner.lock();
            match *state {
                State::Running { deadline } => {
                    let remaining = deadline.saturating_duration_since(Instant::now()).max(MIN_REMAINING);
                    *state = State::Paused { remaining, holds: 1 };
                    Some(remaining)
                }
                State::Paused { remaining, holds } => {
                    *state = State::Paused { remaining, holds: holds + 1 };
                    None
                }
                State::Fired | State::Closed => None,
            }
        };
        if let Some(remaining) = paused {
            self.inner.bump();
            self.inner.emit(Event::BudgetPaused { remaining_ms: millis(remaining) });
        }
        PauseGuard { inner: self.inner.clone() }
    }

    /// `work` with the budget held paused until it is done (the pause starts now, before it runs).
    pub fn paused_while<T: Send + 'static>(&self, work: BoxFuture<'static, T>) -> BoxFuture<'static, T> {
        let guard = self.pause();
        Box::pin(async move {
            let out = work.await;
            drop(guard);
            out
        })
    }

    /// The attempt ended: the budget stops for good.
    pub fn close(&self) {
        *self.inner.lock() = State::Closed;
        self.inner.bump();
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn emit(&self, event: Event) {
        // Under the lock `attach` holds, so nothing slips between the held events and the stream.
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        match self.events.get() {
            Some(events) => events.push(&event),
            None => {
                held.truncate(1);
                held.push(event);
            }
        }
    }
}

/// Holds the budget paused; dropping it resumes the budget (when it is the last hold).
pub struct PauseGuard {
    inner: Arc<Inner>,
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        let resumed = {
            let mut state = self.inner.lock();
            match *state {
                State::Paused { remaining, holds } if holds <= 1 => {
                    *state = State::Running { deadline: Instant::now() + remaining };
                    Some(remaining)
                }
                State::Paused { remaining, holds } => {
                    *state = State::Paused { remaining, holds: holds - 1 };
                    None
                }
                State::Running { .. } | State::Fired | State::Closed => None,
            }
        };
        if let Some(remaining) = resumed {
            self.inner.bump();
            self.inner.emit(Event::BudgetResumed { remaining_ms: millis(remaining) });
        }
    }
}

/// Sleeps to the deadline while the budget runs, waits while it is paused, fires once.
async fn run_timer(inner: Arc<Inner>) {
    let mut changes = inner.changed.subscribe();
    loop {
        changes.borrow_and_update();
        let deadline = match *inner.lock() {
            State::Running { deadline } => Some(deadline),
            State::Paused { .. } => None,
            State::Fired | State::Closed => return,
        };
        let due = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = due => {
                let mut state = inner.lock();
                // A pause that raced the deadline wins: the state says what holds now.
                if matches!(*state, State::Running { deadline } if deadline <= Instant::now()) {
                    *state = State::Fired;
                    drop(state);
                    inner.timed_out.store(true, Ordering::Relaxed);
                    inner.cancel.cancel();
                    return;
                }
            }
            changed = changes.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// An approver that holds `budget` paused while `inner` decides (a person may be asked).
pub struct PausingApprover {
    /// The approver that asks.
    pub inner: Arc<dyn Approver>,
    /// The budget to pause.
    pub budget: AttemptBudget,
}

impl Approver for PausingApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        self.budget.paused_while(self.inner.decide(request))
    }
}

/// A user-input asker that holds `budget` paused while `inner` waits for the person's answers.
pub struct PausingAsker {
    /// The asker that asks.
    pub inner: Arc<dyn UserInputAsker>,
    /// The budget to pause.
    pub budget: AttemptBudget,
}

impl UserInputAsker for PausingAsker {
    fn ask(&self, request: UserInputRequest) -> BoxFuture<'static, Result<UserAnswers, String>> {
        self.budget.paused_while(self.inner.ask(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn settle() {
        // Lets the timer task observe a state change (time is paused, so this advances nothing).
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_budget_fires_at_its_deadline() {
        let cancel = CancellationToken::new();
        let budget = AttemptBudget::start(Duration::from_millis(1000), cancel.clone());
        tokio::time::sleep(Duration::from_millis(999)).await;
        settle().await;
        assert!(!cancel.is_cancelled());
        tokio::time::sleep(Duration::from_millis(2)).await;
        settle().await;
        assert!(cancel.is_cancelled() && budget.timed_out());
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_past_the_deadline_holds_the_budget_and_it_fires_after_with_what_was_left() {
        let cancel = CancellationToken::new();
        let budget = AttemptBudget::start(Duration::from_millis(1000), cancel.clone());
        tokio::time::sleep(Duration::from_millis(400)).await;
        let guard = budget.pause();
        // Far past the original deadline while the person is asked.
        tokio::time::sleep(Duration::from_millis(5000)).await;
        settle().await;
        assert!(!cancel.is_cancelled() && !budget.timed_out(), "fired while paused");
        drop(guard);
        tokio::time::sleep(Duration::from_millis(599)).await;
        settle().await;
        assert!(!cancel.is_cancelled(), "fired before the remaining 600 ms");
        tokio::time::sleep(Duration::from_millis(2)).await;
        settle().await;
        assert!(cancel.is_cancelled() && budget.timed_out());
    }

    #[tokio::test(start_paused = true)]
    async fn nested_pauses_resume_at_the_last_and_closing_stops_the_budget() {
        let cancel = CancellationToken::new();
        let budget = AttemptBudget::start(Duration::from_millis(100), cancel.clone());
        let first = budget.pause();
        let second = budget.pause();
        drop(first);
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert!(!cancel.is_cancelled(), "one question is still outstanding");
        drop(second);
        budget.close();
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert!(!cancel.is_cancelled() && !budget.timed_out(), "a closed budget never fires");
    }

    #[tokio::test(start_paused = true)]
    async fn pauses_and_resumes_are_streamed_with_the_time_left() {
        use clawbridge_bridge::sink::{EventStage, Pipeline};

        struct Collect(Arc<Mutex<Vec<Event>>>);
        impl EventStage for Collect {
            fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
                self.0.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
                Box::pin(async {})
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let pipeline = Pipeline::start(vec![Box::new(Collect(seen.clone()))], None);
        let budget = AttemptBudget::start(Duration::from_millis(1000), CancellationToken::new());
        tokio::time::sleep(Duration::from_millis(250)).await;
        let early = budget.pause();
        budget.attach(pipeline.sender());
        tokio::time::sleep(Duration::from_millis(10_000)).await;
        drop(early);
        budget.close();
        let recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
        pipeline.finish(&recorder.finish(None)).await;
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(seen, vec![Event::BudgetPaused { remaining_ms: 750 }, Event::BudgetResumed { remaining_ms: 750 }]);
    }

    #[tokio::test(start_paused = true)]
    async fn what_was_told_before_the_stream_opened_follows_once_it_opens_and_no_more() {
        use clawbridge_bridge::sink::{EventStage, Pipeline};

        struct Collect(Arc<Mutex<Vec<Event>>>);
        impl EventStage for Collect {
            fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
                self.0.lock().unwrap_or_else(PoisonError::into_inner).push(event.clone());
                Box::pin(async {})
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let pipeline = Pipeline::start(vec![Box::new(Collect(seen.clone()))], None);
        let budget = AttemptBudget::start(Duration::from_millis(1000), CancellationToken::new());
        // Three questions asked and answered before the turn's start went through.
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            drop(budget.pause());
        }
        budget.attach(pipeline.sender());
        budget.close();
        let recorder = clawbridge_bridge::attempt::AttemptRecorder::new();
        pipeline.finish(&recorder.finish(None)).await;
        let seen = seen.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(
            seen,
            vec![Event::BudgetPaused { remaining_ms: 900 }, Event::BudgetResumed { remaining_ms: 700 }],
            "the first pause and the latest change: the host ends in the budget's state"
        );
    }
}
