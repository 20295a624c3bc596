//! The command a demo prompt names, and whether the demo may offer to run it.

/// Programs the demo offers to run: they print, and change nothing.
const HARMLESS: &[&str] =
    &["echo", "printf", "ls", "pwd", "date", "uname", "whoami", "id", "hostname", "wc", "cat", "head", "true"];

/// The longest command the demo takes from a prompt.
const MAX_COMMAND: usize = 200;

/// What the prompt asks the demo to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Named {
    /// A harmless command: the demo asks for approval and runs it.
    Harmless(String),
    /// A command the demo will not offer (not on its list, or with shell syntax that could chain
    /// or redirect): the demo says so instead.
    Refused(String),
}

/// The command in `prompt`: the first `backticked` span, else what follows the last word `run`
/// on its line when it starts with a program the demo knows (`please run echo hello`; "run some
/// checks" names no command). `None` when the prompt names none.
pub fn named_in(prompt: &str) -> Option<Named> {
    let program_of = |command: &str| command.split_whitespace().next().unwrap_or_default().to_owned();
    let command = backticked(prompt)
        .or_else(|| after_run(prompt).filter(|command| HARMLESS.contains(&program_of(command).as_str())))?;
    let command = command.trim().trim_end_matches(['.', '!', '?']).trim();
    if command.is_empty() {
        return None;
    }
    let program = program_of(command);
    let program = program.as_str();
    // Quotes are fine (`echo "a b"`); anything that chains, substitutes or redirects is not.
    let chains = command.contains([';', '|', '&', '>', '<', '`', '$', '\n', '(', ')']);
    if command.len() <= MAX_COMMAND && HARMLESS.contains(&program) && !chains {
        Some(Named::Harmless(command.to_owned()))
    } else {
        Some(Named::Refused(command.chars().take(MAX_COMMAND).collect()))
    }
}

/// The programs the demo offers to run, for its answer when it refuses one.
pub fn harmless_programs() -> String {
    HARMLESS.join(", ")
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

    #[test]
    fn a_backticked_or_run_command_is_found_and_judged() {
        assert_eq!(named_in("say hi and run echo hello."), Some(Named::Harmless("echo hello".into())));
        assert_eq!(named_in("try `ls -la` here"), Some(Named::Harmless("ls -la".into())));
        assert_eq!(named_in("Run printf 'a b'"), Some(Named::Harmless("printf 'a b'".into())));
        assert_eq!(named_in("`rm -rf /`"), Some(Named::Refused("rm -rf /".into())));
        assert_eq!(named_in("run rm -rf /"), None, "after `run`, only a program the demo knows names a command");
        assert_eq!(named_in("can you run some checks?"), None);
        assert_eq!(named_in("run echo hi; rm x"), Some(Named::Refused("echo hi; rm x".into())));
        assert_eq!(named_in("run echo $(id)"), Some(Named::Refused("echo $(id)".into())));
        assert_eq!(named_in("please `echo hi > x`"), Some(Named::Refused("echo hi > x".into())));
        assert_eq!(named_in("what is a rerun worth?"), None, "`rerun ` is not `run `");
        assert_eq!(named_in("list the files"), None);
        assert_eq!(named_in("run ``"), None);
    }
}
