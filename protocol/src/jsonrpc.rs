//! JSON-RPC envelopes for the two dialects clawbridge speaks: strict JSON-RPC 2.0 (`"jsonrpc":"2.0"`
//! on every message) and the Codex app-server dialect (the field omitted).
//!
//! Messages are classified by shape, not by the `jsonrpc` field, so one decoder serves both dialects:
//! `method` + `id` is a request, `method` alone a notification, `id` + `result`/`error` a response.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// Standard JSON-RPC error codes (plus the Codex overload code).
pub mod codes {
    /// The line was not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC message.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The params did not fit the method.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The receiver failed while handling the request.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Codex app-server: a bounded queue is full; retry with backoff.
    pub const SERVER_OVERLOADED: i64 = -32001;
}

/// Which envelope flavour a connection writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// Strict JSON-RPC 2.0: every outgoing message carries `"jsonrpc":"2.0"`.
    #[default]
    JsonRpc2,
    /// Codex app-server: the `jsonrpc` field is omitted.
    Codex,
}

/// A request id. Numbers and strings are both legal and are echoed back exactly as received, so the
/// number keeps its original representation (`7` stays `7`, never `7.0`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(Number),
    /// A string id.
    String(String),
}

impl RequestId {
    /// The id as an integer, when it is one (our own ids always are).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            RequestId::Number(n) => n.as_i64(),
            RequestId::String(_) => None,
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Number(value.into())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The `error` member of a failed response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`codes`] or an application code.
    pub code: i64,
    /// A short human-readable description.
    pub message: String,
    /// Extra structured detail, when the sender gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: the sender expects exactly one response with the same id.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Echoed in the response.
    pub id: RequestId,
    /// What is asked.
    pub method: String,
    /// The method's arguments, if any were sent.
    pub params: Option<Value>,
}

/// A notification: no response is expected.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// What happened.
    pub method: String,
    /// The details, if any were sent.
    pub params: Option<Value>,
}

/// A response to an earlier request.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// `Ok(result)` (which may be `null`) or the error object.
    pub outcome: Result<Value, ErrorObject>,
}

/// Any JSON-RPC message.
#[derive(Clone, Debug, PartialEq)]
pub enum Message {
    /// See [`Request`].
    Request(Request),
    /// See [`Notification`].
    Notification(Notification),
    /// See [`Response`].
    Response(Response),
}

/// Why a JSON value is not a JSON-RPC message.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeError {
    /// The value is not a JSON object.
    NotAnObject,
    /// `method` is present but not a string.
    MethodNotString,
    /// `id` is present but neither a number nor a string.
    BadId,
    /// An object with neither `method` nor an `id` + `result`/`error` pair.
    Unclassifiable,
    /// `error` is present but not an error object.
    BadErrorObject,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShapeError::NotAnObject => "not a JSON object",
            ShapeError::MethodNotString => "`method` is not a string",
            ShapeError::BadId => "`id` is neither a number nor a string",
            ShapeError::Unclassifiable => "neither a request, a notification nor a response",
            ShapeError::BadErrorObject => "`error` is not a JSON-RPC error object",
        })
    }
}

impl std::error::Error for ShapeError {}

impl Message {
    /// Classifies a decoded JSON value by its shape. Unknown extra members are ignored.
    pub fn from_value(value: Value) -> Result<Message, ShapeError> {
        let Value::Object(mut map) = value else {
            return Err(ShapeError::NotAnObject);
        };
        let id = match map.remove("id") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => Some(RequestId::Number(n)),
            Some(Value::String(s)) => Some(RequestId::String(s)),
            Some(_) => return Err(ShapeError::BadId),
        };
        match map.remove("method") {
            Some(Value::String(method)) => {
                let params = map.remove("params");
                return Ok(match id {
                    Some(id) => Message::Request(Request { id, method, params }),
                    None => Message::Notification(Notification { method, params }),
                });
            }
            Some(_) => return Err(ShapeError::MethodNotString),
            None => {}
        }
        let Some(id) = id else {
            return Err(ShapeError::Unclassifiable);
        };
        if let Some(error) = map.remove("error") {
            let error: ErrorObject = serde_json::from_value(error).map_err(|_| ShapeError::BadErrorObject)?;
            return Ok(Message::Response(Response { id, outcome: Err(error) }));
        }
        match map.remove("result") {
            Some(result) => Ok(Message::Response(Response { id, outcome: Ok(result) })),
            None => Err(ShapeError::Unclassifiable),
        }
    }

    /// The message as a JSON object in the given dialect.
    pub fn to_value(&self, dialect: Dialect) -> Value {
        let mut map = Map::new();
        if dialect == Dialect::JsonRpc2 {
            map.insert("jsonrpc".into(), Value::String("2.0".into()));
        }
        let id_value = |id: &RequestId| match id {
            RequestId::Number(n) => Value::Number(n.clone()),
            RequestId::String(s) => Value::String(s.clone()),
        };
        match self {
            Message::Request(r) => {
                map.insert("id".into(), id_value(&r.id));
                map.insert("method".into(), Value::String(r.method.clone()));
                if let Some(p) = &r.params {
                    map.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                map.insert("method".into(), Value::String(n.method.clone()));
                if let Some(p) = &n.params {
                    map.insert("params".into(), p.clone());
                }
            }
            Message::Response(r) => {
                map.insert("id".into(), id_value(&r.id));
                match &r.outcome {
                    Ok(result) => map.insert("result".into(), result.clone()),
                    Err(e) => map.insert("error".into(), serde_json::to_value(e).unwrap_or(Value::Null)),
                };
            }
        }
        Value::Object(map)
    }
}

