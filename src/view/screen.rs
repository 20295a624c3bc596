//! The terminal the view and the approval prompt share: one lock around stdout, stderr, the
//! spinner and whether stdout is mid-line, so a line from one never tears a line from the other
//! and the spinner is always cleared before anything is written.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use anstream::{AutoStream, ColorChoice};

use super::progress::Spinner;

/// The shared terminal of one run.
#[derive(Debug)]
pub struct Screen {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    out: AutoStream<std::io::Stdout>,
    err: AutoStream<std::io::Stderr>,
    /// Streamed text left stdout's cursor mid-line.
    mid_line: bool,
    /// What is awaited (the spinner's words) while nothing is shown; `None`: nothing is.
    waiting: Option<String>,
    /// Drawn only while waiting, at the start of a line, on a terminal, never with `--json`;
    /// made the first time it is drawn, one for the whole run.
    spinner: Option<Spinner>,
    /// The spinner may be drawn at all.
    animate: bool,
    /// Whether stderr keeps colour escapes (the spinner styles itself to match).
    err_colour: bool,
    /// A question is on screen, its answer being typed: what comes meanwhile waits in `held`.
    asking: bool,
    /// Output that came while a question was on screen, shown once it is answered.
    held: Vec<Held>,
    /// The bytes in `held`.
    held_bytes: usize,
    /// JSONL lines not yet written: stdout is line-buffered, so each line would be a `write` of its
    /// own; they go out together when the pipeline flushes, before anything else is written, or
    /// once [`MAX_PENDING_BYTES`] are waiting.
    pending: Vec<u8>,
}

/// The most JSONL bytes kept before they are written anyway.
const MAX_PENDING_BYTES: usize = 64 * 1024;

/// Output held back while the person types an answer.
#[derive(Debug)]
enum Held {
    Text(String),
    OutLine(String),
    Note(String),
    Log(String),
}

/// The screen of the run in progress, which the stderr log writes through ([`LogWriter`]).
static LOG_SCREEN: Mutex<Option<Weak<Screen>>> = Mutex::new(None);

/// The stderr log's writer: through the run's [`Screen`] while one is shown (so a log line
/// clears the spinner first and never lands inside another line), else straight to stderr.
#[derive(Clone, Copy, Debug, Default)]
pub struct LogWriter;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;

    fn make_writer(&'a self) -> LogWriter {
        LogWriter
    }
}

