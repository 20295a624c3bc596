//! The kinds of value a setting holds: how each is read from an environment variable (the file's
//! values come through serde), how it is shown, and what the docs call its type.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use clawbridge_bridge::supervisor::PassEnvGroup;
use serde::{Deserialize, Deserializer};

/// Why a variable's or the file's value is not one its key takes; shown after "expected".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A variable that is not UTF-8, for a key that takes text.
    #[error("UTF-8 text")]
    NotText,
    /// Not a whole number.
    #[error("a whole number")]
    NotANumber,
    /// An empty path (it would mean the directory the command runs in).
    #[error("a non-empty path")]
    EmptyPath,
    /// A log filter tracing cannot parse; its reason.
    #[error("a log filter (tracing's EnvFilter syntax): {0}")]
    LogFilter(String),
    /// A launcher that names no program, or whose text a shell could not split.
    #[error("a launcher command line, e.g. [\"ssh\", \"-T\", \"build-box\"] or \"ssh -T build-box\"")]
    Launcher,
    /// A pass-env group that does not exist.
    #[error("{0}")]
    PassEnv(#[from] clawbridge_bridge::supervisor::UnknownPassEnvGroup),
    /// An endpoint that is none (`[codex] connect`).
    #[error("{0}")]
    Endpoint(#[from] clawbridge_bridge::transport::endpoint::EndpointParseError),
    /// A WebSocket auth mode codex does not have.
    #[error("\"capability-token\" or \"signed-bearer-token\"")]
    WsAuthMode,
    /// Not one of the Codex server modes.
    #[error("\"shared\" or \"per-attempt\"")]
    NotAServerMode,
}

/// A value a setting can hold.
pub trait SettingValue: Sized + Clone + std::fmt::Debug {
    /// Its type as the docs and `config show` name it.
    const KIND: &'static str;
    /// Reads it from an environment variable's text; `Err` says what was expected.
    fn from_env_text(text: &str) -> Result<Self, ValueError>;
    /// Reads it from an environment variable's value as the OS gave it: text only, unless the
    /// type takes any bytes (a path).
    fn from_env(value: &OsStr) -> Result<Self, ValueError> {
        Self::from_env_text(value.to_str().ok_or(ValueError::NotText)?)
    }
    /// The value as the file at `dir` wrote it, made what the file means (a path relative to the
    /// file's directory); `Err` says what was expected.
    fn anchored_at(self, _dir: &Path) -> Result<Self, ValueError> {
        Ok(self)
    }
    /// How `config show` prints it.
    fn show(&self) -> String;
    /// How `config show --json` prints it.
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.show())
    }
}

impl SettingValue for PathBuf {
    const KIND: &'static str = "path";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        Ok(PathBuf::from(text))
    }
    fn from_env(value: &OsStr) -> Result<Self, ValueError> {
        Ok(PathBuf::from(value))
    }
    fn anchored_at(self, dir: &Path) -> Result<Self, ValueError> {
        // A dotfile's relative path means beside the file, not wherever the command runs.
        if self.as_os_str().is_empty() {
            return Err(ValueError::EmptyPath);
        }
        Ok(if self.is_relative() { dir.join(self) } else { self })
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

impl SettingValue for String {
    const KIND: &'static str = "string";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        Ok(text.to_string())
    }
    fn show(&self) -> String {
        self.clone()
    }
}

impl SettingValue for u64 {
    const KIND: &'static str = "integer";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        text.trim().parse().map_err(|_| ValueError::NotANumber)
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::from(*self)
    }
}

/// An executable: a path, or a bare name looked up on PATH.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Program(pub PathBuf);

impl SettingValue for Program {
    const KIND: &'static str = "path or name on PATH";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        Ok(Program(PathBuf::from(text)))
    }
    fn from_env(value: &OsStr) -> Result<Self, ValueError> {
        Ok(Program(PathBuf::from(value)))
    }
    fn anchored_at(self, dir: &Path) -> Result<Self, ValueError> {
        // A bare name is a PATH lookup, as in a shell; anything with a separator is a path.
        if self.0.components().count() == 1 && self.0.is_relative() && !self.0.as_os_str().is_empty() {
            return Ok(self);
        }
        self.0.anchored_at(dir).map(Program)
    }
    fn show(&self) -> String {
        self.0.display().to_string()
    }
}

/// A log filter in tracing's `EnvFilter` syntax, checked when read so a typo is an error, not
/// silently the default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogFilter(pub String);

impl std::str::FromStr for LogFilter {
    type Err = ValueError;
    fn from_str(text: &str) -> Result<Self, ValueError> {
        tracing_subscriber::EnvFilter::try_new(text)
            .map(|_| LogFilter(text.to_string()))
            .map_err(|error| ValueError::LogFilter(error.to_string()))
    }
}

impl<'de> Deserialize<'de> for LogFilter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

impl SettingValue for LogFilter {
    const KIND: &'static str = "log filter";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        text.parse()
    }
    fn show(&self) -> String {
        self.0.clone()
    }
}

/// Environment groups passed to the agents (`--pass-env bedrock,vertex`): in the file a list of
/// names (`["bedrock"]`) or the same comma-separated text the flag takes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassEnvList(pub Vec<PassEnvGroup>);

impl std::str::FromStr for PassEnvList {
    type Err = clawbridge_bridge::supervisor::UnknownPassEnvGroup;
    fn from_str(list: &str) -> Result<Self, Self::Err> {
        PassEnvGroup::parse_list(list).map(PassEnvList)
    }
}

