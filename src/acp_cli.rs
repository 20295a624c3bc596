//! `clawbridge run --backend acp --agent "<command line>" [--agent-env NAME]…`: the ACP backend of the
//! registry replaced by one running the agent the command line names.

use std::sync::Arc;

use clawbridge_adapters::acp::{AcpBackend, AgentCommand};
use clawbridge_bridge::backend::Registry;

/// `registry` with its ACP backend running `agent` (when given) and seeing `agent_env` too.
pub fn with_agent(
    registry: Registry,
    backend: &str,
    agent: Option<&str>,
    agent_env: Vec<String>,
) -> anyhow::Result<Registry> {
    if agent.is_none() && agent_env.is_empty() {
        return Ok(registry);
    }
    if backend != "acp" {
        anyhow::bail!("--agent and --agent-env are for --backend acp (not `{backend}`)");
    }
    let mut acp = AcpBackend::from_env().passing(agent_env);
    if let Some(line) = agent {
        acp = acp.with_agent(AgentCommand::parse(line)?);
    }
    Ok(registry.with(Arc::new(acp)))
}
