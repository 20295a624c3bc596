//! `fs/read_text_file` and `fs/write_text_file`, confined to the session's working directory: a path
//! must be absolute and, once every symlink in it is resolved, inside the canonical cwd; anything else
//! is refused (docs/peers/acp.md#what-clawbridge-implements). Reads open only regular files, and
//! open them beneath the root (`openat2` `RESOLVE_BENEATH`), so a symlink swapped in after the check
//! cannot lead outside. Writes are atomic: a temporary file in the target's own directory, with the
//! target's permissions, persisted over the target (a symlink's target, never the link itself).

use std::io::{BufRead, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

/// Why a file request was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// The path is relative (ACP paths are absolute).
    #[error("`{0}` is not an absolute path")]
    Relative(String),
    /// The path (or what a symlink in it points to) is outside the session's directory.
    #[error("`{path}` is outside the session's directory {root}")]
    OutsideRoot {
        /// The path asked for.
        path: String,
        /// The session's directory.
        root: String,
    },
    /// The file does not exist.
    #[error("`{0}` does not exist")]
    NotFound(String),
    /// The file is larger than the bridge returns.
    #[error("`{path}` has {bytes} bytes, over the {limit}-byte limit")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size (or the text's, for a write).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The path is not a regular file (a directory, a FIFO, a device): never opened for reading.
    #[error("`{0}` is not a regular file")]
    NotRegular(String),
    /// The path is a symlink to nothing: writing would replace the link by a file.
    #[error("`{0}` is a symlink to a missing file")]
    DanglingSymlink(String),
    /// The host's native tool policy does not allow file edits.
    #[error("file edits are not allowed in this session (the host's tool policy)")]
    EditsDisabled,
    /// Reading or writing failed.
    #[error("`{path}`: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl FsError {
    /// Whether the file was simply missing (ACP's "resource not found").
    pub fn is_not_found(&self) -> bool {
        matches!(self, FsError::NotFound(_))
    }
}

/// The directory file requests are confined to.
#[derive(Clone, Debug)]
pub struct FsRoot {
    /// The canonical session directory.
    root: PathBuf,
}

impl FsRoot {
    /// The root `cwd`, canonicalised (it must exist).
    pub fn new(cwd: &Path) -> std::io::Result<Self> {
        Ok(FsRoot { root: cwd.canonicalize()? })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn outside(&self, path: &str) -> FsError {
        FsError::OutsideRoot { path: path.to_owned(), root: self.root.display().to_string() }
    }

    /// `path` resolved: its deepest existing ancestor canonicalised (so symlinks count where they
    /// point), the rest appended; refused unless inside the root. `..` is refused outright: after a
    /// missing component it could not be resolved safely.
    fn confine(&self, path: &str) -> Result<PathBuf, FsError> {
        let given = Path::new(path);
        if !given.is_absolute() {
            return Err(FsError::Relative(path.to_owned()));
        }
        if given.components().any(|c| matches!(c, Component::ParentDir)) {
            return Err(self.outside(path));
        }
        let mut existing = given.to_path_buf();
        let mut rest = Vec::new();
        let resolved = loop {
            match existing.canonicalize() {
                Ok(canonical) => break canonical,
                Err(_) => {
                    let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
                        return Err(self.outside(path));
                    };
                    rest.push(name);
                    if !existing.pop() {
                        return Err(self.outside(path));
                    }
                }
            }
        };
        let full = rest.into_iter().rev().fold(resolved, |mut p, c| {
            p.push(c);
            p
        });
        if full.starts_with(&self.root) { Ok(full) } else { Err(self.outside(path)) }
    }

    /// Whether the agent may touch `path` (a permission request's location or tool input): refused
    /// like a file request if it resolves outside the root. A relative path counts from the root,
    /// as the agent's tools resolve it against the session's cwd.
    pub fn check(&self, path: &str) -> Result<(), FsError> {
        if Path::new(path).is_absolute() {
            self.confine(path).map(drop)
        } else {
            let joined = self.root.join(path);
            self.confine(&joined.to_string_lossy()).map(drop).map_err(|_| self.outside(path))
        }
    }

