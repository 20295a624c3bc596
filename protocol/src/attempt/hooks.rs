//! The payloads of what the host lends an attempt: approval requests and decisions, host tools and
//! their calls, tool terminal reports and their resolutions, the agent's questions for the user.
//! The bridge's hook traits carry these; `protocol::host` sends them with the attempt's id.
//!
//! Where one of these is a host-protocol result on its own (`ApprovalDecision`, `HostToolOutput`,
//! `ToolTerminalResolution`, `UserQuestion`), `#[schemars(rename)]` keeps the name the host
//! protocol's schema has always given it.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{NativeMutation, ToolFinish, ToolImage, ToolOutcome};

/// What kind of permission the agent asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ApprovalKind {
    /// Run a shell command.
    Command,
    /// Apply a file change.
    FileChange,
    /// Widen the sandbox (network, file system).
    Permissions,
    /// Use a tool (Claude's `can_use_tool`).
    Tool,
}

/// A request for the host's permission.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// What kind of permission is asked.
    pub kind: ApprovalKind,
    /// The tool call it gates, so the host can tie the decision to the call.
    pub call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// What would run (command and cwd, the change, the tool input).
    #[serde(default)]
    pub arguments: Value,
    /// The agent's own justification, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The host's answer to an approval request (the `host/approval/decide` result), tagged by
/// `decision`. Deny and abort differ: a denied call is skipped and the turn goes on; abort stops the
/// turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "camelCase")]
#[schemars(rename = "ApprovalDecideResponse")]
#[non_exhaustive]
pub enum ApprovalDecision {
    /// Run it this once.
    Allow,
    /// Run it, and similar calls for the rest of the session.
    AllowForSession,
    /// Do not run it; the agent is told and continues.
    Deny {
        /// What to tell the agent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run it and stop the turn.
    Abort,
    /// A decision this bridge does not know; treated as deny (fail closed).
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

impl ApprovalDecision {
    /// Whether the call may run.
    pub fn allows(&self) -> bool {
        matches!(self, ApprovalDecision::Allow | ApprovalDecision::AllowForSession)
    }
}

/// A host tool declared to the backend.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostToolSpec {
    /// The tool's name (what `host/tool/execute` names).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments (the host tool's `parameters`), kept as the host wrote it: the
    /// bridge only passes it on, and a `Value` tree of a big schema costs tens of times its text.
    #[serde(default = "empty_schema")]
    #[schemars(with = "Value")]
    pub input_schema: Box<serde_json::value::RawValue>,
}

impl HostToolSpec {
    /// A spec whose schema is given as a `Value`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: &Value) -> Self {
        let input_schema = serde_json::value::to_raw_value(input_schema).unwrap_or_else(|_| empty_schema());
        Self { name: name.into(), description: description.into(), input_schema }
    }

    /// The schema's JSON text length.
    pub fn schema_bytes(&self) -> usize {
        self.input_schema.get().len()
    }

    /// Whether the schema can be read as a `Value` tree ([`schema_value`](Self::schema_value)) —
    /// not nested past serde_json's depth limit, no string that is not Unicode — found by reading
    /// it through without building anything. `serve` refuses an attempt whose tool fails this, so
    /// no backend is ever handed a schema silently turned into `null`.
    pub fn check_schema(&self) -> Result<(), serde_json::Error> {
        serde_json::from_str::<SchemaProbe>(self.input_schema.get()).map(drop)
    }

    /// The schema as a `Value` tree, for a backend whose own types take one (`null` for a schema
    /// that fails [`check_schema`](Self::check_schema)).
    pub fn schema_value(&self) -> Value {
        serde_json::from_str(self.input_schema.get()).unwrap_or(Value::Null)
    }
}

impl PartialEq for HostToolSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.input_schema.get() == other.input_schema.get()
    }
}

/// Reads a JSON value the way a `Value` would (the same depth limit and string checks) and keeps
/// nothing of it.
struct SchemaProbe;

