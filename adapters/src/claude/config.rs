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

/// The user's MCP servers (Codex's `mcp_servers` shape). `Debug` names them only: their env and
/// headers may hold credentials, and a config is logged with `?`.
#[derive(Clone, Default, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct McpServers(pub std::collections::BTreeMap<String, serde_json::Value>);

impl std::ops::Deref for McpServers {
    type Target = std::collections::BTreeMap<String, serde_json::Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for McpServers {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl fmt::Debug for McpServers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

/// The variable that turns off Claude Code's loading of instruction files (CLAUDE.md, and the
/// AGENTS.md it reads where CLAUDE.md would be), found in the 2.1.328 binary and checked by a live
/// test (docs/peers/claude.md#project-instructions).
const SKIP_PROJECT_DOCS_VARIABLE: &str = "CLAUDE_CODE_DISABLE_CLAUDE_MDS";

/// How to launch `claude -p --input-format stream-json …` and the policies of a session with it.
#[derive(Clone, Debug)]
pub struct ClaudeConfig {
    /// The `claude` executable.
    pub program: PathBuf,
    /// Arguments before clawbridge's own (for launchers that wrap the real CLI, such as a recorder).
    pub launcher_args: Vec<OsString>,
    /// `--model`.
    pub model: Option<String>,
    /// `--append-system-prompt`, first part: the host's system prompt (in the session's binding).
    pub append_system_prompt: Option<String>,
    /// `--append-system-prompt`, after [`append_system_prompt`](Self::append_system_prompt): the
    /// host's workspace bootstrap files. Not in the binding (an edited file keeps the session), only
    /// in a warm CLI's key.
    pub bootstrap_context: Option<String>,
    /// `--setting-sources` (e.g. `""` for none, `user,project`); `None` keeps the CLI's default.
    pub setting_sources: Option<String>,
    /// The CLI loads none of the working directory's instruction files (CLAUDE.md, and AGENTS.md in
    /// its place): `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1` in its environment. For the host's lightweight
    /// and tool-less turns. Not in the binding, only in a warm CLI's key.
    pub skip_project_docs: bool,
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
    /// The user's MCP servers (host protocol `mcpServers`, Codex's `mcp_servers` shape), given to
    /// the CLI through a private `--mcp-config` file ([`super::mcp`]); only a keyed hash of them is
    /// in the binding. Empty for side work.
    pub mcp_servers: McpServers,
    /// `--strict-mcp-config`: no MCP server but those of `--mcp-config` (none without it); for a
    /// CLI that only lists the model set, so it starts none of the user's Claude-configured servers.
    pub strict_mcp_config: bool,
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
            bootstrap_context: None,
            setting_sources: None,
            skip_project_docs: false,
            allowed_tools: Vec::new(),
            disallowed_tools: Vec::new(),
            permission_mode: "default".into(),
            host_mcp_server: "openclaw".into(),
            mcp_servers: McpServers::default(),
            strict_mcp_config: false,
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
        if self.skip_project_docs {
            env.set.push((SKIP_PROJECT_DOCS_VARIABLE.into(), "1".into()));
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
        mcp_file: Option<&std::path::Path>,
    ) -> Result<(CommandSpec, Option<StdinPreamble>), LauncherError> {
        let command = self.command(resume, host_tools, mcp_file);
        clawbridge_bridge::remote::launch(self.remote.as_ref(), &self.program, command)
    }

    /// What `--append-system-prompt` says: the host's system prompt, then the bootstrap files.
    pub(crate) fn appended_system_prompt(&self) -> Option<String> {
        clawbridge_bridge::backend::join_system_guidance(
            self.append_system_prompt.as_deref(),
            self.bootstrap_context.as_deref(),
        )
    }

    /// The command for a session process, continuing `resume` when given. With `host_tools`, the
    /// host's SDK MCP server is declared, its tools allowed without a prompt (they are the host's
    /// own) and offered directly (`ENABLE_TOOL_SEARCH=false`, no `ToolSearch` detour). `mcp_file`
    /// is the private file [`mcp_config`](Self::mcp_config) was written to: it declares every MCP
    /// server, the host's included, the user's servers' permission rules are added, and their
    /// tools are offered directly too.
    pub(crate) fn command(
        &self,
        resume: Option<&str>,
        host_tools: bool,
        mcp_file: Option<&std::path::Path>,
    ) -> CommandSpec {
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
        // The CLI records the system prompt on a conversation's first request and sends that
        // record on every later one, `--resume` included, whatever `--append-system-prompt` says
        // then; off, a resumed session gets this launch's prompt: the bootstrap files as they are
        // now (docs/peers/claude.md#the-system-prompt-snapshot).
        args.extend(["--system-prompt-snapshot", "off"].map(OsString::from));
        let mut option = |flag: &str, value: &str| {
            args.push(flag.into());
            args.push(value.into());
        };
        if let Some(model) = &self.model {
            option("--model", model);
        }
        if let Some(prompt) = self.appended_system_prompt() {
            option("--append-system-prompt", &prompt);
        }
        if let Some(sources) = &self.setting_sources {
            option("--setting-sources", sources);
        }
        let mut allowed = self.allowed_tools.clone();
        let mut disallowed = self.disallowed_tools.clone();
        let server = &self.host_mcp_server;
        if let Some(file) = mcp_file {
            let users = self.mcp_plan();
            allowed.extend(users.allowed);
            disallowed.extend(users.disallowed);
            option("--mcp-config", &file.to_string_lossy());
        } else if host_tools {
            let config = serde_json::json!({"mcpServers": {server: {"type": "sdk", "name": server}}});
            option("--mcp-config", &config.to_string());
        }
        if host_tools {
            allowed.push(format!("mcp__{server}__*"));
        }
        if !allowed.is_empty() {
            option("--allowedTools", &allowed.join(","));
        }
        if !disallowed.is_empty() {
            option("--disallowedTools", &disallowed.join(","));
        }
        if let Some(session) = resume {
            option("--resume", session);
        }
        if self.strict_mcp_config {
            args.push("--strict-mcp-config".into());
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
        if host_tools || mcp_file.is_some() {
            env.set.push(("ENABLE_TOOL_SEARCH".into(), "false".into()));
        }
        CommandSpec { program: self.program.clone(), args, cwd: self.cwd.clone(), env }
    }
}

impl ClaudeConfig {
    /// What the user's MCP servers become for this CLI ([`super::mcp::plan`]).
    pub fn mcp_plan(&self) -> super::mcp::McpPlan {
        super::mcp::plan(&self.mcp_servers, &self.host_mcp_server)
    }

    /// The `mcpServers` of the private `--mcp-config` file: the user's servers, and the host's SDK
    /// server with `host_tools`; `None` when the user has none (the host's server then goes inline:
    /// it holds nothing secret).
    pub fn mcp_config(&self, host_tools: bool) -> Option<serde_json::Map<String, serde_json::Value>> {
        let plan = self.mcp_plan();
        for note in &plan.notes {
            tracing::warn!(%note, "an MCP server setting Claude Code cannot take");
        }
        if plan.servers.is_empty() {
            return None;
        }
        let mut servers = plan.servers;
        if host_tools {
            let server = &self.host_mcp_server;
            servers.insert(server.clone(), serde_json::json!({"type": "sdk", "name": server}));
        }
        Some(servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_files_follow_the_system_prompt_and_a_resume_gets_them_as_they_are_now() {
        let argv = |config: &ClaudeConfig| -> Vec<String> {
            config.command(Some("sess-1"), false, None).args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
        };
        let mut config = ClaudeConfig::new("claude");
        let bare = argv(&config);
        assert!(!bare.contains(&"--append-system-prompt".to_string()), "{bare:?}");
        assert!(bare.windows(2).any(|w| w[0] == "--system-prompt-snapshot" && w[1] == "off"), "{bare:?}");
        config.bootstrap_context = Some("# Project Context".into());
        assert!(argv(&config).windows(2).any(|w| w[0] == "--append-system-prompt" && w[1] == "# Project Context"));
        config.append_system_prompt = Some("Be brief.".into());
        let both = argv(&config);
        assert!(
            both.windows(2).any(|w| w[0] == "--append-system-prompt" && w[1] == "Be brief.\n\n# Project Context"),
            "{both:?}"
        );
        assert_eq!(both.iter().filter(|a| *a == "--append-system-prompt").count(), 1);
    }

    #[test]
    fn side_work_stores_no_session_and_forks_the_one_it_resumes() {
        let mut config = ClaudeConfig::new("claude");
        let argv = |config: &ClaudeConfig, resume: Option<&str>| -> Vec<String> {
            config.command(resume, false, None).args.iter().map(|a| a.to_string_lossy().into_owned()).collect()
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
    fn the_users_mcp_servers_go_into_a_file_and_only_their_keyed_hash_into_the_binding() {
        use clawbridge_bridge::binding::{Binding, FingerprintKey};
        let mut config = ClaudeConfig::new("claude");
        config.mcp_servers.insert(
            "probe".into(),
            serde_json::json!({"command": "node", "env": {"TOKEN": "sk-mcp-secret"}, "default_tools_approval_mode": "approve"}),
        );
        assert!(!format!("{config:?}").contains("sk-mcp-secret"), "Debug names the servers only");
        let servers = config.mcp_config(true).expect("a file's servers");
        assert_eq!(servers["openclaw"], serde_json::json!({"type": "sdk", "name": "openclaw"}), "the host's too");
        assert_eq!(servers["probe"]["env"]["TOKEN"], "sk-mcp-secret");
        let file = std::path::Path::new("/tmp/clawbridge-mcp-x.json");
        let argv: Vec<String> =
            config.command(None, true, Some(file)).args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!argv.iter().any(|a| a.contains("sk-mcp-secret")), "{argv:?}");
        assert!(argv.windows(2).any(|w| w[0] == "--mcp-config" && w[1] == "/tmp/clawbridge-mcp-x.json"), "{argv:?}");
        assert_eq!(argv.iter().filter(|a| *a == "--mcp-config").count(), 1, "one config: {argv:?}");
        assert!(
            argv.windows(2).any(|w| w[0] == "--allowedTools" && w[1] == "mcp__probe__*,mcp__openclaw__*"),
            "{argv:?}"
        );
        assert!(ClaudeConfig::new("claude").mcp_config(true).is_none(), "no user servers, no file");
        assert!(!argv.contains(&"--strict-mcp-config".to_string()), "the user's own Claude servers stay");
        let mut models_only = ClaudeConfig::new("claude");
        models_only.strict_mcp_config = true;
        let argv: Vec<String> =
            models_only.command(None, false, None).args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(argv.contains(&"--strict-mcp-config".to_string()) && !argv.contains(&"--mcp-config".to_string()));

        let dir = tempfile::tempdir().unwrap();
        let key = FingerprintKey::load_or_create(dir.path());
        let bound = Binding::new("s-1", &config.fingerprints(&[], "claude-login").keyed(&key));
        assert!(!serde_json::to_string(&bound).unwrap().contains("sk-mcp-secret"));
        let mut other = config.clone();
        other.mcp_servers.insert("probe".into(), serde_json::json!({"command": "node", "env": {"TOKEN": "other"}}));
        assert!(bound.check(&other.fingerprints(&[], "claude-login").keyed(&key)).is_err(), "another server set");
        assert_eq!(bound.check(&config.fingerprints(&[], "claude-login").keyed(&key)), Ok(()));
    }

    #[test]
    fn secrets_stay_out_of_argv_and_debug_and_claudecode_is_removed() {
        let mut config = ClaudeConfig::new("claude");
        config.secret_env.push(("ANTHROPIC_API_KEY".into(), Secret::new("sk-very-secret")));
        config.model = Some("m".into());
        config.resume = None;
        let spec = config.command(Some("sess-1"), true, None);
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
        let session_env =
            |config: &ClaudeConfig, secret: &str| config.command(None, false, None).env.build(parent(secret));
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
