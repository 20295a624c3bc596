//! Everything the host (the OpenClaw plugin) can send `clawbridge serve`: its requests' params, by
//! method, and its answers to the bridge's own requests. Decoding never panics, and whatever
//! decodes re-encodes to JSON that decodes again (the bridge echoes and logs these values).

#![no_main]

use clawbridge_protocol::host::{
    self, ApprovalDecideResponse, AttemptCancelParams, AttemptRunParams, HarnessListParams, HostToolExecuteResponse,
    InitializeParams, SessionResetParams, ShutdownParams, SupportsParams, ToolTerminalObserveResponse,
    TranscriptAppendResponse, UserInputResponse,
};
use clawbridge_protocol::jsonrpc::Message;
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&b| b == b'\n') {
        let Ok(value) = serde_json::from_slice::<Value>(line) else { continue };
        match Message::from_value(value) {
            Ok(Message::Request(request)) => params(&request.method, request.params_value().unwrap_or(Value::Null)),
            Ok(Message::Notification(note)) => params(&note.method, note.params_value().unwrap_or(Value::Null)),
            Ok(Message::Response(response)) => {
                if let Ok(result) = response.outcome {
                    round_trip::<ApprovalDecideResponse>(&result);
                    round_trip::<HostToolExecuteResponse>(&result);
                    round_trip::<ToolTerminalObserveResponse>(&result);
                    round_trip::<TranscriptAppendResponse>(&result);
                    round_trip::<UserInputResponse>(&result);
                }
            }
            Err(_) => {}
        }
    }
});

fn params(method: &str, params: Value) {
    use host::methods;
    match method {
        methods::INITIALIZE => {
            if let Some(init) = round_trip::<InitializeParams>(&params) {
                let _ = host::negotiate(init.protocol_version, "0.1.0");
            }
        }
        methods::HARNESS_LIST => drop(round_trip::<HarnessListParams>(&params)),
        methods::HARNESS_SUPPORTS => drop(round_trip::<SupportsParams>(&params)),
        methods::ATTEMPT_RUN => drop(round_trip::<AttemptRunParams>(&params)),
        methods::ATTEMPT_CANCEL => drop(round_trip::<AttemptCancelParams>(&params)),
        methods::SESSION_RESET => drop(round_trip::<SessionResetParams>(&params)),
        methods::SHUTDOWN => drop(round_trip::<ShutdownParams>(&params)),
        _ => {}
    }
}

/// Decodes `value` as `T`; on success, its encoding must decode again.
fn round_trip<T: Serialize + DeserializeOwned>(value: &Value) -> Option<T> {
    let decoded = T::deserialize(value).ok()?;
    let encoded = serde_json::to_value(&decoded).expect("a decoded value encodes");
    if let Err(e) = T::deserialize(&encoded) {
        panic!("{} decoded from {value} but its encoding {encoded} does not decode: {e}", std::any::type_name::<T>());
    }
    Some(decoded)
}
