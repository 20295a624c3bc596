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

/// Sends `signal` to every process of group `pgid`. Returns false when the group no longer exists.
pub fn signal_group(pgid: i32, signal: Signal) -> bool {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) => true,
        Err(Errno::ESRCH) => false,
        Err(e) => {
            tracing::warn!(pgid, %signal, error = %e, "could not signal the process group");
            false
        }
    }
}
