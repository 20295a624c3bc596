//! Finding every process an agent started, including descendants that left its process group
//! (`setsid`, a double fork). Two marks survive both: a random **token** in the environment, which
//! every descendant inherits unless it clears its environment (prior art: Jenkins'
//! ProcessTreeKiller cookie), and, where the machine lets the bridge write cgroup v2, a **cgroup**
//! per agent, which no unprivileged descendant can leave. docs/containment.md states what each
//! finds and what the fallback misses.

use std::ffi::CString;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The variable that carries an agent's containment token to it and to all its descendants.
pub const CONTAINMENT_VAR: &str = "CLAWBRIDGE_CONTAINMENT";

/// Replaced, inside any argument of a spawned command, by the agent's [`CONTAINMENT_VAR`] value.
pub const CONTAINMENT_VALUE_ARG: &str = "{CLAWBRIDGE_CONTAINMENT}";

/// The variable a user sets to `off` (or `0`, `false`, `no`) to keep the bridge from creating cgroups.
pub const CGROUPS_VAR: &str = "CLAWBRIDGE_CGROUPS";

/// The name prefix of every cgroup the bridge creates; reaping only ever touches cgroups named so.
pub(crate) const CGROUP_PREFIX: &str = "clawbridge-";

/// The most of a process's environment read when looking for a token. The bridge puts the token
/// among the few dozen short variables its env policy passes (the spawn orders them by name, so it
/// is not first), and descendants may reorder or grow their environment: the search reads until it
/// finds the entry or this much is read, so a token behind more than 64 KiB of other variables is
/// not found (docs/containment.md#the-fallbacks-limit).
const MAX_ENVIRON_BYTES: u64 = 64 << 10;

/// Separates the tokens in [`CONTAINMENT_VAR`] of an agent started by a nested bridge (an agent
/// running clawbridge): `<outer>,<inner>`, so every bridge up the chain still finds it.
pub const TOKEN_SEPARATOR: char = ',';

/// The most outer tokens an agent's value keeps: a chain of nested bridges deeper than this is
/// not plausible, and the value stays bounded whatever the bridge inherited.
const MAX_NESTED_TOKENS: usize = 16;

/// How an agent is contained beyond its process group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Containment {
    /// A cgroup v2 per agent when the bridge can create and join one, plus the token; otherwise
    /// the token alone (the reason is logged once at debug).
    #[default]
    CgroupWhereAvailable,
    /// The token and the process group only, never a cgroup (`CLAWBRIDGE_CGROUPS=off`).
    TokenOnly,
}

impl Containment {
    /// What the user asked for through [`CGROUPS_VAR`]; cgroups where available unless it says off.
    pub fn from_env() -> Self {
        Self::from_setting(std::env::var(CGROUPS_VAR).ok().as_deref())
    }

    fn from_setting(value: Option<&str>) -> Self {
        match value.map(str::to_ascii_lowercase).as_deref() {
            Some("off" | "0" | "false" | "no") => Containment::TokenOnly,
            _ => Containment::CgroupWhereAvailable,
        }
    }
}

