//! `clawbridge doctor`'s checks of the Claude Code CLI: the `initialize` handshake (through the
//! same [`ClaudeSession::connect`] sessions use, stopped afterwards), which credential it would
//! use (names only), and one `count_tokens` request to the Messages API it would talk to — the
//! cheapest call that still checks the key (docs/peers/claude.md#what-the-doctor-asks).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::diagnose::endpoint::{self, EndpointRequest, Method};
use clawbridge_bridge::diagnose::{Check, Diagnostics, Limits};
use clawbridge_bridge::supervisor::PassEnvGroup;
use futures::future::BoxFuture;

use super::backend::CLAUDE_BIN_ENV;
use super::config::{CLI_CREDENTIALS, ClaudeConfig, PROVIDER_SWITCHES};
use super::session::{ClaudeError, ClaudeSession, SessionHooks};

/// Where the CLI sends Messages API requests unless `ANTHROPIC_BASE_URL` says otherwise.
const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The API version header the Messages API requires.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// The model `count_tokens` is asked about when `ANTHROPIC_MODEL` names none: any current model
/// will do, the call only has to reach the key check.
const PROBE_MODEL: &str = "claude-sonnet-4-5";
/// The file a stored `claude /login` keeps its credentials in, under the config dir.
const CREDENTIALS_FILE: &str = ".credentials.json";

/// The doctor's checks of the Claude Code CLI, with the operator's `--pass-env` groups.
#[derive(Debug, Default)]
pub struct ClaudeDiagnostics {
    /// The groups sessions pass (Bedrock, Vertex), so the handshake runs as a session would.
    pub pass_env: Vec<PassEnvGroup>,
    /// The executable the operator configured (config file, variable, flag), if any.
    pub program: Option<clawbridge_bridge::backend::ConfiguredProgram>,
    /// The launcher and the far side's claude, so the handshake runs the way sessions do.
    pub remote: Option<clawbridge_bridge::remote::RemoteSpec>,
}

impl Diagnostics for ClaudeDiagnostics {
    fn program_variable(&self) -> Option<&'static str> {
        Some(CLAUDE_BIN_ENV)
    }

    fn program_source(&self) -> Option<String> {
        if let Some(remote) = &self.remote {
            return Some(format!("as the launcher, running {} on the far side", remote.program.to_string_lossy()));
        }
        Some(clawbridge_bridge::diagnose::program_source(self.program.as_ref(), CLAUDE_BIN_ENV))
    }

    fn check_names(&self) -> &'static [&'static str] {
        &["handshake", "auth", "endpoint", "sandbox"]
    }

    fn install_hint(&self) -> String {
        let policy = clawbridge_protocol::claude::VersionPolicy::default();
        format!("install Claude Code ≥ {} (tested: {}) or set {CLAUDE_BIN_ENV}", policy.floor, policy.tested_max)
    }

    fn checks<'a>(&'a self, program: &'a Path, limits: Limits) -> BoxFuture<'a, Vec<Check>> {
        Box::pin(self.run(program, limits))
    }
}

/// A variable's value when it is set and not empty.
fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl ClaudeDiagnostics {
    async fn run(&self, program: &Path, limits: Limits) -> Vec<Check> {
        let mut config = ClaudeConfig::new(program.to_path_buf());
        config.remote.clone_from(&self.remote);
        config.inherit_cli_environment();
        config.pass_env_groups(&self.pass_env, std::env::vars_os());
        config.handshake_timeout = limits.handshake;
        config.version_timeout = limits.handshake;
        let hooks = SessionHooks {
            approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
            tools: Arc::new(NoHostTools),
            observer: Arc::new(NoObserver),
        };
        let handshake = match ClaudeSession::connect(config, hooks).await {
            Ok(session) => {
                let version = session.version().to_string();
                let stop = session.shutdown().await;
                tracing::debug!(?stop, "the doctor's claude stopped");
                Check::ok("handshake", format!("claude {version} answered initialize"))
            }
            Err(error) => handshake_failure(program, &error),
        };
        let switch = PROVIDER_SWITCHES.iter().copied().find(|name| set(name).is_some());
        let mut checks = vec![handshake, self.auth_check(credential_variable(), switch)];
        checks.push(match switch {
            Some(switch) => {
                Check::skipped("endpoint", format!("{switch} is set: the cloud provider's endpoint is not probed"))
            }
            None => endpoint_check(limits).await,
        });
        checks.push(Check::skipped("sandbox", "n/a: Claude Code runs its tools without a sandbox clawbridge sets up"));
        checks
    }
}

fn handshake_failure(program: &Path, error: &ClaudeError) -> Check {
    let fix = match error {
        ClaudeError::VersionRejected { .. } | ClaudeError::VersionMismatch { .. } => {
            ClaudeDiagnostics::default().install_hint()
        }
        _ => format!(
            "run `{} -p --input-format stream-json --output-format stream-json --verbose` by hand to see why",
            program.display()
        ),
    };
    Check::handshake_failure(error, "CLI", fix)
}

/// The config dir the CLI keeps its login in.
fn config_dir() -> Option<PathBuf> {
    set("CLAUDE_CONFIG_DIR").map(PathBuf::from).or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".claude")))
}

/// The credential variable the CLI would use (the last set one wins, as sessions pick it).
fn credential_variable() -> Option<&'static str> {
    CLI_CREDENTIALS.iter().rev().copied().find(|name| set(name).is_some())
}

