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
/// `RUST_LOG`, else by `default_filter`. A log file that cannot be opened is said on stderr and
/// skipped: logging must never stop the bridge.
pub fn init_logging(default_filter: &str, state_dir: Option<&Path>) -> LogGuard {
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = std::env::var("CLAWBRIDGE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let mut file_error = None;
    let (file_layer, guard) = match state_dir.map(crate::logfile::path_in) {
        Some(path) => match crate::logfile::SizeCappedFile::open(
            path.clone(),
            crate::logfile::MAX_FILE_BYTES,
            crate::logfile::KEPT_FILES,
        ) {
            Ok(file) => {
                // Off the runtime's threads: a slow disk delays the writer thread, never a turn.
                // Its queue is bounded and drops lines rather than block when full.
                let (writer, guard) = tracing_appender::non_blocking(file);
                let _ = LOG_FILE.set(path);
                let layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false).with_target(true);
                (Some(layer), Some(guard))
            }
            Err(error) => {
                file_error = Some(format!("{}: {error}", path.display()));
                (None, None)
            }
        },
        None => (None, None),
    };
    tracing_subscriber::registry().with(filter).with(stderr).with(file_layer).init();
    if let Some(error) = file_error {
        tracing::warn!("no log file: {error}");
    }
    LogGuard { _writer: guard }
}

/// Runs `work` to its end on a new runtime and turns its outcome into the exit code; `program`
/// names the executable in the error line.
pub fn run_to_exit(program: &str, work: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return report(program, &anyhow::Error::new(e).context("could not start the async runtime")),
    };
    let outcome = runtime.block_on(work);
    // A terminal prompt may still be blocked reading stdin (the turn ended meanwhile); do not wait
    // for a keypress to exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(program, &e),
    }
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
