//! Finding backend executables and asking their `--version`: the one way every backend's version
//! gate reads the version its executable reports, cached by the executable's identity.
//!
//! `serve` answers `initialize` only after probing every backend, and a CLI's `--version` costs tens
//! of milliseconds (Node start-up for some). The answer cannot change while the file does not, so it
//! can be kept in a cache file keyed by the resolved path, the arguments, size and modification
//! time; a restarted bridge (every `openclaw agent` run starts one) reads it instead of running them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use tokio::io::AsyncReadExt;

use crate::exit::ExitState;
use crate::supervisor::{ChildProcess, CommandSpec, Containment, SpawnError, SpawnOptions, StopPolicy};

/// Why a `--version` probe produced no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// The executable could not be started.
    #[error("cannot run `{program} --version`: {source}")]
    Run {
        /// The program as given.
        program: String,
        /// Why the supervisor could not start it.
        #[source]
        source: SpawnError,
    },
    /// It ran and exited unsuccessfully.
    #[error("`{program} --version` failed ({status})")]
    Failed {
        /// The program as given.
        program: String,
        /// How it exited.
        status: ExitState,
    },
    /// It gave no answer in time (and was killed).
    #[error("`{program} --version` did not answer within {limit:?}")]
    TimedOut {
        /// The program as given.
        program: String,
        /// How long it had.
        limit: Duration,
    },
}

/// The cache file and what it held at start-up, plus what this run learned.
#[derive(Debug)]
pub struct VersionProbe {
    /// Where the cache lives; `None` keeps it in memory only (no state dir).
    file: Option<PathBuf>,
    /// `--version` outputs by executable identity.
    entries: Mutex<BTreeMap<String, CachedVersion>>,
    /// Whether `entries` changed since it was loaded.
    dirty: Mutex<bool>,
}

/// One cached answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CachedVersion {
    /// Size and mtime (ns) of the executable when it answered: a changed file asks again.
    identity: (u64, u128),
    /// What `--version` printed on stdout, trimmed.
    output: String,
}

impl VersionProbe {
    /// A probe that remembers answers for its own lifetime only.
    pub fn in_memory() -> VersionProbe {
        VersionProbe { file: None, entries: Mutex::default(), dirty: Mutex::new(false) }
    }

    /// Loads the cache `file` (an unreadable or damaged cache is just empty).
    pub fn open(file: PathBuf) -> VersionProbe {
        let entries =
            std::fs::read(&file).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default();
        VersionProbe { file: Some(file), entries: Mutex::new(entries), dirty: Mutex::new(false) }
    }

    /// What `command` (the program with its launcher arguments; `--version` is appended) prints on
    /// stdout, trimmed, from the cache while the executable is unchanged. It runs with the
    /// environment `command.env` builds from the bridge's, like the sessions it gates. Failures (a
    /// non-zero exit, no answer within `limit`) are never cached. It is contained as `containment`
    /// says, like the sessions it gates (the configured `containment.cgroups`, not the variable).
    pub async fn version_output(
        &self,
        command: &CommandSpec,
        limit: Duration,
        containment: Containment,
    ) -> Result<String, ProbeError> {
        let program = &command.program;
        let resolved = std::fs::canonicalize(program).unwrap_or_else(|_| program.clone());
        let mut key = resolved.display().to_string();
        for arg in &command.args {
            key.push(' ');
            key.push_str(&arg.to_string_lossy());
        }
        let identity = identity(program);
        if let Some(identity) = identity {
            let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(hit) = entries.get(&key).filter(|hit| hit.identity == identity) {
                return Ok(hit.output.clone());
            }
        }
        let output = run_version(command, limit, containment).await?;
        if let Some(identity) = identity {
            let entry = CachedVersion { identity, output: output.clone() };
            self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, entry);
            *self.dirty.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
        }
        Ok(output)
    }

    /// Writes what this run learned (atomically: a temp file renamed over the old one). Best effort: a
    /// cache that cannot be written only costs the next start-up the probe.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        if !*self.dirty.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            return;
        }
        let entries = self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Err(error) = crate::state_files::replace(file, &serde_json::to_vec(&entries).unwrap_or_default()) {
            tracing::debug!(%error, file = %file.display(), "could not save the version cache");
        }
    }
}

/// Size and modification time of the file `program` resolves to.
fn identity(program: &Path) -> Option<(u64, u128)> {
    let meta = std::fs::metadata(program).ok()?;
    let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some((meta.len(), mtime))
}

/// The most of a `--version` answer read; a version line is tens of bytes.
const MAX_VERSION_OUTPUT: u64 = 64 << 10;

/// How long the probe's process and what it started get to go once the answer is read.
const PROBE_STOP: StopPolicy = StopPolicy {
    after_stdin_close: Duration::from_millis(500),
    after_sigterm: Duration::from_millis(500),
    after_sigkill: Duration::from_secs(2),
};

