//! The route auth OpenClaw prepared, handed to the Claude Code CLI through its environment: the
//! endpoint as `ANTHROPIC_BASE_URL`, the key as `ANTHROPIC_API_KEY`, extra headers as
//! `ANTHROPIC_CUSTOM_HEADERS`. The bridge's own credentials are withheld then, so the CLI never
//! authenticates two ways at once: the CLI's, the `--pass-env` groups' (Bedrock's, Vertex's), and
//! the switches that would send it to another provider than the route ([`PROVIDER_SWITCHES`]).

use clawbridge_bridge::binding::hash_bytes;
use clawbridge_protocol::host::RouteAuth;

use clawbridge_bridge::supervisor::PassEnvGroup;

use super::config::{CLI_CREDENTIALS, ClaudeConfig, PROVIDER_SWITCHES, Secret};

/// Replaces whatever credentials `config` took from the bridge's environment with `auth`, and
/// returns the auth profile for the binding: `openclaw-route:sha256:…`, a hash of the endpoint,
/// key and headers (never the secret itself).
pub fn apply(config: &mut ClaudeConfig, auth: &RouteAuth) -> String {
    config.env.withhold.extend(CLI_CREDENTIALS.iter().map(std::string::ToString::to_string));
    let group_credential = |name: &str| PassEnvGroup::ALL.iter().any(|group| group.credentials().contains(&name));
    config.secret_env.retain(|(name, _)| !CLI_CREDENTIALS.contains(&name.as_str()) && !group_credential(name));
    // Removed last, so neither the bridge's environment nor the host's prepared one can switch away.
    config.env.remove.extend(PROVIDER_SWITCHES.iter().map(std::string::ToString::to_string));
    if let Some(base_url) = auth.base_url.as_deref().filter(|u| !u.is_empty()) {
        config.env.set.push(("ANTHROPIC_BASE_URL".into(), base_url.into()));
    }
    if let Some(key) = auth.api_key.as_deref().filter(|k| !k.is_empty()) {
        config.secret_env.push(("ANTHROPIC_API_KEY".into(), Secret::new(key)));
    }
    if !auth.headers.is_empty() {
        // The CLI reads one `Name: value` header per line.
        let lines: Vec<String> = auth.headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
        config.secret_env.push(("ANTHROPIC_CUSTOM_HEADERS".into(), Secret::new(lines.join("\n"))));
    }
    format!("openclaw-route:{}", hash_bytes(auth.fingerprint_material().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_auth_replaces_the_bridges_credentials_and_names_a_hash_not_the_key() {
        let mut config = ClaudeConfig::new("claude");
        config.secret_env.push(("ANTHROPIC_AUTH_TOKEN".into(), Secret::new("bridge-token")));
        let auth = RouteAuth {
            base_url: Some("http://127.0.0.1:9".into()),
            api_key: Some("sk-ant-route".into()),
            headers: [("X-Tenant".to_string(), "a".to_string())].into(),
        };
        let profile = apply(&mut config, &auth);
        assert!(profile.starts_with("openclaw-route:sha256:") && !profile.contains("sk-ant-route"), "{profile}");
        let env = config.child_env().build([("ANTHROPIC_API_KEY".into(), "sk-inherited".into())]);
        let get = |name: &str| env.get(std::ffi::OsStr::new(name)).and_then(|v| v.to_str()).map(str::to_owned);
        assert_eq!(get("ANTHROPIC_API_KEY").as_deref(), Some("sk-ant-route"));
        assert_eq!(get("ANTHROPIC_AUTH_TOKEN"), None, "the bridge's own token is not passed as well");
        assert_eq!(get("ANTHROPIC_BASE_URL").as_deref(), Some("http://127.0.0.1:9"));
        assert_eq!(get("ANTHROPIC_CUSTOM_HEADERS").as_deref(), Some("X-Tenant: a"));
        let other = RouteAuth { api_key: Some("sk-ant-other".into()), ..auth };
        assert_ne!(apply(&mut ClaudeConfig::new("claude"), &other), profile, "another key is another profile");
    }

    #[test]
    fn route_auth_drops_the_bedrock_group_s_credentials_and_the_provider_switch() {
        let parent: Vec<(std::ffi::OsString, std::ffi::OsString)> = [
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_ACCESS_KEY_ID", "AKIACANARY"),
            ("AWS_SECRET_ACCESS_KEY", "canary-secret"),
            ("AWS_BEARER_TOKEN_BEDROCK", "canary-bearer"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let mut config = ClaudeConfig::new("claude");
        config.env.inherit.push("CLAUDE_CODE_*".into());
        config.pass_env_groups(&[PassEnvGroup::Bedrock], parent.clone());
        config.env.set.push(("CLAUDE_CODE_USE_VERTEX".into(), "1".into()));
        let auth = RouteAuth {
            base_url: Some("http://127.0.0.1:9".into()),
            api_key: Some("sk-ant-route".into()),
            headers: Default::default(),
        };
        apply(&mut config, &auth);
        let env = config.child_env().build(parent);
        for name in [
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_BEARER_TOKEN_BEDROCK",
        ] {
            assert!(!env.contains_key(std::ffi::OsStr::new(name)), "{name} passed under route auth: {env:?}");
        }
        assert_eq!(env.get(std::ffi::OsStr::new("ANTHROPIC_API_KEY")).and_then(|v| v.to_str()), Some("sk-ant-route"));
    }
}
