//! How a child process ended, in a form both the supervisor and the RPC layer can report.

use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// The end of a child process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitState {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl ExitState {
    /// Whether it exited with code 0.
    pub fn success(self) -> bool {
        self == ExitState::Code(0)
    }
}

impl From<ExitStatus> for ExitState {
    fn from(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => ExitState::Code(code),
            (None, Some(signal)) => ExitState::Signal(signal),
            // Neither is only possible for stopped/continued states, which `wait` never returns.
            (None, None) => ExitState::Code(-1),
        }
    }
}

impl fmt::Display for ExitState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitState::Code(code) => write!(f, "exit code {code}"),
            ExitState::Signal(signal) => match nix::sys::signal::Signal::try_from(*signal) {
                Ok(name) => write!(f, "killed by signal {signal} ({name})"),
                Err(_) => write!(f, "killed by signal {signal}"),
            },
        }
    }
}
