//! The `clawbridge` command line as a person meets it.

use std::process::Command;

fn clawbridge(args: &[&str]) -> std::process::Output {
    let state = tempfile::tempdir().expect("a temp dir");
    Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
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
    for sub in ["run", "serve", "reap"] {
        assert!(help.lines().any(|l| l.trim_start().starts_with(sub)), "`{sub}` missing from:\n{help}");
    }
    // The benchmarks are their own binary (`clawbridge-bench`), not a subcommand of the product.
    assert!(!help.lines().any(|l| l.trim_start().starts_with("bench")), "{help}");
}

#[test]
fn the_demo_backend_answers_the_prompt_and_runs_the_command_it_names() {
    let state = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    // The word is made here, so only the real pipeline can carry it to the answer.
    let word = format!("word-{}", std::process::id());
    let prompt = format!("please run ls and then `echo {word}`");
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "demo", "--approve", "--session", "demo-test", &prompt])
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .current_dir(cwd.path())
        .output()
        .expect("clawbridge runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("demo backend"), "the demo says what it is: {stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().any(|l| l.starts_with("→ ") && l.ends_with(&format!("echo {word}"))), "{text}");
    assert!(lines.iter().any(|l| l.starts_with("✓ ") && l.contains("(exit 0)")), "{text}");
    assert!(text.contains(&format!("You said: “{prompt}”")), "the prompt is quoted: {text}");
    assert!(lines.iter().any(|l| *l == word), "the command really ran: {text}");
    assert!(lines.last().is_some_and(|l| l.starts_with("— ok · 1 tool call(s)")), "{text}");

    let transcript = std::fs::read_to_string(state.path().join("sessions/demo-test/transcript.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = transcript.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let roles: Vec<&str> = rows.iter().map(|row| row["message"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "toolResult", "assistant"], "{transcript}");
    assert_eq!(rows[0]["message"]["content"], prompt.as_str());
    assert!(rows[2].to_string().contains(&word), "the tool result holds the real output: {transcript}");

    // A command the demo does not offer is named and not run.
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "demo", "--approve", "try `touch made-by-demo`"])
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .current_dir(cwd.path())
        .output()
        .expect("clawbridge runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("did not run `touch made-by-demo`"));
    assert!(!cwd.path().join("made-by-demo").exists());
}

#[test]
fn errors_are_one_clear_line_with_a_non_zero_exit_and_nothing_on_stdout() {
    let out = clawbridge(&["run", "--backend", "nonesuch", "hi"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout is reserved for output and protocols");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("clawbridge: error: unknown backend `nonesuch`"), "{err}");

    let out = clawbridge(&["bench", "--scenario", "nonesuch"]);
    assert!(!out.status.success(), "the product has no bench subcommand");
    assert!(out.stdout.is_empty(), "stdout is reserved for output and protocols");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand 'bench'"));
}

#[test]
fn reap_with_an_empty_registry_reports_zero() {
    let out = clawbridge(&["reap"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 orphaned process group(s) reaped"));
}

#[test]
fn a_session_name_that_would_leave_the_sessions_folder_is_refused_and_writes_nothing() {
    let state = tempfile::tempdir().unwrap();
    for name in ["../escape", "/tmp/abs", "a/b", "..", ".", "", ".hidden", &"x".repeat(129)] {
        let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
            .envs(clawbridge_fixtures::no_user_config())
            .args(["run", "--backend", "demo", "--session", name, "hi"])
            .env("CLAWBRIDGE_STATE_DIR", state.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{name:?} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is not a usable session name"), "{name:?}: {err}");
    }
    let written: Vec<_> = std::fs::read_dir(state.path()).unwrap().flatten().map(|e| e.path()).collect();
    assert!(written.is_empty(), "nothing is created for a refused name: {written:?}");
    assert!(!state.path().parent().unwrap().join("escape").exists());
}

#[test]
fn a_session_s_files_are_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "demo", "--session", "private", "hi"])
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let session = state.path().join("sessions/private");
    assert_eq!(mode(&state.path().join("sessions")), 0o700);
    assert_eq!(mode(&session), 0o700);
    assert_eq!(mode(&session.join("transcript.jsonl")), 0o600, "a transcript holds prompts and tool output");
    assert_eq!(mode(&state.path().join("pids")), 0o700);
}
