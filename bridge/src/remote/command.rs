//! Turning the command an agent would run locally into the launcher's command line: the far side
//! runs `sh -c WRAPPER clawbridge-remote TOKEN DIR PROGRAM ARGS…`, and the agent's environment
//! goes on stdin ([`StdinPreamble`]), never on a command line.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use super::preamble::{MAX_PREAMBLE_BYTES, StdinPreamble};
use crate::supervisor::{CONTAINMENT_VALUE_ARG, CONTAINMENT_VAR, CommandSpec, DEFAULT_INHERIT, EnvPolicy};

/// The wrapper the far side runs (POSIX `sh`, read by `sh -c`).
const WRAPPER_SCRIPT: &str = include_str!("wrapper.sh");

/// The wrapper's `$0`: what `ps` shows for it on the far side, and what finds it there.
pub const WRAPPER_NAME: &str = "clawbridge-remote";

/// Variables of the bridge's environment the launcher itself needs besides the defaults: the SSH
/// agent's socket (key login), and where kubectl and docker find their cluster or daemon.
const LAUNCHER_INHERIT: &[&str] = &[
    "SSH_AUTH_SOCK",
    "KUBECONFIG",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
];

/// Why a remote command could not be built. Nothing was started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LauncherError {
    /// The launcher names no program (an empty list).
    #[error("the launcher is empty: name the command that runs the agent elsewhere, e.g. [\"ssh\", \"-T\", \"host\"]")]
    Empty,
    /// A variable for the agent has a name the far side's `sh` cannot export.
    #[error("the variable name {name:?} cannot be passed through a launcher (letters, digits and _ only)")]
    BadName {
        /// The name, as far as it is text.
        name: String,
    },
    /// A variable's value holds a newline (or NUL), which the line-per-variable block on stdin cannot carry.
    #[error("the value of {name} holds a newline or NUL, which cannot be passed through a launcher")]
    BadValue {
        /// The variable.
        name: String,
    },
    /// The OS gave no randomness for the far side's token.
    #[error("no randomness for the far side's containment token")]
    NoRandomness(#[source] getrandom::Error),
    /// The agent's environment is larger than [`MAX_PREAMBLE_BYTES`].
    #[error("the agent's environment is {bytes} bytes, more than the {limit} a launcher passes")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

/// How the launcher hands its command to the far side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommandForm {
    /// As one string the remote user's login shell splits again (ssh joins its arguments with spaces).
    ShellString,
    /// As separate arguments, exec'd as they are (`docker exec`, `kubectl exec … --`).
    Argv,
}

/// A launcher prefix (`ssh -T host`), as the user configured it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launcher {
    /// Its words, the program first.
    argv: Vec<OsString>,
    /// How its command reaches the far side: ssh (by any name in the words, e.g. `gcloud compute
    /// ssh host --`) joins it into a shell string, an exec-style launcher passes argv.
    form: CommandForm,
}

impl Launcher {
    /// A launcher from its words; one whose words hold `ssh` is given one shell string.
    pub fn new(argv: Vec<OsString>) -> Result<Launcher, LauncherError> {
        if argv.first().is_none_or(|program| program.is_empty()) {
            return Err(LauncherError::Empty);
        }
        let is_ssh = |word: &OsString| Path::new(word).file_name() == Some(OsStr::new("ssh"));
        let form = if argv.iter().any(is_ssh) { CommandForm::ShellString } else { CommandForm::Argv };
        Ok(Launcher { argv, form })
    }

    /// The launcher's program, as configured (a path or a name on the bridge's PATH).
    pub fn program(&self) -> &Path {
        Path::new(&self.argv[0])
    }

    /// How its command reaches the far side.
    pub fn form(&self) -> CommandForm {
        self.form
    }

    /// The launcher's words, for messages.
    pub fn display(&self) -> String {
        self.argv.iter().map(|word| word.to_string_lossy()).collect::<Vec<_>>().join(" ")
    }

    /// `words` as the launcher's trailing arguments: quoted into one string for a shell, else as they are.
    fn remote_words(&self, words: Vec<OsString>) -> Vec<OsString> {
        match self.form {
            CommandForm::Argv => words,
            CommandForm::ShellString => {
                let mut line = Vec::new();
                for (i, word) in words.iter().enumerate() {
                    if i > 0 {
                        line.push(b' ');
                    }
                    line.extend_from_slice(quote_word(word).as_bytes());
                }
                vec![OsString::from_vec(line)]
            }
        }
    }

    /// The command whose `--version` (appended by the probe) tells the far side's agent version:
    /// the launcher running `program` with no wrapper (nothing to keep alive), with the bridge's
    /// variables the launcher needs.
    pub fn probe_command(&self, launcher_program: &Path, program: &OsStr) -> CommandSpec {
        let mut args = self.argv[1..].to_vec();
        // A shell joins the appended `--version` to the quoted program; argv takes it as a word.
        args.extend(self.remote_words(vec![program.to_os_string()]));
        CommandSpec { program: launcher_program.to_path_buf(), args, cwd: None, env: launcher_env() }
    }

