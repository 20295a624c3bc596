//! One cheap HTTP/1.1 request to a model endpoint, to tell "unreachable" from "refuses the key"
//! from "answers", over `http://` or `https://`. TLS is rustls (ring provider) trusting the OS's
//! store as `rustls-native-certs` loads it, which honours `SSL_CERT_FILE` / `SSL_CERT_DIR`: a
//! private CA is trusted the way curl and OpenSSL would trust it, with no knob of our own. The server
//! name sent (SNI) and checked against the certificate is the URL's host. A certificate the store
//! does not vouch for, or a handshake that fails, is a verdict of its own with its fix
//! ([`EndpointError::fix`]), not "unreachable".

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
    /// The URL is neither `http://` nor `https://` with a host.
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
    /// No CA certificate could be loaded to check an `https://` endpoint against.
    #[error("no trusted CA certificates could be loaded ({why})")]
    NoTrustAnchors {
        /// What the loader said (no store found, unreadable file), or that it found none.
        why: String,
    },
    /// The TLS client could not be set up (the ring provider refused the protocol versions).
    #[error("the TLS client could not be set up: {0}")]
    TlsSetup(#[source] rustls::Error),
    /// The server's certificate is not vouched for by the trust store (unknown CA, wrong name,
    /// expired).
    #[error("the certificate of {host} is not trusted: {}", describe(why))]
    Untrusted {
        /// The host the certificate was checked for (the SNI sent).
        host: String,
        /// What rustls found wrong with it (not an `Error` type of its own, hence not a source).
        why: rustls::CertificateError,
    },
    /// The TLS handshake failed for another reason (the port speaks plain HTTP, no common
    /// protocol version or cipher suite, the peer hung up).
    #[error("TLS handshake with {host} failed: {source}")]
    Tls {
        /// The host the handshake was with.
        host: String,
        /// The handshake's error (a rustls error inside an `io::Error`, or the socket's own).
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

impl EndpointError {
    /// The one-line fix for an error that is not the endpoint being down, else `None` (the caller's
    /// own "start the server, or fix the URL" fits).
    pub fn fix(&self) -> Option<&'static str> {
        use rustls::CertificateError::{
            Expired, ExpiredContext, NotValidForName, NotValidForNameContext, NotValidYet, NotValidYetContext,
        };
        match self {
            Self::Untrusted { why: NotValidForName | NotValidForNameContext { .. }, .. } => {
                Some("use the host name the endpoint's certificate was issued for in the URL")
            }
            Self::Untrusted {
                why: Expired | ExpiredContext { .. } | NotValidYet | NotValidYetContext { .. }, ..
            } => Some("check this machine's clock, or have the endpoint's certificate renewed"),
            Self::NoTrustAnchors { .. } | Self::Untrusted { .. } => {
                Some("set SSL_CERT_FILE (or SSL_CERT_DIR) to the CA bundle that signed the endpoint's certificate")
            }
            Self::Tls { .. } => Some("check that the endpoint speaks TLS at that port, or use http:// if it does not"),
            _ => None,
        }
    }
}

/// What is wrong with a certificate, in words (rustls's own `Display` is its variant's name).
fn describe(why: &rustls::CertificateError) -> String {
    use rustls::CertificateError::{
        Expired, ExpiredContext, NotValidForName, NotValidForNameContext, NotValidYet, NotValidYetContext, Revoked,
        UnknownIssuer,
    };
    match why {
        UnknownIssuer => "it is signed by a CA the trust store does not hold".to_owned(),
        NotValidForName | NotValidForNameContext { .. } => "it is not issued for this host".to_owned(),
        Expired | ExpiredContext { .. } => "it has expired".to_owned(),
        NotValidYet | NotValidYetContext { .. } => "it is not valid yet".to_owned(),
        Revoked => "it is revoked".to_owned(),
        other => other.to_string(),
    }
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

/// Makes `request`, all of it (trust store, connect, TLS handshake, send, the start of the body)
/// within `limit`.
pub async fn ask(request: &EndpointRequest, limit: Duration) -> Result<EndpointAnswer, EndpointError> {
    ask_trusting(request, limit, rustls_native_certs::load_native_certs).await
}

/// [`ask`], with the trust store from `load` (the OS's in [`ask`]; a file of the test's own CA in
/// the tests, through the same loader `SSL_CERT_FILE` goes through).
async fn ask_trusting(
    request: &EndpointRequest,
    limit: Duration,
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<EndpointAnswer, EndpointError> {
    tokio::time::timeout(limit, ask_unbounded(request, load)).await.map_err(|_| EndpointError::TimedOut(limit))?
}

async fn ask_unbounded(
    request: &EndpointRequest,
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<EndpointAnswer, EndpointError> {
    let url = &display_url(&request.url);
    let uri: Uri = request.url.parse().map_err(|source| EndpointError::BadUrl { url: url.clone(), source })?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => {
            let why = "only http:// and https:// endpoints are probed";
            return Err(EndpointError::Unsupported { url: url.clone(), why });
        }
    };
    let Some(authority) = uri.authority().cloned() else {
        return Err(EndpointError::Unsupported { url: url.clone(), why: "it names no host" });
    };
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let address = format!("{}:{port}", authority.host());
    // `Host` is host[:port] alone: a userinfo part is no header's business.
    let host_header =
        authority.port().map_or_else(|| authority.host().to_owned(), |p| format!("{}:{p}", authority.host()));
    // Checked before connecting: a host rustls cannot name is no reason to touch the network.
    let server_name = if tls {
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| EndpointError::Unsupported { url: url.clone(), why: "its host is no TLS server name" })?;
        Some((name, trusting(load).await?))
    } else {
        None
    };
    let stream = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|source| EndpointError::Connect { address, source })?;
    let path = uri.path_and_query().map_or("/", http::uri::PathAndQuery::as_str);
    let mut builder =
        http::Request::builder().method(request.method.clone()).uri(path).header(http::header::HOST, host_header);
    for (name, value) in &request.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    let body = Full::new(Bytes::from(request.body.clone().unwrap_or_default()));
    let outgoing = builder.body(body).map_err(EndpointError::Request)?;
    match server_name {
        None => exchange(stream, outgoing).await,
        Some((name, connector)) => {
            let stream = connector.connect(name, stream).await.map_err(|source| handshake_error(&host, source))?;
            exchange(stream, outgoing).await
        }
    }
}

/// A TLS connector trusting what `load` finds, speaking HTTP/1.1 only (what [`exchange`] speaks).
async fn trusting(
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<tokio_rustls::TlsConnector, EndpointError> {
    // Reading the store is file I/O (a directory of certificates, maybe): off the async threads,
    // and under the probe's time bound like the rest.
    let loaded = tokio::task::spawn_blocking(load)
        .await
        .map_err(|error| EndpointError::NoTrustAnchors { why: format!("the loader failed: {error}") })?;
    let mut roots = rustls::RootCertStore::empty();
    // A store with some unreadable entries still vouches for the rest (as OpenSSL does).
    let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        let why = loaded.errors.first().map_or_else(|| "none found".to_owned(), ToString::to_string);
        return Err(EndpointError::NoTrustAnchors { why });
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(EndpointError::TlsSetup)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)))
}

