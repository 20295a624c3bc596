//! The binding between an OpenClaw session and a native thread/session, kept in a JSON sidecar next
//! to the transcript so the next turn can resume the native session instead of starting over.
//!
//! A resume is only valid while the settings the native session was created with still hold. The
//! binding stores them (backend, cwd and model in clear, everything else as hashes) and
//! [`Binding::check`] names the first one that changed, so the caller starts a fresh session and
//! can say why — never silently (docs/peers/openclaw.md#session-bindings).
//!
//! Secrets (an auth key, a token) are fingerprinted with a keyed hash, HMAC-SHA256 under a random
//! key kept beside the bindings ([`FingerprintKey`]): an unsalted hash of a key in a binding file
//! would let whoever reads the file test guesses of the key offline.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The sidecar format this build writes and reads.
pub const BINDING_VERSION: u32 = 1;

/// Why a binding file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// Reading, writing or removing the file failed.
    #[error("session binding I/O at {path}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a binding (torn by hand, or written by something else).
    #[error("session binding {path} is unreadable")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// The binding could not be encoded.
    #[error("cannot encode the session binding")]
    Encode(#[source] serde_json::Error),
}

/// Why a stored binding must not be resumed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidationReason {
    /// The binding was written by a newer bridge whose format this one does not know.
    #[error("the session binding has format version {found}, this bridge reads {BINDING_VERSION}")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// Another backend now runs the session; its native ids mean nothing to this one.
    #[error("the backend changed from {from} to {to}")]
    BackendChanged {
        /// The bound backend.
        from: String,
        /// The backend now configured.
        to: String,
    },
    /// The working directory changed; the native session's file context is stale.
    #[error("the working directory changed from {from} to {to}")]
    CwdChanged {
        /// The bound directory.
        from: String,
        /// The directory now.
        to: String,
    },
    /// The model changed; native sessions are tied to their model.
    #[error("the model changed from {from} to {to}")]
    ModelChanged {
        /// The bound model.
        from: String,
        /// The model now.
        to: String,
    },
    /// A hashed setting (system prompt, tool set, auth profile, …) changed.
    #[error("the {name} changed")]
    FingerprintChanged {
        /// The setting's name.
        name: String,
    },
    /// A setting is configured now that the binding did not record, so sameness cannot be shown.
    #[error("the {name} is new since the session was bound")]
    FingerprintAdded {
        /// The setting's name.
        name: String,
    },
    /// A setting the binding recorded is no longer configured.
    #[error("the {name} is no longer set")]
    FingerprintRemoved {
        /// The setting's name.
        name: String,
    },
    /// The backend's own record of the native session is gone (deleted, another config dir), so a
    /// resume would fail or hang (docs/peers/claude.md#missing-session-file).
    #[error("the native session {id} has no session file at {location}")]
    NativeSessionMissing {
        /// The native session id.
        id: String,
        /// Where its file was looked for.
        location: String,
    },
}

/// The settings a native session depends on, as they are now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprints {
    /// The backend id (`codex`, `claude`, …).
    pub backend: String,
    /// The working directory.
    pub cwd: String,
    /// The model id.
    pub model: String,
    /// Name → `sha256:<hex>` of every other setting that invalidates a resume (hashes, not values,
    /// because some are large), and `hmac-sha256:<hex>` of the secret ones once keyed.
    pub hashes: BTreeMap<String, String>,
    /// Secret settings not yet keyed ([`Fingerprints::keyed`]): held as digests in memory only, so
    /// no unsalted hash of a secret is ever written or logged.
    secrets: SecretDigests,
}

/// Digests of secret settings by name; its `Debug` shows the names only.
#[derive(Clone, Default, PartialEq, Eq)]
struct SecretDigests(BTreeMap<String, [u8; 32]>);

