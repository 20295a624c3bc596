//! The `clawbridge` command line as a person meets it.

use std::process::Command;

fn clawbridge(args: &[&str]) -> std::process::Output {
    let state = tempfile::tempdir().expect("a temp dir");
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(args)
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .output()
        .expect("clawbridge runs")
}

#[test]
fn help_lists_every_subcommand() {
    let out = clawbridge(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for sub in ["run", "serve", "record", "bench", "reap"] {
        assert!(help.lines().any(|l| l.trim_start().starts_with(sub)), "`{sub}` missing from:\n{help}");
    }
}

#[test]
fn the_demo_backend_runs_and_says_what_it_is() {
    let out = clawbridge(&["run", "--backend", "demo", "hello"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("demo backend") && text.contains("\"hello\""), "{text}");
}

#[test]
fn errors_are_one_clear_line_with_a_non_zero_exit_and_nothing_on_stdout() {
    let out = clawbridge(&["run", "--backend", "nonesuch", "hi"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout is reserved for output and protocols");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("clawbridge: error: unknown backend `nonesuch`"), "{err}");

    let out = clawbridge(&["serve"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not available in this build yet"));
}

#[test]
fn reap_with_an_empty_registry_reports_zero() {
    let out = clawbridge(&["reap"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 orphaned process group(s) reaped"));
}
