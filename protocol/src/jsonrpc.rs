//! Request/response envelopes for the three dialects clawbridge speaks: strict JSON-RPC 2.0
//! (`"jsonrpc":"2.0"` on every message), the Codex app-server dialect (the field omitted), and Claude
//! Code's stdio control protocol, which carries the same three kinds of message in other envelopes.
//!
//! JSON-RPC messages are classified by shape: `method` + `id` is a request, `method` alone a
//! notification, `id` + `result`/`error` a response. A JSON-RPC line is read in one pass into an
//! [`Envelope`] of borrowed raw members ([`Envelope::parse`]), never into a `Value` tree of the whole
//! line, so a huge line of tiny values costs no more memory than its own bytes; members nobody reads
//! are skipped. [`Envelope::classify`] then sorts it: strictly (the host connection, JSON-RPC 2.0)
//! a line whose `jsonrpc` is not `"2.0"` is refused; leniently (Codex, which omits the field) the
//! field is ignored.
//! Claude's control protocol is read from a decoded `Value` by [`Dialect::classify`].

use std::fmt;

use serde::de::{self, IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

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

/// Which envelope flavour a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dialect {
    /// Strict JSON-RPC 2.0: every outgoing message carries `"jsonrpc":"2.0"`.
    #[default]
    JsonRpc2,
    /// Codex app-server: the `jsonrpc` field is omitted.
    Codex,
    /// Claude Code's control protocol (docs/peers/claude.md#control-protocol): a request is a
    /// `control_request` whose `request.subtype` is the method and whose string `request_id` is the
    /// id, its answer a `control_response` (`success` or `error`), a `control_cancel_request`
    /// withdraws a request, and every other line is conversation, read as a notification named by
    /// its `type`.
    ClaudeControl,
}

impl Dialect {
    /// Classifies one decoded line as this dialect reads it. The JSON-RPC dialects classify by shape
    /// ([`Message::from_value`]) and never yield [`Incoming::Cancel`] or [`Incoming::Malformed`].
    pub fn classify(self, value: Value) -> Result<Incoming, ShapeError> {
        match self {
            Dialect::JsonRpc2 | Dialect::Codex => Message::from_value(value).map(Incoming::Message),
            Dialect::ClaudeControl => control::classify(value),
        }
    }
}

/// Classifies one line of Claude's control protocol from its text, checked as JSON by the reader
/// (which reads it into `raw` in one pass). A conversation line — nearly every line — is sorted by
/// a peek at its `type` alone and handed on as it is, the whole line as the notification's params,
/// for the consumer's one typed decode; only the control envelopes (one per request or answer) are
/// read as a `Value`, by [`Dialect::classify`], whose result this always equals.
pub fn classify_control_line(raw: Box<RawValue>) -> Result<Incoming, ShapeError> {
    control::classify_raw(raw)
}

/// One incoming line, classified by [`Dialect::classify`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Incoming {
    /// A request, a notification or a response.
    Message(Message),
    /// The sender withdrew its request with this id (Claude's `control_cancel_request`): its handler
    /// stops and no answer is sent.
    Cancel(RequestId),
    /// A request whose id could be read but whose body could not. The sender still waits for an
    /// answer (the Claude CLI blocks until it gets one), so it must be answered with an error.
    Malformed {
        /// The request's id, for the answer.
        id: RequestId,
        /// What is wrong with the body.
        error: ShapeError,
    },
}

/// A request id, kept as the sender wrote it so the answer echoes it byte for byte: a number keeps
/// its exact JSON text (`18446744073709551616`, `1e2` and `-0` stay as sent, never `1.8e19` or
/// `100.0`), a string its value (or, when it was written with escapes, its text), and `null`
/// (which JSON-RPC 2.0 allows, and answers with `null`) is its own variant. Our own ids are always
/// integers ([`RequestId::from`]) or, for Claude, plain strings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id: its JSON text exactly as received (a valid JSON number).
    Number(String),
    /// A string id.
    String(String),
    /// A string id written with escapes (`"\u00e9"`): its JSON text, quotes included, so the answer
    /// carries the very same bytes.
    EscapedString(String),
    /// `"id": null`.
    Null,
}

impl RequestId {
    /// The id as an integer, when it is one (our own ids always are).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            RequestId::Number(text) => text.parse().ok(),
            RequestId::String(_) | RequestId::EscapedString(_) | RequestId::Null => None,
        }
    }

    /// Reads an id from its raw JSON text: a number (kept as written), a string or `null`; anything
    /// else (an object, an array, a boolean) is [`ShapeError::BadId`].
    pub fn from_raw(raw: &RawValue) -> Result<RequestId, ShapeError> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'"') if text.contains('\\') => Ok(RequestId::EscapedString(text.to_owned())),
            // Without escapes, writing the value back gives the same bytes.
            Some(b'"') => serde_json::from_str(text).map(RequestId::String).map_err(|_| ShapeError::BadId),
            Some(b'n') => Ok(RequestId::Null),
            // The parser that produced `raw` already checked that it is a valid JSON number.
            Some(b'-' | b'0'..=b'9') => Ok(RequestId::Number(text.to_owned())),
            _ => Err(ShapeError::BadId),
        }
    }
}

impl From<i64> for RequestId {
    fn from(value: i64) -> Self {
        RequestId::Number(value.to_string())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(text) | RequestId::EscapedString(text) => f.write_str(text),
            RequestId::String(s) => write!(f, "{s:?}"),
            RequestId::Null => f.write_str("null"),
        }
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // As raw JSON, so serde_json writes the number's text unchanged.
            RequestId::Number(text) | RequestId::EscapedString(text) => match serde_json::from_str::<&RawValue>(text) {
                Ok(raw) => raw.serialize(serializer),
                Err(_) => serializer.serialize_unit(),
            },
            RequestId::String(s) => serializer.serialize_str(s),
            RequestId::Null => serializer.serialize_unit(),
        }
    }
}

