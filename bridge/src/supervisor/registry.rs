//! A directory of small JSON records, one per agent, so a bridge restarted after a crash (or a
//! SIGKILL) can find and stop what its predecessor left behind.
//!
//! A record is written **before** the agent is spawned, naming its owner (the bridge's pid and
//! start time), its containment token and its cgroup (when it has one); after the spawn it also
//! names the agent's pid (= pgid) and start time. A bridge killed at any instant thus leaves either
//! nothing running or a record that says how to find what runs. Start times guard against pid
//! reuse: a pid whose start time differs is a different process and is never touched.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::containment::{self, Token};
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

/// One agent, as written to disk. Every field but the owner's is optional so a record written
/// before the spawn (no pid yet) and one written by an older bridge (no token, no cgroup) are read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
struct Record {
    /// The agent's pid, also its process-group id; absent until the spawn returned.
    #[serde(default)]
    pid: Option<i32>,
    /// The agent's start time (clock ticks after boot), to recognise pid reuse.
    #[serde(default)]
    start_ticks: Option<u64>,
    /// The token in the environment of the agent and every descendant that kept it.
    #[serde(default)]
    token: Option<String>,
    /// The agent's cgroup v2 folder, when it has one.
    #[serde(default)]
    cgroup: Option<PathBuf>,
    /// FNV-1a of the spawned program and arguments; diagnostic (a launcher may `execve` itself).
    command_hash: String,
    /// The bridge that spawned it.
    owner_pid: i32,
    /// The owner's start time, so a new process reusing the owner's pid does not look alive.
    owner_start_ticks: u64,
}

/// An agent (or what it left) stopped because its owner was gone.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReapedOrphan {
    /// The agent's process-group id; `None` when its bridge died before the spawn returned.
    pub pgid: Option<i32>,
    /// The pid of the bridge that had spawned it.
    pub owner_pid: i32,
    /// How many live processes were stopped: the group's members, those carrying the agent's
    /// token and the members of its cgroup, each counted once.
    pub members: usize,
    /// How many of them were outside the agent's process group (`setsid`, a double fork).
    pub outside_group: usize,
    /// The agent's cgroup, killed and removed.
    pub cgroup: Option<PathBuf>,
}

/// A handle on the registry directory.
#[derive(Clone, Debug)]
pub struct PidRegistry {
    /// Holds one `<token>.json` per registered agent.
    dir: PathBuf,
}

/// The record of one agent; removes it when dropped, i.e. when the agent's handle is gone.
#[derive(Debug)]
pub(crate) struct Registration {
    /// The record's file.
    path: PathBuf,
    /// What it says, so the spawn can add the pid without reading it back.
    record: Record,
}

impl Registration {
    /// Adds the spawned agent's pid and start time to the record.
    pub(crate) fn spawned(&mut self, pid: i32) -> Result<(), RegistryError> {
        self.record.pid = Some(pid);
        self.record.start_ticks = Some(start_ticks(pid).ok_or(RegistryError::NoStartTime { pid })?);
        write_record(&self.path, &self.record)
    }

    /// Drops the cgroup from the record (the agent did not join it).
    pub(crate) fn without_cgroup(&mut self) -> Result<(), RegistryError> {
        self.record.cgroup = None;
        write_record(&self.path, &self.record)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn write_record(path: &Path, record: &Record) -> Result<(), RegistryError> {
    let bytes = serde_json::to_vec(record)
        .map_err(|e| RegistryError::Io { path: path.to_path_buf(), source: std::io::Error::other(e) })?;
    crate::state_files::replace(path, &bytes).map_err(|source| RegistryError::Io { path: path.to_path_buf(), source })
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

    /// Records an agent about to be spawned: its owner, token and cgroup, no pid yet.
    pub(crate) fn record_before_spawn(
        &self,
        token: &Token,
        cgroup: Option<&Path>,
        program: &Path,
        args: &[OsString],
    ) -> Result<Registration, RegistryError> {
        let me = std::process::id() as i32;
        let record = Record {
            pid: None,
            start_ticks: None,
            token: Some(token.as_str().to_string()),
            cgroup: cgroup.map(Path::to_path_buf),
            command_hash: command_hash(program, args),
            owner_pid: me,
            owner_start_ticks: start_ticks(me).ok_or(RegistryError::NoStartTime { pid: me })?,
        };
        let path = self.dir.join(format!("{}.json", token.as_str()));
        write_record(&path, &record)?;
        Ok(Registration { path, record })
    }

    /// Stops everything recorded agents left behind whose owning bridge is gone — the agent's
    /// process group, every process carrying its token, its cgroup (killed, then removed) — and
    /// removes their records; then removes empty leftover agent cgroups of bridges that no longer
    /// run (a bridge killed between creating one and recording it).
    /// Records of live owners are left alone. `grace` is the time between SIGTERM and SIGKILL.
    pub async fn reap_orphans(&self, grace: Duration) -> Result<Vec<ReapedOrphan>, RegistryError> {
        let entries =
            std::fs::read_dir(&self.dir).map_err(|source| RegistryError::Io { path: self.dir.clone(), source })?;
        let mut reaped = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if is_stale_temp_file(&entry) {
                // A bridge killed while replacing a record: the record it replaced still holds.
                let _ = std::fs::remove_file(&path);
                continue;
            }
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
            if let Some(orphan) = reap_record(&record, grace).await {
                reaped.push(orphan);
            }
            let _ = std::fs::remove_file(&path);
        }
        // Only empty ones: a leftover that still runs something belongs to a record, perhaps in
        // another state dir, whose own reap reports it.
        for (dir, owner_pid) in containment::leftover_cgroups() {
            if containment::remove(&dir) {
                tracing::debug!(cgroup = %dir.display(), owner = owner_pid, "removed an empty leftover agent cgroup");
            }
        }
        Ok(reaped)
    }
}

/// What an orphaned record lets the reaper find.
struct Orphan<'a> {
    /// The record, for its group (pid and start time guard).
    record: &'a Record,
    /// Its token, if well formed.
    token: Option<Token>,
    /// Its cgroup, if it is one of the bridge's.
    cgroup: Option<&'a Path>,
}

