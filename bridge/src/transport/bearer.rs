//! Bearer credentials for a WebSocket upgrade: a capability token as it is, or an HS256 JWT signed
//! with a shared secret (docs/peers/codex.md#websocket-auth). The values never reach a log line:
//! every type here redacts itself in `Debug`.

use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The shortest shared secret codex accepts for signed bearer tokens.
pub const MIN_SHARED_SECRET_BYTES: usize = 32;

/// How long a signed bearer token we mint stays valid: only the upgrade reads it, so a short life
/// is enough and a leaked one is soon useless.
pub const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(300);

/// A secret value read from its source. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(String);

impl SecretValue {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        SecretValue(value.into())
    }

    /// The value, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Where a token or shared secret comes from: never the config table itself.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecretSource {
    /// A file holding it (surrounding whitespace is ignored, as codex ignores it in its own file).
    File(PathBuf),
    /// An environment variable of the bridge holding it.
    Env(String),
}

impl fmt::Display for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::File(path) => write!(f, "the file {}", path.display()),
            SecretSource::Env(name) => write!(f, "the environment variable {name}"),
        }
    }
}

/// Why a secret could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// The file could not be read.
    #[error("cannot read {source_name}")]
    Unreadable {
        /// The source, for the message.
        source_name: SecretSource,
        /// The OS error.
        #[source]
        error: std::io::Error,
    },
    /// The variable is unset or not Unicode.
    #[error("{0} is not set")]
    Unset(SecretSource),
    /// It holds only whitespace.
    #[error("{0} is empty")]
    Empty(SecretSource),
    /// A shared secret shorter than codex accepts.
    #[error("the shared secret in {source_name} has {len} bytes; codex needs at least {MIN_SHARED_SECRET_BYTES}")]
    TooShort {
        /// The source, for the message.
        source_name: SecretSource,
        /// Its length.
        len: usize,
    },
}

/// The most bytes of a secret read from a file: a token is short, and a path pointing at something
/// big is a mistake that must not be read into memory.
const MAX_SECRET_BYTES: u64 = 64 * 1024;

impl SecretSource {
    /// Reads the secret now (at connect time, so a rotated token is picked up by the next
    /// connection).
    pub fn read(&self) -> Result<SecretValue, SecretError> {
        let raw = match self {
            SecretSource::File(path) => {
                use std::io::Read;
                let unreadable = |error| SecretError::Unreadable { source_name: self.clone(), error };
                let file = std::fs::File::open(path).map_err(unreadable)?;
                let mut text = String::new();
                file.take(MAX_SECRET_BYTES).read_to_string(&mut text).map_err(unreadable)?;
                text
            }
            SecretSource::Env(name) => std::env::var(name).map_err(|_| SecretError::Unset(self.clone()))?,
        };
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(SecretError::Empty(self.clone()));
        }
        Ok(SecretValue::new(trimmed))
    }
}

/// The claims of a signed bearer token we mint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerClaims {
    /// `iss`, when the server checks one (`--ws-issuer`).
    pub issuer: Option<String>,
    /// `aud`, when the server checks one (`--ws-audience`).
    pub audience: Option<String>,
}

/// An HS256 JWT over `claims`, valid from `now` for `lifetime` (`exp` is required by codex; `iat`
/// and `nbf` say when it was made).
pub fn sign_bearer_token(
    secret: &SecretValue,
    claims: &BearerClaims,
    now: SystemTime,
    lifetime: Duration,
) -> SecretValue {
    let issued = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let mut payload = serde_json::Map::new();
    if let Some(issuer) = &claims.issuer {
        payload.insert("iss".into(), issuer.clone().into());
    }
    if let Some(audience) = &claims.audience {
        payload.insert("aud".into(), audience.clone().into());
    }
    payload.insert("iat".into(), issued.into());
    payload.insert("nbf".into(), issued.into());
    payload.insert("exp".into(), issued.saturating_add(lifetime.as_secs()).into());
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let body = URL_SAFE_NO_PAD.encode(serde_json::Value::Object(payload).to_string());
    let signing_input = format!("{header}.{body}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()).expect("HMAC takes a key of any length");
    mac.update(signing_input.as_bytes());
    let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    SecretValue::new(format!("{signing_input}.{signature}"))
}

/// How the bridge proves itself to a WebSocket app-server.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum WsAuth {
    /// No `Authorization` header (a Unix socket, or a loopback listener started without `--ws-auth`).
    #[default]
    None,
    /// `--ws-auth capability-token`: the token itself as the bearer.
    CapabilityToken {
        /// Where the token is.
        token: SecretSource,
    },
    /// `--ws-auth signed-bearer-token`: a short-lived HS256 JWT signed with the shared secret.
    SignedBearerToken {
        /// Where the shared secret is.
        secret: SecretSource,
        /// Claims the server may check.
        claims: BearerClaims,
        /// How long each minted token is valid.
        lifetime: Duration,
    },
}

