//! OpenClaw's official Codex plugin (`@openclaw/codex`) on the same mock: the third target of the
//! gateway bench, OpenClaw's own way of running a Codex model through the codex app-server.
//!
//! What it takes (found by experiment with openclaw 2026.9.6 and the plugin 2026.9.5):
//!
//! - OpenClaw must have installed the plugin from npm itself: a plugin loaded from a path loads but
//!   may not register the reserved `codex` harness ("Owner plugin codex loaded but did not register
//!   agent harness codex"). `scripts/install-peers.sh openclaw-codex` installs it once into a
//!   template state dir; each run copies the state database, which holds the install record.
//! - The plugin runs the pinned codex 0.169.0 (`appServer.command`), not the 0.154.0 it ships, so
//!   both Codex harnesses run the same binary. With `homeScope: "user"` it uses `~/.codex` of the
//!   sandbox's HOME, where the bench writes the same mock config the clawbridge harness uses.
//! - Its model is `openai/mock-model` with `agentRuntime.id: "codex"`: the plugin takes only an
//!   official OpenAI Responses route, so the provider keeps OpenAI's URL, which is never called.
//!   Codex's own calls go to the mock: the gateway's environment has `OPENAI_BASE_URL` and the
//!   app-server gets `-c openai_base_url=…` (both set; which one codex used was not isolated).
//! - OpenClaw 2026.9.6 looks for `@openclaw/codex@2026.9.6` (unpublished) at every start and
//!   warns; `NPM_CONFIG_OFFLINE=true` keeps that look-up off the network.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::openclaw::OpenClawHome;
use clawbridge_fixtures::peers::{codex, repo_root};
use serde_json::{Value, json};

use super::Harnessed;

/// The agent on the official plugin.
pub const TARGET: Harnessed =
    Harnessed { label: "openclaw codex plugin (@openclaw/codex)", agent: "codexplugin", harness: "codex" };

/// Where `scripts/install-peers.sh openclaw-codex` put the template state dir, or why there is none.
pub fn template() -> Result<PathBuf, String> {
    let dir = match std::env::var_os("CLAWBRIDGE_BENCH_OPENCLAW_CODEX_STATE") {
        Some(dir) => PathBuf::from(dir),
        None => repo_root().join(".peers/openclaw-codex/state"),
    };
    if dir.join("state/openclaw.sqlite").is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "no OpenClaw state with the plugin installed at {} (run `bash scripts/install-peers.sh openclaw-codex`, \
             or set CLAWBRIDGE_BENCH_OPENCLAW_CODEX_STATE to its printed openclaw-codex-state)",
            dir.display()
        ))
    }
}

/// Copies the install record into `home`'s state dir and adds the plugin, its model and its agent
/// to `config`.
pub fn prepare(
    template: &Path,
    home: &mut OpenClawHome<'_>,
    config: &mut Value,
    codex_bin: &Path,
    mock: &MockModel,
) -> anyhow::Result<()> {
    let database = home.state.join("state");
    std::fs::create_dir_all(&database).context("creating OpenClaw's state database dir")?;
    let mut copied = 0;
    for entry in std::fs::read_dir(template.join("state")).context("reading the template state")? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("openclaw.sqlite") {
            std::fs::copy(entry.path(), database.join(&name))
                .with_context(|| format!("copying {}", entry.path().display()))?;
            copied += 1;
        }
    }
    if copied == 0 {
        bail!("the template state at {} has no openclaw.sqlite", template.display());
    }
    let native_home = home.sandbox.home().join(".codex");
    std::fs::create_dir_all(&native_home).context("creating ~/.codex")?;
    std::fs::write(native_home.join("config.toml"), codex::config_toml(mock))
        .context("writing ~/.codex/config.toml")?;
    let base = format!("{}/v1", mock.base_url());
    home.extra_env.push(("OPENAI_BASE_URL".into(), base.clone()));
    home.extra_env.push(("NPM_CONFIG_OFFLINE".into(), "true".into()));

    config["plugins"]["entries"]["codex"] = json!({"enabled": true, "config": {"appServer": {
        "command": codex_bin,
        "homeScope": "user",
        "args": ["app-server", "--listen", "stdio://", "-c", format!("openai_base_url=\"{base}\"")],
    }}});
    let model = config["models"]["providers"]["mock"]["models"][0].clone();
    config["models"]["providers"]["openai"] = json!({
        "baseUrl": "https://api.openai.com/v1", "apiKey": "sk-mock-local", "api": "openai-responses",
        "models": [model],
    });
    config["agents"]["defaults"]["models"]["openai/mock-model"] =
        json!({"alias": "Mock via the Codex plugin", "agentRuntime": {"id": "codex"}});
    config["agents"]["entries"][TARGET.agent] = json!({"model": "openai/mock-model"});
    Ok(())
}
