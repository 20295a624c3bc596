use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::containment::{
    self, AgentCgroup, CONTAINMENT_VALUE_ARG, CONTAINMENT_VAR, Containment, Escaped, Marks, Token,
};
use super::env::EnvPolicy;
use super::group::{group_alive, signal_group};
use super::registry::{PidRegistry, Registration, RegistryError};
use super::stderr::{DEFAULT_STDERR_TAIL_BYTES, StderrTail};
use crate::exit::ExitState;

/// What to run.
#[derive(Clone, Debug)]
pub struct CommandSpec {
    /// The executable: a path, or a name looked up on the bridge's PATH.
    pub program: PathBuf,
    /// Its arguments. An argument containing [`CONTAINMENT_VALUE_ARG`] gets the agent's
    /// [`CONTAINMENT_VAR`] value in its place (for an agent that passes the variable on to its own
    /// tool commands only when told on its command line, as Codex's shell environment policy).
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
    /// How descendants that leave the process group are found: with a cgroup where the machine
    /// allows it, or by the environment token alone (tests force this to prove the fallback).
    /// The default follows `CLAWBRIDGE_CGROUPS`.
    pub containment: Containment,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        Self {
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            die_with_bridge: true,
            registry: None,
            containment: Containment::from_env(),
        }
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
    /// There was no process of ours to stop: the agent was reached over a connection and runs on.
    NotOwned,
}

/// What a stop did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StopOutcome {
    /// When the group was gone.
    pub stage: StopStage,
    /// The direct child's exit, if it was reaped.
    pub exit: Option<ExitState>,
    /// Descendants that had left the process group (`setsid`, a double fork) and were still
    /// running after it was gone: found by cgroup or token and SIGKILLed after the staged stop.
    pub outside_group: usize,
    /// The same descendants by the mark that found them.
    pub escaped: Escaped,
}

