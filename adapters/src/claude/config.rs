//! How to launch `claude` in bidirectional stream-json mode, and the policies of a session with it.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clawbridge_bridge::remote::{LauncherError, RemoteSpec, StdinPreamble};
use clawbridge_bridge::supervisor::{CommandSpec, Containment, EnvPolicy, PassEnvGroup, PidRegistry, StopPolicy};
use clawbridge_bridge::transport::{DEFAULT_MAX_LINE_BYTES, agent_write_timeout};
use clawbridge_protocol::claude::VersionPolicy;

/// A secret value (an API key, a token). Its `Debug` never shows it, and it only ever reaches the
/// child through its environment — never argv, never a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the child's environment only.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// Variables of the bridge's own environment a CLI it starts keeps (besides the supervisor's
/// defaults): where its model endpoint and config live, and its own switches.
pub const CLI_ENVIRONMENT: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_*",
    "DISABLE_*",
    "ENABLE_TOOL_SEARCH",
];

/// Credentials the CLI may take from the bridge's environment, passed on as [`Secret`]s (never
/// through [`CLI_ENVIRONMENT`]'s patterns, and named in the binding's auth profile). The last one
/// found names the profile.
pub const CLI_CREDENTIALS: &[&str] = &["CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"];

/// The switches that send Claude Code to a provider other than the Anthropic API, as CLI 2.1.328
/// checks them together (Bedrock, Vertex, Foundry, and Anthropic's own AWS / Google Cloud and
/// Mantle endpoints). Route auth removes them: the route names the endpoint.
pub const PROVIDER_SWITCHES: &[&str] = &[
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "CLAUDE_CODE_USE_ANTHROPIC_AWS",
    "CLAUDE_CODE_USE_ANTHROPIC_GOOGLE_CLOUD",
    "CLAUDE_CODE_USE_MANTLE",
];

/// Settings, not secrets, that pick the endpoint, account, role, project or region the CLI talks
/// to: keyed into the auth profile as they are, so another of them is another profile.
pub const AUTH_IDENTITY_SETTINGS: &[&str] = &[
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "AWS_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "CLOUD_ML_REGION",
    "CLOUDSDK_CONFIG",
    "CLOUDSDK_ACTIVE_CONFIG_NAME",
];

/// Credentials refreshed within minutes or hours: passed on, but never keyed into the auth profile.
pub const SHORT_LIVED_CREDENTIALS: &[&str] =
    &["AWS_SESSION_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN"];

/// How to launch `claude -p --input-format stream-json …` and the policies of a session with it.
#[derive(Clone, Debug)]
pub struct ClaudeConfig {
    /// The `claude` executable.
    pub program: PathBuf,
    /// Arguments before clawbridge's own (for launchers that wrap the real CLI, such as a recorder).
    pub launcher_args: Vec<OsString>,
    /// `--model`.
    pub model: Option<String>,
    /// `--append-system-prompt`.
    pub append_system_prompt: Option<String>,
    /// `--setting-sources` (e.g. `""` for none, `user,project`); `None` keeps the CLI's default.
    pub setting_sources: Option<String>,
    /// `--allowedTools` rules (permission-rule syntax); calls they match skip `can_use_tool`.
    pub allowed_tools: Vec<String>,
    /// `--disallowedTools` rules.
    pub disallowed_tools: Vec<String>,
    /// `--permission-mode` (always passed explicitly; docs/peers/claude.md#how-clawbridge-runs-it).
    /// Default `default`.
    pub permission_mode: String,
    /// The name of the SDK MCP server host tools are served as (tools `mcp__<name>__<tool>`), declared
    /// only when the host lends tools. Default `openclaw`.
    pub host_mcp_server: String,
    /// How long a host tool may run before it counts as failed.
    pub tool_timeout: Duration,
    /// `--resume <id>` for the first process: continue this native session.
    pub resume: Option<String>,
    /// Side work: `--tools ""` (no built-in tool), `--no-session-persistence` (the CLI writes no
    /// session file), and with
    /// [`resume`](Self::resume) also `--fork-session` (the resumed history goes into a new
    /// session; the original is left as it was).
    pub ephemeral: bool,
    /// The child's environment policy. `CLAUDECODE` is always removed
    /// (docs/peers/claude.md#nested-session-guard).
    pub env: EnvPolicy,
    /// Credentials (`ANTHROPIC_API_KEY`, …), passed to the child only through its environment.
    pub secret_env: Vec<(String, Secret)>,
    /// The child's working directory.
    pub cwd: Option<PathBuf>,
    /// Which CLI versions are accepted.
    pub version_policy: VersionPolicy,
    /// Deadline for `claude --version`.
    pub version_timeout: Duration,
    /// Deadline for the `initialize` control request (generous: MCP servers start inside it).
    pub handshake_timeout: Duration,
    /// A turn with no progress for this long ends as `timeout` (suspended while an approval is
    /// pending or a tool runs).
    pub turn_idle_timeout: Duration,
    /// How long the host may take to decide a `can_use_tool` before it counts as denied.
    pub approval_timeout: Duration,
    /// After an `interrupt`, how long to wait for the turn's `result` before stopping the process.
    pub interrupt_grace: Duration,
    /// Longest stdout line accepted, in bytes.
    pub max_line_bytes: usize,
    /// The staged stop's graces.
    pub stop: StopPolicy,
    /// Where to record the child for orphan reaping.
    pub registry: Option<PidRegistry>,
    /// How long a write to the child's stdin may make no progress before the turn fails.
    pub write_timeout: Duration,
    /// Whether the child gets a cgroup of its own where the machine allows it.
    pub containment: Containment,
    /// Run the CLI elsewhere: `program` is then the launcher (`ssh`), and this names the claude
    /// there (docs/remote.md).
    pub remote: Option<RemoteSpec>,
}

