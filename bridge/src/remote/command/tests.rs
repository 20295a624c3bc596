use std::io::{Read, Write};
use std::process::{Command, Stdio};

use super::*;

/// The words a POSIX shell makes of `line` (what the far side's login shell does to ssh's string).
fn split_by_sh(line: &OsStr) -> Vec<Vec<u8>> {
    let script = [b"for word in ".as_slice(), line.as_bytes(), b"; do printf '%s\\0' \"$word\"; done"].concat();
    let output = Command::new("sh").arg("-c").arg(OsStr::from_bytes(&script)).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output.stdout.split(|b| *b == 0).filter(|_| true).map(<[u8]>::to_vec).collect::<Vec<_>>()[..]
        .split_last()
        .map(|(_, words)| words.to_vec())
        .unwrap_or_default()
}

fn words(list: &[&[u8]]) -> Vec<OsString> {
    list.iter().map(|w| OsString::from_vec(w.to_vec())).collect()
}

#[test]
fn every_quoted_word_comes_back_from_a_shell_as_it_was() {
    let tricky: Vec<&[u8]> = vec![
        b"plain",
        b"it's",
        b"$(touch /nonexistent/pwned)",
        b"`id`",
        b"a b\tc",
        b"*",
        b"\"q\"",
        b"back\\slash",
        b"",
        b"line\nbreak",
        b"--flag=x;y|z&",
        b"\xff\xfe not utf-8",
        b"'''",
    ];
    let words = words(&tricky);
    let launcher = Launcher::new(vec!["ssh".into()]).unwrap();
    let line = launcher.remote_words(words.clone());
    assert_eq!(line.len(), 1, "ssh gets one string");
    let back = split_by_sh(&line[0]);
    assert_eq!(back, tricky.iter().map(|w| w.to_vec()).collect::<Vec<_>>());
}

fn codex_like() -> CommandSpec {
    let mut env = EnvPolicy::default();
    env.set.push(("OPENAI_API_KEY".into(), "sk-test-secret'\"$(x)".into()));
    env.set.push(("CODEX_HOME".into(), "/srv/codex home".into()));
    env.inherit.push("CLAWBRIDGE_TEST_PROVIDER_KEY".into());
    env.remove.push("CODEX_INTERNAL_ORIGINATOR_OVERRIDE".into());
    env.remove.push("LD_*".into());
    CommandSpec {
        program: "/opt/codex/bin/codex".into(),
        args: vec![
            "app-server".into(),
            "-c".into(),
            format!("shell_environment_policy.set.{CONTAINMENT_VAR}=\"{CONTAINMENT_VALUE_ARG}\"").into(),
        ],
        cwd: Some("/work/my project".into()),
        env,
    }
}

#[test]
fn ssh_gets_one_string_that_splits_into_the_wrapper_and_the_agent_with_no_value_of_its_environment() {
    let launcher = Launcher::new(vec!["ssh".into(), "-T".into(), "build-box".into()]).unwrap();
    assert_eq!(launcher.form(), CommandForm::ShellString);
    let remote = launcher.wrap(Path::new("/usr/bin/ssh"), &codex_like()).unwrap();
    assert_eq!(remote.spec.program, Path::new("/usr/bin/ssh"));
    assert_eq!(remote.spec.args[..2], [OsString::from("-T"), "build-box".into()]);
    assert_eq!(remote.spec.args.len(), 3);
    let argv_text: String = remote.spec.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    assert!(!argv_text.contains("sk-test-secret"), "a secret on the command line: {argv_text}");
    assert!(!argv_text.contains("/srv/codex home"), "the environment travels on stdin only");
    let split = split_by_sh(&remote.spec.args[2]);
    let text = |w: &Vec<u8>| String::from_utf8_lossy(w).into_owned();
    assert_eq!(text(&split[0]), "sh");
    assert_eq!(text(&split[1]), "-c");
    assert_eq!(text(&split[2]), WRAPPER_SCRIPT);
    assert_eq!(text(&split[3]), WRAPPER_NAME);
    let token = format!("{CONTAINMENT_VALUE_ARG},{}", remote.remote_token);
    assert_eq!(text(&split[4]), token);
    assert_eq!(text(&split[5]), "/work/my project");
    assert_eq!(text(&split[6]), "/opt/codex/bin/codex");
    assert_eq!(text(&split[7]), "app-server");
    // The agent's tool commands carry the far side's mark too.
    assert_eq!(text(&split[9]), format!("shell_environment_policy.set.{CONTAINMENT_VAR}=\"{token}\""));
    assert_eq!(remote.remote_token.len(), 32);
    // The launcher runs where the bridge is; the directory is the far side's.
    assert_eq!(remote.spec.cwd, None);
    assert!(remote.spec.env.inherit.iter().any(|name| name == "SSH_AUTH_SOCK"));
}

