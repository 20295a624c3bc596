//! What every clawbridge executable runs in (`clawbridge`, `clawbridge-bench`): logs on stderr
//! (stdout is a protocol channel, a person's view or a table), one multi-threaded runtime, and a
//! failure reported as one clear line, its causes, and a non-zero exit.

use std::future::Future;
use std::process::ExitCode;

/// Logs to stderr, filtered by `CLAWBRIDGE_LOG` or `RUST_LOG`, else by `default_filter`.
pub fn init_logging(default_filter: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("CLAWBRIDGE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
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
    ExitCode::FAILURE
}
