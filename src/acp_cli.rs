//! `clawbridge run --backend acp --agent "<command line>" [--agent-env NAME]…`: the ACP backend of the
//! registry replaced by one running the agent the command line names.

use std::sync::Arc;

use clawbridge_adapters::BackendOptions;
use clawbridge_adapters::acp::{AcpBackend, AgentCommand};
use clawbridge_bridge::backend::Registry;

/// `registry` with its ACP backend running the agent the settings name (`--agent` is one of them,
/// over `CLAWBRIDGE_ACP_AGENT` and the file's `acp.agent`; none is reported by name when the turn
/// starts) and seeing `agent_env` too, for `--backend acp`. `agent_flag`: `--agent` was given.
pub fn with_agent(
    registry: Registry,
    backend: &str,
    agent_flag: bool,
    options: &BackendOptions,
    agent_env: Vec<String>,
) -> anyhow::Result<Registry> {
    if backend != "acp" && (agent_flag || !agent_env.is_empty()) {
        anyhow::bail!("--agent and --agent-env are for --backend acp (not `{backend}`)");
    }
    if backend != "acp" {
        return Ok(registry);
    }
    let acp_options = options.acp.clone().unwrap_or_default();
    if agent_flag {
        // A command line given on this one is refused here, before anything runs, if it does not parse.
        if let Some(line) = acp_options.agent.as_deref() {
            AgentCommand::parse(line)?;
        }
    }
    let acp = AcpBackend::from_options(&acp_options).passing(agent_env);
    Ok(registry.with(Arc::new(acp)))
}