    /// `local` (what would run on this machine, `program` being the far side's path or name) run
    /// through this launcher (found at `launcher_program`) under the wrapper. The far side keeps
    /// its own environment; what the backend set or passes on purpose (`local.env`'s `set`, and
    /// inherited names beyond the defaults, such as a provider's key variable) goes on stdin,
    /// `remove`d exact names are unset there; `local.cwd` is the directory there.
    pub fn wrap(&self, launcher_program: &Path, local: &CommandSpec) -> Result<RemoteCommand, LauncherError> {
        let preamble = preamble_for(&local.env, std::env::vars_os())?;
        // The far side's processes carry the bridge's token and one of their own after it, so
        // the wrapper's sweep (and a test) finds them by a mark no local process has, not even
        // the launcher (on a loopback host the sweep must not kill it).
        let remote_token = crate::supervisor::fresh_token_text().map_err(LauncherError::NoRandomness)?;
        let containment = format!("{CONTAINMENT_VALUE_ARG},{remote_token}");
        let with_token = |word: &OsString| match word.to_str() {
            Some(text) if text.contains(CONTAINMENT_VALUE_ARG) => {
                OsString::from(text.replace(CONTAINMENT_VALUE_ARG, &containment))
            }
            _ => word.clone(),
        };
        let mut words: Vec<OsString> = vec!["sh".into(), "-c".into(), WRAPPER_SCRIPT.into(), WRAPPER_NAME.into()];
        words.push(containment.clone().into());
        words.push(local.cwd.clone().map(PathBuf::into_os_string).unwrap_or_default());
        words.push(local.program.clone().into_os_string());
        words.extend(local.args.iter().map(with_token));
        let mut args = self.argv[1..].to_vec();
        args.extend(self.remote_words(words));
        let spec = CommandSpec { program: launcher_program.to_path_buf(), args, cwd: None, env: launcher_env() };
        Ok(RemoteCommand { spec, preamble, remote_token })
    }
}

/// What the launcher process itself gets from the bridge's environment.
fn launcher_env() -> EnvPolicy {
    let mut env = EnvPolicy::default();
    env.inherit.extend(LAUNCHER_INHERIT.iter().map(|name| (*name).to_string()));
    env
}

/// The agent's variables as the wrapper's stdin block: `NAME=VALUE` lines, `-NAME` to unset, an
/// empty line at the end.
fn preamble_for(
    env: &EnvPolicy,
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<StdinPreamble, LauncherError> {
    let defaults = |name: &OsStr| DEFAULT_INHERIT.iter().any(|default| OsStr::new(default) == name);
    let set_here = |name: &OsStr| env.set.iter().any(|(set, _)| set == name);
    // The far side's own PATH, HOME, locale… are its own; only what the backend chose travels.
    let wanted = env.build(parent).into_iter().filter(|(name, _)| set_here(name) || !defaults(name));
    let mut block = Vec::new();
    for (name, value) in wanted {
        if name == CONTAINMENT_VAR {
            continue; // the wrapper sets it from its own argument
        }
        let name_text = checked_name(&name)?;
        if value.as_bytes().iter().any(|b| *b == b'\n' || *b == 0) {
            return Err(LauncherError::BadValue { name: name_text.to_string() });
        }
        block.extend_from_slice(name_text.as_bytes());
        block.push(b'=');
        block.extend_from_slice(value.as_bytes());
        block.push(b'\n');
    }
    for name in env.remove.iter().filter(|name| !name.ends_with('*')) {
        block.push(b'-');
        block.extend_from_slice(checked_name(OsStr::new(name))?.as_bytes());
        block.push(b'\n');
    }
    block.push(b'\n');
    if block.len() > MAX_PREAMBLE_BYTES {
        return Err(LauncherError::TooLarge { bytes: block.len(), limit: MAX_PREAMBLE_BYTES });
    }
    Ok(StdinPreamble::new(block))
}

/// `name` if `sh` can export it.
fn checked_name(name: &OsStr) -> Result<&str, LauncherError> {
    let bad = || LauncherError::BadName { name: name.to_string_lossy().into_owned() };
    let text = name.to_str().ok_or_else(bad)?;
    let mut bytes = text.bytes();
    let first_ok = bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_');
    if first_ok && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') { Ok(text) } else { Err(bad()) }
}

/// `word` quoted for a POSIX shell: bare when it holds only characters no shell treats specially,
/// else in single quotes, each `'` written as `'\''`; nothing inside is expanded. Bytes that are
/// not UTF-8 are kept as they are.
pub fn quote_word(word: &OsStr) -> OsString {
    let bytes = word.as_bytes();
    if !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(b)) {
        return word.to_os_string();
    }
    let mut quoted = vec![b'\''];
    for &byte in bytes {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    OsString::from_vec(quoted)
}

/// A command that runs an agent through a launcher.
#[derive(Debug)]
pub struct RemoteCommand {
    /// The launcher's command line, for the supervisor.
    pub spec: CommandSpec,
    /// What the wrapper reads on stdin before anything else: the agent's environment.
    pub preamble: StdinPreamble,
    /// The far side's own mark (the last token of its `CLAWBRIDGE_CONTAINMENT`), which no local
    /// process carries: how its processes are found there.
    pub remote_token: String,
}

/// A backend's remote launch: the launcher, and the agent's program on the far side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteSpec {
    /// The launcher prefix.
    pub launcher: Launcher,
    /// The agent's program there: a path, or a name the far side's PATH finds (no local lookup
    /// applies).
    pub program: OsString,
}

/// What a backend spawns for `command` and what goes on its stdin first: `command` itself when
/// there is no launcher; else the launcher (found here at `launcher_program`) running `command`
/// with the far side's program under the wrapper, its environment on stdin.
pub fn launch(
    remote: Option<&RemoteSpec>,
    launcher_program: &Path,
    command: CommandSpec,
) -> Result<(CommandSpec, Option<StdinPreamble>), LauncherError> {
    match remote {
        None => Ok((command, None)),
        Some(remote) => {
            let far = CommandSpec { program: remote.program.clone().into(), ..command };
            let wrapped = remote.launcher.wrap(launcher_program, &far)?;
            Ok((wrapped.spec, Some(wrapped.preamble)))
        }
    }
}

#[cfg(test)]
mod tests;
