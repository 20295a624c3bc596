//! The spinner with the elapsed time while the run waits (on stderr, drawn by `indicatif`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

/// How often the spinner moves (and the elapsed time is redrawn).
const TICK: Duration = Duration::from_millis(120);

/// The run's one spinner (one bar, one ticker thread for the whole run), shown while something is
/// awaited and hidden otherwise; lines written while it shows go through [`Spinner::around`].
#[derive(Debug)]
pub struct Spinner {
    bar: ProgressBar,
    /// Drawn on stderr now (else its target is hidden and nothing of it is on screen).
    shown: bool,
}

impl Spinner {
    /// A hidden spinner, coloured when stderr keeps colour; [`Spinner::show`] draws it.
    pub fn new(colour: bool) -> Spinner {
        let template = if colour { "{spinner:.cyan} {msg} {elapsed:.dim}" } else { "{spinner} {msg} {elapsed}" };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        // The template is a constant: it parses, and a failure would only lose the styling.
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ "));
        }
        bar.enable_steady_tick(TICK);
        Spinner { bar, shown: false }
    }

    /// Draws `what` and the time since [`Spinner::restart`].
    pub fn show(&mut self, what: &str) {
        if self.bar.message() != what {
            self.bar.set_message(what.to_owned());
        }
        if !self.shown {
            self.bar.set_draw_target(ProgressDrawTarget::term_like(Box::new(NoFiller(console::Term::stderr()))));
            self.shown = true;
            self.bar.tick();
        }
    }

    /// Something new is awaited: the elapsed time counts from now.
    pub fn restart(&self) {
        self.bar.reset_elapsed();
    }

    /// Erases it until the next [`Spinner::show`] (streamed text is coming, a question is asked).
    pub fn hide(&mut self) {
        if std::mem::take(&mut self.shown) {
            // Hidden first (under the bar's lock), so the ticker draws nothing after the erase;
            // then its one line is erased as indicatif itself would (the cursor is on it).
            self.bar.set_draw_target(ProgressDrawTarget::hidden());
            let _ = console::Term::stderr().clear_line();
        }
    }

    /// Runs `write` with the spinner erased, then draws it again where the cursor then is.
    pub fn around<T>(&self, write: impl FnOnce() -> T) -> T {
        if self.shown { self.bar.suspend(write) } else { write() }
    }
}

/// stderr as indicatif (0.18.6) sees it, without the filler after its line. indicatif pads its line with
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
