//! Where an already running agent listens, and opening a connection to it: a WebSocket over a
//! Unix socket, plain TCP (`ws://`) or TLS (`wss://`), upgraded with the configured bearer
//! (docs/peers/codex.md#listeners). A daemon reached through `codex app-server proxy` is named
//! here too ([`Endpoint::Proxy`]); its byte stream is a spawned child's stdio, which
//! `AgentConnection::spawn_websocket` opens and hands to [`upgrade`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::Uri;
use http::header::{AUTHORIZATION, HeaderValue};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::bearer::{SecretError, WsAuth};
use super::ws::{WsFrames, WsLineWriter, split_websocket, ws_config};

/// A listening agent's address, as configured (`unix:///path`, `ws://host:port`, `wss://…`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Endpoint {
    /// A Unix socket (codex speaks WebSocket over it, without auth).
    Unix {
        /// The socket's absolute path.
        path: PathBuf,
    },
    /// A daemon's control socket reached through a launched `codex app-server proxy`, which copies
    /// its stdio to the socket byte for byte (docs/peers/codex.md#the-managed-daemon-and-proxy).
    Proxy {
        /// The socket the proxy is pointed at (`--sock`); `None`: the proxy's default,
        /// `$CODEX_HOME/app-server-control/app-server-control.sock` on the proxy's side.
        socket: Option<PathBuf>,
    },
    /// A WebSocket over TCP, with TLS for `wss://`.
    WebSocket {
        /// The URL, as configured (it carries no credentials: those are refused when parsing).
        url: String,
        /// Whether it is `wss://`.
        tls: bool,
        /// The host, without brackets, for connecting and for TLS.
        host: String,
        /// The port (the scheme's default when the URL names none).
        port: u16,
    },
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix { path } => write!(f, "unix://{}", path.display()),
            Endpoint::Proxy { socket: None } => f.write_str(PROXY),
            Endpoint::Proxy { socket: Some(path) } => write!(f, "{PROXY}://{}", path.display()),
            Endpoint::WebSocket { url, .. } => f.write_str(url),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({self})")
    }
}

impl Endpoint {
    /// Whether it is reached through a launched `codex app-server proxy` ([`Endpoint::Proxy`]).
    pub fn is_proxy(&self) -> bool {
        matches!(self, Endpoint::Proxy { .. })
    }
}

/// The scheme of [`Endpoint::Proxy`], and the whole value for the proxy's default socket.
const PROXY: &str = "proxy";

/// Why an endpoint string is not one.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum EndpointParseError {
    /// Not `unix://`, `ws://`, `wss://` or `proxy`.
    #[error(
        "`{0}` is no endpoint: use unix:///absolute/path, ws://host:port, wss://host:port, proxy or proxy:///absolute/path"
    )]
    Scheme(String),
    /// `unix://` or `proxy://` with a relative or empty path.
    #[error("`{0}` names no absolute socket path (unix:///absolute/path, proxy:///absolute/path)")]
    RelativeSocket(String),
    /// The URL does not parse or names no host.
    #[error("`{0}` is no WebSocket URL with a host")]
    BadUrl(String),
    /// The URL carries a user or password, which would end up in logs.
    #[error("`{0}` carries credentials; give the token through ws_token_file or ws_token_env instead")]
    Credentials(String),
}

impl std::str::FromStr for Endpoint {
    type Err = EndpointParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == PROXY {
            return Ok(Endpoint::Proxy { socket: None });
        }
        if let Some(path) = text.strip_prefix("proxy://") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(EndpointParseError::RelativeSocket(text.into()));
            }
            return Ok(Endpoint::Proxy { socket: Some(path) });
        }
        if let Some(path) = text.strip_prefix("unix://") {
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(EndpointParseError::RelativeSocket(text.into()));
            }
            return Ok(Endpoint::Unix { path });
        }
        let tls = if text.starts_with("wss://") {
            true
        } else if text.starts_with("ws://") {
            false
        } else {
            // Not echoed whole: a mistyped value may hold anything.
            return Err(EndpointParseError::Scheme(text.chars().take(64).collect()));
        };
        let uri: Uri = text.parse().map_err(|_| EndpointParseError::BadUrl(text.into()))?;
        let authority = uri.authority().ok_or_else(|| EndpointParseError::BadUrl(text.into()))?;
        if authority.as_str().contains('@') {
            return Err(EndpointParseError::Credentials("the URL".into()));
        }
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        if host.is_empty() {
            return Err(EndpointParseError::BadUrl(text.into()));
        }
        let port = authority.port_u16().unwrap_or(if tls { 443 } else { 80 });
        Ok(Endpoint::WebSocket { url: text.into(), tls, host, port })
    }
}

