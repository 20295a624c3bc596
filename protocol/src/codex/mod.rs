//! Codex `app-server` wire types, as observed on codex-cli 0.169.0 (`docs/peers/codex.md`).
//!
//! The dialect is JSON-RPC without the `jsonrpc` field (see [`crate::jsonrpc::Dialect::Codex`]); this
//! module only types the `params` / `result` payloads:
//!
//! - client → server requests and their results: [`initialize`], [`thread`], [`turn`];
//! - server → client notifications: [`ServerNotification`] (built by [`ServerNotification::from_notification`]);
//! - server → client requests and our replies: [`ServerRequest`] (built by [`ServerRequest::from_request`]);
//! - thread items carried by `item/*` notifications and turn snapshots: [`ThreadItem`];
//! - the version gate on the `initialize` result's `userAgent`: [`version`].
//!
//! Decoding is tolerant by design (docs/peers/codex.md#version-drift): every field the server may omit is optional or
//! defaulted, every struct keeps the fields it does not model in `extra`, every enum has a catch-all
//! variant holding what arrived, and `deny_unknown_fields` is never used. Client-sent params skip unset
//! optional fields, so what goes on the wire is exactly what the caller set.
//!
//! Field names follow the wire (camelCase) except where Codex itself keeps snake_case
//! (`text_elements`, `move_path`, `execpolicy_amendment`, `network_policy_amendment`).

use serde_json::{Map, Value};

/// Fields of a wire object that these types do not model, kept exactly as received so nothing the server
/// sends is lost (and, on client-sent params, a way to pass fields a newer server understands).
pub type Extra = Map<String, Value>;

/// Defines an enum of methods, one variant per known method with its typed params, plus an
/// `Unknown { method, params, decode_error }` catch-all, together with a never-failing decoder and the
/// reverse mapping back to `(method, params)`.
macro_rules! method_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident, decode = $decode:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident($ty:ty) = $method:literal,
            )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[doc = concat!("`", $method, "`")]
                $variant($ty),
            )+
            /// A method these types do not know, or known params that did not decode. Kept whole so a
            /// caller can still log it, forward it or answer it.
            Unknown {
                /// The method exactly as received.
                method: String,
                /// The params exactly as received (`null` when absent).
                params: serde_json::Value,
                /// Why the params did not decode, for a known method; `None` for an unknown method.
                decode_error: Option<String>,
            },
        }

        impl $name {
            /// Every method that has its own variant.
            pub const KNOWN_METHODS: &'static [&'static str] = &[$($method),+];

            /// Decodes `params` for `method`. Never fails: an unknown method, or params that do not fit
            /// the known method's type, land in the `Unknown` variant (with the decode error text).
            pub fn $decode(method: &str, params: Option<serde_json::Value>) -> Self {
                let params = params.unwrap_or(serde_json::Value::Null);
                let decode_error = match method {
                    $(
                        $method => match <$ty as serde::Deserialize>::deserialize(&params) {
                            Ok(decoded) => return $name::$variant(decoded),
                            Err(e) => Some(e.to_string()),
                        },
                    )+
                    _ => None,
                };
                $name::Unknown { method: method.to_owned(), params, decode_error }
            }

            /// Decodes `params`, as the sender wrote them, for `method` in one pass: straight from the
            /// text into the known method's type. Gives what the `Value` decoder gives for the same
            /// JSON; only params that land in `Unknown` are built into a `Value` (which it keeps).
            pub fn from_raw(method: &str, params: Option<&serde_json::value::RawValue>) -> Self {
                let text = params.map_or("null", serde_json::value::RawValue::get);
                let decode_error = match method {
                    $(
                        $method => match serde_json::from_str::<$ty>(text) {
                            Ok(decoded) => return $name::$variant(decoded),
                            Err(e) => Some($crate::decode::error_text(&e)),
                        },
                    )+
                    _ => None,
                };
                // Valid JSON always reads as a `Value`, but for one nested deeper than serde_json's
                // recursion limit.
                let params = serde_json::from_str(text).unwrap_or_default();
                $name::Unknown { method: method.to_owned(), params, decode_error }
            }

            /// The wire method name.
            pub fn method(&self) -> &str {
                match self {
                    $($name::$variant(_) => $method,)+
                    $name::Unknown { method, .. } => method,
                }
            }

            /// The params as JSON (the inverse of decoding; used by test peers that play the server).
            pub fn params(&self) -> serde_json::Value {
                let encoded = match self {
                    $($name::$variant(p) => serde_json::to_value(p),)+
                    $name::Unknown { params, .. } => return params.clone(),
                };
                // Serialising these types cannot fail: every map key is a string.
                encoded.unwrap_or(serde_json::Value::Null)
            }
        }
    };
}

