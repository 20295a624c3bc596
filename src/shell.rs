//! What every clawbridge executable runs in (`clawbridge`, `clawbridge-bench`): logs on stderr
//! (stdout is a protocol channel, a person's view or a table) and, for the bridge, in a size-capped
//! file under its state dir (`logs/clawbridge.log`, see [`crate::logfile`]); one multi-threaded
//! runtime; and a failure reported as one clear line, its causes, and a non-zero exit.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

/// The log file this process writes, once [`init_logging`] opened one.
static LOG_FILE: OnceLock<PathBuf> = OnceLock::new();

/// The log file this process writes, if any (`serve` reports it in `initialize`).
pub fn log_file() -> Option<&'static Path> {
    LOG_FILE.get().map(PathBuf::as_path)
}

/// Keeps the file writer's thread alive; dropping it flushes what is queued.
#[derive(Debug)]
#[must_use = "dropping it stops the log file's writer"]
pub struct LogGuard {
    /// Held, never read: its drop is what flushes.
    _writer: Option<tracing_appender::non_blocking::WorkerGuard>,
}

/// Logs to stderr and, with `state_dir`, to its log file too, filtered by `CLAWBRIDGE_LOG` or
/// `RUST_LOG`, else by `default_filter`. A log file that cannot be created is said on stderr once
/// and skipped ([`crate::logfile::SizeCappedFile`]): logging must never stop the bridge.
pub fn init_logging(default_filter: &str, state_dir: Option<&Path>) -> LogGuard {
    let filter = std::env::var("CLAWBRIDGE_LOG").ok().or_else(|| std::env::var("RUST_LOG").ok());
    init_logging_with(filter.as_deref().unwrap_or(default_filter), default_filter, state_dir)
}

/// [`init_logging`] under the filter `spec` (the `clawbridge` binary's `logs.filter` setting); a
/// spec tracing cannot read falls back to [`crate::config::DEFAULT_LOG_FILTER`].
pub fn init_logging_filtered(spec: &str, state_dir: Option<&Path>) -> LogGuard {
    init_logging_with(spec, crate::config::DEFAULT_LOG_FILTER, state_dir)
}

/// Log lines the file writer's queue holds before it drops new ones. The queue's slots are
/// allocated and touched when logging starts, so tracing-appender's default of 128,000 cost every
/// `run` and `serve` about a thousand page faults and 3.6 ms of CPU before its first line
/// (BENCHMARKS.md); a bridge logs a few lines per turn, and a burst beyond this is what dropping
/// is for.
const LOG_QUEUE_LINES: usize = 4096;

fn init_logging_with(spec: &str, fallback: &str, state_dir: Option<&Path>) -> LogGuard {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = EnvFilter::try_new(spec).unwrap_or_else(|_| EnvFilter::new(fallback));
    // Through the person's view while `run` shows one, so a log line never tears its spinner.
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(crate::view::LogWriter)
        .with_ansi(crate::view::log_colour())
        .with_target(false);
    let (file_layer, guard) = match state_dir.map(crate::logfile::path_in) {
        Some(path) => {
            let file = crate::logfile::SizeCappedFile::open(
                path.clone(),
                crate::logfile::MAX_FILE_BYTES,
                crate::logfile::KEPT_FILES,
            );
            // Off the runtime's threads: a slow disk delays the writer thread, never a turn.
            // Its queue is bounded and drops lines rather than block when full.
            let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .buffered_lines_limit(LOG_QUEUE_LINES)
                .lossy(true)
                .finish(file);
            let _ = LOG_FILE.set(path);
            let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).with_target(true);
            (Some(layer), Some(guard))
        }
        None => (None, None),
    };
    // tungstenite traces the whole upgrade request, `Authorization` header and all: whatever the
    // user's filter says, its trace lines (and tokio-tungstenite's) are never recorded, so a
    // WebSocket token cannot reach a log.
    let no_ws_trace = tracing_subscriber::filter::Targets::new()
        .with_default(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_target("tungstenite", tracing_subscriber::filter::LevelFilter::DEBUG)
        .with_target("tokio_tungstenite", tracing_subscriber::filter::LevelFilter::DEBUG);
    tracing_subscriber::registry().with(filter).with(no_ws_trace).with(stderr).with(file_layer).init();
    LogGuard { _writer: guard }
}

/// Runs `work` to its end on a new runtime and turns its outcome into the exit code; `program`
/// names the executable in the error line.
pub fn run_to_exit(program: &str, work: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    match run_work(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(program, &e),
    }
}

/// [`run_to_exit`] for a process that writes a log file: `logs` is flushed before the exit, and a
/// failure's last line names the log file: where the whole log is, or, when nothing was logged
/// there (the file is created on the first line), how to make the next run log more.
pub fn run_logged_to_exit(program: &str, work: impl Future<Output = anyhow::Result<()>>, logs: LogGuard) -> ExitCode {
    let outcome = run_work(work);
    drop(logs);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = report(program, &e);
            if let Some(file) = log_file() {
                if std::fs::symlink_metadata(file).is_ok_and(|meta| meta.len() > 0) {
                    eprintln!("{program}: the full log is in {}", file.display());
                } else {
                    eprintln!(
                        "{program}: nothing was logged to {}; run again with CLAWBRIDGE_LOG=debug to log more there",
                        file.display()
                    );
                }
            }
            code
        }
    }
}

fn run_work(work: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::Error::new(e).context("could not start the async runtime"))?;
    let outcome = runtime.block_on(work);
    // A terminal prompt may still be blocked reading stdin (the turn ended meanwhile); do not wait
    // for a keypress to exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    outcome
}

/// One clear line, then the cause chain, then a non-zero exit.
fn report(program: &str, error: &anyhow::Error) -> ExitCode {
    eprintln!("{program}: error: {error}");
    for cause in error.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    if error.downcast_ref::<crate::interrupt::Interrupted>().is_some() {
        return ExitCode::from(crate::interrupt::EXIT_INTERRUPTED);
    }
    ExitCode::FAILURE
}