/// Why connecting to an endpoint failed. Every message names the endpoint.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// Nothing listens there: the socket is missing, the port refuses, the host is unknown.
    #[error("cannot reach the app-server at {endpoint}")]
    Unreachable {
        /// The endpoint.
        endpoint: Endpoint,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The upgrade was answered 401/403: the credential was refused.
    #[error("the app-server at {endpoint} refused the {what} (HTTP {status}{})", reason_suffix(.reason))]
    Refused {
        /// The endpoint.
        endpoint: Endpoint,
        /// What was offered ("capability token", …).
        what: &'static str,
        /// The HTTP status.
        status: u16,
        /// The start of the server's explanation, as it wrote it (printable characters only).
        reason: String,
    },
    /// The upgrade was answered with another status than 101.
    #[error("the app-server at {endpoint} answered the WebSocket upgrade with HTTP {status}{}", reason_suffix(.reason))]
    Rejected {
        /// The endpoint.
        endpoint: Endpoint,
        /// The HTTP status.
        status: u16,
        /// The start of the server's explanation.
        reason: String,
    },
    /// The TLS handshake failed (`wss://`).
    #[error("the TLS handshake with {endpoint} failed")]
    Tls {
        /// The endpoint.
        endpoint: Endpoint,
        /// The rustls error, as an I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The WebSocket handshake failed otherwise (not a WebSocket server, a broken answer).
    #[error("the WebSocket handshake with {endpoint} failed")]
    Handshake {
        /// The endpoint.
        endpoint: Endpoint,
        /// Tungstenite's error.
        #[source]
        source: Box<WsError>,
    },
    /// The bearer could not be made (its file or variable).
    #[error("no credential for {endpoint}")]
    Credential {
        /// The endpoint.
        endpoint: Endpoint,
        /// What went wrong reading it.
        #[source]
        source: SecretError,
    },
    /// The token holds characters an HTTP header cannot carry (a control character, a line break
    /// inside it); it is not shown.
    #[error("the token for {endpoint} cannot be sent: it holds characters an HTTP header cannot carry")]
    BadToken {
        /// The endpoint.
        endpoint: Endpoint,
    },
    /// The trust store could not be loaded, or rustls refused its settings (`wss://`).
    #[error("no TLS settings for {endpoint}: {why}")]
    TlsSetup {
        /// The endpoint.
        endpoint: Endpoint,
        /// What went wrong.
        why: String,
    },
    /// A proxy endpoint was handed to [`open`], which has no process to run it in (a caller's
    /// mistake: `AgentConnection::spawn_websocket` opens those).
    #[error("{endpoint} is reached through a launched `codex app-server proxy`, not by connecting")]
    NeedsProxy {
        /// The endpoint.
        endpoint: Endpoint,
    },
    /// Connecting, TLS and the upgrade together took longer than allowed.
    #[error("connecting to the app-server at {endpoint} took longer than {after:?}")]
    TimedOut {
        /// The endpoint.
        endpoint: Endpoint,
        /// The limit.
        after: Duration,
    },
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() { String::new() } else { format!(": {reason}") }
}

/// The most characters of a refusal's body kept for its message.
const MAX_REASON_CHARS: usize = 200;

/// Any byte stream a WebSocket runs over (Unix, TCP, TLS over TCP).
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Io for T {}

/// The byte stream under an opened WebSocket.
pub type BoxedIo = Box<dyn Io>;

/// An opened connection, split for the rpc peer: the frames it reads and the sink it writes lines to.
pub type Opened = (WsFrames<BoxedIo>, WsLineWriter<BoxedIo>);

/// Opens `endpoint` within `limit`: connects, upgrades to WebSocket with `auth`'s bearer, and caps
/// every incoming message at `max_message_bytes` (the line cap of the stdio path).
pub async fn open(
    endpoint: &Endpoint,
    auth: &WsAuth,
    max_message_bytes: usize,
    limit: Duration,
) -> Result<Opened, ConnectError> {
    open_trusting(endpoint, auth, max_message_bytes, limit, rustls_native_certs::load_native_certs).await
}

/// [`open`], trusting for `wss://` what `load` finds (the OS's store in [`open`]; a test's own CA
/// file in the tests, through the same loader `SSL_CERT_FILE` goes through).
async fn open_trusting(
    endpoint: &Endpoint,
    auth: &WsAuth,
    max_message_bytes: usize,
    limit: Duration,
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<Opened, ConnectError> {
    tokio::time::timeout(limit, open_unbounded(endpoint, auth, max_message_bytes, load))
        .await
        .map_err(|_| ConnectError::TimedOut { endpoint: endpoint.clone(), after: limit })?
}

async fn open_unbounded(
    endpoint: &Endpoint,
    auth: &WsAuth,
    max_message_bytes: usize,
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<Opened, ConnectError> {
    // Made before connecting: a token no header can carry needs no round trip to be refused.
    let authorization = authorization(endpoint, auth)?;
    let unreachable = |source| ConnectError::Unreachable { endpoint: endpoint.clone(), source };
    let (io, url): (BoxedIo, String) = match endpoint {
        Endpoint::Unix { path } => {
            // The host is only the upgrade request's `Host`; nothing resolves it.
            (Box::new(tokio::net::UnixStream::connect(path).await.map_err(unreachable)?), LOCAL_URL.into())
        }
        Endpoint::Proxy { .. } => return Err(ConnectError::NeedsProxy { endpoint: endpoint.clone() }),
        Endpoint::WebSocket { url, tls, host, port } => {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), *port)).await.map_err(unreachable)?;
            // JSON-RPC is many small messages each way: no Nagle delay on them.
            let _ = tcp.set_nodelay(true);
            let io: BoxedIo =
                if *tls { Box::new(tls_connect(endpoint, host, tcp, load).await?) } else { Box::new(tcp) };
            // tungstenite only accepts ws:// and wss://; the TLS is already below it.
            (io, url.replacen("wss://", "ws://", 1))
        }
    };
    handshake(endpoint, io, &url, authorization, auth, max_message_bytes).await
}

