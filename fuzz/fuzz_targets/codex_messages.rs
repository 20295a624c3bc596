//! Everything a Codex app-server can send, decoded and mapped as the session does: each input line
//! is classified, notifications are decoded and fed in order to one turn's `TurnMapper` (whose
//! events also go through the transcript mirror), server requests are decoded and given their
//! fallback answer. Nothing may panic, and a decoded notification re-encodes to its method.

#![no_main]

use clawbridge_adapters::codex::TurnMapper;
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::transcript::{ModelLabel, TranscriptMirror};
use clawbridge_protocol::codex::notifications::ServerNotification;
use clawbridge_protocol::codex::server_requests::ServerRequest;
use clawbridge_protocol::jsonrpc::Message;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let mut mapper = TurnMapper::new("<uuid-2>");
    let mut mirror = TranscriptMirror::new("fuzz", "turn", ModelLabel::default());
    let mut events = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        match Message::from_value(value) {
            Ok(Message::Notification(note)) => {
                let decoded = ServerNotification::from_notification(&note.method, note.params);
                assert_eq!(decoded.method(), note.method);
                let _ = decoded.params();
                let _ = decoded.thread_id();
                events.extend(mapper.on_notification(&decoded));
            }
            Ok(Message::Request(request)) => {
                let decoded = ServerRequest::from_request(&request.method, request.params_value());
                assert_eq!(decoded.method(), request.method);
                let _ = decoded.fallback_reply();
                let _ = decoded.thread_id();
            }
            Ok(Message::Response(_)) | Err(_) => {}
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