impl StopOutcome {
    /// The stop of a connection that owned no process.
    pub fn not_owned() -> Self {
        StopOutcome { stage: StopStage::NotOwned, exit: None, outside_group: 0, escaped: Escaped::default() }
    }
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
    /// The OS gave no randomness for the child's containment token.
    #[error("no randomness for the containment token")]
    NoRandomness(#[source] getrandom::Error),
    /// The pid record could not be written before the spawn; the agent was not started, since
    /// nothing could find what it leaves if this bridge crashed.
    // The whole cause is in the message (not a `#[source]`): callers that show one line (serve's
    // preflight error) must still name the path and the OS error.
    #[error("could not record `{program}` in the pid registry before starting it: {}", registry_error_text(.record))]
    Record {
        /// The program as configured.
        program: String,
        /// Why: the record's path and the OS error.
        record: RegistryError,
    },
}

/// A registry error and its causes on one line.
fn registry_error_text(error: &RegistryError) -> String {
    containment::error_chain(error)
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
    registration: Option<Registration>,
    /// In the environment of the child and of every descendant that kept it: finds those that
    /// left the group.
    token: Token,
    /// The child's own cgroup, when the machine allowed one: finds every descendant.
    cgroup: Option<AgentCgroup>,
    /// Set once nothing outside the group was left (and the cgroup was removed), so drop has
    /// nothing more to kill.
    descendants_gone: bool,
    /// For logs.
    label: String,
}

/// Set once the reason cgroups are not used was logged, so a bridge that spawns many agents says
/// it once. A cgroup that was made but not joined is not this: it is warned about every time.
static CGROUP_FALLBACK_LOGGED: AtomicBool = AtomicBool::new(false);

fn log_cgroup_fallback(why: &str) {
    if !CGROUP_FALLBACK_LOGGED.swap(true, Ordering::Relaxed) {
        tracing::debug!(why, "no cgroup per agent; descendants that leave the group are found by their token");
    }
}

impl ChildProcess {
    /// Starts `spec` in its own process group with piped stdio.
    pub fn spawn(spec: &CommandSpec, options: SpawnOptions) -> Result<ChildProcess, SpawnError> {
        let label = spec.label();
        let token = Token::fresh().map_err(SpawnError::NoRandomness)?;
        let cgroup = match options.containment {
            Containment::CgroupWhereAvailable => {
                AgentCgroup::create().inspect_err(|e| log_cgroup_fallback(&containment::error_chain(e))).ok()
            }
            Containment::TokenOnly => None,
        };
        // Recorded before anything runs: a bridge killed from here on leaves a record that names
        // the token and cgroup of whatever it started.
        let mut registration = match options.registry.as_ref().map(|registry| {
            registry.record_before_spawn(&token, cgroup.as_ref().map(AgentCgroup::dir), &spec.program, &spec.args)
        }) {
            None => None,
            Some(Ok(registration)) => Some(registration),
            Some(Err(source)) => {
                if let Some(cgroup) = &cgroup {
                    containment::remove(cgroup.dir());
                }
                return Err(SpawnError::Record { program: spec.program.display().to_string(), record: source });
            }
        };
        let mut env = spec.env.build(std::env::vars_os());
        // Set by the bridge, never removed by a policy: it is how descendants are found. The
        // tokens of the bridges this one runs under stay in front of its own.
        let containment_value = token.env_value(std::env::var_os(CONTAINMENT_VAR).as_deref());
        env.insert(CONTAINMENT_VAR.into(), containment_value.clone().into());
        let args = spec.args.iter().map(|arg| match arg.to_str() {
            Some(text) if text.contains(CONTAINMENT_VALUE_ARG) => {
                OsString::from(text.replace(CONTAINMENT_VALUE_ARG, &containment_value))
            }
            _ => arg.clone(),
        });
        let mut command = Command::new(&spec.program);
        command
            .args(args)
            .env_clear()
            .envs(env)
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
        if let Some(cgroup) = &cgroup {
            let procs = cgroup.procs_path().clone();
            // SAFETY: the closure only opens, writes and closes a path made before the fork
            // (`containment::join_in_child`), all async-signal-safe, without allocating.
            #[expect(unsafe_code, reason = "a pre-exec hook is unsafe by definition; see SAFETY above")]
            unsafe {
                command.pre_exec(move || {
                    containment::join_in_child(&procs);
                    Ok(())
                });
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(source) => {
                if let Some(cgroup) = &cgroup {
                    containment::remove(cgroup.dir());
                }
                return Err(SpawnError::Io { program: spec.program.display().to_string(), source });
            }
        };
        let Some(pid) = child.id() else {
            // Only a child already reaped has no id, and this one was never waited for.
            return Err(SpawnError::Io {
                program: spec.program.display().to_string(),
                source: std::io::Error::other("the spawned child has no pid"),
            });
        };
        if let Some(registration) = registration.as_mut() {
            if let Err(e) = registration.spawned(pid as i32) {
                tracing::warn!(pid, error = %e, "could not record the child's pid; its token and cgroup are recorded");
            }
        }
        let cgroup = cgroup.and_then(|cgroup| {
            // The hook cannot report a failed join; the parent sees it here. A child that already
            // exited is no member either, but then its cgroup may hold what it left: kept.
            if cgroup.contains(pid as i32) || !containment::remove(cgroup.dir()) {
                return Some(cgroup);
            }
            tracing::warn!(
                pid,
                cgroup = %cgroup.dir().display(),
                "the agent is not in the cgroup made for it (it could not join, or already exited); \
                 descendants that leave its group are found by their token alone"
            );
            if let Some(registration) = registration.as_mut() {
                let _ = registration.without_cgroup();
            }
            None
        });
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = StderrTail::drain(stderr_pipe, options.stderr_tail_bytes, format!("{label}[{pid}]"));

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
        tracing::debug!(
            pid,
            program = %spec.program.display(),
            cgroup = ?cgroup.as_ref().map(AgentCgroup::dir),
            "spawned child in its own process group"
        );
        Ok(ChildProcess {
            pid,
            stdin,
            stdout,
            exit,
            stderr,
            group_gone: false,
            registration,
            token,
            cgroup,
            descendants_gone: false,
            label,
        })
    }

    /// The child's pid (also its process-group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The child's own cgroup, when it has one (it joined before exec).
    pub fn cgroup(&self) -> Option<&std::path::Path> {
        self.cgroup.as_ref().map(AgentCgroup::dir)
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
        let exited = self.try_exit().is_some();
        let stage = if exited && !tokio::task::spawn_blocking(move || group_alive(pgid)).await.unwrap_or(true) {
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
        let (escaped, all_gone) = self.kill_outside_group(policy.after_sigkill).await;
        let stage = if all_gone { stage } else { StopStage::Unkillable };
        if stage == StopStage::Unkillable
            && let Some(registration) = self.registration.as_mut()
        {
            registration.keep(true);
        }
        StopOutcome { stage, exit: self.try_exit(), outside_group: escaped.total(), escaped }
    }

    /// The marks of what left the group: the cgroup and the token, with the group to tell apart
    /// what the group's signals already reach.
    fn marks(&self) -> Marks {
        Marks {
            group: Some(containment::GroupMark { pgid: self.pid as i32, started_since: None }),
            token: Some(self.token.clone()),
            cgroup: self.cgroup.as_ref().map(|c| c.dir().to_path_buf()),
        }
    }

    /// After the staged stop: SIGKILLs what left the group (the cgroup at once, the token
    /// carriers stopped first, then killed), off the runtime's threads, for up to `limit`; then
    /// removes the cgroup. Returns what was found and whether everything is gone.
    async fn kill_outside_group(&mut self, limit: Duration) -> (Escaped, bool) {
        let marks = self.marks();
        let deadline = tokio::time::Instant::now() + limit;
        // A kill task that failed (it panicked, or the runtime is shutting down) proves nothing is
        // gone: count a survivor, so the record stays for the next reap.
        let report = tokio::task::spawn_blocking(move || containment::kill_escaped(&marks, false, limit))
            .await
            .unwrap_or(containment::KillReport { survivors: 1, ..containment::KillReport::default() });
        if report.escaped.total() > 0 {
            tracing::info!(
                child = %self.label,
                pid = self.pid,
                by_cgroup = report.escaped.by_cgroup,
                by_token = report.escaped.by_token,
                "killed descendants that left the process group"
            );
        }
        if report.survivors > 0 {
            tracing::warn!(child = %self.label, pid = self.pid, survivors = report.survivors, "descendants outside the process group survived SIGKILL");
            return (report.escaped, false);
        }
        let mut wait = containment::FIRST_POLL;
        loop {
            if self.cgroup.as_ref().is_none_or(|cgroup| containment::remove(cgroup.dir())) {
                self.descendants_gone = true;
                return (report.escaped, true);
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(child = %self.label, pid = self.pid, "the agent's cgroup could not be removed");
                return (report.escaped, false);
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(containment::MAX_POLL);
        }
    }

    async fn wait_group_gone(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        let mut exit = self.exit.clone();
        // Reaping the child is event-driven; the rest of the group can only be polled (a walk
        // over /proc, off the runtime's threads).
        if tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await.is_err() {
            return false;
        }
        let pgid = self.pid as i32;
        let mut wait = containment::FIRST_POLL;
        loop {
            if !tokio::task::spawn_blocking(move || group_alive(pgid)).await.unwrap_or(true) {
                return true;
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return false;
            }
            tokio::time::sleep(wait.min(deadline - now)).await;
            wait = (wait * 2).min(containment::MAX_POLL);
        }
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !self.group_gone && signal_group(self.pid as i32, Signal::SIGKILL) {
            tracing::debug!(child = %self.label, pid = self.pid, "handle dropped: killed the process group");
        }
        if self.descendants_gone {
            return;
        }
        // What left the group is killed off the runtime's threads (it walks /proc); the record
        // stays until all of it is gone and the cgroup removed, and for good if anything
        // survived, so a crash meanwhile, or the next reap, still finds it.
        let marks = self.marks();
        let cgroup = self.cgroup.take();
        let mut registration = self.registration.take();
        // Kept unless `finish` runs and sees everything gone: a runtime shutting down may drop
        // the blocking task without running it.
        if let Some(registration) = registration.as_mut() {
            registration.keep(true);
        }
        let label = std::mem::take(&mut self.label);
        let finish = move || {
            let report = containment::kill_escaped(&marks, false, DROP_SETTLE);
            let deadline = std::time::Instant::now() + DROP_SETTLE;
            let mut wait = containment::FIRST_POLL;
            let removed = loop {
                match &cgroup {
                    None => break true,
                    Some(cgroup) if containment::remove(cgroup.dir()) => break true,
                    Some(_) if std::time::Instant::now() >= deadline => break false,
                    Some(_) => std::thread::sleep(wait),
                }
                wait = (wait * 2).min(containment::MAX_POLL);
            };
            let remains = report.survivors > 0 || !removed;
            if remains {
                tracing::warn!(child = %label, survivors = report.survivors, removed, "a dropped agent's descendants or cgroup remain");
            }
            // Also when an unkillable stop kept it: what was left then is gone now.
            if let Some(registration) = registration.as_mut() {
                registration.keep(remains);
            }
            drop(registration);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(finish)),
            Err(_) => finish(),
        }
    }
}

/// How long a dropped child's descendants get to die, and then its cgroup to empty, before they
/// are left to the next reap.
const DROP_SETTLE: Duration = Duration::from_secs(5);

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
    // `from_raw_os_error`, never `io::Error::other`: between fork and exec nothing may allocate.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
    // The bridge may have died between fork and prctl; then the signal would never come.
    if nix::unistd::getppid().as_raw() as u32 != bridge_pid {
        return Err(std::io::Error::from_raw_os_error(nix::libc::ESRCH));
    }
    Ok(())
}
