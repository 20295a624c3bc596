//! The config file over the real binary: its errors name file:line (and the key), flags beat
//! variables beat the file beat defaults, `config show` says where each value came from, and a
//! value from the file is what the commands use.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

/// A home of its own (no user's config file, no user's state) and a config file in it.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new() -> Self {
        Place { dir: tempfile::tempdir().expect("a temp dir") }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `name` with `text`; returns its path.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `clawbridge args…` with only `env` of the settings' variables set.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().expect("clawbridge runs")
    }

    /// [`run`](Self::run)'s command, not started.
    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
        command.args(args).current_dir(self.dir.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("CLAWBRIDGE_") || ["RUST_LOG", "CODEX_HOME", "XDG_STATE_HOME"].contains(&name.as_str())
            {
                command.env_remove(name);
            }
        }
        command.env("HOME", self.path("home")).env("XDG_CONFIG_HOME", self.path("xdg"));
        command.envs(env.iter().copied());
        command
    }

    /// `config show --json` under `args` and `env`: key → (value, source kind, source text).
    fn show(&self, args: &[&str], env: &[(&str, &str)]) -> Vec<(String, Value, String, String)> {
        let out = self.run(&[args, &["config", "show", "--json"]].concat(), env);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let shown: Value = serde_json::from_slice(&out.stdout).expect("config show --json is JSON");
        shown["settings"]
            .as_array()
            .expect("a settings list")
            .iter()
            .map(|row| {
                let key = row["key"].as_str().unwrap().to_string();
                let kind = row["source"]["kind"].as_str().unwrap().to_string();
                let text = row["source"]["text"].as_str().unwrap().to_string();
                (key, row["value"].clone(), kind, text)
            })
            .collect()
    }
}

fn row<'a>(rows: &'a [(String, Value, String, String)], key: &str) -> &'a (String, Value, String, String) {
    rows.iter().find(|r| r.0 == key).unwrap_or_else(|| panic!("{key} not shown: {rows:?}"))
}

/// The one-line error of a command that refused its config file.
fn refused(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "a config error exits 2");
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn a_toml_syntax_error_names_the_file_line_and_column() {
    let place = Place::new();
    let file = place.file("c.toml", "[run]\nbackend = demo\n");
    let err = refused(&place.run(&["--config", file.to_str().unwrap(), "config", "show"], &[]));
    assert!(err.starts_with(&format!("clawbridge: {}:2:11: ", file.display())), "{err}");
}

#[test]
fn an_unknown_key_names_the_file_line_the_key_and_the_known_ones() {
    let place = Place::new();
    let file = place.file("c.toml", "[codex]\nbin = \"/x\"\n\nbinary = \"/opt/codex\"\n");
    let err = refused(&place.run(&["--config", file.to_str().unwrap(), "run", "hi"], &[]));
    assert!(err.contains(&format!("{}:4:1: key `codex.binary`", file.display())), "{err}");
    let known = "expected one of `bin`, `home`, `connect`, `ws-auth`, `ws-token-file`, `ws-token-env`, `ws-issuer`, `ws-audience`, `server`, `max-servers`, `server-idle-ms`, `max-turns-per-server`, `launcher`";
    assert!(err.contains(&format!("unknown field `binary`, {known}")), "{err}");
}

#[test]
fn a_wrong_type_names_the_file_line_the_key_and_the_expected_type() {
    let place = Place::new();
    let file = place.file("c.toml", "# timeouts\n[agents]\nwrite-timeout-ms = \"10s\"\n");
    let err = refused(&place.run(&["--config", file.to_str().unwrap(), "serve"], &[]));
    assert!(err.contains(&format!("{}:3:20: key `agents.write-timeout-ms`", file.display())), "{err}");
    assert!(err.contains("invalid type: string \"10s\", expected u64"), "{err}");
}

#[test]
fn a_named_config_file_must_exist_the_default_one_need_not() {
    let place = Place::new();
    let missing = place.path("missing.toml");
    let err = refused(&place.run(&["--config", missing.to_str().unwrap(), "config", "show"], &[]));
    assert!(err.contains(&format!("cannot read the config file {}", missing.display())), "{err}");
    let err = refused(&place.run(&["config", "show"], &[("CLAWBRIDGE_CONFIG", missing.to_str().unwrap())]));
    assert!(err.contains(&format!("{}", missing.display())), "CLAWBRIDGE_CONFIG names it too: {err}");

    let out = place.run(&["config", "path"], &[]);
    let default = place.path("xdg/clawbridge/config.toml");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("{} (does not exist; defaults apply)", default.display())
    );
    let rows = place.show(&[], &[]);
    assert!(rows.iter().all(|r| r.2 == "default"), "{rows:?}");
}

