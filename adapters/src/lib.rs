//! One module per native backend, each implementing [`clawbridge_bridge::backend::Backend`] once:
//! its config, the mapping of native events to normalized events, its request handler and its
//! session. An adapter never reaches into another; the [`registry`] is the one place that lists
//! them.

pub mod acp;
pub mod claude;
pub mod codex;

#[cfg(test)]
mod test_support;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use clawbridge_bridge::backend::Registry;
use clawbridge_bridge::supervisor::PassEnvGroup;

/// The executable that plays the demo's bundled recording, and its arguments.
#[derive(Clone, Debug)]
pub struct DemoAgent {
    /// The program (the `clawbridge` binary).
    pub program: PathBuf,
    /// Its arguments before Codex's own (`demo-agent`).
    pub args: Vec<OsString>,
    /// The version of the codex app-server the recording was made with.
    pub recorded_version: &'static str,
}

/// Every backend clawbridge ships, in the order hosts list them: the demo (played by `demo`), Codex,
/// Claude Code, and the ACP agent `CLAWBRIDGE_ACP_AGENT` names (only when it names one, as the plugin
/// registers its harness). Adding a backend is one line here. Call inside a tokio runtime (backends that
/// keep warm processes start their reapers).
pub fn registry(demo: DemoAgent) -> Registry {
    registry_passing(demo, &[])
}

/// [`registry`] with the operator's opt-in environment groups (`--pass-env`) passed to the
/// backends whose modes need them (Claude Code's Bedrock and Vertex modes).
pub fn registry_passing(demo: DemoAgent, pass_env: &[PassEnvGroup]) -> Registry {
    let registry = Registry::new()
        .with(Arc::new(codex::CodexBackend::demo(demo.program, demo.args, demo.recorded_version)))
        .with(Arc::new(codex::CodexBackend::native()))
        .with(Arc::new(claude::ClaudeBackend::default().passing_env(pass_env)));
    let acp = acp::AcpBackend::from_env();
    if acp.is_configured() { registry.with(Arc::new(acp)) } else { registry }
}
