//! `clawbridge completions <shell>` and `clawbridge man` (issue #17, packaging): each output is
//! well formed and names every visible subcommand, which the test reads from the command line's own
//! definition rather than from a list of its own.

use std::process::Command;

use clap::CommandFactory;
use clawbridge::cli::Cli;

const BIN: &str = env!("CARGO_BIN_EXE_clawbridge");

/// The subcommands a person sees in `clawbridge --help` (not the hidden internal roles).
fn visible_subcommands() -> Vec<String> {
    let subcommands: Vec<String> = Cli::command()
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .map(|sub| sub.get_name().to_owned())
        .collect();
    assert!(subcommands.len() >= 4, "run, serve, completions, man, …: {subcommands:?}");
    subcommands
}

fn stdout_of(args: &[&str]) -> String {
    let output =
        Command::new(BIN).envs(clawbridge_fixtures::no_user_config()).args(args).output().expect("clawbridge runs");
    assert!(
        output.status.success(),
        "clawbridge {args:?}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

#[test]
fn every_shell_gets_a_completion_script_naming_every_subcommand() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for name in visible_subcommands() {
            assert!(script.contains(&name), "{shell}'s completions lack `{name}`:\n{script}");
        }
    }
}

#[test]
fn the_bash_completion_parses_and_completes_the_subcommands() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clawbridge.bash");
    std::fs::write(&file, stdout_of(&["completions", "bash"])).unwrap();
    let syntax = Command::new("bash").arg("-n").arg(&file).output().expect("bash runs");
    assert!(syntax.status.success(), "bash -n: {}", String::from_utf8_lossy(&syntax.stderr));

    // What bash offers after `clawbridge <TAB>`, through the completion function the script registers.
    let complete = r#"source "$1"; COMP_WORDS=(clawbridge ""); COMP_CWORD=1; COMP_LINE="clawbridge "; COMP_POINT=11
        _clawbridge clawbridge "" clawbridge; printf '%s\n' "${COMPREPLY[@]}""#;
    let output = Command::new("bash").args(["-c", complete, "complete"]).arg(&file).output().expect("bash runs");
    let offered = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let offered: Vec<&str> = offered.lines().collect();
    for name in visible_subcommands() {
        assert!(offered.contains(&name.as_str()), "`clawbridge <TAB>` offers {offered:?}, not `{name}`");
    }
}

#[test]
fn the_man_page_is_roff_titled_clawbridge_and_lists_the_subcommands() {
    let page = stdout_of(&["man"]);
    assert!(page.lines().any(|line| line.starts_with(".TH CLAWBRIDGE 1 ")), "{page}");
    let listed = page.split(".SH SUBCOMMANDS").nth(1).expect("a SUBCOMMANDS section");
    for name in visible_subcommands() {
        assert!(listed.contains(&format!("clawbridge\\-{}", name.replace('-', "\\-"))), "`{name}` in:\n{listed}");
    }
    // The roff structure, without needing groff: a .TH first (after only the `.ie`/`.el` pair that
    // defines the apostrophe string for groff and other roffs), then NAME and SYNOPSIS sections
    // before the rest, and no request line but the man macros clap_mangen writes.
    let requests: Vec<&str> = page
        .lines()
        .filter(|line| line.starts_with('.'))
        .filter_map(|line| line[1..].split_whitespace().next())
        .collect();
    assert_eq!(requests.iter().find(|request| !["ie", "el"].contains(request)), Some(&"TH"), "{page}");
    let sections: Vec<&str> =
        page.lines().filter_map(|line| line.strip_prefix(".SH ")).map(|name| name.trim_matches('"')).collect();
    assert!(sections.starts_with(&["NAME", "SYNOPSIS"]), "sections {sections:?}");
    for request in &requests {
        assert!(
            ["TH", "SH", "SS", "TP", "PP", "IP", "RS", "RE", "B", "I", "BR", "IR", "br", "ie", "el", "sp"]
                .contains(request),
            "`.{request}` is not a man macro:\n{page}"
        );
    }
    assert_eq!(requests.iter().filter(|request| **request == "TH").count(), 1, "{page}");
}

#[test]
fn man_out_dir_writes_one_page_per_visible_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    assert_eq!(stdout_of(&["man", "--out-dir", out.to_str().unwrap()]), "", "pages go to files, not stdout");
    let mut written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = visible_subcommands().iter().map(|name| format!("clawbridge-{name}.1")).collect();
    expected.push("clawbridge.1".into());
    expected.sort();
    assert_eq!(written, expected);
    let run = std::fs::read_to_string(out.join("clawbridge-run.1")).unwrap();
    assert!(run.lines().any(|line| line.starts_with(".TH CLAWBRIDGE-RUN 1 ")), "{run}");
}

#[test]
fn a_reader_that_closed_the_pipe_ends_completions_and_man_quietly() {
    for args in [&["completions", "zsh"][..], &["completions", "bash"], &["man"]] {
        // The pipe's read end is closed before clawbridge starts, so its first write fails with
        // EPIPE every time (what `clawbridge man | head -1` does once head has its line).
        let (reader, writer) = nix::unistd::pipe().expect("a pipe");
        drop(reader);
        let output = Command::new(BIN)
            .envs(clawbridge_fixtures::no_user_config())
            .args(args)
            .stdout(std::process::Stdio::from(writer))
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("clawbridge runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "clawbridge {args:?} into a closed pipe: {}\n{stderr}", output.status);
        assert_eq!(stderr, "", "clawbridge {args:?} says nothing about a reader that left");
    }
}