/// Borrowing serialisers for outgoing messages, so the hot path never clones params into a `Value`.
pub mod outgoing {
    use super::{Dialect, ErrorObject, RequestId};
    use serde::Serialize;
    use serde_json::Value;

    fn version(dialect: Dialect) -> Option<&'static str> {
        (dialect == Dialect::JsonRpc2).then_some("2.0")
    }

    /// An outgoing request or notification (`id: None`).
    #[derive(Serialize)]
    pub struct Call<'a, P: Serialize> {
        #[serde(skip_serializing_if = "Option::is_none")]
        jsonrpc: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a RequestId>,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }

    impl<'a, P: Serialize> Call<'a, P> {
        /// A request (with `id`) or a notification (without).
        pub fn new(dialect: Dialect, id: Option<&'a RequestId>, method: &'a str, params: Option<&'a P>) -> Self {
            Self { jsonrpc: version(dialect), id, method, params }
        }
    }

    /// An outgoing response.
    #[derive(Serialize)]
    pub struct Reply<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        jsonrpc: Option<&'static str>,
        id: &'a RequestId,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a ErrorObject>,
    }

    impl<'a> Reply<'a> {
        /// A response carrying `outcome` for request `id`.
        pub fn new(dialect: Dialect, id: &'a RequestId, outcome: &'a Result<Value, ErrorObject>) -> Self {
            let (result, error) = match outcome {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(e)),
            };
            Self { jsonrpc: version(dialect), id, result, error }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn classify(v: Value) -> Result<Message, ShapeError> {
        Message::from_value(v)
    }

    #[test]
    fn classifies_by_shape_in_both_dialects() {
        for version in [Some("2.0"), None] {
            let mut req = json!({"id": 1, "method": "m", "params": {"a": 1}});
            let mut note = json!({"method": "n"});
            let mut resp = json!({"id": "x", "result": null});
            if let Some(v) = version {
                for m in [&mut req, &mut note, &mut resp] {
                    m["jsonrpc"] = json!(v);
                }
            }
            assert!(matches!(classify(req).unwrap(), Message::Request(r) if r.id == RequestId::from(1)));
            assert!(matches!(classify(note).unwrap(), Message::Notification(n) if n.method == "n"));
            match classify(resp).unwrap() {
                Message::Response(r) => {
                    assert_eq!(r.id, RequestId::String("x".into()));
                    assert_eq!(r.outcome, Ok(Value::Null), "a null result is still a result");
                }
                other => panic!("expected a response, got {other:?}"),
            }
        }
    }

    #[test]
    fn error_responses_and_bad_shapes() {
        let m = classify(json!({"id": 2, "error": {"code": -32601, "message": "nope", "extra": 1}})).unwrap();
        assert!(matches!(m, Message::Response(Response { outcome: Err(e), .. }) if e.code == -32601));
        assert_eq!(classify(json!([1])), Err(ShapeError::NotAnObject));
        assert_eq!(classify(json!({"id": 1})), Err(ShapeError::Unclassifiable));
        assert_eq!(classify(json!({"result": 1})), Err(ShapeError::Unclassifiable));
        assert_eq!(classify(json!({"id": [1], "method": "m"})), Err(ShapeError::BadId));
        assert_eq!(classify(json!({"method": 5})), Err(ShapeError::MethodNotString));
        assert_eq!(classify(json!({"id": 1, "error": "boom"})), Err(ShapeError::BadErrorObject));
    }

    #[test]
    fn ids_echo_exactly_as_received() {
        for raw in
            [r#"{"id":18446744073709551615,"method":"m"}"#, r#"{"id":-3,"method":"m"}"#, r#"{"id":"abc","method":"m"}"#]
        {
            let Message::Request(req) = classify(serde_json::from_str(raw).unwrap()).unwrap() else {
                panic!("not a request")
            };
            let outcome = Ok(json!(true));
            let reply = serde_json::to_string(&outgoing::Reply::new(Dialect::Codex, &req.id, &outcome)).unwrap();
            let echoed: Value = serde_json::from_str(&reply).unwrap();
            let sent: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(echoed["id"], sent["id"]);
        }
    }

    #[test]
    fn dialects_differ_only_in_the_version_field() {
        let id = RequestId::from(5);
        let strict =
            serde_json::to_string(&outgoing::Call::new(Dialect::JsonRpc2, Some(&id), "m", Some(&json!({})))).unwrap();
        let codex =
            serde_json::to_string(&outgoing::Call::new(Dialect::Codex, Some(&id), "m", Some(&json!({})))).unwrap();
        assert_eq!(strict, r#"{"jsonrpc":"2.0","id":5,"method":"m","params":{}}"#);
        assert_eq!(codex, r#"{"id":5,"method":"m","params":{}}"#);
        let note =
            serde_json::to_string(&outgoing::Call::<Value>::new(Dialect::Codex, None, "initialized", None)).unwrap();
        assert_eq!(note, r#"{"method":"initialized"}"#);
        let msg = Message::Notification(Notification { method: "n".into(), params: None });
        assert_eq!(msg.to_value(Dialect::JsonRpc2), json!({"jsonrpc": "2.0", "method": "n"}));
    }
}