/// The handshake's `io::Error` as its verdict: a certificate the store does not vouch for apart
/// from every other failure, since its fix differs.
fn handshake_error(host: &str, source: std::io::Error) -> EndpointError {
    let rustls_error = source.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(certificate)) => {
            EndpointError::Untrusted { host: host.to_owned(), why: certificate.clone() }
        }
        _ => EndpointError::Tls { host: host.to_owned(), source },
    }
}

/// Sends `outgoing` over `io` (plain or TLS) and reads the status and the start of the body.
async fn exchange<S>(io: S, outgoing: http::Request<Full<Bytes>>) -> Result<EndpointAnswer, EndpointError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(EndpointError::Http)?;
    // The connection is driven beside the request and dropped with this probe.
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
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
    async fn a_closed_port_is_a_connect_error_and_another_scheme_is_not_probed() {
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

        let ftp = EndpointRequest { url: "ftp://example.invalid/v1".into(), ..request };
        let error = ask(&ftp, Duration::from_secs(10)).await.unwrap_err();
        assert!(matches!(error, EndpointError::Unsupported { .. }), "{error}");
    }

    fn count_tokens(base: &str) -> EndpointRequest {
        EndpointRequest {
            method: http::Method::POST,
            url: join(base, "v1/messages/count_tokens?key=sk-secret"),
            headers: vec![("content-type".into(), "application/json".into())],
            body: Some(br#"{"model":"m","messages":[]}"#.to_vec()),
        }
    }

    /// The trust store `SSL_CERT_FILE=file` gives: the same loader, minus the process's environment.
    fn trusting_file(file: std::path::PathBuf) -> impl FnOnce() -> rustls_native_certs::CertificateResult + Send {
        move || rustls_native_certs::load_certs_from_paths(Some(&file), None)
    }

    #[tokio::test]
    async fn https_answers_when_the_ca_is_trusted_and_is_its_own_verdict_when_not() {
        use clawbridge_fixtures::tls::{TestCa, start_tls_server};
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new("clawbridge test CA").unwrap();
        let server = start_tls_server(&ca, 200, r#"{"input_tokens":3}"#).await.unwrap();
        let request = count_tokens(&server.base_url());
        let limit = Duration::from_secs(10);

        let trusted = trusting_file(ca.write_pem(dir.path(), "ca.pem").unwrap());
        let answer = ask_trusting(&request, limit, trusted).await.unwrap();
        assert_eq!(answer, EndpointAnswer { status: 200, body: r#"{"input_tokens":3}"#.into() });

        // Another CA in the store: the server's is unknown to it.
        let other = TestCa::new("another CA").unwrap();
        let untrusted = trusting_file(other.write_pem(dir.path(), "other.pem").unwrap());
        let error = ask_trusting(&request, limit, untrusted).await.unwrap_err();
        assert!(
            matches!(&error, EndpointError::Untrusted { host, why: rustls::CertificateError::UnknownIssuer } if host == "127.0.0.1"),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the certificate of 127.0.0.1 is not trusted: it is signed by a CA the trust store does not hold"
        );
        assert!(error.fix().is_some_and(|fix| fix.contains("SSL_CERT_FILE")), "{:?}", error.fix());

        // A store with nothing in it vouches for nothing, and says so rather than "untrusted".
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let error = ask_trusting(&request, limit, trusting_file(empty)).await.unwrap_err();
        assert!(matches!(error, EndpointError::NoTrustAnchors { .. }), "{error:?}");
        assert!(error.fix().is_some_and(|fix| fix.contains("SSL_CERT_FILE")), "{:?}", error.fix());
    }

    #[tokio::test]
    async fn https_to_a_plain_http_port_is_a_handshake_failure() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello).await;
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
        });
        let dir = tempfile::tempdir().unwrap();
        let ca = clawbridge_fixtures::tls::TestCa::new("unused CA").unwrap();
        let trust = trusting_file(ca.write_pem(dir.path(), "ca.pem").unwrap());
        let request = count_tokens(&format!("https://127.0.0.1:{port}"));
        let error = ask_trusting(&request, Duration::from_secs(10), trust).await.unwrap_err();
        assert!(matches!(&error, EndpointError::Tls { host, .. } if host == "127.0.0.1"), "{error:?}");
        assert!(error.fix().is_some_and(|fix| fix.contains("TLS")), "{:?}", error.fix());
        server.abort();
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
