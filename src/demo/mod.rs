//! The demo backend's other half, played by this very binary so the demo needs no peer. Under
//! `clawbridge run` it is the scripted agent (`clawbridge demo-listen`, [`agent`]), which answers
//! the prompt it is given; under `serve` (and in the tests that pin its bytes) it is the player of a
//! bundled recording of a real codex app-server 0.169.0 turn (`clawbridge demo-agent`). The Codex
//! backend drives either like the real thing.

mod agent;
mod command;

pub use agent::serve as listen;

use std::ffi::OsString;

use anyhow::Context;
use clawbridge_adapters::DemoAgent;
use clawbridge_bridge::backend::Registry;
use clawbridge_bridge::supervisor::PassEnvGroup;

/// The recording the demo plays, recorded with clawbridge's own Codex session as the client.
const DEMO_RECORDING: &str = include_str!("../../fixtures/recordings/demo/codex-demo.jsonl");
/// The codex app-server version the recording was made with.
const RECORDED_VERSION: &str = "0.169.0";
/// The hidden subcommand that plays it.
pub const DEMO_AGENT_COMMAND: &str = "demo-agent";
/// The hidden subcommand of the scripted agent.
pub const DEMO_LISTEN_COMMAND: &str = "demo-listen";

/// Every backend this binary offers, the demo played by this very executable.
pub fn registry() -> Registry {
    registry_passing(&[])
}

/// [`registry`] passing the operator's opt-in environment groups (`--pass-env`).
pub fn registry_passing(pass_env: &[PassEnvGroup]) -> Registry {
    clawbridge_adapters::registry_passing(demo_agent(false), pass_env)
}

/// [`registry`] under the effective `settings` (src/config).
pub fn registry_configured(settings: &crate::config::Settings) -> Registry {
    clawbridge_adapters::registry_configured(demo_agent(false), &settings.backend_options())
}

/// The backends `clawbridge run` offers under the effective `settings`: [`registry_configured`]'s,
/// the demo being the scripted agent that answers the person's own prompt.
pub fn run_registry_configured(settings: &crate::config::Settings) -> Registry {
    clawbridge_adapters::registry_configured(demo_agent(true), &settings.backend_options())
}

/// The demo agent: this very executable, re-run as the scripted agent (`demo-listen`) or as the
/// recording's player (`demo-agent`).
fn demo_agent(scripted: bool) -> DemoAgent {
    let program = std::env::current_exe().unwrap_or_default();
    let command = if scripted { DEMO_LISTEN_COMMAND } else { DEMO_AGENT_COMMAND };
    DemoAgent { program, args: vec![OsString::from(command)], recorded_version: RECORDED_VERSION, scripted }
}

/// Plays the recording on stdin/stdout until the client is done.
pub fn play() -> anyhow::Result<()> {
    use clawbridge_bridge::replay::{Recording, ReplayOptions, replay};
    let recording = Recording::parse(DEMO_RECORDING).context("the bundled demo recording is damaged")?;
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    replay(&recording, std::io::stdin().lock(), stdout, &ReplayOptions::default())
        .context("the demo client did not follow the bundled recording")
}
