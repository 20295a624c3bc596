//! `clawbridge`: run native coding-agent runtimes under OpenClaw.
//!
//! stdout is a protocol channel (for `serve`) or the person's view (for `run`); logs always go to
//! stderr, and for `serve` and `run` also to `<state dir>/logs/clawbridge.log` (size-capped, rotated),
//! filtered by `CLAWBRIDGE_LOG` or `RUST_LOG` (default `warn,clawbridge=info`).

mod allocator;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    allocator::tune();
    let cli = clawbridge::cli::Cli::parse();
    let logs =
        clawbridge::shell::init_logging("warn,clawbridge=info,clawbridge_bridge=info", cli.log_state_dir().as_deref());
    clawbridge::shell::run_logged_to_exit("clawbridge", clawbridge::cli::run(cli), logs)
}