impl Orphan<'_> {
    /// Live members of the recorded group, and live processes outside it that carry the token
    /// or sit in the cgroup.
    fn live(&self) -> (BTreeSet<i32>, BTreeSet<i32>) {
        let group: BTreeSet<i32> = orphaned_members(self.record).into_iter().collect();
        let mut outside: BTreeSet<i32> =
            self.token.as_ref().map(containment::token_carriers).unwrap_or_default().into_iter().collect();
        if let Some(dir) = self.cgroup {
            outside.extend(containment::members(dir));
        }
        let outside = outside.difference(&group).copied().collect();
        (group, outside)
    }

    /// Signals everything found; SIGKILL also goes to the whole cgroup at once.
    fn signal(&self, group: &BTreeSet<i32>, outside: &BTreeSet<i32>, signal: Signal) {
        if let (false, Some(pgid)) = (group.is_empty(), self.record.pid) {
            signal_group(pgid, signal);
        }
        if let (Signal::SIGKILL, Some(dir)) = (signal, self.cgroup) {
            containment::kill_all(dir);
        }
        containment::signal_each(&outside.iter().copied().collect::<Vec<_>>(), signal);
    }
}

/// Stops what one orphaned record names: SIGTERM, up to `grace`, then SIGKILL (repeated, so what
/// forked meanwhile goes too) until nothing is found; then removes the cgroup. `Some` when anything
/// was still running.
async fn reap_record(record: &Record, grace: Duration) -> Option<ReapedOrphan> {
    let cgroup = record.cgroup.as_deref().filter(|dir| {
        let ours = containment::is_agent_cgroup(dir);
        if !ours {
            tracing::warn!(cgroup = %dir.display(), "a pid record names a folder that is not an agent cgroup; ignoring it");
        }
        ours
    });
    let orphan = Orphan { record, token: record.token.as_deref().and_then(Token::parse), cgroup };
    let (group, outside) = orphan.live();
    let stopped = (!group.is_empty() || !outside.is_empty()).then(|| ReapedOrphan {
        pgid: record.pid,
        owner_pid: record.owner_pid,
        members: group.len() + outside.len(),
        outside_group: outside.len(),
        cgroup: cgroup.map(Path::to_path_buf),
    });
    if let Some(stopped) = &stopped {
        tracing::info!(
            pgid = ?record.pid,
            owner = record.owner_pid,
            members = stopped.members,
            outside_group = stopped.outside_group,
            "reaping an orphaned agent"
        );
        orphan.signal(&group, &outside, Signal::SIGTERM);
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let (group, outside) = orphan.live();
            if (group.is_empty() && outside.is_empty()) || tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // SIGKILL is delivered at once but takes effect when each process next runs.
        let deadline = tokio::time::Instant::now() + KILL_SETTLE;
        loop {
            let (group, outside) = orphan.live();
            if group.is_empty() && outside.is_empty() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(pgid = ?record.pid, survivors = group.len() + outside.len(), "orphans survived SIGKILL");
                break;
            }
            orphan.signal(&group, &outside, Signal::SIGKILL);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    if let Some(dir) = cgroup {
        wait_removed(dir, KILL_SETTLE).await;
    }
    stopped
}

/// How old a record's temp file must be before the reaper takes it for a dead writer's: a live
/// bridge renames its temp file into place within milliseconds.
const STALE_TEMP_AGE: Duration = Duration::from_secs(60);

/// A temp file `state_files::replace` left when its writer died before the rename.
fn is_stale_temp_file(entry: &std::fs::DirEntry) -> bool {
    let name = entry.file_name();
    let name = name.to_string_lossy();
    name.starts_with(".clawbridge-")
        && name.ends_with(".tmp")
        && entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMP_AGE)
}

