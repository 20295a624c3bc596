//! The route auth OpenClaw prepared, handed to `codex app-server` as a model provider of its own
//! (`-c model_providers.openclaw.…` overrides) instead of anything in `$CODEX_HOME/config.toml`.
//! The key and header values travel in the child's environment only (`env_key`,
//! `env_http_headers`), never on its command line, which other local users can read.

use clawbridge_protocol::host::RouteAuth;

use super::config::CodexConfig;
use crate::claude::Secret;

/// The model provider id the overrides define; `model_provider` selects it.
pub const ROUTE_PROVIDER_ID: &str = "openclaw";
/// The variable that carries the API key (`env_key`).
pub const ROUTE_API_KEY_ENV: &str = "CLAWBRIDGE_ROUTE_API_KEY";
/// The prefix of the variables that carry header values (`env_http_headers`), numbered from 0.
pub const ROUTE_HEADER_ENV_PREFIX: &str = "CLAWBRIDGE_ROUTE_HEADER_";

/// Points `config`'s Codex at the route: its provider becomes [`ROUTE_PROVIDER_ID`] with the
/// route's base URL (Responses wire API), key and headers. The user's login in `CODEX_HOME` is not
/// used for model requests then: a custom provider authenticates only with its `env_key`.
pub fn apply(config: &mut CodexConfig, auth: &RouteAuth) {
    let provider = format!("model_providers.{ROUTE_PROVIDER_ID}");
    let overrides = &mut config.config_overrides;
    overrides.push(format!("model_provider={}", toml_string(ROUTE_PROVIDER_ID)));
    overrides.push(format!("{provider}.name={}", toml_string("OpenClaw route")));
    overrides.push(format!("{provider}.wire_api={}", toml_string("responses")));
    if let Some(base_url) = auth.base_url.as_deref().filter(|u| !u.is_empty()) {
        overrides.push(format!("{provider}.base_url={}", toml_string(base_url)));
    }
    if let Some(key) = auth.api_key.as_deref().filter(|k| !k.is_empty()) {
        overrides.push(format!("{provider}.env_key={}", toml_string(ROUTE_API_KEY_ENV)));
        config.secret_env.push((ROUTE_API_KEY_ENV.into(), Secret::new(key)));
    }
    if !auth.headers.is_empty() {
        let mut table = Vec::new();
        for (index, (name, value)) in auth.headers.iter().enumerate() {
            let variable = format!("{ROUTE_HEADER_ENV_PREFIX}{index}");
            table.push(format!("{} = {}", toml_string(name), toml_string(&variable)));
            config.secret_env.push((variable, Secret::new(value.as_str())));
        }
        overrides.push(format!("{provider}.env_http_headers={{ {} }}", table.join(", ")));
    }
}

/// A TOML basic string. JSON's string escapes are TOML's (serde_json never writes `\/`).
fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_route_becomes_a_codex_provider_whose_secrets_stay_off_the_command_line() {
        let mut config = CodexConfig::new("codex");
        let auth = RouteAuth {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("sk-route-secret".into()),
            headers: [("X-Tenant".to_string(), "tenant \"a\"".to_string())].into(),
        };
        apply(&mut config, &auth);
        assert!(!format!("{config:?}").contains("sk-route-secret"), "no Debug of the config shows the key");
        let command = config.command();
        let args: Vec<String> = command.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let joined = args.join(" ");
        assert!(!joined.contains("sk-route-secret") && !joined.contains("tenant"), "{joined}");
        for expected in [
            r#"model_provider="openclaw""#,
            r#"model_providers.openclaw.base_url="http://127.0.0.1:9/v1""#,
            r#"model_providers.openclaw.wire_api="responses""#,
            r#"model_providers.openclaw.env_key="CLAWBRIDGE_ROUTE_API_KEY""#,
            r#"model_providers.openclaw.env_http_headers={ "X-Tenant" = "CLAWBRIDGE_ROUTE_HEADER_0" }"#,
            // The agent's commands never see the secrets, and no shell snapshot writes them down.
            r#"shell_environment_policy.set.CLAWBRIDGE_ROUTE_API_KEY="""#,
            r#"shell_environment_policy.set.CLAWBRIDGE_ROUTE_HEADER_0="""#,
            "features.shell_snapshot=false",
        ] {
            assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
        }
        let env = command.env.build(std::iter::empty());
        assert_eq!(env.get(std::ffi::OsStr::new(ROUTE_API_KEY_ENV)).map(|v| v.to_str()), Some(Some("sk-route-secret")));
        assert_eq!(
            env.get(std::ffi::OsStr::new("CLAWBRIDGE_ROUTE_HEADER_0")).map(|v| v.to_str()),
            Some(Some("tenant \"a\""))
        );
    }

    #[test]
    fn no_key_means_no_env_key_and_no_base_url_keeps_codexs_default_endpoint() {
        let mut config = CodexConfig::new("codex");
        apply(&mut config, &RouteAuth::default());
        assert!(config.config_overrides.iter().all(|o| !o.contains("env_key") && !o.contains("base_url")));
        assert!(config.env.set.is_empty() && config.secret_env.is_empty());
        let args: Vec<String> = config.command().args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!args.iter().any(|a| a.contains("shell_snapshot")), "without secrets the snapshot stays on: {args:?}");
    }
}
