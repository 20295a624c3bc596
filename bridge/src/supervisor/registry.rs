//! A directory of small JSON records, one per live child, so a bridge restarted after a crash (or a
//! SIGKILL) can find and reap the process groups its predecessor left behind.
//!
//! A record names the child (pid = pgid, and its start time in clock ticks since boot) and its owner
//! (the bridge's pid and start time). The start times guard against pid reuse: a pid whose start
//! time differs is a different process and is never touched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::group::{group_members, signal_group};

/// Why the registry could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Reading or writing the registry directory failed.
    #[error("pid registry I/O at {path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `/proc` did not tell a process's start time.
    #[error("cannot read the start time of pid {pid}")]
    NoStartTime {
        /// The process asked about.
        pid: i32,
    },
}

/// One child, as written to disk.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Record {
    /// The child's pid, also its process-group id.
    pid: i32,
    /// The child's start time (clock ticks after boot), to recognise pid reuse.
    start_ticks: u64,
    /// FNV-1a of the spawned program and arguments; diagnostic (a launcher may `execve` itself).
    command_hash: String,
    /// The bridge that spawned it.
    owner_pid: i32,
    /// The owner's start time, so a new process reusing the owner's pid does not look alive.
    owner_start_ticks: u64,
}

/// A child reaped because its owner was gone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReapedOrphan {
    /// The orphan's process-group id.
    pub pgid: i32,
    /// The pid of the bridge that had spawned it.
    pub owner_pid: i32,
    /// How many live group members were signalled.
    pub members: usize,
}

/// A handle on the registry directory.
#[derive(Clone, Debug)]
pub struct PidRegistry {
    /// Holds one `<pid>.json` per registered child.
    dir: PathBuf,
}

/// Removes its record when dropped, i.e. when the child's handle is gone.
#[derive(Debug)]
pub(crate) struct Registration {
    path: PathBuf,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl PidRegistry {
    /// Opens (creating if needed) a registry in `dir`.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Self, RegistryError> {
        let dir = dir.into();
        crate::state_files::create_dir_all(&dir).map_err(|source| RegistryError::Io { path: dir.clone(), source })?;
        Ok(Self { dir })
    }

    /// The registry's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn register(&self, pid: i32, program: &Path, args: &[OsString]) -> Result<Registration, RegistryError> {
        let me = std::process::id() as i32;
        let record = Record {
            pid,
            start_ticks: start_ticks(pid).ok_or(RegistryError::NoStartTime { pid })?,
            command_hash: command_hash(program, args),
            owner_pid: me,
            owner_start_ticks: start_ticks(me).ok_or(RegistryError::NoStartTime { pid: me })?,
        };
        let path = self.dir.join(format!("{pid}.json"));
        let bytes = serde_json::to_vec(&record).expect("a record serialises");
        crate::state_files::replace(&path, &bytes)
            .map_err(|source| RegistryError::Io { path: path.clone(), source })?;
        Ok(Registration { path })
    }

    /// Kills the process groups of every recorded child whose owning bridge is gone, and removes
    /// records that no longer name a live process. Records of live owners are left alone.
    pub async fn reap_orphans(&self, grace: Duration) -> Result<Vec<ReapedOrphan>, RegistryError> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|source| RegistryError::Io { path: self.dir.clone(), source })?;
        let mut reaped = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let record: Record = match std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
                Some(record) => record,
                None => {
                    tracing::warn!(path = %path.display(), "removing an unreadable pid record");
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
            };
            if start_ticks(record.owner_pid) == Some(record.owner_start_ticks) {
                continue; // its bridge is alive and responsible for it
            }
            let members = orphaned_members(&record);
            if !members.is_empty() {
                tracing::info!(
                    pgid = record.pid,
                    owner = record.owner_pid,
                    members = members.len(),
                    "reaping an orphaned process group"
                );
                signal_group(record.pid, Signal::SIGTERM);
                let deadline = tokio::time::Instant::now() + grace;
                while !orphaned_members(&record).is_empty() && tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                signal_group(record.pid, Signal::SIGKILL);
                reaped.push(ReapedOrphan { pgid: record.pid, owner_pid: record.owner_pid, members: members.len() });
            }
            let _ = std::fs::remove_file(&path);
        }
        Ok(reaped)
    }
}

/// Live members of the recorded group that are provably the recorded child's: the leader itself
/// with the recorded start time, or (leader gone) members that started no earlier than it did.
/// A pid reused by an unrelated group leader has a different start time and is skipped.
fn orphaned_members(record: &Record) -> Vec<i32> {
    match start_ticks(record.pid) {
        Some(ticks) if ticks != record.start_ticks => Vec::new(),
        _ => group_members(record.pid)
            .into_iter()
            .filter(|&pid| start_ticks(pid).is_some_and(|t| t >= record.start_ticks))
            .collect(),
    }
}

fn start_ticks(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid).ok()?.stat().ok().map(|s| s.starttime)
}

/// FNV-1a, 64-bit: stable across Rust releases (unlike `DefaultHasher`), and a diagnostic only.
fn command_hash(program: &Path, args: &[OsString]) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in std::iter::once(program.as_os_str()).chain(args.iter().map(OsString::as_os_str)) {
        for &byte in part.as_bytes().iter().chain(std::iter::once(&0u8)) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_hash_is_stable_and_separates_arguments() {
        let a = command_hash(Path::new("codex"), &["app-server".into()]);
        assert_eq!(a, command_hash(Path::new("codex"), &["app-server".into()]));
        assert_ne!(a, command_hash(Path::new("codexapp-server"), &[]));
        assert_eq!(a.len(), 16);
    }

    #[tokio::test]
    async fn records_of_a_live_owner_are_left_alone_and_dead_pids_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(dir.path()).unwrap();
        let me = std::process::id() as i32;
        let mine = registry.register(me, Path::new("self"), &[]).unwrap();
        assert!(registry.reap_orphans(Duration::from_millis(10)).await.unwrap().is_empty());
        assert!(dir.path().join(format!("{me}.json")).exists(), "a live owner's record stays");
        drop(mine);
        assert!(!dir.path().join(format!("{me}.json")).exists(), "dropping the registration removes it");

        // An owner that no longer exists, naming a child that no longer exists: cleaned, nothing killed.
        let stale = Record {
            pid: i32::MAX - 1,
            start_ticks: 1,
            command_hash: "0".into(),
            owner_pid: i32::MAX - 2,
            owner_start_ticks: 1,
        };
        std::fs::write(dir.path().join("stale.json"), serde_json::to_vec(&stale).unwrap()).unwrap();
        std::fs::write(dir.path().join("torn.json"), b"{\"pid\":").unwrap();
        assert!(registry.reap_orphans(Duration::from_millis(10)).await.unwrap().is_empty());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
