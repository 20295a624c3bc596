use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Parent variables a child sees unless a policy says otherwise: enough to find programs, a home,
/// a locale, temp space, certificates and proxies, and nothing that carries credentials by accident.
/// Every name is spelled out: a prefix pattern such as `LC_*` would also pass any variable someone
/// named with that prefix (`LC_SECRET`), so only the locale categories and XDG base directories
/// that exist are listed (docs/peers/pipes.md#child-environment).
pub const DEFAULT_INHERIT: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_CONFIG_HOME",
    "XDG_DATA_DIRS",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_STATE_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NO_PROXY",
    "no_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Variables that inject code into whatever the child loads (dynamic loader, Node). Never inherited,
/// even when an inherit pattern matches them.
pub const LOADER_INJECTION: &[&str] = &["LD_*", "DYLD_*", "NODE_OPTIONS"];

/// How a child's environment is built: nothing is inherited unless allowlisted.
#[derive(Clone, Debug)]
pub struct EnvPolicy {
    /// Names (or `PREFIX*` patterns) copied from the bridge's own environment.
    pub inherit: Vec<String>,
    /// Variables set for the child. They win over inherited values, and are deliberate, so they are
    /// not filtered by [`LOADER_INJECTION`] (but are by `remove`).
    pub set: Vec<(OsString, OsString)>,
    /// Names (or `PREFIX*` patterns) removed last: per-backend removals such as `CLAUDECODE`.
    pub remove: Vec<String>,
    /// Names never inherited even when an `inherit` pattern matches them: credentials, which a
    /// backend passes on deliberately (through `set`) or not at all.
    pub withhold: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self {
            inherit: DEFAULT_INHERIT.iter().map(std::string::ToString::to_string).collect(),
            set: Vec::new(),
            remove: Vec::new(),
            withhold: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// Adds a variable to set.
    pub fn with_var(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.set.push((name.into(), value.into()));
        self
    }

    /// Adds a name or `PREFIX*` pattern to remove.
    pub fn without(mut self, pattern: impl Into<String>) -> Self {
        self.remove.push(pattern.into());
        self
    }

    /// The child's environment given the parent's, before the spawn adds the containment token
    /// (`CLAWBRIDGE_CONTAINMENT`), which no policy can pass, replace or remove.
    pub fn build(&self, parent: impl IntoIterator<Item = (OsString, OsString)>) -> BTreeMap<OsString, OsString> {
        let mut env: BTreeMap<OsString, OsString> = parent
            .into_iter()
            .filter(|(name, _)| matches_any(name, self.inherit.iter().map(String::as_str)))
            .filter(|(name, _)| !matches_any(name, LOADER_INJECTION.iter().copied()))
            .filter(|(name, _)| !matches_any(name, self.withhold.iter().map(String::as_str)))
            .collect();
        env.extend(self.set.iter().cloned());
        env.retain(|name, _| !matches_any(name, self.remove.iter().map(String::as_str)));
        env
    }
}

fn matches_any<'a>(name: &OsStr, patterns: impl IntoIterator<Item = &'a str>) -> bool {
    let Some(name) = name.to_str() else {
        return false; // non-UTF-8 names match no pattern: never inherited, never removed
    };
    patterns.into_iter().any(|pattern| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> Vec<(OsString, OsString)> {
        [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("LD_PRELOAD", "evil.so"),
            ("NODE_OPTIONS", "--require evil"),
            ("OPENAI_API_KEY", "secret"),
            ("CLAUDECODE", "1"),
            ("LC_SECRET", "canary"),
            ("XDG_TOKEN", "canary"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "token"),
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    fn names(env: &BTreeMap<OsString, OsString>) -> Vec<&str> {
        env.keys().map(|k| k.to_str().unwrap()).collect()
    }

    #[test]
    fn inherits_only_the_allowlist_and_never_loader_injection() {
        let mut policy = EnvPolicy::default();
        policy.inherit.push("LD_*".into()); // even an explicit pattern cannot bring these in
        policy.inherit.push("NODE_OPTIONS".into());
        let env = policy.build(parent());
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn no_default_pattern_passes_a_made_up_variable_and_withheld_names_beat_patterns() {
        let env = EnvPolicy::default().build(parent());
        assert!(!env.contains_key(OsStr::new("LC_SECRET")) && !env.contains_key(OsStr::new("XDG_TOKEN")), "{env:?}");

        let mut policy = EnvPolicy::default();
        policy.inherit.push("CLAUDE_CODE_*".into());
        policy.withhold.push("CLAUDE_CODE_OAUTH_TOKEN".into());
        let env = policy.clone().build(parent());
        assert!(env.contains_key(OsStr::new("CLAUDE_CODE_USE_BEDROCK")));
        assert!(!env.contains_key(OsStr::new("CLAUDE_CODE_OAUTH_TOKEN")), "a withheld name is not inherited");
        // Set deliberately, it is passed.
        let env = policy.with_var("CLAUDE_CODE_OAUTH_TOKEN", "token").build(parent());
        assert_eq!(env.get(OsStr::new("CLAUDE_CODE_OAUTH_TOKEN")).unwrap(), "token");
    }

    #[test]
    fn additions_win_and_removals_apply_last() {
        let mut policy =
            EnvPolicy::default().with_var("HOME", "/tmp/fresh").with_var("CODEX_HOME", "/c").without("CODEX_*");
        policy.inherit.push("CLAUDECODE".into());
        let env = policy.without("CLAUDECODE").build(parent());
        assert_eq!(env.get(OsStr::new("HOME")).unwrap(), "/tmp/fresh");
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
    }
}
