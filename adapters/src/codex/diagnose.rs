//! `clawbridge doctor`'s checks of a real `codex app-server`: the handshake (through the same
//! [`CodexSession::connect`] sessions use, stopped afterwards), then what the server itself says
//! over `config/read` and `account/read` — its model provider, where that provider's endpoint is
//! and which credential it takes, and the `configWarning`s it sent (a missing sandbox helper) —
//! and one cheap request to that endpoint (docs/peers/codex.md#what-the-doctor-asks).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::diagnose::endpoint::{self, EndpointRequest};
use clawbridge_bridge::diagnose::{Check, Diagnostics, Limits};
use clawbridge_bridge::rpc::RpcError;
use clawbridge_protocol::codex::methods;
use futures::future::BoxFuture;
use serde::Deserialize;

use clawbridge_bridge::backend::OpenSettings;

use super::backend::{CODEX_BIN_ENV, CodexBackend};
use super::config::CodexConfig;
use super::session::{CodexError, CodexSession};
use super::tool_policy;

/// Codex's own provider when `config.toml` names none.
const DEFAULT_PROVIDER: &str = "openai";
/// Where Codex's `openai` provider sends requests unless `OPENAI_BASE_URL` says otherwise.
const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// What `config/read` answers, as far as the doctor reads it (unknown keys ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ConfigRead {
    /// The effective configuration.
    config: EffectiveConfig,
}

/// The keys of the effective configuration the doctor reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EffectiveConfig {
    /// The provider id in use (`None`: Codex's default, `openai`).
    model_provider: Option<String>,
    /// The providers `config.toml` defines (Codex's built-in ones are not listed).
    model_providers: BTreeMap<String, ProviderConfig>,
    /// The sandbox mode asked for, if any.
    sandbox_mode: Option<String>,
}

/// One `[model_providers.<id>]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ProviderConfig {
    /// The API base (`http://127.0.0.1:8080/v1`).
    base_url: Option<String>,
    /// The environment variable holding the provider's key.
    env_key: Option<String>,
}

/// What `account/read` answers.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct AccountRead {
    /// The signed-in account (`{type: "apiKey" | "chatgpt", …}`), or null.
    account: Option<serde_json::Value>,
    /// Whether the provider in use needs an OpenAI login.
    requires_openai_auth: bool,
}

/// The environment a session's `codex app-server` gets, as the doctor judges it.
type SessionEnv = BTreeMap<OsString, OsString>;

/// `name`'s value in `env`, when set and not empty.
fn value<'e>(env: &'e SessionEnv, name: &str) -> Option<&'e str> {
    env.get(OsStr::new(name)).and_then(|v| v.to_str()).filter(|v| !v.is_empty())
}

/// Whether the doctor's own environment has `name` (set, not empty).
fn set_here(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

impl Diagnostics for CodexBackend {
    fn program_variable(&self) -> Option<&'static str> {
        Some(CODEX_BIN_ENV)
    }

    fn program_source(&self) -> Option<String> {
        // A proxy is launched as the app-server would be: found as it would be.
        if let Some(connected) = self.connected().filter(|c| !c.endpoint.is_proxy()) {
            return Some(format!("not needed: sessions connect to {}", connected.endpoint));
        }
        if let Some(remote) = self.remote() {
            return Some(format!("as the launcher, running {} on the far side", remote.program.to_string_lossy()));
        }
        Some(clawbridge_bridge::diagnose::program_source(self.configured_program(), CODEX_BIN_ENV))
    }

    fn check_names(&self) -> &'static [&'static str] {
        &["handshake", "auth", "endpoint", "sandbox"]
    }

    fn install_hint(&self) -> String {
        match self.connected() {
            Some(remote) if remote.endpoint.is_proxy() => format!(
                "start the daemon `codex app-server proxy` reaches ({}) where the proxy runs — `codex app-server daemon start`, or `codex app-server --listen unix://SOCKET` — or fix codex.connect",
                proxy_socket(&remote.endpoint)
            ),
            Some(remote) => format!(
                "start `codex app-server --listen {}` (its --ws-auth matching codex.ws-auth), or fix codex.connect and the token",
                remote.endpoint
            ),
            None => install_hint(),
        }
    }

    fn checks<'a>(&'a self, program: &'a Path, limits: Limits) -> BoxFuture<'a, Vec<Check>> {
        Box::pin(checks(self, program, limits))
    }
}

/// The socket a proxy endpoint names, for messages.
fn proxy_socket(endpoint: &clawbridge_bridge::transport::endpoint::Endpoint) -> String {
    match endpoint {
        clawbridge_bridge::transport::endpoint::Endpoint::Proxy { socket: Some(path) } => path.display().to_string(),
        _ => "its default, $CODEX_HOME/app-server-control/app-server-control.sock".into(),
    }
}

