//! `harness/list` and `harness/supports`: which harnesses the bridge runs and whether one fits a route.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `harness/list` params: none (send `{}` or omit `params`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessListParams {}

/// `harness/list` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessListResponse {
    /// Every harness, available or not (an unavailable one says why).
    #[serde(default)]
    pub harnesses: Vec<HarnessInfo>,
}

/// One harness the plugin can register with `api.registerAgentHarness`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessInfo {
    /// The runtime id (`AgentHarnessV2.id`), matched by `agentRuntime.id` and by `compatibleIds`.
    pub id: String,
    /// The display name (`AgentHarnessV2.label`).
    pub label: String,
    /// The backend that runs it (a `backends[].id` of the `initialize` result).
    pub backend: String,
    /// Whether attempts can run now (the backend is available).
    pub available: bool,
    /// Why not, when unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_reason: Option<String>,
    /// `AgentHarnessV2.autoSelection.providerIds`: the providers automatic selection may pick this
    /// harness for; empty means explicit selection only. OpenClaw's `supports()` is synchronous and
    /// called many times per turn, so a plugin decides it locally from this list (and
    /// `compatibleIds`) rather than with a round trip; `harness/supports` is the reference answer.
    #[serde(default)]
    pub provider_ids: Vec<String>,
    /// What the harness takes besides the prompt's text; a plugin offers the matching host
    /// capabilities (active-run injection only where `steering`). Left out when it takes none.
    #[serde(default, skip_serializing_if = "HarnessInputs::is_none")]
    pub inputs: HarnessInputs,
    /// The exact local implementation that runs this harness's attempts (OpenClaw's
    /// `AgentHarnessRuntimeArtifactBinding`): what `runtimeArtifact.validate` compares a recorded
    /// artifact with. Only for an available harness (protocol version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_artifact: Option<RuntimeArtifact>,
}

/// A runtime artifact (`{id, fingerprint}`): names the bridge release, the harness, its backend and
/// the native executable and version the bridge runs, as a digest; no secrets, no paths in the id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeArtifact {
    /// Readable name, e.g. `clawbridge-codex@clawbridge-0.1.0/codex-0.169.0`.
    pub id: String,
    /// SHA-256 (hex) over the bridge version, harness id, backend, native version and the
    /// native executable's path.
    pub fingerprint: String,
}

/// What a harness takes besides the prompt's text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HarnessInputs {
    /// Images attached to the prompt reach the model (`attempt/run` `images`); without it an attempt
    /// with images fails preflight.
    #[serde(default)]
    pub images: bool,
    /// `thinkLevel` is applied to the native reasoning setting (otherwise it is ignored).
    #[serde(default)]
    pub think_level: bool,
    /// `attempt/steer` adds input to a running turn.
    #[serde(default)]
    pub steering: bool,
}

impl HarnessInputs {
    /// Whether the harness takes nothing but text.
    pub fn is_none(&self) -> bool {
        *self == HarnessInputs::default()
    }
}

/// `harness/supports` params: the host's `supports(ctx)` facts for one harness.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportsParams {
    /// The harness asked about.
    pub harness_id: String,
    /// The provider id of the route.
    #[serde(default)]
    pub provider: String,
    /// The model id, when resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// The runtime the user or config asked for (`auto`, a harness id, `openclaw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_runtime: Option<String>,
    /// Facts about the provider's configured transport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<ModelProviderFacts>,
}

/// The part of `ctx.modelProvider` that decides eligibility.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelProviderFacts {
    /// The provider's API family, e.g. `openai-completions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// `none` or `present`: a route with transport overrides expects OpenClaw's own transport, which a
    /// native harness replaces, so such routes are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_transport_overrides: Option<String>,
    /// The runtimes the model's policy allows; when present, a harness not named here is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_policy: Option<RuntimePolicy>,
}

/// `modelProvider.runtimePolicy`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimePolicy {
    /// Harness ids compatible with the model.
    #[serde(default)]
    pub compatible_ids: Vec<String>,
}

/// `harness/supports` result, in the shape `supports()` returns.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SupportsResponse {
    /// Whether the harness can run this route.
    pub supported: bool,
    /// Selection priority among supporting harnesses (higher wins), when supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Why, for logs and `openclaw doctor` (always set when unsupported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
