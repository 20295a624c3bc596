use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clawbridge_bridge::remote::{LauncherError, RemoteSpec, StdinPreamble};
use clawbridge_bridge::supervisor::{
    CONTAINMENT_VALUE_ARG, CONTAINMENT_VAR, CommandSpec, Containment, EnvPolicy, PidRegistry, StopPolicy,
};
use clawbridge_bridge::transport::agent_write_timeout;
use clawbridge_bridge::transport::bearer::WsAuth;
use clawbridge_bridge::transport::endpoint::Endpoint;
use clawbridge_protocol::codex::version::VersionPolicy;

use super::retry::OverloadRetry;
use crate::claude::Secret;

/// An app-server that already listens, and how to prove ourselves to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodexRemote {
    /// Where it listens.
    pub endpoint: Endpoint,
    /// The bearer its WebSocket upgrade wants (none for a Unix socket).
    pub auth: WsAuth,
}

/// How to launch `codex app-server` and the policies of a session with it.
#[derive(Clone, Debug)]
pub struct CodexConfig {
    /// The `codex` executable: the native binary (preferred, one process less) or the Node launcher.
    pub program: PathBuf,
    /// Arguments before `app-server`: for launchers that wrap the real binary (a recorder, the
    /// demo's replay agent).
    pub launcher_args: Vec<OsString>,
    /// `-c key=value` overrides (TOML values), e.g. the model provider of a test.
    pub config_overrides: Vec<String>,
    /// `CODEX_HOME` for the child; its threads and config live there. `None` keeps the child's default.
    pub codex_home: Option<PathBuf>,
    /// The child's environment policy (`CODEX_HOME` is added to it).
    pub env: EnvPolicy,
    /// Credentials for the child's environment only (the route's key and headers under host auth);
    /// kept apart from `env` so no `Debug` of this config shows them.
    pub secret_env: Vec<(String, Secret)>,
    /// The child's working directory.
    pub cwd: Option<PathBuf>,
    /// Which server versions are accepted.
    pub version_policy: VersionPolicy,
    /// Our name in `clientInfo` (no `/`, no spaces: it becomes an HTTP header value).
    pub client_name: String,
    /// Deadline for `initialize` (the child's start-up is inside it).
    pub handshake_timeout: Duration,
    /// Deadline for ordinary requests (`thread/start`, `turn/start`, …).
    pub request_timeout: Duration,
    /// A turn with no progress for this long ends as `timeout` (suspended while an approval is pending).
    pub turn_idle_timeout: Duration,
    /// How long the host may take to decide an approval before it counts as declined.
    pub approval_timeout: Duration,
    /// How long a host tool may run before it counts as failed.
    pub tool_timeout: Duration,
    /// After an interrupt, how long to wait for `turn/completed` before giving up on the turn.
    pub interrupt_grace: Duration,
    /// After the thread reports `idle` while our turn is still open, how long to wait for
    /// `turn/completed` before asking `thread/turns/list` how the turn ended (docs/peers/codex.md#missing-turncompleted).
    pub reconcile_after_idle: Duration,
    /// Retrying requests the server refuses as overloaded (`-32001`).
    pub overload_retry: OverloadRetry,
    /// The staged stop's graces.
    pub stop: StopPolicy,
    /// Where to record the child for orphan reaping.
    pub registry: Option<PidRegistry>,
    /// How long a write to the child's stdin may make no progress before the turn fails.
    pub write_timeout: Duration,
    /// Whether the child gets a cgroup of its own where the machine allows it.
    pub containment: Containment,
    /// An app-server that already listens (`codex app-server --listen …`): connect to it instead
    /// of spawning one. The launch settings above are then the server's own business. For
    /// [`Endpoint::Proxy`], `program` (under [`remote`](Self::remote)'s launcher, if any) runs
    /// `codex app-server proxy` and the connection goes through its stdio.
    pub connect: Option<Endpoint>,
    /// How to authenticate to [`connect`](Self::connect)'s WebSocket upgrade.
    pub ws_auth: WsAuth,
    /// Run the app-server elsewhere: `program` is then the launcher (`ssh`), and this names the
    /// codex there (docs/remote.md).
    pub remote: Option<RemoteSpec>,
}

