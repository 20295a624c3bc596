//! JSON-RPC classification of any line a peer sends: never a panic, and a classified message
//! survives a round trip through either JSON-RPC dialect unchanged (shape, id exactly as received,
//! payload). The same line read as Claude's control protocol never panics either, nor does its
//! one-pass envelope, whose request ids are echoed as the very bytes that were sent.

#![no_main]

use clawbridge_protocol::jsonrpc::{Dialect, Envelope, Incoming, Message, RawMessage, RequestId, outgoing};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    if let Ok(line) = std::str::from_utf8(data) {
        if let Ok(envelope) = Envelope::parse(line) {
            let raw_id = envelope.id.map(|id| id.get().to_owned());
            if let Ok(RawMessage::Request { id, .. }) = envelope.classify(true) {
                let outcome = Ok(Value::Null);
                let reply = serde_json::to_string(&outgoing::Reply::new(Dialect::JsonRpc2, &id, &outcome))
                    .expect("a reply encodes");
                let sent = raw_id.expect("a request has an id");
                if !matches!(id, RequestId::String(_)) {
                    assert!(reply.contains(&format!("\"id\":{sent},")), "{sent} → {reply}");
                }
            }
        }
    }
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    if let Ok(Incoming::Message(message)) = Dialect::ClaudeControl.classify(value.clone()) {
        let _ = message.to_value(Dialect::ClaudeControl);
    }
    let Ok(message) = Message::from_value(value) else { return };
    for dialect in [Dialect::JsonRpc2, Dialect::Codex] {
        let encoded = message.to_value(dialect);
        let line = serde_json::to_string(&encoded).expect("a message encodes");
        let again = Message::from_value(serde_json::from_str(&line).expect("our own line is JSON"))
            .unwrap_or_else(|e| panic!("our own {dialect:?} line does not classify ({e}): {line}"));
        assert_eq!(message, again, "{line}");
    }
});