impl<'de> serde::Deserialize<'de> for SchemaProbe {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SchemaProbe)
    }
}

impl<'de> serde::de::Visitor<'de> for SchemaProbe {
    type Value = SchemaProbe;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<SchemaProbe>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<SchemaKey, SchemaProbe>()?.is_some() {}
        Ok(self)
    }
}

/// A member name, read as a string (as a `Value`'s key is) and dropped.
struct SchemaKey;

impl<'de> serde::Deserialize<'de> for SchemaKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(SchemaProbe).map(|_| SchemaKey)
    }
}

/// A schema that accepts anything (`{}`), for a tool declared without one.
fn empty_schema() -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string("{}".to_owned()).expect("`{}` is JSON")
}

/// A call of a host tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostToolCall {
    /// The protocol's call id (the same id the `toolStarted` event and the transcript carry).
    pub call_id: String,
    /// Which host tool (a `name` from the attempt's `hostTools`).
    pub tool_name: String,
    /// The arguments the model produced.
    #[serde(default)]
    pub arguments: Value,
}

/// `host/tool/execute` result: what the tool returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "HostToolExecuteResponse")]
pub struct HostToolOutput {
    /// The text given to the model.
    #[serde(default)]
    pub text: String,
    /// The tool reported failure (the model sees `text` as the error). A host that cannot run the tool
    /// at all may answer with a JSON-RPC error instead; the bridge turns either into a failed call.
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned, given to the model as images (bounded by the bridge: at most 16,
    /// 10 MiB each, 32 MiB together; one it cannot use is replaced by a note in `text`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

/// A tool's terminal outcome, in the host's `observeToolTerminal` input shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolTerminalReport {
    /// The protocol call id.
    pub tool_call_id: String,
    /// The canonical tool name.
    pub tool_name: String,
    /// The arguments that actually reached the tool.
    #[serde(default)]
    pub arguments: Value,
    /// False only when the call was blocked before it could run (declined); otherwise conservative.
    pub execution_started: bool,
    /// `success` or `failure`, from structured status, never display text.
    pub outcome: TerminalOutcome,
    /// Structured failure facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<ToolFailure>,
    /// Side-effect facts for native tools the host has no definition of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_mutation: Option<NativeMutation>,
    /// What the outcome alone does not say (`running in the background`: a command that started and
    /// outlives the turn is a success whose end is not known yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<String>,
}

impl ToolTerminalReport {
    /// The report for a finished call. A declined call is reported as never started and, being
    /// blocked, as harmless to replay: the host must not count it as a possible side effect.
    pub fn from_finish(finish: &ToolFinish) -> ToolTerminalReport {
        let meta = matches!(finish.outcome, ToolOutcome::Backgrounded { .. }).then(|| finish.outcome.describe());
        let (outcome, failure) = match &finish.outcome {
            ToolOutcome::Success | ToolOutcome::Backgrounded { .. } => (TerminalOutcome::Success, None),
            ToolOutcome::Failure { error, error_code, timed_out } => (
                TerminalOutcome::Failure,
                Some(ToolFailure { error: error.clone(), error_code: error_code.clone(), timed_out: *timed_out }),
            ),
            ToolOutcome::Declined { reason } => (
                TerminalOutcome::Failure,
                Some(ToolFailure {
                    error: Some(reason.clone().unwrap_or_else(|| "declined".into())),
                    ..Default::default()
                }),
            ),
            ToolOutcome::Cancelled { reason } => (
                TerminalOutcome::Failure,
                Some(ToolFailure {
                    error: Some(reason.clone().unwrap_or_else(|| "cancelled".into())),
                    ..Default::default()
                }),
            ),
        };
        let declined = matches!(finish.outcome, ToolOutcome::Declined { .. });
        let native_mutation = if declined && finish.call.native {
            Some(NativeMutation { mutating_action: false, replay_safe: true })
        } else {
            finish.call.native_mutation
        };
        ToolTerminalReport {
            tool_call_id: finish.call.call_id.clone(),
            tool_name: finish.call.tool_name.clone(),
            arguments: finish.call.arguments.clone(),
            execution_started: finish.execution_started && !declined,
            outcome,
            failure,
            native_mutation,
            meta,
        }
    }
}

/// The two outcomes the host distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TerminalOutcome {
    /// It succeeded.
    Success,
    /// It failed, was declined or was cancelled.
    Failure,
}

