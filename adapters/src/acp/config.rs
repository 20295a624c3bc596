//! How an ACP agent is launched: its command line (`--agent`, `CLAWBRIDGE_ACP_AGENT`), the variables
//! of the bridge's own environment it may see besides the supervisor's allowlist, and the session's
//! deadlines.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clawbridge_bridge::remote::{LauncherError, RemoteSpec, StdinPreamble};
use clawbridge_bridge::supervisor::{CommandSpec, Containment, EnvPolicy, PidRegistry, StopPolicy};
use clawbridge_bridge::transport::agent_write_timeout;

/// The environment variable holding the agent's command line (serve, and `run` without `--agent`).
pub const AGENT_ENV: &str = "CLAWBRIDGE_ACP_AGENT";
/// The environment variable naming, comma-separated, the bridge's variables the agent also sees
/// (its own configuration: `CODEX_HOME`, `ANTHROPIC_BASE_URL`, …); `--agent-env` adds to it.
pub const AGENT_ENV_PASS: &str = "CLAWBRIDGE_ACP_AGENT_ENV";
/// The environment variable naming the auth method to `authenticate` with when the agent asks.
pub const AUTH_METHOD_ENV: &str = "CLAWBRIDGE_ACP_AUTH_METHOD";

/// An agent command line that could not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentCommandError {
    /// The line is not valid shell words (an unclosed quote, say).
    #[error("the ACP agent command `{line}` is not a valid command line: {why}")]
    Unparsable {
        /// The line as given.
        line: String,
        /// What the shell-words parser said.
        why: String,
    },
    /// The line holds no program.
    #[error("the ACP agent command is empty")]
    Empty,
}

/// The agent's program and arguments, parsed shell-like from one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program, as written (found on `PATH` by the backend's `locate`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The line as given, for fingerprints and messages.
    pub line: String,
}

impl AgentCommand {
    /// Parses `line` with shell quoting rules (no expansion, no globbing).
    pub fn parse(line: &str) -> Result<Self, AgentCommandError> {
        let words = shell_words::split(line)
            .map_err(|e| AgentCommandError::Unparsable { line: line.to_owned(), why: e.to_string() })?;
        let mut words = words.into_iter();
        let program = words.next().filter(|p| !p.is_empty()).ok_or(AgentCommandError::Empty)?;
        Ok(AgentCommand { program: program.into(), args: words.collect(), line: line.to_owned() })
    }
}

/// The names in a comma-separated list, trimmed, empty ones skipped.
pub fn env_names(list: &str) -> Vec<String> {
    list.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
}

/// How to run one ACP agent session.
#[derive(Clone, Debug)]
pub struct AcpConfig {
    /// The program (absolute, from `locate`).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The child's environment policy.
    pub env: EnvPolicy,
    /// The session's working directory (the child's, and the root `fs/*` is confined to).
    pub cwd: PathBuf,
    /// The auth method to use when the agent says auth is required.
    pub auth_method: Option<String>,
    /// Deadline for `initialize` (the agent's start-up is inside it).
    pub handshake_timeout: Duration,
    /// Deadline for ordinary requests (`session/new`, `session/load`).
    pub request_timeout: Duration,
    /// A turn with no progress for this long ends as `timeout`.
    pub turn_idle_timeout: Duration,
    /// How long the host may take to decide a permission request.
    pub approval_timeout: Duration,
    /// Unused by ACP (no host tools) but kept for the shared deadline setter.
    pub tool_timeout: Duration,
    /// After `session/cancel`, how long the agent gets to answer `cancelled`.
    pub interrupt_grace: Duration,
    /// The largest file `fs/read_text_file` returns, in bytes.
    pub max_read_bytes: u64,
    /// The largest text `fs/write_text_file` writes, in bytes.
    pub max_write_bytes: usize,
    /// The staged stop's graces.
    pub stop: StopPolicy,
    /// Where to record the child for orphan reaping.
    pub registry: Option<PidRegistry>,
    /// How long one write to the agent's stdin may block.
    pub write_timeout: Duration,
    /// How the agent's descendants are contained.
    pub containment: Containment,
    /// Run the agent elsewhere: `program` is then the launcher, and this names the agent's
    /// program there (docs/remote.md).
    pub remote: Option<RemoteSpec>,
}

impl AcpConfig {
    /// Defaults for `program args…` in `cwd`.
    pub fn new(program: PathBuf, args: Vec<String>, cwd: PathBuf) -> Self {
        AcpConfig {
            program,
            args,
            env: EnvPolicy::default(),
            cwd,
            auth_method: None,
            handshake_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(120),
            turn_idle_timeout: Duration::from_secs(300),
            approval_timeout: Duration::from_secs(600),
            tool_timeout: Duration::from_secs(600),
            interrupt_grace: Duration::from_secs(10),
            max_read_bytes: 4 * 1024 * 1024,
            max_write_bytes: 4 * 1024 * 1024,
            stop: StopPolicy {
                after_stdin_close: Duration::from_secs(2),
                after_sigterm: Duration::from_secs(2),
                after_sigkill: Duration::from_secs(2),
            },
            registry: None,
            write_timeout: agent_write_timeout(),
            containment: Containment::from_env(),
            remote: None,
        }
    }

    /// The command to spawn and what goes on its stdin first: the agent itself, or, with a
    /// launcher, the launcher running it under the remote wrapper, its environment on stdin.
    pub(crate) fn launch(&self) -> Result<(CommandSpec, Option<StdinPreamble>), LauncherError> {
        let command = self.command();
        clawbridge_bridge::remote::launch(self.remote.as_ref(), &self.program, command)
    }

    /// The command to spawn on the machine that runs the agent.
    pub(crate) fn command(&self) -> CommandSpec {
        CommandSpec {
            program: self.program.clone(),
            args: self.args.iter().map(OsString::from).collect(),
            cwd: Some(self.cwd.clone()),
            env: self.env.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_line_is_split_like_a_shell_would_without_expanding_anything() {
        let command = AgentCommand::parse(r#"npx -y "@zed/agent acp" --flag='a b' $HOME"#).unwrap();
        assert_eq!(command.program, PathBuf::from("npx"));
        assert_eq!(command.args, ["-y", "@zed/agent acp", "--flag=a b", "$HOME"]);
        assert_eq!(AgentCommand::parse("  "), Err(AgentCommandError::Empty));
        assert!(matches!(AgentCommand::parse("agent 'open"), Err(AgentCommandError::Unparsable { .. })));
        assert_eq!(env_names(" CODEX_HOME, ,ANTHROPIC_BASE_URL "), ["CODEX_HOME", "ANTHROPIC_BASE_URL"]);
    }
}