    /// The text of `path` from line `line` (1-based) for `limit` lines, refused over `max_bytes`.
    pub fn read(&self, path: &str, line: Option<u32>, limit: Option<u32>, max_bytes: u64) -> Result<String, FsError> {
        let file = self.confine(path)?;
        let io = |source| FsError::Io { path: path.to_owned(), source };
        let opened = self.open_beneath(&file).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FsError::NotFound(path.to_owned()),
            _ if e.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) => self.outside(path),
            _ => io(e),
        })?;
        let metadata = opened.metadata().map_err(io)?;
        if !metadata.is_file() {
            return Err(FsError::NotRegular(path.to_owned()));
        }
        let bytes = metadata.len();
        let (skip, take) = (line.map_or(0, |l| l.saturating_sub(1)) as usize, limit.map(|l| l as usize));
        if skip == 0 && take.is_none() {
            if bytes > max_bytes {
                return Err(FsError::TooLarge { path: path.to_owned(), bytes, limit: max_bytes });
            }
            let mut text = String::new();
            // Bounded again while reading: the file may grow after its size was read.
            opened.take(max_bytes + 1).read_to_string(&mut text).map_err(io)?;
            if text.len() as u64 > max_bytes {
                return Err(FsError::TooLarge { path: path.to_owned(), bytes: text.len() as u64, limit: max_bytes });
            }
            return Ok(text);
        }
        // A window of lines: read line by line so a huge file's other lines are never held.
        // Lines before the window are skipped without being stored, and a line of the window is
        // stored only while the whole window stays under the limit.
        let mut reader = std::io::BufReader::new(opened.take(max_bytes.saturating_mul(64)));
        let mut out = Vec::new();
        let mut index = 0usize;
        let too_large = || FsError::TooLarge { path: path.to_owned(), bytes, limit: max_bytes };
        while take.is_none_or(|t| index < skip + t) {
            let room =
                if index >= skip { Some(usize::try_from(max_bytes).unwrap_or(usize::MAX) - out.len()) } else { None };
            match next_line(&mut reader, &mut out, room).map_err(io)? {
                // The scan's own bound (64 times the limit) ran out before the file did.
                Line::End if reader.get_ref().limit() == 0 => return Err(too_large()),
                Line::End => break,
                Line::Overflow => return Err(too_large()),
                Line::Read => index += 1,
            }
        }
        String::from_utf8(out).map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
    }

    /// Opens `file` (inside the root, already resolved) for reading, beneath the root: no symlink
    /// or `..` swapped in since [`Self::confine`] can lead outside (`EXDEV`), and a FIFO cannot
    /// block the open. Kernels before `openat2` (Linux 5.6) get a plain non-blocking open.
    fn open_beneath(&self, file: &Path) -> std::io::Result<std::fs::File> {
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
        let relative = file.strip_prefix(&self.root).unwrap_or(file);
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        let root = std::fs::File::open(&self.root)?;
        let opened = match rustix::fs::openat2(&root, relative, flags, Mode::empty(), ResolveFlags::BENEATH) {
            Err(rustix::io::Errno::NOSYS) => rustix::fs::open(file, flags, Mode::empty()),
            other => other,
        };
        Ok(std::fs::File::from(opened?))
    }

    /// Writes `content` to `path` atomically (a temporary file in the same directory, then renamed
    /// over it), creating the file but not its directory.
    pub fn write(&self, path: &str, content: &str, max_bytes: usize) -> Result<(), FsError> {
        if content.len() > max_bytes {
            let (bytes, limit) = (content.len() as u64, max_bytes as u64);
            return Err(FsError::TooLarge { path: path.to_owned(), bytes, limit });
        }
        let file = self.confine(path)?;
        let io = |source| FsError::Io { path: path.to_owned(), source };
        // `confine` resolved an existing symlink to its target; one still here points nowhere.
        if std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(FsError::DanglingSymlink(path.to_owned()));
        }
        let dir = file.parent().ok_or_else(|| self.outside(path))?;
        // An existing file keeps its permissions; a new one gets what the umask gives (as an editor's).
        let permissions = match std::fs::metadata(&file) {
            Ok(existing) if !existing.is_file() => return Err(FsError::NotRegular(path.to_owned())),
            Ok(existing) => existing.permissions(),
            Err(_) => std::fs::Permissions::from_mode(0o666),
        };
        let mut temp = tempfile::Builder::new().permissions(permissions.clone()).tempfile_in(dir).map_err(io)?;
        // The umask narrowed the mode at creation; an existing file's is restored exactly.
        if std::fs::metadata(&file).is_ok() {
            temp.as_file().set_permissions(permissions).map_err(io)?;
        }
        std::io::Write::write_all(&mut temp, content.as_bytes()).map_err(io)?;
        temp.as_file().sync_all().map_err(io)?;
        temp.persist(&file).map_err(|e| io(e.error))?;
        Ok(())
    }
}

