//! What a resume of a Claude session depends on: the CLI's own session file, and the settings a
//! binding of a Claude session is fingerprinted with.
//!
//! **Session files** (checked against the real CLI 2.1.328): a session lives in
//! `<config dir>/projects/<project>/<session id>.jsonl`, where the config dir is `$CLAUDE_CONFIG_DIR`
//! or else `$HOME/.claude`, and `<project>` is the *resolved* working directory (symlinks followed)
//! with every UTF-16 code unit that is not an ASCII letter or digit replaced by `-`
//! (`/tmp/a b.x` → `-tmp-a-b-x`). Names over 200 characters are cut to 200 and get `-<hash>`
//! appended; that hash is the CLI's own, so such folders are found by their 200-character prefix.
//! `--resume` of an id without a file makes 2.1.328 fail the turn ("No conversation found"), and
//! made older builds hang (docs/peers/claude.md#missing-session-file): the session checks first and
//! starts fresh, saying why.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clawbridge_bridge::attempt::hooks::HostToolSpec;
use clawbridge_bridge::binding::{Fingerprints, InvalidationReason};
use serde_json::json;

use super::config::{AUTH_IDENTITY_SETTINGS, ClaudeConfig, PROVIDER_SWITCHES, SHORT_LIVED_CREDENTIALS};

/// The backend id bindings of Claude sessions carry.
pub const BACKEND: &str = "claude";

/// The model a binding records when none is configured (the CLI picks its own default).
pub const DEFAULT_MODEL: &str = "(cli default)";

/// Longest project folder name the CLI writes without a hash suffix.
const PROJECT_NAME_MAX: usize = 200;

/// The CLI's config dir for a child with environment `env`: `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`.
pub fn config_dir(env: &BTreeMap<OsString, OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| env.get(&OsString::from(name)).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("CLAUDE_CONFIG_DIR").or_else(|| non_empty("HOME").map(|home| home.join(".claude")))
}

/// The project folder name the CLI uses for `cwd` (already resolved), before any hash suffix.
pub fn project_dir_name(cwd: &Path) -> String {
    // The CLI replaces per UTF-16 code unit, so a character outside the BMP becomes two dashes.
    let mut name = String::new();
    for c in cwd.to_string_lossy().chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else {
            name.extend(std::iter::repeat_n('-', c.len_utf16()));
        }
    }
    name
}

/// The session file of `session_id` for a CLI run in `cwd` with config dir `config_dir`, or where it
/// was looked for when there is none. Ids that could name another path (`/`, `..`) never match.
pub fn find_session_file(config_dir: &Path, cwd: &Path, session_id: &str) -> Result<PathBuf, PathBuf> {
    let projects = config_dir.join("projects");
    let name = project_dir_name(&resolved(cwd));
    let file = format!("{session_id}.jsonl");
    let safe_id = !session_id.is_empty() && !session_id.contains(['/', '\\']) && session_id != "..";
    if name.len() <= PROJECT_NAME_MAX {
        let path = projects.join(&name).join(&file);
        return if safe_id && path.is_file() { Ok(path) } else { Err(path) };
    }
    let prefix = format!("{}-", &name[..PROJECT_NAME_MAX]);
    let looked = projects.join(format!("{prefix}*")).join(&file);
    if !safe_id {
        return Err(looked);
    }
    std::fs::read_dir(&projects)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
        .map(|entry| entry.path().join(&file))
        .find(|path| path.is_file())
        .ok_or(looked)
}

/// `cwd` with symlinks resolved, as the CLI sees it; unchanged when it cannot be resolved.
fn resolved(cwd: &Path) -> PathBuf {
    std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf())
}