/// Why no cgroup could be made for an agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupUnavailable {
    /// No cgroup2 file system is mounted in this mount namespace.
    #[error("no cgroup2 file system is mounted")]
    NoCgroup2Mount,
    /// `/proc/self/cgroup` has no `0::` line: the bridge is not in a cgroup v2 hierarchy.
    #[error("the bridge has no cgroup v2 membership")]
    NotInCgroup2,
    /// The bridge's cgroup is not visible under the cgroup2 mount (another cgroup namespace's view).
    #[error("the bridge's cgroup {own} is outside the cgroup2 mount")]
    OutsideMount {
        /// The bridge's cgroup as `/proc/self/cgroup` names it.
        own: String,
    },
    /// Reading `/proc` or creating the cgroup failed (typically: not writable by this user).
    #[error("cgroup I/O at {path}")]
    Io {
        /// The file or folder involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A fresh token's text (32 lowercase hex digits): a mark of the same kind for processes the
/// supervisor does not start itself, such as an agent on the far side of a launcher.
pub fn fresh_token_text() -> Result<String, getrandom::Error> {
    Token::fresh().map(|token| token.0)
}

/// The random mark an agent and its descendants carry in their environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token(String);

impl Token {
    /// 128 bits from the OS: unique, so no unrelated process ever carries it.
    pub(crate) fn fresh() -> Result<Token, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// A token read back from a record: exactly 32 lowercase hex digits, so a damaged record can
    /// never turn into a pattern that matches other processes.
    pub(crate) fn parse(text: &str) -> Option<Token> {
        (text.len() == 32 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then(|| Token(text.to_string()))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The value of [`CONTAINMENT_VAR`] for an agent carrying this token: the well-formed tokens of
    /// the bridges this one runs under (`inherited`, its own value), then this one.
    pub(crate) fn env_value(&self, inherited: Option<&std::ffi::OsStr>) -> String {
        let mut value = String::new();
        let outer = inherited.and_then(|v| v.to_str()).unwrap_or_default();
        for outer in outer.split(TOKEN_SEPARATOR).filter_map(Token::parse).take(MAX_NESTED_TOKENS) {
            value.push_str(outer.as_str());
            value.push(TOKEN_SEPARATOR);
        }
        value.push_str(&self.0);
        value
    }
}

/// Whether `environ` (NUL-separated `NAME=VALUE` entries) has [`CONTAINMENT_VAR`] naming `token`
/// among its tokens.
fn environ_names(environ: &[u8], token: &Token) -> bool {
    let prefix = CONTAINMENT_VAR.as_bytes();
    environ.split(|&b| b == 0).any(|item| {
        item.strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix(b"="))
            .is_some_and(|value| value.split(|&b| b == TOKEN_SEPARATOR as u8).any(|t| t == token.0.as_bytes()))
    })
}

/// A live (not zombie) process as one walk over `/proc` saw it.
#[derive(Debug)]
pub(crate) struct Seen {
    /// Its pid.
    pub(crate) pid: i32,
    /// Its process group: whether a group signal reaches it.
    pub(crate) pgrp: i32,
    /// Whether it is stopped (SIGSTOP): a stopped process cannot fork, which the kill relies on.
    pub(crate) stopped: bool,
    /// For a token carrier: a pidfd of the process whose environment was read, so signals reach
    /// it even if it exits and its pid is reused before they are sent (none where the kernel
    /// has no `pidfd_open`, before Linux 5.3: then the pid is signalled).
    pidfd: Option<std::os::fd::OwnedFd>,
}

/// The process group mark of an agent.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GroupMark {
    /// The group's id (the agent's pid).
    pub(crate) pgid: i32,
    /// When set, only members that started no earlier than this (clock ticks after boot) count:
    /// the reaper's guard against a reused group id.
    pub(crate) started_since: Option<u64>,
}

/// Everything that finds one agent's processes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    /// Its process group, when known.
    pub(crate) group: Option<GroupMark>,
    /// The token in its descendants' environment, when well formed.
    pub(crate) token: Option<Token>,
    /// Its cgroup, when it has one (already checked to be an agent cgroup).
    pub(crate) cgroup: Option<PathBuf>,
}

/// What one walk found, each process once: in the group, else in the cgroup, else by its token.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Members of the agent's group.
    pub(crate) group: Vec<Seen>,
    /// Outside the group, members of the agent's cgroup.
    pub(crate) by_cgroup: Vec<Seen>,
    /// Outside the group and the cgroup, carriers of the token.
    pub(crate) by_token: Vec<Seen>,
}

impl Found {
    /// Whether nothing outside the group was found.
    pub(crate) fn nothing_outside(&self) -> bool {
        self.by_cgroup.is_empty() && self.by_token.is_empty()
    }
}

/// Which mark found the processes outside the agent's group that a stop or reap killed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Escaped {
    /// Found by the agent's cgroup (whatever their environment said).
    pub by_cgroup: usize,
    /// Found by the token alone (no cgroup, or not in it).
    pub by_token: usize,
}

impl Escaped {
    /// Both counts together.
    pub fn total(&self) -> usize {
        self.by_cgroup + self.by_token
    }
}

/// Walks `/proc`, reusing one buffer for the environments it reads; knows the bridge's own pid,
/// group and session, which it never signals.
pub(crate) struct Scanner {
    /// The environment being searched, reused so a walk allocates it once.
    environ: Vec<u8>,
    /// The bridge itself.
    me: i32,
    /// The bridge's process group.
    my_pgrp: i32,
    /// The bridge's session.
    my_sid: i32,
}

