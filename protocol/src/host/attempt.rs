//! `attempt/run` and `attempt/cancel`: one prepared OpenClaw attempt (`runAttempt`) run on a native
//! backend. While it runs the bridge streams `attempt/event` notifications and may send the host
//! requests (`host/*`); the `attempt/run` response is the attempt result and comes last.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::attempt::AttemptResult;
use crate::attempt::hooks::HostToolSpec;

use super::bounded;
use super::limits;

/// `attempt/run` params: the subset of `AgentHarnessAttemptParamsV2` a native backend needs, plus the
/// attempt's routing id.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRunParams {
    /// Chosen by the host, unique among the connection's running attempts; every event, host request
    /// and the cancel for this attempt carry it. Reusing a running id fails with `ATTEMPT_ALREADY_RUNNING`.
    pub attempt_id: String,
    /// Which harness runs it (a `harness/list` id).
    pub harness_id: String,
    /// The OpenClaw session id; the bridge keeps the native thread binding per session.
    pub session_id: String,
    /// The OpenClaw session key (`agent:main:explicit:<sessionId>`), when the host has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The OpenClaw agent id, when the host has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The host's run id; scopes the transcript idempotency keys (`clawbridge:<runId>:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The prepared user prompt.
    pub prompt: String,
    /// Images attached to the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "images")]
    pub images: Vec<ImageInput>,
    /// Extra system prompt text the host prepared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_system_prompt: Option<String>,
    /// OpenClaw's workspace bootstrap files (AGENTS.md, SOUL.md, USER.md, …) rendered as system
    /// guidance (protocol version 3). The native side gets it after `extraSystemPrompt`, but unlike
    /// that it is not part of the session's identity: the files change between turns (a user edits
    /// USER.md, OpenClaw drops BOOTSTRAP.md once set up), and a change must not replace the native
    /// session (Claude Code's next turn sees it; a resumed Codex thread keeps its first files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_context: Option<String>,
    /// The workspace directory.
    pub workspace_dir: String,
    /// The working directory, when it differs from `workspaceDir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The host provider id (stamped on mirrored assistant messages).
    #[serde(default)]
    pub provider: String,
    /// The host model id (stamped on mirrored assistant messages, passed to the backend).
    #[serde(default)]
    pub model_id: String,
    /// The host model's API family (`model.api`), stamped on mirrored assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_api: Option<String>,
    /// The thinking level (`off`, `low`, `medium`, `high`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_level: Option<String>,
    /// The attempt's budget; the bridge interrupts the turn and reports `timeout` when it runs out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Host tools the agent may call through `host/tool/execute` (from `createToolSurface`).
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "host_tools")]
    pub host_tools: Vec<HostToolSpec>,
    /// `disableTools`: the turn runs without tools.
    #[serde(default)]
    pub disable_tools: bool,
    /// `toolsAllow`: when present, only these tools may be offered.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "tools_allow")]
    pub tools_allow: Option<Vec<String>>,
    /// `toolExecutionAllow`: when present, only these tools may run (OpenClaw keeps the other
    /// tools' schemas visible). The native agent's own tool classes outside it are taken away,
    /// exactly as for `toolsAllow`; host tools outside it are refused by the host.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "tool_execution_allow")]
    pub tool_execution_allow: Option<Vec<String>>,
    /// Variables set for the attempt's native processes on top of the bridge's child environment:
    /// the environment OpenClaw prepared for this run (`hostCapabilities.preparedEnvironment()`:
    /// its local process facts, the credential scrub, which sets variables to empty, and the
    /// local identity overlay). Names are environment variable names (`[A-Za-z_][A-Za-z0-9_]*`);
    /// at most 256 variables of at most 32 KiB each, or the attempt fails with `-32034`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", deserialize_with = "process_env")]
    pub process_env: BTreeMap<String, String>,
    /// The endpoint and credentials OpenClaw prepared for the route, sent only for a harness whose
    /// auth is the host's (plugin config `auth`); absent, the native runtime uses its own login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<RouteAuth>,
    /// `sessionPersistence`: a `detached` run may read the session's identity but never writes its
    /// durable state, so the bridge neither resumes nor stores the session's native binding (the
    /// turn runs in a fresh native session that is not kept) and mirrors no transcript rows.
    /// Absent means `durable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_persistence: Option<SessionPersistence>,
    /// `captureRuntimeArtifact`: the result names the runtime artifact that ran the attempt
    /// (`runtimeArtifact`), for core's verified continuations (protocol version 2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capture_runtime_artifact: bool,
    /// `expectedRuntimeArtifact`: the exact runtime artifact that must run the attempt; any other
    /// is refused with `preflightFailed` before a native session is opened (protocol version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_runtime_artifact: Option<super::harness::RuntimeArtifact>,
    /// (protocol version 2) The run is side work of the session (`runIsolatedCompletionV2`,
    /// `runSideQuestion`): it runs in an ephemeral native session the native side never stores
    /// (Codex `thread/start` / `thread/fork` with `ephemeral: true`, Claude Code
    /// `--no-session-persistence`), with no tools at all (no host tools; a backend that cannot take
    /// every native tool away refuses it with `-32034`), and, like a `detached` run, it neither
    /// writes nor replaces the session's binding and mirrors no transcript rows. Absent: an
    /// ordinary attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation: Option<Isolation>,
    /// (protocol version 2) What the host's context engine assembled for this turn
    /// (`assemble-before-prompt`), to be put before the prompt. With an `epoch`
    /// (`thread_bootstrap` projection) it is injected once per epoch: the epoch enters the
    /// session binding's fingerprint (`contextEpoch`), so the native thread is reused while the
    /// epoch holds (the context is not sent again) and a new one is started, with the context,
    /// when it changes. Without an epoch (`per_turn`) it is put before every turn's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<AssembledContext>,
    /// (protocol version 2) The user's MCP servers from OpenClaw's config (`mcp.servers`, with the
    /// bundle's), as the SDK's `loadCodexBundleMcpThreadConfig` projects them: Codex's
    /// `mcp_servers` table, server name → `{command, args, env, cwd}` or `{url, http_headers}`.
    /// Applied to the native runtime (Codex thread config; Claude Code `--mcp-config`); their
    /// hash is part of the session binding's fingerprint. At most 64 servers.
    #[serde(
        default,
        skip_serializing_if = "std::collections::BTreeMap::is_empty",
        deserialize_with = "super::native::mcp_servers"
    )]
    pub mcp_servers: std::collections::BTreeMap<String, serde_json::Value>,
    /// (protocol version 2) The session's OpenClaw transcript before this prompt, on its active
    /// branch (what `readVisibleSessionTranscriptMessageEntries` reads), oldest first. The bridge
    /// compares its last entry with the position the session's binding was made at, and seeds a new
    /// native session with it (docs/host-protocol.md#transcript-history). Absent: an older host, or
    /// nothing to send; the bridge then resumes as before and seeds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<TranscriptHistory>,
    /// (protocol version 3) The context window, in tokens, the operator capped this run's model
    /// to (the host's `contextTokenBudget` when an `authoredContextTokenCap` or a configured model
    /// window set it). Applied to the native runtime where it has a knob (Codex thread config
    /// `model_context_window`, so its auto-compaction works within it); absent: the runtime's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// (protocol version 3) The native runtime reads none of the working directory's project
    /// docs of its own (Codex `project_doc_max_bytes = 0`; Claude Code with its CLAUDE.md and
    /// AGENTS.md loading off), as OpenClaw's bundled Codex harness runs lightweight and tool-less
    /// turns. Absent or false: it reads them as it always does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_native_project_docs: bool,
}

