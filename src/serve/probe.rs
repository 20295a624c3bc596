//! Finding backend executables and asking their `--version`, cached by the executable's identity.
//!
//! `serve` answers `initialize` only after probing every backend, and a CLI's `--version` costs tens
//! of milliseconds (Node start-up for some). The answer cannot change while the file does not, so it
//! is kept in `<state>/serve/version-cache.json` keyed by the resolved path, size and modification
//! time; a restarted bridge (every `openclaw agent` run starts one) reads it instead of running them.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The cache file and what it held at start-up, plus what this run learned.
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
    /// Loads the cache under `state_dir` (an unreadable or damaged cache is just empty).
    pub fn open(state_dir: Option<&Path>) -> VersionProbe {
        let file = state_dir.map(|dir| dir.join("serve").join("version-cache.json"));
        let entries = file
            .as_deref()
            .and_then(|f| std::fs::read(f).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        VersionProbe { file, entries: Mutex::new(entries), dirty: Mutex::new(false) }
    }

    /// What `program --version` prints (trimmed stdout), from the cache while the file is unchanged.
    /// Failures (a non-zero exit, no answer within `limit`) are never cached.
    pub async fn version_output(&self, program: &Path, env_remove: &[&str], limit: Duration) -> Result<String, String> {
        let key = std::fs::canonicalize(program).unwrap_or_else(|_| program.to_path_buf()).display().to_string();
        let identity = identity(program);
        if let Some(identity) = identity {
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(hit) = entries.get(&key).filter(|hit| hit.identity == identity) {
                return Ok(hit.output.clone());
            }
        }
        let output = run_version(program, env_remove, limit).await?;
        if let Some(identity) = identity {
            let entry = CachedVersion { identity, output: output.clone() };
            self.entries.lock().unwrap_or_else(|e| e.into_inner()).insert(key, entry);
            *self.dirty.lock().unwrap_or_else(|e| e.into_inner()) = true;
        }
        Ok(output)
    }

    /// Writes what this run learned (atomically: a temp file renamed over the old one). Best effort: a
    /// cache that cannot be written only costs the next start-up the probe.
    pub fn save(&self) {
        let Some(file) = &self.file else { return };
        if !*self.dirty.lock().unwrap_or_else(|e| e.into_inner()) {
            return;
        }
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")))?;
            let temp = file.with_extension(format!("json.{}", std::process::id()));
            std::fs::write(&temp, serde_json::to_vec(&entries).unwrap_or_default())?;
            std::fs::rename(&temp, file)
        };
        if let Err(error) = write() {
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

async fn run_version(program: &Path, env_remove: &[&str], limit: Duration) -> Result<String, String> {
    let mut command = tokio::process::Command::new(program);
    command.arg("--version").stdin(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    for name in env_remove {
        command.env_remove(OsStr::new(name));
    }
    let shown = program.display();
    match tokio::time::timeout(limit, command.kill_on_drop(true).output()).await {
        Ok(Ok(out)) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
        Ok(Ok(out)) => Err(format!("`{shown} --version` failed ({})", out.status)),
        Ok(Err(e)) => Err(format!("cannot run `{shown} --version`: {e}")),
        Err(_) => Err(format!("`{shown} --version` did not answer within {limit:?}")),
    }
}

/// `name` itself when it has a directory part, else the first match on `PATH`.
pub fn find_program(name: &Path) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.components().count() > 1 || name.is_absolute() {
        return executable(name).then(|| name.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| executable(p))
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

        let first = VersionProbe::open(Some(state.path()));
        assert_eq!(first.version_output(&tool, &[], limit).await.unwrap(), "tool 1.2.3");
        first.save();
        let second = VersionProbe::open(Some(state.path()));
        assert_eq!(second.version_output(&tool, &[], limit).await.unwrap(), "tool 1.2.3");
        assert_eq!(runs(), 1, "a restarted bridge reads the cache");

        // A replaced executable (another size) is asked again.
        script(bin.path(), &format!("echo run >> '{}'\necho 'tool 1.2.40'", counter.display()));
        assert_eq!(second.version_output(&tool, &[], limit).await.unwrap(), "tool 1.2.40");
        assert_eq!(runs(), 2);

        script(bin.path(), "exit 3");
        let failing = VersionProbe::open(Some(state.path()));
        assert!(failing.version_output(&tool, &[], limit).await.unwrap_err().contains("failed"));
        assert!(failing.version_output(&tool, &[], limit).await.is_err(), "a failure is not cached");
    }

    #[test]
    fn a_damaged_cache_is_ignored() {
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(state.path().join("serve")).unwrap();
        std::fs::write(state.path().join("serve/version-cache.json"), "{not json").unwrap();
        let probe = VersionProbe::open(Some(state.path()));
        assert!(probe.entries.lock().unwrap().is_empty());
    }
}
