//! Everything the Claude Code CLI can write on stdout, decoded and mapped as the session does: each
//! line is read into raw text and classified as the reader does, then decoded from that text into a
//! `CliMessage` (never failing) as the session does (and the decode's strict one pass is held
//! against its tolerant decode), and fed in order to one turn's `TurnMapper`, whose
//! events also go through the transcript mirror. Nothing may panic.

#![no_main]

use clawbridge_adapters::claude::TurnMapper;
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::transcript::{ModelLabel, TranscriptMirror};
use clawbridge_protocol::claude::CliMessage;
use clawbridge_protocol::jsonrpc::{Incoming, Message, Notification, classify_control_line};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let mut mapper = TurnMapper::new("turn-1").with_host_mcp_server("openclaw");
    let mut mirror = TranscriptMirror::new("fuzz", "turn-1", ModelLabel::default());
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Ok(raw) = serde_json::from_slice::<Box<RawValue>>(line) else { continue };
        let text = match classify_control_line(raw.clone()) {
            Ok(Incoming::Message(Message::Notification(Notification { params: Some(params), .. }))) => params,
            // Control envelopes go to the handler, not the mapper; the mapper still must not panic.
            _ => raw,
        };
        let message = CliMessage::from_raw(&text);
        // The strict one pass, where it answers, must give what the tolerant decode gives.
        assert_eq!(message, CliMessage::from_raw_tolerant(&text), "{}", text.get());
        events.extend(mapper.on_message(&message));
    }
    if !mapper.is_complete() {
        mapper.note_interrupt_requested();
        events.extend(mapper.abandon(TerminalKind::Aborted, "the fuzz input ended".into()));
    }
    for event in &events {
        for message in mirror.on_event(event) {
            serde_json::to_string(&message).expect("a transcript message encodes");
        }
        serde_json::to_string(event).expect("an event encodes");
    }
});