impl ClaudeConfig {
    /// Defaults for launching `program`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            launcher_args: Vec::new(),
            model: None,
            append_system_prompt: None,
            setting_sources: None,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            permission_mode: "default".into(),
            host_mcp_server: "openclaw".into(),
            tool_timeout: Duration::from_secs(600),
            resume: None,
            ephemeral: false,
            env: EnvPolicy::default(),
            secret_env: Vec::new(),
            cwd: None,
            version_policy: VersionPolicy::default(),
            version_timeout: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(60),
            turn_idle_timeout: Duration::from_secs(300),
            approval_timeout: Duration::from_secs(600),
            interrupt_grace: Duration::from_secs(10),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            stop: StopPolicy {
                after_stdin_close: Duration::from_secs(3),
                after_sigterm: Duration::from_secs(2),
                after_sigkill: Duration::from_secs(2),
            },
            registry: None,
            write_timeout: agent_write_timeout(),
            containment: Containment::from_env(),
            remote: None,
        }
    }

    /// Lets the CLI keep its own settings from the bridge's environment ([`CLI_ENVIRONMENT`]) and
    /// passes it the credentials found there ([`CLI_CREDENTIALS`]) as secrets. Returns the auth
    /// profile for the session's binding: which credential is used (`env:ANTHROPIC_API_KEY`), or
    /// `claude-login` (the CLI's own stored login) — a name, never the secret.
    pub fn inherit_cli_environment(&mut self) -> String {
        self.env.inherit.extend(CLI_ENVIRONMENT.iter().map(std::string::ToString::to_string));
        self.env.withhold.extend(CLI_CREDENTIALS.iter().map(std::string::ToString::to_string));
        let mut profile = "claude-login".to_owned();
        for name in CLI_CREDENTIALS {
            if let Some(value) = std::env::var_os(name).filter(|v| !v.is_empty()) {
                self.secret_env.push((name.to_string(), Secret::new(value.to_string_lossy())));
                profile = format!("env:{name}");
            }
        }
        profile
    }

    /// Opens the operator's pass-through `groups` (Bedrock, Vertex): their settings are inherited,
    /// their credentials found in `parent` passed as secrets, so they name the auth fingerprint.
    pub fn pass_env_groups(&mut self, groups: &[PassEnvGroup], parent: impl IntoIterator<Item = (OsString, OsString)>) {
        for (name, value) in self.env.pass_groups(groups, parent) {
            self.secret_env.push((name, Secret::new(value)));
        }
    }

    /// The child's environment: the policy, the secrets, and never `CLAUDECODE`.
    pub(crate) fn child_env(&self) -> EnvPolicy {
        let mut env = self.env.clone();
        for (name, value) in &self.secret_env {
            env.set.push((name.into(), value.expose().into()));
        }
        env.without("CLAUDECODE")
    }

    /// The command whose `--version` is judged by the version gate (the probe appends `--version`).
    pub(crate) fn probe_command(&self) -> CommandSpec {
        if let Some(remote) = &self.remote {
            return remote.launcher.probe_command(&self.program, &remote.program);
        }
        CommandSpec {
            program: self.program.clone(),
            args: self.launcher_args.clone(),
            cwd: self.cwd.clone(),
            env: self.child_env(),
        }
    }

    /// The command to spawn for a session process and what goes on its stdin first: the CLI
    /// itself, or, with a launcher, the launcher running it under the remote wrapper, its
    /// environment on stdin.
    pub(crate) fn launch(
        &self,
        resume: Option<&str>,
        host_tools: bool,
    ) -> Result<(CommandSpec, Option<StdinPreamble>), LauncherError> {
        let command = self.command(resume, host_tools);
        clawbridge_bridge::remote::launch(self.remote.as_ref(), &self.program, command)
    }

    /// The command for a session process, continuing `resume` when given. With `host_tools`, the
    /// host's SDK MCP server is declared, its tools allowed without a prompt (they are the host's
    /// own) and offered directly (`ENABLE_TOOL_SEARCH=false`, no `ToolSearch` detour).
    pub(crate) fn command(&self, resume: Option<&str>, host_tools: bool) -> CommandSpec {
        let mut args = self.launcher_args.clone();
        let fixed = [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--permission-prompt-tool",
            "stdio",
        ];
        args.extend(fixed.into_iter().map(OsString::from));
        args.push("--permission-mode".into());
        args.push(self.permission_mode.clone().into());
        let mut option = |flag: &str, value: &str| {
            args.push(flag.into());
            args.push(value.into());
        };
        if let Some(model) = &self.model {
            option("--model", model);
        }
        if let Some(prompt) = &self.append_system_prompt {
            option("--append-system-prompt", prompt);
        }
        if let Some(sources) = &self.setting_sources {
            option("--setting-sources", sources);
        }
        let mut allowed = self.allowed_tools.clone();
        let server = &self.host_mcp_server;
        if host_tools {
            let config = serde_json::json!({"mcpServers": {server: {"type": "sdk", "name": server}}});
            option("--mcp-config", &config.to_string());
            allowed.push(format!("mcp__{server}__*"));
        }
        if !allowed.is_empty() {
            option("--allowedTools", &allowed.join(","));
        }
        if !self.disallowed_tools.is_empty() {
            option("--disallowedTools", &self.disallowed_tools.join(","));
        }
        if let Some(session) = resume {
            option("--resume", session);
        }
        if self.ephemeral {
            // Side work has a literal zero-tool surface: no built-in tool at all (`--tools ""`).
            args.push("--tools".into());
            args.push("".into());
            args.push("--no-session-persistence".into());
            if resume.is_some() {
                args.push("--fork-session".into());
            }
        }
        let mut env = self.child_env();
        if host_tools {
            env.set.push(("ENABLE_TOOL_SEARCH".into(), "false".into()));
        }
        CommandSpec { program: self.program.clone(), args, cwd: self.cwd.clone(), env }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_work_stores_no_session_and_forks_the_one_it_resumes() {
        let mut config = ClaudeConfig::new("claude");
        let argv = |config: &ClaudeConfig, resume: Option<&str>| -> Vec<String> {
            config.command(resume, false).args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
        };
        let ordinary = argv(&config, Some("sess-1"));
        assert!(!ordinary.iter().any(|a| a == "--no-session-persistence" || a == "--fork-session"));
        config.ephemeral = true;
        let fresh = argv(&config, None);
        assert!(fresh.contains(&"--no-session-persistence".to_string()));
        assert!(fresh.windows(2).any(|w| w[0] == "--tools" && w[1].is_empty()), "no built-in tools: {fresh:?}");
        assert!(!fresh.contains(&"--fork-session".to_string()), "nothing to fork");
        let fork = argv(&config, Some("sess-1"));
        assert!(fork.windows(2).any(|w| w[0] == "--resume" && w[1] == "sess-1"));
        assert!(fork.contains(&"--fork-session".to_string()) && fork.contains(&"--no-session-persistence".to_string()));
    }

    #[test]
    fn secrets_stay_out_of_argv_and_debug_and_claudecode_is_removed() {
        let mut config = ClaudeConfig::new("claude");
        config.secret_env.push(("ANTHROPIC_API_KEY".into(), Secret::new("sk-very-secret")));
        config.model = Some("m".into());
        config.resume = None;
        let spec = config.command(Some("sess-1"), true);
        let argv: Vec<String> = spec.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!argv.iter().any(|a| a.contains("sk-very-secret")));
        assert!(argv.windows(2).any(|w| w[0] == "--resume" && w[1] == "sess-1"));
        assert!(argv.windows(2).any(|w| w[0] == "--model" && w[1] == "m"));
        assert!(argv.contains(&"--include-partial-messages".to_string()));
        assert!(argv.windows(2).any(|w| w[0] == "--allowedTools" && w[1] == "mcp__openclaw__*"));
        assert!(argv.iter().any(|a| a.contains(r#""type":"sdk""#)));
        assert!(!format!("{config:?}").contains("sk-very-secret"));
        assert!(spec.env.remove.iter().any(|r| r == "CLAUDECODE"));
        let built = spec.env.build([("CLAUDECODE".into(), "1".into())]);
        assert!(!built.contains_key(std::ffi::OsStr::new("CLAUDECODE")));
        assert_eq!(
            built.get(std::ffi::OsStr::new("ANTHROPIC_API_KEY")).map(|v| v.to_string_lossy().into_owned()),
            Some("sk-very-secret".into())
        );
    }

    #[test]
    fn bedrock_credentials_reach_the_cli_only_with_the_group_open_and_name_the_auth_fingerprint() {
        use clawbridge_bridge::binding::{Binding, FingerprintKey};
        let parent = |secret: &str| -> Vec<(OsString, OsString)> {
            vec![("AWS_SECRET_ACCESS_KEY".into(), secret.into()), ("AWS_REGION".into(), "eu-west-1".into())]
        };
        let session_env = |config: &ClaudeConfig, secret: &str| config.command(None, false).env.build(parent(secret));
        let get = |env: &std::collections::BTreeMap<OsString, OsString>, name: &str| {
            env.get(std::ffi::OsStr::new(name)).map(|v| v.to_string_lossy().into_owned())
        };

        let mut closed = ClaudeConfig::new("claude");
        closed.inherit_cli_environment();
        closed.pass_env_groups(&[], parent("canary-1"));
        let env = session_env(&closed, "canary-1");
        assert_eq!(get(&env, "AWS_SECRET_ACCESS_KEY"), None, "the canary does not reach the CLI");
        assert_eq!(get(&env, "AWS_REGION"), None);

        let open = |secret: &str| {
            let mut config = ClaudeConfig::new("claude");
            config.inherit_cli_environment();
            config.pass_env_groups(&[PassEnvGroup::Bedrock], parent(secret));
            config
        };
        let env = session_env(&open("canary-1"), "canary-1");
        assert_eq!(get(&env, "AWS_SECRET_ACCESS_KEY").as_deref(), Some("canary-1"));
        assert_eq!(get(&env, "AWS_REGION").as_deref(), Some("eu-west-1"));
        assert!(!format!("{:?}", open("canary-1")).contains("canary-1"), "a secret, redacted");

        let dir = tempfile::tempdir().unwrap();
        let key = FingerprintKey::load_or_create(dir.path());
        let fingerprint = |config: &ClaudeConfig| config.fingerprints(&[], "claude-login").keyed(&key);
        let bound = Binding::new("s-1", &fingerprint(&open("canary-1")));
        assert_eq!(bound.check(&fingerprint(&open("canary-1"))), Ok(()));
        assert!(bound.check(&fingerprint(&open("canary-2"))).is_err(), "another secret key, another auth profile");
        assert!(!serde_json::to_string(&bound).unwrap().contains("canary-1"));
    }
}