/// Reads an id inside a typed message (Codex's `serverRequest/resolved`). The exact text of a
/// number is only known on the envelope path ([`RequestId::from_raw`]); here integers keep theirs.
impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number, a string or null")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RequestId, E> {
                match serde_json::Number::from_f64(v) {
                    Some(n) => Ok(RequestId::Number(n.to_string())),
                    None => Err(E::custom("a non-finite number is no id")),
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
                Ok(RequestId::String(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RequestId, E> {
                Ok(RequestId::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<RequestId, E> {
                Ok(RequestId::Null)
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// The `error` member of a failed response.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`codes`] or an application code.
    pub code: i64,
    /// A short human-readable description.
    pub message: String,
    /// Extra structured detail, when the sender gave any: kept as the sender wrote it, since a
    /// peer's error answer may be as large as a result (a `host/tool/execute` failure) and a `Value`
    /// tree of it would cost many times its text; whoever reads it decodes what it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// An error with no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    /// An error whose `data` is `data` serialised (left out if it cannot be: a map with non-string
    /// keys, which none of the bridge's own data types are). It goes through a `Value` so its
    /// members are written in one stable (sorted) order, whatever the type's field order.
    pub fn with_data<T: Serialize + ?Sized>(code: i64, message: impl Into<String>, data: &T) -> Self {
        let data = serde_json::to_value(data).ok().as_ref().and_then(raw_of);
        Self { code, message: message.into(), data }
    }

    /// The `data` decoded as a `Value` tree (`None` without data, or if it is not JSON, which a
    /// decoded error's never is).
    pub fn data_value(&self) -> Option<Value> {
        self.data.as_deref().and_then(|raw| serde_json::from_str(raw.get()).ok())
    }

    /// An error object from a decoded `Value` (the Claude control dialect reads its lines as
    /// values): its `data` is turned back into raw JSON text.
    fn from_value(mut value: Value) -> Result<Self, ShapeError> {
        let data = value.as_object_mut().and_then(|members| members.remove("data"));
        let mut error: ErrorObject = serde_json::from_value(value).map_err(|_| ShapeError::BadErrorObject)?;
        error.data = data.filter(|data| !data.is_null()).as_ref().and_then(raw_of);
        Ok(error)
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_deref().map(RawValue::get) == other.data.as_deref().map(RawValue::get)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

/// A request: the sender expects exactly one response with the same id.
#[derive(Clone, Debug)]
pub struct Request {
    /// Echoed in the response.
    pub id: RequestId,
    /// What is asked.
    pub method: String,
    /// The method's arguments as the sender wrote them, if any were sent: raw JSON, so a handler
    /// decodes them straight into its typed params (skipping what it does not know) and nothing
    /// builds a `Value` tree of a big request.
    pub params: Option<Box<RawValue>>,
}

impl Request {
    /// A request whose params are given as a `Value` (tests, and the Claude control dialect, which
    /// reads its lines as `Value`s).
    pub fn with_value(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        Self { id, method: method.into(), params: params.as_ref().and_then(raw_of) }
    }

    /// The params as a `Value` tree, for handlers whose decoders take one (the peers' own small
    /// requests); `None` when none were sent.
    pub fn params_value(&self) -> Option<Value> {
        self.params.as_deref().and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.method == other.method
            && self.params.as_deref().map(RawValue::get) == other.params.as_deref().map(RawValue::get)
    }
}

/// A `Value` as raw JSON text. Serialising a `Value` cannot fail (its keys are strings).
fn raw_of(value: &Value) -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(value).ok()
}

/// A notification: no response is expected.
#[derive(Clone, Debug)]
pub struct Notification {
    /// What happened.
    pub method: String,
    /// The details as the sender wrote them, if any were sent: raw JSON, so the consumer decodes
    /// them once, straight into its typed notification, and nothing builds a `Value` tree of them
    /// on the way. (Claude's control dialect puts the whole conversation line here.)
    pub params: Option<Box<RawValue>>,
}

impl Notification {
    /// A notification whose params are given as a `Value` (tests, and peers that play the server).
    pub fn with_value(method: impl Into<String>, params: Option<Value>) -> Self {
        Self { method: method.into(), params: params.as_ref().and_then(raw_of) }
    }

    /// The params as a `Value` tree, for a consumer that reads them loosely (`None` when none were
    /// sent).
    pub fn params_value(&self) -> Option<Value> {
        self.params.as_deref().and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method
            && self.params.as_deref().map(RawValue::get) == other.params.as_deref().map(RawValue::get)
    }
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
    /// A control envelope's `request_id` is missing or neither a string nor a number.
    BadRequestId,
    /// A control envelope's `request` or `response` is not an object with a string `subtype`.
    BadControlBody,
    /// Strict JSON-RPC 2.0: `jsonrpc` is missing or is not the string `"2.0"`.
    BadVersion,
    /// A member appears twice in the object, so which one counts would be a guess.
    DuplicateMember,
    /// A member's name is not valid Unicode (a lone surrogate escape such as `"\ud800"`).
    BadMemberName,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShapeError::NotAnObject => "not a JSON object",
            ShapeError::MethodNotString => "`method` is not a string",
            ShapeError::BadId => "`id` is neither a number nor a string",
            ShapeError::Unclassifiable => "neither a request, a notification nor a response",
            ShapeError::BadErrorObject => "`error` is not a JSON-RPC error object",
            ShapeError::BadRequestId => "`request_id` is missing or neither a string nor a number",
            ShapeError::BadControlBody => "the control envelope's body is not an object with a string `subtype`",
            ShapeError::BadVersion => "`jsonrpc` is not \"2.0\"",
            ShapeError::DuplicateMember => "a member appears twice",
            ShapeError::BadMemberName => "a member's name is not valid Unicode",
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
            Some(Value::Number(n)) => Some(RequestId::Number(n.to_string())),
            Some(Value::String(s)) => Some(RequestId::String(s)),
            Some(_) => return Err(ShapeError::BadId),
        };
        match map.remove("method") {
            Some(Value::String(method)) => {
                let params = map.remove("params");
                return Ok(match id {
                    Some(id) => Message::Request(Request::with_value(id, method, params)),
                    None => Message::Notification(Notification::with_value(method, params)),
                });
            }
            Some(_) => return Err(ShapeError::MethodNotString),
            None => {}
        }
        let Some(id) = id else {
            return Err(ShapeError::Unclassifiable);
        };
        if let Some(error) = map.remove("error") {
            let error = ErrorObject::from_value(error)?;
            return Ok(Message::Response(Response { id, outcome: Err(error) }));
        }
        match map.remove("result") {
            Some(result) => Ok(Message::Response(Response { id, outcome: Ok(result) })),
            None => Err(ShapeError::Unclassifiable),
        }
    }

    /// The message as a JSON object in the given dialect. [`Dialect::ClaudeControl`] has no place
    /// for params that are not objects (they are merged into the envelope): those are left out.
    pub fn to_value(&self, dialect: Dialect) -> Value {
        if dialect == Dialect::ClaudeControl {
            return control::to_value(self);
        }
        let mut map = Map::new();
        if dialect == Dialect::JsonRpc2 {
            map.insert("jsonrpc".into(), Value::String("2.0".into()));
        }
        let id_value = |id: &RequestId| serde_json::to_value(id).unwrap_or(Value::Null);
        match self {
            Message::Request(r) => {
                map.insert("id".into(), id_value(&r.id));
                map.insert("method".into(), Value::String(r.method.clone()));
                if let Some(p) = r.params_value() {
                    map.insert("params".into(), p);
                }
            }
            Message::Notification(n) => {
                map.insert("method".into(), Value::String(n.method.clone()));
                if let Some(p) = n.params_value() {
                    map.insert("params".into(), p);
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

/// One JSON-RPC line's members, decoded in one pass and borrowed from the line: each is the raw
/// JSON text the sender wrote (a present `null` is `Some("null")`, an absent member `None`), and
/// every other member is skipped without being kept. Nothing here allocates in proportion to the
/// line except what [`classify`](Self::classify) copies out (the method name, a string id).
#[derive(Debug, Default, Deserialize)]
pub struct Envelope<'a> {
    /// `jsonrpc`: strict JSON-RPC 2.0 requires `"2.0"`; the Codex dialect leaves it out.
    #[serde(default, borrow, deserialize_with = "present")]
    pub jsonrpc: Option<&'a RawValue>,
    /// `id`: what makes a request (with `method`) or a response (without).
    #[serde(default, borrow, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    /// `method`: a request's or notification's name (must be a string).
    #[serde(default, borrow, deserialize_with = "present")]
    pub method: Option<&'a RawValue>,
    /// `params`: the arguments, for the handler to decode into its own type.
    #[serde(default, borrow, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
    /// `result`: a successful response's value.
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    /// `error`: a failed response's error object.
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

/// What a second, lenient pass reads of an object line that is no [`Envelope`] (a member twice, a
/// member name that is not Unicode): the first `id` and whether there is a `method`, so an
/// answer-shaped line still fails the request of ours it names instead of leaving it to its
/// deadline. Member names are compared as written (an escaped `"\u0069d"` is not `id`).
#[derive(Debug, Default)]
pub struct LenientMembers<'a> {
    /// The first `id` member's raw JSON.
    pub id: Option<&'a RawValue>,
    /// Whether a `method` member is present (then the line is no answer).
    pub has_method: bool,
    /// Whether one of the envelope's members appears twice.
    duplicate: bool,
    /// Whether a member's name is not valid Unicode.
    bad_name: bool,
}

impl<'a> LenientMembers<'a> {
    /// Reads `line`'s top-level members, names and values as raw text; `None` when it is no JSON
    /// object.
    pub fn read(line: &'a str) -> Option<Self> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = LenientMembers<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                const KNOWN: [&str; 6] =
                    ["\"jsonrpc\"", "\"id\"", "\"method\"", "\"params\"", "\"result\"", "\"error\""];
                let mut out = LenientMembers::default();
                let mut seen = [false; KNOWN.len()];
                while let Some((name, value)) = map.next_entry::<&'de RawValue, &'de RawValue>()? {
                    let name = name.get();
                    if let Some(index) = KNOWN.iter().position(|known| *known == name) {
                        out.duplicate |= std::mem::replace(&mut seen[index], true);
                        match index {
                            1 if out.id.is_none() => out.id = Some(value),
                            2 => out.has_method = true,
                            _ => {}
                        }
                    } else if serde_json::from_str::<std::borrow::Cow<'_, str>>(name).is_err() {
                        out.bad_name = true;
                    }
                }
                Ok(out)
            }
        }
        let mut deserializer = serde_json::Deserializer::from_str(line);
        deserializer.deserialize_map(MembersVisitor).ok()
    }
}

/// A member that is there, even when it is `null` (serde would read a `null` `Option` as absent).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

/// Why a line is no JSON-RPC envelope.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// The line is not JSON (JSON-RPC's parse error, `-32700`).
    #[error("{0}")]
    NotJson(String),
    /// JSON, but not an object with at most one of each member (`-32600`).
    #[error("{0}")]
    Shape(ShapeError),
}

/// A line classified from its [`Envelope`]; the params, result and error stay raw JSON borrowed
/// from the line, so the receiver can check sizes before it decodes anything.
#[derive(Clone, Debug)]
pub enum RawMessage<'a> {
    /// A request: answer it, with its id.
    Request {
        /// Echoed in the answer, exactly.
        id: RequestId,
        /// What is asked.
        method: String,
        /// The raw arguments, if any.
        params: Option<&'a RawValue>,
    },
    /// A notification: nothing is answered.
    Notification {
        /// What happened.
        method: String,
        /// The raw details, if any.
        params: Option<&'a RawValue>,
    },
    /// An answer to one of our requests.
    Response {
        /// The id of the request it answers.
        id: RequestId,
        /// `Ok(raw result)` or `Err(raw error object)`, decoded by the receiver
        /// ([`decode_error_object`]) once it knows the answer's size is acceptable.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
}

/// A line that is JSON but no usable message, with the id when one could be read (strict JSON-RPC
/// answers it with that id; without one, with `id: null`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct Refusal {
    /// The line's id, when it was readable.
    pub id: Option<RequestId>,
    /// What is wrong.
    pub error: ShapeError,
}

impl<'a> Envelope<'a> {
    /// Reads a line's envelope in one pass. A line that is JSON but not an object, or an object
    /// with a member twice, is a [`LineError::Shape`]; anything else that fails is not JSON.
    pub fn parse(line: &'a str) -> Result<Envelope<'a>, LineError> {
        // serde reads a struct from an array too (by position): only an object is an envelope.
        let object = line.trim_start().starts_with('{');
        let parsed =
            if object { serde_json::from_str(line) } else { serde_json::from_str::<IgnoredAny>(line).map(|_| None) };
        match parsed {
            Ok(Some(envelope)) => Ok(envelope),
            Ok(None) => Err(LineError::Shape(ShapeError::NotAnObject)),
            Err(error) => {
                // Tell "not JSON" from "JSON of the wrong shape" without building a tree of it.
                if !object || serde_json::from_str::<IgnoredAny>(line).is_err() {
                    return Err(LineError::NotJson(error.to_string()));
                }
                let members = LenientMembers::read(line).unwrap_or_default();
                Err(LineError::Shape(if members.bad_name && !members.duplicate {
                    ShapeError::BadMemberName
                } else {
                    ShapeError::DuplicateMember
                }))
            }
        }
    }

    /// Sorts the envelope into a request, notification or response by its shape. With
    /// `require_version` (strict JSON-RPC 2.0, as the host connection speaks it) a line whose
    /// `jsonrpc` is not `"2.0"` is refused; without it (Codex's dialect, which omits the field) the
    /// field is ignored. (Claude's control dialect has its own envelopes: [`Dialect::classify`].)
    pub fn classify(self, require_version: bool) -> Result<RawMessage<'a>, Refusal> {
        let id = match self.id {
            None => None,
            Some(raw) => Some(RequestId::from_raw(raw).map_err(|error| Refusal { id: None, error })?),
        };
        let refuse = |error| Refusal { id: id.clone(), error };
        if require_version && !self.jsonrpc.is_some_and(is_version_2) {
            // Answering a response-shaped line with its id would read as our answer to a request
            // of the sender's: only a request is refused with its id.
            let id = if self.method.is_some() { id } else { None };
            return Err(Refusal { id, error: ShapeError::BadVersion });
        }
        if let Some(raw) = self.method {
            let method: String = match raw.get().as_bytes().first() {
                Some(b'"') => serde_json::from_str(raw.get()).map_err(|_| refuse(ShapeError::MethodNotString))?,
                _ => return Err(refuse(ShapeError::MethodNotString)),
            };
            return Ok(match id {
                Some(id) => RawMessage::Request { id, method, params: self.params },
                None => RawMessage::Notification { method, params: self.params },
            });
        }
        // An answer to a request nobody could read carries `id: null`: it answers nothing of ours.
        let id = match id {
            Some(id) if id != RequestId::Null => id,
            _ => return Err(Refusal { id: None, error: ShapeError::Unclassifiable }),
        };
        match (self.error, self.result) {
            (Some(error), _) => Ok(RawMessage::Response { id, outcome: Err(error) }),
            (None, Some(result)) => Ok(RawMessage::Response { id, outcome: Ok(result) }),
            (None, None) => Err(Refusal { id: Some(id), error: ShapeError::Unclassifiable }),
        }
    }
}

/// Whether a raw `jsonrpc` member is the string `"2.0"` (escaped or not; a long value is not).
fn is_version_2(raw: &RawValue) -> bool {
    raw.get().len() <= 32 && serde_json::from_str::<String>(raw.get()).is_ok_and(|version| version == "2.0")
}

/// Decodes a response's raw `error` member.
pub fn decode_error_object(raw: &RawValue) -> Result<ErrorObject, ShapeError> {
    serde_json::from_str(raw.get()).map_err(|_| ShapeError::BadErrorObject)
}

/// Borrowing serialisers for outgoing messages, so the hot path never clones params into a `Value`.
pub mod outgoing {
    use super::{Dialect, ErrorObject, RequestId, control};
    use serde::Serialize;
    use serde_json::Value;

    fn version(dialect: Dialect) -> Option<&'static str> {
        (dialect == Dialect::JsonRpc2).then_some("2.0")
    }

    /// An outgoing request or notification (`id: None`).
    #[derive(Serialize)]
    #[serde(transparent)]
    pub struct Call<'a, P: Serialize> {
        shape: CallShape<'a, P>,
    }

    impl<'a, P: Serialize> std::fmt::Debug for Call<'a, P> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Call").finish_non_exhaustive()
        }
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum CallShape<'a, P: Serialize> {
        JsonRpc {
            #[serde(skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<&'static str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a RequestId>,
            method: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a P>,
        },
        ControlRequest {
            r#type: &'static str,
            request_id: &'a RequestId,
            request: ControlBody<'a, P>,
        },
        /// A conversation line: `type` is the method, the params' members are the rest of the line.
        ConversationLine {
            r#type: &'a str,
            #[serde(flatten)]
            params: Option<&'a P>,
        },
    }

    #[derive(Serialize)]
    struct ControlBody<'a, P: Serialize> {
        subtype: &'a str,
        #[serde(flatten)]
        params: Option<&'a P>,
    }

    impl<'a, P: Serialize> Call<'a, P> {
        /// A request (with `id`) or a notification (without). In [`Dialect::ClaudeControl`] the params
        /// are merged into the envelope — a request's into its `request` beside `subtype: method`, a
        /// notification's into the line beside `type: method` — so they must serialise as an object
        /// (or be `None`) and must not carry that `subtype` / `type` themselves.
        pub fn new(dialect: Dialect, id: Option<&'a RequestId>, method: &'a str, params: Option<&'a P>) -> Self {
            let shape = match (dialect, id) {
                (Dialect::ClaudeControl, Some(request_id)) => CallShape::ControlRequest {
                    r#type: control::CONTROL_REQUEST,
                    request_id,
                    request: ControlBody { subtype: method, params },
                },
                (Dialect::ClaudeControl, None) => CallShape::ConversationLine { r#type: method, params },
                (_, id) => CallShape::JsonRpc { jsonrpc: version(dialect), id, method, params },
            };
            Self { shape }
        }
    }

    /// An outgoing response.
    #[derive(Serialize)]
    #[serde(transparent)]
    pub struct Reply<'a> {
        shape: ReplyShape<'a>,
    }

    impl<'a> std::fmt::Debug for Reply<'a> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Reply").finish_non_exhaustive()
        }
    }
    #[derive(Serialize)]
    #[serde(untagged)]
    enum ReplyShape<'a> {
        JsonRpc {
            #[serde(skip_serializing_if = "Option::is_none")]
            jsonrpc: Option<&'static str>,
            id: &'a RequestId,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a ErrorObject>,
        },
        ControlResponse {
            r#type: &'static str,
            response: ControlAnswer<'a>,
        },
    }

    #[derive(Serialize)]
    #[serde(tag = "subtype", rename_all = "lowercase")]
    enum ControlAnswer<'a> {
        Success {
            request_id: &'a RequestId,
            response: &'a Value,
        },
        /// The control protocol's errors are a message only; the code and data are not sent.
        Error {
            request_id: &'a RequestId,
            error: &'a str,
        },
    }

    impl<'a> Reply<'a> {
        /// A response carrying `outcome` for request `id`.
        pub fn new(dialect: Dialect, id: &'a RequestId, outcome: &'a Result<Value, ErrorObject>) -> Self {
            let shape = match (dialect, outcome) {
                (Dialect::ClaudeControl, Ok(response)) => ReplyShape::ControlResponse {
                    r#type: control::CONTROL_RESPONSE,
                    response: ControlAnswer::Success { request_id: id, response },
                },
                (Dialect::ClaudeControl, Err(error)) => ReplyShape::ControlResponse {
                    r#type: control::CONTROL_RESPONSE,
                    response: ControlAnswer::Error { request_id: id, error: &error.message },
                },
                (_, Ok(result)) => {
                    ReplyShape::JsonRpc { jsonrpc: version(dialect), id, result: Some(result), error: None }
                }
                (_, Err(error)) => {
                    ReplyShape::JsonRpc { jsonrpc: version(dialect), id, result: None, error: Some(error) }
                }
            };
            Self { shape }
        }
    }
}