/// `isolation` of a side-work run: where its ephemeral native session starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Isolation {
    /// A fresh native session that knows nothing of the host session (isolated completions:
    /// session titles, labels, narration).
    Fresh,
    /// An ephemeral copy of the session's bound native thread, so the model sees the
    /// conversation so far (side questions); the session's own thread is left as it was. A
    /// session with no usable binding runs fresh.
    Fork,
    /// (protocol version 3) The final answer of a settled tool turn (`finalizeSettledTurn`): a
    /// fresh native session, tool-less as `fresh`, whose prompt is seeded with the run's
    /// `history` (the session's transcript, with the turn's settled tool calls and results), so
    /// the model sees the completed work and has nothing to repeat it with. Not a copy of the
    /// native thread: a Codex `thread/fork` keeps the source thread's tools. A run without history
    /// entries is refused with `preflightFailed`.
    Settle,
}

/// The context engine's assembled context for one turn (`attempt/run` `context`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssembledContext {
    /// The assembled context as text (the plugin renders the engine's messages and its
    /// `systemPromptAddition`); put before the prompt, separated by a blank line.
    pub text: String,
    /// The `thread_bootstrap` epoch; absent for `per_turn` projection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
}

/// (protocol version 2) `attempt/run`'s `history`: the transcript entries the host kept, newest
/// last, within [`limits::MAX_HISTORY_BYTES`] of text (the host drops the oldest entries to fit
/// and counts them in `omitted`; a bridge refuses more with `-32602`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptHistory {
    /// The entries, oldest first; at most [`limits::MAX_HISTORY_ENTRIES`] (refused at decode).
    #[serde(default, deserialize_with = "history_entries")]
    pub entries: Vec<HistoryEntry>,
    /// How many older entries the host left out to stay within the byte cap.
    #[serde(default)]
    pub omitted: u32,
}

