//! Turns: `turn/start`, `turn/steer`, `turn/interrupt`, the `Turn` object and user input
//! (docs/peers/codex.md#turns, #error-codes).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ApprovalPolicy, Extra, SandboxPolicy, ThreadItem};

/// One piece of user input, tagged by `type`. Note the snake_case `text_elements`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput {
    /// Plain text: `{"type":"text","text":…,"text_elements":[]}`. All text of one call is capped at
    /// 1 MiB characters (`-32602`, `data.input_error_code:"input_too_large"`).
    Text {
        /// The text.
        text: String,
        /// UI element spans inside `text` (`{byteRange, placeholder?}`); always sent, usually empty.
        #[serde(default)]
        text_elements: Vec<Value>,
    },
    /// An image by URL (`https:` or `data:`), or by uploaded `fileId`.
    Image {
        /// Image URL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// Id of an uploaded file, instead of `url`.
        #[serde(rename = "fileId", default, skip_serializing_if = "Option::is_none")]
        file_id: Option<String>,
        /// Requested detail level (`low`, `high`, …).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// An image file on the server's machine.
    LocalImage {
        /// Absolute path.
        path: String,
        /// Requested detail level.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    /// An input kind these types do not know (`skill`, `mention`, audio, …), kept as received.
    #[serde(untagged)]
    Unknown(Value),
}

impl UserInput {
    /// Text input with no UI elements.
    pub fn text(text: impl Into<String>) -> Self {
        UserInput::Text { text: text.into(), text_elements: Vec::new() }
    }

    /// An image by URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        UserInput::Image { url: Some(url.into()), file_id: None, detail: None }
    }

    /// An image file by path.
    pub fn local_image(path: impl Into<String>) -> Self {
        UserInput::LocalImage { path: path.into(), detail: None }
    }
}

/// `turn/start` params: run the model on new input. If a turn is already active, the input is steered
/// into it and the result names the active turn (no new `turn/started`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartParams {
    /// The thread to run in.
    pub thread_id: String,
    /// The user's input.
    pub input: Vec<UserInput>,
    /// Sticky override: working directory for this and later turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Sticky override: approval policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Sticky override: sandbox, as a `type`-tagged object (not the `thread/start` string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
    /// Sticky override: model slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sticky override: reasoning effort (`low`, `medium`, `high`, … as the model advertises).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// This turn only: JSON Schema the final answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

impl TurnStartParams {
    /// A turn on `thread_id` with `input` and no overrides.
    pub fn new(thread_id: impl Into<String>, input: Vec<UserInput>) -> Self {
        Self { thread_id: thread_id.into(), input, ..Self::default() }
    }
}

/// The `turn/start` result: the new (or the already active) turn, usually `inProgress` with no items.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnStartResponse {
    /// The turn; correlate later notifications by `turn.id`.
    pub turn: Turn,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/steer` params: add input to the active turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerParams {
    /// The thread.
    pub thread_id: String,
    /// Input to add.
    pub input: Vec<UserInput>,
    /// Required: the turn we believe is active; a mismatch fails with `-32600 expected active turn id …`.
    pub expected_turn_id: String,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `turn/steer` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnSteerResponse {
    /// The turn the input went into.
    #[serde(default)]
    pub turn_id: String,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `turn/interrupt` params. The result is `{}`, then `turn/completed` with `status:"interrupted"`; no
/// active turn → `-32600 no active turn to interrupt`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInterruptParams {
    /// The thread.
    pub thread_id: String,
    /// The turn to stop.
    pub turn_id: String,
    /// Fields not modelled here, sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `turn/interrupt` result (`{}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnInterruptResponse {
    /// Fields not modelled here (none in 0.169).
    #[serde(flatten)]
    pub extra: Extra,
}

/// `thread/turns/list` params: a page of a thread's turns, newest first by default. 0.169 prefers it
/// over `thread/read {includeTurns}` for paginated threads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListParams {
    /// The thread.
    pub thread_id: String,
    /// At most this many turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Fields not modelled here (`cursor`, `sortDirection`, `itemsView`), sent as given.
    #[serde(flatten)]
    pub extra: Extra,
}

