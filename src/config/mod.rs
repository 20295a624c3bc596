//! The effective settings: every key from its flag, else its environment variable, else the config
//! file (`$XDG_CONFIG_HOME/clawbridge/config.toml`, `--config`, `CLAWBRIDGE_CONFIG`), else its
//! default — and where each came from, for `clawbridge config show`. The areas and their keys are
//! declared once, in [`areas`]; the code that uses a setting is handed it, never reads the
//! environment itself.

mod areas;
mod declare;
mod file;
mod routing;
pub mod show;
pub mod value;

use std::path::{Path, PathBuf};

pub use areas::*;
pub use file::{ConfigFile, FileChoice, MAX_CONFIG_BYTES, NO_FILE};

/// The variable naming the config file, below `--config`.
pub const CONFIG_ENV: &str = "CLAWBRIDGE_CONFIG";

/// The log filter when none is set.
pub const DEFAULT_LOG_FILTER: &str = "warn,clawbridge=info,clawbridge_bridge=info";

// The areas, in the order `config show` and the docs list them. A new area (`[telemetry]`, say) is a
// `settings_area!` in areas.rs and one line here.
declare::settings_root! {
    bridge => BridgeSettings;
    logs => LogSettings;
    codex => CodexSettings;
    claude => ClaudeSettings;
    acp => AcpSettings;
    agents => AgentSettings;
    serve => ServeSettings;
    containment => ContainmentSettings;
    run => RunSettings;
    reap => ReapSettings;
}

impl Settings {
    /// Loads the settings: the file `choice` names (read from disk), then `env` and `flags` over it.
    pub fn load(
        choice: &FileChoice,
        flags: Flags,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, ConfigError> {
        let file = ConfigFile::read(choice)?;
        Self::resolve(file.as_ref(), flags, env)
    }

    /// The settings from an already read `file` (none: defaults), `env` and `flags`.
    pub fn resolve(
        file: Option<&ConfigFile>,
        flags: Flags,
        env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, ConfigError> {
        let root = match file {
            Some(file) => file.parse::<FileRoot>()?,
            None => FileRoot::default(),
        };
        let input = Inputs { file, env };
        let settings = Self::resolve_areas(file.map(|file| file.path.clone()), root, flags, &input)?;
        // Keys that only mean something together are checked together, now, not at the first turn.
        settings.codex_remote()?;
        Ok(settings)
    }
}

/// The process environment as [`Settings::load`] reads it: a variable set to nothing counts as unset.
/// Not UTF-8 is not unset: a path key takes the bytes, any other key refuses them.
pub fn process_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// An area's other declared types (settings_area! implements it), so the list of areas names
/// each area once.
pub trait Area {
    /// Its file section, as written.
    type File;
    /// Its values given as flags.
    type Flags;
}

/// One effective setting: its value (none: unset, the consumer's own behaviour) and its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting<T> {
    /// The value, if any layer (or the default) gave one.
    pub value: Option<T>,
    /// Which layer gave it.
    pub source: Source,
}

impl<T> Setting<T> {
    /// The value, if any.
    pub fn get(&self) -> Option<&T> {
        self.value.as_ref()
    }
}

/// Where an effective setting came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// The built-in default.
    Default,
    /// The config file, at this line (1-based).
    File {
        /// The file.
        path: PathBuf,
        /// The line of the value.
        line: usize,
    },
    /// An environment variable.
    Env(&'static str),
    /// A command-line flag.
    Flag(&'static str),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "file:{}:{line}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One declared key, for the docs' table and `config show`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// Its section.
    pub section: &'static str,
    /// Its name in the file (kebab-case).
    pub name: String,
    /// Its type, in words.
    pub kind: &'static str,
    /// Its flag, if it has one.
    pub flag: Option<&'static str>,
    /// Its environment variables, the first set one winning.
    pub env: &'static [&'static str],
    /// Its default, in words: as `config show` prints the default value, or the declared text.
    pub default: String,
    /// The declared text that replaces the default value's (none: the value says it).
    pub shown_override: Option<&'static str>,
    /// What it does.
    pub doc: &'static str,
}

/// One effective setting as `config show` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownSetting {
    /// `section.key`.
    pub key: String,
    /// The value as text (none: unset).
    pub value: Option<String>,
    /// The value as JSON (null: unset).
    pub json: serde_json::Value,
    /// Where it came from.
    pub source: Source,
}

impl ShownSetting {
    pub(crate) fn of<T: value::SettingValue>(section: &str, key: &str, setting: &Setting<T>) -> Self {
        ShownSetting {
            key: format!("{section}.{}", kebab(key)),
            value: setting.value.as_ref().map(value::SettingValue::show),
            json: setting.value.as_ref().map_or(serde_json::Value::Null, value::SettingValue::to_json),
            source: setting.source.clone(),
        }
    }
}