impl std::fmt::Debug for SecretDigests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl Fingerprints {
    /// The settings every binding has.
    pub fn new(backend: impl Into<String>, cwd: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            backend: backend.into(),
            cwd: cwd.into(),
            model: model.into(),
            hashes: BTreeMap::new(),
            secrets: SecretDigests::default(),
        }
    }

    /// Adds a secret setting (an auth key, credentials): fingerprinted with a keyed hash once
    /// [`keyed`](Self::keyed), never with a plain one.
    pub fn with_secret(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.secrets.0.insert(name.into(), Sha256::digest(value.as_ref()).into());
        self
    }

    /// The fingerprints with every secret setting keyed under `key` (`hmac-sha256:<hex>` in
    /// [`hashes`](Self::hashes)), as a binding stores them.
    pub fn keyed(mut self, key: &FingerprintKey) -> Self {
        for (name, digest) in std::mem::take(&mut self.secrets.0) {
            let hash = key.hash(&name, &digest);
            self.hashes.insert(name, hash);
        }
        self
    }

    /// The hashes a binding compares: secrets not keyed by the caller are keyed under this
    /// process's own key, so they still compare within the process but never match another's.
    fn settled(&self) -> std::borrow::Cow<'_, BTreeMap<String, String>> {
        if self.secrets.0.is_empty() {
            return std::borrow::Cow::Borrowed(&self.hashes);
        }
        std::borrow::Cow::Owned(self.clone().keyed(FingerprintKey::process()).hashes)
    }

    /// Adds a setting given as bytes or text (a system prompt, an auth profile id).
    pub fn with(mut self, name: impl Into<String>, value: impl AsRef<[u8]>) -> Self {
        self.hashes.insert(name.into(), hash_bytes(value.as_ref()));
        self
    }

    /// Adds a setting given as JSON (a tool set, an MCP config). Object keys are sorted before
    /// hashing, so the same settings always give the same hash whatever their key order.
    pub fn with_json(mut self, name: impl Into<String>, value: &Value) -> Self {
        let mut canonical = String::new();
        write_canonical(value, &mut canonical);
        self.hashes.insert(name.into(), hash_bytes(canonical.as_bytes()));
        self
    }
}

/// A stored binding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// The sidecar format version, so a future format is refused instead of misread.
    pub version: u32,
    /// The backend that owns `native_session_id`.
    pub backend: String,
    /// The native thread (Codex) or session (Claude) id to resume.
    pub native_session_id: String,
    /// The working directory the native session was created in.
    pub cwd: String,
    /// The model the native session was created with.
    pub model: String,
    /// Hashes of the other settings the session depends on (see [`Fingerprints::hashes`]).
    #[serde(default)]
    pub fingerprints: BTreeMap<String, String>,
    /// When the binding was written (ISO 8601), for people reading the file.
    #[serde(default)]
    pub updated_at: String,
    /// The host transcript position the native session was in step with: the idempotency scope
    /// (`clawbridge:<runId>`) of the attempt that last ran in it, whose rows end the transcript while
    /// nothing else moved it. Absent in bindings written before it existed (never compared then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_position: Option<String>,
}

impl Binding {
    /// A binding of `native_session_id` under the settings `current`.
    pub fn new(native_session_id: impl Into<String>, current: &Fingerprints) -> Self {
        Self {
            version: BINDING_VERSION,
            backend: current.backend.clone(),
            native_session_id: native_session_id.into(),
            cwd: current.cwd.clone(),
            model: current.model.clone(),
            fingerprints: current.settled().into_owned(),
            updated_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
            transcript_position: None,
        }
    }

    /// The binding, recording the transcript position it was made at.
    pub fn at_position(mut self, position: Option<String>) -> Self {
        self.transcript_position = position;
        self
    }