#[test]
fn an_exec_style_launcher_gets_the_words_as_they_are() {
    let launcher =
        Launcher::new(vec!["kubectl".into(), "exec".into(), "-i".into(), "pod".into(), "--".into()]).unwrap();
    assert_eq!(launcher.form(), CommandForm::Argv);
    let remote = launcher.wrap(Path::new("/usr/bin/kubectl"), &codex_like()).unwrap();
    assert_eq!(remote.spec.args[4], OsString::from("sh"));
    assert_eq!(remote.spec.args[6], OsString::from(WRAPPER_SCRIPT));
    assert_eq!(remote.spec.args[9], OsString::from("/work/my project"));
    let gcloud =
        Launcher::new(vec!["gcloud".into(), "compute".into(), "ssh".into(), "vm".into(), "--".into()]).unwrap();
    assert_eq!(gcloud.form(), CommandForm::ShellString, "gcloud hands its command to ssh");
}

#[test]
fn the_environment_block_holds_what_the_backend_chose_and_none_of_the_local_defaults() {
    let parent = vec![
        (OsString::from("PATH"), OsString::from("/local/bin")),
        ("HOME".into(), "/home/local".into()),
        ("CLAWBRIDGE_TEST_PROVIDER_KEY".into(), "pk-1".into()),
        ("UNRELATED_SECRET".into(), "nope".into()),
    ];
    let block = preamble_for(&codex_like().env, parent).unwrap();
    let text = String::from_utf8(block.as_bytes().to_vec()).unwrap();
    let mut lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.pop(), Some(""));
    assert_eq!(lines.pop(), Some(""), "an empty line ends the block");
    lines.sort_unstable();
    assert_eq!(
        lines,
        [
            "-CODEX_INTERNAL_ORIGINATOR_OVERRIDE",
            "CLAWBRIDGE_TEST_PROVIDER_KEY=pk-1",
            "CODEX_HOME=/srv/codex home",
            "OPENAI_API_KEY=sk-test-secret'\"$(x)",
        ]
    );
}

#[test]
fn what_the_block_cannot_carry_is_refused_by_name() {
    let mut env = EnvPolicy::default();
    env.set.push(("MULTI".into(), "one\ntwo".into()));
    assert!(matches!(preamble_for(&env, Vec::new()), Err(LauncherError::BadValue { name }) if name == "MULTI"));
    let mut env = EnvPolicy::default();
    env.set.push(("BAD-NAME".into(), "x".into()));
    assert!(matches!(preamble_for(&env, Vec::new()), Err(LauncherError::BadName { name }) if name == "BAD-NAME"));
    let mut env = EnvPolicy::default();
    env.set.push(("BIG".into(), "x".repeat(MAX_PREAMBLE_BYTES).into()));
    assert!(matches!(preamble_for(&env, Vec::new()), Err(LauncherError::TooLarge { .. })));
    assert!(matches!(Launcher::new(Vec::new()), Err(LauncherError::Empty)));
}

#[test]
fn the_probe_runs_the_far_program_bare_and_a_shell_keeps_the_appended_flag_a_word() {
    let launcher = Launcher::new(vec!["ssh".into(), "-T".into(), "h".into()]).unwrap();
    let probe = launcher.probe_command(Path::new("/usr/bin/ssh"), OsStr::new("/opt/my codex/codex"));
    assert_eq!(probe.args, [OsString::from("-T"), "h".into(), "'/opt/my codex/codex'".into()]);
}