impl Write for LogWriter {
    // The fmt layer writes each event whole, in one `write_all`.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let screen =
            LOG_SCREEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().and_then(Weak::upgrade);
        match screen {
            Some(screen) => {
                screen.log(&String::from_utf8_lossy(bytes));
                Ok(bytes.len())
            }
            None => std::io::stderr().write(bytes),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Whether the stderr log may colour its lines: as [`anstream`] decides for stderr (a terminal,
/// `NO_COLOR`, `CLICOLOR_FORCE`), the same choice the view's own lines follow.
pub fn log_colour() -> bool {
    !matches!(anstream::stderr().current_choice(), ColorChoice::Never)
}

/// The most output held back while a question is on screen; beyond it, output is written anyway
/// (the agent streams while it waits for the answer, which no agent is known to do).
const MAX_HELD_BYTES: usize = 256 * 1024;

impl Screen {
    /// The screen of a run; `json` runs never animate (their stdout is a stream of events).
    pub fn new(json: bool) -> Arc<Screen> {
        let err = anstream::stderr();
        let err_colour = !matches!(err.current_choice(), ColorChoice::Never);
        let animate = !json && std::io::stderr().is_terminal();
        let state = State {
            out: anstream::stdout(),
            err,
            mid_line: false,
            waiting: None,
            spinner: None,
            animate,
            err_colour,
            asking: false,
            held: Vec::new(),
            held_bytes: 0,
            pending: Vec::new(),
        };
        let screen = Arc::new(Screen { state: Mutex::new(state) });
        *LOG_SCREEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::downgrade(&screen));
        screen
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere mid-write leaves nothing worth protecting: keep drawing.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Streamed assistant text on stdout, as it comes.
    pub fn text(&self, text: &str) {
        let mut state = self.lock();
        if !state.hold(|| Held::Text(text.to_owned()), text.len()) {
            state.text(text);
        }
    }

    /// A whole line of output on stdout (a tool, the summary), on a line of its own.
    pub fn out_line(&self, line: &str) {
        let mut state = self.lock();
        if !state.hold(|| Held::OutLine(line.to_owned()), line.len()) {
            state.out_line(line);
        }
    }

    /// `value` as one JSONL line on stdout, serialised straight into the kept bytes, which wait
    /// for [`Screen::flush`] or the next other write: no spinner is ever drawn with `--json`.
    pub fn json_line<T: serde::Serialize + ?Sized>(&self, value: &T) {
        let mut state = self.lock();
        let start = state.pending.len();
        if serde_json::to_writer(&mut state.pending, value).is_err() {
            // Nothing half-written is left behind (the events are plain data; this never happens).
            state.pending.truncate(start);
            return;
        }
        state.pending.push(b'\n');
        if state.pending.len() >= MAX_PENDING_BYTES {
            state.write_pending();
        }
    }

    /// Writes out the JSONL lines kept by [`Screen::json_line`].
    pub fn flush(&self) {
        self.lock().write_pending();
    }

    /// A line about the run on stderr (an approval, a retry, an interrupt), on a line of its own.
    pub fn note(&self, line: &str) {
        let mut state = self.lock();
        if !state.hold(|| Held::Note(line.to_owned()), line.len()) {
            state.note(line);
        }
    }

    /// A log line (ending in its newline) on stderr, as [`Screen::note`] places a line. Nothing in
    /// the screen logs while it holds its lock, so this never waits on itself.
    fn log(&self, text: &str) {
        let mut state = self.lock();
        if !state.hold(|| Held::Log(text.to_owned()), text.len()) {
            state.log(text);
        }
    }

    /// A question on stderr, the cursor left after it for the answer; until [`Screen::answered`],
    /// nothing else is drawn (output is held back, the spinner stays hidden).
    pub fn ask(&self, question: &str) {
        let mut state = self.lock();
        state.write_pending();
        state.hide_spinner();
        state.end_line();
        state.asking = true;
        let _ = write!(state.err, "{question}");
        let _ = state.err.flush();
    }

    /// The question was answered: `line` says how, then what was held back is shown.
    pub fn answered(&self, line: &str) {
        let mut state = self.lock();
        state.asking = false;
        state.note(line);
        state.release_held();
    }

    /// A line that cannot wait for an answer (Ctrl-C, a question that went unanswered): a question
    /// still on screen is left (its line ended), `line` is shown now, then what was held back.
    pub fn urgent(&self, line: &str) {
        let mut state = self.lock();
        state.write_pending();
        if std::mem::take(&mut state.asking) {
            let _ = writeln!(state.err);
        }
        state.note(line);
        state.release_held();
    }

    /// Something is awaited (`what`: "waiting for codex"); the spinner shows it until output comes.
    pub fn wait(&self, what: &str) {
        let mut state = self.lock();
        state.waiting = Some(what.to_owned());
        if let Some(spinner) = &state.spinner {
            spinner.restart();
        }
        state.show_spinner();
    }

    /// Nothing is awaited any more (the turn ended).
    pub fn done(&self) {
        let mut state = self.lock();
        state.waiting = None;
        state.hide_spinner();
        state.end_line();
    }
}

impl Drop for Screen {
    /// A run that stops early (an error after the turn) still shows every event it printed.
    fn drop(&mut self) {
        self.lock().write_pending();
    }
}

impl State {
    /// The kept JSONL lines, in one write, to stdout itself: JSON is data, so it bypasses the
    /// colour adapter, which on a pipe would strip bytes it takes for terminal controls (DEL,
    /// which JSON leaves unescaped in a string) and scan every byte to find them.
    fn write_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut raw: &std::io::Stdout = self.out.as_inner();
        let _ = raw.write_all(&self.pending);
        let _ = raw.flush();
        self.pending.clear();
        // A burst far larger than usual is not kept allocated for the rest of the run.
        self.pending.shrink_to(MAX_PENDING_BYTES);
    }

    /// Keeps `what` for later when a question is on screen (and there is room); false: write it now.
    fn hold(&mut self, what: impl FnOnce() -> Held, bytes: usize) -> bool {
        if !self.asking || self.held_bytes + bytes > MAX_HELD_BYTES {
            return false;
        }
        self.held_bytes += bytes;
        self.held.push(what());
        true
    }

    fn release_held(&mut self) {
        self.held_bytes = 0;
        for held in std::mem::take(&mut self.held) {
            match held {
                Held::Text(text) => self.text(&text),
                Held::OutLine(line) => self.out_line(&line),
                Held::Note(line) => self.note(&line),
                Held::Log(text) => self.log(&text),
            }
        }
    }

    fn text(&mut self, text: &str) {
        self.write_pending();
        if text.is_empty() {
            return;
        }
        self.hide_spinner();
        let _ = write!(self.out, "{text}");
        let _ = self.out.flush();
        self.mid_line = !text.ends_with('\n');
    }

    /// Runs `write` with the spinner (if shown) erased and drawn again after it.
    fn around(&mut self, write: impl FnOnce(&mut AutoStream<std::io::Stdout>, &mut AutoStream<std::io::Stderr>)) {
        let (out, err) = (&mut self.out, &mut self.err);
        match &self.spinner {
            Some(spinner) => spinner.around(|| write(out, err)),
            None => write(out, err),
        }
    }

    fn out_line(&mut self, line: &str) {
        self.write_pending();
        self.end_line();
        self.around(|out, _| {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        });
        self.show_spinner();
    }

    fn note(&mut self, line: &str) {
        self.write_pending();
        self.end_line();
        self.around(|_, err| {
            let _ = writeln!(err, "{line}");
            let _ = err.flush();
        });
        self.show_spinner();
    }

    fn log(&mut self, text: &str) {
        self.write_pending();
        self.end_line();
        self.around(|_, err| {
            let _ = write!(err, "{text}");
            let _ = err.flush();
        });
        self.show_spinner();
    }

    fn end_line(&mut self) {
        if self.mid_line {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
            self.mid_line = false;
        }
    }

    fn hide_spinner(&mut self) {
        if let Some(spinner) = &mut self.spinner {
            spinner.hide();
        }
    }

    /// Draws the spinner when something is awaited and stdout's cursor is at a line start (a
    /// spinner redrawn mid-line would overwrite the streamed text).
    fn show_spinner(&mut self) {
        if !self.animate || self.asking || self.mid_line {
            return;
        }
        if let Some(what) = &self.waiting {
            let colour = self.err_colour;
            self.spinner.get_or_insert_with(|| Spinner::new(colour)).show(what);
        }
    }
}