#[test]
fn the_default_file_is_read_from_xdg_config_home() {
    let place = Place::new();
    let default = place.file("xdg/clawbridge/config.toml", "[reap]\ngrace-ms = 750\n");
    let rows = place.show(&[], &[]);
    let grace = row(&rows, "reap.grace-ms");
    assert_eq!((&grace.1, grace.3.as_str()), (&Value::from(750), format!("file:{}:2", default.display()).as_str()));
    let out = place.run(&["config", "path"], &[]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), default.display().to_string());
}

#[test]
fn flags_beat_variables_beat_the_file_for_state_dir_and_pass_env() {
    let place = Place::new();
    let file = place.file("c.toml", "[bridge]\nstate-dir = \"/from/file\"\npass-env = [\"bedrock\"]\n");
    let config = ["--config", file.to_str().unwrap()];
    let file_line = |line: usize| format!("file:{}:{line}", file.display());

    let rows = place.show(&config, &[]);
    assert_eq!(row(&rows, "bridge.state-dir").1, "/from/file");
    assert_eq!(row(&rows, "bridge.state-dir").3, file_line(2));
    assert_eq!(row(&rows, "bridge.pass-env").1, serde_json::json!(["bedrock"]));
    assert_eq!(row(&rows, "bridge.pass-env").3, file_line(3));

    let env = [("CLAWBRIDGE_STATE_DIR", "/from/env"), ("CLAWBRIDGE_PASS_ENV", "vertex")];
    let rows = place.show(&config, &env);
    assert_eq!(row(&rows, "bridge.state-dir").1, "/from/env");
    assert_eq!(row(&rows, "bridge.state-dir").3, "env CLAWBRIDGE_STATE_DIR");
    assert_eq!(row(&rows, "bridge.pass-env").1, serde_json::json!(["vertex"]));
    assert_eq!(row(&rows, "bridge.pass-env").3, "env CLAWBRIDGE_PASS_ENV");

    let flags = [&config[..], &["--state-dir", "/from/flag", "--pass-env", "bedrock,vertex"]].concat();
    let rows = place.show(&flags, &env);
    assert_eq!(row(&rows, "bridge.state-dir").1, "/from/flag");
    assert_eq!(row(&rows, "bridge.state-dir").3, "flag --state-dir");
    assert_eq!(row(&rows, "bridge.pass-env").1, serde_json::json!(["bedrock", "vertex"]));
    assert_eq!(row(&rows, "bridge.pass-env").3, "flag --pass-env");
}

#[test]
fn config_show_lists_every_key_with_its_source() {
    let place = Place::new();
    let file = place.file("c.toml", "[codex]\nhome = \"/srv/codex-home\"\n[serve]\ninput-budget-bytes = 1048576\n");
    let args = ["--config", file.to_str().unwrap(), "--state-dir", "/s"];
    let env = [("CLAWBRIDGE_CLAUDE_BIN", "/opt/claude"), ("CLAWBRIDGE_LOG", "debug")];
    let rows = place.show(&args, &env);
    let kinds: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(kinds, ["default", "env", "file", "flag"].into(), "{rows:?}");
    assert_eq!(row(&rows, "codex.home").3, format!("file:{}:2", file.display()));
    assert_eq!(row(&rows, "serve.input-budget-bytes").1, 1_048_576);
    assert_eq!(row(&rows, "claude.bin").3, "env CLAWBRIDGE_CLAUDE_BIN");
    assert_eq!(row(&rows, "logs.filter").1, "debug");
    assert_eq!(row(&rows, "bridge.state-dir").3, "flag --state-dir");
    assert_eq!(row(&rows, "reap.grace-ms").3, "default");

    // The text form: one line per key, the same sources.
    let out = place.run(&[&args[..], &["config", "show"]].concat(), &env);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().filter(|l| !l.starts_with('#')).count(), rows.len(), "{text}");
    assert!(text.contains("claude.bin = \"/opt/claude\"  # env CLAWBRIDGE_CLAUDE_BIN"), "{text}");
    assert!(text.contains(&format!("codex.home = \"/srv/codex-home\"  # file:{}:2", file.display())), "{text}");
}

