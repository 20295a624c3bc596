//! `clawbridge run --backend acp --agent "<command line>" [--agent-env NAME]…`: the ACP backend of the
//! registry replaced by one running the agent the command line names.

use std::sync::Arc;

use clawbridge_adapters::acp::{AcpBackend, AgentCommand};
use clawbridge_bridge::backend::Registry;

/// `registry` with its ACP backend running `agent` (else the one `CLAWBRIDGE_ACP_AGENT` names, else
/// none, which `run` then reports by name) and seeing `agent_env` too, for `--backend acp`.
pub fn with_agent(
    registry: Registry,
    backend: &str,
    agent: Option<&str>,
    agent_env: Vec<String>,
) -> anyhow::Result<Registry> {
    if backend != "acp" && (agent.is_some() || !agent_env.is_empty()) {
        anyhow::bail!("--agent and --agent-env are for --backend acp (not `{backend}`)");
    }
    if backend != "acp" {
        return Ok(registry);
    }
    let mut acp = AcpBackend::from_env().passing(agent_env);
    if let Some(line) = agent {
        acp = acp.with_agent(AgentCommand::parse(line)?);
    }
    Ok(registry.with(Arc::new(acp)))
}
