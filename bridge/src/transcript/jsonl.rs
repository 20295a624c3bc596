//! A crash-safe JSONL transcript file, for standalone runs (`clawbridge run`) where no host owns
//! the transcript.
//!
//! - **One writer.** An exclusive `flock` on `<file>.lock` is held for the sink's life. The kernel
//!   drops it when the process dies, so a crash never leaves a stale lock behind (unlike a
//!   create-exclusive lock file). `fs4` provides it: maintained, built on rustix (already in the
//!   tree), and usable at our MSRV, which predates `File::try_lock` (Rust 1.89). It does not touch
//!   the shared `nix` dependency's feature list. The lock file is never deleted: removing it while
//!   another process has it open would let two writers lock two different inodes. Std opens it
//!   close-on-exec, so spawned agents do not inherit the lock.
//! - **Whole lines.** A group of entries is encoded first and written with one `write_all` on an
//!   `O_APPEND` handle; if the write fails, the file is truncated back to its previous length.
//! - **Torn lines repaired.** A crash mid-write can leave a last line without its `\n`; opening the
//!   file truncates it away (its entry is re-appended by the next run, since its key is not present).
//! - **Idempotent.** Opening reads every entry's id and `message.idempotencyKey`; appends skip keys
//!   already present.
//! - **Durable at turn end.** [`TranscriptSink::sync`] `fsync`s the file; `clawbridge run` also
//!   syncs a turn's prompt row on its own first, before the agent is asked.
//! - **Turns told apart.** Opening also notes each user row and whether a final assistant row
//!   follows it ([`TranscriptSink::prompt_history`]), so a retried turn reuses its prompt row.

use crate::state_files;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fs4::FileExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use super::chain::{Chain, TurnRow};
use super::entry::{Entry, Message, MessageEntry, SessionHeader};
use super::{AppendOutcome, PromptHistory, TranscriptError, TranscriptSink};

/// A transcript file opened for appending. Cheap to clone; clones share the file and its lock.
#[derive(Clone, Debug)]
pub struct JsonlSink {
    /// The transcript's path, for errors and callers.
    path: PathBuf,
    /// The open file, behind a mutex so blocking writes can run on tokio's blocking pool.
    inner: Arc<Mutex<JsonlFile>>,
    /// Bytes cut off a torn last line when the file was opened (0 if it was intact).
    repaired_bytes: u64,
}

#[derive(Debug)]
struct JsonlFile {
    /// The transcript's path, for errors.
    path: PathBuf,
    /// Opened read + append.
    file: File,
    /// Holds the exclusive lock; closing it (on drop) releases the lock.
    _lock: File,
    /// The file's length after the last complete write, to roll back a failed one.
    len: u64,
    /// Identities present and the chain's end.
    chain: Chain,
}

/// How long opening waits for a lock held elsewhere before calling the transcript taken. A lock
/// is shared by every process holding its open file, and a child forked by this process holds it
/// until it execs (tens of milliseconds when it joins its cgroup first), so a writer that has just
/// closed the transcript may still appear to hold it briefly; a real second writer holds it far
/// longer.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// The pause between two tries for the lock.
const LOCK_RETRY: Duration = Duration::from_millis(20);

impl JsonlSink {
    /// Opens (creating if needed) the transcript at `path` for exclusive appending. A new or empty
    /// file gets `header` as its first line; an existing header is kept. Blocks while it reads the
    /// file; call it from a blocking context in async code.
    pub fn open(path: impl Into<PathBuf>, header: &SessionHeader) -> Result<Self, TranscriptError> {
        Self::open_within(path.into(), header, LOCK_PATIENCE)
    }

