//! Everything an ACP agent can write as `session/update` params or a `session/prompt` answer,
//! decoded and mapped as the session does: each line is a `session/update`'s params (decoded from
//! their text by `SessionNotification::decode_raw`, as the session does, never failing) fed in order to one turn's `TurnMapper`, or, when
//! it holds a `stopReason`, the turn's answer; the events also go through the transcript mirror.
//! Nothing may panic, and the turn ends exactly once.

#![no_main]

use clawbridge_adapters::acp::TurnMapper;
use clawbridge_adapters::acp::mapping::Declined;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::transcript::{ModelLabel, TranscriptMirror};
use clawbridge_protocol::acp::{PromptResponse, SessionNotification};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let declined = Declined::default();
    let mut mapper = TurnMapper::new("turn-1", declined.clone());
    let mut mirror = TranscriptMirror::new("fuzz", "turn-1", ModelLabel::default());
    let mut events = mapper.start();
    for line in data.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        if let Ok(answer) = serde_json::from_value::<PromptResponse>(value.clone()) {
            events.extend(mapper.finish(&answer));
            continue;
        }
        // A permission the host refused, named by the line (so declined calls are exercised too).
        if let Some(id) = value.get("declined").and_then(Value::as_str) {
            declined.lock().unwrap().insert(id.to_owned(), "the fuzz input declined it".to_owned());
        }
        let Ok(raw) = serde_json::from_slice::<Box<RawValue>>(line) else { continue };
        events.extend(mapper.on_update(SessionNotification::decode_raw(Some(&raw)).update));
    }
    if !mapper.is_complete() {
        events.extend(mapper.abandon(TerminalKind::Aborted, "the fuzz input ended".into()));
    }
    let terminals = events.iter().filter(|e| matches!(e, Event::TurnTerminal(_))).count();
    assert_eq!(terminals, 1, "one terminal per turn");
    let mut started = std::collections::HashSet::new();
    let mut finished = std::collections::HashSet::new();
    for event in &events {
        match event {
            Event::ToolStarted(call) => assert!(started.insert(call.call_id.clone()), "a call started twice"),
            Event::ToolFinished(finish) => {
                assert!(started.contains(&finish.call.call_id), "a call finished before it started");
                assert!(finished.insert(finish.call.call_id.clone()), "a call finished twice");
            }
            _ => {}
        }
        for message in mirror.on_event(event) {
            serde_json::to_string(&message).expect("a transcript message encodes");
        }
        serde_json::to_string(event).expect("an event encodes");
    }
    assert_eq!(started, finished, "every call that started got its terminal");
});
