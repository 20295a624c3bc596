//! `clawbridge`: run native coding-agent runtimes under OpenClaw.
//!
//! stdout is a protocol channel (for `serve`) or the person's view (for `run`); logs always go to
//! stderr, and for `serve` and `run` also to `<state dir>/logs/clawbridge.log` (size-capped, rotated),
//! filtered by `logs.filter` (`CLAWBRIDGE_LOG`, `RUST_LOG`, the config file; src/config).

mod allocator;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    allocator::tune();
    let cli = clawbridge::cli::Cli::parse();
    // Before logging starts, since the log filter is one of the settings: said plainly on stderr.
    let settings = match cli.settings() {
        Ok(settings) => settings,
        Err(error) => {
            // Every command needs its settings (reap too): a broken file's error says how to run without it.
            let bypass = match error {
                clawbridge::config::ConfigError::BadEnv { .. } => String::new(),
                _ => format!(" (`--config {}` runs without the file)", clawbridge::config::NO_FILE),
            };
            eprintln!("clawbridge: {error}{bypass}");
            return ExitCode::from(2);
        }
    };
    let filter = settings.logs.filter.value.as_ref().map_or(clawbridge::config::DEFAULT_LOG_FILTER, |filter| &filter.0);
    let logs = clawbridge::shell::init_logging_filtered(filter, cli.log_state_dir(&settings).as_deref());
    clawbridge::shell::run_logged_to_exit("clawbridge", clawbridge::cli::run(cli, settings), logs)
}
