//! One attempt (one prompted turn) as the host sees it: the result it gets at the end
//! ([`AttemptResult`], the backend-neutral part of `AgentHarnessAttemptResult`) and the payloads of
//! the hooks it lends the backend ([`hooks`]). The bridge's recorder folds a turn's events into the
//! result; these are only the data.

pub mod hooks;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{LastCall, TurnTerminal, Usage};

/// What the host gets back for an attempt (the backend-neutral part of `AgentHarnessAttemptResult`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptResult {
    /// How the turn ended (`terminal.kind`).
    pub terminal: TurnTerminal,
    /// The native thread/session the turn ran in (diagnostics; the bridge keeps the binding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_session_id: Option<String>,
    /// The final text of each assistant message, in order (`assistantTexts`).
    #[serde(default)]
    pub assistant_texts: Vec<String>,
    /// The turn's token usage, when the backend reported any (`attemptUsage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// (protocol version 3) The turn's most recent model call, when the backend reported one: its
    /// own usage and the model's context window (the host's `contextTokens` and `promptCache`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_call: Option<LastCall>,
    /// Why a completed turn produced no answer (`agentHarnessResultClassification`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<Classification>,
    /// Whether the host may retry the attempt (`replayMetadata`).
    pub replay: ReplayMetadata,
    /// One entry per tool call (`toolMetas`).
    #[serde(default)]
    pub tools: Vec<ToolMeta>,
    /// The host's unresolved tool error from `host/toolTerminal/observe`, carried through unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tool_error: Option<Value>,
    /// How many items started and finished (`itemLifecycle`).
    pub item_lifecycle: ItemLifecycle,
    /// A model response completed during the attempt (an assistant message became final, or the
    /// model asked for a tool), whatever happened after it (`hasSuccessfulModelResponse`: a turn
    /// that fails or times out after the model answered still had a successful model response).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_responded: bool,
}

/// `agentHarnessResultClassification`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Classification {
    /// Nothing at all.
    Empty,
    /// Only reasoning.
    ReasoningOnly,
    /// Only a plan.
    PlanningOnly,
}

/// `replayMetadata`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayMetadata {
    /// A tool that may change state started.
    pub had_potential_side_effects: bool,
    /// Running the attempt again cannot repeat anything (no tool started, no approval accepted, no
    /// assistant output).
    pub replay_safe: bool,
}

/// A `toolMetas` entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolMeta {
    /// The canonical tool name.
    pub tool_name: String,
    /// The protocol call id.
    pub tool_call_id: String,
    /// It failed, was declined or cancelled.
    pub is_error: bool,
}

/// `itemLifecycle`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemLifecycle {
    /// Tool calls started.
    pub started_count: u32,
    /// Tool calls finished.
    pub completed_count: u32,
    /// Started and not finished.
    pub active_count: u32,
}
