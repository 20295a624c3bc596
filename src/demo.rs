//! The demo backend's other half: this binary, re-run as `clawbridge demo-agent`, plays a bundled
//! recording of a real codex app-server 0.169.0 turn (an approved command) on stdio, as
//! `codex app-server` would; the Codex backend drives it like the real thing.

use std::ffi::OsString;

use anyhow::Context;
use clawbridge_adapters::DemoAgent;
use clawbridge_bridge::backend::Registry;
use clawbridge_bridge::supervisor::PassEnvGroup;

/// The recording the demo plays, recorded with clawbridge's own Codex session as the client.
const DEMO_RECORDING: &str = include_str!("../fixtures/recordings/demo/codex-demo.jsonl");
/// The codex app-server version the recording was made with.
const RECORDED_VERSION: &str = "0.169.0";
/// The hidden subcommand that plays it.
pub const DEMO_AGENT_COMMAND: &str = "demo-agent";

/// Every backend this binary offers, the demo played by this very executable.
pub fn registry() -> Registry {
    registry_passing(&[])
}

/// [`registry`] passing the operator's opt-in environment groups (`--pass-env`).
pub fn registry_passing(pass_env: &[PassEnvGroup]) -> Registry {
    clawbridge_adapters::registry_passing(demo_agent(), pass_env)
}

/// [`registry`] under the effective `settings` (src/config).
pub fn registry_configured(settings: &crate::config::Settings) -> Registry {
    clawbridge_adapters::registry_configured(demo_agent(), &settings.backend_options())
}

/// The demo agent: this very executable, re-run as `demo-agent`.
fn demo_agent() -> DemoAgent {
    let program = std::env::current_exe().unwrap_or_default();
    DemoAgent { program, args: vec![OsString::from(DEMO_AGENT_COMMAND)], recorded_version: RECORDED_VERSION }
}

/// Plays the recording on stdin/stdout until the client is done.
pub fn play() -> anyhow::Result<()> {
    use clawbridge_bridge::replay::{Recording, ReplayOptions, replay};
    let recording = Recording::parse(DEMO_RECORDING).context("the bundled demo recording is damaged")?;
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    replay(&recording, std::io::stdin().lock(), stdout, &ReplayOptions::default())
        .context("the demo client did not follow the bundled recording")
}
