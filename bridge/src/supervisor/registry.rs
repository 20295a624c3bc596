//! A directory of small JSON records, one per agent, so a bridge restarted after a crash (or a
//! SIGKILL) can find and stop what its predecessor left behind.
//!
//! A record is written **before** the agent is spawned, naming its owner (the bridge's pid and
//! start time), its containment token and its cgroup (when it has one); after the spawn it also
//! names the agent's pid (= pgid) and start time. A bridge killed at any instant thus leaves either
//! nothing running or a record that says how to find what runs. Start times guard against pid
//! reuse: a pid whose start time differs is a different process and is never touched.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::containment::{self, GroupMark, Marks, Scanner, Token};
use super::group::signal_group;

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
    /// How many survived even SIGKILL (uninterruptible sleep); the record is then kept for the
    /// next reap.
    pub survivors: usize,
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
    /// Set when something of the agent may still run: the record then outlives the handle, so
    /// the reap after this bridge is gone still finds it.
    keep: bool,
}

impl Registration {
    /// Adds the spawned agent's pid and start time to the record.
    pub(crate) fn spawned(&mut self, pid: i32) -> Result<(), RegistryError> {
        self.record.pid = Some(pid);
        self.record.start_ticks = Some(start_ticks(pid).ok_or(RegistryError::NoStartTime { pid })?);
        write_record(&self.path, &self.record)
    }

    /// Whether the record stays on disk when this is dropped: something it names survived (or,
    /// `false`, a later attempt found it all gone).
    pub(crate) fn keep(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// Drops the cgroup from the record (the agent did not join it).
    pub(crate) fn without_cgroup(&mut self) -> Result<(), RegistryError> {
        self.record.cgroup = None;
        write_record(&self.path, &self.record)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if self.keep {
            tracing::warn!(record = %self.path.display(), "keeping the pid record: something it names may still run");
            return;
        }
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
        Ok(Registration { path, record, keep: false })
    }

    /// SIGKILLs the process group of every agent this very bridge recorded that still runs (its
    /// recorded start time guards against pid reuse), for a person who asked to stop now (a
    /// second Ctrl-C): the agents' output ends, so a turn waiting on them ends at once, and the
    /// staged stop that follows finds them gone (and still stops what left their groups).
    /// Returns how many groups were signalled.
    pub fn kill_own_groups_now(&self) -> usize {
        let me = std::process::id() as i32;
        let Some(my_ticks) = start_ticks(me) else { return 0 };
        let Ok(entries) = std::fs::read_dir(&self.dir) else { return 0 };
        let scanner = Scanner::new();
        let mut signalled = 0;
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Ok(record) = read_record_file(&path).map(|bytes| serde_json::from_slice::<Record>(&bytes)) else {
                continue;
            };
            let Ok(record) = record else { continue };
            if record.owner_pid != me || record.owner_start_ticks != my_ticks {
                continue;
            }
            if let (Some(pgid), Some(ticks)) = (record.pid, record.start_ticks)
                && scanner.may_signal_group(pgid)
                && start_ticks(pgid) == Some(ticks)
                && signal_group(pgid, Signal::SIGKILL)
            {
                signalled += 1;
            }
        }
        signalled
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
            let bytes = match read_record_file(&path) {
                Ok(bytes) => bytes,
                Err(why) => {
                    tracing::warn!(path = %path.display(), %why, "skipping a pid record that is not a small regular file");
                    continue;
                }
            };
            let record: Record = match serde_json::from_slice(&bytes) {
                Ok(record) => record,
                Err(_) => {
                    tracing::warn!(path = %path.display(), "removing an unreadable pid record");
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
            };
            if start_ticks(record.owner_pid) == Some(record.owner_start_ticks) {
                continue; // its bridge is alive and responsible for it
            }
            let (orphan, survived) = reap_record(&record, grace).await;
            if let Some(orphan) = orphan {
                reaped.push(orphan);
            }
            if survived {
                tracing::warn!(path = %path.display(), "keeping the pid record: what it names survived SIGKILL");
            } else {
                let _ = std::fs::remove_file(&path);
            }
        }
        // Only empty ones: a leftover that still runs something belongs to a record, perhaps in
        // another state dir, whose own reap reports it.
        for (dir, owner_pid) in tokio::task::spawn_blocking(containment::leftover_cgroups).await.unwrap_or_default() {
            if containment::remove(&dir) {
                tracing::debug!(cgroup = %dir.display(), owner = owner_pid, "removed an empty leftover agent cgroup");
            }
        }
        Ok(reaped)
    }
}

