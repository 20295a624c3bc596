//! Backpressure from the host to the native agent (docs/peers/pipes.md#backpressure): a host that
//! stops reading while the fake agent streams 100 000 events holds the agent itself back — the
//! pipeline's queue stays under its byte cap and the agent's writes stall — and once the host
//! reads again every event arrives, in order.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clawbridge_bridge::attempt::hooks::NoObserver;
use clawbridge_bridge::attempt::{NativeTurn, Step, TurnActivity, TurnDriver, TurnLimits};
use clawbridge_bridge::events::{Event, TerminalKind, TurnTerminal};
use clawbridge_bridge::rpc::{PeerEvent, PeerEvents};
use clawbridge_bridge::sink::queue::event_bytes;
use clawbridge_bridge::sink::{EventStage, MAX_QUEUED_BYTES, Pipeline};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

mod common;
use common::*;

/// How many events the agent streams: far more than the cap, the peer's channel and a pipe hold.
const EVENTS: usize = 100_000;

/// Each event's text: 100 000 of them are ~30 MiB, several times the cap.
fn text() -> String {
    "x".repeat(200)
}

/// The agent's notifications as one final text each; the last one ends the turn.
struct Streamed {
    /// The peer's events.
    events: PeerEvents,
    /// Lines taken from the peer so far (what the agent got through).
    taken: Arc<AtomicUsize>,
    /// Set once the last line was read.
    complete: bool,
    /// Each line as a streamed delta of its own item (else as a final text).
    deltas: bool,
}