/// The Claude control protocol's envelopes (docs/peers/claude.md#control-protocol), read and
/// written as the three message kinds.
mod control {
    use std::borrow::Cow;

    use serde_json::value::RawValue;
    use serde_json::{Map, Value};

    use crate::decode::{Peeked, peek_tag};

    use super::{ErrorObject, Incoming, Message, Notification, Request, RequestId, Response, ShapeError, codes};

    pub(super) const CONTROL_REQUEST: &str = "control_request";
    pub(super) const CONTROL_RESPONSE: &str = "control_response";
    const CONTROL_CANCEL_REQUEST: &str = "control_cancel_request";

    pub(super) fn classify_raw(raw: Box<RawValue>) -> Result<Incoming, ShapeError> {
        let kind = match peek_tag(raw.get(), "type") {
            Peeked::Tag(kind) => kind,
            Peeked::NoTag => Cow::Borrowed(""),
            Peeked::NotAnObject => return Err(ShapeError::NotAnObject),
        };
        match kind.as_ref() {
            CONTROL_REQUEST | CONTROL_RESPONSE | CONTROL_CANCEL_REQUEST => {
                // Valid JSON always reads as a `Value`, but for one nested deeper than serde_json's
                // recursion limit, which is then no usable envelope either.
                let value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                classify(value)
            }
            _ => {
                let method = kind.into_owned();
                Ok(Incoming::Message(Message::Notification(Notification { method, params: Some(raw) })))
            }
        }
    }