/// The largest record file read; a record is a few hundred bytes.
const MAX_RECORD_BYTES: u64 = 64 << 10;

/// Why a file in the registry was not read as a record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
enum RecordFileProblem {
    /// Opening or reading it failed (a symlink: `ELOOP`).
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// It is a FIFO, device, socket or folder, not a file the bridge wrote.
    #[error("not a regular file")]
    NotRegular,
    /// It is larger than any record.
    #[error("larger than {MAX_RECORD_BYTES} bytes")]
    TooLarge,
}

/// A record file's bytes, never through a symlink, never blocking on a FIFO, never more than
/// [`MAX_RECORD_BYTES`]: the registry folder is the user's, but what is in it is not trusted.
fn read_record_file(path: &Path) -> Result<Vec<u8>, RecordFileProblem> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() || kind.is_fifo() {
        return Err(RecordFileProblem::NotRegular);
    }
    if meta.len() > MAX_RECORD_BYTES {
        return Err(RecordFileProblem::TooLarge);
    }
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(RecordFileProblem::TooLarge);
    }
    Ok(bytes)
}

/// The marks an orphaned record lets the reaper use: its group only with a pid that can be an
/// agent's (never 0, 1, the reaper's own group or session: `kill(-pid)` would reach far more than
/// the agent), its cgroup only if it is the dead owner's agent cgroup, its token only if well formed.
fn orphan_marks(record: &Record) -> Marks {
    let scanner = Scanner::new();
    let group = match (record.pid, record.start_ticks) {
        (Some(pgid), Some(recorded)) if scanner.may_signal_group(pgid) => match start_ticks(pgid) {
            // A leader with another start time: the pid was reused by an unrelated group.
            Some(ticks) if ticks != recorded => None,
            _ => Some(GroupMark { pgid, started_since: Some(recorded) }),
        },
        (Some(pgid), _) if !scanner.may_signal_group(pgid) => {
            tracing::warn!(pgid, "a pid record names a pid that cannot be an agent's; ignoring its group");
            None
        }
        _ => None,
    };
    let cgroup = record.cgroup.clone().filter(|dir| {
        let ours = containment::is_agent_cgroup(dir, record.owner_pid);
        if !ours {
            tracing::warn!(cgroup = %dir.display(), "a pid record names a folder that is not its owner's agent cgroup; ignoring it");
        }
        ours
    });
    Marks { group, token: record.token.as_deref().and_then(Token::parse), cgroup }
}

/// Runs one blocking `/proc` walk off the runtime's threads; `None` when the walk's task failed
/// (it panicked, or the runtime is shutting down), which proves nothing about what runs.
async fn find(marks: &Marks) -> Option<containment::Found> {
    let marks = marks.clone();
    tokio::task::spawn_blocking(move || Scanner::new().find(&marks, false)).await.ok()
}