/// The `thread/turns/list` result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadTurnsListResponse {
    /// The page of turns, each with `status` and (summary) `items`.
    #[serde(default)]
    pub data: Vec<Turn>,
    /// Fields not modelled here (`nextCursor`, `backwardsCursor`).
    #[serde(flatten)]
    pub extra: Extra,
}

/// A turn: one model run on one input, from `turn/started` to `turn/completed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    /// Turn id (a UUIDv7).
    pub id: String,
    /// The turn's items as far as `items_view` says: empty in `turn/start` results and
    /// `turn/started`; on `turn/completed` in 0.169 only a summary (the final `agentMessage`), and
    /// empty for interrupted or failed turns. The `item/*` notifications are authoritative.
    #[serde(default)]
    pub items: Vec<ThreadItem>,
    /// How complete `items` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items_view: Option<TurnItemsView>,
    /// Where the turn stands; absent or unknown means "unknown", never success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TurnStatus>,
    /// Why the turn failed (with `status:"failed"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TurnError>,
    /// The first turn of a steering chain this turn belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_turn_id: Option<String>,
    /// Start time (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// End time (Unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<i64>,
    /// Wall time of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

open_string_enum! {
    /// `turn.status`.
    pub enum TurnStatus {
        /// Still running.
        InProgress = "inProgress",
        /// Finished normally.
        Completed = "completed",
        /// Stopped by `turn/interrupt` or a `cancel` approval decision.
        Interrupted = "interrupted",
        /// Ended by an error (see `turn.error`).
        Failed = "failed",
    }
}

open_string_enum! {
    /// `turn.itemsView`: how much of the turn's items `turn.items` holds.
    pub enum TurnItemsView {
        /// Items were not loaded (e.g. a `turn/start` result).
        NotLoaded = "notLoaded",
        /// A summary (0.169 `turn/completed`: only the final agent message).
        Summary = "summary",
        /// All items.
        Full = "full",
    }
}

/// `turn.error`, and `error` in the `error` notification.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnError {
    /// Human-readable description.
    #[serde(default)]
    pub message: String,
    /// Machine-readable class of the error; an open set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_error_info: Option<CodexErrorInfo>,
    /// More detail, when the server has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_details: Option<String>,
    /// Fields not modelled here.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `codexErrorInfo`: a string (`"internalServerError"`) or a one-key object
/// (`{"httpConnectionFailed":{"httpStatusCode":502}}`). New values arrive every release; they land in
/// [`CodexErrorInfo::Unknown`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CodexErrorInfo {
    /// The conversation no longer fits the model's context window.
    ContextWindowExceeded,
    /// The account's usage limit is reached.
    UsageLimitExceeded,
    /// Rate limited by the provider.
    RateLimitExceeded,
    /// The provider is overloaded.
    ServerOverloaded,
    /// The provider answered 5xx.
    InternalServerError,
    /// Authentication failed.
    Unauthorized,
    /// The provider rejected the request.
    BadRequest,
    /// The sandbox failed.
    SandboxError,
    /// An unclassified error.
    Other,
    /// Could not connect to the provider.
    HttpConnectionFailed {
        /// HTTP status, when there was a response.
        #[serde(rename = "httpStatusCode", default, skip_serializing_if = "Option::is_none")]
        http_status_code: Option<u16>,
    },
    /// The response stream could not be opened.
    ResponseStreamConnectionFailed {
        /// HTTP status, when there was a response.
        #[serde(rename = "httpStatusCode", default, skip_serializing_if = "Option::is_none")]
        http_status_code: Option<u16>,
    },
    /// The response stream broke off.
    ResponseStreamDisconnected {
        /// HTTP status, when there was a response.
        #[serde(rename = "httpStatusCode", default, skip_serializing_if = "Option::is_none")]
        http_status_code: Option<u16>,
    },
    /// Retries were exhausted.
    ResponseTooManyFailedAttempts {
        /// HTTP status of the last attempt, when there was one.
        #[serde(rename = "httpStatusCode", default, skip_serializing_if = "Option::is_none")]
        http_status_code: Option<u16>,
    },
    /// A value these types do not know, kept as received.
    #[serde(untagged)]
    Unknown(Value),
}
