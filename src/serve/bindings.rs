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
    /// This process's bindings, so an unwritable file never loses a binding mid-run; each says
    /// whether it reached its file. One that did and whose file is gone was removed by another
    /// bridge process sharing the state dir (a reset or deletion OpenClaw sent to the bridge of
    /// another plugin registry) and is not resumed.
    memory: Mutex<HashMap<String, (Binding, bool)>>,
    /// Keys the secret fingerprints (auth) the files hold, kept beside `dir` (binding.rs).
    key: FingerprintKey,
    /// Sessions whose binding a reset dropped, with the transcript position it had: OpenClaw may
    /// reset a session in place (same id, the old entries still in its transcript), and the next
    /// attempt must then not seed the new native session with what the reset put behind it. Kept
    /// on disk too (`<state>/serve/resets/`), so another bridge process honours it.
    resets: Mutex<HashMap<String, Option<String>>>,
}

impl Bindings {
    /// Bindings stored under `dir` (created on the first save).
    pub fn new(dir: Option<PathBuf>) -> Self {
        // Beside the bindings' folder, whose entries are all bindings.
        let key_dir = dir.as_deref().map(|dir| dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(dir));
        let key = key_dir.map_or_else(|| FingerprintKey::process().clone(), FingerprintKey::load_or_create);
        Self { dir, memory: Mutex::default(), key, resets: Mutex::default() }
    }

    fn path(&self, session_id: &str) -> Option<PathBuf> {
        let digest = Sha256::digest(session_id.as_bytes());
        let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.as_ref().map(|dir| dir.join(format!("{name}.json")))
    }

