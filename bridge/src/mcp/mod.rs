//! A loopback MCP server offering an attempt's host tools to an agent that speaks MCP
//! (docs/peers/acp.md#host-tools-over-mcp): streamable HTTP on `127.0.0.1:0`, JSON answers only
//! (no SSE stream: nothing here is pushed to the client), generic over [`HostTools`] so any backend
//! whose agent accepts an MCP server can lend it the same tools.
//!
//! Only the agent this bridge started may use it: every request must carry the server's random
//! bearer token (compared in constant time), a browser page cannot reach it through DNS rebinding
//! (a foreign `Origin` is refused), bodies are capped, and each call runs under the attempt's
//! host-tool deadline. The server and every connection task stop when [`McpServerHandle`] is shut
//! down or dropped.

#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use clawbridge_protocol::jsonrpc::{ErrorObject, RequestId, codes};
use clawbridge_protocol::mcp::{
    CallToolParams, CallToolResult, ClientMessage, Content, HttpHeader, Implementation, InitializeParams,
    InitializeResult, ListToolsResult, McpServer, ServerCapabilities, Tool, methods, negotiate,
};
use http::{HeaderMap, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::attempt::hooks::{HostToolCall, HostToolOutput, HostToolSpec, HostTools};

/// The path served.
const PATH: &str = "/mcp";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpServerError {
    /// No loopback port could be bound.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[source] std::io::Error),
    /// The OS gave no randomness for the token.
    #[error("no randomness for the MCP server's token: {0}")]
    NoRandomness(#[source] getrandom::Error),
}

/// What bounds the server.
#[derive(Clone, Copy, Debug)]
pub struct McpLimits {
    /// The largest request body read (bigger → 413).
    pub max_body_bytes: usize,
    /// How long one `tools/call` may take before the model gets a failed result.
    pub tool_timeout: Duration,
}

/// A running server. Dropping it stops the server too; [`McpServerHandle::shutdown`] also waits for
/// every connection task to end.
#[derive(Debug)]
pub struct McpServerHandle {
    addr: SocketAddr,
    token: String,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl McpServerHandle {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.addr)
    }

    /// The `Authorization` header value the client must send.
    pub fn authorization(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// ACP's description of this server, under `name`.
    pub fn acp_server(&self, name: &str) -> McpServer {
        McpServer::Http {
            name: name.to_owned(),
            url: self.url(),
            headers: vec![HttpHeader { name: "Authorization".to_owned(), value: self.authorization() }],
        }
    }

    /// Stops accepting, ends every connection (a running tool call is dropped) and waits for them.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}

impl Drop for McpServerHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
        self.tracker.close();
    }
}

/// State shared by every connection.
struct Shared {
    tools: Arc<dyn HostTools>,
    specs: Vec<HostToolSpec>,
    token: String,
    port: u16,
    limits: McpLimits,
    calls: AtomicU64,
}

/// Starts a server for `tools` (their specs are read once: the list is fixed for the server's life),
/// stopped when `parent` is cancelled or the handle goes.
pub async fn start(
    tools: Arc<dyn HostTools>,
    limits: McpLimits,
    parent: &CancellationToken,
) -> Result<McpServerHandle, McpServerError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(McpServerError::NoRandomness)?;
    let token: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.map_err(McpServerError::Bind)?;
    let addr = listener.local_addr().map_err(McpServerError::Bind)?;
    let cancel = parent.child_token();
    let tracker = TaskTracker::new();
    let shared = Arc::new(Shared {
        specs: tools.specs(),
        tools,
        token: token.clone(),
        port: addr.port(),
        limits,
        calls: AtomicU64::new(0),
    });
    tracker.spawn(accept(listener, shared, cancel.clone(), tracker.clone()));
    Ok(McpServerHandle { addr, token, cancel, tracker })
}

async fn accept(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken, tracker: TaskTracker) {
    loop {
        let stream = tokio::select! {
            () = cancel.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors and the like: back off rather than spin.
                    tracing::warn!(%error, "MCP server: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        let cancel = cancel.clone();
        tracker.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(serve(&shared, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                () = cancel.cancelled() => {}
                result = connection => if let Err(error) = result {
                    tracing::debug!(%error, "MCP server: connection ended with an error");
                },
            }
        });
    }
}

fn plain(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn json(status: StatusCode, body: &impl Serialize) -> Response<Full<Bytes>> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}

/// A JSON-RPC answer.
#[derive(Serialize)]
struct Answer<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject>,
}

fn answer(id: &RequestId, outcome: Result<Value, ErrorObject>) -> Response<Full<Bytes>> {
    let (result, error) = match outcome {
        Ok(value) => (Some(value), None),
        Err(error) => (None, Some(error)),
    };
    json(StatusCode::OK, &Answer { jsonrpc: "2.0", id, result, error })
}

fn bad_request(code: i64, message: &str) -> Response<Full<Bytes>> {
    json(
        StatusCode::BAD_REQUEST,
        &Answer::<Value> {
            jsonrpc: "2.0",
            id: &RequestId::Null,
            result: None,
            error: Some(ErrorObject::new(code, message)),
        },
    )
}

