//! Work on the native side outside an attempt (protocol version 2): the native runtime's model
//! catalog (`catalog/models`), the MCP tools of a session's native thread (`catalog/mcpTools`) and
//! compacting a session's bound native thread (`session/compact`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `catalog/models` params: the models a harness's native runtime offers (the host's
/// `loadModelCatalog`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogModelsParams {
    /// The harness whose native runtime is asked.
    pub harness_id: String,
}

/// `catalog/models` result.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogModelsResponse {
    /// The models, in the native runtime's own order (its default first when it says which).
    pub models: Vec<NativeModel>,
    /// Where the list comes from, for a person: `codex model/list`, or why there is none.
    pub source: String,
}

/// One model of a native runtime's catalog.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NativeModel {
    /// The id the native runtime selects it by (what `attempt/run` `modelId` names).
    pub id: String,
    /// What a person reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The native runtime's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The native runtime's default model.
    #[serde(default)]
    pub is_default: bool,
    /// Hidden from the native runtime's own picker.
    #[serde(default)]
    pub hidden: bool,
    /// Input kinds it takes (`text`, `image`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input: Vec<String>,
    /// Reasoning efforts it supports; empty when it has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_efforts: Vec<String>,
}

/// `session/compact` params: compact the native thread bound to an OpenClaw session (the host's
/// `compact(params)`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactParams {
    /// The harness the session runs on.
    pub harness_id: String,
    /// The session whose bound native thread is compacted.
    pub session_id: String,
    /// The working directory the native thread runs in (`cwd`, else the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The model the session runs on, when the host names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    /// Why the host compacts (`manual`, `overflow`, `budget`), for logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
}

/// `session/compact` result. Not compacting (no bound thread, a backend without a compactor) is
/// an answer, not an error: `compacted` is false and `reason` says why.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompactResponse {
    /// Whether the native compactor ran to its end.
    pub compacted: bool,
    /// Why it did not, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The native thread or session that was compacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_session_id: Option<String>,
    /// The context's size before, in tokens, when the native side reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// The context's size after, in tokens, when the native side reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// The native side's id of the compaction (Codex's `contextCompaction` item, Claude Code's
    /// `compact_boundary` line), when it gave one: the key of the host's transcript entry for it
    /// (protocol version 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
}

/// The most MCP servers an attempt names ([`super::AttemptRunParams::mcp_servers`]).
pub const MAX_MCP_SERVERS: usize = 64;

/// Reads `mcpServers`: an object of at most [`MAX_MCP_SERVERS`] members, each an object.
pub(super) fn mcp_servers<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<std::collections::BTreeMap<String, serde_json::Value>, D::Error> {
    struct Servers;
    impl<'de> serde::de::Visitor<'de> for Servers {
        type Value = std::collections::BTreeMap<String, serde_json::Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "an object of at most {MAX_MCP_SERVERS} server objects")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
            let mut out = std::collections::BTreeMap::new();
            while let Some((name, server)) = access.next_entry::<String, serde_json::Value>()? {
                if out.len() == MAX_MCP_SERVERS {
                    return Err(serde::de::Error::custom(format!(
                        "`mcpServers` has more than {MAX_MCP_SERVERS} servers"
                    )));
                }
                if !server.is_object() {
                    return Err(serde::de::Error::custom(format!("`mcpServers.{name}` is not an object")));
                }
                out.insert(name, server);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Servers)
}

/// `catalog/mcpTools` params: the MCP tools the native runtime of a session's bound native thread
/// offers (the host's `loadMcpToolCatalog`), with the user's MCP servers as an attempt sends them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogMcpToolsParams {
    /// The harness the session runs on.
    pub harness_id: String,
    /// The session whose bound native thread is asked.
    pub session_id: String,
    /// The working directory the native thread runs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The user's MCP servers, as `attempt/run` `mcpServers`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty", deserialize_with = "mcp_servers")]
    pub mcp_servers: std::collections::BTreeMap<String, serde_json::Value>,
}

/// `catalog/mcpTools` result. No bound native thread, a busy session or a harness without a
/// native MCP client is an answer with no servers and a `reason`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogMcpToolsResponse {
    /// The native thread whose MCP connections were listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_session_id: Option<String>,
    /// Each MCP server the native runtime knows, in its order.
    pub servers: Vec<NativeMcpServer>,
    /// Why nothing was listed, when nothing was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One MCP server as the native runtime reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NativeMcpServer {
    /// The server's name (the key of `mcpServers`).
    pub name: String,
    /// The native runtime's connection state (`connected`, `failed`, …), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why its tools could not be listed, when they could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its tools.
    #[serde(default)]
    pub tools: Vec<NativeMcpTool>,
}

/// One tool of an MCP server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NativeMcpTool {
    /// The tool's name on its server.
    pub name: String,
    /// Its title, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its input schema, as the server gave it.
    #[serde(default)]
    pub input_schema: serde_json::Value,
}