impl<'de> Deserialize<'de> for PassEnvList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a list of group names, e.g. [\"bedrock\", \"vertex\"]")]
        enum Form {
            List(Vec<String>),
            Text(String),
        }
        let text = match Form::deserialize(deserializer)? {
            Form::List(names) => names.join(","),
            Form::Text(text) => text,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl SettingValue for PassEnvList {
    const KIND: &'static str = "list of groups (bedrock, vertex)";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        text.parse().map_err(ValueError::PassEnv)
    }
    fn show(&self) -> String {
        self.0.iter().map(|group| group.name()).collect::<Vec<_>>().join(",")
    }
    fn to_json(&self) -> serde_json::Value {
        self.0.iter().map(|group| serde_json::Value::from(group.name())).collect()
    }
}

/// Whether Codex attempts share warm app-servers or each start their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CodexServerSetting {
    /// Attempts share warm app-servers, many threads on one process.
    Shared,
    /// Every attempt starts its own app-server and stops it at its end.
    PerAttempt,
}

impl SettingValue for CodexServerSetting {
    const KIND: &'static str = "\"shared\" or \"per-attempt\"";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        match text {
            "shared" => Ok(CodexServerSetting::Shared),
            "per-attempt" => Ok(CodexServerSetting::PerAttempt),
            _ => Err(ValueError::NotAServerMode),
        }
    }
    fn show(&self) -> String {
        match self {
            CodexServerSetting::Shared => "shared".into(),
            CodexServerSetting::PerAttempt => "per-attempt".into(),
        }
    }
}

/// A launcher prefix that runs a backend's agent elsewhere (`ssh -T build-box`): in the file a
/// list of words or one line split as a shell would (no expansion); in a variable, the line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LauncherWords(pub Vec<String>);

impl std::str::FromStr for LauncherWords {
    type Err = ValueError;
    fn from_str(line: &str) -> Result<Self, ValueError> {
        let words = shell_words::split(line).map_err(|_| ValueError::Launcher)?;
        LauncherWords::from_words(words)
    }
}

impl LauncherWords {
    /// `words`, if they name a program.
    fn from_words(words: Vec<String>) -> Result<Self, ValueError> {
        if words.first().is_none_or(String::is_empty) {
            return Err(ValueError::Launcher);
        }
        Ok(LauncherWords(words))
    }
}

impl<'de> Deserialize<'de> for LauncherWords {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "a list of words, e.g. [\"ssh\", \"-T\", \"build-box\"], or one line")]
        enum Form {
            List(Vec<String>),
            Text(String),
        }
        match Form::deserialize(deserializer)? {
            Form::List(words) => LauncherWords::from_words(words),
            Form::Text(line) => line.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

impl SettingValue for LauncherWords {
    const KIND: &'static str = "command line (list of words)";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        text.parse()
    }
    fn show(&self) -> String {
        shell_words::join(&self.0)
    }
    fn to_json(&self) -> serde_json::Value {
        self.0.iter().map(|word| serde_json::Value::from(word.as_str())).collect()
    }
}

/// Whether the bridge puts each agent in a cgroup of its own where the machine allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CgroupsSetting {
    /// A cgroup where available, else the containment token alone.
    Auto,
    /// Never a cgroup: the token and the process group only.
    Off,
}

impl SettingValue for CgroupsSetting {
    const KIND: &'static str = "\"auto\" or \"off\"";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        // As the variable always read: off, 0, false or no turn cgroups off; anything else leaves them on.
        match text.to_ascii_lowercase().as_str() {
            "off" | "0" | "false" | "no" => Ok(CgroupsSetting::Off),
            _ => Ok(CgroupsSetting::Auto),
        }
    }
    fn show(&self) -> String {
        match self {
            CgroupsSetting::Auto => "auto".into(),
            CgroupsSetting::Off => "off".into(),
        }
    }
}

/// Where a listening app-server is (`unix:///path`, `ws://host:port`, `wss://…`, or `proxy[:///path]`
/// for a daemon behind `codex app-server proxy`), checked when read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectUrl(pub clawbridge_bridge::transport::endpoint::Endpoint);

impl std::str::FromStr for ConnectUrl {
    type Err = clawbridge_bridge::transport::endpoint::EndpointParseError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(ConnectUrl)
    }
}

impl<'de> Deserialize<'de> for ConnectUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

impl SettingValue for ConnectUrl {
    const KIND: &'static str = "unix:///path, ws://host:port, wss://host:port, proxy or proxy:///path";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        text.parse().map_err(ValueError::Endpoint)
    }
    fn show(&self) -> String {
        self.0.to_string()
    }
}

/// How a WebSocket app-server authenticates us, as its `--ws-auth` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum WsAuthMode {
    /// The token itself is the bearer.
    CapabilityToken,
    /// A short-lived HS256 JWT signed with the shared secret is the bearer.
    SignedBearerToken,
}

impl SettingValue for WsAuthMode {
    const KIND: &'static str = "\"capability-token\" or \"signed-bearer-token\"";
    fn from_env_text(text: &str) -> Result<Self, ValueError> {
        match text {
            "capability-token" => Ok(WsAuthMode::CapabilityToken),
            "signed-bearer-token" => Ok(WsAuthMode::SignedBearerToken),
            _ => Err(ValueError::WsAuthMode),
        }
    }
    fn show(&self) -> String {
        match self {
            WsAuthMode::CapabilityToken => "capability-token".into(),
            WsAuthMode::SignedBearerToken => "signed-bearer-token".into(),
        }
    }
}