impl Scanner {
    pub(crate) fn new() -> Scanner {
        Scanner {
            environ: Vec::with_capacity(8 << 10),
            me: std::process::id() as i32,
            my_pgrp: nix::unistd::getpgrp().as_raw(),
            my_sid: nix::unistd::getsid(None).map_or(0, Pid::as_raw),
        }
    }

    /// Whether `pid` (in group `pgrp`) may ever be signalled: never init or pid 0 (whose "group"
    /// is the caller's own), never the bridge, its group or its session.
    pub(crate) fn may_signal(&self, pid: i32, pgrp: i32) -> bool {
        pid > 1 && pid != self.me && pgrp > 1 && pgrp != self.my_pgrp && pid != self.my_sid && pid != self.my_pgrp
    }

    /// Whether a record's group id may be signalled: not init's, pid 0's, the bridge's own
    /// group's or its session's.
    pub(crate) fn may_signal_group(&self, pgid: i32) -> bool {
        pgid > 1 && pgid != self.me && pgid != self.my_pgrp && pgid != self.my_sid
    }

    /// One walk over `/proc` (stat of each process, the environment of those outside the group and
    /// cgroup) sorted by `marks`. With `freeze`, each token carrier found running is sent SIGSTOP
    /// the moment it is found, so one that forks and exits (a pid that keeps moving) is caught.
    ///
    /// A process born after the listing was read is not in it, and one listed may exit before it
    /// is read: a pid that keeps moving can fall between the two. So the walk lists `/proc` again
    /// and reads just the pids that appeared since (few, read at once, so the window is short),
    /// until a listing shows none or [`FOLLOW_UP_WALKS`] passed.
    pub(crate) fn find(&mut self, marks: &Marks, freeze: bool) -> Found {
        let mut found = Found::default();
        let in_cgroup: std::collections::HashSet<i32> =
            marks.cgroup.as_deref().map(listed_members).unwrap_or_default().into_iter().collect();
        let group = marks.group.filter(|g| self.may_signal_group(g.pgid));
        let mut listed = std::collections::HashSet::new();
        for _ in 0..=FOLLOW_UP_WALKS {
            let Ok(all) = procfs::process::all_processes() else {
                break;
            };
            // One at a time, never collected: each entry holds an open descriptor of its directory.
            let mut fresh = 0usize;
            for process in all.flatten().filter(|process| listed.insert(process.pid)) {
                fresh += 1;
                self.sort(&process, marks, group, &in_cgroup, freeze, &mut found);
            }
            if fresh == 0 {
                break;
            }
        }
        found
    }

    /// Puts `process` where `marks` say it belongs in `found` (nowhere when it belongs to none).
    fn sort(
        &mut self,
        process: &procfs::process::Process,
        marks: &Marks,
        group: Option<GroupMark>,
        in_cgroup: &std::collections::HashSet<i32>,
        freeze: bool,
        found: &mut Found,
    ) {
        let Ok(stat) = process.stat() else { return };
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            return;
        }
        let mut seen = Seen { pid: stat.pid, pgrp: stat.pgrp, stopped: matches!(stat.state, 'T' | 't'), pidfd: None };
        if group.is_some_and(|g| stat.pgrp == g.pgid && g.started_since.is_none_or(|t| stat.starttime >= t)) {
            found.group.push(seen);
        } else if in_cgroup.contains(&stat.pid) {
            if self.may_signal(stat.pid, stat.pgrp) {
                found.by_cgroup.push(seen);
            }
        } else if let Some(token) = &marks.token
            && self.may_signal(stat.pid, stat.pgrp)
        {
            if !self.carries(stat.pid, token) {
                return;
            }
            seen.pidfd = pidfd(stat.pid);
            // The start time of the walk's stat, read again after the pidfd was opened: the
            // pidfd is the process whose environment was read, not a reuse of its pid.
            if start_ticks(stat.pid) != Some(stat.starttime) {
                return;
            }
            if freeze && !seen.stopped && !send(&seen, Signal::SIGSTOP) {
                return; // gone meanwhile
            }
            found.by_token.push(seen);
        }
    }

    fn carries(&mut self, pid: i32, token: &Token) -> bool {
        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
            return false; // gone, or not readable to us: not something the bridge can stop
        };
        self.environ.clear();
        if file.take(MAX_ENVIRON_BYTES).read_to_end(&mut self.environ).is_err() {
            return false;
        }
        environ_names(&self.environ, token)
    }

    /// Sends `signal` to each pid that may be signalled; the count of those that existed.
    pub(crate) fn signal_each(&self, found: &[Seen], signal: Signal) -> usize {
        found.iter().filter(|s| self.may_signal(s.pid, s.pgrp) && send(s, signal)).count()
    }
}

