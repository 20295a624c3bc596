//! Checks on normalized event streams shared by every adapter's mapping tests (test builds only).

use std::collections::HashSet;

use clawbridge_bridge::events::{Event, ToolCall, ToolFinish, TurnTerminal};

pub fn finishes(events: &[Event]) -> Vec<&ToolFinish> {
    events.iter().filter_map(|e| if let Event::ToolFinished(f) = e { Some(f) } else { None }).collect()
}

pub fn starts(events: &[Event]) -> Vec<&ToolCall> {
    events.iter().filter_map(|e| if let Event::ToolStarted(c) = e { Some(c) } else { None }).collect()
}

pub fn terminal(events: &[Event]) -> &TurnTerminal {
    match events.last() {
        Some(Event::TurnTerminal(t)) => t,
        other => panic!("last event is not a terminal: {other:?}"),
    }
}

/// The stream invariants every run must keep: `TurnStarted` first, one `TurnTerminal` last, each
/// `ToolFinished` after its `ToolStarted` and at most once, every started tool finished.
pub fn assert_well_formed(events: &[Event]) {
    assert!(matches!(events.first(), Some(Event::TurnStarted { .. })), "not started first: {events:#?}");
    let terminals = events.iter().filter(|e| matches!(e, Event::TurnTerminal(_))).count();
    assert_eq!(terminals, 1, "{events:#?}");
    assert!(matches!(events.last(), Some(Event::TurnTerminal(_))), "{events:#?}");
    let mut started = HashSet::new();
    let mut finished = HashSet::new();
    for event in events {
        match event {
            Event::ToolStarted(c) => assert!(started.insert(c.call_id.clone()), "started twice: {}", c.call_id),
            Event::ToolFinished(f) => {
                assert!(started.contains(&f.call.call_id), "finished before started: {}", f.call.call_id);
                assert!(finished.insert(f.call.call_id.clone()), "finished twice: {}", f.call.call_id);
            }
            _ => {}
        }
    }
    assert_eq!(started, finished, "every started tool must finish");
}
