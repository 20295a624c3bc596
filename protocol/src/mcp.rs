//! Model Context Protocol wire types: the subset of a tools-only MCP *server* the bridge serves to an
//! agent over streamable HTTP (docs/peers/acp.md#host-tools-over-mcp). The agent is the client: it
//! sends `initialize`, `notifications/initialized`, `ping`, `tools/list` and `tools/call`; every other
//! request is answered with "method not found".
//!
//! Decoding is tolerant like the other peers' types: unknown fields are ignored, so a client's
//! capabilities and `_meta` pass unread.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::jsonrpc::RequestId;

/// Method names.
pub mod methods {
    /// Client → server: the handshake.
    pub const INITIALIZE: &str = "initialize";
    /// Client → server notification: the handshake is done.
    pub const INITIALIZED: &str = "notifications/initialized";
    /// Either way: liveness check, answered with `{}`.
    pub const PING: &str = "ping";
    /// Client → server: the tools offered.
    pub const TOOLS_LIST: &str = "tools/list";
    /// Client → server: run one tool.
    pub const TOOLS_CALL: &str = "tools/call";
}

/// The MCP revisions served, newest first. The two ACP agents' MCP clients ask for one of these
/// (claude-agent-acp's TypeScript SDK and codex-acp's `rmcp`); the tools subset served is the same in
/// all of them.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision to answer `initialize` with: the one the client asked for when it is served, else
/// the newest served (the spec's rule: the client then decides whether it can go on).
pub fn negotiate(requested: &str) -> &'static str {
    SUPPORTED_VERSIONS.iter().copied().find(|served| *served == requested).unwrap_or(SUPPORTED_VERSIONS[0])
}

/// One JSON-RPC message a client POSTs: a request when it has an `id`, else a notification.
/// Responses (a client answering a server request) never come, since this server sends none.
#[derive(Debug, Deserialize)]
pub struct ClientMessage {
    /// `"2.0"`; checked by the server.
    #[serde(default)]
    pub jsonrpc: Option<String>,
    /// Present on a request.
    #[serde(default)]
    pub id: Option<RequestId>,
    /// What is asked.
    pub method: String,
    /// Its arguments, kept raw until the method is known.
    #[serde(default)]
    pub params: Option<Box<RawValue>>,
}

/// `initialize` params (what is read of them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// The revision the client speaks.
    #[serde(default)]
    pub protocol_version: String,
}

/// `initialize` result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// See [`negotiate`].
    pub protocol_version: &'static str,
    /// Only `tools` (no list-changed notifications: the list is fixed for the server's life).
    pub capabilities: ServerCapabilities,
    /// Who answers.
    pub server_info: Implementation,
}

/// The server's capabilities.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerCapabilities {
    /// `{}`: tools are offered.
    pub tools: ToolsCapability,
}

/// `capabilities.tools`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolsCapability {
    /// Always `false`.
    pub list_changed: bool,
}

/// `serverInfo`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Implementation {
    /// The server's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// One tool of `tools/list`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool<'a> {
    /// Its name.
    pub name: &'a str,
    /// What it does.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub description: &'a str,
    /// JSON Schema of its arguments, passed on as the host wrote it.
    pub input_schema: &'a RawValue,
}

/// `tools/list` result (one page: the list is small and fixed).
#[derive(Clone, Debug, Serialize)]
pub struct ListToolsResult<'a> {
    /// Every tool.
    pub tools: Vec<Tool<'a>>,
}

/// `tools/call` params.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CallToolParams {
    /// Which tool.
    pub name: String,
    /// Its arguments (an object; absent means none).
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// A piece of a tool's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Standard base64 of its bytes.
        data: String,
        /// E.g. `image/png`.
        mime_type: String,
    },
}

/// `tools/call` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the model sees.
    pub content: Vec<Content>,
    /// The tool failed (the content says why).
    pub is_error: bool,
}

/// ACP's `McpServer`, the one transport the bridge offers: `{type:"http", name, url, headers}`
/// (`session/new`'s `mcpServers[]`; advertised by `agentCapabilities.mcpCapabilities.http`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpServer {
    /// Streamable HTTP.
    Http {
        /// The name the agent knows the server by (it prefixes the tools' names with it).
        name: String,
        /// `http://127.0.0.1:<port>/mcp`.
        url: String,
        /// Sent with every request (the bearer token among them).
        headers: Vec<HttpHeader>,
    },
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // The header values are credentials.
            Self::Http { name, url, headers } => f
                .debug_struct("Http")
                .field("name", name)
                .field("url", url)
                .field("headers", &headers.iter().map(|h| &h.name).collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// One header of [`McpServer::Http`].
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpHeader {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
}

impl std::fmt::Debug for HttpHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The value is a credential.
        f.debug_struct("HttpHeader").field("name", &self.name).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn negotiates_the_asked_revision_when_served() {
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate("2099-01-01"), SUPPORTED_VERSIONS[0]);
    }

    #[test]
    fn http_server_has_acps_shape_and_hides_values_in_debug() {
        let server = McpServer::Http {
            name: "openclaw".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![HttpHeader { name: "Authorization".into(), value: "Bearer secret".into() }],
        };
        assert_eq!(
            serde_json::to_value(&server).unwrap(),
            json!({"type": "http", "name": "openclaw", "url": "http://127.0.0.1:1/mcp",
                   "headers": [{"name": "Authorization", "value": "Bearer secret"}]})
        );
        assert!(!format!("{server:?}").contains("secret"));
    }

    #[test]
    fn content_blocks_have_mcps_shape() {
        let result = CallToolResult {
            content: vec![
                Content::Text { text: "hi".into() },
                Content::Image { data: "AA==".into(), mime_type: "image/png".into() },
            ],
            is_error: true,
        };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"content": [{"type": "text", "text": "hi"},
                               {"type": "image", "data": "AA==", "mimeType": "image/png"}],
                   "isError": true})
        );
    }

    #[test]
    fn client_message_tells_requests_from_notifications() {
        let request: ClientMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#).unwrap();
        assert_eq!(request.id, Some(RequestId::from(7)));
        let notification: ClientMessage =
            serde_json::from_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(notification.id.is_none());
    }
}