/// A pidfd for `pid`, where the kernel has them.
fn pidfd(pid: i32) -> Option<std::os::fd::OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid)?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
}

/// Sends `signal` to the process `seen` names, through its pidfd when it has one; true when it
/// still existed.
fn send(seen: &Seen, signal: Signal) -> bool {
    match (&seen.pidfd, rustix::process::Signal::from_named_raw(signal as i32)) {
        (Some(fd), Some(signal)) => rustix::process::pidfd_send_signal(fd, signal).is_ok(),
        _ => kill(Pid::from_raw(seen.pid), signal).is_ok(),
    }
}

fn start_ticks(pid: i32) -> Option<u64> {
    procfs::process::Process::new(pid).ok()?.stat().ok().map(|s| s.starttime)
}

/// How many times one walk lists `/proc` again for the pids that appeared while it read the last
/// listing (on a busy machine new pids never stop appearing, so the walk must end somewhere).
const FOLLOW_UP_WALKS: usize = 4;

/// How long the kill loops wait between scans at first, and at most: a scan reads every process's
/// `/proc` entries, so the wait grows while something is still found.
pub(crate) const FIRST_POLL: std::time::Duration = std::time::Duration::from_millis(10);
/// See [`FIRST_POLL`].
pub(crate) const MAX_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// What [`kill_escaped`] did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KillReport {
    /// What it found outside the group, by mark.
    pub(crate) escaped: Escaped,
    /// How many were still alive when it gave up (0: all gone).
    pub(crate) survivors: usize,
}

/// SIGKILLs what `marks` find outside the group (and the group itself with `kill_group`) until a
/// scan finds nothing or `limit` passed. Blocking (it walks `/proc`): call it off the runtime's
/// threads. The cgroup dies at once (`cgroup.kill`); token carriers are first all stopped (a
/// stopped process cannot fork, so rescanning until every one found is stopped leaves nothing
/// running that could start another), then killed together.
pub(crate) fn kill_escaped(marks: &Marks, kill_group: bool, limit: std::time::Duration) -> KillReport {
    let deadline = std::time::Instant::now() + limit;
    let halfway = std::time::Instant::now() + limit / 2;
    let mut scanner = Scanner::new();
    let (mut by_cgroup, mut by_token) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    let mut wait = FIRST_POLL;
    let mut empty_before = false;
    loop {
        let found = scanner.find(marks, true);
        by_cgroup.extend(found.by_cgroup.iter().map(|s| s.pid));
        by_token.extend(found.by_token.iter().map(|s| s.pid).filter(|pid| !by_cgroup.contains(pid)));
        let group_left = kill_group && !found.group.is_empty();
        let escaped = Escaped { by_cgroup: by_cgroup.len(), by_token: by_token.len() };
        // A pid that keeps moving (each process starts the next and exits) can fall between a
        // walk's reads: only two empty walks in a row end the kill.
        if found.nothing_outside() && !group_left {
            if empty_before {
                return KillReport { escaped, survivors: 0 };
            }
            empty_before = true;
            std::thread::sleep(FIRST_POLL);
            continue;
        }
        empty_before = false;
        if std::time::Instant::now() >= deadline {
            // What this last walk found (and stopped) is killed before giving up, so nothing is
            // left stopped: only what survives SIGKILL counts as a survivor.
            scanner.signal_each(&found.by_token, Signal::SIGKILL);
            scanner.signal_each(&found.by_cgroup, Signal::SIGKILL);
            if let (true, Some(group)) = (group_left, marks.group) {
                crate::supervisor::group::signal_group(group.pgid, Signal::SIGKILL);
            }
            let survivors =
                found.by_cgroup.len() + found.by_token.len() + if kill_group { found.group.len() } else { 0 };
            return KillReport { escaped, survivors };
        }
        if let (true, Some(group)) = (group_left, marks.group) {
            crate::supervisor::group::signal_group(group.pgid, Signal::SIGKILL);
        }
        if let (false, Some(dir)) = (found.by_cgroup.is_empty(), &marks.cgroup) {
            // A reaper that itself runs inside the dead owner's agent cgroup (a bridge an agent
            // started, sharing the state dir) must not kill itself with it.
            if listed_members(dir).contains(&scanner.me) {
                scanner.signal_each(&found.by_cgroup, Signal::SIGKILL);
            } else {
                kill_all(dir);
            }
        }
        // Every carrier this walk found running was stopped the moment it was found, but may have
        // forked just before: only once a walk finds them all already stopped is nothing left that
        // could start another. Past half the limit (a carrier in uninterruptible sleep never shows
        // as stopped), they are killed anyway.
        if found.by_token.iter().all(|s| s.stopped) || std::time::Instant::now() >= halfway {
            scanner.signal_each(&found.by_token, Signal::SIGKILL);
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(MAX_POLL);
    }
}

/// Not a zombie: a zombie holds nothing and cannot be killed further.
pub(crate) fn is_live(pid: i32) -> bool {
    procfs::process::Process::new(pid).and_then(|p| p.stat()).is_ok_and(|s| !matches!(s.state, 'Z' | 'X' | 'x'))
}

/// The cgroup2 mount point and the bridge's own cgroup under it: where agent cgroups are made.
pub(crate) fn own_cgroup_dir() -> Result<PathBuf, CgroupUnavailable> {
    let io = |path: &str| {
        let path = PathBuf::from(path);
        move |e: procfs::ProcError| CgroupUnavailable::Io { path, source: std::io::Error::other(e.to_string()) }
    };
    let me = procfs::process::Process::myself().map_err(io("/proc/self"))?;
    let mount = me
        .mountinfo()
        .map_err(io("/proc/self/mountinfo"))?
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .ok_or(CgroupUnavailable::NoCgroup2Mount)?;
    let own = me
        .cgroups()
        .map_err(io("/proc/self/cgroup"))?
        .into_iter()
        .find(|c| c.hierarchy == 0 && c.controllers.is_empty())
        .ok_or(CgroupUnavailable::NotInCgroup2)?
        .pathname;
    // The mount shows the hierarchy from its root; the bridge's path is relative to the hierarchy's.
    let relative =
        Path::new(&own).strip_prefix(&mount.root).map_err(|_| CgroupUnavailable::OutsideMount { own: own.clone() })?;
    if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(CgroupUnavailable::OutsideMount { own });
    }
    Ok(mount.mount_point.join(relative))
}