    /// [`open`](Self::open), waiting at most `patience` for a lock held elsewhere.
    fn open_within(path: PathBuf, header: &SessionHeader, patience: Duration) -> Result<Self, TranscriptError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TranscriptError::Io { path, source }
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            state_files::create_dir_all(dir).map_err(io(dir))?;
        }
        // Private (prompts and tool output), and never through a link planted in place of either file.
        let lock_path = lock_path_for(&path);
        let lock = state_files::open(&lock_path, OpenOptions::new().create(true).truncate(false).write(true))
            .map_err(io(&lock_path))?;
        let deadline = Instant::now() + patience;
        loop {
            // Fully qualified: std's inherent `File::try_lock` is newer than our MSRV.
            match FileExt::try_lock(&lock) {
                Ok(()) => break,
                Err(fs4::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(LOCK_RETRY);
                }
                Err(fs4::TryLockError::WouldBlock) => return Err(TranscriptError::Locked { path, lock_path }),
                Err(fs4::TryLockError::Error(source)) => return Err(TranscriptError::Io { path: lock_path, source }),
            }
        }

        let existed = path.exists();
        let file =
            state_files::open(&path, OpenOptions::new().read(true).append(true).create(true)).map_err(io(&path))?;
        let mut chain = Chain::default();
        let scan = scan(&file, &mut chain).map_err(io(&path))?;
        let mut repaired_bytes = 0;
        if scan.good_len < scan.total_len {
            repaired_bytes = scan.total_len - scan.good_len;
            tracing::warn!(path = %path.display(), bytes = repaired_bytes, "cut a torn last line off the transcript");
            file.set_len(scan.good_len).map_err(io(&path))?;
            file.sync_data().map_err(io(&path))?;
        }
        let mut inner = JsonlFile { path: path.clone(), file, _lock: lock, len: scan.good_len, chain };
        if scan.unterminated_entry {
            tracing::warn!(path = %path.display(), "the transcript's last row lacked its newline; added it");
            inner.write_whole(b"\n")?;
            inner.file.sync_data().map_err(io(&path))?;
        }
        if !scan.has_header && scan.good_len == 0 {
            let mut line = serde_json::to_vec(&Entry::Session(header.clone())).map_err(TranscriptError::Encode)?;
            line.push(b'\n');
            inner.write_whole(&line)?;
            inner.file.sync_data().map_err(io(&path))?;
            if !existed {
                sync_dir(&path);
            }
        }
        Ok(Self { path, inner: Arc::new(Mutex::new(inner)), repaired_bytes })
    }

    /// The transcript's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of a torn last line removed when the file was opened.
    pub fn repaired_bytes(&self) -> u64 {
        self.repaired_bytes
    }

    /// Whether a message with this idempotency key is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.lock().chain.contains_key(key)
    }

    /// Appends on the calling thread; see [`TranscriptSink::append`].
    pub fn append_blocking(&self, messages: Vec<Message>) -> Result<Vec<AppendOutcome>, TranscriptError> {
        self.lock().append(messages)
    }

    /// `fsync`s on the calling thread; see [`TranscriptSink::sync`].
    pub fn sync_blocking(&self) -> Result<(), TranscriptError> {
        let inner = self.lock();
        inner.file.sync_data().map_err(|source| TranscriptError::Io { path: inner.path.clone(), source })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JsonlFile> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl TranscriptSink for JsonlSink {
    fn append(&mut self, messages: Vec<Message>) -> BoxFuture<'_, Result<Vec<AppendOutcome>, TranscriptError>> {
        let this = self.clone();
        Box::pin(blocking(move || this.append_blocking(messages)))
    }

    fn sync(&mut self) -> BoxFuture<'_, Result<(), TranscriptError>> {
        let this = self.clone();
        Box::pin(blocking(move || this.sync_blocking()))
    }

    fn prompt_history(&self) -> PromptHistory {
        self.lock().chain.prompts().clone()
    }
}