    /// Whether the session may be resumed under `current`; otherwise the first reason it may not,
    /// checked in a fixed order (version, backend, cwd, model, then hashed settings by name).
    pub fn check(&self, current: &Fingerprints) -> Result<(), InvalidationReason> {
        if self.version != BINDING_VERSION {
            return Err(InvalidationReason::UnsupportedVersion { found: self.version });
        }
        if self.backend != current.backend {
            return Err(InvalidationReason::BackendChanged { from: self.backend.clone(), to: current.backend.clone() });
        }
        if self.cwd != current.cwd {
            return Err(InvalidationReason::CwdChanged { from: self.cwd.clone(), to: current.cwd.clone() });
        }
        if self.model != current.model {
            return Err(InvalidationReason::ModelChanged { from: self.model.clone(), to: current.model.clone() });
        }
        let hashes = current.settled();
        for (name, hash) in &self.fingerprints {
            match hashes.get(name) {
                None => return Err(InvalidationReason::FingerprintRemoved { name: name.clone() }),
                Some(now) if now != hash => return Err(InvalidationReason::FingerprintChanged { name: name.clone() }),
                Some(_) => {}
            }
        }
        if let Some(name) = hashes.keys().find(|name| !self.fingerprints.contains_key(*name)) {
            return Err(InvalidationReason::FingerprintAdded { name: name.clone() });
        }
        Ok(())
    }

    /// Reads the binding at `path`; `None` when there is none.
    pub fn load(path: &Path) -> Result<Option<Binding>, BindingError> {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(BindingError::Io { path: path.to_path_buf(), source }),
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| BindingError::Corrupt { path: path.to_path_buf(), source })
    }

    /// Writes the binding to `path` atomically: a temporary file in the same directory, `fsync`ed,
    /// then renamed over `path`, so a reader sees the old binding or the new one, never half of one.
    pub fn save(&self, path: &Path) -> Result<(), BindingError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BindingError::Io { path, source }
        };
        let mut bytes = serde_json::to_vec_pretty(self).map_err(BindingError::Encode)?;
        bytes.push(b'\n');
        // Private, durable, and never through a planted link (crate::state_files).
        crate::state_files::replace(path, &bytes).map_err(io(path))
    }

    /// Removes the binding at `path` (the host's `reset`); `Ok(false)` if there was none.
    pub fn reset(path: &Path) -> Result<bool, BindingError> {
        match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(BindingError::Io { path: path.to_path_buf(), source }),
        }
    }
}

/// The sidecar beside a transcript file: `<transcript>.binding.json`.
pub fn sidecar_path(transcript: &Path) -> PathBuf {
    let mut name = transcript.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(".binding.json");
    transcript.with_file_name(name)
}

/// `sha256:<hex>` of `bytes`: how a fingerprint names a setting without holding it (secrets too).
pub fn hash_bytes(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The key secret fingerprints are keyed with: 32 random bytes in a `0600` file beside the bindings
/// it keys. Losing or replacing it only means that bindings start fresh.
#[derive(Clone)]
pub struct FingerprintKey([u8; FingerprintKey::LEN]);

impl std::fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FingerprintKey(<redacted>)")
    }
}

impl FingerprintKey {
    /// The key file's name inside the directory it keys.
    pub const FILE_NAME: &'static str = "fingerprint.key";
    /// The key's length in bytes (HMAC-SHA256's block-sized keys are no stronger).
    const LEN: usize = 32;