/// The cgroup2 mount the bridge makes its agents' cgroups under (the first in the mount table).
fn cgroup2_mount() -> Option<PathBuf> {
    procfs::process::Process::myself()
        .and_then(|me| me.mountinfo())
        .ok()?
        .into_iter()
        .find(|m| m.fs_type == "cgroup2")
        .map(|m| m.mount_point)
}

/// The owner pid in an agent cgroup's name `clawbridge-<owner pid>-<n>`.
fn cgroup_owner(name: &str) -> Option<i32> {
    let (owner, n) = name.strip_prefix(CGROUP_PREFIX)?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(owner) && digits(n)).then(|| owner.parse().ok()).flatten()
}

/// Whether `path` may be touched as the agent cgroup of the bridge `owner_pid` (whose death the
/// caller established): a plain path under the cgroup2 mount the bridge uses, named
/// `clawbridge-<owner_pid>-<n>`. A damaged or planted record can then never make the bridge kill
/// an unrelated cgroup, nor the agent cgroup of a bridge that still runs.
pub(crate) fn is_agent_cgroup(path: &Path, owner_pid: i32) -> bool {
    path.is_absolute()
        && path.components().skip(1).all(|c| matches!(c, Component::Normal(_)))
        && path.file_name().and_then(|n| n.to_str()).and_then(cgroup_owner) == Some(owner_pid)
        && cgroup2_mount().is_some_and(|mount| path.starts_with(&mount) && path != mount)
}

/// Whether the bridge can make agent cgroups here (it makes one and removes it): what the spawn
/// does first, for callers (and tests) that need to know which mark will find an agent's
/// descendants.
pub fn cgroups_available() -> Result<(), CgroupUnavailable> {
    let cgroup = AgentCgroup::create()?;
    remove(cgroup.dir());
    Ok(())
}

/// One agent's cgroup.
#[derive(Debug)]
pub(crate) struct AgentCgroup {
    /// The cgroup's folder.
    dir: PathBuf,
    /// `<dir>/cgroup.procs` as a C string, made before fork: the child joins by writing to it, and
    /// between fork and exec it may not allocate.
    procs: CString,
}