fn install_hint() -> String {
    let policy = clawbridge_protocol::codex::version::VersionPolicy::default();
    format!("install codex ≥ {} (tested: {}) or set {CODEX_BIN_ENV}", policy.floor, policy.tested_max)
}

/// The `CODEX_HOME` sessions use, for messages (Codex's default when unset).
fn codex_home(config: &CodexConfig) -> PathBuf {
    super::provider_env::resolve_home(config.codex_home.as_deref()).unwrap_or_else(|| PathBuf::from("~/.codex"))
}

async fn checks(backend: &CodexBackend, program: &Path, limits: Limits) -> Vec<Check> {
    // Exactly the launch a session without host auth gets: its CODEX_HOME, its environment.
    let settings = OpenSettings { program: program.to_path_buf(), ..OpenSettings::default() };
    let tools = tool_policy::apply(&settings.native_tools).unwrap_or_default();
    let mut config = backend.config(&settings, &tools);
    config.handshake_timeout = limits.handshake;
    config.request_timeout = limits.handshake;
    let env = config.command().env.build(std::env::vars_os());
    let home = codex_home(&config);
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let mut session = match CodexSession::connect(config, hooks).await {
        Ok(session) => session,
        Err(error) => {
            let mut checks = vec![handshake_failure(program, &error)];
            for name in ["auth", "endpoint", "sandbox"] {
                checks.push(Check::skipped(name, "not checked: the app-server did not answer initialize"));
            }
            return checks;
        }
    };
    let handshake =
        Check::ok("handshake", format!("codex app-server {} answered initialize", session.server_version()));
    let read = session.request_between_turns::<ConfigRead>(methods::CONFIG_READ).await;
    let account = session.request_between_turns::<AccountRead>(methods::ACCOUNT_READ).await;
    let warnings = session.config_warnings().to_vec();
    let stop = session.shutdown().await;
    tracing::debug!(?stop, "the doctor's codex app-server stopped");

    let mut checks = vec![handshake];
    match read {
        Ok(read) => {
            let provider = Provider::of(&read.config);
            checks.push(auth_check(&provider, account, &env, &home));
            checks.push(endpoint_check(&provider, limits, &env, &home).await);
            checks.push(sandbox_check(read.config.sandbox_mode.as_deref(), &warnings));
        }
        Err(error) => {
            // Releases older than the one these requests were learnt on may not answer them: that
            // says nothing about whether sessions work.
            checks.push(Check::warn("auth", format!("not checked: config/read failed: {error}"), None));
            checks.push(Check::skipped("endpoint", "not checked: the effective config is unknown"));
            checks.push(sandbox_check(None, &warnings));
        }
    }
    checks
}

fn handshake_failure(program: &Path, error: &CodexError) -> Check {
    let fix = match error {
        CodexError::VersionRejected { .. } => install_hint(),
        _ => format!("run `{} app-server` by hand to see why it fails or hangs", program.display()),
    };
    Check::handshake_failure(error, "app-server", fix)
}

/// The provider in use and where it is configured.
struct Provider {
    /// Its id.
    id: String,
    /// Its `[model_providers.<id>]` table, when `config.toml` defines it.
    table: Option<ProviderConfig>,
}

impl Provider {
    fn of(config: &EffectiveConfig) -> Provider {
        let id = config.model_provider.clone().unwrap_or_else(|| DEFAULT_PROVIDER.to_owned());
        let table = config.model_providers.get(&id).map(|table| ProviderConfig {
            base_url: table.base_url.clone(),
            env_key: table.env_key.clone().filter(|k| !k.is_empty()),
        });
        Provider { id, table }
    }

    /// The variable holding the key, if the provider takes one from the environment.
    fn env_key(&self) -> Option<&str> {
        self.table.as_ref()?.env_key.as_deref()
    }

    /// The API base a session's Codex uses, when clawbridge knows it.
    fn base_url(&self, env: &SessionEnv) -> Option<String> {
        match &self.table {
            Some(table) => table.base_url.clone(),
            None if self.id == DEFAULT_PROVIDER => {
                Some(value(env, "OPENAI_BASE_URL").map_or_else(|| OPENAI_BASE_URL.to_owned(), str::to_owned))
            }
            None => None,
        }
    }
}

