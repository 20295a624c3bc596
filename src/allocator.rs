//! The process's allocator: mimalloc (v2, no transparent huge pages) instead of glibc malloc.
//!
//! Every native line is allocated on the peer's reader thread and freed on the session's or the
//! forwarder's, where glibc's arenas contend on a lock (profiles of the benchmarks showed futex
//! waits inside `free`); mimalloc frees to the owning thread's list. Measured in BENCHMARKS.md.
//! `clawbridge-bench` (`bench/`) compiles this very file into its binary, since the bridge's work it
//! measures runs in its own process.

use libmimalloc_sys::{mi_option_set, mi_option_t};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc v2's `mi_option_purge_delay` (`mimalloc.h`), which the bindings do not name.
const PURGE_DELAY: mi_option_t = 15;

/// Returns freed memory to the OS at once instead of after mimalloc's default 10 ms: a turn that
/// streams output in large merged deltas otherwise holds many freed megabytes, so its peak RSS
/// varied several-fold between runs (36–179 MiB for a 1 GiB turn) instead of staying near 40 MiB.
pub fn tune() {
    // SAFETY: sets a process-wide tuning option; any value is valid and it is read on each purge.
    #[expect(unsafe_code, reason = "mimalloc's option setter is an FFI call; see SAFETY above")]
    unsafe {
        mi_option_set(PURGE_DELAY, 0);
    }
}