    pub(super) fn classify(value: Value) -> Result<Incoming, ShapeError> {
        let Value::Object(mut map) = value else {
            return Err(ShapeError::NotAnObject);
        };
        let kind = match map.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            _ => String::new(),
        };
        match kind.as_str() {
            CONTROL_REQUEST => request(map),
            CONTROL_RESPONSE => response(map),
            CONTROL_CANCEL_REQUEST => Ok(Incoming::Cancel(request_id(map.remove("request_id"))?)),
            // Conversation: the mapper reads the whole line; a line without a `type` is its call too.
            _ => Ok(Incoming::Message(Message::Notification(Notification::with_value(kind, Some(Value::Object(map)))))),
        }
    }

    fn request(mut map: Map<String, Value>) -> Result<Incoming, ShapeError> {
        let id = request_id(map.remove("request_id"))?;
        let method = match map.get("request").and_then(|body| body.get("subtype")) {
            Some(Value::String(subtype)) => subtype.clone(),
            _ => return Ok(Incoming::Malformed { id, error: ShapeError::BadControlBody }),
        };
        let params = map.remove("request");
        Ok(Incoming::Message(Message::Request(Request::with_value(id, method, params))))
    }

    fn response(mut map: Map<String, Value>) -> Result<Incoming, ShapeError> {
        let Some(Value::Object(mut body)) = map.remove("response") else {
            return Err(ShapeError::BadControlBody);
        };
        let id = request_id(body.remove("request_id"))?;
        let outcome = match body.get("subtype").and_then(Value::as_str) {
            Some("success") => Ok(body.remove("response").unwrap_or(Value::Null)),
            Some("error") => {
                let message = match body.remove("error") {
                    Some(Value::String(message)) => message,
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                Err(ErrorObject::new(codes::INTERNAL_ERROR, message))
            }
            // Still an answer to the request: failing it now beats letting it wait for its deadline.
            other => Err(ErrorObject::new(codes::INVALID_REQUEST, format!("an answer of unknown subtype {other:?}"))),
        };
        Ok(Incoming::Message(Message::Response(Response { id, outcome })))
    }

    fn request_id(value: Option<Value>) -> Result<RequestId, ShapeError> {
        match value {
            Some(Value::String(id)) => Ok(RequestId::String(id)),
            Some(Value::Number(id)) => Ok(RequestId::Number(id.to_string())),
            _ => Err(ShapeError::BadRequestId),
        }
    }

    pub(super) fn to_value(message: &Message) -> Value {
        use super::outgoing::{Call, Reply};
        let object = |params: &Option<Value>| params.as_ref().filter(|p| p.is_object()).cloned();
        // Serialising into a `Value` cannot fail here: every params left is an object.
        let encoded = match message {
            Message::Request(r) => serde_json::to_value(Call::new(
                super::Dialect::ClaudeControl,
                Some(&r.id),
                &r.method,
                object(&r.params_value()).as_ref(),
            )),
            Message::Notification(n) => serde_json::to_value(Call::new(
                super::Dialect::ClaudeControl,
                None,
                &n.method,
                object(&n.params_value()).as_ref(),
            )),
            Message::Response(r) => serde_json::to_value(Reply::new(super::Dialect::ClaudeControl, &r.id, &r.outcome)),
        };
        encoded.unwrap_or(Value::Null)
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

    fn envelope(line: &str) -> Result<RawMessage<'_>, Refusal> {
        Envelope::parse(line).expect("an envelope").classify(true)
    }

    #[test]
    fn envelope_ids_keep_their_exact_text_and_are_echoed_byte_for_byte() {
        for id in ["18446744073709551616", "1e2", "-0", "1.0", "-12.5E-3", "7", r#""x""#, r#""\u00e9""#, "null"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            let Ok(RawMessage::Request { id: parsed, .. }) = envelope(&line) else { panic!("{line}") };
            let outcome = Ok(json!(true));
            let reply = serde_json::to_string(&outgoing::Reply::new(Dialect::JsonRpc2, &parsed, &outcome)).unwrap();
            assert_eq!(reply, format!(r#"{{"jsonrpc":"2.0","id":{id},"result":true}}"#));
        }
        assert_eq!(RequestId::from(5).as_i64(), Some(5));
        assert_eq!(RequestId::from_raw(&RawValue::from_string("1e2".into()).unwrap()).unwrap().as_i64(), None);
    }

    #[test]
    fn envelope_ids_that_are_no_number_string_or_null_are_refused_without_an_id() {
        for id in [r#"{"a":1}"#, "[1]", "true", "false"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            assert_eq!(envelope(&line).unwrap_err(), Refusal { id: None, error: ShapeError::BadId }, "{line}");
        }
    }

    #[test]
    fn strict_envelopes_need_jsonrpc_2_0_and_lenient_ones_ignore_it() {
        for version in [None, Some(r#""1.0""#), Some("2.0"), Some("null"), Some(r#""2.00""#)] {
            let member = version.map(|v| format!(r#""jsonrpc":{v},"#)).unwrap_or_default();
            let request = format!(r#"{{{member}"id":3,"method":"m"}}"#);
            let refusal = envelope(&request).unwrap_err();
            assert_eq!(refusal, Refusal { id: Some(RequestId::from(3)), error: ShapeError::BadVersion }, "{request}");
            // A response-shaped line is refused without its id: that id is ours, not the sender's.
            let response = format!(r#"{{{member}"id":3,"result":1}}"#);
            assert_eq!(envelope(&response).unwrap_err().id, None, "{response}");
            let lenient = Envelope::parse(&request).unwrap().classify(false);
            assert!(matches!(lenient, Ok(RawMessage::Request { .. })), "{request}");
        }
        assert!(matches!(envelope(r#"{"jsonrpc":"2\u002e0","id":1,"method":"m"}"#), Ok(RawMessage::Request { .. })));
    }

    #[test]
    fn envelopes_borrow_their_members_from_the_line_and_skip_the_rest() {
        let line = r#"{"jsonrpc":"2.0","unknown":[1,2,3],"id":1,"method":"m","params":{"a":[1,1,1]}}"#;
        let Ok(RawMessage::Request { params: Some(params), .. }) = envelope(line) else { panic!() };
        assert_eq!(params.get(), r#"{"a":[1,1,1]}"#);
        let range = line.as_bytes().as_ptr_range();
        assert!(range.contains(&params.get().as_ptr()), "the params are a slice of the line, not a copy");
        // A present `null` is a member, not an absent one.
        let Ok(RawMessage::Request { params: Some(null), .. }) =
            envelope(r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#)
        else {
            panic!()
        };
        assert_eq!(null.get(), "null");
    }

    #[test]
    fn lines_that_are_no_envelope() {
        assert!(matches!(Envelope::parse("not json {"), Err(LineError::NotJson(_))));
        assert!(matches!(Envelope::parse(r#"{"id":1,"method":"m""#), Err(LineError::NotJson(_))));
        assert_eq!(Envelope::parse("[1]").unwrap_err(), LineError::Shape(ShapeError::NotAnObject));
        assert_eq!(Envelope::parse("42").unwrap_err(), LineError::Shape(ShapeError::NotAnObject));
        assert_eq!(
            Envelope::parse(r#"{"id":1,"id":2,"method":"m"}"#).unwrap_err(),
            LineError::Shape(ShapeError::DuplicateMember)
        );
        assert_eq!(
            Envelope::parse(r#"{"\ud800":1,"id":1,"result":{}}"#).unwrap_err(),
            LineError::Shape(ShapeError::BadMemberName)
        );
        let members = LenientMembers::read(r#"{"jsonrpc":"2.0","id":7,"id":8,"\udc00":0,"result":{}}"#).unwrap();
        assert_eq!(members.id.map(RawValue::get), Some("7"));
        assert!(!members.has_method);
        assert!(LenientMembers::read(r#"{"id":1,"id":2,"method":"m"}"#).unwrap().has_method);
        let odd = |line: &str| envelope(line).unwrap_err().error;
        assert_eq!(odd(r#"{"jsonrpc":"2.0","method":5}"#), ShapeError::MethodNotString);
        assert_eq!(odd(r#"{"jsonrpc":"2.0","id":1}"#), ShapeError::Unclassifiable);
        assert_eq!(odd(r#"{"jsonrpc":"2.0","id":null,"result":1}"#), ShapeError::Unclassifiable);
        let Ok(RawMessage::Response { outcome: Err(error), .. }) =
            envelope(r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#)
        else {
            panic!()
        };
        assert_eq!(decode_error_object(error), Err(ShapeError::BadErrorObject));
    }

    #[test]
    fn an_error_objects_data_is_kept_as_written_not_built_into_a_tree() {
        // A `Value` would rewrite `1.50` as `1.5` and reorder nothing else: the text shows which.
        let raw = RawValue::from_string(r#"{"code":-1,"message":"m","data":[0, 0, 1.50]}"#.to_owned()).unwrap();
        let error = decode_error_object(&raw).unwrap();
        let written = serde_json::to_string(&error).unwrap();
        assert_eq!(written, r#"{"code":-1,"message":"m","data":[0, 0, 1.50]}"#);
        let from_value = Message::from_value(json!({"id": 1, "error": {"code": 2, "message": "m", "data": {"a": 1}}}));
        let Ok(Message::Response(Response { outcome: Err(error), .. })) = from_value else { panic!("{from_value:?}") };
        assert_eq!(serde_json::to_string(&error).unwrap(), r#"{"code":2,"message":"m","data":{"a":1}}"#);
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

    #[test]
    fn claude_control_envelopes_classify_as_the_three_kinds() {
        let claude = |v: Value| Dialect::ClaudeControl.classify(v);
        let request = json!({"type": "control_request", "request_id": "r-1",
                             "request": {"subtype": "can_use_tool", "tool_name": "Bash"}});
        match claude(request).unwrap() {
            Incoming::Message(Message::Request(r)) => {
                assert_eq!(r.id, RequestId::String("r-1".into()));
                assert_eq!(r.method, "can_use_tool");
                assert_eq!(r.params_value(), Some(json!({"subtype": "can_use_tool", "tool_name": "Bash"})));
            }
            other => panic!("expected a request, got {other:?}"),
        }
        let success = json!({"type": "control_response",
                             "response": {"subtype": "success", "request_id": "clawbridge-1", "response": {"pid": 7}}});
        assert_eq!(
            claude(success).unwrap(),
            Incoming::Message(Message::Response(Response {
                id: RequestId::String("clawbridge-1".into()),
                outcome: Ok(json!({"pid": 7}))
            }))
        );
        let error = json!({"type": "control_response",
                           "response": {"subtype": "error", "request_id": "clawbridge-2", "error": "no"}});
        match claude(error).unwrap() {
            Incoming::Message(Message::Response(Response { outcome: Err(e), .. })) => assert_eq!(e.message, "no"),
            other => panic!("expected an error response, got {other:?}"),
        }
        let odd = json!({"type": "control_response", "response": {"subtype": "later", "request_id": "clawbridge-3"}});
        assert!(matches!(claude(odd).unwrap(), Incoming::Message(Message::Response(Response { outcome: Err(_), .. }))));
        let cancel = json!({"type": "control_cancel_request", "request_id": "r-1"});
        assert_eq!(claude(cancel).unwrap(), Incoming::Cancel(RequestId::String("r-1".into())));
        let line = json!({"type": "assistant", "message": {"content": []}});
        assert_eq!(
            claude(line.clone()).unwrap(),
            Incoming::Message(Message::Notification(Notification::with_value("assistant", Some(line))))
        );
    }

    #[test]
    fn claude_lines_classify_from_their_text_as_from_a_value() {
        let lines = [
            r#"{"type":"assistant","message":{"content":[]}}"#,
            r#"{"session_id":"s","type":"result"}"#,
            r#"{"type":"control_request","request_id":"r-1","request":{"subtype":"can_use_tool","tool_name":"Bash"}}"#,
            r#"{"type":"control_request","request_id":"r-9","request":[1]}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"clawbridge-1","response":{}}}"#,
            r#"{"type":"control_cancel_request","request_id":"r-1"}"#,
            r#"{"type":"control_cancel_request"}"#,
            r#"{"type":7,"x":1}"#,
            r#"{"no_type":true}"#,
            r#"{"type":"us\u0065r"}"#,
            "42",
            "[1]",
        ];
        for line in lines {
            let raw: Box<RawValue> = serde_json::from_str(line).unwrap();
            let from_text = classify_control_line(raw);
            let from_value = Dialect::ClaudeControl.classify(serde_json::from_str(line).unwrap());
            match (&from_text, &from_value) {
                // The text keeps the line as written; the `Value` re-encodes it: the same JSON.
                (
                    Ok(Incoming::Message(Message::Notification(text))),
                    Ok(Incoming::Message(Message::Notification(value))),
                ) => {
                    assert_eq!(text.method, value.method, "{line}");
                    assert_eq!(text.params_value(), value.params_value(), "{line}");
                    assert_eq!(text.params.as_deref().map(RawValue::get), Some(line), "the line itself: {line}");
                }
                _ => assert_eq!(from_text, from_value, "{line}"),
            }
        }
    }

    #[test]
    fn claude_control_lines_that_are_no_message() {
        let claude = |v: Value| Dialect::ClaudeControl.classify(v);
        assert_eq!(claude(json!(42)), Err(ShapeError::NotAnObject));
        assert_eq!(claude(json!({"type": "control_cancel_request"})), Err(ShapeError::BadRequestId));
        assert_eq!(claude(json!({"type": "control_response", "response": 3})), Err(ShapeError::BadControlBody));
        assert_eq!(
            claude(json!({"type": "control_response", "response": {"subtype": "success"}})),
            Err(ShapeError::BadRequestId)
        );
        // A request with a readable id must still be answered, whatever its body.
        for body in [json!(null), json!("interrupt"), json!({"tool_name": "Bash"}), json!({"subtype": 5})] {
            let line = json!({"type": "control_request", "request_id": "r-9", "request": body});
            assert_eq!(
                claude(line),
                Ok(Incoming::Malformed { id: RequestId::String("r-9".into()), error: ShapeError::BadControlBody })
            );
        }
        // The JSON-RPC dialects never read Claude's envelopes as anything but what their shape says.
        let cancel = json!({"type": "control_cancel_request", "request_id": "r-1"});
        assert_eq!(Dialect::Codex.classify(cancel), Err(ShapeError::Unclassifiable));
    }

    #[test]
    fn claude_control_envelopes_are_written_typed() {
        let id = RequestId::String("clawbridge-4".into());
        let initialize = crate::claude::InitializeRequest::default();
        let request = outgoing::Call::new(Dialect::ClaudeControl, Some(&id), "initialize", Some(&initialize));
        assert_eq!(
            serde_json::to_string(&request).unwrap(),
            r#"{"type":"control_request","request_id":"clawbridge-4","request":{"subtype":"initialize","hooks":null}}"#
        );
        let bare = outgoing::Call::<Value>::new(Dialect::ClaudeControl, Some(&id), "interrupt", None);
        assert_eq!(
            serde_json::to_string(&bare).unwrap(),
            r#"{"type":"control_request","request_id":"clawbridge-4","request":{"subtype":"interrupt"}}"#
        );
        let user = json!({"message": {"role": "user"}});
        let line = outgoing::Call::new(Dialect::ClaudeControl, None, "user", Some(&user));
        assert_eq!(serde_json::to_string(&line).unwrap(), r#"{"type":"user","message":{"role":"user"}}"#);
        let theirs = RequestId::String("uuid-1".into());
        let allow = Ok(json!({"behavior": "allow"}));
        assert_eq!(
            serde_json::to_string(&outgoing::Reply::new(Dialect::ClaudeControl, &theirs, &allow)).unwrap(),
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"uuid-1","response":{"behavior":"allow"}}}"#
        );
        let refused = Err(ErrorObject::new(codes::METHOD_NOT_FOUND, "unsupported"));
        assert_eq!(
            serde_json::to_string(&outgoing::Reply::new(Dialect::ClaudeControl, &theirs, &refused)).unwrap(),
            r#"{"type":"control_response","response":{"subtype":"error","request_id":"uuid-1","error":"unsupported"}}"#
        );
        // What the CLI sends reads back as what we would write for it.
        let raw =
            json!({"type": "control_request", "request_id": "r-2", "request": {"subtype": "mcp_message", "x": 1}});
        let Ok(Incoming::Message(message)) = Dialect::ClaudeControl.classify(raw.clone()) else { panic!() };
        assert_eq!(message.to_value(Dialect::ClaudeControl), raw);
    }
}
