use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::env::EnvPolicy;
use super::group::{group_alive, signal_group};
use super::registry::{PidRegistry, Registration};
use super::stderr::{DEFAULT_STDERR_TAIL_BYTES, StderrTail};
use crate::exit::ExitState;

/// What to run.
#[derive(Clone, Debug)]
pub struct CommandSpec {
    /// The executable: a path, or a name looked up on the bridge's PATH.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Its working directory; the bridge's own when `None`.
    pub cwd: Option<PathBuf>,
    /// How its environment is built from the bridge's.
    pub env: EnvPolicy,
}

impl CommandSpec {
    /// A command with the default environment policy.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self { program: program.into(), args: Vec::new(), cwd: None, env: EnvPolicy::default() }
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// A short label for logs: the program's file name and pid are enough to find it.
    fn label(&self) -> String {
        self.program.file_name().unwrap_or(self.program.as_os_str()).to_string_lossy().into_owned()
    }
}

/// Knobs that are about supervision rather than about the command.
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    /// How much stderr to keep for error reports.
    pub stderr_tail_bytes: usize,
    /// Ask the kernel to SIGKILL the child if the bridge dies (Linux `PR_SET_PDEATHSIG`). The signal
    /// fires when the spawning *thread* exits, so only spawn from long-lived runtime threads (never
    /// from `spawn_blocking`) with this on.
    pub die_with_bridge: bool,
    /// Where to record the child so a restarted bridge can reap it after a crash.
    pub registry: Option<PidRegistry>,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        Self { stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES, die_with_bridge: true, registry: None }
    }
}

/// The graces of the staged stop.
#[derive(Clone, Copy, Debug)]
pub struct StopPolicy {
    /// How long a child gets to exit by itself after its stdin closes.
    pub after_stdin_close: Duration,
    /// How long the group gets after SIGTERM.
    pub after_sigterm: Duration,
    /// How long to wait for the kernel after SIGKILL before reporting the group as unkillable.
    pub after_sigkill: Duration,
}

impl Default for StopPolicy {
    fn default() -> Self {
        Self {
            after_stdin_close: Duration::from_secs(3),
            after_sigterm: Duration::from_secs(3),
            after_sigkill: Duration::from_secs(2),
        }
    }
}

/// The stage at which the whole group was gone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopStage {
    /// Everything had already exited before the stop began.
    AlreadyExited,
    /// The child exited on stdin EOF and left no other process in its group.
    StdinClosed,
    /// SIGTERM to the group was needed.
    Terminated,
    /// SIGKILL to the group was needed.
    Killed,
    /// Members survived even SIGKILL (uninterruptible sleep); they are gone as soon as the kernel lets them.
    Unkillable,
}

/// What a stop did.
#[derive(Clone, Debug)]
pub struct StopOutcome {
    /// When the group was gone.
    pub stage: StopStage,
    /// The direct child's exit, if it was reaped.
    pub exit: Option<ExitState>,
}

