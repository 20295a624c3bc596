//! `clawbridge run`'s view as a person sees it in a real terminal: driven through tmux (a pane is
//! a pseudo-terminal, so colours, the prompt and the keystroke answering it are the real thing),
//! and the same run piped, under `NO_COLOR`, under `CLICOLOR_FORCE` and with `--json`.
//!
//! tmux comes from Debian (`scripts/install-peers.sh` installs it when missing, as root or through
//! `sudo -n`); without it these tests skip, unless `CLAWBRIDGE_REQUIRE_PEERS=1`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clawbridge_fixtures::peers::peers_required;
use common::stub_codex::{THREAD, TURN, plan, stub_codex, stub_pid};
use serde_json::json;

/// How long a step may take on a loaded machine; only a hang reaches it (polled, never timed).
const PATIENCE: Duration = Duration::from_secs(60);
/// What the shell in the pane prints when the run is over, with its exit status.
const DONE: &str = "RUN-EXITED=";

fn tmux_or_skip() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("tmux"))
        .find(|candidate| candidate.is_file());
    match found {
        Some(tmux) => Some(tmux),
        None if peers_required() => {
            panic!("CLAWBRIDGE_REQUIRE_PEERS=1 but tmux is not installed (scripts/install-peers.sh)")
        }
        None => {
            eprintln!(
                "skipped: tmux is not installed (scripts/install-peers.sh installs it as root or through sudo -n)"
            );
            None
        }
    }
}

/// A tmux server of the test's own (its own socket), killed when dropped.
struct Tmux {
    tmux: PathBuf,
    socket: String,
}

