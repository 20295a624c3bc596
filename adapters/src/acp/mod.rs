//! The Agent Client Protocol backend: any ACP agent (Zed's `codex-acp`, `claude-agent-acp`, …) over
//! its stdio, strict JSON-RPC 2.0 (docs/peers/acp.md).
//!
//! - [`config`]: the agent's command line and environment, the session's deadlines.
//! - [`session`]: handshake with the version gate, session new/load/resume, one turn at a time.
//! - [`mapping`]: `session/update`s → normalized events (pure).
//! - [`handler`]: the agent's requests (permissions, files) → the attempt's approver and the cwd.
//! - [`fs`]: file requests confined to the session's directory.
//! - [`backend`]: all of it as the `clawbridge-acp` harness.

pub mod backend;
pub mod config;
mod diagnose;
pub mod fs;
pub mod handler;
pub mod mapping;
pub mod session;

pub use backend::{AcpBackend, AcpOptions};
pub use config::{AGENT_ENV, AGENT_ENV_PASS, AUTH_METHOD_ENV, AcpConfig, AgentCommand, AgentCommandError, env_names};
pub use mapping::TurnMapper;
pub use session::{AcpError, AcpSession, SessionReady};

#[cfg(test)]
mod asked_tests;
#[cfg(test)]
mod tests;