/// A key's default in the docs' words: `shown` if declared, else the value as `config show`
/// prints it ("none" for nothing, e.g. an empty list).
pub(crate) fn default_text<T: value::SettingValue>(default: Option<&T>, shown: Option<&'static str>) -> String {
    match (shown, default.map(value::SettingValue::show)) {
        (Some(shown), _) => shown.to_string(),
        (None, Some(text)) if !text.is_empty() => text,
        (None, _) => "none".to_string(),
    }
}

/// A Rust field name as the file spells the key.
pub(crate) fn kebab(name: &str) -> String {
    name.replace('_', "-")
}

/// What one key is resolved from besides its flag.
pub(crate) struct Inputs<'a> {
    /// The file, for the lines of its values.
    file: Option<&'a ConfigFile>,
    /// The environment.
    env: &'a dyn Fn(&str) -> Option<std::ffi::OsString>,
}

impl Inputs<'_> {
    /// One key: `flag`, else the first of `env_vars` set, else the file's value, else `default`.
    #[expect(clippy::too_many_arguments, reason = "called only by settings_area!, one argument per declared fact")]
    pub(crate) fn resolve<T: value::SettingValue>(
        &self,
        section: &'static str,
        key: &'static str,
        flag_value: Option<T>,
        flag: Option<&'static str>,
        env_vars: &'static [&'static str],
        in_file: Option<toml::Spanned<T>>,
        default: Option<T>,
    ) -> Result<Setting<T>, ConfigError> {
        if let (Some(value), Some(flag)) = (flag_value, flag) {
            return Ok(Setting { value: Some(value), source: Source::Flag(flag) });
        }
        for &name in env_vars {
            if let Some(text) = (self.env)(name) {
                let value = T::from_env(&text).map_err(|expected| ConfigError::BadEnv {
                    var: name,
                    key: format!("{section}.{}", kebab(key)),
                    value: file::clip(&text.to_string_lossy()),
                    expected,
                })?;
                return Ok(Setting { value: Some(value), source: Source::Env(name) });
            }
        }
        if let (Some(spanned), Some(file)) = (in_file, self.file) {
            let (line, column) = file.line_column(spanned.span().start);
            let dir = file.path.parent().unwrap_or(Path::new("."));
            let value = spanned.into_inner().anchored_at(dir).map_err(|expected| ConfigError::Invalid {
                path: file.path.clone(),
                line,
                column,
                key: Some(format!("{section}.{}", kebab(key))),
                message: format!("expected {expected}"),
            })?;
            return Ok(Setting { value: Some(value), source: Source::File { path: file.path.clone(), line } });
        }
        Ok(Setting { value: default, source: Source::Default })
    }
}

/// Why the settings could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The config file (named by `--config` or `CLAWBRIDGE_CONFIG`, or the default one that exists) could not be read.
    #[error("cannot read the config file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The config file is larger than [`MAX_CONFIG_BYTES`].
    #[error("the config file {} is larger than {limit} bytes; is it the right file?", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// The config file is not a regular file (a directory, a FIFO, a device): reading it could block or mean nothing.
    #[error("the config file {} is not a regular file", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// The config file is not valid UTF-8.
    #[error("the config file {} is not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// The file is not valid TOML, names a key clawbridge does not know, or gives a key a value of the wrong type.
    #[error("{}:{line}:{column}: {}{message}", path.display(), key.as_ref().map(|key| format!("key `{key}`: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line of the error (1-based).
        line: usize,
        /// Its column (1-based, in characters).
        column: usize,
        /// The key it is about (`section.key`), when it is about one.
        key: Option<String>,
        /// What is wrong, and what was expected.
        message: String,
    },
    /// Keys that only work together are set apart (an auth mode without its token, a token
    /// without an endpoint).
    #[error("the setting {key} {why}")]
    Incomplete {
        /// The key the others depend on.
        key: &'static str,
        /// What is missing or contradicts it.
        why: &'static str,
    },
    /// An environment variable holds a value its key cannot take.
    #[error("{var}={value} (the setting {key}): expected {expected}")]
    BadEnv {
        /// The variable.
        var: &'static str,
        /// The key it sets.
        key: String,
        /// Its value (clipped).
        value: String,
        /// What the key takes.
        expected: value::ValueError,
    },
}

/// The state dir when none is set: `$XDG_STATE_HOME/clawbridge`, else `~/.local/state/clawbridge`.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME") {
        return PathBuf::from(dir).join("clawbridge");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/state/clawbridge"),
        None => std::env::temp_dir().join("clawbridge-state"),
    }
}

/// The default config file: `$XDG_CONFIG_HOME/clawbridge/config.toml`, else `~/.config/clawbridge/config.toml`.
pub fn default_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|dir| Path::new(dir).is_absolute()) {
        return Some(PathBuf::from(dir).join("clawbridge/config.toml"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config/clawbridge/config.toml"))
}

#[cfg(test)]
mod tests;