impl TranscriptHistory {
    /// The bytes of text the entries hold (what [`limits::MAX_HISTORY_BYTES`] caps).
    pub fn text_bytes(&self) -> usize {
        self.entries.iter().map(|e| e.role.len() + e.text.len() + e.key.as_ref().map_or(0, String::len)).sum()
    }
}

/// One transcript entry of [`TranscriptHistory`], flattened to text by the host.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// `user`, `assistant`, `toolResult`, … as the transcript has it.
    pub role: String,
    /// The entry's visible text (tool calls and results as short text lines).
    #[serde(default)]
    pub text: String,
    /// The row's idempotency key, when it has one (`clawbridge:<runId>:…` for rows this bridge
    /// mirrored): how the bridge recognises its own last row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

/// What an entry shows in a log: its role and size, never the conversation's text.
impl std::fmt::Debug for HistoryEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryEntry")
            .field("role", &self.role)
            .field("text_bytes", &self.text.len())
            .field("key", &self.key)
            .finish()
    }
}

/// (protocol version 2) `attempt/run`'s result `projection`: the attempt ran in a new native session
/// seeded with the transcript history instead of resuming, and why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectionNotice {
    /// Why the session's native thread was not resumed (a person-readable sentence).
    pub reason: String,
    /// How many transcript entries the new native session was seeded with.
    pub entries: u32,
    /// How many older entries were left out (by the host's byte cap).
    #[serde(default)]
    pub omitted: u32,
}

fn history_entries<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<HistoryEntry>, D::Error> {
    bounded::seq(d, "history.entries", limits::MAX_HISTORY_ENTRIES)
}

// Each list and map the host sends is counted while it is decoded (docs/host-protocol.md#limits).
fn images<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<ImageInput>, D::Error> {
    bounded::seq(d, "images", limits::MAX_IMAGES)
}

fn host_tools<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<HostToolSpec>, D::Error> {
    bounded::seq(d, "hostTools", limits::MAX_HOST_TOOLS)
}

fn tools_allow<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    bounded::option_seq(d, "toolsAllow", limits::MAX_TOOL_NAMES)
}

fn tool_execution_allow<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    bounded::option_seq(d, "toolExecutionAllow", limits::MAX_TOOL_NAMES)
}

fn process_env<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    bounded::map(d, "processEnv", limits::MAX_PROCESS_ENV_ENTRIES)
}

fn auth_headers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    bounded::map(d, "auth.headers", limits::MAX_AUTH_HEADERS)
}

