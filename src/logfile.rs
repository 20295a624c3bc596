//! The bridge's log file: `<state dir>/logs/clawbridge.log`, rotated by size so a chatty bridge
//! cannot fill the disk. When a write would take the file past [`MAX_FILE_BYTES`], it becomes
//! `clawbridge.log.1` (older ones shift up, the oldest beyond [`KEPT_FILES`] is dropped) and a new
//! file starts: at most `(KEPT_FILES + 1) × MAX_FILE_BYTES` on disk. Several bridges may share a
//! state dir; each appends whole lines (`O_APPEND`), so their lines interleave but do not tear.
//! The file (and its folder) is created by the first line written, so a command that logs nothing
//! leaves nothing behind in the state dir.
//!
//! Hand-written on purpose (README, dependencies): `tracing-appender` rotates by time only, and
//! `file-rotate` 0.8, which rotates by size, asserts (panics) when another process rotated the same
//! file first, as bridges sharing a state dir do.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One file's cap in bytes.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;
/// Rotated files kept beside the current one.
pub const KEPT_FILES: u32 = 3;
/// The current file's name under `logs/`.
pub const FILE_NAME: &str = "clawbridge.log";

/// The log file of a state dir.
pub fn path_in(state_dir: &Path) -> PathBuf {
    state_dir.join("logs").join(FILE_NAME)
}

/// An append-only file that rotates itself by size.
#[derive(Debug)]
pub struct SizeCappedFile {
    path: PathBuf,
    /// `None` until the first write creates it.
    file: Option<File>,
    /// Bytes in the current file as this writer knows them (other writers' lines are not counted
    /// until the next open: the cap may be passed by what they wrote, never by more).
    written: u64,
    max_bytes: u64,
    kept: u32,
    /// Whether a failure to create the file was already said on stderr (once is enough).
    failure_said: bool,
}

impl SizeCappedFile {
    /// The file at `path`, created (`0600`, its folder `0700`) by the first write.
    pub fn open(path: PathBuf, max_bytes: u64, kept: u32) -> Self {
        let written = std::fs::metadata(&path).map_or(0, |meta| meta.len());
        Self { path, file: None, written, max_bytes, kept, failure_said: false }
    }

    /// The open file, creating it (and its folder) the first time; a file that cannot be created
    /// is said once on stderr (the log itself cannot carry it) and tried again on the next line.
    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            match self.create() {
                Ok(file) => self.file = Some(file),
                Err(error) => {
                    if !std::mem::replace(&mut self.failure_said, true) {
                        eprintln!("clawbridge: no log file: {}: {error}", self.path.display());
                    }
                    return Err(error);
                }
            }
        }
        self.file.as_mut().ok_or_else(|| io::Error::other("the log file is not open"))
    }

    fn create(&mut self) -> io::Result<File> {
        if let Some(dir) = self.path.parent() {
            clawbridge_bridge::state_files::create_dir_all(dir)?;
        }
        let file = open_append(&self.path)?;
        self.written = file.metadata()?.len();
        Ok(file)
    }

    fn rotate(&mut self) -> io::Result<()> {
        let numbered = |n: u32| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        // The oldest goes; the others move up one.
        let _ = std::fs::remove_file(numbered(self.kept));
        for n in (1..self.kept).rev() {
            let _ = std::fs::rename(numbered(n), numbered(n + 1));
        }
        if self.kept > 0 {
            std::fs::rename(&self.path, numbered(1))?;
        } else {
            std::fs::remove_file(&self.path)?;
        }
        self.file = Some(open_append(&self.path)?);
        self.written = 0;
        Ok(())
    }
}

impl Write for SizeCappedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        // One line per write (the formatter's), so a line is never split across two files.
        self.file()?.write_all(buf)?;
        self.written += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// Opens the log for appending, private, never through a symlink at its path: one planted in the
/// state dir must not redirect our log into another file (`ELOOP` instead, and the log is skipped).
fn open_append(path: &Path) -> io::Result<File> {
    clawbridge_bridge::state_files::open(path, OpenOptions::new().create(true).append(true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_rotate_by_size_and_only_the_newest_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join(FILE_NAME);
        let mut file = SizeCappedFile::open(path.clone(), 100, 2);
        assert!(!path.parent().unwrap().exists(), "nothing is created before the first line");
        for i in 0..20 {
            file.write_all(format!("line {i:02} {}\n", "x".repeat(30)).as_bytes()).unwrap();
        }
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
        for p in [path.clone(), numbered(1), numbered(2)] {
            let text = read(&p);
            assert!(!text.is_empty() && text.len() <= 100, "{}: {} bytes", p.display(), text.len());
            assert!(text.lines().all(|l| l.starts_with("line ") && l.len() == 38), "whole lines: {text}");
        }
        assert!(!numbered(3).exists(), "only two rotated files are kept");
        assert!(read(&path).contains("line 19"), "the newest line is in the current file");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_symlink_at_the_log_path_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "theirs\n").unwrap();
        let path = dir.path().join("logs").join(FILE_NAME);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let mut file = SizeCappedFile::open(path.clone(), 1 << 20, 2);
        let _ = file.write_all(b"ours\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs\n", "the log went through the symlink");
    }
}
