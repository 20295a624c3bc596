//! The command a demo prompt names, and whether the demo may offer to run it.
//!
//! This is the demo's only safety gate (the person's `--approve` runs what passes it unasked), so
//! it admits a command only when every word of it is known to print and change nothing: a program
//! from a short list, each with the arguments it may take. Anything else is refused.

use std::path::{Component, Path};

/// The longest command the demo takes from a prompt.
const MAX_COMMAND: usize = 200;

/// What a program may be given.
#[derive(Clone, Copy)]
enum Takes {
    /// Nothing at all (`date` and `hostname` set the system when given arguments).
    Nothing,
    /// Option letters only (`uname -a`).
    Flags,
    /// Plain words: letters, digits and sentence punctuation, no escapes (`echo hello, world`).
    Words,
    /// Relative paths inside the cwd, no options (`cat README.md`; an option such as
    /// `--files0-from` could name any file).
    Files,
    /// Option letters and relative paths inside the cwd (`ls -la src`).
    FlagsAndFiles,
}

/// Programs the demo offers to run, and what each may be given.
const HARMLESS: &[(&str, Takes)] = &[
    ("echo", Takes::Words),
    ("printf", Takes::Words),
    ("ls", Takes::FlagsAndFiles),
    ("pwd", Takes::Nothing),
    ("date", Takes::Nothing),
    ("uname", Takes::Flags),
    ("whoami", Takes::Nothing),
    ("id", Takes::Nothing),
    ("hostname", Takes::Nothing),
    ("wc", Takes::Files),
    ("cat", Takes::Files),
    ("head", Takes::Files),
    ("true", Takes::Nothing),
];

/// What the prompt asks the demo to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named {
    /// A harmless command: the demo asks for approval and runs it.
    Harmless(Harmless),
    /// A command the demo will not offer (not on its list, or with arguments it does not take):
    /// the demo says so instead.
    Refused(String),
}

/// A command that passed the gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Harmless {
    /// As the prompt wrote it (shown to the person).
    pub shown: String,
    /// Its words, each quoted for `sh` so nothing in them is expanded.
    pub quoted: String,
}

/// The command in `prompt`: the first `backticked` span, else what follows the last word `run`
/// on its line when it starts with a program the demo knows (`please run echo hello`; "run some
/// checks" names no command). `None` when the prompt names none. File arguments are judged
/// against `cwd` (the session's), resolving symlinks, so none reaches outside it.
pub fn named_in(prompt: &str, cwd: Option<&Path>) -> Option<Named> {
    let program_of = |command: &str| command.split_whitespace().next().unwrap_or_default().to_owned();
    let known = |program: &str| HARMLESS.iter().any(|(name, _)| *name == program);
    let command = backticked(prompt).or_else(|| after_run(prompt).filter(|command| known(&program_of(command))))?;
    let command = command.trim().trim_end_matches(['.', '!', '?']).trim();
    if command.is_empty() {
        return None;
    }
    let refused = || Some(Named::Refused(command.chars().take(MAX_COMMAND).collect()));
    if command.len() > MAX_COMMAND {
        return refused();
    }
    let Ok(words) = shell_words::split(command) else { return refused() };
    let Some((program, args)) = words.split_first() else { return refused() };
    let Some((_, takes)) = HARMLESS.iter().find(|(name, _)| name == program) else { return refused() };
    if !args.iter().all(|arg| admits(*takes, arg, cwd)) {
        return refused();
    }
    // A NUL byte cannot reach `sh -c`: refused here rather than failing the spawn.
    if words.iter().any(|word| word.contains('\0')) {
        return refused();
    }
    let quoted = shell_words::join(&words);
    Some(Named::Harmless(Harmless { shown: command.to_owned(), quoted }))
}