impl ClaudeConfig {
    /// The working directory the CLI runs in, resolved: the configured one, else ours.
    pub fn effective_cwd(&self) -> PathBuf {
        let cwd = self.cwd.clone().or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("."));
        resolved(&cwd)
    }

    /// The CLI's session file for `session_id` under this configuration (its environment decides the
    /// config dir, its cwd the project), or why a resume of it must not be tried.
    pub fn session_file(&self, session_id: &str) -> Result<PathBuf, InvalidationReason> {
        let env = self.child_env().build(std::env::vars_os());
        let Some(dir) = config_dir(&env) else {
            return Err(InvalidationReason::NativeSessionMissing {
                id: session_id.to_owned(),
                location: "nowhere: the CLI has neither CLAUDE_CONFIG_DIR nor HOME".into(),
            });
        };
        find_session_file(&dir, &self.effective_cwd(), session_id).map_err(|looked| {
            InvalidationReason::NativeSessionMissing {
                id: session_id.to_owned(),
                location: looked.display().to_string(),
            }
        })
    }

    /// The settings a Claude session depends on, for its binding: the resolved cwd, the model
    /// ([`DEFAULT_MODEL`] for the CLI's default), and hashes of the system prompt, the tool set (allow/deny rules, the
    /// host's SDK MCP server and its tools: the model saw them in earlier turns) and the auth profile
    /// (keyed, never stored plain: another account's or credential's sessions are not this one's).
    pub fn fingerprints(&self, host_tools: &[HostToolSpec], auth_profile: &str) -> Fingerprints {
        let model = self.model.clone().unwrap_or_else(|| DEFAULT_MODEL.into());
        let host: Vec<_> = host_tools
            .iter()
            .map(|spec| json!({"name": spec.name, "description": spec.description, "inputSchema": spec.input_schema}))
            .collect();
        let tools = json!({
            "allowed": self.allowed_tools,
            "disallowed": self.disallowed_tools,
            "mcpServer": (!host.is_empty()).then_some(&self.host_mcp_server),
            "hostTools": host,
        });
        let fingerprints = Fingerprints::new(BACKEND, self.effective_cwd().display().to_string(), model)
            .with("systemPrompt", self.append_system_prompt.as_deref().unwrap_or_default())
            .with_json("tools", &tools)
            .with_secret("authProfile", self.auth_material(auth_profile));
        // The user's MCP servers are part of the session's tools; their env and headers may hold
        // credentials, so only a keyed hash of them is kept.
        if self.mcp_servers.is_empty() {
            return fingerprints;
        }
        fingerprints.with_secret("mcp", serde_json::to_string(&self.mcp_servers).unwrap_or_default())
    }

    /// What the auth profile is keyed from: its name, the provider switch and the non-secret
    /// settings that pick the account, project and region ([`AUTH_IDENTITY_SETTINGS`]: switching
    /// from the Anthropic login to a Bedrock profile is another profile), and the long-lived
    /// credentials the CLI is given. Credentials that are refreshed within hours
    /// ([`SHORT_LIVED_CREDENTIALS`], and an STS key pair, whose id starts `ASIA`) are left out:
    /// keyed in, every refresh would drop every binding; the profile, role or project that
    /// issued them names the account instead.
    fn auth_material(&self, auth_profile: &str) -> String {
        self.auth_material_in(auth_profile, std::env::vars_os())
    }

    /// [`auth_material`](Self::auth_material) for the CLI started from the environment `parent`.
    pub(crate) fn auth_material_in(
        &self,
        auth_profile: &str,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> String {
        let env = self.child_env().build(parent);
        let value = |name: &str| env.get(std::ffi::OsStr::new(name)).map(|v| v.to_string_lossy().into_owned());
        let mut material = auth_profile.to_owned();
        for name in PROVIDER_SWITCHES.iter().chain(AUTH_IDENTITY_SETTINGS) {
            if let Some(setting) = value(name) {
                material.push_str(&format!("\n{name}={setting}"));
            }
        }
        let temporary_aws_keys = value("AWS_ACCESS_KEY_ID").is_some_and(|id| id.starts_with("ASIA"));
        for (name, secret) in &self.secret_env {
            let aws_key_pair = name == "AWS_ACCESS_KEY_ID" || name == "AWS_SECRET_ACCESS_KEY";
            if SHORT_LIVED_CREDENTIALS.contains(&name.as_str()) || (temporary_aws_keys && aws_key_pair) {
                continue;
            }
            material.push_str(&format!("\n{name}={}", secret.expose()));
        }
        material
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawbridge_bridge::binding::Binding;

    #[test]
    fn project_names_follow_the_cli() {
        assert_eq!(project_dir_name(Path::new("/tmp/cexp/work dir.x")), "-tmp-cexp-work-dir-x");
        assert_eq!(project_dir_name(Path::new("/home/dév/😀")), "-home-d-v---");
    }

    #[test]
    fn config_dir_prefers_claude_config_dir() {
        let mut env = BTreeMap::new();
        env.insert(OsString::from("HOME"), OsString::from("/h"));
        assert_eq!(config_dir(&env), Some(PathBuf::from("/h/.claude")));
        env.insert(OsString::from("CLAUDE_CONFIG_DIR"), OsString::from("/c"));
        assert_eq!(config_dir(&env), Some(PathBuf::from("/c")));
        assert_eq!(config_dir(&BTreeMap::new()), None);
    }

    #[test]
    fn session_files_are_found_only_where_the_cli_writes_them() {
        let root = tempfile::tempdir().unwrap();
        let config = root.path().join("cfg");
        let work = root.path().join("work dir");
        std::fs::create_dir_all(&work).unwrap();
        let work = std::fs::canonicalize(&work).unwrap();
        let project = config.join("projects").join(project_dir_name(&work));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("s-1.jsonl"), "{}\n").unwrap();
        assert_eq!(find_session_file(&config, &work, "s-1"), Ok(project.join("s-1.jsonl")));
        assert_eq!(find_session_file(&config, &work, "s-2"), Err(project.join("s-2.jsonl")));
        // Through a symlink the CLI still uses the resolved directory.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&work, &link).unwrap();
        assert!(find_session_file(&config, &link, "s-1").is_ok());
        // Ids that would escape the project folder never match.
        std::fs::write(config.join("projects").join("x.jsonl"), "{}\n").unwrap();
        assert!(find_session_file(&config, &work, "../x").is_err());

        // A long path: the folder carries the CLI's hash, found by its prefix.
        let long = root.path().join("a".repeat(120)).join("b".repeat(120));
        std::fs::create_dir_all(&long).unwrap();
        let long = std::fs::canonicalize(&long).unwrap();
        let name = project_dir_name(&long);
        assert!(name.len() > PROJECT_NAME_MAX);
        let hashed = config.join("projects").join(format!("{}-q2p6ap", &name[..PROJECT_NAME_MAX]));
        std::fs::create_dir_all(&hashed).unwrap();
        std::fs::write(hashed.join("s-9.jsonl"), "{}\n").unwrap();
        assert_eq!(find_session_file(&config, &long, "s-9"), Ok(hashed.join("s-9.jsonl")));
        assert!(find_session_file(&config, &long, "s-1").is_err());
    }

    #[test]
    fn the_config_environment_decides_where_sessions_are() {
        let root = tempfile::tempdir().unwrap();
        let mut config = ClaudeConfig::new("claude");
        config.cwd = Some(root.path().to_path_buf());
        config.env = config.env.with_var("HOME", root.path().join("home"));
        let missing = config.session_file("s-1").unwrap_err();
        assert!(matches!(&missing, InvalidationReason::NativeSessionMissing { id, .. } if id == "s-1"), "{missing:?}");
        assert!(missing.to_string().contains("home/.claude/projects"), "{missing}");
        let project = root.path().join("home/.claude/projects").join(project_dir_name(&config.effective_cwd()));
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("s-1.jsonl"), "{}\n").unwrap();
        assert_eq!(config.session_file("s-1"), Ok(project.join("s-1.jsonl")));
    }

    #[test]
    fn each_fingerprinted_setting_invalidates_with_its_name() {
        let root = tempfile::tempdir().unwrap();
        let mut config = ClaudeConfig::new("claude");
        config.cwd = Some(root.path().to_path_buf());
        config.model = Some("claude-opus-5-5".into());
        config.append_system_prompt = Some("Be brief.".into());
        let tools = [HostToolSpec::new("echo", "Echoes.", &json!({}))];
        let bound = Binding::new("s-1", &config.fingerprints(&tools, "anthropic:default"));
        assert_eq!(bound.check(&config.fingerprints(&tools, "anthropic:default")), Ok(()));

        let mut other = config.clone();
        other.model = Some("claude-sonnet-5".into());
        assert!(matches!(
            bound.check(&other.fingerprints(&tools, "anthropic:default")),
            Err(InvalidationReason::ModelChanged { .. })
        ));
        other = config.clone();
        other.cwd = Some(std::env::temp_dir());
        assert!(matches!(
            bound.check(&other.fingerprints(&tools, "anthropic:default")),
            Err(InvalidationReason::CwdChanged { .. })
        ));
        other = config.clone();
        other.append_system_prompt = Some("Be verbose.".into());
        assert_eq!(
            bound.check(&other.fingerprints(&tools, "anthropic:default")),
            Err(InvalidationReason::FingerprintChanged { name: "systemPrompt".into() })
        );
        // Edited bootstrap files keep the session: they are not part of its identity.
        other = config.clone();
        other.bootstrap_context = Some("# Project Context\n\nUSER.md: call me Sam".into());
        assert_eq!(bound.check(&other.fingerprints(&tools, "anthropic:default")), Ok(()));
        assert_eq!(
            bound.check(&config.fingerprints(&[], "anthropic:default")),
            Err(InvalidationReason::FingerprintChanged { name: "tools".into() })
        );
        other = config.clone();
        other.allowed_tools.push("Bash(git diff *)".into());
        assert_eq!(
            bound.check(&other.fingerprints(&tools, "anthropic:default")),
            Err(InvalidationReason::FingerprintChanged { name: "tools".into() })
        );
        assert_eq!(
            bound.check(&config.fingerprints(&tools, "anthropic:work")),
            Err(InvalidationReason::FingerprintChanged { name: "authProfile".into() })
        );
        let codex = Fingerprints::new("codex", config.effective_cwd().display().to_string(), "claude-opus-5-5");
        assert!(matches!(bound.check(&codex), Err(InvalidationReason::BackendChanged { .. })));
    }

    /// The auth profile's keyed fingerprint for `config` started from `parent`, under `key`.
    fn keyed_auth(
        config: &ClaudeConfig,
        parent: &[(&str, &str)],
        key: &clawbridge_bridge::binding::FingerprintKey,
    ) -> Fingerprints {
        let parent: Vec<(OsString, OsString)> = parent.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        Fingerprints::new(BACKEND, "/", "m")
            .with_secret("authProfile", config.auth_material_in("claude-login", parent))
            .keyed(key)
    }

    #[test]
    fn the_auth_profile_follows_the_provider_and_account_but_not_a_refreshed_session_token() {
        use clawbridge_bridge::supervisor::PassEnvGroup;
        let dir = tempfile::tempdir().unwrap();
        let key = clawbridge_bridge::binding::FingerprintKey::load_or_create(dir.path());
        let config = |parent: &[(&str, &str)]| {
            let mut config = ClaudeConfig::new("claude");
            config.env.inherit.push("CLAUDE_CODE_*".into());
            let parent: Vec<(OsString, OsString)> = parent.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
            config.pass_env_groups(&[PassEnvGroup::Bedrock, PassEnvGroup::Vertex], parent);
            config
        };
        let profile = |parent: &[(&str, &str)]| keyed_auth(&config(parent), parent, &key);
        let bound = |parent: &[(&str, &str)]| Binding::new("s-1", &profile(parent));

        let sts = [
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_PROFILE", "work"),
            ("AWS_ACCESS_KEY_ID", "ASIAFIRST"),
            ("AWS_SECRET_ACCESS_KEY", "secret-1"),
            ("AWS_SESSION_TOKEN", "token-1"),
        ];
        let refreshed = [
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("AWS_PROFILE", "work"),
            ("AWS_ACCESS_KEY_ID", "ASIASECOND"),
            ("AWS_SECRET_ACCESS_KEY", "secret-2"),
            ("AWS_SESSION_TOKEN", "token-2"),
        ];
        assert_eq!(bound(&sts).check(&profile(&refreshed)), Ok(()), "a refreshed STS session is the same profile");
        let vertex_token = |token| {
            [
                ("CLAUDE_CODE_USE_VERTEX", "1"),
                ("ANTHROPIC_VERTEX_PROJECT_ID", "p"),
                ("CLOUDSDK_AUTH_ACCESS_TOKEN", token),
            ]
        };
        assert_eq!(
            bound(&vertex_token("ya29.a")).check(&profile(&vertex_token("ya29.b"))),
            Ok(()),
            "a refreshed access token too"
        );

        let login: [(&str, &str); 0] = [];
        assert!(
            bound(&login).check(&profile(&[("CLAUDE_CODE_USE_BEDROCK", "1")])).is_err(),
            "Anthropic login → Bedrock"
        );
        let other_profile = [("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_PROFILE", "personal")];
        assert!(
            bound(&[("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_PROFILE", "work")])
                .check(&profile(&other_profile))
                .is_err()
        );
        let role = |arn| [("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_ROLE_ARN", arn)];
        assert!(bound(&role("arn:aws:iam::1:role/a")).check(&profile(&role("arn:aws:iam::2:role/a"))).is_err());
        let project = |id| [("CLAUDE_CODE_USE_VERTEX", "1"), ("ANTHROPIC_VERTEX_PROJECT_ID", id)];
        assert!(bound(&project("one")).check(&profile(&project("two"))).is_err(), "another Vertex project");
        let region = |r| [("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_REGION", r)];
        assert!(bound(&region("eu-west-1")).check(&profile(&region("us-east-1"))).is_err(), "another region");
        let long_lived =
            |id| [("CLAUDE_CODE_USE_BEDROCK", "1"), ("AWS_ACCESS_KEY_ID", id), ("AWS_SECRET_ACCESS_KEY", "s")];
        assert!(
            bound(&long_lived("AKIAONE")).check(&profile(&long_lived("AKIATWO"))).is_err(),
            "another IAM user's key"
        );
    }
}