/// How long killed processes get to disappear before the reaper moves on.
const KILL_SETTLE: Duration = Duration::from_secs(2);

/// Removes the cgroup at `dir` once its killed members are gone, waiting up to `limit`.
async fn wait_removed(dir: &Path, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if containment::remove(dir) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(cgroup = %dir.display(), "could not remove an agent cgroup");
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Live members of the recorded group that are provably the recorded child's: the leader itself
/// with the recorded start time, or (leader gone) members that started no earlier than it did.
/// A pid reused by an unrelated group leader has a different start time and is skipped.
/// Without a recorded pid there is no group to look at.
fn orphaned_members(record: &Record) -> Vec<i32> {
    let (Some(pgid), Some(recorded)) = (record.pid, record.start_ticks) else {
        return Vec::new();
    };
    match start_ticks(pgid) {
        Some(ticks) if ticks != recorded => Vec::new(),
        _ => group_members(pgid).into_iter().filter(|&pid| start_ticks(pid).is_some_and(|t| t >= recorded)).collect(),
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
        let token = Token::fresh().unwrap();
        let mut mine = registry.record_before_spawn(&token, None, Path::new("self"), &[]).unwrap();
        let path = dir.path().join(format!("{}.json", token.as_str()));
        assert!(path.exists(), "the record exists before any pid is known");
        mine.spawned(me).unwrap();
        let written: Record = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!((written.pid, written.token.as_deref()), (Some(me), Some(token.as_str())));
        assert!(registry.reap_orphans(Duration::from_millis(10)).await.unwrap().is_empty());
        assert!(path.exists(), "a live owner's record stays");
        drop(mine);
        assert!(!path.exists(), "dropping the registration removes it");

        // An owner that no longer exists, naming a child that no longer exists (in the format of
        // a bridge from before tokens): cleaned, nothing killed.
        let stale = serde_json::json!({
            "pid": i32::MAX - 1, "start_ticks": 1, "command_hash": "0",
            "owner_pid": i32::MAX - 2, "owner_start_ticks": 1,
        });
        std::fs::write(dir.path().join("stale.json"), serde_json::to_vec(&stale).unwrap()).unwrap();
        std::fs::write(dir.path().join("torn.json"), b"{\"pid\":").unwrap();
        // A writer killed before its rename left a temp file; one being written right now is kept.
        let stale = std::fs::File::create(dir.path().join(".clawbridge-dead.tmp")).unwrap();
        stale.set_modified(std::time::SystemTime::now() - 2 * STALE_TEMP_AGE).unwrap();
        std::fs::write(dir.path().join(".clawbridge-live.tmp"), b"").unwrap();
        assert!(registry.reap_orphans(Duration::from_millis(10)).await.unwrap().is_empty());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left, [".clawbridge-live.tmp"]);
    }

    /// A bridge that died after writing the record but before the spawn returned leaves a record
    /// without a pid; whatever carries its token (here: a process in a session of its own) is found.
    #[tokio::test]
    async fn a_record_without_a_pid_reaps_what_carries_its_token() {
        let dir = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(dir.path()).unwrap();
        let token = Token::fresh().unwrap();
        let registration = registry.record_before_spawn(&token, None, Path::new("agent"), &[]).unwrap();
        let path = registration.path.clone();
        let mut record = registration.record.clone();
        std::mem::forget(registration); // the bridge "died": nobody removes the record
        record.owner_pid = i32::MAX - 3;
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        let mut escaped = std::process::Command::new("setsid")
            .args(["sleep", "300"])
            .env(containment::CONTAINMENT_VAR, token.as_str())
            .spawn()
            .unwrap();
        let sleeper = escaped.id() as i32;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while containment::token_carriers(&token).is_empty() {
            assert!(std::time::Instant::now() < deadline, "the sleeper never showed up");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let reaped = registry.reap_orphans(Duration::from_millis(500)).await.unwrap();
        assert_eq!(reaped.len(), 1, "{reaped:?}");
        assert_eq!((reaped[0].pgid, reaped[0].members, reaped[0].outside_group), (None, 1, 1));
        escaped.wait().unwrap();
        assert!(!containment::is_live(sleeper));
        assert!(!path.exists(), "the record is removed");
    }
}
