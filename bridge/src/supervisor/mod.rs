//! Owns a native agent process from spawn to reap: its own process group, a filtered environment,
//! a continuously drained stderr with a bounded tail, a staged stop, a group kill on drop, and a
//! registry that lets a restarted bridge reap what a crashed one left behind. Why each guard exists:
//! docs/peers/pipes.md.

mod containment;
mod env;
mod group;
mod pass_env;
mod process;
mod registry;
mod stderr;

pub use containment::{
    CGROUPS_VAR, CONTAINMENT_VALUE_ARG, CONTAINMENT_VAR, CgroupUnavailable, Containment, Escaped, TOKEN_SEPARATOR,
    cgroups_available, error_chain, fresh_token_text,
};
pub use env::{DEFAULT_INHERIT, EnvPolicy, LOADER_INJECTION};
pub use group::{group_alive, group_members, signal_group};
pub use pass_env::{PassEnvGroup, UnknownPassEnvGroup};
pub use process::{ChildProcess, CommandSpec, ExitWatch, SpawnError, SpawnOptions, StopOutcome, StopPolicy, StopStage};
pub use registry::{PidRegistry, ReapedOrphan, RegistryError};
pub use stderr::{DEFAULT_STDERR_TAIL_BYTES, StderrTail};