/// The upgrade URL for a socket on this side (Unix, or a proxy's stdio): its host is only the
/// request's `Host` header; nothing resolves it.
const LOCAL_URL: &str = "ws://localhost/";

/// The WebSocket upgrade over `io`, a byte stream that already reaches the app-server's socket
/// (a proxy's stdio: [`Endpoint::Proxy`]), with `auth`'s bearer and every incoming message capped
/// at `max_message_bytes`. Unbounded in time: the caller sets the limit.
pub async fn upgrade(
    endpoint: &Endpoint,
    io: BoxedIo,
    auth: &WsAuth,
    max_message_bytes: usize,
) -> Result<Opened, ConnectError> {
    let authorization = authorization(endpoint, auth)?;
    handshake(endpoint, io, LOCAL_URL, authorization, auth, max_message_bytes).await
}

/// The `Authorization` header `auth` asks for, if any.
fn authorization(endpoint: &Endpoint, auth: &WsAuth) -> Result<Option<HeaderValue>, ConnectError> {
    let bearer = auth
        .bearer(SystemTime::now())
        .map_err(|source| ConnectError::Credential { endpoint: endpoint.clone(), source })?;
    match bearer {
        Some(bearer) => {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", bearer.expose()))
                .map_err(|_| ConnectError::BadToken { endpoint: endpoint.clone() })?;
            value.set_sensitive(true);
            Ok(Some(value))
        }
        None => Ok(None),
    }
}

/// The client side of the upgrade over `io`, which reaches the server.
async fn handshake(
    endpoint: &Endpoint,
    io: BoxedIo,
    url: &str,
    authorization: Option<HeaderValue>,
    auth: &WsAuth,
    max_message_bytes: usize,
) -> Result<Opened, ConnectError> {
    let unreachable = |source| ConnectError::Unreachable { endpoint: endpoint.clone(), source };
    let handshake = |source: WsError| ConnectError::Handshake { endpoint: endpoint.clone(), source: Box::new(source) };
    let mut request = url.into_client_request().map_err(handshake)?;
    if let Some(value) = authorization {
        request.headers_mut().insert(AUTHORIZATION, value);
    }
    match tokio_tungstenite::client_async_with_config(request, io, Some(ws_config(max_message_bytes))).await {
        Ok((socket, _response)) => Ok(split_websocket(socket)),
        Err(WsError::Http(response)) => {
            let status = response.status().as_u16();
            let reason = response.body().as_deref().map(printable).unwrap_or_default();
            let endpoint = endpoint.clone();
            if status == 401 || status == 403 {
                Err(ConnectError::Refused { endpoint, what: auth.what(), status, reason })
            } else {
                Err(ConnectError::Rejected { endpoint, status, reason })
            }
        }
        Err(WsError::Io(source)) => Err(unreachable(source)),
        Err(other) => Err(handshake(other)),
    }
}