/// The host's `failure` object.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFailure {
    /// What went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A machine code (`EACCES`, `timeout`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// It ran out of time.
    #[serde(default)]
    pub timed_out: bool,
}

/// `host/toolTerminal/observe` result: what the host made of a terminal. The host may return
/// `observeToolTerminal`'s whole output; only `lastToolError` is read, the rest is ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ToolTerminalObserveResponse")]
pub struct ToolTerminalResolution {
    /// An unresolved (mutating) failure, carried unchanged into the attempt result's `lastToolError`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_error: Option<Value>,
}

/// One question the agent asks the user mid-turn (Codex `item/tool/requestUserInput`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "UserInputQuestion")]
pub struct UserQuestion {
    /// Question id; the key of its answer.
    pub id: String,
    /// Short header.
    #[serde(default)]
    pub header: String,
    /// The question text.
    #[serde(default)]
    pub question: String,
    /// Whether a free-form answer is allowed besides the options.
    #[serde(default)]
    pub is_other: bool,
    /// Whether the answer is secret: the host must not log or echo it.
    #[serde(default)]
    pub is_secret: bool,
    /// Choices, when the question has them.
    // `(label, description)` pairs for the adapters; `UserInputOption` objects on the wire.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "option_pairs")]
    #[schemars(with = "Vec<UserInputOption>")]
    pub options: Vec<(String, String)>,
}

/// A choice of a `UserInputQuestion`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputOption {
    /// The choice as shown and answered.
    pub label: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// [`UserQuestion::options`] as [`UserInputOption`] objects.
mod option_pairs {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::UserInputOption;

    /// Writes each pair as `{label, description}`.
    pub fn serialize<S: Serializer>(options: &[(String, String)], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(
            options
                .iter()
                .map(|(label, description)| UserInputOption { label: label.clone(), description: description.clone() }),
        )
    }

    /// Reads `{label, description}` objects back into pairs.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<(String, String)>, D::Error> {
        let options = Vec::<UserInputOption>::deserialize(deserializer)?;
        Ok(options.into_iter().map(|o| (o.label, o.description)).collect())
    }
}

/// The agent's questions for the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInputRequest {
    /// The native item or call that asks, for the host's correlation and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The questions, in order.
    pub questions: Vec<UserQuestion>,
}

/// Answers by question id; a question left out is unanswered, an empty map means no answer at all.
pub type UserAnswers = BTreeMap<String, Vec<String>>;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn question_options_are_label_objects_on_the_wire() {
        let question = UserQuestion {
            id: "color".into(),
            header: "Color".into(),
            question: "Which one?".into(),
            options: vec![("blue".into(), "the sky".into()), ("red".into(), String::new())],
            ..Default::default()
        };
        let value = serde_json::to_value(&question).unwrap();
        assert_eq!(
            value["options"],
            json!([{"label": "blue", "description": "the sky"}, {"label": "red"}]),
            "an empty description is left out"
        );
        assert_eq!(serde_json::from_value::<UserQuestion>(value).unwrap(), question);
        let free_form = UserQuestion { id: "why".into(), ..Default::default() };
        assert!(serde_json::to_value(&free_form).unwrap().get("options").is_none());
        assert_eq!(serde_json::from_value::<UserQuestion>(json!({"id": "why"})).unwrap(), free_form);
    }
}