impl CodexConfig {
    /// Defaults for launching `program`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            launcher_args: Vec::new(),
            config_overrides: Vec::new(),
            codex_home: None,
            env: EnvPolicy::default(),
            secret_env: Vec::new(),
            cwd: None,
            version_policy: VersionPolicy::default(),
            client_name: "clawbridge".into(),
            handshake_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            turn_idle_timeout: Duration::from_secs(300),
            approval_timeout: Duration::from_secs(600),
            tool_timeout: Duration::from_secs(600),
            interrupt_grace: Duration::from_secs(10),
            reconcile_after_idle: Duration::from_secs(2),
            overload_retry: OverloadRetry::default(),
            stop: StopPolicy {
                after_stdin_close: Duration::from_secs(2),
                after_sigterm: Duration::from_secs(2),
                after_sigkill: Duration::from_secs(2),
            },
            registry: None,
            write_timeout: agent_write_timeout(),
            containment: Containment::from_env(),
            connect: None,
            ws_auth: WsAuth::None,
            remote: None,
        }
    }

    /// The command whose `--version` the probe reads (it appends `--version`).
    pub(crate) fn probe_command(&self) -> CommandSpec {
        if let Some(remote) = &self.remote {
            return remote.launcher.probe_command(&self.program, &remote.program);
        }
        CommandSpec {
            program: self.program.clone(),
            args: self.launcher_args.clone(),
            cwd: self.cwd.clone(),
            env: self.env.clone(),
        }
    }

    /// The command to spawn and what goes on its stdin first: the app-server itself, or, with a
    /// launcher, the launcher running it under the remote wrapper, its environment on stdin.
    pub(crate) fn launch(&self) -> Result<(CommandSpec, Option<StdinPreamble>), LauncherError> {
        let command = self.command();
        clawbridge_bridge::remote::launch(self.remote.as_ref(), &self.program, command)
    }

    /// What to spawn to reach a daemon's control socket through `codex app-server proxy`
    /// ([`Endpoint::Proxy`]): the proxy, under the launcher when there is one. It gets
    /// `CODEX_HOME` (the proxy's default socket is under it) but none of the session's
    /// credentials or `-c` overrides: the daemon runs with its own (docs/remote.md).
    pub(crate) fn proxy_launch(
        &self,
        socket: Option<&std::path::Path>,
    ) -> Result<(CommandSpec, Option<StdinPreamble>, String), LauncherError> {
        let mut args = self.launcher_args.clone();
        args.extend(["app-server".into(), "proxy".into()]);
        if let Some(socket) = socket {
            args.extend(["--sock".into(), socket.as_os_str().to_owned()]);
        }
        let mut env = self.env.clone();
        if let Some(home) = &self.codex_home {
            env.set.push(("CODEX_HOME".into(), home.clone().into_os_string()));
        }
        env.set.push(("NO_COLOR".into(), "1".into()));
        let command = CommandSpec { program: self.program.clone(), args, cwd: self.cwd.clone(), env };
        let shown = |program: &std::ffi::OsStr| {
            let mut words = vec![program.to_string_lossy().into_owned()];
            words.extend(command.args.iter().map(|arg| arg.to_string_lossy().into_owned()));
            shell_words::join(words)
        };
        let via = match &self.remote {
            Some(remote) => format!("`{}` through `{}`", shown(&remote.program), remote.launcher.display()),
            None => format!("`{}` on this machine", shown(command.program.as_os_str())),
        };
        let (command, preamble) = clawbridge_bridge::remote::launch(self.remote.as_ref(), &self.program, command)?;
        Ok((command, preamble, via))
    }

    /// The command to spawn on the machine that runs the app-server.
    pub(crate) fn command(&self) -> CommandSpec {
        let mut args = self.launcher_args.clone();
        args.push("app-server".into());
        for value in &self.config_overrides {
            args.push("-c".into());
            args.push(value.into());
        }
        // Codex builds each tool command's environment from its shell environment policy, which
        // may drop the containment variable (`inherit = "core"`/`"none"`, `include_only`); `set`
        // always applies. The supervisor puts the agent's value in place of the placeholder
        // (quoted: a TOML string, whatever the user's own `set` table holds).
        args.push("-c".into());
        args.push(format!("shell_environment_policy.set.{CONTAINMENT_VAR}=\"{CONTAINMENT_VALUE_ARG}\"").into());
        // The credentials are for Codex's own model requests, never for the agent: each tool
        // command gets them emptied (`set`, which no user policy overrides), and the shell snapshot
        // is off, because Codex writes a login shell's exported environment, the credentials
        // included, to `$CODEX_HOME/shell_snapshots/` (docs/peers/codex.md#route-auth).
        if !self.secret_env.is_empty() {
            args.push("-c".into());
            args.push("features.shell_snapshot=false".into());
        }
        for (name, _) in &self.secret_env {
            args.push("-c".into());
            args.push(format!("shell_environment_policy.set.{name}=\"\"").into());
        }
        let mut env = self.env.clone();
        // Another originator would change the userAgent the version gate parses.
        env.remove.push("CODEX_INTERNAL_ORIGINATOR_OVERRIDE".into());
        if let Some(home) = &self.codex_home {
            env.set.push(("CODEX_HOME".into(), home.clone().into_os_string()));
        }
        env.set.push(("NO_COLOR".into(), "1".into()));
        for (name, value) in &self.secret_env {
            env.set.push((name.into(), value.expose().into()));
        }
        CommandSpec { program: self.program.clone(), args, cwd: self.cwd.clone(), env }
    }
}