impl JsonlFile {
    fn append(&mut self, messages: Vec<Message>) -> Result<Vec<AppendOutcome>, TranscriptError> {
        let planned = self.chain.plan(messages);
        if planned.entries.is_empty() {
            return Ok(planned.outcomes);
        }
        let mut buf = Vec::new();
        for entry in &planned.entries {
            serde_json::to_writer(&mut buf, &EntryRef::Message(entry)).map_err(TranscriptError::Encode)?;
            buf.push(b'\n');
        }
        self.write_whole(&buf)?;
        self.chain.commit(&planned.entries);
        Ok(planned.outcomes)
    }

    /// Writes `buf` (whole lines) or, on failure, truncates the file back so no partial line stays.
    fn write_whole(&mut self, buf: &[u8]) -> Result<(), TranscriptError> {
        if let Err(source) = self.file.write_all(buf) {
            if let Err(e) = self.file.set_len(self.len) {
                tracing::warn!(path = %self.path.display(), error = %e, "could not roll back a failed transcript write");
            }
            return Err(TranscriptError::Io { path: self.path.clone(), source });
        }
        self.len += buf.len() as u64;
        Ok(())
    }
}

/// A `message` entry borrowed for encoding, so appending does not copy it into an [`Entry`].
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EntryRef<'a> {
    Message(&'a MessageEntry),
}

/// What reading an existing transcript found.
struct Scan {
    /// Bytes up to the end of the last complete line.
    good_len: u64,
    /// The file's length.
    total_len: u64,
    /// Whether a `session` entry was seen.
    has_header: bool,
    /// The bytes after the last newline are a whole entry that only lacks its newline (a writer
    /// died between the two writes): it is kept, and the newline added.
    unterminated_entry: bool,
}

/// Reads every complete line, recording ids and keys in `chain`. Lines that are not JSON are kept
/// (they are not ours to delete) but skipped.
fn scan(file: &File, chain: &mut Chain) -> std::io::Result<Scan> {
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let (mut good_len, mut total_len, mut has_header, mut unterminated_entry) = (0u64, 0u64, false, false);
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        total_len += n as u64;
        let terminated = line.last() == Some(&b'\n');
        if !terminated {
            // A torn line is cut; a complete entry that only lacks its newline is a row like any other.
            match serde_json::from_slice::<Value>(&line) {
                Ok(value) if value.get("type").and_then(Value::as_str).is_some() => {
                    unterminated_entry = true;
                    good_len = total_len;
                    observe(&value, chain, &mut has_header);
                }
                _ => {}
            }
            break;
        }
        good_len = total_len;
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            tracing::warn!(offset = good_len - n as u64, "skipping a transcript line that is not JSON");
            continue;
        };
        observe(&value, chain, &mut has_header);
    }
    Ok(Scan { good_len, total_len, has_header, unterminated_entry })
}

/// Records one parsed entry: the header, or a row's id and idempotency key.
fn observe(value: &Value, chain: &mut Chain, has_header: &mut bool) {
    if value.get("type").and_then(Value::as_str) == Some("session") {
        *has_header = true;
        return;
    }
    let id = value.get("id").and_then(Value::as_str);
    let message = value.get("message");
    let key = message.and_then(|m| m.get("idempotencyKey")).and_then(Value::as_str);
    chain.observe(id, key);
    let field = |name: &str| message.and_then(|m| m.get(name)).and_then(Value::as_str);
    let row = match field("role") {
        Some("user") => TurnRow::Prompt { key, text: field("content") },
        Some("assistant") if field("stopReason") != Some("toolUse") => TurnRow::Answer,
        _ => TurnRow::Other,
    };
    chain.observe_turn(&row);
}

/// `<file>.lock` beside the transcript.
fn lock_path_for(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(".lock");
    path.with_file_name(name)
}

/// Makes a newly created file's directory entry durable; best effort (some filesystems refuse).
fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

/// Runs blocking file work on tokio's blocking pool when there is a runtime, inline otherwise.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TranscriptError> + Send + 'static,
) -> Result<T, TranscriptError> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle.spawn_blocking(work).await.map_err(|e| TranscriptError::Task(e.to_string()))?,
        Err(_) => work(),
    }
}
