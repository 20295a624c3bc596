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

/// A peer's text on one line as shown to the person: control characters (an escape that would
/// recolour or clear the terminal, a newline that would forge a line of the view) written as
/// visible escapes (`\u{1b}`, `\n`), the rest as it is.
pub fn one_line(text: &str) -> String {
    escaped(text, |_| false)
}

/// A peer's streamed text (the assistant's answer): as [`one_line`], but its line breaks and tabs
/// kept.
pub fn lines(text: &str) -> String {
    escaped(text, |c| matches!(c, '\n' | '\t'))
}

fn escaped(text: &str, kept: impl Fn(char) -> bool) -> String {
    if !text.chars().any(|c| c.is_control() && !kept(c)) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if c.is_control() && !kept(c) { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peers_control_characters_are_shown_not_obeyed() {
        assert_eq!(one_line("ls\u{1b}[2J -a"), "ls\\u{1b}[2J -a");
        assert_eq!(one_line("a\nb\rc"), "a\\nb\\rc");
        assert_eq!(one_line("plain “words” ✓"), "plain “words” ✓");
        assert_eq!(lines("one\n\ttwo\u{7}"), "one\n\ttwo\\u{7}");
    }
}