/// Runs `<program> <args> --version` through the supervisor, like the sessions it gates: its own
/// group, the containment token and cgroup, and the staged stop afterwards, so a `--version` that
/// leaves something running (`setsid`, a daemon) does not leave it behind.
async fn run_version(spec: &CommandSpec, limit: Duration, containment: Containment) -> Result<String, ProbeError> {
    let program = spec.program.display().to_string();
    let mut spec = spec.clone();
    spec.args.push("--version".into());
    let mut child = ChildProcess::spawn(&spec, SpawnOptions { containment, ..SpawnOptions::default() })
        .map_err(|source| ProbeError::Run { program: program.clone(), source })?;
    drop(child.take_stdin());
    let stdout = child.take_stdout();
    let answer = tokio::time::timeout(limit, async {
        let mut output = Vec::new();
        if let Some(stdout) = stdout {
            // A read error ends the answer like EOF: what was read is all there is.
            let _ = stdout.take(MAX_VERSION_OUTPUT).read_to_end(&mut output).await;
        }
        (output, child.wait().await)
    })
    .await;
    let result = match answer {
        Ok((output, status)) if status.success() => Ok(String::from_utf8_lossy(&output).trim().to_owned()),
        Ok((_, status)) => Err(ProbeError::Failed { program, status }),
        Err(_) => Err(ProbeError::TimedOut { program, limit }),
    };
    child.stop(PROBE_STOP).await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(dir: &Path, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("tool");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[tokio::test]
    async fn answers_are_cached_across_runs_until_the_executable_changes_and_failures_never() {
        let state = tempfile::tempdir().unwrap();
        let bin = tempfile::tempdir().unwrap();
        let counter = bin.path().join("runs");
        let tool = script(bin.path(), &format!("echo run >> '{}'\necho 'tool 1.2.3'", counter.display()));
        let runs = || std::fs::read_to_string(&counter).map_or(0, |s| s.lines().count());
        let limit = Duration::from_secs(10);

        let cache = state.path().join("version-cache.json");
        let spec = CommandSpec::new(&tool);
        let first = VersionProbe::open(cache.clone());
        assert_eq!(first.version_output(&spec, limit, Containment::from_env()).await.unwrap(), "tool 1.2.3");
        first.save();
        let second = VersionProbe::open(cache.clone());
        assert_eq!(second.version_output(&spec, limit, Containment::from_env()).await.unwrap(), "tool 1.2.3");
        assert_eq!(runs(), 1, "a restarted bridge reads the cache");

        // A replaced executable (another size) is asked again.
        script(bin.path(), &format!("echo run >> '{}'\necho 'tool 1.2.40'", counter.display()));
        assert_eq!(second.version_output(&spec, limit, Containment::from_env()).await.unwrap(), "tool 1.2.40");
        assert_eq!(runs(), 2);

        script(bin.path(), "exit 3");
        let failing = VersionProbe::open(cache.clone());
        assert!(
            failing
                .version_output(&spec, limit, Containment::from_env())
                .await
                .unwrap_err()
                .to_string()
                .contains("failed")
        );
        assert!(
            failing.version_output(&spec, limit, Containment::from_env()).await.is_err(),
            "a failure is not cached"
        );
    }

    /// A `--version` that leaves a descendant in a session of its own: the probe's stop ends it.
    #[tokio::test]
    async fn a_version_probe_leaves_nothing_running() {
        let bin = tempfile::tempdir().unwrap();
        let pid_file = bin.path().join("escaped.pid");
        let tool = script(
            bin.path(),
            &format!(
                // It answers only once the descendant runs: a stop that ends it before it wrote its
                // pid would leave the test nothing to check.
                "setsid sh -c 'echo $$ > {0}; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
                 while [ ! -s {0} ]; do sleep 0.01; done\necho 'tool 9.9.9'",
                pid_file.display()
            ),
        );
        let probe = VersionProbe::in_memory();
        let answer = probe
            .version_output(&CommandSpec::new(&tool), Duration::from_secs(10), Containment::from_env())
            .await
            .unwrap();
        assert_eq!(answer, "tool 9.9.9");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let escaped: i32 = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|t| t.trim().parse().ok()) {
                break pid;
            }
            assert!(std::time::Instant::now() < deadline, "the escaping descendant never started");
            std::thread::sleep(Duration::from_millis(10));
        };
        let alive = || {
            std::fs::read_to_string(format!("/proc/{escaped}/stat"))
                .is_ok_and(|stat| !matches!(stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]), Some("Z" | "X")))
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while alive() {
            if std::time::Instant::now() >= deadline {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(escaped), nix::sys::signal::Signal::SIGKILL);
                panic!("the --version probe left pid {escaped} running");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn a_damaged_cache_is_ignored() {
        let state = tempfile::tempdir().unwrap();
        let cache = state.path().join("version-cache.json");
        std::fs::write(&cache, "{not json").unwrap();
        let probe = VersionProbe::open(cache);
        assert!(probe.entries.lock().unwrap().is_empty());
    }
}