pub mod initialize;
pub mod items;
pub mod notifications;
pub mod policy;
pub mod server_requests;
pub mod thread;
pub mod turn;
pub mod version;

pub use initialize::*;
pub use items::*;
pub use notifications::*;
pub use policy::*;
pub use server_requests::*;
pub use thread::*;
pub use turn::*;
pub use version::{Version, VersionPolicy, VersionRejected, VersionVerdict};

/// Method names of the client → server messages clawbridge sends.
pub mod methods {
    /// Request: the handshake; params [`super::InitializeParams`], result [`super::InitializeResponse`].
    pub const INITIALIZE: &str = "initialize";
    /// Notification (no params): ends the handshake. Never acknowledged.
    pub const INITIALIZED: &str = "initialized";
    /// Request: [`super::ThreadStartParams`] → [`super::ThreadStartResponse`].
    pub const THREAD_START: &str = "thread/start";
    /// Request: [`super::ThreadResumeParams`] → [`super::ThreadResumeResponse`].
    pub const THREAD_RESUME: &str = "thread/resume";
    /// Request: [`super::ThreadForkParams`] → [`super::ThreadStartResponse`].
    pub const THREAD_FORK: &str = "thread/fork";
    /// Request: [`super::TurnStartParams`] → [`super::TurnStartResponse`].
    pub const TURN_START: &str = "turn/start";
    /// Request: [`super::TurnSteerParams`] → [`super::TurnSteerResponse`].
    pub const TURN_STEER: &str = "turn/steer";
    /// Request: [`super::TurnInterruptParams`] → [`super::TurnInterruptResponse`].
    pub const TURN_INTERRUPT: &str = "turn/interrupt";
    /// Request: [`super::ThreadTurnsListParams`] → [`super::ThreadTurnsListResponse`]. Used to
    /// reconcile a turn whose `turn/completed` never came (docs/peers/codex.md#missing-turncompleted).
    pub const THREAD_TURNS_LIST: &str = "thread/turns/list";
    /// Request (`{threadId}` → `{}`): archive a thread; Codex moves its rollout out of the live
    /// sessions. Sent when the OpenClaw session bound to it was deleted.
    pub const THREAD_ARCHIVE: &str = "thread/archive";
    /// Request (`{}`): the effective configuration, `{config: {model_provider, model_providers,
    /// sandbox_mode, …}, origins}` (snake_case keys, as in `config.toml`). Used by `clawbridge doctor`.
    pub const CONFIG_READ: &str = "config/read";
    /// Request (`{}`): the signed-in account, `{account, requiresOpenaiAuth}`. Used by `clawbridge doctor`.
    pub const ACCOUNT_READ: &str = "account/read";
    /// Request (`{limit, cursor, includeHidden}`): the models this server offers, `{data: [{id,
    /// model, displayName, description, hidden, isDefault, inputModalities,
    /// supportedReasoningEfforts}], nextCursor}`. Used for the host's model catalog.
    pub const MODEL_LIST: &str = "model/list";
    /// Request (`{threadId}`) → `{}`: compacts a loaded thread's history in a turn of its own, which
    /// streams a `contextCompaction` item, `thread/compacted` and `turn/completed`.
    pub const THREAD_COMPACT_START: &str = "thread/compact/start";
    /// Request (`{threadId?, detail?, cursor?, limit?, serverName?}`) → `{data: [{name,
    /// runtimeStatus, tools: {<name>: {name, title, description, inputSchema}}, toolsError, …}],
    /// nextCursor}`: the MCP servers (of a thread's connections, with `threadId`) and their tools.
    pub const MCP_SERVER_STATUS_LIST: &str = "mcpServerStatus/list";
    /// Notification: a problem with the configuration or the machine (a missing sandbox helper),
    /// [`super::notifications::ConfigWarningNotification`].
    pub const CONFIG_WARNING: &str = "configWarning";
}

#[cfg(test)]
mod tests;
