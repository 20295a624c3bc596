//! How the bridge writes its state (transcripts, bindings, pid records, caches): private to the
//! user and never through a link someone planted. Transcripts hold prompts and tool output, so files
//! are created `0600` and folders `0700`; a replaced file is written to a fresh temp file of a
//! random name (`tempfile`, created `O_EXCL` with `0600`) and renamed over the old one, so no
//! predictable name can be pre-planted as a symlink; files opened in place are opened `O_NOFOLLOW`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Mode of every state file: the user's alone.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every state folder the bridge creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `dir` and its missing parents with [`DIR_MODE`] (folders that exist keep their mode).
pub fn create_dir_all(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// [`create_dir_all`], then `fsync`s the parent of every folder it created, deepest first, so the
/// new folders survive a crash along with the files later synced inside them. Syncing a folder is
/// best effort (some filesystems refuse).
pub fn create_dir_all_durably(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|d| !d.as_os_str().is_empty() && !d.exists()).collect();
    create_dir_all(dir)?;
    for created in missing {
        let parent = created.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if let Ok(parent) = File::open(parent) {
            let _ = parent.sync_all();
        }
    }
    Ok(())
}

/// The effective user id: whose state files are ours.
pub fn own_uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// Opens `path` with `options`, creating it with [`FILE_MODE`], refusing to follow a symlink at
/// `path` itself (`ELOOP`).
pub fn open(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    options.mode(FILE_MODE).custom_flags(nix::libc::O_NOFOLLOW).open(path)
}

/// Replaces `path` with `bytes` atomically: a fresh private temp file beside it, synced, renamed
/// over `path` (a symlink at `path` is replaced, never followed), then the folder synced (best
/// effort: some filesystems refuse to sync a directory).
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new().prefix(".clawbridge-").suffix(".tmp").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Creates `path` holding `bytes`, only if nothing is there yet (not even a symlink): a fresh
/// private temp file beside it, synced, then linked into place without replacing anything. An
/// existing entry is `AlreadyExists`, so two writers never both believe they created it.
pub fn create_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new().prefix(".clawbridge-").suffix(".tmp").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist_noclobber(path).map_err(|e| e.error)?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_and_folders_are_private_whatever_the_umask_allows() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_dir_all(&dir).unwrap();
        assert_eq!(mode(&root.path().join("a")), DIR_MODE);
        assert_eq!(mode(&dir), DIR_MODE);
        let replaced = dir.join("binding.json");
        replace(&replaced, b"{}").unwrap();
        assert_eq!(mode(&replaced), FILE_MODE);
        let opened = dir.join("transcript.jsonl");
        open(&opened, OpenOptions::new().append(true).create(true)).unwrap();
        assert_eq!(mode(&opened), FILE_MODE);
    }

    #[test]
    fn a_planted_symlink_is_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("precious");
        std::fs::write(&target, b"keep me").unwrap();
        let link = root.path().join("state.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();

        let refused = open(&link, OpenOptions::new().append(true).create(true));
        assert!(refused.is_err(), "opening through a symlink is refused");
        replace(&link, b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me", "the link's target is untouched");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    }
}