impl WsAuth {
    /// The bearer for one upgrade, or `None` for no header.
    pub fn bearer(&self, now: SystemTime) -> Result<Option<SecretValue>, SecretError> {
        match self {
            WsAuth::None => Ok(None),
            WsAuth::CapabilityToken { token } => token.read().map(Some),
            WsAuth::SignedBearerToken { secret, claims, lifetime } => {
                let key = secret.read()?;
                if key.expose().len() < MIN_SHARED_SECRET_BYTES {
                    return Err(SecretError::TooShort { source_name: secret.clone(), len: key.expose().len() });
                }
                Ok(Some(sign_bearer_token(&key, claims, now, *lifetime)))
            }
        }
    }

    /// What the server is asked to accept, for a refusal's message.
    pub fn what(&self) -> &'static str {
        match self {
            WsAuth::None => "connection (no token was configured)",
            WsAuth::CapabilityToken { .. } => "capability token",
            WsAuth::SignedBearerToken { .. } => "signed bearer token",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn decode(segment: &str) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(segment).expect("base64url")).expect("json")
    }

    #[test]
    fn a_signed_token_is_hs256_over_its_first_two_segments_with_the_claims_asked_for() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let claims = BearerClaims { issuer: Some("bridge".into()), audience: Some("codex".into()) };
        let token = sign_bearer_token(&SecretValue::new(SECRET), &claims, now, Duration::from_secs(60));
        let parts: Vec<&str> = token.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(decode(parts[0]), serde_json::json!({"alg": "HS256", "typ": "JWT"}));
        let body = decode(parts[1]);
        assert_eq!(body["iss"], "bridge");
        assert_eq!(body["aud"], "codex");
        assert_eq!(body["exp"], 1_000_060);
        assert_eq!(body["nbf"], 1_000_000);
        // Verified independently of the signer: the same HMAC over the same input.
        let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
        mac.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        mac.verify_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).expect("the signature verifies");
        let mut wrong = Hmac::<Sha256>::new_from_slice(b"another secret, also 32 bytes long").unwrap();
        wrong.update(format!("{}.{}", parts[0], parts[1]).as_bytes());
        assert!(wrong.verify_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).is_err());
    }

    #[test]
    fn claims_not_asked_for_are_left_out() {
        let token =
            sign_bearer_token(&SecretValue::new(SECRET), &BearerClaims::default(), UNIX_EPOCH, DEFAULT_TOKEN_LIFETIME);
        let body = decode(token.expose().split('.').nth(1).unwrap());
        assert!(body.get("iss").is_none() && body.get("aud").is_none());
        assert_eq!(body["exp"], DEFAULT_TOKEN_LIFETIME.as_secs());
    }

    #[test]
    fn a_short_shared_secret_is_refused_before_anything_is_signed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "short\n").unwrap();
        let auth = WsAuth::SignedBearerToken {
            secret: SecretSource::File(path),
            claims: BearerClaims::default(),
            lifetime: DEFAULT_TOKEN_LIFETIME,
        };
        let error = auth.bearer(SystemTime::now()).unwrap_err();
        assert!(matches!(error, SecretError::TooShort { len: 5, .. }), "{error:?}");
    }

    #[test]
    fn a_token_file_is_trimmed_and_never_shown_in_debug() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "  tok-123\n").unwrap();
        let auth = WsAuth::CapabilityToken { token: SecretSource::File(path) };
        let bearer = auth.bearer(SystemTime::now()).unwrap().unwrap();
        assert_eq!(bearer.expose(), "tok-123");
        assert!(!format!("{bearer:?}").contains("tok-123"));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "\n").unwrap();
        let error = WsAuth::CapabilityToken { token: SecretSource::File(empty) }.bearer(SystemTime::now()).unwrap_err();
        assert!(matches!(error, SecretError::Empty(_)), "{error:?}");
        let missing = WsAuth::CapabilityToken { token: SecretSource::Env("CLAWBRIDGE_TEST_SURELY_UNSET_TOKEN".into()) };
        assert!(matches!(missing.bearer(SystemTime::now()).unwrap_err(), SecretError::Unset(_)));
    }
}
