//! `fs/read_text_file` and `fs/write_text_file`, confined to the session's working directory: a path
//! must be absolute and, once every symlink in it is resolved, inside the canonical cwd; anything else
//! is refused (docs/peers/acp.md#what-clawbridge-implements). Writes are atomic: a temporary file in
//! the target's own directory, persisted over the target.

use std::io::{BufRead, Read};
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
        let opened = std::fs::File::open(&file).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => FsError::NotFound(path.to_owned()),
            _ => io(e),
        })?;
        let bytes = opened.metadata().map_err(io)?.len();
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
        let mut reader = std::io::BufReader::new(opened.take(max_bytes.saturating_mul(64)));
        let mut out = String::new();
        let mut buf = String::new();
        let mut index = 0usize;
        loop {
            buf.clear();
            if reader.read_line(&mut buf).map_err(io)? == 0 || take.is_some_and(|t| index >= skip + t) {
                break;
            }
            if index >= skip {
                if (out.len() + buf.len()) as u64 > max_bytes {
                    return Err(FsError::TooLarge { path: path.to_owned(), bytes, limit: max_bytes });
                }
                out.push_str(&buf);
            }
            index += 1;
        }
        Ok(out)
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
        let dir = file.parent().ok_or_else(|| self.outside(path))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        std::io::Write::write_all(&mut temp, content.as_bytes()).map_err(io)?;
        temp.as_file().sync_all().map_err(io)?;
        temp.persist(&file).map_err(|e| io(e.error))?;
        Ok(())
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
}
