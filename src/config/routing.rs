//! The effective settings handed to the code that uses them: the backends' options.

use std::time::Duration;

use clawbridge_adapters::{AgentOptions, BackendOptions};
use clawbridge_bridge::backend::ConfiguredProgram;
use clawbridge_bridge::remote::{Launcher, RemoteSpec};
use clawbridge_bridge::supervisor::Containment;

use clawbridge_adapters::codex::CodexRemote;
use clawbridge_adapters::codex::shared::ServerMode;
use clawbridge_bridge::pool::PoolLimits;
use clawbridge_bridge::transport::bearer::{BearerClaims, DEFAULT_TOKEN_LIFETIME, SecretSource, WsAuth};

use super::value::{CgroupsSetting, CodexServerSetting, ConnectUrl, WsAuthMode};
use super::{ConfigError, Setting, Settings, Source};

impl Settings {
    /// What the backends are built with.
    pub fn backend_options(&self) -> BackendOptions {
        // What every agent process gets; each native backend adds its executable.
        let process = AgentOptions {
            program: None,
            // 0 means "the default", as the variable always did.
            write_timeout: self.agents.write_timeout_ms.value.filter(|ms| *ms > 0).map(Duration::from_millis),
            containment: self.containment.cgroups.value.map(|cgroups| match cgroups {
                CgroupsSetting::Auto => Containment::CgroupWhereAvailable,
                CgroupsSetting::Off => Containment::TokenOnly,
            }),
            remote: None,
        };
        let agent = |bin: &Setting<super::value::Program>, key: &str| AgentOptions {
            program: configured_program(bin, key),
            ..process.clone()
        };
        let mut codex = agent(&self.codex.bin, "codex.bin");
        codex.remote = remote_spec(self.codex.launcher.get(), &self.codex.bin, "codex");
        let mut claude = agent(&self.claude.bin, "claude.bin");
        claude.remote = remote_spec(self.claude.launcher.get(), &self.claude.bin, "claude");
        let default_pool = clawbridge_adapters::claude::pool::PoolConfig::default();
        let claude_pool = clawbridge_adapters::claude::pool::PoolConfig {
            max_warm: self
                .claude
                .warm_max
                .value
                .map_or(default_pool.max_warm, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            idle_timeout: self.claude.warm_idle_ms.value.map_or(default_pool.idle_timeout, Duration::from_millis),
        };
        let shared = ServerMode::DEFAULT_LIMITS;
        let codex_servers = match self.codex.server.value {
            Some(CodexServerSetting::Shared) => ServerMode::Shared(PoolLimits {
                max_items: self
                    .codex
                    .max_servers
                    .value
                    .map_or(shared.max_items, |n| usize::try_from(n).unwrap_or(usize::MAX))
                    .max(1),
                idle_timeout: self.codex.server_idle_ms.value.map_or(shared.idle_timeout, Duration::from_millis),
                // 0 means "never" (unset is the default limit).
                max_uses: match self.codex.max_turns_per_server.value {
                    Some(0) => None,
                    Some(n) => Some(n),
                    None => shared.max_uses,
                },
            }),
            _ => ServerMode::PerAttempt,
        };
        BackendOptions {
            codex_servers: Some(codex_servers),
            pass_env: self.bridge.pass_env.value.clone().map(|list| list.0).unwrap_or_default(),
            codex,
            codex_home: self.codex.home.value.clone(),
            // Checked when the settings were resolved.
            codex_connect: self.codex_remote().ok().flatten(),
            claude,
            claude_pool: Some(claude_pool),
            acp: Some(clawbridge_adapters::acp::AcpOptions {
                agent: self.acp.agent.value.clone(),
                agent_env: self
                    .acp
                    .agent_env
                    .value
                    .as_deref()
                    .map(clawbridge_adapters::acp::env_names)
                    .unwrap_or_default(),
                auth_method: self.acp.auth_method.value.clone(),
                agent_named_by: self.acp.agent.value.as_ref().map(|_| named_by(&self.acp.agent.source, "acp.agent")),
                launcher: self.acp.launcher.get().and_then(launcher),
                process,
            }),
        }
    }
}

impl Settings {
    /// The listening app-server `[codex] connect` names, with the credential its auth keys give.
    pub fn codex_remote(&self) -> Result<Option<CodexRemote>, ConfigError> {
        let codex = &self.codex;
        let source = match (&codex.ws_token_file.value, &codex.ws_token_env.value) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::Incomplete {
                    key: "codex.ws-token-file",
                    why: "and codex.ws-token-env are both set; give the token one way",
                });
            }
            (Some(file), None) => Some(SecretSource::File(file.clone())),
            (None, Some(name)) => Some(SecretSource::Env(name.clone())),
            (None, None) => None,
        };
        let Some(ConnectUrl(endpoint)) = codex.connect.value.clone() else {
            if codex.ws_auth.value.is_some() || source.is_some() {
                let why = "is not set, so the WebSocket auth keys have nothing to authenticate to";
                return Err(ConfigError::Incomplete { key: "codex.connect", why });
            }
            return Ok(None);
        };
        let auth = match (codex.ws_auth.value, source) {
            (None, None) => WsAuth::None,
            (None, Some(_)) => {
                let why = "is not set, but a token is: say which mode the server uses (capability-token, signed-bearer-token)";
                return Err(ConfigError::Incomplete { key: "codex.ws-auth", why });
            }
            (Some(_), None) => {
                let why = "needs codex.ws-token-file or codex.ws-token-env (the token is never written in the config)";
                return Err(ConfigError::Incomplete { key: "codex.ws-auth", why });
            }
            (Some(WsAuthMode::CapabilityToken), Some(token)) => WsAuth::CapabilityToken { token },
            (Some(WsAuthMode::SignedBearerToken), Some(secret)) => WsAuth::SignedBearerToken {
                secret,
                claims: BearerClaims {
                    issuer: codex.ws_issuer.value.clone(),
                    audience: codex.ws_audience.value.clone(),
                },
                lifetime: DEFAULT_TOKEN_LIFETIME,
            },
        };
        Ok(Some(CodexRemote { endpoint, auth }))
    }
}

/// A backend's configured executable, named as the user gave it: the variable, or the key and its place.
fn configured_program(bin: &Setting<super::value::Program>, key: &str) -> Option<ConfiguredProgram> {
    let path = bin.value.clone()?.0;
    Some(ConfiguredProgram { path, named_by: named_by(&bin.source, key) })
}

/// A launcher and the agent's program on its far side: `bin` as given (no local lookup
/// applies), else the agent's usual name.
fn remote_spec(
    launcher: Option<&super::value::LauncherWords>,
    bin: &Setting<super::value::Program>,
    default_name: &str,
) -> Option<RemoteSpec> {
    let launcher = self::launcher(launcher?)?;
    let program = bin.value.clone().map_or_else(|| default_name.into(), |bin| bin.0.into_os_string());
    Some(RemoteSpec { launcher, program })
}

/// The launcher the words name (the value type refuses an empty one, so this only fails on what
/// it already checked).
fn launcher(words: &super::value::LauncherWords) -> Option<Launcher> {
    Launcher::new(words.0.iter().map(std::ffi::OsString::from).collect()).ok()
}

/// A setting named as the user gave it: the variable, or the key and its place.
fn named_by(source: &Source, key: &str) -> String {
    match source {
        Source::Env(name) => (*name).to_string(),
        source => format!("{key} ({source})"),
    }
}