/// What [`next_line`] found.
enum Line {
    /// A line (stored when there was room for it).
    Read,
    /// The line did not fit the room left.
    Overflow,
    /// The end of the file.
    End,
}

/// Reads one line, appending it to `out` when `room` is given (`None`: skipped, not stored); never
/// stores more than `room` bytes of it.
fn next_line(reader: &mut impl BufRead, out: &mut Vec<u8>, room: Option<usize>) -> std::io::Result<Line> {
    let mut seen = 0usize;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(if seen == 0 { Line::End } else { Line::Read });
        }
        let (used, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if let Some(room) = room {
            if seen + used > room {
                return Ok(Line::Overflow);
            }
            out.extend_from_slice(&available[..used]);
        }
        seen += used;
        reader.consume(used);
        if ended {
            return Ok(Line::Read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_root_relative_paths_and_symlink_escapes_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::new(dir.path()).unwrap();
        let inside = root.root().join("a.txt");
        root.write(inside.to_str().unwrap(), "one\ntwo\nthree\n", 1024).unwrap();
        assert_eq!(root.read(inside.to_str().unwrap(), None, None, 1024).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(root.read(inside.to_str().unwrap(), Some(2), Some(1), 1024).unwrap(), "two\n");
        assert_eq!(root.read(inside.to_str().unwrap(), Some(3), None, 1024).unwrap(), "three\n");
        assert!(matches!(root.read(inside.to_str().unwrap(), None, None, 4), Err(FsError::TooLarge { .. })));

        let escape = outside.path().join("x.txt");
        assert!(matches!(root.write(escape.to_str().unwrap(), "x", 1024), Err(FsError::OutsideRoot { .. })));
        let dotdot = format!("{}/../x.txt", root.root().display());
        assert!(matches!(root.write(&dotdot, "x", 1024), Err(FsError::OutsideRoot { .. })));
        assert!(matches!(root.write("rel.txt", "x", 1024), Err(FsError::Relative(_))));
        std::os::unix::fs::symlink(outside.path(), root.root().join("link")).unwrap();
        let through_link = root.root().join("link/x.txt");
        assert!(matches!(root.write(through_link.to_str().unwrap(), "x", 1024), Err(FsError::OutsideRoot { .. })));
        assert!(!escape.exists(), "nothing was written outside");
        let missing = root.root().join("missing.txt");
        assert!(root.read(missing.to_str().unwrap(), None, None, 1024).unwrap_err().is_not_found());
    }

    #[test]
    fn a_fifo_is_refused_a_long_line_is_not_held_and_a_write_keeps_the_files_mode_and_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = FsRoot::new(dir.path()).unwrap();
        let fifo = root.root().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RWXU, 0).unwrap();
        // Opening a FIFO with no writer would block forever; it is refused instead.
        assert!(matches!(root.read(fifo.to_str().unwrap(), None, None, 1024), Err(FsError::NotRegular(_))));
        assert!(matches!(root.read(fifo.to_str().unwrap(), Some(1), Some(1), 1024), Err(FsError::NotRegular(_))));

        let long = root.root().join("long.txt");
        std::fs::write(&long, format!("{}\nshort\n", "x".repeat(10_000))).unwrap();
        // The long line is skipped, not stored; asked for, it is over the limit.
        assert_eq!(root.read(long.to_str().unwrap(), Some(2), Some(1), 256).unwrap(), "short\n");
        assert!(matches!(root.read(long.to_str().unwrap(), Some(1), Some(1), 256), Err(FsError::TooLarge { .. })));
        // Past the scan's bound (64 times the limit) the read is refused, not cut short.
        assert!(matches!(root.read(long.to_str().unwrap(), Some(2), Some(1), 64), Err(FsError::TooLarge { .. })));

        let script = root.root().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o751)).unwrap();
        let link = root.root().join("link.sh");
        std::os::unix::fs::symlink(&script, &link).unwrap();
        root.write(link.to_str().unwrap(), "new", 1024).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read_to_string(&script).unwrap(), "new", "its target was written");
        assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o751, "mode kept");
        let dangling = root.root().join("dangling");
        std::os::unix::fs::symlink(root.root().join("nothing"), &dangling).unwrap();
        assert!(matches!(root.write(dangling.to_str().unwrap(), "x", 1024), Err(FsError::DanglingSymlink(_))));
    }
}