    /// The binding of `session_id`, from memory or disk, whatever settings it was made under.
    fn load(&self, session_id: &str) -> Option<Binding> {
        let remembered = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id).cloned();
        let remembered = match remembered {
            Some((_, true)) if self.path(session_id).is_some_and(|path| !path.exists()) => {
                tracing::info!(session = session_id, "the session's binding was removed by another bridge process");
                self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(session_id);
                return None;
            }
            other => other.map(|(binding, _)| binding),
        };
        match remembered {
            Some(binding) => Some(binding),
            None => {
                let path = self.path(session_id)?;
                match Binding::load(&path) {
                    Ok(found) => found,
                    Err(error) => {
                        tracing::warn!(%error, session = session_id, "ignoring an unreadable session binding");
                        None
                    }
                }
            }
        }
    }

    /// The native session side work of `session_id` may copy (an ephemeral fork, which leaves it
    /// as it was): the bound one, when the same backend made it in the same working directory.
    /// The other settings need not match: the copy runs under the side work's own (no tools, its
    /// model), and the bound session is never continued by it.
    pub fn thread_to_fork(&self, session_id: &str, backend: &str, cwd: &str) -> Option<String> {
        let binding = self.load(session_id)?;
        (binding.backend == backend && binding.cwd == cwd).then_some(binding.native_session_id)
    }

    /// The thread to resume for `session_id` under `current`, if there is a valid binding.
    #[cfg(test)]
    pub fn thread_for(&self, session_id: &str, current: &Fingerprints) -> Option<String> {
        self.lookup(session_id, current).ok().map(|bound| bound.native_session_id)
    }

    /// The valid binding of `session_id` under `current`, or why there is none to resume.
    pub fn lookup(&self, session_id: &str, current: &Fingerprints) -> Result<Binding, FreshReason> {
        let current = &current.clone().keyed(&self.key);
        let binding = self.load(session_id).ok_or(FreshReason::Unbound)?;
        match binding.check(current) {
            Ok(()) => Ok(binding),
            Err(reason) => {
                tracing::info!(session = session_id, %reason, "not resuming the session's native thread");
                Err(reason.into())
            }
        }
    }

    /// The native session `session_id` is bound to, whatever settings it was bound under (for work
    /// on that very native session, such as compacting it; a resume checks the settings).
    pub fn native_id(&self, session_id: &str) -> Option<String> {
        self.load(session_id).map(|binding| binding.native_session_id)
    }

    /// Binds `session_id` to `thread_id` under `current`, in memory and on disk.
    #[cfg(test)]
    pub fn save(&self, session_id: &str, thread_id: &str, current: &Fingerprints) {
        self.save_at(session_id, thread_id, current, None);
    }

    /// [`save`](Self::save), recording the transcript `position` the binding is made at.
    pub fn save_at(&self, session_id: &str, thread_id: &str, current: &Fingerprints, position: Option<&str>) {
        let binding = Binding::new(thread_id, &current.clone().keyed(&self.key)).at_position(position.map(Into::into));
        let mut on_disk = false;
        if let Some(path) = self.path(session_id) {
            match binding.save(&path) {
                Ok(()) => on_disk = true,
                Err(error) => {
                    tracing::warn!(%error, session = session_id, "could not store the session binding on disk");
                }
            }
        }
        self.memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(session_id.to_string(), (binding, on_disk));
        // A new binding starts after the reset: its own position tells the next attempt the rest.
        self.clear_reset(session_id);
    }

    /// [`save_at`](Self::save_at), unless `session_id` is already bound to `thread_id` under
    /// `current` at `position` (backends announce their id more than once; the file is written once).
    pub fn save_if_changed(&self, session_id: &str, thread_id: &str, current: &Fingerprints, position: Option<&str>) {
        let keyed = current.clone().keyed(&self.key);
        let same = self.memory.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id).is_some_and(
            |(b, _)| {
                b.native_session_id == thread_id
                    && b.transcript_position.as_deref() == position
                    && b.check(&keyed).is_ok()
            },
        );
        if !same {
            self.save_at(session_id, thread_id, current, position);
        }
    }

    /// Whether `session_id` has a binding (in memory or on disk), whatever it was made under.
    pub fn contains(&self, session_id: &str) -> bool {
        let on_disk = self.path(session_id).is_some_and(|path| matches!(Binding::load(&path), Ok(Some(_))));
        // Only what never reached its file counts from memory (as in `thread_for`).
        on_disk
            || self
                .memory
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(session_id)
                .is_some_and(|(_, saved)| !saved || self.dir.is_none())
    }

    /// Drops the binding of `session_id` and returns it (from memory, else its file), when there
    /// was one.
    pub fn take(&self, session_id: &str) -> Option<Binding> {
        let remembered = self
            .memory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(session_id)
            .map(|(binding, _)| binding.clone());
        let stored = remembered.or_else(|| self.path(session_id).and_then(|path| Binding::load(&path).ok().flatten()));
        let dropped = self.reset(session_id);
        stored.filter(|_| dropped)
    }

    /// Drops the binding of `session_id`; whether there was one.
    pub fn reset(&self, session_id: &str) -> bool {
        if let Some(dropped) = self.load(session_id) {
            self.mark_reset(session_id, dropped.transcript_position);
        }
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

    /// Where reset marks live: beside the bindings' folder.
    fn reset_path(&self, session_id: &str) -> Option<PathBuf> {
        let bindings = self.path(session_id)?;
        let name = bindings.file_name()?.to_owned();
        Some(bindings.parent()?.parent()?.join("resets").join(name))
    }

    fn mark_reset(&self, session_id: &str, position: Option<String>) {
        if let Some(path) = self.reset_path(session_id) {
            let written = path.parent().map_or(Ok(()), clawbridge_bridge::state_files::create_dir_all).and_then(|()| {
                clawbridge_bridge::state_files::replace(&path, position.as_deref().unwrap_or("").as_bytes())
            });
            if let Err(error) = written {
                tracing::warn!(%error, session = session_id, "could not store the session's reset mark on disk");
            }
        }
        self.resets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(session_id.to_owned(), position);
    }

    /// Whether a reset dropped `session_id`'s binding since it was last bound, and the transcript
    /// position that binding had (`None`: unknown, so nothing before the reset can be told apart).
    pub fn reset_mark(&self, session_id: &str) -> Option<Option<String>> {
        if let Some(mark) = self.resets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id) {
            return Some(mark.clone());
        }
        let path = self.reset_path(session_id)?;
        // A bounded read: a mark is a run scope, never more than a line.
        let bytes = std::fs::read(&path).ok().filter(|b| b.len() <= 4096)?;
        let text = String::from_utf8(bytes).ok()?;
        Some((!text.is_empty()).then_some(text))
    }

    fn clear_reset(&self, session_id: &str) {
        self.resets.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(session_id);
        if let Some(path) = self.reset_path(session_id) {
            let _ = std::fs::remove_file(path);
        }
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
    fn a_binding_another_bridge_process_removed_is_not_resumed_from_memory() {
        let dir = tempfile::tempdir().unwrap();
        let current = Fingerprints::new("clawbridge-codex", "/w", "m");
        let this = Bindings::new(Some(dir.path().to_path_buf()));
        this.save("s-1", "th-1", &current);
        assert_eq!(this.thread_for("s-1", &current).as_deref(), Some("th-1"));
        // Another bridge on the same state dir got the host's reset.
        assert!(Bindings::new(Some(dir.path().to_path_buf())).reset("s-1"));
        assert_eq!(this.thread_for("s-1", &current), None, "the file is authoritative once written");
        assert!(!this.contains("s-1"));
        // Without a state dir the memory is all there is.
        let memory_only = Bindings::new(None);
        memory_only.save("s-2", "th-2", &current);
        assert_eq!(memory_only.thread_for("s-2", &current).as_deref(), Some("th-2"));
    }

    #[test]
    fn side_work_may_fork_a_binding_of_the_same_backend_and_directory_whatever_its_other_settings() {
        let dir = tempfile::tempdir().unwrap();
        let bindings = Bindings::new(Some(dir.path().to_path_buf()));
        let made = Fingerprints::new("clawbridge-codex", "/w", "m").with("contextEpoch", "e1").with("tools", "t");
        bindings.save("s-1", "th-1", &made);
        let later = Bindings::new(Some(dir.path().to_path_buf()));
        assert_eq!(later.thread_to_fork("s-1", "clawbridge-codex", "/w").as_deref(), Some("th-1"));
        assert_eq!(later.thread_to_fork("s-1", "clawbridge-claude", "/w"), None, "another backend's session");
        assert_eq!(later.thread_to_fork("s-1", "clawbridge-codex", "/elsewhere"), None, "another directory");
        assert_eq!(later.thread_to_fork("s-2", "clawbridge-codex", "/w"), None);
        // A new context epoch is another thread to resume, not to fork.
        let next_epoch = Fingerprints::new("clawbridge-codex", "/w", "m").with("contextEpoch", "e2").with("tools", "t");
        assert_eq!(later.thread_for("s-1", &next_epoch), None);
        assert_eq!(later.thread_for("s-1", &made).as_deref(), Some("th-1"));
    }

    #[test]
    fn a_reset_leaves_a_mark_with_the_dropped_position_until_the_next_binding() {
        let dir = tempfile::tempdir().unwrap();
        let bindings_dir = dir.path().join("serve").join("bindings");
        let current = Fingerprints::new("clawbridge-codex", "/w", "m");
        let this = Bindings::new(Some(bindings_dir.clone()));
        this.save_at("s-1", "th-1", &current, Some("clawbridge:run-1"));
        assert_eq!(this.reset_mark("s-1"), None);
        assert!(this.reset("s-1"));
        assert_eq!(this.reset_mark("s-1"), Some(Some("clawbridge:run-1".into())));
        // Another bridge process on the same state dir sees it too.
        assert_eq!(Bindings::new(Some(bindings_dir.clone())).reset_mark("s-1"), Some(Some("clawbridge:run-1".into())));
        this.save_at("s-1", "th-2", &current, Some("clawbridge:run-2"));
        assert_eq!(this.reset_mark("s-1"), None);
        assert_eq!(Bindings::new(Some(bindings_dir)).reset_mark("s-1"), None);
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
