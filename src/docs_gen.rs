//! `clawbridge completions <shell>` and `clawbridge man`: shell completions and manual pages
//! generated from the command line's own clap definition, so they cannot drift from it.
//!
//! Both print to stdout, and a reader that closes the pipe early (`clawbridge man | head`) has
//! what it wanted: the broken pipe ends the command quietly with exit 0, no error and no panic.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// The program name completions are registered for (the installed binary's file name).
const BIN_NAME: &str = "clawbridge";

/// Writes `shell`'s completion script for `clawbridge` to `out`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> anyhow::Result<()> {
    use clap_complete::Generator;
    let mut command = Cli::command();
    // What `clap_complete::generate` does, but with the write error returned, not panicked on.
    command.set_bin_name(BIN_NAME);
    command.build();
    let written = shell.try_generate(&command, out).and_then(|()| out.flush());
    quiet_on_broken_pipe(written).context("writing the completion script")
}

/// A closed pipe means the reader has read enough (`| head`): not a failure of ours.
fn quiet_on_broken_pipe(written: std::io::Result<()>) -> std::io::Result<()> {
    match written {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes the `clawbridge(1)` page to `out`, or with `out_dir` that page and one per visible
/// subcommand (`clawbridge-run.1`, …) into that directory.
pub fn man(out_dir: Option<&Path>, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut command = Cli::command().disable_help_subcommand(true);
    // Gives each subcommand its display name (`clawbridge-run`), which names its page.
    command.build();
    let Some(dir) = out_dir else {
        let written = page(command).render(out).and_then(|()| out.flush());
        return quiet_on_broken_pipe(written).context("writing the manual page");
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pages = vec![command.clone()];
    pages.extend(command.get_subcommands().filter(|sub| !sub.is_hide_set()).cloned());
    for command in pages {
        let man = page(command);
        let path = dir.join(man.get_filename());
        let mut file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        man.render(&mut file).and_then(|()| file.flush()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// One command's page, titled in capitals as manual pages are (`.TH CLAWBRIDGE-RUN 1`).
fn page(command: clap::Command) -> clap_mangen::Man {
    let name = command.get_display_name().unwrap_or_else(|| command.get_name()).to_uppercase();
    clap_mangen::Man::new(command).title(name).source(concat!("clawbridge ", env!("CARGO_PKG_VERSION")))
}
