//! `clawbridge doctor` over the real binary: each situation a person meets (nothing installed, a
//! too-old codex, a codex that hangs, a codex whose model endpoint is down, a claude whose endpoint
//! refuses the key, a claude endpoint over https, everything fine) with the one-line verdict it
//! must print, and the `--json` shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use clawbridge_fixtures::peers::codex::config_toml;
use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock, start_mock_requiring_key};
use serde_json::{Value, json};

/// `clawbridge doctor` with exactly `env` (plus a state dir and HOME of its own) and `args`.
fn doctor(home: &Path, env: &[(&str, &std::ffi::OsStr)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .arg("doctor")
        .args(args)
        .env_clear()
        // After the clear, so it holds: the user's own config file stays out of the test.
        .envs(clawbridge_fixtures::no_user_config())
        .env("HOME", home)
        .env("CLAWBRIDGE_STATE_DIR", home.join("state"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("clawbridge runs")
}

fn text(out: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// One check as the person's view prints it: its verdict word, its line, and the fix line under it.
#[derive(Debug)]
struct Line {
    verdict: String,
    summary: String,
    fix: Option<String>,
}

/// The check `name` of `backend`'s section of the person's view.
fn check(out: &Output, backend: &str, name: &str) -> Line {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&format!("{backend} ("))).skip(1);
    let mut section = Vec::new();
    for line in lines.by_ref() {
        if line.is_empty() {
            break;
        }
        section.push(line);
    }
    let at = section
        .iter()
        .position(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} check for {backend}: {}", text(out)));
    let mut words = section[at].split_whitespace();
    let (_, verdict) = (words.next(), words.next().unwrap_or_default().to_owned());
    let summary = words.collect::<Vec<_>>().join(" ");
    let fix = section.get(at + 1).and_then(|l| l.trim_start().strip_prefix("fix: ")).map(str::to_owned);
    Line { verdict, summary, fix }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn with_nothing_installed_each_backend_is_not_found_with_how_to_get_it() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let out =
        doctor(home.path(), &[("PATH", empty.path().as_os_str())], &["--backend", "codex", "--backend", "claude"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    for (backend, variable) in [("codex", "CLAWBRIDGE_CODEX_BIN"), ("claude", "CLAWBRIDGE_CLAUDE_BIN")] {
        let found = check(&out, backend, "found");
        assert_eq!(found.verdict, "FAIL", "{}", text(&out));
        assert_eq!(found.summary, format!("not found: {backend} not found on PATH"));
        let fix = found.fix.unwrap_or_default();
        assert!(fix.starts_with("install ") && fix.ends_with(&format!("or set {variable}")), "{fix}");
        assert_eq!(check(&out, backend, "handshake").verdict, "skip");
    }
    // Doctor writes no log of its own: its failure line names no log file as if it held more.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("clawbridge.log"), "{stderr}");
    assert!(stderr.contains("check(s) failed (the report says which and how to fix each)"), "{stderr}");
}

#[test]
fn a_too_old_codex_is_refused_by_the_gate_with_the_floor_to_install() {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let codex = script(bin.path(), "codex", "echo 'codex-cli 0.1.0'");
    let out = doctor(home.path(), &[("PATH", bin.path().as_os_str())], &["--backend", "codex"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let found = check(&out, "codex", "found");
    assert_eq!(found.summary, format!("{} (on PATH)", codex.display()));
    let version = check(&out, "codex", "version");
    assert_eq!(version.verdict, "FAIL");
    assert!(version.summary.starts_with("too old: 0.1.0 ("), "{version:?}");
    let floor = clawbridge_protocol::codex::version::VersionPolicy::default().floor;
    assert!(version.fix.unwrap_or_default().starts_with(&format!("install codex ≥ {floor}")), "{}", text(&out));
    assert_eq!(check(&out, "codex", "handshake").verdict, "skip", "nothing refused is started");
}

#[test]
fn a_configured_endpoint_that_nothing_listens_on_fails_with_its_address_and_how_to_start_it() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let socket = home.path().join("nobody-listens.sock");
    let endpoint = format!("unix://{}", socket.display());
    let env = [("PATH", empty.path().as_os_str()), ("CLAWBRIDGE_CODEX_CONNECT", std::ffi::OsStr::new(&endpoint))];
    let out = doctor(home.path(), &env, &["--backend", "codex"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let found = check(&out, "codex", "found");
    assert_eq!(found.verdict, "ok", "no local codex is needed to connect: {}", text(&out));
    assert!(found.summary.contains(&format!("sessions connect to {endpoint}")), "{found:?}");
    let version = check(&out, "codex", "version");
    assert_eq!(version.verdict, "FAIL");
    assert!(version.summary.contains(&format!("cannot reach the app-server at {endpoint}")), "{version:?}");
    assert!(
        version.fix.unwrap_or_default().contains(&format!("codex app-server --listen {endpoint}")),
        "{}",
        text(&out)
    );
    assert_eq!(check(&out, "codex", "handshake").verdict, "skip");
}

/// `connect = "proxy:///…"`: the proxy is a local program the doctor finds and runs; one that
/// ends because nothing listens on its socket (what codex 0.169's `app-server proxy` prints then,
/// docs/peers/codex.md#the-managed-daemon-and-proxy) fails the check as an unreachable endpoint
/// does, naming the socket and saying how to start a daemon there.
#[test]
fn a_proxy_whose_daemon_is_gone_fails_with_the_socket_and_how_to_start_the_daemon() {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let socket = home.path().join("control.sock");
    let codex = script(
        bin.path(),
        "codex",
        "if [ \"$1\" = --version ]; then echo 'codex-cli 0.169.0'; exit 0; fi\n\
         [ \"$1 $2 $3\" = \"app-server proxy --sock\" ] || exit 2\n\
         printf 'Error: failed to connect to socket at %s\\n\\nCaused by:\\n    No such file or directory (os error 2)\\n\\nStack backtrace:\\n   0: <unknown>\\n' \"$4\" >&2\n\
         exit 1",
    );
    let endpoint = format!("proxy://{}", socket.display());
    let env = [("PATH", bin.path().as_os_str()), ("CLAWBRIDGE_CODEX_CONNECT", std::ffi::OsStr::new(&endpoint))];
    let out = doctor(home.path(), &env, &["--backend", "codex"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let found = check(&out, "codex", "found");
    assert_eq!(found.summary, format!("{} (on PATH)", codex.display()), "the proxy runs here: {found:?}");
    let version = check(&out, "codex", "version");
    assert_eq!(version.verdict, "FAIL");
    assert!(
        version.summary.contains(&format!("nothing answered at {endpoint}: the proxy ended (exit code 1)")),
        "{version:?}"
    );
    assert!(version.summary.contains(&format!("failed to connect to socket at {}", socket.display())), "{version:?}");
    assert!(!version.summary.contains("<unknown>"), "no backtrace: {version:?}");
    assert!(version.fix.unwrap_or_default().contains("codex app-server daemon start"), "{}", text(&out));
    assert_eq!(check(&out, "codex", "handshake").verdict, "skip");
}

/// The gate's own reason: an executable that reports no version is "unversioned", never "too old".
#[test]
fn an_executable_without_a_version_is_unversioned_not_too_old() {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let codex = script(bin.path(), "codex", "echo 'codex-cli 3'");
    let out = doctor(
        home.path(),
        &[("PATH", bin.path().as_os_str())],
        &["--backend", "codex", "--program", codex.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let version = check(&out, "codex", "version");
    assert_eq!(version.verdict, "FAIL");
    assert!(version.summary.starts_with("unversioned: "), "{version:?}");
}

/// Doctor against a `name` (found through its `CLAWBRIDGE_<NAME>_BIN`) that answers `--version` with
/// `version_line` and then never speaks, with a 2 s timeout: the output, and where the program was.
/// Fails the test when the hung process was left running.
fn doctor_against_a_hung(name: &str, version_line: &str) -> (Output, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let pid_file = bin.path().join("pid");
    let program = script(
        bin.path(),
        name,
        &format!(
            "if [ \"$1\" = --version ]; then echo '{version_line}'; exit 0; fi\necho $$ > '{}'\nexec sleep 300",
            pid_file.display()
        ),
    );
    let variable = format!("CLAWBRIDGE_{}_BIN", name.to_uppercase());
    let out = doctor(
        home.path(),
        &[("PATH", std::ffi::OsStr::new("/usr/bin:/bin")), (&variable, program.as_os_str())],
        &["--backend", name, "--timeout", "2"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(check(&out, name, "found").summary, format!("{} (from {variable})", program.display()));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let running = state.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with(['Z', 'X']));
    assert!(!running, "the hung {name} (pid {pid}) was left running: {state}");
    (out, program)
}

#[test]
fn a_codex_that_never_answers_initialize_fails_in_bounded_time_and_is_stopped() {
    let (out, _) = doctor_against_a_hung("codex", "codex-cli 0.169.0");
    let handshake = check(&out, "codex", "handshake");
    assert_eq!(handshake.verdict, "FAIL");
    assert_eq!(handshake.summary, "no answer to initialize in 2 s (the app-server was stopped)");
}

#[test]
fn a_claude_that_never_answers_initialize_fails_in_bounded_time_and_is_stopped() {
    let (out, _) = doctor_against_a_hung("claude", "2.1.328 (Claude Code)");
    let handshake = check(&out, "claude", "handshake");
    assert_eq!(handshake.verdict, "FAIL");
    assert_eq!(handshake.summary, "no answer to initialize in 2 s (the CLI was stopped)");
}

// The mock model serves from this runtime while the CLI runs: it needs a thread of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_codex_whose_model_endpoint_is_down_fails_the_endpoint_check() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    // A config naming the mock, then the mock gone: its port is closed.
    let mock = start_mock(&json!({"default": {"text": "unused"}})).await.unwrap();
    let base = format!("{}/v1", mock.base_url());
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    drop(mock);
    let out = doctor(
        &sandbox.home(),
        &[
            ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
            ("CODEX_HOME", sandbox.codex_home().as_os_str()),
            ("CLAWBRIDGE_CODEX_BIN", codex.as_os_str()),
        ],
        &["--backend", "codex"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(check(&out, "codex", "handshake").verdict, "ok", "{}", text(&out));
    let endpoint = check(&out, "codex", "endpoint");
    assert_eq!(endpoint.verdict, "FAIL");
    assert!(
        endpoint.summary.starts_with(&format!("model endpoint {base} unreachable: cannot connect")),
        "{endpoint:?}"
    );
    let config = sandbox.codex_home().join("config.toml");
    assert_eq!(
        endpoint.fix.as_deref(),
        Some(
            format!("start the model server, or fix base_url of [model_providers.mock] in {}", config.display())
                .as_str()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_whose_endpoint_refuses_the_key_fails_the_endpoint_check() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock_requiring_key(&json!({"default": {"text": "unused"}}), "sk-the-right-key").await.unwrap();
    let out = doctor(
        &sandbox.home(),
        &[
            ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
            ("CLAWBRIDGE_CLAUDE_BIN", claude.as_os_str()),
            ("ANTHROPIC_BASE_URL", std::ffi::OsStr::new(&mock.base_url())),
            ("ANTHROPIC_API_KEY", std::ffi::OsStr::new("sk-a-wrong-key")),
        ],
        &["--backend", "claude"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(check(&out, "claude", "auth").summary, "credential from ANTHROPIC_API_KEY (set)");
    let endpoint = check(&out, "claude", "endpoint");
    assert_eq!(endpoint.verdict, "FAIL", "{}", text(&out));
    assert_eq!(
        endpoint.summary,
        format!("model endpoint {} refused the credential (HTTP 401: invalid x-api-key)", mock.base_url())
    );
    assert_eq!(endpoint.fix.as_deref(), Some("check the credential in ANTHROPIC_API_KEY"));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-a-wrong-key"), "no secret is printed");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("sk-a-wrong-key"), "nor logged to stderr");
}

/// Claude's endpoint over `https://`: a loopback TLS server whose throw-away CA is trusted through
/// `SSL_CERT_FILE` answers; with another CA in that file the check fails on the certificate, with
/// the fix that names the variable, not "start the model server".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_endpoint_over_https_is_probed_with_the_ca_ssl_cert_file_names() {
    use clawbridge_fixtures::tls::{TestCa, start_tls_server};
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let ca = TestCa::new("clawbridge doctor test CA").unwrap();
    let server = start_tls_server(&ca, 200, r#"{"input_tokens":1}"#).await.unwrap();
    let base = server.base_url();
    let run = |ca_file: &Path| {
        doctor(
            &sandbox.home(),
            &[
                ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
                ("CLAWBRIDGE_CLAUDE_BIN", claude.as_os_str()),
                ("ANTHROPIC_BASE_URL", std::ffi::OsStr::new(&base)),
                ("ANTHROPIC_API_KEY", std::ffi::OsStr::new("sk-tls-test")),
                ("SSL_CERT_FILE", ca_file.as_os_str()),
            ],
            &["--backend", "claude"],
        )
    };

    let out = run(&ca.write_pem(&sandbox.home(), "ca.pem").unwrap());
    let endpoint = check(&out, "claude", "endpoint");
    assert_eq!(endpoint.verdict, "ok", "{}", text(&out));
    assert_eq!(endpoint.summary, format!("model endpoint {base} answered (HTTP 200)"));

    let other = TestCa::new("another CA").unwrap();
    let out = run(&other.write_pem(&sandbox.home(), "other.pem").unwrap());
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let endpoint = check(&out, "claude", "endpoint");
    assert_eq!(endpoint.verdict, "FAIL", "{}", text(&out));
    assert_eq!(
        endpoint.summary,
        format!(
            "model endpoint {base}: the certificate of 127.0.0.1 is not trusted: it is signed by a CA the trust store does not hold"
        ),
        "{}",
        text(&out)
    );
    assert!(endpoint.fix.as_deref().is_some_and(|fix| fix.contains("SSL_CERT_FILE")), "{}", text(&out));
}

/// Both real peers against the mock model, as one `--json` report: the documented shape, every
/// check passing (or warning), exit 0 — under a config a real `clawbridge run --backend codex` turn
/// runs with, which the test proves by running one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_both_peers_working_every_check_passes_and_the_json_has_its_documented_shape() {
    let (Some(codex), Some(claude)) = (peer_or_skip("codex"), peer_or_skip("claude")) else { return };
    let sandbox = Sandbox::new().unwrap();
    let key = clawbridge_fixtures::peers::claude::API_KEY;
    let mock = start_mock_requiring_key(&json!({"default": {"text": "the doctor was right"}}), key).await.unwrap();
    // The provider takes its key from the environment, so the endpoint check sends it too.
    let config = config_toml(&mock)
        .replace("name = \"Mock provider\"\n", "name = \"Mock provider\"\nenv_key = \"MOCK_API_KEY\"\n");
    assert!(config.contains("env_key"), "{config}");
    std::fs::write(sandbox.codex_home().join("config.toml"), config).unwrap();
    let (codex_home, base_url) = (sandbox.codex_home(), mock.base_url());
    let env = [
        ("PATH", std::ffi::OsStr::new("/usr/bin:/bin")),
        ("CODEX_HOME", codex_home.as_os_str()),
        ("CLAWBRIDGE_CODEX_BIN", codex.as_os_str()),
        ("MOCK_API_KEY", std::ffi::OsStr::new(key)),
        ("CLAWBRIDGE_CLAUDE_BIN", claude.as_os_str()),
        ("ANTHROPIC_BASE_URL", std::ffi::OsStr::new(&base_url)),
        ("ANTHROPIC_API_KEY", std::ffi::OsStr::new(key)),
    ];
    let out = doctor(&sandbox.home(), &env, &["--backend", "codex", "--backend", "claude", "--json"]);
    // What doctor approved, a session runs: one real codex turn under the same settings.
    let work = sandbox.home().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    run.args(["run", "--backend", "codex", "say something"]).current_dir(&work).env_clear();
    run.env("HOME", sandbox.home()).env("CLAWBRIDGE_STATE_DIR", sandbox.home().join("state"));
    for (name, value) in env {
        run.env(name, value);
    }
    let turn = run.output().expect("clawbridge runs");
    assert_eq!(turn.status.code(), Some(0), "the turn doctor vouched for runs: {}", text(&turn));
    assert!(String::from_utf8_lossy(&turn.stdout).contains("the doctor was right"), "{}", text(&turn));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(report["schema"], 1);
    assert_eq!(report["ok"], true);
    let state = sandbox.home().join("state");
    assert_eq!(report["bridge"]["stateDir"], state.display().to_string());
    assert_eq!(report["bridge"]["logFile"], state.join("logs/clawbridge.log").display().to_string());
    let names = |checks: &Value| checks.as_array().unwrap().iter().map(|c| c["name"].clone()).collect::<Vec<_>>();
    assert_eq!(names(&report["bridge"]["checks"]), [json!("state-dir"), json!("log-file")]);
    let backends = report["backends"].as_array().unwrap();
    assert_eq!(backends.iter().map(|b| b["backend"].clone()).collect::<Vec<_>>(), [json!("codex"), json!("claude")]);
    for (backend, program, variable) in
        [(&backends[0], &codex, "CLAWBRIDGE_CODEX_BIN"), (&backends[1], &claude, "CLAWBRIDGE_CLAUDE_BIN")]
    {
        assert_eq!(backend["program"], program.display().to_string());
        assert_eq!(backend["source"], format!("from {variable}"));
        assert!(backend["version"].is_string(), "{backend}");
        assert!(backend["harness"].as_str().unwrap().starts_with("clawbridge-"));
        assert_eq!(
            names(&backend["checks"]),
            ["found", "version", "handshake", "auth", "endpoint", "sandbox"].map(|n| json!(n))
        );
        for check in backend["checks"].as_array().unwrap() {
            let keys: Vec<&String> = check.as_object().unwrap().keys().collect();
            assert!(keys.iter().all(|k| ["name", "verdict", "summary", "fix"].contains(&k.as_str())), "{check}");
            assert!(["ok", "warn", "skipped"].contains(&check["verdict"].as_str().unwrap()), "{check}");
        }
    }
    let endpoint = |backend: &Value| backend["checks"][4]["summary"].as_str().unwrap().to_owned();
    // Codex asks `GET /models`, which the mock has no route for: an answer all the same.
    assert_eq!(endpoint(&backends[0]), format!("model endpoint {}/v1 answered (HTTP 404)", mock.base_url()));
    assert_eq!(endpoint(&backends[1]), format!("model endpoint {} answered (HTTP 200)", mock.base_url()));
    assert_eq!(
        backends[0]["checks"][3]["summary"],
        "provider mock takes its key from MOCK_API_KEY (set, passed to codex)"
    );
    assert_eq!(backends[1]["checks"][3]["summary"], "credential from ANTHROPIC_API_KEY (set)");
}

/// A failed `clawbridge run` ends with where the whole log is, and that file is the user's alone.
#[test]
fn a_failed_run_names_its_log_file_last() {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    // An app-server that says something that is not JSON (logged) and leaves (the run fails).
    let codex = script(bin.path(), "codex", "echo 'not a JSON-RPC line'");
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "codex", "--program", codex.to_str().unwrap(), "hello"])
        .env_clear()
        .envs(clawbridge_fixtures::no_user_config())
        .env("HOME", home.path())
        .env("CLAWBRIDGE_STATE_DIR", home.path().join("state"))
        .output()
        .expect("clawbridge runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let log = home.path().join("state/logs/clawbridge.log");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().last(),
        Some(format!("clawbridge: the full log is in {}", log.display()).as_str()),
        "{stderr}"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&log).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert!(std::fs::read_to_string(&log).unwrap().contains("not a JSON-RPC line"), "the log holds what was logged");
}

/// A `run` that fails before logging anything still ends with its log file, says nothing is in it
/// and how to get more, and creates no file for it.
#[test]
fn a_failed_run_that_logged_nothing_names_its_log_file_and_how_to_log_more() {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .args(["run", "--backend", "demo", "--session", "../escape", "hi"])
        .env_clear()
        .env("HOME", home.path())
        .env("CLAWBRIDGE_STATE_DIR", home.path().join("state"))
        .output()
        .expect("clawbridge runs");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let log = home.path().join("state/logs/clawbridge.log");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.lines().last(),
        Some(
            format!(
                "clawbridge: nothing was logged to {}; run again with CLAWBRIDGE_LOG=debug to log more there",
                log.display()
            )
            .as_str()
        ),
        "{stderr}"
    );
    assert!(!home.path().join("state").exists(), "no file is created for the refused run");
}

/// Doctor reads the settings sessions get: a `codex.bin` set only in the config file is the
/// executable it finds, and it says that the file named it.
#[test]
fn a_codex_named_only_in_the_config_file_is_the_one_doctor_checks() {
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let codex = script(bin.path(), "my-codex", "echo 'codex-cli 0.1.0'");
    let config = home.path().join("config.toml");
    std::fs::write(&config, format!("[codex]\nbin = {:?}\n", codex.display().to_string())).unwrap();
    let out = doctor(
        home.path(),
        &[("PATH", empty.path().as_os_str()), ("CLAWBRIDGE_CONFIG", config.as_os_str())],
        &["--backend", "codex"],
    );
    let found = check(&out, "codex", "found");
    assert_eq!(found.verdict, "ok", "{}", text(&out));
    assert!(found.summary.starts_with(&format!("{} (from codex.bin (", codex.display())), "{found:?}");
    assert!(found.summary.contains(&config.display().to_string()), "{found:?}");
    assert!(check(&out, "codex", "version").summary.starts_with("too old: 0.1.0 ("), "{}", text(&out));
}

/// A symlink planted at the log file's path is a failure: the bridge never logs through one.
#[test]
fn a_symlink_at_the_log_file_fails_the_log_file_check() {
    let home = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    let logs = home.path().join("state/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::os::unix::fs::symlink(home.path().join("elsewhere"), logs.join("clawbridge.log")).unwrap();
    let out = doctor(home.path(), &[("PATH", empty.path().as_os_str())], &["--backend", "codex"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find(|l| l.trim_start().starts_with("log-file")).unwrap_or_default();
    let expected =
        format!("FAIL  {}: a symlink, which the bridge refuses to log through", logs.join("clawbridge.log").display());
    assert!(line.ends_with(&expected), "{}", text(&out));
}

/// The ACP backend's checks against the scripted fake ACP agent: one that needs no login passes;
/// one offering auth methods with none configured warns naming them, and one configured passes.
#[test]
fn an_acp_agent_is_found_from_its_command_line_and_its_handshake_and_auth_are_checked() {
    let home = tempfile::tempdir().unwrap();
    let agent = |name: &str, script: Value| {
        let path = home.path().join(format!("{name}.json"));
        std::fs::write(&path, script.to_string()).unwrap();
        format!("{} --script {}", clawbridge_fixtures::fixture_bin("fake-acp-agent").display(), path.display())
    };
    let fine = agent("fine", json!({}));
    let out = doctor(home.path(), &[("CLAWBRIDGE_ACP_AGENT", fine.as_ref())], &[]);
    let found = check(&out, "acp", "found");
    assert_eq!(found.verdict, "ok", "{}", text(&out));
    assert!(found.summary.contains("from the configured command line in CLAWBRIDGE_ACP_AGENT"), "{}", text(&out));
    // The agent the gateway's environment names can be given from any shell with --agent.
    let out = doctor(home.path(), &[], &["--backend", "acp", "--agent", &fine]);
    let found = check(&out, "acp", "found");
    assert_eq!(found.verdict, "ok", "{}", text(&out));
    assert!(found.summary.contains("flag --agent"), "{}", text(&out));
    assert_eq!(check(&out, "acp", "handshake").verdict, "ok", "{}", text(&out));
    let handshake = check(&out, "acp", "handshake");
    assert_eq!(handshake.verdict, "ok", "{}", text(&out));
    assert!(handshake.summary.contains("fake-acp-agent 0.1.0") && handshake.summary.contains("protocol version 1"));
    assert_eq!(check(&out, "acp", "auth").verdict, "ok", "{}", text(&out));

    let login = agent("login", json!({"authMethods": [{"id": "api-key", "name": "API key"}]}));
    let out = doctor(home.path(), &[("CLAWBRIDGE_ACP_AGENT", login.as_ref())], &[]);
    let auth = check(&out, "acp", "auth");
    assert_eq!(auth.verdict, "warn", "{}", text(&out));
    assert!(auth.summary.contains("[api-key]"), "{}", text(&out));
    assert!(auth.fix.as_deref().is_some_and(|f| f.contains("CLAWBRIDGE_ACP_AUTH_METHOD")), "{}", text(&out));
    let env = [("CLAWBRIDGE_ACP_AGENT", login.as_ref()), ("CLAWBRIDGE_ACP_AUTH_METHOD", "api-key".as_ref())];
    assert_eq!(check(&doctor(home.path(), &env, &[]), "acp", "auth").verdict, "ok");
    let env = [("CLAWBRIDGE_ACP_AGENT", login.as_ref()), ("CLAWBRIDGE_ACP_AUTH_METHOD", "oauth".as_ref())];
    assert_eq!(check(&doctor(home.path(), &env, &[]), "acp", "auth").verdict, "FAIL");
}