/// The programs the demo offers to run, for its answer when it refuses one.
pub fn harmless_programs() -> String {
    HARMLESS.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

fn admits(takes: Takes, arg: &str, cwd: Option<&Path>) -> bool {
    match takes {
        Takes::Nothing => false,
        Takes::Flags => is_flags(arg),
        Takes::Words => is_plain_word(arg),
        Takes::Files => is_inside(arg, cwd),
        Takes::FlagsAndFiles => is_flags(arg) || is_inside(arg, cwd),
    }
}

/// `-la`: a dash and letters (no `--long=value` option, which could name a file).
fn is_flags(arg: &str) -> bool {
    arg.strip_prefix('-').is_some_and(|letters| !letters.is_empty() && letters.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Letters, digits, spaces and sentence punctuation: nothing `printf` or `echo -e` turns into a
/// control character (`\033`, `%b`), no leading dash.
fn is_plain_word(arg: &str) -> bool {
    !arg.starts_with('-') && arg.chars().all(|c| c.is_alphanumeric() || " .,:!?'\"_+=@/-".contains(c))
}

/// A relative path with no `..`, no option dash, that exists and resolves (symlinks followed)
/// inside `cwd`. Without a cwd nothing is inside.
fn is_inside(arg: &str, cwd: Option<&Path>) -> bool {
    let Some(cwd) = cwd else { return false };
    let path = Path::new(arg);
    let plain = !arg.is_empty()
        && !arg.starts_with('-')
        && path.components().all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
    if !plain {
        return false;
    }
    match (cwd.canonicalize(), cwd.join(path).canonicalize()) {
        (Ok(root), Ok(resolved)) => resolved.starts_with(root),
        _ => false,
    }
}

fn backticked(prompt: &str) -> Option<&str> {
    let (_, rest) = prompt.split_once('`')?;
    let (inside, _) = rest.split_once('`')?;
    Some(inside)
}

fn after_run(prompt: &str) -> Option<&str> {
    prompt.lines().find_map(|line| {
        let lower = line.to_ascii_lowercase();
        let at = lower
            .rmatch_indices("run ")
            .map(|(at, _)| at)
            .find(|&at| at == 0 || !lower.as_bytes()[at - 1].is_ascii_alphanumeric())?;
        Some(&line[at + "run ".len()..])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harmless(shown: &str, quoted: &str) -> Option<Named> {
        Some(Named::Harmless(Harmless { shown: shown.into(), quoted: quoted.into() }))
    }

    fn refused(command: &str) -> Option<Named> {
        Some(Named::Refused(command.into()))
    }

    #[test]
    fn a_backticked_or_run_command_is_found_and_judged() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = Some(dir.path());
        assert_eq!(named_in("say hi and run echo hello.", cwd), harmless("echo hello", "echo hello"));
        assert_eq!(named_in("try `ls -la` here", cwd), harmless("ls -la", "ls -la"));
        assert_eq!(named_in("Run printf 'a b'", cwd), harmless("printf 'a b'", "printf 'a b'"));
        assert_eq!(named_in("`rm -rf /`", cwd), refused("rm -rf /"));
        assert_eq!(named_in("run rm -rf /", cwd), None, "after `run`, only a program the demo knows names a command");
        assert_eq!(named_in("can you run some checks?", cwd), None);
        assert_eq!(named_in("run echo hi; rm x", cwd), refused("echo hi; rm x"));
        assert_eq!(named_in("run echo $(id)", cwd), refused("echo $(id)"));
        assert_eq!(named_in("please `echo hi > x`", cwd), refused("echo hi > x"));
        assert_eq!(named_in("what is a rerun worth?", cwd), None, "`rerun ` is not `run `");
        assert_eq!(named_in("list the files", cwd), None);
        assert_eq!(named_in("run ``", cwd), None);
    }

    #[test]
    fn what_changes_the_system_or_reads_outside_the_cwd_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("notes.txt"), "hi").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", cwd.join("escape")).unwrap();
        std::fs::create_dir(cwd.join("sub")).unwrap();
        let cwd = Some(cwd);
        // Programs that set the system when given arguments take none.
        assert_eq!(named_in("run date", cwd), harmless("date", "date"));
        assert_eq!(named_in("run date -s 2020-01-01", cwd), refused("date -s 2020-01-01"));
        assert_eq!(named_in("run hostname pwned", cwd), refused("hostname pwned"));
        assert_eq!(named_in("run hostname -F notes.txt", cwd), refused("hostname -F notes.txt"));
        // Files: relative, inside the cwd, no options.
        assert_eq!(named_in("run cat notes.txt", cwd), harmless("cat notes.txt", "cat notes.txt"));
        assert_eq!(named_in("run wc ./sub/../notes.txt", cwd), refused("wc ./sub/../notes.txt"));
        assert_eq!(named_in("run cat /proc/self/environ", cwd), refused("cat /proc/self/environ"));
        assert_eq!(named_in("run cat ../secret", cwd), refused("cat ../secret"));
        assert_eq!(named_in("run cat escape", cwd), refused("cat escape"), "a symlink out of the cwd");
        assert_eq!(named_in("run head -n 1 notes.txt", cwd), refused("head -n 1 notes.txt"));
        assert_eq!(named_in("run wc --files0-from=notes.txt", cwd), refused("wc --files0-from=notes.txt"));
        assert_eq!(named_in("run cat notes.txt", None), refused("cat notes.txt"), "no cwd, nothing is inside it");
        assert_eq!(named_in("run ls -la sub", cwd), harmless("ls -la sub", "ls -la sub"));
        assert_eq!(named_in("run ls /root", cwd), refused("ls /root"));
        assert_eq!(named_in("run ls --hide=x", cwd), refused("ls --hide=x"));
        // Words: nothing printf or echo -e turns into escapes, no quoting trick reaching the shell.
        assert_eq!(named_in(r"run printf '\033[2J'", cwd), refused(r"printf '\033[2J'"));
        assert_eq!(named_in("run printf %b x", cwd), refused("printf %b x"));
        assert_eq!(named_in("run echo -e hi", cwd), refused("echo -e hi"));
        assert_eq!(named_in("run echo 'a b' \"c\"", cwd), harmless("echo 'a b' \"c\"", "echo 'a b' c"));
        assert_eq!(named_in("run echo 'unclosed", cwd), refused("echo 'unclosed"));
        assert_eq!(named_in("run echo well-known", cwd), harmless("echo well-known", "echo well-known"));
        assert_eq!(named_in("run uname -a", cwd), harmless("uname -a", "uname -a"));
        assert_eq!(named_in("run uname x", cwd), refused("uname x"));
    }
}
