//! The one credential a native Codex session takes from the bridge's environment: the `env_key`
//! of the model provider `$CODEX_HOME/config.toml` selects (docs/peers/codex.md#the-providers-key).
//! Sessions inherit no credential by default, so a provider configured with `env_key = "MY_KEY"`
//! would otherwise never see `MY_KEY`; this passes that one named variable, as Claude's
//! `ANTHROPIC_*` pass-through does for Claude Code. Host route auth brings its own key instead.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The most of `config.toml` read: a config, not a data file.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// `CODEX_HOME` as Codex resolves it: the configured one, else `$HOME/.codex`.
pub fn resolve_home(configured: Option<&Path>) -> Option<PathBuf> {
    configured
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".codex")))
}

/// The `env_key` of the provider `<home>/config.toml` selects (its `model_provider`, or the
/// selected `profile`'s), when that is a plain variable name; `None` when there is none or the
/// file cannot be read (Codex then reports its own error at start).
pub fn selected_env_key(home: &Path) -> Option<String> {
    let mut text = String::new();
    std::fs::File::open(home.join("config.toml")).ok()?.take(MAX_CONFIG_BYTES).read_to_string(&mut text).ok()?;
    let config: toml::Table = text.parse().ok()?;
    let from_profile = config
        .get("profile")
        .and_then(toml::Value::as_str)
        .and_then(|profile| config.get("profiles")?.get(profile)?.get("model_provider")?.as_str());
    let provider = from_profile.or_else(|| config.get("model_provider")?.as_str())?;
    let key = config.get("model_providers")?.get(provider)?.get("env_key")?.as_str()?;
    is_variable_name(key).then(|| key.to_owned())
}

/// A name the environment can hold and no pattern of ours reads specially (`*`).
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn home_with(config: &str) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        home
    }

    #[test]
    fn the_selected_providers_env_key_is_the_one_passed() {
        let config = "model_provider = \"mock\"\n[model_providers.mock]\nenv_key = \"MOCK_API_KEY\"\n\
                      [model_providers.other]\nenv_key = \"OTHER_KEY\"\n";
        assert_eq!(selected_env_key(home_with(config).path()).as_deref(), Some("MOCK_API_KEY"));
        let profiled = format!("profile = \"p\"\n{config}[profiles.p]\nmodel_provider = \"other\"\n");
        assert_eq!(selected_env_key(home_with(&profiled).path()).as_deref(), Some("OTHER_KEY"));
    }

    #[test]
    fn nothing_passes_without_a_selected_provider_or_with_a_pattern_for_a_name() {
        assert_eq!(selected_env_key(home_with("[model_providers.mock]\nenv_key = \"K\"\n").path()), None);
        let pattern = "model_provider = \"m\"\n[model_providers.m]\nenv_key = \"OPENAI_*\"\n";
        assert_eq!(selected_env_key(home_with(pattern).path()), None);
        assert_eq!(selected_env_key(home_with("not toml [").path()), None);
        assert_eq!(selected_env_key(Path::new("/nonexistent")), None);
    }
}
