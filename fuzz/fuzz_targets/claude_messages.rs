//! Everything the Claude Code CLI can write on stdout, decoded and mapped as the session does: each
//! line becomes a `CliMessage` (never failing) and is fed in order to one turn's `TurnMapper`, whose
//! events also go through the transcript mirror. Nothing may panic.

#![no_main]

use clawbridge_adapters::claude::TurnMapper;
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::transcript::{ModelLabel, TranscriptMirror};
use clawbridge_protocol::claude::CliMessage;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut mapper = TurnMapper::new("turn-1").with_host_mcp_server("openclaw");
    let mut mirror = TranscriptMirror::new("fuzz", "turn-1", ModelLabel::default());
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        let message = CliMessage::from_value(value);
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
