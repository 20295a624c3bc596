//! The view's few styles. Text is written through `anstream`, which drops the escapes when the
//! stream is not a terminal, under `NO_COLOR`, or with `TERM=dumb`, and keeps them under
//! `CLICOLOR_FORCE` — so the styles here never decide whether colour is on.

use anstyle::{AnsiColor, Style};

/// A tool the agent starts (`→ bash echo hi`).
pub const TOOL: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Cyan)));
/// Something that went well (`✓`, an approval granted).
pub const GOOD: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Green)));
/// Something that failed or was refused (`✗`, an approval denied).
pub const BAD: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));
/// Waiting on something that may not come (a retrying model endpoint, an interrupt).
pub const WARN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow)));
/// A question for the person.
pub const ASK: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow))).bold();
/// What frames the output (the summary line, notices).
pub const DIM: Style = Style::new().dimmed();

/// `text` in `style` (the escapes go only as far as the writer lets them).
pub fn paint(style: Style, text: impl std::fmt::Display) -> String {
    format!("{style}{text}{style:#}")
}