/// Why a spawn failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpawnError {
    /// The OS refused to start the program (not found, not executable, …).
    #[error("could not start `{program}`")]
    Io {
        /// The program as configured.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// A running (or finished) native agent and its process group.
///
/// Dropping it SIGKILLs the group unless a stop already saw the group gone.
#[derive(Debug)]
pub struct ChildProcess {
    /// The child's pid, which is also its process-group id (it leads its own group).
    pid: u32,
    /// Taken by the transport; if still here at stop time, dropping it is the "close stdin" stage.
    stdin: Option<ChildStdin>,
    /// Taken by the transport.
    stdout: Option<ChildStdout>,
    /// Becomes `Some` when the waiter task reaped the child.
    exit: watch::Receiver<Option<ExitState>>,
    /// The continuously drained stderr.
    stderr: StderrTail,
    /// Set once a stop saw no live member left, so drop does not signal a group id that may be reused.
    group_gone: bool,
    /// Removes the child's registry record when dropped.
    _registration: Option<Registration>,
    /// For logs.
    label: String,
}

impl ChildProcess {
    /// Starts `spec` in its own process group with piped stdio.
    pub fn spawn(spec: &CommandSpec, options: SpawnOptions) -> Result<ChildProcess, SpawnError> {
        let label = spec.label();
        let mut command = Command::new(&spec.program);
        command
            .args(&spec.args)
            .env_clear()
            .envs(spec.env.build(std::env::vars_os()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        if options.die_with_bridge {
            // SAFETY: the closure runs between fork and exec and only makes async-signal-safe
            // syscalls (prctl, getppid, _exit).
            let bridge_pid = std::process::id();
            #[expect(unsafe_code, reason = "a pre-exec hook is unsafe by definition; see SAFETY above")]
            unsafe {
                command.pre_exec(move || die_with_parent(bridge_pid));
            }
        }
        let mut child =
            command.spawn().map_err(|source| SpawnError::Io { program: spec.program.display().to_string(), source })?;
        let pid = child.id().expect("a just-spawned child has a pid");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = StderrTail::drain(stderr_pipe, options.stderr_tail_bytes, format!("{label}[{pid}]"));
        let registration = options.registry.as_ref().and_then(|registry| {
            registry
                .register(pid as i32, &spec.program, &spec.args)
                .inspect_err(|e| tracing::warn!(pid, error = %e, "could not record the child for orphan reaping"))
                .ok()
        });

        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let state = match child.wait().await {
                Ok(status) => ExitState::from(status),
                Err(e) => {
                    tracing::warn!(pid, error = %e, "waiting for the child failed");
                    ExitState::Code(-1)
                }
            };
            let _ = exit_tx.send(Some(state));
        });
        tracing::debug!(pid, program = %spec.program.display(), "spawned child in its own process group");
        Ok(ChildProcess { pid, stdin, stdout, exit, stderr, group_gone: false, _registration: registration, label })
    }

    /// The child's pid (also its process-group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The pipe to the child's stdin, for the transport. Close it by dropping it.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The pipe from the child's stdout, for the transport.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// The child's stderr tail.
    pub fn stderr(&self) -> &StderrTail {
        &self.stderr
    }

    /// The exit, if the child was already reaped.
    pub fn try_exit(&self) -> Option<ExitState> {
        *self.exit.borrow()
    }

    /// Waits for the child to exit.
    pub async fn wait(&self) -> ExitState {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(state) => state.expect("wait_for returned a Some"),
            // The waiter task only drops its sender after sending.
            Err(_) => self.try_exit().unwrap_or(ExitState::Code(-1)),
        }
    }

    /// A cloneable view of the child's end, for reporting why a peer went away.
    pub fn exit_watch(&self) -> ExitWatch {
        ExitWatch { exit: self.exit.clone(), stderr: self.stderr.clone() }
    }

    /// Sends `signal` to the child's whole group. False if the group is gone.
    pub fn signal_group(&self, signal: Signal) -> bool {
        signal_group(self.pid as i32, signal)
    }

    /// The staged stop: close stdin → grace → SIGTERM the group → grace → SIGKILL the group → reap.
    ///
    /// A transport that took stdin must close it before calling this (see [`crate::connection`]).
    /// Every stage waits for the child to be reaped *and* for its group to be empty, so a grandchild
    /// holding the pipes does not survive a child that exited politely.
    pub async fn stop(&mut self, policy: StopPolicy) -> StopOutcome {
        let pgid = self.pid as i32;
        let stage = if self.try_exit().is_some() && !group_alive(pgid) {
            StopStage::AlreadyExited
        } else {
            self.stdin.take();
            if self.wait_group_gone(policy.after_stdin_close).await {
                StopStage::StdinClosed
            } else {
                tracing::debug!(child = %self.label, pid = self.pid, "still running after stdin closed; sending SIGTERM to the group");
                signal_group(pgid, Signal::SIGTERM);
                if self.wait_group_gone(policy.after_sigterm).await {
                    StopStage::Terminated
                } else {
                    tracing::info!(child = %self.label, pid = self.pid, "ignored SIGTERM; sending SIGKILL to the group");
                    signal_group(pgid, Signal::SIGKILL);
                    if self.wait_group_gone(policy.after_sigkill).await {
                        StopStage::Killed
                    } else {
                        StopStage::Unkillable
                    }
                }
            }
        };
        if stage == StopStage::Unkillable {
            tracing::warn!(child = %self.label, pid = self.pid, "members of the process group survived SIGKILL");
        } else {
            self.group_gone = true;
        }
        StopOutcome { stage, exit: self.try_exit() }
    }

    async fn wait_group_gone(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let mut exit = self.exit.clone();
        // Reaping the child is event-driven; the rest of the group can only be polled.
        if tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await.is_err() {
            return false;
        }
        loop {
            if !group_alive(self.pid as i32) {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !self.group_gone && signal_group(self.pid as i32, Signal::SIGKILL) {
            tracing::debug!(child = %self.label, pid = self.pid, "handle dropped: killed the process group");
        }
    }
}

/// How a child ended and what it last said on stderr; cheap to clone into error paths.
#[derive(Clone, Debug)]
pub struct ExitWatch {
    /// Becomes `Some` when the child is reaped.
    exit: watch::Receiver<Option<ExitState>>,
    /// The child's stderr tail.
    stderr: StderrTail,
}

impl ExitWatch {
    /// Resolves once the child has been reaped.
    pub async fn exited(&self) {
        let mut exit = self.exit.clone();
        // An error means the waiter task is gone, which happens only after it published the exit.
        let _ = exit.wait_for(Option::is_some).await;
    }

    /// Waits up to `limit` for the child to exit and its stderr to reach EOF, then returns the exit
    /// (if it happened) and the stderr tail. Used when stdout closes: the exit status usually
    /// follows within milliseconds, but a child may also close stdout and keep running.
    pub async fn report(&self, limit: Duration) -> (Option<ExitState>, String) {
        let deadline = tokio::time::Instant::now() + limit;
        let mut exit = self.exit.clone();
        let state = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(|r| r.ok().and_then(|s| *s));
        // stderr reaches EOF right after the exit unless a grandchild holds it: only then is the
        // rest of the budget spent, and the crash message is not lost to a late-scheduled drain.
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        self.stderr.settle(remaining).await;
        (state, self.stderr.snapshot())
    }
}

/// Runs in the forked child before exec.
fn die_with_parent(bridge_pid: u32) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
    // The bridge may have died between fork and prctl; then the signal would never come.
    if nix::unistd::getppid().as_raw() as u32 != bridge_pid {
        return Err(std::io::Error::other("the bridge exited while spawning"));
    }
    Ok(())
}
