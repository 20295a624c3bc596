//! Process-group facts and signals. A group is "alive" while any member is not a zombie: a killed
//! grandchild re-parented to an init that does not reap stays a zombie forever, yet holds nothing.

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Pids of the live (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<i32> {
    let Ok(all) = procfs::process::all_processes() else {
        // No /proc: fall back to asking the kernel whether the group exists at all.
        return if killpg(Pid::from_raw(pgid), None).is_ok() { vec![pgid] } else { Vec::new() };
    };
    all.flatten()
        .filter_map(|p| p.stat().ok())
        .filter(|s| s.pgrp == pgid && !matches!(s.state, 'Z' | 'X' | 'x'))
        .map(|s| s.pid)
        .collect()
}

/// Whether any live process remains in group `pgid`.
pub fn group_alive(pgid: i32) -> bool {
    !group_members(pgid).is_empty()
}

/// Sends `signal` to every process of group `pgid`. Returns false when the group no longer exists,
/// and refuses (false, a warning) a `pgid` of 0 or 1 — `killpg(0)` is the caller's own group,
/// `killpg(1)` reaches init's group, and a negative one means every process — and the caller's own
/// group: no agent ever shares the bridge's group.
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
    if pgid <= 1 || pgid == nix::unistd::getpgrp().as_raw() {
        tracing::warn!(pgid, %signal, "refusing to signal a process group that is not an agent's");
        return false;
    }
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        Err(e) => {
            tracing::warn!(pgid, %signal, error = %e, "could not signal the process group");
            false
        }
    }
}
