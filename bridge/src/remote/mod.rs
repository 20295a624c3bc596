//! Running a native agent on another machine through a tool the user already has — `ssh -T host`,
//! `docker exec -i ctr`, `kubectl exec -i pod --` — instead of an agent of our own: the launcher is
//! the local child the supervisor owns, and the agent runs on the far side under a small POSIX `sh`
//! wrapper (no clawbridge binary is assumed there) that exits when its stdin ends and kills what
//! the agent left. What holds and what does not: docs/remote.md.

mod command;
mod preamble;

pub use command::{Launcher, LauncherError, RemoteCommand, RemoteSpec, WRAPPER_NAME, launch, quote_word};
pub use preamble::{MAX_PREAMBLE_BYTES, PrefixedWriter, StdinPreamble};