impl Tmux {
    fn start(tmux: PathBuf, name: &str, command: &str) -> Tmux {
        let socket = format!("clawbridge-test-{name}-{}", std::process::id());
        let tmux = Tmux { tmux, socket };
        // A wide pane, so no line of the view wraps; the shell stays after the run for capturing,
        // and a Ctrl-C typed in the pane (which reaches the shell too) does not end it.
        let script = format!("trap true INT; {command}; echo {DONE}$?; sleep 600");
        let out = tmux.cmd(&["new-session", "-d", "-x", "220", "-y", "50", "-s", "view", "sh", "-c", &script]);
        assert!(out.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&out.stderr));
        tmux
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new(&self.tmux)
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs")
    }

    /// The pane's text; with `escapes`, its colours as ANSI escapes.
    fn capture(&self, escapes: bool) -> String {
        let mut args = vec!["capture-pane", "-p", "-t", "view", "-S", "-"];
        if escapes {
            args.push("-e");
        }
        String::from_utf8_lossy(&self.cmd(&args).stdout).into_owned()
    }

    fn wait_for(&self, what: &str) -> String {
        wait_until(what, || Some(self.capture(false)).filter(|pane| pane.contains(what)))
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "view"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn wait_until<T>(what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// What of the caller's environment would change the view (a debug log interleaved, colours
/// chosen by hand, a config file's settings): every run here starts without it.
const CALLER_ENV: &[&str] =
    &["NO_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "CLAWBRIDGE_LOG", "RUST_LOG", "CLAWBRIDGE_CONFIG", "XDG_CONFIG_HOME"];

/// The shell line that runs `clawbridge run` on the demo in `cwd` with `env` set and `prompt`;
/// its config home is `state` (empty, so no config file applies).
fn run_line(state: &Path, cwd: &Path, env: &str, extra: &str, prompt: &str) -> String {
    let unset: String = CALLER_ENV.iter().map(|name| format!("-u {name} ")).collect();
    format!(
        "cd {} && env {unset}TERM=xterm-256color CLAWBRIDGE_STATE_DIR={state} XDG_CONFIG_HOME={state} {env} {} run {extra} {}",
        quote(&cwd.display().to_string()),
        quote(env!("CARGO_BIN_EXE_clawbridge")),
        quote(prompt),
        state = quote(&state.display().to_string()),
    )
}

/// Runs a shell line under a [`clawbridge`] command's environment and directory.
trait ShellLine {
    fn output_of_shell(&mut self, line: &str) -> std::process::Output;
}

impl ShellLine for Command {
    fn output_of_shell(&mut self, line: &str) -> std::process::Output {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(line);
        for (name, value) in self.get_envs() {
            match value {
                Some(value) => shell.env(name, value),
                None => shell.env_remove(name),
            };
        }
        if let Some(dir) = self.get_current_dir() {
            shell.current_dir(dir);
        }
        shell.output().unwrap()
    }
}

/// `clawbridge run` as a plain child, under [`run_line`]'s environment rules.
fn clawbridge(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    for name in CALLER_ENV {
        command.env_remove(name);
    }
    command.env("CLAWBRIDGE_STATE_DIR", state).env("XDG_CONFIG_HOME", state);
    command
}

const ESC: char = '\u{1b}';

/// An SGR (colour) escape: `ESC [ … m`.
fn has_colour(text: &str) -> bool {
    text.split(ESC).skip(1).any(|rest| {
        rest.strip_prefix('[').is_some_and(|sgr| {
            sgr.chars().take_while(|c| *c != 'm').all(|c| c.is_ascii_digit() || c == ';') && sgr.contains('m')
        })
    })
}

#[test]
fn the_approval_is_asked_in_colour_answered_by_keystroke_and_the_answer_shown() {
    let Some(tmux) = tmux_or_skip() else { return };
    let (state, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let word = format!("typed-{}", std::process::id());
    let prompt = format!("hello from the pane, run echo {word}");
    let pane = Tmux::start(tmux, "approve", &run_line(state.path(), cwd.path(), "", "", &prompt));

    let asked = pane.wait_for("Allow? [y]es / [a]lways / [n]o / [s]top:");
    let cwd_text = cwd.path().display().to_string();
    assert!(
        asked.lines().any(|l| l.starts_with(&format!("? the agent asks to run `echo {word}` in {cwd_text}"))),
        "the question names the command and where it runs:\n{asked}"
    );
    assert!(!asked.contains("You said:"), "the agent waits for the answer:\n{asked}");
    pane.keys(&["y", "Enter"]);

    let done = pane.wait_for(DONE);
    let lines: Vec<&str> = done.lines().map(str::trim_end).collect();
    assert!(lines.contains(&"✓ allowed by you"), "the answer line says who decided:\n{done}");
    assert!(lines.contains(&format!("You said: “{prompt}”").as_str()), "{done}");
    assert!(lines.contains(&word.as_str()), "the command's own output:\n{done}");
    assert!(lines.iter().any(|l| l.starts_with("— ok · 1 tool call(s)")), "{done}");
    assert!(lines.contains(&format!("{DONE}0").as_str()), "{done}");
    assert!(has_colour(&pane.capture(true)), "a terminal gets colours:\n{}", pane.capture(true).escape_debug());
}

#[test]
fn piped_or_under_no_color_the_view_has_no_escapes_and_clicolor_force_keeps_them() {
    let Some(tmux) = tmux_or_skip() else { return };
    let (state, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());

    // Piped: the question still reaches the person (stdin is the pane), but stdout and stderr
    // are a pipe, so not one escape is written.
    let piped = cwd.path().join("piped.txt");
    let line = format!(
        "{} 2>&1 | cat > {}",
        run_line(state.path(), cwd.path(), "", "", "run echo piped"),
        quote(&piped.display().to_string())
    );
    let pane = Tmux::start(tmux.clone(), "piped", &line);
    wait_until("the question in the pipe", || std::fs::read_to_string(&piped).ok().filter(|t| t.contains("Allow?")));
    pane.keys(&["y", "Enter"]);
    pane.wait_for(DONE);
    let text = std::fs::read_to_string(&piped).unwrap();
    assert!(text.contains("✓ allowed by you") && text.contains("\npiped\n"), "{text}");
    assert!(!text.contains(ESC), "no escape at all when piped: {}", text.escape_debug());
    drop(pane);

    // NO_COLOR on a terminal: no colour (answered by flag, so nothing waits for a key).
    let pane = Tmux::start(
        tmux.clone(),
        "nocolor",
        &run_line(state.path(), cwd.path(), "NO_COLOR=1", "--approve", "run echo plain"),
    );
    let done = pane.wait_for(DONE);
    assert!(done.contains("✓ allowed by --approve"), "{done}");
    assert!(!has_colour(&pane.capture(true)), "NO_COLOR: {}", pane.capture(true).escape_debug());
    drop(pane);

    // CLICOLOR_FORCE into a pipe: colours anyway.
    let forced = cwd.path().join("forced.txt");
    let line = format!(
        "{} 2>&1 | cat > {}",
        run_line(state.path(), cwd.path(), "CLICOLOR_FORCE=1", "--approve", "run echo forced"),
        quote(&forced.display().to_string())
    );
    let pane = Tmux::start(tmux, "forced", &line);
    pane.wait_for(DONE);
    let text = std::fs::read_to_string(&forced).unwrap();
    assert!(has_colour(&text), "CLICOLOR_FORCE: {}", text.escape_debug());
}

#[test]
fn with_json_stdout_holds_only_the_events_and_the_result() {
    let (state, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let out = clawbridge(state.path())
        .args(["run", "--json", "--approve", "run echo json-mode"])
        .env("CLICOLOR_FORCE", "1")
        .current_dir(cwd.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"))).collect();
    assert!(lines.iter().any(|l| l["type"] == "toolStarted"), "{stdout}");
    assert_eq!(lines.last().unwrap()["type"], "result", "{stdout}");
    assert!(!stdout.contains("allowed"), "the approval lines are not on stdout: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("✓ allowed by --approve"), "they are on stderr: {stderr}");
}

/// A Codex that fails its model request twice with the lines codex 0.169.0 sends for a 503
/// endpoint (`Reconnecting... n/2`, `willRetry: true`), then answers: the person sees each retry
/// as it happens, in words.
#[test]
fn a_native_retry_is_shown_as_it_happens() {
    let dir = tempfile::tempdir().unwrap();
    let retry = |n: u32| {
        json!({"send": {"method": "error", "params": {
            "error": {"message": format!("Reconnecting... {n}/2"),
                      "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 503}},
                      "additionalDetails": "unexpected status 503 Service Unavailable", "misalignment": null},
            "willRetry": true, "threadId": THREAD, "turnId": TURN}}})
    };
    let done = json!({"id": TURN, "items": [], "status": "completed", "error": null});
    let completed = json!({"send": {"method": "turn/completed", "params": {"threadId": THREAD, "turn": done}}});
    let codex = stub_codex(dir.path(), &plan(vec![retry(1), retry(2), completed], json!({})), &[]);
    // stdout and stderr into one pipe, so the order the person reads them in is the order here.
    let line = format!(
        "exec {} run --backend codex --deny --program {} hi 2>&1",
        quote(env!("CARGO_BIN_EXE_clawbridge")),
        quote(&codex.display().to_string())
    );
    let out =
        clawbridge(&dir.path().join("state")).env_remove("CODEX_HOME").current_dir(dir.path()).output_of_shell(&line);
    let both = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{both}");
    let lines: Vec<&str> = both.lines().collect();
    let summary = lines.iter().position(|l| l.starts_with("— ")).unwrap_or_else(|| panic!("a summary:\n{both}"));
    for n in [1, 2] {
        let shown =
            format!("… model endpoint unreachable (HTTP 503), retrying (attempt {n} of 2) Reconnecting... {n}/2");
        let at = lines.iter().position(|l| l.starts_with(&shown)).unwrap_or_else(|| panic!("{shown:?} in:\n{both}"));
        assert!(at < summary, "the retry is shown as it happens, before the summary:\n{both}");
    }
}

/// In a terminal, a turn that makes no progress shows a spinner with the elapsed time; Ctrl-C
/// typed in the pane interrupts, typed again stops the agent (which ignores both the interrupt
/// and SIGTERM), and the run exits 130 with the spinner gone.
#[test]
fn the_spinner_counts_while_the_agent_is_awaited_and_two_ctrl_c_stop_it() {
    let Some(tmux) = tmux_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stubborn = plan(vec![], json!({"turn/interrupt": [{"stderr": "ignoring the interrupt"}]}));
    let codex = stub_codex(dir.path(), &stubborn, &["--ignore-sigterm"]);
    let line = run_line(
        &dir.path().join("state"),
        dir.path(),
        "",
        &format!("--backend codex --deny --program {}", quote(&codex.display().to_string())),
        "wait",
    );
    let pane = Tmux::start(tmux, "spinner", &line);
    // The elapsed time is counted: a whole second has passed on the spinner's clock.
    wait_until("the spinner counting seconds", || {
        let pane = pane.capture(false);
        pane.lines().any(|l| l.contains("waiting for codex app-server") && !l.trim_end().ends_with(" 0s")).then_some(())
    });
    pane.keys(&["C-c"]);
    pane.wait_for("interrupting… (Ctrl-C again to stop now)");
    pane.keys(&["C-c"]);
    let done = pane.wait_for(DONE);
    assert!(done.contains("clawbridge: stopping codex app-server now"), "{done}");
    assert!(done.lines().any(|l| l.trim_end() == format!("{DONE}130")), "{done}");
    assert!(!done.contains("waiting for codex app-server"), "the spinner is cleared:\n{done}");
    assert!(!common::stub_codex::running(stub_pid(dir.path())), "the agent is gone");
}

/// Ctrl-C while the approval is being asked: the interrupt is said at once, on a line of its own
/// (not held back behind the question), the command never runs and the run exits 130.
#[test]
fn ctrl_c_at_the_approval_prompt_interrupts_at_once() {
    let Some(tmux) = tmux_or_skip() else { return };
    let (state, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pane = Tmux::start(tmux, "prompt-ctrl-c", &run_line(state.path(), cwd.path(), "", "", "run ls"));
    pane.wait_for("Allow? [y]es / [a]lways / [n]o / [s]top:");
    pane.keys(&["C-c"]);
    let done = pane.wait_for(DONE);
    let lines: Vec<&str> = done.lines().map(str::trim_end).collect();
    let asked = lines.iter().position(|l| l.starts_with("Allow?")).expect("the question");
    assert_eq!(
        lines.get(asked + 1).copied(),
        Some("clawbridge: interrupting… (Ctrl-C again to stop now)"),
        "the interrupt is the very next line, not held back behind the question:\n{done}"
    );
    assert!(done.lines().any(|l| l.trim_end() == format!("{DONE}130")), "{done}");
    assert!(!done.contains("I ran `ls`"), "{done}");
}

/// A debug log on a terminal: its lines follow `NO_COLOR` like the view's, and each is a line of
/// its own (written through the view, which clears the spinner first), never glued to the
/// spinner or to a line of the view.
#[test]
fn the_log_on_a_terminal_follows_no_color_and_keeps_to_lines_of_its_own() {
    let Some(tmux) = tmux_or_skip() else { return };
    let (state, cwd) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let line = run_line(state.path(), cwd.path(), "NO_COLOR=1 CLAWBRIDGE_LOG=debug", "--approve", "run echo logged");
    let pane = Tmux::start(tmux, "log", &line);
    let done = pane.wait_for(DONE);
    let logged: Vec<&str> = done.lines().filter(|l| l.contains(" DEBUG ")).collect();
    assert!(!logged.is_empty(), "the debug log is on the terminal:\n{done}");
    for line in &logged {
        assert!(line.starts_with(|c: char| c.is_ascii_digit()), "a log line starts its own line: {line:?}\n{done}");
    }
    assert!(done.lines().any(|l| l.trim_end() == "logged"), "{done}");
    assert!(!done.lines().any(|l| l.contains("waiting for") && l.contains(" DEBUG ")), "{done}");
    assert!(!has_colour(&pane.capture(true)), "NO_COLOR, log included: {}", pane.capture(true).escape_debug());
}

/// Two questions, the first left unanswered past a short approval deadline (test-only
/// `CLAWBRIDGE_TEST_APPROVAL_TIMEOUT_MS`): it is denied with its line, and the key typed for the
/// second answers the second (no reader left behind by the first swallows it).
#[test]
fn an_unanswered_question_is_denied_and_the_next_answer_reaches_the_next_question() {
    let Some(tmux) = tmux_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let ask = |id: u64, command: &str| {
        json!({"send": {"id": id, "method": "item/commandExecution/requestApproval", "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": format!("call-{id}"), "command": command,
            "cwd": dir.path(), "availableDecisions": ["accept", "decline"]}}})
    };
    // The second question comes well after the first one's deadline; the turn then waits for the
    // test to stop it.
    let steps =
        vec![ask(100, "echo first"), json!({"sleep_ms": 3000}), ask(101, "echo second"), json!({"sleep_ms": 120_000})];
    let codex = stub_codex(dir.path(), &plan(steps, json!({})), &[]);
    let line = run_line(
        &dir.path().join("state"),
        dir.path(),
        "CLAWBRIDGE_TEST_APPROVAL_TIMEOUT_MS=1000",
        &format!("--backend codex --program {}", quote(&codex.display().to_string())),
        "two questions",
    );
    let pane = Tmux::start(tmux, "unanswered", &line);
    let first = pane.wait_for("✗ not answered (the approval timed out or the turn ended): denied");
    assert!(first.contains("asks to run `echo first`"), "{first}");
    pane.wait_for("asks to run `echo second`");
    pane.keys(&["y", "Enter"]);
    let answered = pane.wait_for("✓ allowed by you");
    let lines: Vec<&str> = answered.lines().map(str::trim_end).collect();
    let second = lines.iter().position(|l| l.contains("asks to run `echo second`")).unwrap();
    assert!(lines[second..].contains(&"✓ allowed by you"), "the second question got the answer:\n{answered}");
    pane.keys(&["C-c"]);
    pane.wait_for("interrupting…");
    pane.keys(&["C-c"]);
    pane.wait_for(DONE);
}

/// `--json` in a terminal: while the agent is awaited (here 1.5 s before it ends the turn), no
/// spinner frame is ever drawn, only the JSONL events.
#[test]
fn with_json_in_a_terminal_no_spinner_is_drawn() {
    let Some(tmux) = tmux_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let done = json!({"id": TURN, "items": [], "status": "completed", "error": null});
    let completed = json!({"send": {"method": "turn/completed", "params": {"threadId": THREAD, "turn": done}}});
    let codex = stub_codex(dir.path(), &plan(vec![json!({"sleep_ms": 1500}), completed], json!({})), &[]);
    let line = run_line(
        &dir.path().join("state"),
        dir.path(),
        "",
        &format!("--json --deny --backend codex --program {}", quote(&codex.display().to_string())),
        "wait a little",
    );
    let pane = Tmux::start(tmux, "json", &line);
    let frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
    let mut seen = Vec::new();
    let ended = wait_until("the run's end", || {
        let now = pane.capture(false);
        seen.push(now.clone());
        now.contains(DONE).then_some(now)
    });
    assert!(ended.contains("\"turnStarted\""), "{ended}");
    assert!(seen.len() > 1, "the pane was looked at while the agent was awaited");
    for pane in &seen {
        assert!(!pane.contains(frames) && !pane.contains("waiting for"), "a spinner with --json:\n{pane}");
    }
}