/// What an attempt's params show in a log: their shape, never the prompt's text, the images, or the
/// values of the environment the host prepared (they may hold credentials).
impl std::fmt::Debug for AttemptRunParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptRunParams")
            .field("attempt_id", &self.attempt_id)
            .field("harness_id", &self.harness_id)
            .field("session_id", &self.session_id)
            .field("session_key", &self.session_key)
            .field("run_id", &self.run_id)
            .field("prompt_bytes", &self.prompt.len())
            .field("images", &self.images.len())
            .field("workspace_dir", &self.workspace_dir)
            .field("cwd", &self.cwd)
            .field("provider", &self.provider)
            .field("model_id", &self.model_id)
            .field("think_level", &self.think_level)
            .field("timeout_ms", &self.timeout_ms)
            .field("host_tools", &self.host_tools.len())
            .field("disable_tools", &self.disable_tools)
            .field("tools_allow", &self.tools_allow)
            .field("tool_execution_allow", &self.tool_execution_allow)
            .field("process_env", &self.process_env.keys().collect::<Vec<_>>())
            .field("auth", &self.auth)
            .field("session_persistence", &self.session_persistence)
            .field("capture_runtime_artifact", &self.capture_runtime_artifact)
            .field("expected_runtime_artifact", &self.expected_runtime_artifact)
            .field("isolation", &self.isolation)
            .field("context_bytes", &self.context.as_ref().map(|c| c.text.len()))
            .field("mcp_servers", &self.mcp_servers.keys().collect::<Vec<_>>())
            .field("history_entries", &self.history.as_ref().map(|h| h.entries.len()))
            .field("context_window", &self.context_window)
            .field("skip_native_project_docs", &self.skip_native_project_docs)
            .finish_non_exhaustive()
    }
}

/// `sessionPersistence` of the host's run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SessionPersistence {
    /// The run writes the session's durable transcript and state (the default).
    #[default]
    Durable,
    /// The run writes nothing durable for the session.
    Detached,
}

impl AttemptRunParams {
    /// The bytes of input this attempt holds while it runs, as decoded (what the bridge's input
    /// budget charges it): its text members, images, prepared environment, tool lists and host
    /// tool specs. Unknown members of the request are not here: they were never kept.
    pub fn input_bytes(&self) -> usize {
        use std::mem::size_of;
        // Every element costs its own size besides its text (an empty name is still a `String`);
        // a map entry about three words more for its node's share.
        const MAP_ENTRY: usize = 2 * size_of::<String>() + 3 * size_of::<usize>();
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let names = |list: &Option<Vec<String>>| {
            list.as_ref().map_or(0, |l| l.iter().map(|name| size_of::<String>() + name.len()).sum())
        };
        let ids = self.attempt_id.len()
            + self.harness_id.len()
            + self.session_id.len()
            + text(&self.session_key)
            + text(&self.agent_id)
            + text(&self.run_id)
            + text(&self.model_api)
            + text(&self.think_level)
            + text(&self.cwd)
            + self.workspace_dir.len()
            + self.provider.len()
            + self.model_id.len();
        let images: usize =
            self.images.iter().map(|i| size_of::<ImageInput>() + i.data.len() + i.mime_type.len()).sum();
        let env: usize = self.process_env.iter().map(|(k, v)| MAP_ENTRY + k.len() + v.len()).sum();
        let auth = self.auth.as_ref().map_or(0, |a| {
            text(&a.base_url)
                + text(&a.api_key)
                + a.headers.iter().map(|(k, v)| MAP_ENTRY + k.len() + v.len()).sum::<usize>()
        });
        let tools: usize = self
            .host_tools
            .iter()
            .map(|t| size_of::<HostToolSpec>() + t.name.len() + t.description.len() + t.schema_bytes())
            .sum();
        ids + self.prompt.len()
            + text(&self.extra_system_prompt)
            + text(&self.bootstrap_context)
            + self.context.as_ref().map_or(0, |c| c.text.len() + text(&c.epoch))
            + images
            + env
            + auth
            + tools
            + names(&self.tools_allow)
            + names(&self.tool_execution_allow)
            + self
                .history
                .as_ref()
                .map_or(0, |h| h.text_bytes() + h.entries.len() * (size_of::<HistoryEntry>() + size_of::<String>()))
    }

    /// Whether the run must leave the session's durable state untouched.
    pub fn is_detached(&self) -> bool {
        self.session_persistence == Some(SessionPersistence::Detached) || self.isolation.is_some()
    }
}

/// The route's endpoint and credentials as OpenClaw prepared them (`model.baseUrl`,
/// `model.headers`, the resolved API key). The backend passes them to the native process through
/// its environment only; they are never logged, never written to the state dir, and enter the
/// session's auth fingerprint as a hash.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteAuth {
    /// The provider endpoint (`model.baseUrl`), as OpenClaw would call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key OpenClaw resolved for the route (secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Request headers the route adds (`model.headers`; values may be secret).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty", deserialize_with = "auth_headers")]
    pub headers: std::collections::BTreeMap<String, String>,
}