/// A browser sends `Origin`; an agent's HTTP client does not. One that is present must be this
/// server itself on loopback, else a page that rebound a name to 127.0.0.1 could post here.
fn origin_allowed(headers: &HeaderMap, port: u16) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let Ok(origin) = origin.to_str() else { return false };
    ["127.0.0.1", "localhost", "[::1]"].iter().any(|host| origin == format!("http://{host}:{port}"))
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let expected = format!("Bearer {token}");
    headers.get(header::AUTHORIZATION).is_some_and(|value| bool::from(value.as_bytes().ct_eq(expected.as_bytes())))
}

async fn serve(shared: &Shared, request: http::Request<Incoming>) -> Response<Full<Bytes>> {
    if !origin_allowed(request.headers(), shared.port) {
        return plain(StatusCode::FORBIDDEN);
    }
    if !authorized(request.headers(), &shared.token) {
        let mut response = plain(StatusCode::UNAUTHORIZED);
        response.headers_mut().insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
        return response;
    }
    if request.uri().path() != PATH {
        return plain(StatusCode::NOT_FOUND);
    }
    if request.method() != Method::POST {
        // No server-initiated stream (GET) and no sessions to end (DELETE): the spec's 405.
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED);
        response.headers_mut().insert(header::ALLOW, http::HeaderValue::from_static("POST"));
        return response;
    }
    let cap = shared.limits.max_body_bytes;
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > cap as u64) {
        return plain(StatusCode::PAYLOAD_TOO_LARGE);
    }
    let body = match Limited::new(request.into_body(), cap).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => return plain(StatusCode::PAYLOAD_TOO_LARGE),
        Err(_) => return plain(StatusCode::BAD_REQUEST),
    };
    let message: ClientMessage = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(error) if error.is_data() => return bad_request(codes::INVALID_REQUEST, "not a JSON-RPC request"),
        Err(_) => return bad_request(codes::PARSE_ERROR, "not JSON"),
    };
    if message.jsonrpc.as_deref() != Some("2.0") {
        return bad_request(codes::INVALID_REQUEST, "`jsonrpc` must be \"2.0\"");
    }
    let Some(id) = message.id else {
        // `notifications/initialized`, `notifications/cancelled` … nothing to answer.
        return plain(StatusCode::ACCEPTED);
    };
    let outcome = handle(shared, &message.method, message.params.as_deref()).await;
    answer(&id, outcome)
}

async fn handle(
    shared: &Shared,
    method: &str,
    params: Option<&serde_json::value::RawValue>,
) -> Result<Value, ErrorObject> {
    fn params_of<T: serde::de::DeserializeOwned + Default>(
        params: Option<&serde_json::value::RawValue>,
    ) -> Result<T, ErrorObject> {
        params.map_or_else(
            || Ok(T::default()),
            |raw| serde_json::from_str(raw.get()).map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string())),
        )
    }
    match method {
        methods::INITIALIZE => {
            let params: InitializeParams = params_of(params)?;
            Ok(to_value(&InitializeResult {
                protocol_version: negotiate(&params.protocol_version),
                capabilities: ServerCapabilities::default(),
                server_info: Implementation {
                    name: "clawbridge".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                },
            }))
        }
        methods::PING => Ok(Value::Object(serde_json::Map::new())),
        methods::TOOLS_LIST => Ok(to_value(&ListToolsResult {
            tools: shared
                .specs
                .iter()
                .map(|spec| Tool { name: &spec.name, description: &spec.description, input_schema: &spec.input_schema })
                .collect(),
        })),
        methods::TOOLS_CALL => {
            let Some(raw) = params else {
                return Err(ErrorObject::new(codes::INVALID_PARAMS, "`tools/call` needs params"));
            };
            let params: CallToolParams =
                serde_json::from_str(raw.get()).map_err(|e| ErrorObject::new(codes::INVALID_PARAMS, e.to_string()))?;
            if !shared.specs.iter().any(|spec| spec.name == params.name) {
                return Err(ErrorObject::new(codes::INVALID_PARAMS, format!("no tool named `{}`", params.name)));
            }
            Ok(to_value(&call(shared, params).await))
        }
        other => Err(ErrorObject::new(codes::METHOD_NOT_FOUND, format!("`{other}` is not served"))),
    }
}

async fn call(shared: &Shared, params: CallToolParams) -> CallToolResult {
    let number = shared.calls.fetch_add(1, Ordering::Relaxed);
    let name = params.name;
    let call = HostToolCall {
        call_id: format!("mcp-{number}"),
        tool_name: name.clone(),
        arguments: params.arguments.unwrap_or_else(|| Value::Object(serde_json::Map::new())),
    };
    let limit = shared.limits.tool_timeout;
    match tokio::time::timeout(limit, shared.tools.call(call)).await {
        Ok(Ok(output)) => tool_result(output),
        Ok(Err(error)) => failure(error),
        Err(_) => failure(format!("`{name}` gave no result within {limit:?}")),
    }
}

fn failure(text: String) -> CallToolResult {
    CallToolResult { content: vec![Content::Text { text }], is_error: true }
}

/// The host's output as MCP content: its text, then its images.
fn tool_result(output: HostToolOutput) -> CallToolResult {
    let mut content = Vec::with_capacity(1 + output.images.len());
    if !output.text.is_empty() || output.images.is_empty() {
        content.push(Content::Text { text: output.text });
    }
    content
        .extend(output.images.into_iter().map(|image| Content::Image { data: image.data, mime_type: image.mime_type }));
    CallToolResult { content, is_error: output.is_error }
}

/// An answer as a `Value` (serialising these types cannot fail: their keys are strings).
fn to_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}
