//! One cheap HTTP request to a model endpoint, to tell "unreachable" from "refuses the key" from
//! "answers": plain `http://` only (loopback proxies, local gateways, the mock model). The bridge
//! carries no TLS stack, so an `https://` endpoint is reported as not probed rather than guessed at.

use std::time::Duration;

use bytes::Bytes;
pub use http::Method;
use http::Uri;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;

/// The most of an answer's body kept: enough for an API's error message.
const MAX_BODY_BYTES: usize = 4 << 10;

/// Why no HTTP answer came back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The URL does not parse.
    #[error("{url} is not a URL: {source}")]
    BadUrl {
        /// The URL as configured, without credentials ([`display_url`]).
        url: String,
        /// Why it does not parse.
        #[source]
        source: http::uri::InvalidUri,
    },
    /// The URL is not plain `http://` with a host (TLS is not probed).
    #[error("{url} is not probed: {why}")]
    Unsupported {
        /// The URL as configured, without credentials ([`display_url`]).
        url: String,
        /// What about it this probe cannot do.
        why: &'static str,
    },
    /// No TCP connection could be made.
    #[error("cannot connect to {address}: {source}")]
    Connect {
        /// `host:port`.
        address: String,
        /// The socket error (refused, no route, unknown host).
        #[source]
        source: std::io::Error,
    },
    /// The request could not be built (a header value that is not one).
    #[error("the request could not be built: {0}")]
    Request(#[source] http::Error),
    /// The connection broke before an answer.
    #[error("no HTTP answer: {0}")]
    Http(#[source] hyper::Error),
    /// Nothing came back in time.
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
}

/// One request to make.
#[derive(Clone)]
pub struct EndpointRequest {
    /// `GET` or `POST`.
    pub method: http::Method,
    /// The full URL.
    pub url: String,
    /// Header names and values (credentials among them: never shown by `Debug`).
    pub headers: Vec<(String, String)>,
    /// The body, for a `POST`.
    pub body: Option<Vec<u8>>,
}

impl std::fmt::Debug for EndpointRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field("headers", &self.headers.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// What the endpoint answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The start of the body (at most [`MAX_BODY_BYTES`]), lossily decoded.
    pub body: String,
}

impl EndpointAnswer {
    /// The API's own error message, when the body is `{"error": {"message": …}}` (the OpenAI and
    /// Anthropic shapes both), else `None`.
    pub fn error_message(&self) -> Option<String> {
        let value: serde_json::Value = serde_json::from_str(&self.body).ok()?;
        let error = value.get("error")?;
        let message = error.get("message").and_then(serde_json::Value::as_str).or_else(|| error.as_str())?;
        Some(message.to_owned())
    }
}

/// `url` fit to print: without its userinfo (`user:password@`) and its query and fragment, which
/// may carry credentials (`?key=…`).
pub fn display_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if scheme.is_empty() { format!("{host}{path}") } else { format!("{scheme}://{host}{path}") }
}

/// `base` (an API base URL as users configure it) with `path` appended, one `/` between them.
pub fn join(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// Makes `request`, all of it (connect, send, the start of the body) within `limit`.
pub async fn ask(request: &EndpointRequest, limit: Duration) -> Result<EndpointAnswer, EndpointError> {
    tokio::time::timeout(limit, ask_unbounded(request)).await.map_err(|_| EndpointError::TimedOut(limit))?
}

async fn ask_unbounded(request: &EndpointRequest) -> Result<EndpointAnswer, EndpointError> {
    let url = &display_url(&request.url);
    let uri: Uri = request.url.parse().map_err(|source| EndpointError::BadUrl { url: url.clone(), source })?;
    if uri.scheme_str() != Some("http") {
        let why = "only plain http:// endpoints are probed (no TLS client in the bridge)";
        return Err(EndpointError::Unsupported { url: url.clone(), why });
    }
    let Some(authority) = uri.authority().cloned() else {
        return Err(EndpointError::Unsupported { url: url.clone(), why: "it names no host" });
    };
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = authority.port_u16().unwrap_or(80);
    let address = format!("{}:{port}", authority.host());
    // `Host` is host[:port] alone: a userinfo part is no header's business.
    let host_header =
        authority.port().map_or_else(|| authority.host().to_owned(), |p| format!("{}:{p}", authority.host()));
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|source| EndpointError::Connect { address, source })?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(EndpointError::Http)?;
    // The connection is driven beside the request and dropped with this probe.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let path = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    let mut builder =
        http::Request::builder().method(request.method.clone()).uri(path).header(http::header::HOST, host_header);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = Full::new(Bytes::from(request.body.clone().unwrap_or_default()));
    let outgoing = builder.body(body).map_err(EndpointError::Request)?;
    let result = async {
        let response = sender.send_request(outgoing).await.map_err(EndpointError::Http)?;
        let status = response.status().as_u16();
        let mut body = response.into_body();
        let mut kept = Vec::new();
        while kept.len() < MAX_BODY_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        let room = MAX_BODY_BYTES - kept.len();
                        kept.extend_from_slice(&data[..data.len().min(room)]);
                    }
                }
                // A body that breaks off still answered with its status.
                Some(Err(_)) | None => break,
            }
        }
        Ok(EndpointAnswer { status, body: String::from_utf8_lossy(&kept).into_owned() })
    }
    .await;
    driver.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_is_a_connect_error_and_https_is_not_probed() {
        // A port that was just free: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let request = EndpointRequest {
            method: http::Method::GET,
            url: format!("http://127.0.0.1:{port}/v1/models"),
            headers: vec![],
            body: None,
        };
        let error = ask(&request, Duration::from_secs(10)).await.unwrap_err();
        assert!(matches!(error, EndpointError::Connect { .. }), "{error}");

        let tls = EndpointRequest { url: "https://example.invalid/v1".into(), ..request };
        let error = ask(&tls, Duration::from_secs(10)).await.unwrap_err();
        assert!(matches!(error, EndpointError::Unsupported { .. }), "{error}");
    }

    #[test]
    fn a_url_is_shown_without_credentials() {
        assert_eq!(display_url("http://user:pw@127.0.0.1:8080/v1?key=sk-1#x"), "http://127.0.0.1:8080/v1");
        assert_eq!(display_url("https://api.example.com/v1"), "https://api.example.com/v1");
        assert_eq!(display_url("u:p@host/path?q"), "host/path");
    }

    #[test]
    fn joins_and_error_messages() {
        assert_eq!(join("http://h:1/v1/", "/models"), "http://h:1/v1/models");
        let answer = EndpointAnswer {
            status: 401,
            body: r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#.into(),
        };
        assert_eq!(answer.error_message().as_deref(), Some("invalid x-api-key"));
        assert_eq!(EndpointAnswer { status: 500, body: "oops".into() }.error_message(), None);
    }
}