impl RouteAuth {
    /// A stable, non-reversible name of these credentials for the auth fingerprint: a change of
    /// endpoint, key or header makes an earlier native session unfit to continue.
    pub fn fingerprint_material(&self) -> String {
        serde_json::json!({"baseUrl": self.base_url, "apiKey": self.api_key, "headers": self.headers}).to_string()
    }
}

impl std::fmt::Debug for RouteAuth {
    // Attempt params are logged at debug level: the key and header values must never be.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteAuth")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// An image attached to the prompt, in the host's `{type:"image", data, mimeType}` shape minus `type`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageInput {
    /// Base64 image bytes.
    pub data: String,
    /// E.g. `image/png`.
    pub mime_type: String,
}

/// `attempt/run` result: the attempt result plus transcript ownership; the plugin maps it onto
/// `AgentHarnessAttemptResult`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptRunResponse {
    /// The attempt this is the result of.
    pub attempt_id: String,
    /// The result itself; its fields sit beside `attemptId` on the wire.
    #[serde(flatten)]
    pub result: AttemptResult,
    /// Whether the bridge mirrored the assistant and tool rows itself (`assistantTranscriptOwned`);
    /// every append was acknowledged before this result was sent.
    #[serde(default)]
    pub transcript_owned: bool,
    /// The idempotency key of the final assistant row (`assistantTranscriptIdempotencyKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_idempotency_key: Option<String>,
    /// The attempt's budget ran out while a tool call was running (started, no terminal yet): the
    /// host's `timeout.phase` is then `tool_execution`, not `prompt`. Only ever true for a `timeout`
    /// whose cause is `runBudget`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tool_running_at_timeout: bool,
    /// The runtime artifact that ran the attempt, when `captureRuntimeArtifact` asked for it
    /// (protocol version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_artifact: Option<super::harness::RuntimeArtifact>,
    /// (protocol version 2) Set when the attempt did not resume the session's native thread and
    /// seeded a new one with `history` instead: the host tells the user why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<ProjectionNotice>,
}

/// `attempt/cancel` params: interrupt a running attempt (the host's `abortSignal` fired).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptCancelParams {
    /// The attempt to cancel.
    pub attempt_id: String,
    /// Why, for logs and the terminal message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `attempt/cancel` result. Cancelling is idempotent and never an error: the attempt may have finished
/// while the cancel was on the wire, which is a normal race, not a host bug.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptCancelResponse {
    /// What the cancel found.
    pub status: CancelStatus,
}

/// What an `attempt/cancel` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum CancelStatus {
    /// The attempt was running and is being interrupted; its `attempt/run` result (terminal
    /// `aborted`) follows.
    Cancelling,
    /// No attempt with that id is running (finished, or never started); nothing was done.
    NotRunning,
    /// A status this build does not know.
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// `attempt/steer` params: more user input for a running attempt's native turn (the host's active-run
/// injection, `messageInjectionV2.queueMessage`). Codex takes it into the running turn
/// (`turn/steer`); a harness without steering answers `unsupported`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptSteerParams {
    /// The running attempt.
    pub attempt_id: String,
    /// The text to add (at most 1 MiB).
    pub text: String,
}

/// `attempt/steer` result. Like a cancel it is never an error for a normal race: the attempt may
/// have ended, or its turn not yet started, while the request was on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptSteerResponse {
    /// What became of the input.
    pub status: SteerStatus,
    /// Why it was not taken, for logs and the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What an `attempt/steer` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum SteerStatus {
    /// The running native turn took the input.
    Accepted,
    /// No attempt with that id is running; nothing was done.
    NotRunning,
    /// The attempt runs but its native turn has not started (or already ended); try again or queue
    /// the input for the next turn.
    NotReady,
    /// The harness cannot add input to a running turn.
    Unsupported,
    /// The native side refused it (its turn moved on, the input was too large); `message` says why.
    Rejected,
    /// A status this build does not know.
    // Listed for readers, not senders: nothing sends it, so the schema leaves it out.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}
