//! The kinds of value a setting holds: how each is read from an environment variable (the file's
//! values come through serde), how it is shown, and what the docs call its type.

use std::path::PathBuf;

use clawbridge_bridge::supervisor::PassEnvGroup;
use serde::{Deserialize, Deserializer};

/// A value a setting can hold.
pub trait SettingValue: Sized + Clone + std::fmt::Debug {
    /// Its type as the docs and `config show` name it.
    const KIND: &'static str;
    /// Reads it from an environment variable's text; `Err` says what was expected.
    fn from_env_text(text: &str) -> Result<Self, String>;
    /// How `config show` prints it.
    fn show(&self) -> String;
    /// How `config show --json` prints it.
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.show())
    }
}

impl SettingValue for PathBuf {
    const KIND: &'static str = "path";
    fn from_env_text(text: &str) -> Result<Self, String> {
        Ok(PathBuf::from(text))
    }
    fn show(&self) -> String {
        self.display().to_string()
    }
}

impl SettingValue for String {
    const KIND: &'static str = "string";
    fn from_env_text(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
    fn show(&self) -> String {
        self.clone()
    }
}

impl SettingValue for u64 {
    const KIND: &'static str = "integer";
    fn from_env_text(text: &str) -> Result<Self, String> {
        text.trim().parse().map_err(|_| "a whole number".to_string())
    }
    fn show(&self) -> String {
        self.to_string()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::from(*self)
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
    fn from_env_text(text: &str) -> Result<Self, String> {
        text.parse().map_err(|error: clawbridge_bridge::supervisor::UnknownPassEnvGroup| error.to_string())
    }
    fn show(&self) -> String {
        self.0.iter().map(|group| group.name()).collect::<Vec<_>>().join(",")
    }
    fn to_json(&self) -> serde_json::Value {
        self.0.iter().map(|group| serde_json::Value::from(group.name())).collect()
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
    fn from_env_text(text: &str) -> Result<Self, String> {
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

/// Text that may hold a credential (a future key's token, say): read like a string, never shown.
/// No key holds one today (credentials stay in the environment); a key that must is declared
/// with this type, and `config show` prints only whether it is set.
#[derive(Clone, Deserialize)]
#[serde(transparent)]
pub struct SecretText(pub String);

impl std::fmt::Debug for SecretText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretText(<hidden>)")
    }
}

impl SettingValue for SecretText {
    const KIND: &'static str = "string (secret: never shown)";
    fn from_env_text(text: &str) -> Result<Self, String> {
        Ok(SecretText(text.to_string()))
    }
    fn show(&self) -> String {
        "<hidden>".into()
    }
}