#[test]
fn the_state_dir_from_the_file_is_where_run_keeps_its_session() {
    let place = Place::new();
    let state = place.path("state-from-file");
    let file = place.file("c.toml", &format!("[bridge]\nstate-dir = {:?}\n", state.to_str().unwrap()));
    let out = place.run(&["--config", file.to_str().unwrap(), "run", "--session", "s1", "hello"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(state.join("sessions/s1/transcript.jsonl").is_file(), "the session lives in the file's state dir");
}

#[test]
fn run_starts_the_codex_binary_and_home_the_file_names() {
    let place = Place::new();
    // A stand-in codex that says how it was started, then fails the handshake by exiting.
    let marker = place.path("started.txt");
    let codex = place.file(
        "bin/my-codex",
        &format!("#!/bin/sh\necho \"args=$* home=$CODEX_HOME\" >> '{}'\nexit 3\n", marker.display()),
    );
    std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
    let file = place.file(
        "c.toml",
        &format!(
            "[run]\nbackend = \"codex\"\n\n[codex]\nbin = {:?}\nhome = \"/srv/codex-home\"\n",
            codex.to_str().unwrap()
        ),
    );
    let state = place.path("state");
    let out =
        place.run(&["--config", file.to_str().unwrap(), "--state-dir", state.to_str().unwrap(), "run", "hi"], &[]);
    assert!(!out.status.success(), "the stand-in never answers the handshake");
    let started = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(started.contains("app-server") && started.contains("home=/srv/codex-home"), "{started}");

    // A binary the file names that is not there: the error says which key, where.
    let file = place.file("d.toml", "[run]\nbackend = \"codex\"\n[codex]\nbin = \"/nonexistent/codex\"\n");
    let out =
        place.run(&["--config", file.to_str().unwrap(), "--state-dir", state.to_str().unwrap(), "run", "hi"], &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    let expected = format!("codex.bin (file:{}:4)=/nonexistent/codex is not an executable file", file.display());
    assert!(err.contains(&expected), "{err}");
}

#[test]
fn serve_holds_attempts_to_the_input_budget_the_file_sets() {
    use std::io::Write;
    let place = Place::new();
    let file = place.file("c.toml", "[serve]\ninput-budget-bytes = 64\n");
    let state = place.path("state");
    let args = ["--config", file.to_str().unwrap(), "--state-dir", state.to_str().unwrap(), "serve"];
    let mut child = place
        .command(&args, &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("clawbridge serve starts");
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION, "host": {"name": "config-test", "version": "0"}}});
    let run = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "attempt/run", "params": {
        "attemptId": "big", "harnessId": "clawbridge-demo", "sessionId": "s-big", "prompt": "p".repeat(200),
        "workspaceDir": place.dir.path().display().to_string()}});
    // Written, then the input closed: the bridge answers what it read before it exits.
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{initialize}\n{run}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().expect("serve ends when its input does");
    let answers: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let refused = answers
        .iter()
        .find(|a| a["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to attempt/run: {answers:?}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(refused["error"]["code"], -32035, "over the file's budget: {refused}");
    assert_eq!(refused["error"]["data"]["limit"], 64, "{refused}");
}

#[test]
fn the_readmes_worked_example_is_a_valid_config_file() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let after = readme.split_once("A worked example:").expect("the example's heading").1;
    let example = after.split_once("```toml\n").unwrap().1.split_once("```").unwrap().0;
    let place = Place::new();
    let file = place.file("example.toml", example);
    let rows = place.show(&["--config", file.to_str().unwrap()], &[]);
    let from_file = rows.iter().filter(|r| r.2 == "file").count();
    assert_eq!(from_file, example.lines().filter(|l| l.contains(" = ")).count(), "every line of it is a key: {rows:?}");
}

#[test]
fn the_readme_table_of_keys_is_the_declared_one() {
    let readme_path = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");
    let readme = std::fs::read_to_string(readme_path).unwrap();
    let (begin, end) = ("<!-- config-keys:begin -->\n", "<!-- config-keys:end -->");
    let start = readme.find(begin).expect("the table's begin marker") + begin.len();
    let stop = readme[start..].find(end).expect("the table's end marker") + start;
    let table = clawbridge::config::show::keys_table(&clawbridge::config::Settings::keys());
    if std::env::var_os("CLAWBRIDGE_UPDATE_README").is_some() {
        std::fs::write(readme_path, format!("{}{table}{}", &readme[..start], &readme[stop..])).unwrap();
        return;
    }
    assert_eq!(
        &readme[start..stop],
        table,
        "README.md's table of config keys differs from src/config/areas.rs; rerun with CLAWBRIDGE_UPDATE_README=1"
    );
}

#[test]
fn a_fifo_as_the_config_file_is_refused_not_waited_on() {
    let place = Place::new();
    let fifo = place.path("fifo.toml");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success());
    let err = refused(&place.run(&["--config", fifo.to_str().unwrap(), "config", "show"], &[]));
    assert!(err.contains("is not a regular file"), "{err}");
}

#[test]
fn config_path_names_a_broken_file_and_the_error_says_how_to_bypass_it() {
    let place = Place::new();
    let file = place.file("xdg/clawbridge/config.toml", "[run\n");
    let out = place.run(&["config", "path"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), file.display().to_string());
    let err = refused(&place.run(&["reap"], &[]));
    assert!(err.contains("--config /dev/null"), "{err}");
    let out = place.run(&["--config", "/dev/null", "config", "show"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