/// Runs the wrapper here, through `env` as an exec-style launcher, the way a far side would.
fn run_wrapper(agent: &[&str], input: &[u8]) -> (std::process::ExitStatus, String, String) {
    let launcher = Launcher::new(vec!["env".into()]).unwrap();
    let mut local = CommandSpec::new(agent[0]).args(agent[1..].iter().copied());
    local.env.set.push(("CLAWBRIDGE_TEST_SECRET".into(), "s3cret value".into()));
    let remote = launcher.wrap(Path::new("env"), &local).unwrap();
    let args: Vec<OsString> = remote
        .spec
        .args
        .iter()
        .map(|a| OsString::from(a.to_string_lossy().replace(CONTAINMENT_VALUE_ARG, "0123456789abcdef0123456789abcdef")))
        .collect();
    let mut child = Command::new("env")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(remote.preamble.as_bytes()).unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin);
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = child.wait().unwrap();
    (status, out, err, remote.remote_token).into_three()
}

trait IntoThree {
    fn into_three(self) -> (std::process::ExitStatus, String, String);
}

impl IntoThree for (std::process::ExitStatus, String, String, String) {
    fn into_three(self) -> (std::process::ExitStatus, String, String) {
        let (status, out, err, token) = self;
        // Nothing the wrapper started is left with its mark, once the kernel has delivered the
        // kills (a SIGKILLed process lingers for a moment).
        let marked = || -> Vec<String> {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(Result::ok)
                .filter(|entry| entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
                .filter(|entry| {
                    std::fs::read(entry.path().join("environ"))
                        .is_ok_and(|environ| environ.windows(token.len()).any(|w| w == token.as_bytes()))
                })
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        };
        let mut left = marked();
        for _ in 0..100 {
            if left.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            left = marked();
        }
        assert!(left.is_empty(), "processes left behind: {left:?}");
        (status, out, err)
    }
}

#[test]
fn the_wrapper_gives_the_agent_its_environment_and_stream_and_ends_with_it() {
    let (status, out, err) =
        run_wrapper(&["sh", "-c", "echo \"[$CLAWBRIDGE_TEST_SECRET]\"; cat; echo done"], b"line one\nline two\n");
    assert!(status.success(), "{status:?} {err}");
    assert_eq!(out, "[s3cret value]\nline one\nline two\ndone\n");
}

#[test]
fn the_wrapper_kills_what_the_agent_left_even_outside_its_group_and_passes_its_status() {
    // The agent starts a detached sleeper (a new session, as a tool command might) and exits 7.
    let (status, _, err) = run_wrapper(&["sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & exit 7"], b"");
    assert_eq!(status.code(), Some(7), "{err}");
}

#[test]
fn an_environment_block_cut_short_starts_nothing() {
    let launcher = Launcher::new(vec!["env".into()]).unwrap();
    let remote = launcher.wrap(Path::new("env"), &CommandSpec::new("sh").args(["-c", "echo ran"])).unwrap();
    let output = Command::new("env").args(&remote.spec.args).stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(125));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("environment block ended early"));
}

#[test]
fn a_wrapper_killed_without_a_chance_to_sweep_leaves_nothing_in_tmpdir() {
    let tmp = tempfile::tempdir().unwrap();
    let launcher = Launcher::new(vec!["env".into()]).unwrap();
    let agent = CommandSpec::new("sh").args(["-c", "echo started; exec sleep 30"]);
    let remote = launcher.wrap(Path::new("env"), &agent).unwrap();
    let mut wrapper = Command::new("env")
        .args(&remote.spec.args)
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = wrapper.stdin.take().unwrap();
    stdin.write_all(remote.preamble.as_bytes()).unwrap();
    let mut started = [0u8; 8];
    wrapper.stdout.take().unwrap().read_exact(&mut started).unwrap();
    assert_eq!(&started, b"started\n");
    // SIGKILL: no trap runs, so only what the wrapper did before it matters.
    wrapper.kill().unwrap();
    wrapper.wait().unwrap();
    // The stream's end still reaches the feeder, which stops the agent.
    drop(stdin);
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let mut left = leftovers();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        left = leftovers();
    }
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}