/// Stops what one orphaned record names: SIGTERM, up to `grace`, then SIGKILL (repeated, so what
/// forked meanwhile goes too) until nothing is found; then removes the cgroup. `Some` when anything
/// was still running; `true` when something survived (the record must stay).
async fn reap_record(record: &Record, grace: Duration) -> (Option<ReapedOrphan>, bool) {
    let marks = orphan_marks(record);
    let Some(found) = find(&marks).await else {
        // Nothing is known: the record stays for the next reap.
        return (None, true);
    };
    if found.group.is_empty() && found.nothing_outside() {
        let removed = match &marks.cgroup {
            Some(dir) => wait_removed(dir, KILL_SETTLE).await,
            None => true,
        };
        return (None, !removed);
    }
    let members = found.group.len() + found.by_cgroup.len() + found.by_token.len();
    tracing::info!(
        pgid = ?record.pid,
        owner = record.owner_pid,
        members,
        outside_group = found.by_cgroup.len() + found.by_token.len(),
        "reaping an orphaned agent"
    );
    let terminate = |found: &containment::Found| {
        if let (false, Some(group)) = (found.group.is_empty(), marks.group) {
            signal_group(group.pgid, Signal::SIGTERM);
        }
        let scanner = Scanner::new();
        scanner.signal_each(&found.by_cgroup, Signal::SIGTERM);
        scanner.signal_each(&found.by_token, Signal::SIGTERM);
    };
    terminate(&found);
    let deadline = tokio::time::Instant::now() + grace;
    let mut wait = containment::FIRST_POLL;
    loop {
        let gone = find(&marks).await.is_some_and(|now| now.group.is_empty() && now.nothing_outside());
        if gone || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(wait.min(deadline.saturating_duration_since(tokio::time::Instant::now()))).await;
        wait = (wait * 2).min(containment::MAX_POLL);
    }
    let kill_marks = marks.clone();
    // A kill task that failed proves nothing is gone: count a survivor, so the record stays.
    let report = tokio::task::spawn_blocking(move || containment::kill_escaped(&kill_marks, true, KILL_SETTLE))
        .await
        .unwrap_or(containment::KillReport { survivors: 1, ..containment::KillReport::default() });
    if report.survivors > 0 {
        tracing::warn!(pgid = ?record.pid, survivors = report.survivors, "orphans survived SIGKILL");
    }
    let removed = match &marks.cgroup {
        Some(dir) => wait_removed(dir, KILL_SETTLE).await,
        None => true,
    };
    let outside_group = (found.by_cgroup.len() + found.by_token.len()).max(report.escaped.total());
    let orphan = ReapedOrphan {
        pgid: record.pid,
        owner_pid: record.owner_pid,
        members: found.group.len() + outside_group,
        outside_group,
        survivors: report.survivors,
        cgroup: marks.cgroup.clone(),
    };
    (Some(orphan), report.survivors > 0 || !removed)
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
    let mut wait = containment::FIRST_POLL;
    loop {
        if containment::remove(dir) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(cgroup = %dir.display(), "could not remove an agent cgroup");
            return false;
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(containment::MAX_POLL);
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
    use std::os::unix::process::CommandExt;

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
        let marks = Marks { token: Some(token.clone()), ..Marks::default() };
        while Scanner::new().find(&marks, false).by_token.is_empty() {
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

    /// Ctrl-C's hard stop kills only what this bridge recorded and still runs as recorded: a
    /// record of another owner (another bridge's agent, or a pid-reused owner) and one whose
    /// start time no longer matches (the pid now names another process) are left alone.
    #[test]
    fn kill_own_groups_now_spares_other_owners_and_reused_pids() {
        let dir = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(dir.path()).unwrap();
        let me = std::process::id() as i32;
        let my_ticks = start_ticks(me).unwrap();
        let sleeper = || std::process::Command::new("sleep").arg("300").process_group(0).spawn().unwrap();
        let (mut mine, mut others, mut reused) = (sleeper(), sleeper(), sleeper());
        let record = |child: &std::process::Child, owner_pid: i32, owner_start_ticks: u64, stale: bool| {
            let pid = child.id() as i32;
            let ticks = start_ticks(pid).unwrap();
            Record {
                pid: Some(pid),
                start_ticks: Some(if stale { ticks + 1 } else { ticks }),
                token: None,
                cgroup: None,
                command_hash: "0".into(),
                owner_pid,
                owner_start_ticks,
            }
        };
        write_record(&dir.path().join("mine.json"), &record(&mine, me, my_ticks, false)).unwrap();
        write_record(&dir.path().join("other-owner.json"), &record(&others, i32::MAX - 5, 1, false)).unwrap();
        write_record(&dir.path().join("my-pid-reused.json"), &record(&others, me, my_ticks + 1, false)).unwrap();
        write_record(&dir.path().join("stale-ticks.json"), &record(&reused, me, my_ticks, true)).unwrap();

        assert_eq!(registry.kill_own_groups_now(), 1);
        assert!(mine.wait().unwrap().code().is_none(), "my recorded agent was killed");
        for (name, child) in [("another owner's", &mut others), ("a stale start time's", &mut reused)] {
            assert!(child.try_wait().unwrap().is_none(), "{name} process was left alone");
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn orphan_record(pid: Option<i32>, start_ticks: Option<u64>, cgroup: Option<PathBuf>) -> Record {
        Record {
            pid,
            start_ticks,
            token: Some(Token::fresh().unwrap().as_str().to_string()),
            cgroup,
            command_hash: "0".into(),
            owner_pid: i32::MAX - 4,
            owner_start_ticks: 1,
        }
    }

    /// `kill(-0)` is the reaper's own group and `kill(-1)` reaches every process: a record naming
    /// pid 0, 1 (with init's real start time), the reaper itself or its group gives no group to
    /// signal, only its token.
    #[test]
    fn a_record_naming_pid_zero_one_or_the_reaper_gives_no_group_to_signal() {
        let me = std::process::id() as i32;
        let pgrp = nix::unistd::getpgrp().as_raw();
        for (pid, ticks) in
            [(0, Some(0)), (1, start_ticks(1)), (1, Some(0)), (me, start_ticks(me)), (pgrp, start_ticks(pgrp))]
        {
            let marks = orphan_marks(&orphan_record(Some(pid), ticks, None));
            assert!(marks.group.is_none(), "pid {pid}");
            assert!(marks.token.is_some());
        }
        let child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let pid = child.id() as i32;
        let marks = orphan_marks(&orphan_record(Some(pid), start_ticks(pid), None));
        assert_eq!(marks.group.map(|g| g.pgid), Some(pid), "an agent's own group is used");
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        let mut child = child;
        child.wait().unwrap();
    }

    /// A planted record whose owner is dead cannot aim `cgroup.kill` at another bridge's agent:
    /// only a cgroup named after the record's own owner, under the cgroup2 mount, is used.
    #[test]
    fn a_record_naming_another_owners_cgroup_gets_no_cgroup() {
        let Some(mount) = procfs::process::Process::myself()
            .and_then(|me| me.mountinfo())
            .ok()
            .and_then(|m| m.into_iter().find(|m| m.fs_type == "cgroup2").map(|m| m.mount_point))
        else {
            return;
        };
        let live_bridge = std::process::id();
        let foreign = mount.join(format!("x/{}{live_bridge}-0", containment::CGROUP_PREFIX));
        assert!(orphan_marks(&orphan_record(None, None, Some(foreign))).cgroup.is_none());
        let own = mount.join(format!("x/{}{}-0", containment::CGROUP_PREFIX, i32::MAX - 4));
        assert_eq!(orphan_marks(&orphan_record(None, None, Some(own.clone()))).cgroup, Some(own));
        let outside = PathBuf::from(format!("/tmp/{}{}-0", containment::CGROUP_PREFIX, i32::MAX - 4));
        assert!(orphan_marks(&orphan_record(None, None, Some(outside))).cgroup.is_none());
    }

    /// A FIFO, a symlink to `/dev/zero` and a huge file among the records are skipped with a
    /// warning: the reap neither hangs nor reads without bound, and still reaps the real record.
    #[test]
    fn hostile_record_files_are_skipped_without_blocking_or_unbounded_reads() {
        let dir = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(dir.path()).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(dir.path().join("fifo.json")).status().unwrap().success());
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.json")).unwrap();
        let huge = std::fs::File::create(dir.path().join("huge.json")).unwrap();
        huge.set_len(1 << 30).unwrap(); // sparse: costs no disk
        let stale = orphan_record(Some(i32::MAX - 5), Some(1), None);
        std::fs::write(dir.path().join("real.json"), serde_json::to_vec(&stale).unwrap()).unwrap();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let _ = done_tx.send(runtime.block_on(registry.reap_orphans(Duration::from_millis(10))).map(|r| r.len()));
        });
        let reaped = done.recv_timeout(Duration::from_secs(30)).expect("the reap finished; a record file blocked it");
        assert_eq!(reaped.unwrap(), 0);
        assert!(!dir.path().join("real.json").exists(), "the real (stale) record is still handled");
        for skipped in ["fifo.json", "zero.json", "huge.json"] {
            assert!(std::fs::symlink_metadata(dir.path().join(skipped)).is_ok(), "{skipped} is left alone");
        }
    }

    /// What a reap could not finish keeps its record: here a dead owner's cgroup that cannot be
    /// removed because a running bridge (this test) owns a cgroup below it.
    #[tokio::test]
    async fn a_record_whose_cgroup_cannot_be_removed_is_kept() {
        let Ok(parent) = containment::own_cgroup_dir() else { return };
        let dead_owner = i32::MAX - 6;
        let dir = parent.join(format!("{}{dead_owner}-0", containment::CGROUP_PREFIX));
        if std::fs::create_dir(&dir).is_err() {
            return; // cgroups cannot be made here
        }
        let live = dir.join(format!("{}{}-0", containment::CGROUP_PREFIX, std::process::id()));
        std::fs::create_dir(&live).unwrap();
        let state = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(state.path()).unwrap();
        let mut record = orphan_record(None, None, Some(dir.clone()));
        record.owner_pid = dead_owner;
        let path = state.path().join("kept.json");
        std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
        let reaped = registry.reap_orphans(Duration::from_millis(10)).await.unwrap();
        let kept = path.exists();
        let _ = std::fs::remove_dir(&live);
        let _ = std::fs::remove_dir(&dir);
        assert!(reaped.is_empty(), "{reaped:?}");
        assert!(kept, "the record stays while its cgroup does");
    }
}
