use std::sync::Mutex;

use futures::future::BoxFuture;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;
use clawbridge_protocol::event::ToolImage;

/// Records calls; `echo` answers with its arguments, `slow` never answers, `pic` returns an image.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<HostToolCall>>,
}

impl HostTools for Recorder {
    fn specs(&self) -> Vec<HostToolSpec> {
        ["echo", "slow", "pic"]
            .iter()
            .map(|name| HostToolSpec::new(*name, "a test tool", &json!({"type": "object"})))
            .collect()
    }

    fn call(&self, call: HostToolCall) -> BoxFuture<'static, Result<HostToolOutput, String>> {
        self.calls.lock().unwrap().push(call.clone());
        Box::pin(async move {
            match call.tool_name.as_str() {
                "echo" => Ok(HostToolOutput { text: call.arguments.to_string(), ..HostToolOutput::default() }),
                "pic" => Ok(HostToolOutput {
                    text: String::new(),
                    is_error: false,
                    images: vec![ToolImage { data: "AA==".into(), mime_type: "image/png".into() }],
                }),
                _ => std::future::pending().await,
            }
        })
    }
}

const LIMITS: McpLimits = McpLimits { max_body_bytes: 4096, tool_timeout: Duration::from_millis(200) };

async fn server() -> (McpServerHandle, Arc<Recorder>, CancellationToken) {
    let tools = Arc::new(Recorder::default());
    let parent = CancellationToken::new();
    let handle = start(tools.clone(), LIMITS, &parent).await.unwrap();
    (handle, tools, parent)
}

/// One HTTP/1.1 exchange over a raw socket: the status and the body.
async fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("{head}Host: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(request.as_bytes()).await.unwrap();
    // The server may answer 413 before reading the body and close: a failed write is fine then.
    let _ = stream.write_all(body).await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    let body = answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default();
    (status, body)
}

async fn post(handle: &McpServerHandle, body: &Value) -> (u16, Value) {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nAuthorization: {}\r\nContent-Type: application/json\r\n",
        handle.authorization()
    );
    let (status, body) = exchange(handle.addr(), &head, body.to_string().as_bytes()).await;
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn initialize_answers_the_asked_revision_and_offers_the_tools() {
    let (handle, _, _) = server().await;
    for version in ["2025-06-18", "2025-03-26"] {
        let (status, body) = post(
            &handle,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(body["id"], 1);
        assert_eq!(body["result"]["protocolVersion"], version);
        assert!(body["result"]["capabilities"]["tools"].is_object());
    }
    let (status, _) = exchange(
        handle.addr(),
        &format!("POST /mcp HTTP/1.1\r\nAuthorization: {}\r\n", handle.authorization()),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(status, 202);
    let (_, body) = post(&handle, &json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})).await;
    assert_eq!(body, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    let (_, body) = post(&handle, &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let names: Vec<_> = body["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("echo"), json!("slow"), json!("pic")]);
    assert_eq!(body["result"]["tools"][0]["inputSchema"], json!({"type": "object"}));
    let (_, body) = post(&handle, &json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"})).await;
    assert_eq!(body["error"]["code"], codes::METHOD_NOT_FOUND);
    handle.shutdown().await;
}

#[tokio::test]
async fn a_call_runs_the_host_tool_once_with_the_arguments() {
    let (handle, tools, _) = server().await;
    let (status, body) = post(
        &handle,
        &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo", "arguments": {"q": "x"}}}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"], json!({"content": [{"type": "text", "text": "{\"q\":\"x\"}"}], "isError": false}));
    let calls = tools.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].arguments, json!({"q": "x"}));
    let (_, body) =
        post(&handle, &json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "pic"}})).await;
    assert_eq!(body["result"]["content"], json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]));
    let (_, body) =
        post(&handle, &json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": "nope"}})).await;
    assert_eq!(body["error"]["code"], codes::INVALID_PARAMS);
    assert_eq!(tools.calls.lock().unwrap().len(), 2, "an unknown tool never reaches the host");
}

#[tokio::test]
async fn a_call_past_the_deadline_is_a_failed_result() {
    let (handle, _, _) = server().await;
    let (status, body) =
        post(&handle, &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}})).await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["isError"], true);
    assert!(body["result"]["content"][0]["text"].as_str().unwrap().contains("no result within"));
}

#[tokio::test]
async fn wrong_or_missing_token_foreign_origin_get_and_big_bodies_are_refused() {
    let (handle, tools, _) = server().await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}).to_string();
    let addr = handle.addr();
    assert_eq!(exchange(addr, "POST /mcp HTTP/1.1\r\n", call.as_bytes()).await.0, 401);
    assert_eq!(exchange(addr, "POST /mcp HTTP/1.1\r\nAuthorization: Bearer 00\r\n", call.as_bytes()).await.0, 401);
    let auth = handle.authorization();
    let foreign = format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\nOrigin: http://evil.example\r\n");
    assert_eq!(exchange(addr, &foreign, call.as_bytes()).await.0, 403);
    let own = format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\nOrigin: http://127.0.0.1:{}\r\n", addr.port());
    assert_eq!(exchange(addr, &own, call.as_bytes()).await.0, 200);
    assert_eq!(exchange(addr, &format!("GET /mcp HTTP/1.1\r\nAuthorization: {auth}\r\n"), b"").await.0, 405);
    let big = vec![b' '; LIMITS.max_body_bytes + 1];
    assert_eq!(exchange(addr, &format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\n"), &big).await.0, 413);
    assert_eq!(exchange(addr, &format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\n"), b"{nope").await.0, 400);
    assert_eq!(tools.calls.lock().unwrap().len(), 1, "only the authorised call ran");
}

#[tokio::test]
async fn shutdown_and_the_parent_token_close_the_listener() {
    let (handle, _, parent) = server().await;
    let addr = handle.addr();
    parent.cancel();
    handle.shutdown().await;
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is gone");
}

#[test]
fn the_acp_description_carries_the_token_as_a_bearer_header() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (handle, _, _) = server().await;
        let McpServer::Http { name, url, headers } = handle.acp_server("openclaw") else { unreachable!() };
        assert_eq!(name, "openclaw");
        assert_eq!(url, format!("http://127.0.0.1:{}/mcp", handle.addr().port()));
        assert_eq!(headers[0].name, "Authorization");
        assert_eq!(headers[0].value, handle.authorization());
        assert_eq!(handle.authorization().len(), "Bearer ".len() + 64);
    });
}