impl NativeTurn for Streamed {
    async fn next(&mut self) -> Step {
        loop {
            match self.events.recv().await {
                Some(PeerEvent::Notification(n)) => {
                    let seq = n.params_value().and_then(|p| p["seq"].as_u64()).unwrap_or(u64::MAX);
                    self.taken.fetch_add(1, Ordering::SeqCst);
                    let item_id = seq.to_string();
                    let mut events = vec![if self.deltas {
                        Event::AssistantDelta { item_id, delta: text() }
                    } else {
                        Event::AssistantFinal { item_id, text: text() }
                    }];
                    if seq + 1 == EVENTS as u64 {
                        self.complete = true;
                        events.push(Event::TurnTerminal(TurnTerminal::new(TerminalKind::Ok, None)));
                    }
                    return Step::Events(events);
                }
                Some(PeerEvent::Problem(_)) => {}
                _ => return Step::Ended(vec![Event::TurnTerminal(TurnTerminal::new(TerminalKind::Failed, None))]),
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.events.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        Ok(true)
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        vec![Event::TurnTerminal(TurnTerminal::new(kind, Some(message)))]
    }

    fn is_complete(&self) -> bool {
        self.complete
    }
}

/// The host: takes nothing while `reading` is false, then keeps what it is given.
struct Host {
    /// Whether the host reads; it stops before the first event until this turns true.
    reading: watch::Receiver<bool>,
    /// Every event the host was given, in order.
    seen: Arc<std::sync::Mutex<Vec<Event>>>,
}

impl EventStage for Host {
    fn on_event<'a>(&'a mut self, event: &'a Event) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.reading.wait_for(|reading| *reading).await;
            self.seen.lock().unwrap().push(event.clone());
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_stops_reading_holds_the_agent_back_under_the_cap_and_then_gets_every_event_in_order() {
    let (conn, events) = spawn(&[]);
    let (reading_tx, reading) = watch::channel(false);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let pipeline = Pipeline::start(vec![Box::new(Host { reading, seen: seen.clone() })], None);
    let queue = pipeline.sender();
    let taken = Arc::new(AtomicUsize::new(0));
    let mut turn = Streamed { events, taken: taken.clone(), complete: false, deltas: false };

    let peer = conn.peer().clone();
    let params = json!({"method": "item/done", "params": {}, "count": EVENTS});
    let streaming =
        tokio::spawn(
            async move { peer.request_with_timeout("fake/notify", Some(&params), Duration::from_secs(600)).await },
        );

    let limits =
        TurnLimits { idle: Duration::from_secs(600), interrupt_grace: Duration::from_secs(5), backend: "fake" };
    let cancel = CancellationToken::new();
    let mut sink = queue.clone();
    let driver = TurnDriver::new(Arc::new(NoObserver), Arc::new(TurnActivity::default()), &mut sink);
    let driven = driver.run(&mut turn, limits, &cancel);
    let host = async {
        // The queue fills to its cap while nobody reads…
        while queue.queued_bytes() < MAX_QUEUED_BYTES {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // …and then the agent stops getting through: what the bridge takes from it stays put.
        let mut last = taken.load(Ordering::SeqCst);
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let now = taken.load(Ordering::SeqCst);
            if now == last {
                break;
            }
            last = now;
        }
        assert!(last < EVENTS, "the agent is held back, not drained: {last} of {EVENTS} taken");
        assert!(!streaming.is_finished(), "the agent's writes stall: it has not finished sending");
        let one_line = event_bytes(&Event::AssistantFinal { item_id: EVENTS.to_string(), text: text() })
            + event_bytes(&Event::TurnTerminal(TurnTerminal::new(TerminalKind::Ok, None)));
        assert!(
            queue.high_water_bytes() < MAX_QUEUED_BYTES + one_line,
            "the queue stays under its cap (plus one native line): {} bytes",
            queue.high_water_bytes()
        );
        reading_tx.send(true).unwrap();
    };
    let (driven, ()) = within(futures::future::join(driven, host)).await;
    assert!(!driven.abandoned);
    let result = driven.finish(None);
    let _ = within(pipeline.finish(&result)).await;
    let answer: Value = within(streaming).await.unwrap().expect("the agent finished once the host read again");
    assert_eq!(answer["sent"], EVENTS);

    conn.shutdown(polite_stop()).await;
    let seen = seen.lock().unwrap();
    let finals: Vec<u64> = seen
        .iter()
        .filter_map(|event| match event {
            Event::AssistantFinal { item_id, .. } => item_id.parse().ok(),
            _ => None,
        })
        .collect();
    assert_eq!(finals.len(), EVENTS, "every event arrived");
    assert!(finals.iter().enumerate().all(|(i, seq)| *seq == i as u64), "in order");
    assert!(matches!(seen.last(), Some(Event::TurnTerminal(_))), "the terminal last");
}

/// A cancel while the host holds the turn back: the turn reads on (shedding the streamed deltas)
/// to the agent's own end instead of being abandoned after the grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_the_host_holds_the_turn_back_reads_on_to_the_agents_own_end() {
    let (conn, events) = spawn(&[]);
    let (reading_tx, reading) = watch::channel(false);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let pipeline = Pipeline::start(vec![Box::new(Host { reading, seen: seen.clone() })], None);
    let queue = pipeline.sender();
    let taken = Arc::new(AtomicUsize::new(0));
    let mut turn = Streamed { events, taken: taken.clone(), complete: false, deltas: true };

    let peer = conn.peer().clone();
    let params = json!({"method": "item/done", "params": {}, "count": EVENTS});
    let streaming =
        tokio::spawn(
            async move { peer.request_with_timeout("fake/notify", Some(&params), Duration::from_secs(600)).await },
        );
    // A grace far shorter than reading the rest takes while held back, far longer than reading it.
    let limits =
        TurnLimits { idle: Duration::from_secs(600), interrupt_grace: Duration::from_secs(60), backend: "fake" };
    let cancel = CancellationToken::new();
    let mut sink = queue.clone();
    let driver = TurnDriver::new(Arc::new(NoObserver), Arc::new(TurnActivity::default()), &mut sink);
    let driven = driver.run(&mut turn, limits, &cancel);
    let canceller = async {
        while queue.queued_bytes() < MAX_QUEUED_BYTES {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(taken.load(Ordering::SeqCst) < EVENTS, "the turn is held back");
        cancel.cancel();
    };
    let (driven, ()) = within(futures::future::join(driven, canceller)).await;
    assert!(!driven.abandoned, "the agent's own end was read");
    assert_eq!(taken.load(Ordering::SeqCst), EVENTS, "every line was read while the host still lagged");
    assert!(queue.high_water_bytes() < 2 * MAX_QUEUED_BYTES + 4096, "bounded: {}", queue.high_water_bytes());
    let answer: Value = within(streaming).await.unwrap().expect("the agent got everything out");
    assert_eq!(answer["sent"], EVENTS);
    reading_tx.send(true).unwrap();
    let result = driven.finish(None);
    let mirrored = within(pipeline.finish(&result)).await;
    assert!(mirrored.dropped_delta_bytes > 0, "streamed deltas were shed");
    conn.shutdown(polite_stop()).await;
    assert!(matches!(seen.lock().unwrap().last(), Some(Event::TurnTerminal(_))), "the terminal last");
}
