//! The spinner with the elapsed time while the run waits (on stderr, drawn by `indicatif`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How often the spinner moves (and the elapsed time is redrawn).
const TICK: Duration = Duration::from_millis(120);

/// A running spinner; [`Spinner::clear`] removes it from the terminal.
#[derive(Debug)]
pub struct Spinner(ProgressBar);

impl Spinner {
    /// Starts drawing `what` with a spinner and the time since, coloured when stderr keeps colour.
    pub fn start(what: &str, colour: bool) -> Spinner {
        let template = if colour { "{spinner:.cyan} {msg} {elapsed:.dim}" } else { "{spinner} {msg} {elapsed}" };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        // The template is a constant: it parses, and a failure would only lose the styling.
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "));
        }
        bar.set_message(what.to_owned());
        bar.enable_steady_tick(TICK);
        Spinner(bar)
    }

    /// Stops it and erases its line, so the next line starts where it was.
    pub fn clear(self) {
        self.0.finish_and_clear();
    }
}