/// Distinguishes the cgroups one bridge creates.
static NEXT_CGROUP: AtomicU32 = AtomicU32::new(0);

impl AgentCgroup {
    /// Creates `<own cgroup>/clawbridge-<bridge pid>-<n>` (0700).
    pub(crate) fn create() -> Result<AgentCgroup, CgroupUnavailable> {
        // Looked up per agent (a few KiB of /proc): spawns are rare, and the answer may change.
        let parent = own_cgroup_dir()?;
        let me = std::process::id();
        loop {
            let n = NEXT_CGROUP.fetch_add(1, Ordering::Relaxed);
            let dir = parent.join(format!("{CGROUP_PREFIX}{me}-{n}"));
            match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => {}
                // Left by an earlier bridge that had this pid; the reaper removes it.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(CgroupUnavailable::Io { path: dir, source }),
            }
            // Bounds how deep the agent can nest cgroups, so removal (which goes that deep) always
            // reaches the bottom.
            if let Err(error) = std::fs::write(dir.join("cgroup.max.depth"), MAX_CGROUP_DEPTH.to_string()) {
                tracing::debug!(cgroup = %dir.display(), %error, "could not bound the agent cgroup's depth");
            }
            let procs = CString::new(dir.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(|e| CgroupUnavailable::Io { path: dir.clone(), source: std::io::Error::other(e) })?;
            return Ok(AgentCgroup { dir, procs });
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path the child's pre-exec hook writes to.
    pub(crate) fn procs_path(&self) -> &CString {
        &self.procs
    }

    /// Whether `pid` is a member (it joined before exec).
    pub(crate) fn contains(&self, pid: i32) -> bool {
        members(&self.dir).contains(&pid)
    }
}

/// Runs in the forked child before exec: moves it into the cgroup whose `cgroup.procs` is
/// `procs`. Only async-signal-safe calls, no allocation. A failure leaves the child where it was;
/// the parent checks membership after spawn and falls back to the token.
pub(crate) fn join_in_child(procs: &CString) {
    #[expect(unsafe_code, reason = "raw open/write/close are the async-signal-safe calls a pre-exec hook may make")]
    // SAFETY: `procs` is a valid NUL-terminated string owned by the hook's closure; the buffer
    // written is a static byte.
    unsafe {
        let fd = nix::libc::open(procs.as_ptr(), nix::libc::O_WRONLY | nix::libc::O_CLOEXEC);
        if fd >= 0 {
            let _ = nix::libc::write(fd, b"0".as_ptr().cast(), 1);
            nix::libc::close(fd);
        }
    }
}

/// How deep below an agent's cgroup the bridge looks: a nested bridge (an agent running
/// clawbridge) makes cgroups of its own under it, and their members are the agent's descendants.
const MAX_CGROUP_DEPTH: usize = 8;

/// Live member pids of the cgroup at `dir` and of the cgroups below it (empty when it is gone).
pub(crate) fn members(dir: &Path) -> Vec<i32> {
    listed_members(dir).into_iter().filter(|&pid| is_live(pid)).collect()
}

/// The pids `cgroup.procs` lists in the cgroup at `dir` and below it, zombies included.
fn listed_members(dir: &Path) -> Vec<i32> {
    let mut found = Vec::new();
    collect_members(dir, MAX_CGROUP_DEPTH, &mut found);
    found
}

fn collect_members(dir: &Path, depth: usize, found: &mut Vec<i32>) {
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        found.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
    }
    if depth > 0 {
        for child in child_cgroups(dir) {
            collect_members(&child, depth - 1, found);
        }
    }
}

/// The cgroups directly below `dir` (every sub-folder of a cgroup is one).
fn child_cgroups(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs every process in the cgroup at `dir` at once (`cgroup.kill`, Linux 5.14+), or each
/// listed member where the kernel has no `cgroup.kill`.
pub(crate) fn kill_all(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), b"1").is_err() {
        let me = std::process::id() as i32;
        for pid in members(dir).into_iter().filter(|&pid| pid > 1 && pid != me) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Removes the (empty) cgroup at `dir`, and the empty cgroups below it first; true when it is gone.
pub(crate) fn remove(dir: &Path) -> bool {
    remove_below(dir, MAX_CGROUP_DEPTH)
}

fn remove_below(dir: &Path, depth: usize) -> bool {
    if depth > 0 {
        for child in child_cgroups(dir) {
            // A nested bridge that still runs owns its agent cgroups, even an empty one it is
            // about to move an agent into.
            let live_owner = child.file_name().and_then(|n| n.to_str()).and_then(cgroup_owner).is_some_and(owner_alive);
            if !live_owner {
                remove_below(&child, depth - 1);
            }
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Leftover agent cgroups beside the ones this bridge creates, named after a bridge pid that no
/// longer runs: `(folder, owner pid)`.
pub(crate) fn leftover_cgroups() -> Vec<(PathBuf, i32)> {
    let Ok(parent) = own_cgroup_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name();
            let owner = cgroup_owner(name.to_str()?)?;
            (!owner_alive(owner) && entry.file_type().is_ok_and(|t| t.is_dir())).then(|| (entry.path(), owner))
        })
        .collect()
}

/// Whether a bridge with pid `owner` may still run (a cgroup name keeps no start time, so any
/// process with that pid counts as it).
fn owner_alive(owner: i32) -> bool {
    owner > 0 && procfs::process::Process::new(owner).is_ok()
}

/// The error and its sources on one line: for the one debug log of why cgroups are not used, and
/// for reports whose cause is the OS's word for it.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_only_well_formed_ones_are_read_back() {
        let a = Token::fresh().unwrap();
        assert_ne!(a, Token::fresh().unwrap());
        assert_eq!(Token::parse(a.as_str()), Some(a.clone()));
        for bad in ["", "0", &"g".repeat(32), &"A".repeat(32), &format!("{}0", a.as_str())] {
            assert_eq!(Token::parse(bad), None, "{bad:?}");
        }
    }

    /// Carriers found by token only: with a cgroup-less, group-less mark set.
    fn token_carriers(token: &Token) -> Vec<i32> {
        let marks = Marks { token: Some(token.clone()), ..Marks::default() };
        Scanner::new().find(&marks, false).by_token.iter().map(|s| s.pid).collect()
    }

    #[test]
    fn a_child_carrying_the_token_is_found_and_one_without_it_is_not() {
        use std::os::unix::process::CommandExt;
        // Each in a group of its own, as agents are: the bridge never signals its own group.
        let token = Token::fresh().unwrap();
        let mut carrier = std::process::Command::new("sleep")
            .arg("30")
            .env(CONTAINMENT_VAR, token.as_str())
            .process_group(0)
            .spawn()
            .unwrap();
        let other_token = Token::fresh().unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .env(CONTAINMENT_VAR, other_token.as_str())
            .process_group(0)
            .spawn()
            .unwrap();
        // An agent of a nested bridge carries the outer token in front of its own.
        let nested_value = Token::fresh().unwrap().env_value(Some(std::ffi::OsStr::new(token.as_str())));
        let mut nested = std::process::Command::new("sleep")
            .arg("30")
            .env(CONTAINMENT_VAR, &nested_value)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut found = token_carriers(&token);
        found.sort_unstable();
        let mut expected = vec![carrier.id() as i32, nested.id() as i32];
        expected.sort_unstable();
        assert_eq!(found, expected, "exactly the carrier and the nested agent");
        let report = kill_escaped(
            &Marks { token: Some(token.clone()), ..Marks::default() },
            false,
            std::time::Duration::from_secs(5),
        );
        assert_eq!((report.escaped, report.survivors), (Escaped { by_cgroup: 0, by_token: 2 }, 0));
        carrier.wait().unwrap();
        nested.wait().unwrap();
        assert!(token_carriers(&token).is_empty(), "a reaped carrier is gone");
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn a_nested_value_keeps_only_well_formed_outer_tokens_and_stays_bounded() {
        let token = Token::fresh().unwrap();
        let outer = Token::fresh().unwrap();
        let inherited = format!("junk,{},{}", outer.as_str(), "x".repeat(100));
        assert_eq!(
            token.env_value(Some(std::ffi::OsStr::new(&inherited))),
            format!("{}{TOKEN_SEPARATOR}{}", outer.as_str(), token.as_str())
        );
        let many = vec![outer.as_str(); 100].join(",");
        let value = token.env_value(Some(std::ffi::OsStr::new(&many)));
        assert_eq!(value.split(TOKEN_SEPARATOR).count(), MAX_NESTED_TOKENS + 1);
        assert_eq!(token.env_value(None), token.as_str());
    }

    /// A record can make the bridge signal nothing but an agent: never pid 0 or 1, never itself,
    /// its group or its session.
    #[test]
    fn the_bridge_never_signals_init_pid_zero_itself_or_its_own_group() {
        let scanner = Scanner::new();
        let me = std::process::id() as i32;
        let my_group = nix::unistd::getpgrp().as_raw();
        for pid in [-1, 0, 1, me, my_group] {
            assert!(!scanner.may_signal_group(pid), "group {pid}");
        }
        assert!(!scanner.may_signal(2, my_group), "a member of the bridge's own group");
        assert!(!scanner.may_signal(me, 12345));
        assert!(!crate::supervisor::group::signal_group(0, Signal::SIGCONT));
        assert!(!crate::supervisor::group::signal_group(1, Signal::SIGCONT));
        assert!(!crate::supervisor::group::signal_group(my_group, Signal::SIGCONT));
    }

    #[test]
    fn only_the_dead_owners_folders_under_the_cgroup2_mount_count_as_its_agent_cgroups() {
        assert!(!is_agent_cgroup(Path::new("/tmp/clawbridge-7-0"), 7));
        assert!(!is_agent_cgroup(Path::new("relative/clawbridge-7-0"), 7));
        if let Some(mount) = cgroup2_mount() {
            assert!(is_agent_cgroup(&mount.join("x/clawbridge-7-0"), 7));
            assert!(!is_agent_cgroup(&mount.join("x/clawbridge-8-0"), 7), "another bridge's agent cgroup");
            assert!(!is_agent_cgroup(&mount.join("x/clawbridge-7-0x"), 7));
            assert!(!is_agent_cgroup(&mount.join("x/clawbridge-7"), 7));
            assert!(!is_agent_cgroup(&mount.join("system.slice"), 7));
            assert!(!is_agent_cgroup(&mount.join("x/../clawbridge-7-0"), 7));
            assert!(!is_agent_cgroup(&mount, 7));
        }
    }

    /// A nested bridge's agents sit in cgroups below the outer agent's: they are members, killed
    /// with it, and their cgroups removed with it. Where no cgroup can be made, creating one says
    /// why instead.
    #[test]
    fn members_below_an_agent_cgroup_are_found_killed_and_removed_with_it() {
        let cgroup = match AgentCgroup::create() {
            Ok(cgroup) => cgroup,
            Err(why) => {
                assert!(!error_chain(&why).is_empty());
                return;
            }
        };
        let nested = cgroup.dir().join(format!("{CGROUP_PREFIX}nested-0"));
        std::fs::create_dir(&nested).unwrap();
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = sleeper.id() as i32;
        std::fs::write(nested.join("cgroup.procs"), pid.to_string()).unwrap();
        assert_eq!(members(cgroup.dir()), [pid]);
        assert!(!remove(cgroup.dir()), "a populated cgroup stays");
        kill_all(cgroup.dir());
        sleeper.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !remove(cgroup.dir()) {
            assert!(std::time::Instant::now() < deadline, "the emptied cgroups were never removed");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!nested.exists() && !cgroup.dir().exists());
    }

    /// An agent cannot nest cgroups deeper than removal goes.
    #[test]
    fn an_agent_cgroup_cannot_be_nested_deeper_than_removal_reaches() {
        let Ok(cgroup) = AgentCgroup::create() else { return };
        let mut dir = cgroup.dir().to_path_buf();
        let mut made = 0;
        for level in 0..MAX_CGROUP_DEPTH + 3 {
            dir.push(format!("n{level}"));
            if std::fs::create_dir(&dir).is_err() {
                break;
            }
            made += 1;
        }
        assert_eq!(made, MAX_CGROUP_DEPTH, "the kernel refuses cgroups below the bound");
        assert!(remove(cgroup.dir()), "removal reaches the bottom and removes them all");
        assert!(!cgroup.dir().exists());
    }

    #[test]
    fn cgroups_are_used_unless_the_user_turns_them_off() {
        for off in ["off", "OFF", "0", "false", "no"] {
            assert_eq!(Containment::from_setting(Some(off)), Containment::TokenOnly, "{off}");
        }
        for on in [None, Some(""), Some("on"), Some("1")] {
            assert_eq!(Containment::from_setting(on), Containment::CgroupWhereAvailable, "{on:?}");
        }
    }
}
