//! Everything a Codex app-server can send, decoded and mapped as the session does: each input line
//! is classified in one borrowed pass, as the reader does, notifications are decoded from their
//! params' text and fed in order to one turn's `TurnMapper` (whose
//! events also go through the transcript mirror), server requests are decoded and given their
//! fallback answer. Nothing may panic, and a decoded notification re-encodes to its method.

#![no_main]

use clawbridge_adapters::codex::TurnMapper;
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::transcript::{ModelLabel, TranscriptMirror};
use clawbridge_protocol::codex::notifications::ServerNotification;
use clawbridge_protocol::codex::server_requests::ServerRequest;
use clawbridge_protocol::jsonrpc::{Envelope, RawMessage};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut mapper = TurnMapper::new("<uuid-2>");
    let mut mirror = TranscriptMirror::new("fuzz", "turn", ModelLabel::default());
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Ok(line) = std::str::from_utf8(line) else { continue };
        let Ok(envelope) = Envelope::parse(line) else { continue };
        match envelope.classify(false) {
            Ok(RawMessage::Notification { method, params }) => {
                let decoded = ServerNotification::from_raw(&method, params);
                assert_eq!(decoded.method(), method);
                let _ = decoded.params();
                let _ = decoded.thread_id();
                events.extend(mapper.on_notification(&decoded));
            }
            Ok(RawMessage::Request { method, params, .. }) => {
                let params = params.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok());
                let decoded = ServerRequest::from_request(&method, params);
                assert_eq!(decoded.method(), method);
                let _ = decoded.fallback_reply();
                let _ = decoded.thread_id();
            }
            Ok(RawMessage::Response { .. }) | Err(_) => {}
        }
    }
    if !mapper.is_complete() {
        events.extend(mapper.abandon(TerminalKind::Failed, "the fuzz input ended".into()));
    }
    for event in &events {
        for message in mirror.on_event(event) {
            serde_json::to_string(&message).expect("a transcript message encodes");
        }
        serde_json::to_string(event).expect("an event encodes");
    }
});
