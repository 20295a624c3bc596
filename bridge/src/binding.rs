//! The binding between an OpenClaw session and a native thread/session, kept in a JSON sidecar next
//! to the transcript so the next turn can resume the native session instead of starting over.
//!
//! A resume is only valid while the settings the native session was created with still hold. The
//! binding stores them (backend, cwd and model in clear, everything else as hashes) and
//! [`Binding::check`] names the first one that changed, so the caller starts a fresh session and
//! can say why — never silently (docs/peers/openclaw.md#session-bindings).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Name → `sha256:<hex>` of every other setting that invalidates a resume. Hashes, not values,
    /// because some (system prompt, auth profile) are large or secret.
    pub hashes: BTreeMap<String, String>,
}

impl Fingerprints {
    /// The settings every binding has.
    pub fn new(backend: impl Into<String>, cwd: impl Into<String>, model: impl Into<String>) -> Self {
        Self { backend: backend.into(), cwd: cwd.into(), model: model.into(), hashes: BTreeMap::new() }
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
            fingerprints: current.hashes.clone(),
            updated_at: humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        }
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
        for (name, hash) in &self.fingerprints {
            match current.hashes.get(name) {
                None => return Err(InvalidationReason::FingerprintRemoved { name: name.clone() }),
                Some(now) if now != hash => return Err(InvalidationReason::FingerprintChanged { name: name.clone() }),
                Some(_) => {}
            }
        }
        if let Some(name) = current.hashes.keys().find(|name| !self.fingerprints.contains_key(*name)) {
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
}