    /// The key kept in `dir`, created when there is none. A key file that is not a private regular
    /// file of exactly [`LEN`](Self::LEN) bytes owned by its folder's owner (a planted symlink, another
    /// user's file, a torn write) is warned about and replaced by a new key; when no key can be
    /// stored, this process's own key is used, so bindings then last only as long as the process.
    pub fn load_or_create(dir: &Path) -> FingerprintKey {
        let path = dir.join(Self::FILE_NAME);
        match Self::read(&path) {
            Ok(Some(key)) => return key,
            Ok(None) => {}
            Err(why) if why.is_replaceable() => {
                tracing::warn!(path = %path.display(), %why, "replacing an unusable fingerprint key; session bindings start fresh");
                // Unlinks a planted symlink itself, never its target.
                if let Err(error) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), %error, "could not remove the unusable fingerprint key");
                }
            }
            // A key that could not be read this time (no fds left, an I/O error, no permission) may
            // be fine: it stays, and this process keys with its own.
            Err(why) => {
                tracing::warn!(path = %path.display(), %why, "could not read the fingerprint key; session bindings last only this process");
                return Self::process().clone();
            }
        }
        let key = FingerprintKey(random_bytes());
        // Two bridges replacing one bad key: one's `remove_file` can delete the key the other just
        // created, so what is on disk after creating is the key, and a removed one is created again.
        for _ in 0..3 {
            let stored =
                crate::state_files::create_dir_all(dir).and_then(|()| crate::state_files::create_new(&path, &key.0));
            // Already there: another bridge created it first, and its key is the one on disk.
            if let Err(error) = stored {
                if error.kind() != std::io::ErrorKind::AlreadyExists {
                    tracing::warn!(path = %path.display(), %error, "could not store the fingerprint key; session bindings last only this process");
                    return key;
                }
            }
            match Self::read(&path) {
                Ok(Some(on_disk)) => return on_disk,
                Ok(None) => {}
                Err(why) => {
                    tracing::warn!(path = %path.display(), %why, "the fingerprint key on disk is unusable; session bindings last only this process");
                    return key;
                }
            }
        }
        tracing::warn!(path = %path.display(), "the fingerprint key keeps disappearing; session bindings last only this process");
        key
    }

    /// A key for this process alone: bindings keyed with it are never resumed by another process.
    pub fn process() -> &'static FingerprintKey {
        static KEY: OnceLock<FingerprintKey> = OnceLock::new();
        KEY.get_or_init(|| FingerprintKey(random_bytes()))
    }

    /// The key at `path`: `None` when there is none, an error saying why it is unusable otherwise.
    fn read(path: &Path) -> Result<Option<FingerprintKey>, UnusableKey> {
        // O_NOFOLLOW: a symlink in the key's place is refused (ELOOP), not followed.
        let mut file = match crate::state_files::open(path, std::fs::OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => return Err(UnusableKey::Symlink),
            Err(e) => return Err(UnusableKey::Io(e)),
        };
        let meta = file.metadata().map_err(UnusableKey::Io)?;
        if !meta.is_file() {
            return Err(UnusableKey::NotAFile);
        }
        // Ours (this bridge's effective user created it: under sudo, in a root-owned shared state
        // dir) or the folder owner's; a key file of any other user was planted.
        let owner = path.parent().and_then(|dir| std::fs::metadata(dir).ok()).map(|dir| dir.uid());
        let ours = meta.uid() == nix::unistd::geteuid().as_raw();
        if !ours && owner.is_some_and(|owner| owner != meta.uid()) {
            return Err(UnusableKey::Foreign { uid: meta.uid() });
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(UnusableKey::Shared { mode: meta.permissions().mode() & 0o777 });
        }
        let mut bytes = Vec::with_capacity(Self::LEN + 1);
        file.by_ref().take(Self::LEN as u64 + 1).read_to_end(&mut bytes).map_err(UnusableKey::Io)?;
        let key: [u8; Self::LEN] = bytes.try_into().map_err(|b: Vec<u8>| UnusableKey::Length { len: b.len() })?;
        Ok(Some(FingerprintKey(key)))
    }

    /// `hmac-sha256:<hex>` of a secret setting's digest, bound to its name.
    fn hash(&self, name: &str, digest: &[u8; 32]) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(name.as_bytes());
        mac.update(&[0]);
        mac.update(digest);
        let mut out = String::from("hmac-sha256:");
        for byte in mac.finalize().into_bytes() {
            out.push_str(&format!("{byte:02x}"));
        }
        out
    }
}

