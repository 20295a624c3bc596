//! The bridge's own checks: the state dir is ours and writable (through the same
//! `state_files` functions every state write uses), and where the log file is.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use clawbridge_bridge::diagnose::Check;
use clawbridge_bridge::state_files;

use super::report::BridgeReport;

/// The file written and removed to prove the state dir takes writes.
const WRITE_PROBE: &str = ".doctor-write-test";

/// The state dir's and the log file's checks.
pub fn run(state_dir: &Path) -> BridgeReport {
    let log_file = crate::logfile::path_in(state_dir);
    BridgeReport {
        state_dir: state_dir.display().to_string(),
        log_file: log_file.display().to_string(),
        checks: vec![state_dir_check(state_dir), log_file_check(&log_file)],
    }
}

fn state_dir_check(dir: &Path) -> Check {
    let elsewhere = "or choose another with --state-dir / CLAWBRIDGE_STATE_DIR";
    if let Err(error) = state_files::create_dir_all(dir) {
        return Check::fail(
            "state-dir",
            format!("{}: cannot create: {error}", dir.display()),
            format!("create it yourself, {elsewhere}"),
        );
    }
    let probe = dir.join(WRITE_PROBE);
    if let Err(error) = state_files::replace(&probe, b"clawbridge doctor\n") {
        return Check::fail(
            "state-dir",
            format!("{}: not writable: {error}", dir.display()),
            format!("make it writable, {elsewhere}"),
        );
    }
    // What we just wrote is ours: a dir owned by someone else holds state they can replace.
    let ours = std::fs::symlink_metadata(&probe).map(|m| m.uid());
    let _ = std::fs::remove_file(&probe);
    let Ok(meta) = std::fs::metadata(dir) else {
        return Check::fail("state-dir", format!("{}: vanished while checked", dir.display()), elsewhere);
    };
    if ours.is_ok_and(|uid| uid != meta.uid()) {
        return Check::fail(
            "state-dir",
            format!("{}: owned by uid {}, not by you", dir.display(), meta.uid()),
            format!("use a state dir of your own, {elsewhere}"),
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Check::warn(
            "state-dir",
            format!("{}: writable by others (mode {mode:03o}); transcripts live here", dir.display()),
            Some(format!("chmod 700 {}", dir.display())),
        );
    }
    Check::ok("state-dir", format!("{} (writable)", dir.display()))
}

fn log_file_check(file: &Path) -> Check {
    let shown = file.display();
    let remove = format!("remove {shown} (`serve` and `run` create it anew)");
    // Not followed: the log is opened O_NOFOLLOW, so a symlink here means no log at all.
    let meta = match std::fs::symlink_metadata(file) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Check::ok("log-file", format!("{shown} (not written yet: `serve` and `run` write it)"));
        }
        Err(error) => return Check::fail("log-file", format!("{shown}: cannot inspect: {error}"), remove),
    };
    if meta.file_type().is_symlink() {
        return Check::fail("log-file", format!("{shown}: a symlink, which the bridge refuses to log through"), remove);
    }
    if !meta.is_file() {
        return Check::fail("log-file", format!("{shown}: not a file"), remove);
    }
    if meta.uid() != state_files::own_uid() {
        return Check::fail("log-file", format!("{shown}: owned by uid {}, not by you", meta.uid()), remove);
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::warn(
            "log-file",
            format!("{shown}: readable by others (mode {mode:03o}); it may quote prompts"),
            Some(format!("chmod 600 {shown}")),
        );
    }
    match state_files::open(file, std::fs::OpenOptions::new().append(true)) {
        Ok(_) => Check::ok("log-file", format!("{shown} ({} bytes; rotated by size)", meta.len())),
        Err(error) => Check::fail("log-file", format!("{shown}: not writable: {error}"), format!("chmod 600 {shown}")),
    }
}
