//! The sessions' native thread bindings, kept in memory and on disk under the state directory, so a
//! session resumes its thread in a later bridge process too: OpenClaw starts a new CLI process (and
//! with it a new `clawbridge serve`) for each `openclaw agent` run.
//!
//! One file per session, `<state>/serve/bindings/<sha256(sessionId)>.json` (a hash because session
//! ids come from the host and must not name paths). Each stores the backend's fingerprints of the
//! settings it was created under (`Backend::fingerprints`); a binding made under other settings is
//! not resumed, and the log says why (docs/peers/openclaw.md#session-bindings).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use clawbridge_bridge::binding::{Binding, FingerprintKey, Fingerprints};
use sha2::{Digest, Sha256};

use super::projection::FreshReason;

/// Bindings by session id.
pub struct Bindings {
    /// Where binding files live; `None` keeps them in memory only (no state dir).
    dir: Option<PathBuf>,
    /// This process's bindings, so a lost or unwritable file never loses a binding mid-run.
    memory: Mutex<HashMap<String, Binding>>,
    /// Keys the secret fingerprints (auth) the files hold, kept beside `dir` (binding.rs).
    key: FingerprintKey,
}

impl Bindings {
    /// Bindings stored under `dir` (created on the first save).
    pub fn new(dir: Option<PathBuf>) -> Self {
        // Beside the bindings' folder, whose entries are all bindings.
        let key_dir = dir.as_deref().map(|dir| dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(dir));
        let key = key_dir.map_or_else(|| FingerprintKey::process().clone(), FingerprintKey::load_or_create);
        Self { dir, memory: Mutex::default(), key }
    }

    fn path(&self, session_id: &str) -> Option<PathBuf> {
        let digest = Sha256::digest(session_id.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.as_ref().map(|dir| dir.join(format!("{name}.json")))
    }

    /// The thread to resume for `session_id` under `current`, if there is a valid binding.
    #[cfg(test)]
    pub fn thread_for(&self, session_id: &str, current: &Fingerprints) -> Option<String> {
        self.lookup(session_id, current).ok().map(|bound| bound.native_session_id)
    }

    /// The valid binding of `session_id` under `current`, or why there is none to resume.
    pub fn lookup(&self, session_id: &str, current: &Fingerprints) -> Result<Binding, FreshReason> {
        let current = &current.clone().keyed(&self.key);
        let remembered = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id).cloned();
        let binding = match remembered {
            Some(binding) => binding,
            None => {
                let path = self.path(session_id).ok_or(FreshReason::Unbound)?;
                match Binding::load(&path) {
                    Ok(Some(binding)) => binding,
                    Ok(None) => return Err(FreshReason::Unbound),
                    Err(error) => {
                        tracing::warn!(%error, session = session_id, "ignoring an unreadable session binding");
                        return Err(FreshReason::Unbound);
                    }
                }
            }
        };
        match binding.check(current) {
            Ok(()) => Ok(binding),
            Err(reason) => {
                tracing::info!(session = session_id, %reason, "not resuming the session's native thread");
                Err(reason.into())
            }
        }
    }

    /// Binds `session_id` to `thread_id` under `current`, in memory and on disk.
    #[cfg(test)]
    pub fn save(&self, session_id: &str, thread_id: &str, current: &Fingerprints) {
        self.save_at(session_id, thread_id, current, None);
    }

    /// [`save`](Self::save), recording the transcript `position` the binding is made at.
    pub fn save_at(&self, session_id: &str, thread_id: &str, current: &Fingerprints, position: Option<&str>) {
        let binding = Binding::new(thread_id, &current.clone().keyed(&self.key)).at_position(position.map(Into::into));
        if let Some(path) = self.path(session_id) {
            if let Err(error) = binding.save(&path) {
                tracing::warn!(%error, session = session_id, "could not store the session binding on disk");
            }
        }
        self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(session_id.to_string(), binding);
    }

    /// [`save`](Self::save), unless `session_id` is already bound to `thread_id` under `current`
    /// (backends announce their id more than once; the file is written once).
    pub fn save_if_changed(&self, session_id: &str, thread_id: &str, current: &Fingerprints, position: Option<&str>) {
        let keyed = current.clone().keyed(&self.key);
        let same =
            self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id).is_some_and(|b| {
                b.native_session_id == thread_id
                    && b.transcript_position.as_deref() == position
                    && b.check(&keyed).is_ok()
            });
        if !same {
            self.save_at(session_id, thread_id, current, position);
        }
    }

    /// Drops the binding of `session_id`; whether there was one.
    pub fn reset(&self, session_id: &str) -> bool {
        let in_memory =
            self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(session_id).is_some();
        let on_disk = match self.path(session_id) {
            Some(path) => Binding::reset(&path).unwrap_or_else(|error| {
                tracing::warn!(%error, session = session_id, "could not remove the session binding");
                false
            }),
            None => false,
        };
        in_memory || on_disk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_survives_the_process_and_is_only_resumed_under_the_same_settings() {
        let dir = tempfile::tempdir().unwrap();
        let current = Fingerprints::new("clawbridge-codex", "/w", "m");
        Bindings::new(Some(dir.path().to_path_buf())).save("s-1", "th-1", &current);

        let later = Bindings::new(Some(dir.path().to_path_buf()));
        assert_eq!(later.thread_for("s-1", &current).as_deref(), Some("th-1"));
        assert_eq!(later.thread_for("s-1", &Fingerprints::new("clawbridge-codex", "/other", "m")), None);
        assert_eq!(later.thread_for("s-1", &Fingerprints::new("clawbridge-claude", "/w", "m")), None);
        assert_eq!(later.thread_for("s-2", &current), None);
        // The transcript position is kept with the thread, and a new position replaces the binding.
        later.save_if_changed("s-1", "th-1", &current, Some("clawbridge:run-2"));
        let again = Bindings::new(Some(dir.path().to_path_buf()));
        assert_eq!(again.lookup("s-1", &current).unwrap().transcript_position.as_deref(), Some("clawbridge:run-2"));
        assert_eq!(again.lookup("s-2", &current).unwrap_err(), FreshReason::Unbound);
        assert!(later.reset("s-1"));
        assert!(!later.reset("s-1"));
        assert_eq!(Bindings::new(Some(dir.path().to_path_buf())).thread_for("s-1", &current), None);
    }

    #[test]
    fn session_ids_never_name_paths() {
        let dir = tempfile::tempdir().unwrap();
        let bindings = Bindings::new(Some(dir.path().join("b")));
        bindings.save("../../escape", "th", &Fingerprints::new("h", "/", "m"));
        let names: Vec<_> = std::fs::read_dir(dir.path().join("b")).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1);
        assert!(
            names[0].to_string_lossy().chars().all(|c| c.is_ascii_hexdigit() || c == '.' || c.is_ascii_alphabetic())
        );
    }
}