/// Why a key file is not used.
#[derive(Debug, thiserror::Error)]
enum UnusableKey {
    /// A symlink is in its place (refused with `ELOOP`, never followed).
    #[error("it is a symlink")]
    Symlink,
    /// It cannot be opened or read now (no fds left, an I/O error, no permission): it may be fine.
    #[error("it cannot be read: {0}")]
    Io(#[source] std::io::Error),
    /// It is a folder, a device, a FIFO.
    #[error("it is not a regular file")]
    NotAFile,
    /// Another user owns it: it was planted.
    #[error("it belongs to uid {uid}, neither this bridge's user nor its folder's owner")]
    Foreign {
        /// Its owner.
        uid: u32,
    },
    /// Others may read it, so the key may be known.
    #[error("its mode {mode:o} lets others read it")]
    Shared {
        /// Its permission bits.
        mode: u32,
    },
    /// It is torn or not a key.
    #[error("it holds {len} bytes, not {}", FingerprintKey::LEN)]
    Length {
        /// Its length (up to one byte more than a key).
        len: usize,
    },
}

impl UnusableKey {
    /// Whether the file is certainly not a usable key (planted, foreign, shared, torn), so it is
    /// deleted and replaced; a key that only could not be read now is left alone.
    fn is_replaceable(&self) -> bool {
        !matches!(self, UnusableKey::Io(_))
    }
}

/// Random key bytes from the OS. Should the OS refuse (it never does on a working Linux), a digest
/// of what differs between processes stands in: such a key is only ever worse at staying secret,
/// never at telling settings apart.
fn random_bytes() -> [u8; FingerprintKey::LEN] {
    let mut bytes = [0u8; FingerprintKey::LEN];
    if let Err(error) = getrandom::fill(&mut bytes) {
        tracing::warn!(%error, "the OS gave no random bytes for the fingerprint key");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let seed = format!("{}:{}:{:p}", std::process::id(), now.as_nanos(), &bytes);
        bytes = Sha256::digest(seed.as_bytes()).into();
    }
    bytes
}

/// JSON with object keys sorted at every level; independent of serde_json's map ordering feature,
/// which another crate in the build could switch on.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings() -> Fingerprints {
        Fingerprints::new("codex", "/home/dev/demo", "gpt-5")
            .with("systemPrompt", "be brief")
            .with("authProfile", "openai:default")
            .with_json("tools", &json!([{"name": "exec", "parameters": {"type": "object", "required": []}}]))
    }

    #[test]
    fn unchanged_settings_resume() {
        let binding = Binding::new("thr_1", &settings());
        assert_eq!(binding.check(&settings()), Ok(()));
    }

    #[test]
    fn each_change_has_a_named_reason() {
        let binding = Binding::new("thr_1", &settings());
        let mut model = settings();
        model.model = "gpt-6".into();
        assert_eq!(
            binding.check(&model),
            Err(InvalidationReason::ModelChanged { from: "gpt-5".into(), to: "gpt-6".into() })
        );
        let mut cwd = settings();
        cwd.cwd = "/elsewhere".into();
        assert!(matches!(binding.check(&cwd), Err(InvalidationReason::CwdChanged { .. })));
        let mut backend = settings();
        backend.backend = "claude".into();
        assert!(matches!(binding.check(&backend), Err(InvalidationReason::BackendChanged { .. })));
        assert_eq!(
            binding.check(&settings().with("systemPrompt", "be verbose")),
            Err(InvalidationReason::FingerprintChanged { name: "systemPrompt".into() })
        );
        assert_eq!(
            binding.check(&settings().with("mcp", "{}")),
            Err(InvalidationReason::FingerprintAdded { name: "mcp".into() })
        );
        let mut removed = settings();
        removed.hashes.remove("authProfile");
        assert_eq!(binding.check(&removed), Err(InvalidationReason::FingerprintRemoved { name: "authProfile".into() }));
        let reason = binding.check(&model).unwrap_err();
        assert_eq!(reason.to_string(), "the model changed from gpt-5 to gpt-6");
    }

    #[test]
    fn json_fingerprints_ignore_key_order() {
        let a = Fingerprints::default().with_json("tools", &json!({"a": 1, "b": {"y": [1, 2], "x": null}}));
        let b = Fingerprints::default().with_json("tools", &json!({"b": {"x": null, "y": [1, 2]}, "a": 1}));
        let c = Fingerprints::default().with_json("tools", &json!({"b": {"x": null, "y": [2, 1]}, "a": 1}));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.hashes["tools"].starts_with("sha256:") && a.hashes["tools"].len() == 7 + 64);
    }

    #[test]
    fn save_load_reset_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = sidecar_path(&dir.path().join("session.jsonl"));
        assert_eq!(path.file_name().unwrap(), "session.jsonl.binding.json");
        assert_eq!(Binding::load(&path).unwrap(), None);
        let binding = Binding::new("thr_1", &settings());
        binding.save(&path).unwrap();
        assert_eq!(Binding::load(&path).unwrap(), Some(binding.clone()));
        // Overwrite atomically; no temporary file stays behind.
        let rebound = Binding::new("thr_2", &settings());
        rebound.save(&path).unwrap();
        assert_eq!(Binding::load(&path).unwrap().unwrap().native_session_id, "thr_2");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(Binding::reset(&path).unwrap());
        assert!(!Binding::reset(&path).unwrap());
        assert_eq!(Binding::load(&path).unwrap(), None);
    }

    #[test]
    fn unknown_fields_are_kept_out_and_bad_files_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(
            &path,
            r#"{"version":1,"backend":"codex","nativeSessionId":"t","cwd":"/","model":"m","future":true}"#,
        )
        .unwrap();
        let binding = Binding::load(&path).unwrap().unwrap();
        assert_eq!(binding.check(&Fingerprints::new("codex", "/", "m")), Ok(()));
        std::fs::write(&path, b"{\"version\":1,").unwrap();
        assert!(matches!(Binding::load(&path), Err(BindingError::Corrupt { .. })));
        std::fs::write(&path, r#"{"version":2,"backend":"codex","nativeSessionId":"t","cwd":"/","model":"m"}"#)
            .unwrap();
        let binding = Binding::load(&path).unwrap().unwrap();
        assert_eq!(
            binding.check(&Fingerprints::new("codex", "/", "m")),
            Err(InvalidationReason::UnsupportedVersion { found: 2 })
        );
    }

    #[test]
    fn a_secret_is_keyed_the_same_under_one_key_and_differently_under_another_state_dirs() {
        let (one, other) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let key = FingerprintKey::load_or_create(one.path());
        let again = FingerprintKey::load_or_create(one.path());
        let elsewhere = FingerprintKey::load_or_create(other.path());
        let auth = |secret: &str, key: &FingerprintKey| {
            Fingerprints::new("claude", "/", "m").with_secret("authProfile", secret).keyed(key).hashes["authProfile"]
                .clone()
        };
        assert!(auth("sk-1", &key).starts_with("hmac-sha256:"), "{}", auth("sk-1", &key));
        assert_eq!(auth("sk-1", &key), auth("sk-1", &again), "the key file is read back");
        assert_ne!(auth("sk-1", &key), auth("sk-2", &key), "another secret, another fingerprint");
        assert_ne!(auth("sk-1", &key), auth("sk-1", &elsewhere), "another state dir, another key");
        // The stored binding holds neither the secret nor its unsalted hash.
        let bound =
            Binding::new("s", &Fingerprints::new("claude", "/", "m").with_secret("authProfile", "sk-1").keyed(&key));
        let text = serde_json::to_string(&bound).unwrap();
        assert!(!text.contains("sk-1") && !text.contains(&hash_bytes(b"sk-1")[7..]), "{text}");
        assert_eq!(
            bound.check(&Fingerprints::new("claude", "/", "m").with_secret("authProfile", "sk-1").keyed(&again)),
            Ok(())
        );
        assert_eq!(
            bound.check(&Fingerprints::new("claude", "/", "m").with_secret("authProfile", "sk-2").keyed(&again)),
            Err(InvalidationReason::FingerprintChanged { name: "authProfile".into() })
        );
    }

    #[test]
    fn unkeyed_secrets_compare_within_the_process_and_are_never_stored_plain() {
        let current = || Fingerprints::new("codex", "/", "m").with_secret("auth", "sk-1");
        let bound = Binding::new("t", &current());
        assert_eq!(bound.check(&current()), Ok(()));
        assert!(bound.check(&Fingerprints::new("codex", "/", "m").with_secret("auth", "sk-2")).is_err());
        assert!(bound.fingerprints["auth"].starts_with("hmac-sha256:"), "{:?}", bound.fingerprints);
        assert!(!format!("{:?}", current()).contains(&hash_bytes(b"sk-1")[7..]), "Debug shows no digest");
    }

    #[test]
    fn the_key_file_is_private_and_a_planted_symlink_or_torn_file_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FingerprintKey::FILE_NAME);
        let key = FingerprintKey::load_or_create(dir.path());
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), key.0);

        let planted = tempfile::tempdir().unwrap();
        let target = planted.path().join("chosen.key");
        std::fs::write(&target, [7u8; FingerprintKey::LEN]).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let fresh = FingerprintKey::load_or_create(dir.path());
        assert_ne!(fresh.0, [7u8; FingerprintKey::LEN], "the planted key is not used");
        assert_eq!(std::fs::read(&target).unwrap(), [7u8; FingerprintKey::LEN], "the link's target is untouched");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file(), "the link was replaced by a key file");
        assert_eq!(std::fs::read(&path).unwrap(), fresh.0);

        std::fs::write(&path, b"short").unwrap();
        let after_torn = FingerprintKey::load_or_create(dir.path());
        assert_eq!(std::fs::read(&path).unwrap(), after_torn.0, "a torn key file is replaced");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let after_open = FingerprintKey::load_or_create(dir.path());
        assert_ne!(after_open.0, after_torn.0, "a key others can read is not kept");
    }

    #[test]
    fn a_key_this_user_created_in_a_folder_owned_by_another_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("shared");
        std::fs::create_dir(&state).unwrap();
        // As root (sudo clawbridge run, a root-owned shared state dir the other way round), the
        // folder can belong to someone else; elsewhere the folder is ours and this checks the same.
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&state, Some(65534), None).unwrap();
        }
        let first = FingerprintKey::load_or_create(&state);
        let second = FingerprintKey::load_or_create(&state);
        assert_eq!(first.0, second.0, "the key is read back, not recreated every run");
    }

    #[test]
    fn only_a_key_file_that_is_certainly_bad_is_deleted() {
        let errno = |code| UnusableKey::Io(std::io::Error::from_raw_os_error(code));
        for transient in [nix::libc::EMFILE, nix::libc::EIO, nix::libc::EACCES] {
            assert!(!errno(transient).is_replaceable(), "errno {transient} leaves the key alone");
        }
        for bad in [
            UnusableKey::Symlink,
            UnusableKey::NotAFile,
            UnusableKey::Foreign { uid: 1 },
            UnusableKey::Shared { mode: 0o644 },
            UnusableKey::Length { len: 3 },
        ] {
            assert!(bad.is_replaceable(), "{bad}");
        }
    }

    #[test]
    fn a_key_that_cannot_be_read_now_is_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FingerprintKey::FILE_NAME);
        let stored = FingerprintKey::load_or_create(dir.path());
        // A key file of mode 000 is unreadable (EACCES) for anyone but root.
        if nix::unistd::geteuid().is_root() {
            return;
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        let used = FingerprintKey::load_or_create(dir.path());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_ne!(used.0, stored.0, "this process keys with its own");
        assert_eq!(std::fs::read(&path).unwrap(), stored.0, "the stored key is still there");
    }
}