fn auth_check(provider: &Provider, account: Result<AccountRead, RpcError>, env: &SessionEnv, home: &Path) -> Check {
    let id = &provider.id;
    if let Some(variable) = provider.env_key() {
        return if value(env, variable).is_some() {
            Check::ok("auth", format!("provider {id} takes its key from {variable} (set, passed to codex)"))
        } else if set_here(variable) {
            // Only the key of the provider config.toml selects passes (super::provider_env): a
            // provider chosen elsewhere (`-c`, a flag) gets none.
            Check::fail(
                "auth",
                format!("provider {id} takes its key from {variable}: set here but not passed to codex"),
                format!("select provider {id} with `model_provider` in {}", home.join("config.toml").display()),
            )
        } else {
            Check::fail(
                "auth",
                format!("provider {id} takes its key from {variable}, which is not set"),
                format!("set {variable}"),
            )
        };
    }
    match account {
        Ok(AccountRead { account: Some(account), .. }) => {
            let kind = account.get("type").and_then(serde_json::Value::as_str).unwrap_or("an account");
            Check::ok("auth", format!("signed in ({kind}) in {}", home.join("auth.json").display()))
        }
        Ok(AccountRead { requires_openai_auth: false, .. }) => {
            Check::ok("auth", format!("provider {id} needs no credential"))
        }
        Ok(AccountRead { requires_openai_auth: true, .. }) => Check::fail(
            "auth",
            format!("provider {id} needs an OpenAI login and there is none in {}", home.join("auth.json").display()),
            "run `codex login` with the same CODEX_HOME (or configure a provider with env_key)",
        ),
        Err(error) => Check::warn("auth", format!("account/read failed: {error}"), None),
    }
}

async fn endpoint_check(provider: &Provider, limits: Limits, env: &SessionEnv, home: &Path) -> Check {
    let id = &provider.id;
    let Some(base) = provider.base_url(env) else {
        return Check::skipped("endpoint", format!("built-in provider {id}: its endpoint is Codex's own"));
    };
    if provider.table.is_none() && set_here("OPENAI_BASE_URL") && value(env, "OPENAI_BASE_URL").is_none() {
        return Check::warn(
            "endpoint",
            format!(
                "OPENAI_BASE_URL is set here but not passed to codex: sessions use {}",
                endpoint::display_url(&base)
            ),
            Some(format!("set the endpoint as base_url of a provider in {}", home.join("config.toml").display())),
        );
    }
    let mut headers = Vec::new();
    if let Some(key) = provider.env_key().and_then(|variable| value(env, variable)) {
        headers.push(("authorization".to_owned(), format!("Bearer {key}")));
    }
    let request =
        EndpointRequest { method: endpoint::Method::GET, url: endpoint::join(&base, "models"), headers, body: None };
    let config_file = home.join("config.toml");
    let shown = endpoint::display_url(&base);
    match endpoint::ask(&request, limits.endpoint).await {
        Ok(answer) if matches!(answer.status, 401 | 403) => {
            let message = answer.error_message().map(|m| format!(": {m}")).unwrap_or_default();
            let fix = provider.env_key().map_or_else(
                || "sign in again with `codex login`".to_owned(),
                |variable| format!("check the key in {variable}"),
            );
            Check::fail(
                "endpoint",
                format!("model endpoint {shown} refused the credential (HTTP {}{message})", answer.status),
                fix,
            )
        }
        Ok(answer) if answer.status >= 500 => {
            let message = answer.error_message().map(|m| format!(": {m}")).unwrap_or_default();
            Check::warn(
                "endpoint",
                format!("model endpoint {shown} answered HTTP {}{message}", answer.status),
                Some("the model server is failing: check its own logs".to_owned()),
            )
        }
        // `GET /models` is not every server's route: any other answer proves it is there.
        Ok(answer) => Check::ok("endpoint", format!("model endpoint {shown} answered (HTTP {})", answer.status)),
        Err(error) => Check::endpoint_error(
            &shown,
            &error,
            format!("start the model server, or fix base_url of [model_providers.{id}] in {}", config_file.display()),
        ),
    }
}

fn sandbox_check(mode: Option<&str>, warnings: &[String]) -> Check {
    let about_sandbox =
        warnings.iter().find(|w| ["sandbox", "bubblewrap", "bwrap"].iter().any(|k| w.to_lowercase().contains(k)));
    if let Some(warning) = about_sandbox {
        let fix = warning
            .to_lowercase()
            .contains("bubblewrap")
            .then(|| "install bubblewrap (`bwrap`) with the OS package manager".to_owned());
        return Check::warn("sandbox", format!("codex says: {warning}"), fix);
    }
    // Sessions ask for no sandbox of their own unless the host's tool policy denies file edits
    // (then read-only, per thread), so the thread runs in the mode config.toml sets.
    let mode = mode.unwrap_or("Codex's default");
    Check::ok(
        "sandbox",
        format!(
            "sessions run in sandbox mode {mode} (read-only when the host denies file edits); Codex reported no sandbox problem"
        ),
    )
}
