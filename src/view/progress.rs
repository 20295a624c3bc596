//! The spinner with the elapsed time while the run waits (on stderr, drawn by `indicatif`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// How often the spinner moves (and the elapsed time is redrawn).
const TICK: Duration = Duration::from_millis(120);

/// A running spinner; [`Spinner::clear`] removes it from the terminal.
#[derive(Debug)]
pub struct Spinner(ProgressBar);

impl Spinner {
    /// Starts drawing `what` with a spinner and the time since, coloured when stderr keeps colour.
    pub fn start(what: &str, colour: bool) -> Spinner {
        let template = if colour { "{spinner:.cyan} {msg} {elapsed:.dim}" } else { "{spinner} {msg} {elapsed}" };
        let target = ProgressDrawTarget::term_like(Box::new(NoFiller(console::Term::stderr())));
        let bar = ProgressBar::with_draw_target(None, target);
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

/// stderr as indicatif sees it, without the filler after its line. indicatif pads its line with
/// spaces to the terminal's full width, leaving the cursor in the last column, where whatever the
/// terminal itself echoes next (the `^C` of a Ctrl-C, a key typed ahead) wraps to a new line, and
/// the spinner's line then survives its own clearing. Without the filler the cursor stays on the
/// spinner's line, and every redraw and the final clear erase that whole line anyway.
#[derive(Debug)]
struct NoFiller(console::Term);

impl TermLike for NoFiller {
    fn width(&self) -> u16 {
        self.0.size().1
    }

    fn height(&self) -> u16 {
        self.0.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        self.0.write_line(line)
    }

    fn write_str(&self, text: &str) -> std::io::Result<()> {
        // The filler is the only text indicatif writes that is all spaces (a line starts with the
        // spinner's mark).
        if !text.is_empty() && text.bytes().all(|b| b == b' ') {
            return Ok(());
        }
        self.0.write_str(text)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}
