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
    match std::fs::metadata(file) {
        Ok(meta) if meta.is_file() => match std::fs::OpenOptions::new().append(true).open(file) {
            Ok(_) => Check::ok("log-file", format!("{} ({} bytes; rotated by size)", file.display(), meta.len())),
            Err(error) => Check::fail(
                "log-file",
                format!("{}: not writable: {error}", file.display()),
                format!("remove it or make it yours: chmod 600 {}", file.display()),
            ),
        },
        Ok(_) => {
            Check::fail("log-file", format!("{}: not a file", file.display()), format!("remove {}", file.display()))
        }
        Err(_) => Check::ok("log-file", format!("{} (not written yet: `serve` and `run` write it)", file.display())),
    }
}