/// The start of a server's text, with control characters dropped (it is quoted into one line).
fn printable(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_REASON_CHARS)
        .collect::<String>()
        .trim()
        .to_owned()
}

async fn tls_connect(
    endpoint: &Endpoint,
    host: &str,
    tcp: tokio::net::TcpStream,
    load: impl FnOnce() -> rustls_native_certs::CertificateResult + Send + 'static,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, ConnectError> {
    let setup = |why: String| ConnectError::TlsSetup { endpoint: endpoint.clone(), why };
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|_| setup(format!("`{host}` is no TLS server name")))?;
    // Reading the store is file I/O: off the async threads.
    let loaded = tokio::task::spawn_blocking(load)
        .await
        .map_err(|error| setup(format!("the trust store loader failed: {error}")))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
    if added == 0 {
        return Err(setup("the trust store holds no usable certificate".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| setup(error.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|source| ConnectError::Tls { endpoint: endpoint.clone(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_parse_to_what_they_name_and_print_as_written() {
        let unix: Endpoint = "unix:///run/codex.sock".parse().unwrap();
        assert_eq!(unix, Endpoint::Unix { path: "/run/codex.sock".into() });
        assert_eq!(unix.to_string(), "unix:///run/codex.sock");
        let ws: Endpoint = "ws://127.0.0.1:4500".parse().unwrap();
        assert!(matches!(&ws, Endpoint::WebSocket { tls: false, host, port: 4500, .. } if host == "127.0.0.1"));
        assert_eq!(ws.to_string(), "ws://127.0.0.1:4500");
        let wss: Endpoint = "wss://[::1]/codex".parse().unwrap();
        assert!(matches!(&wss, Endpoint::WebSocket { tls: true, host, port: 443, .. } if host == "::1"));
    }

    #[test]
    fn proxy_endpoints_name_the_socket_or_the_proxys_default_and_print_as_written() {
        let default: Endpoint = "proxy".parse().unwrap();
        assert_eq!(default, Endpoint::Proxy { socket: None });
        assert_eq!(default.to_string(), "proxy");
        let named: Endpoint = "proxy:///run/codex/control.sock".parse().unwrap();
        assert_eq!(named, Endpoint::Proxy { socket: Some("/run/codex/control.sock".into()) });
        assert_eq!(named.to_string(), "proxy:///run/codex/control.sock");
        assert!(named.is_proxy() && !"unix:///s".parse::<Endpoint>().unwrap().is_proxy());
        assert!(matches!("proxy://relative.sock".parse::<Endpoint>(), Err(EndpointParseError::RelativeSocket(_))));
        assert!(matches!("proxy:".parse::<Endpoint>(), Err(EndpointParseError::Scheme(_))));
    }

    #[tokio::test]
    async fn a_proxy_endpoint_is_not_connected_to_directly() {
        let endpoint = Endpoint::Proxy { socket: None };
        let Err(error) = open(&endpoint, &WsAuth::None, 1024, Duration::from_secs(5)).await else { panic!("opened") };
        assert!(matches!(error, ConnectError::NeedsProxy { .. }), "{error:?}");
    }

    #[test]
    fn endpoints_that_cannot_work_are_refused_with_the_reason() {
        assert!(matches!("unix://relative.sock".parse::<Endpoint>(), Err(EndpointParseError::RelativeSocket(_))));
        assert!(matches!("http://127.0.0.1:1".parse::<Endpoint>(), Err(EndpointParseError::Scheme(_))));
        assert!(matches!("ws://".parse::<Endpoint>(), Err(EndpointParseError::BadUrl(_))));
        let error = "ws://user:hunter2@127.0.0.1:1".parse::<Endpoint>().unwrap_err();
        assert!(matches!(error, EndpointParseError::Credentials(_)));
        assert!(!error.to_string().contains("hunter2"), "{error}");
    }

    #[tokio::test]
    async fn a_token_no_header_can_carry_is_refused_before_connecting_and_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "line-one\nline-two\n").unwrap();
        let auth = WsAuth::CapabilityToken { token: super::super::bearer::SecretSource::File(token) };
        // Nothing listens there: the refusal must come before any connect.
        let endpoint: Endpoint = "ws://127.0.0.1:9".parse().unwrap();
        let Err(error) = open(&endpoint, &auth, 1024, Duration::from_secs(5)).await else { panic!("sent") };
        assert!(matches!(error, ConnectError::BadToken { .. }), "{error:?}");
        assert!(!error.to_string().contains("line-one"), "{error}");
    }

    #[tokio::test]
    async fn a_missing_socket_is_unreachable_and_the_error_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let endpoint = Endpoint::Unix { path: dir.path().join("absent.sock") };
        let Err(error) = open(&endpoint, &WsAuth::None, 1024, Duration::from_secs(5)).await else {
            panic!("connected to nothing");
        };
        assert!(matches!(error, ConnectError::Unreachable { .. }), "{error:?}");
        assert!(error.to_string().contains(&endpoint.to_string()), "{error}");
    }

    #[tokio::test]
    async fn a_401_on_upgrade_is_a_refusal_naming_the_endpoint_and_the_server_reason() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0; 4096];
            let n = socket.read(&mut request).await.unwrap();
            let request = String::from_utf8_lossy(&request[..n]).to_string();
            let body = "invalid websocket bearer token";
            let answer = format!("HTTP/1.1 401 Unauthorized\r\ncontent-length: {}\r\n\r\n{body}", body.len());
            socket.write_all(answer.as_bytes()).await.unwrap();
            request
        });
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "the-token\n").unwrap();
        let endpoint: Endpoint = format!("ws://127.0.0.1:{port}").parse().unwrap();
        let auth = WsAuth::CapabilityToken { token: super::super::bearer::SecretSource::File(token) };
        let Err(error) = open(&endpoint, &auth, 1024, Duration::from_secs(5)).await else { panic!("accepted") };
        let request = server.await.unwrap();
        assert!(request.to_ascii_lowercase().contains("authorization: bearer the-token\r\n"), "{request}");
        let message = error.to_string();
        assert!(matches!(error, ConnectError::Refused { status: 401, .. }), "{error:?}");
        assert!(
            message.contains(&endpoint.to_string()) && message.contains("refused the capability token"),
            "{message}"
        );
        assert!(message.contains("invalid websocket bearer token"), "{message}");
    }

    #[tokio::test]
    async fn wss_runs_the_websocket_over_tls_to_a_trusted_server_and_refuses_an_untrusted_one() {
        use clawbridge_fixtures::tls::{TestCa, loopback_acceptor};
        use futures::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;
        let ca = TestCa::new("clawbridge wss test CA").unwrap();
        let acceptor = loopback_acceptor(&ca).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let Ok(mut socket) = tokio_tungstenite::accept_async(tls).await else { return };
                    // An echo server: what the client sends comes back as the server's message.
                    while let Some(Ok(Message::Text(text))) = socket.next().await {
                        let _ = socket.send(Message::text(text.as_str().to_owned())).await;
                    }
                });
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let trusted = ca.write_pem(dir.path(), "ca.pem").unwrap();
        let endpoint: Endpoint = format!("wss://localhost:{port}").parse().unwrap();
        let load = move || rustls_native_certs::load_certs_from_paths(Some(&trusted), None);
        let (mut frames, mut writer) =
            open_trusting(&endpoint, &WsAuth::None, 1024, Duration::from_secs(10), load).await.expect("connects");
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"{\"method\":\"echo\"}\n").await.unwrap();
        tokio::io::AsyncWriteExt::flush(&mut writer).await.unwrap();
        let echoed = tokio::time::timeout(Duration::from_secs(10), frames.next()).await.unwrap().unwrap().unwrap();
        assert_eq!(echoed, super::super::Frame::Line(r#"{"method":"echo"}"#.into()));

        let other = TestCa::new("another CA").unwrap().write_pem(dir.path(), "other.pem").unwrap();
        let load = move || rustls_native_certs::load_certs_from_paths(Some(&other), None);
        let Err(error) = open_trusting(&endpoint, &WsAuth::None, 1024, Duration::from_secs(10), load).await else {
            panic!("trusted a certificate of an unknown CA");
        };
        assert!(matches!(error, ConnectError::Tls { .. }), "{error:?}");
        assert!(error.to_string().contains(&endpoint.to_string()), "{error}");
    }
}
