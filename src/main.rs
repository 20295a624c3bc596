//! `clawbridge`: run native coding-agent runtimes under OpenClaw.
//!
//! stdout is a protocol channel (for `serve`) or the person's view (for `run`); logs always go to
//! stderr, filtered by `CLAWBRIDGE_LOG` or `RUST_LOG` (default `warn,clawbridge=info`).

mod allocator;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    allocator::tune();
    let cli = clawbridge::cli::Cli::parse();
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            return report(anyhow::Error::new(e).context("could not start the async runtime"));
        }
    };
    let outcome = runtime.block_on(clawbridge::cli::run(cli));
    // A terminal prompt may still be blocked reading stdin (the turn ended meanwhile); do not wait
    // for a keypress to exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(e),
    }
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("CLAWBRIDGE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .and_then(|spec| EnvFilter::try_new(spec).ok())
        .unwrap_or_else(|| EnvFilter::new("warn,clawbridge=info,clawbridge_bridge=info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}

/// One clear line, then the cause chain, then a non-zero exit.
fn report(error: anyhow::Error) -> ExitCode {
    eprintln!("clawbridge: error: {error}");
    for cause in error.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    ExitCode::FAILURE
}