impl ClaudeDiagnostics {
    /// `credential`: the credential variable the CLI would use; `switch`: the cloud switch set.
    fn auth_check(&self, credential: Option<&str>, switch: Option<&str>) -> Check {
        if let Some(variable) = credential {
            if variable == "ANTHROPIC_API_KEY" && set("ANTHROPIC_AUTH_TOKEN").is_some() {
                return Check::ok(
                    "auth",
                    "credentials from ANTHROPIC_API_KEY and ANTHROPIC_AUTH_TOKEN (both set; claude sends both)",
                );
            }
            return Check::ok("auth", format!("credential from {variable} (set)"));
        }
        if let Some(switch) = switch {
            // The switch alone is not enough: its group's settings and credentials (region,
            // profile, keys) reach the CLI only when the operator opened the group.
            let group = PassEnvGroup::ALL.iter().copied().find(|group| group.settings().contains(&switch));
            return match group {
                Some(group) if !self.pass_env.contains(&group) => Check::fail(
                    "auth",
                    format!("{switch} is set, but the {} environment group is not passed to claude", group.name()),
                    format!("add `--pass-env {}` (or the config key bridge.pass-env)", group.name()),
                ),
                _ => Check::ok("auth", format!("{switch} is set: the cloud provider's own credentials are used")),
            };
        }
        stored_login_check()
    }
}

fn stored_login_check() -> Check {
    match config_dir().map(|dir| dir.join(CREDENTIALS_FILE)) {
        Some(stored) if stored.is_file() => Check::ok("auth", format!("stored login in {}", stored.display())),
        stored => Check::fail(
            "auth",
            format!(
                "no credential: none of {} is set and there is no {}",
                CLI_CREDENTIALS.join(", "),
                stored.map_or_else(|| format!("~/.claude/{CREDENTIALS_FILE}"), |p| p.display().to_string())
            ),
            "set ANTHROPIC_API_KEY, or run `claude` and /login",
        ),
    }
}

async fn endpoint_check(limits: Limits) -> Check {
    let base = set("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
    let mut headers = vec![
        ("anthropic-version".to_owned(), ANTHROPIC_VERSION.to_owned()),
        ("content-type".to_owned(), "application/json".to_owned()),
    ];
    let variable = credential_variable();
    match variable.and_then(|name| set(name).map(|value| (name, value))) {
        Some(("ANTHROPIC_API_KEY", key)) => {
            headers.push(("x-api-key".to_owned(), key));
            // Claude Code 2.1.328 sends both when both are set (docs/peers/claude.md#credentials).
            if let Some(token) = set("ANTHROPIC_AUTH_TOKEN") {
                headers.push(("authorization".to_owned(), format!("Bearer {token}")));
            }
        }
        // An OAuth token takes the CLI's own OAuth headers, which the doctor does not copy: asked
        // as a plain bearer token the API would refuse a good one.
        Some(("CLAUDE_CODE_OAUTH_TOKEN", _)) => {
            return Check::skipped(
                "endpoint",
                "not probed: an OAuth token (CLAUDE_CODE_OAUTH_TOKEN) is the CLI's to use",
            );
        }
        Some((_, token)) => headers.push(("authorization".to_owned(), format!("Bearer {token}"))),
        None => return Check::skipped("endpoint", "not probed: the stored login's token is the CLI's to use"),
    }
    let model = set("ANTHROPIC_MODEL").unwrap_or_else(|| PROBE_MODEL.to_owned());
    let body = serde_json::json!({"model": model, "messages": [{"role": "user", "content": "ping"}]});
    let request = EndpointRequest {
        method: Method::POST,
        url: endpoint::join(&base, "v1/messages/count_tokens"),
        headers,
        body: Some(body.to_string().into_bytes()),
    };
    let shown = endpoint::display_url(&base);
    match endpoint::ask(&request, limits.endpoint).await {
        Ok(answer) if matches!(answer.status, 401 | 403) => {
            let message = answer.error_message().map(|m| format!(": {m}")).unwrap_or_default();
            Check::fail(
                "endpoint",
                format!("model endpoint {shown} refused the credential (HTTP {}{message})", answer.status),
                format!("check the credential in {}", variable.unwrap_or("the environment")),
            )
        }
        Ok(answer) if (200..300).contains(&answer.status) => {
            Check::ok("endpoint", format!("model endpoint {shown} answered (HTTP {})", answer.status))
        }
        Ok(answer) => {
            let message = answer.error_message().map(|m| format!(": {m}")).unwrap_or_default();
            Check::warn("endpoint", format!("model endpoint {shown} answered HTTP {}{message}", answer.status), None)
        }
        Err(error) => Check::endpoint_error(&shown, &error, "start the model server, or fix ANTHROPIC_BASE_URL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cloud_switch_needs_its_environment_group_open() {
        let closed = ClaudeDiagnostics::default().auth_check(None, Some("CLAUDE_CODE_USE_BEDROCK"));
        assert_eq!(closed.verdict, clawbridge_bridge::diagnose::Verdict::Fail, "{closed:?}");
        assert_eq!(closed.fix.as_deref(), Some("add `--pass-env bedrock` (or the config key bridge.pass-env)"));
        let open = ClaudeDiagnostics { pass_env: vec![PassEnvGroup::Bedrock], program: None, remote: None }
            .auth_check(None, Some("CLAUDE_CODE_USE_BEDROCK"));
        assert_eq!(open.verdict, clawbridge_bridge::diagnose::Verdict::Ok, "{open:?}");
        let vertex = ClaudeDiagnostics { pass_env: vec![PassEnvGroup::Bedrock], program: None, remote: None }
            .auth_check(None, Some("CLAUDE_CODE_USE_VERTEX"));
        assert!(vertex.summary.contains("the vertex environment group is not passed"), "{vertex:?}");
    }
}
