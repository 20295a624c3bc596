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

/// The variable a user sets to `off` (or `0`, `false`, `no`) to keep the bridge from creating cgroups.
pub const CGROUPS_VAR: &str = "CLAWBRIDGE_CGROUPS";

/// The name prefix of every cgroup the bridge creates; reaping only ever touches cgroups named so.
pub(crate) const CGROUP_PREFIX: &str = "clawbridge-";

/// The most of a process's environment read when looking for a token. The kernel bounds an
/// environment by the stack limit, which may be unlimited; a token is placed by the bridge among a
/// few dozen short variables, so a process whose environment is larger than this is not ours.
const MAX_ENVIRON_BYTES: u64 = 4 << 20;

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

    /// `CLAWBRIDGE_CONTAINMENT=<token>`, as the entry appears in `/proc/<pid>/environ`.
    fn environ_entry(&self) -> Vec<u8> {
        format!("{CONTAINMENT_VAR}={}", self.0).into_bytes()
    }
}

/// Live processes (never this one) whose environment carries `token`.
pub(crate) fn token_carriers(token: &Token) -> Vec<i32> {
    let entry = token.environ_entry();
    let me = std::process::id() as i32;
    let Ok(all) = procfs::process::all_processes() else {
        return Vec::new();
    };
    all.flatten().map(|p| p.pid()).filter(|&pid| pid != me && environ_carries(pid, &entry) && is_live(pid)).collect()
}

fn environ_carries(pid: i32, entry: &[u8]) -> bool {
    let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false; // gone, or another user's: not something the bridge started
    };
    let mut environ = Vec::new();
    if file.take(MAX_ENVIRON_BYTES).read_to_end(&mut environ).is_err() {
        return false;
    }
    environ.split(|&b| b == 0).any(|item| item == entry)
}

/// Not a zombie: a zombie holds nothing and cannot be killed further.
pub(crate) fn is_live(pid: i32) -> bool {
    procfs::process::Process::new(pid).and_then(|p| p.stat()).is_ok_and(|s| !matches!(s.state, 'Z' | 'X' | 'x'))
}

/// Sends `signal` to each pid; the count of those that existed.
pub(crate) fn signal_each(pids: &[i32], signal: Signal) -> usize {
    pids.iter().filter(|&&pid| kill(Pid::from_raw(pid), signal).is_ok()).count()
}

/// The cgroup2 mount point and the bridge's own cgroup under it: where agent cgroups are made.
fn own_cgroup_dir() -> Result<PathBuf, CgroupUnavailable> {
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

/// Every cgroup2 mount point, for checking that a path read from a record is a cgroup.
fn cgroup2_mounts() -> Vec<PathBuf> {
    procfs::process::Process::myself()
        .and_then(|me| me.mountinfo())
        .map(|mounts| mounts.into_iter().filter(|m| m.fs_type == "cgroup2").map(|m| m.mount_point).collect())
        .unwrap_or_default()
}

/// Whether `path` may be touched as one of the bridge's agent cgroups: a plain path under a
/// cgroup2 mount whose last component has the bridge's prefix. A damaged or planted record can
/// then never make the bridge kill an unrelated cgroup.
pub(crate) fn is_agent_cgroup(path: &Path) -> bool {
    path.is_absolute()
        && path.components().skip(1).all(|c| matches!(c, Component::Normal(_)))
        && path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(CGROUP_PREFIX))
        && cgroup2_mounts().iter().any(|mount| path.starts_with(mount) && path != mount)
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
    let mut found = Vec::new();
    collect_members(dir, MAX_CGROUP_DEPTH, &mut found);
    found
}

fn collect_members(dir: &Path, depth: usize, found: &mut Vec<i32>) {
    if let Ok(text) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        found.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()).filter(|&pid| is_live(pid)));
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
        signal_each(&members(dir), Signal::SIGKILL);
    }
}

/// Removes the (empty) cgroup at `dir`, and the empty cgroups below it first; true when it is gone.
pub(crate) fn remove(dir: &Path) -> bool {
    remove_below(dir, MAX_CGROUP_DEPTH)
}

fn remove_below(dir: &Path, depth: usize) -> bool {
    if depth > 0 {
        for child in child_cgroups(dir) {
            remove_below(&child, depth - 1);
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
            let owner: i32 = name.to_str()?.strip_prefix(CGROUP_PREFIX)?.split_once('-')?.0.parse().ok()?;
            let alive = procfs::process::Process::new(owner).is_ok();
            (!alive && entry.file_type().is_ok_and(|t| t.is_dir())).then(|| (entry.path(), owner))
        })
        .collect()
}

/// The error and its sources on one line, for the one debug log of why cgroups are not used.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
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

    #[test]
    fn a_child_carrying_the_token_is_found_and_one_without_it_is_not() {
        let token = Token::fresh().unwrap();
        let mut carrier =
            std::process::Command::new("sleep").arg("30").env(CONTAINMENT_VAR, token.as_str()).spawn().unwrap();
        let other_token = Token::fresh().unwrap();
        let mut other =
            std::process::Command::new("sleep").arg("30").env(CONTAINMENT_VAR, other_token.as_str()).spawn().unwrap();
        let found = token_carriers(&token);
        assert_eq!(found, [carrier.id() as i32], "exactly the carrier");
        assert_eq!(signal_each(&found, Signal::SIGKILL), 1);
        carrier.wait().unwrap();
        assert!(token_carriers(&token).is_empty(), "a reaped carrier is gone");
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    fn only_prefixed_folders_under_a_cgroup2_mount_count_as_agent_cgroups() {
        assert!(!is_agent_cgroup(Path::new("/tmp/clawbridge-1-0")));
        assert!(!is_agent_cgroup(Path::new("relative/clawbridge-1-0")));
        for mount in cgroup2_mounts() {
            assert!(is_agent_cgroup(&mount.join("clawbridge-1-0")));
            assert!(!is_agent_cgroup(&mount.join("system.slice")));
            assert!(!is_agent_cgroup(&mount.join("x/../clawbridge-1-0")));
            assert!(!is_agent_cgroup(&mount));
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
