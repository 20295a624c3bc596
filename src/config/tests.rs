//! The loader: layers, sources, and the errors' places.

use std::collections::HashMap;
use std::path::PathBuf;

use super::value::{CgroupsSetting, PassEnvList};
use super::*;

fn file(text: &str) -> ConfigFile {
    ConfigFile { path: PathBuf::from("/cfg/config.toml"), text: text.into() }
}

fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<std::ffi::OsString> {
    let vars: HashMap<String, std::ffi::OsString> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    move |name| vars.get(name).cloned()
}

fn no_env(_: &str) -> Option<std::ffi::OsString> {
    None
}

fn invalid(text: &str) -> (usize, usize, Option<String>, String) {
    match Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap_err() {
        ConfigError::Invalid { line, column, key, message, .. } => (line, column, key, message),
        other => panic!("not an Invalid: {other:?}"),
    }
}

#[test]
fn no_file_no_env_gives_every_default() {
    let settings = Settings::resolve(None, Flags::default(), &no_env).unwrap();
    assert!(settings.shown().iter().all(|shown| shown.source == Source::Default));
    assert_eq!(settings.run.backend.value.as_deref(), Some("demo"));
    assert_eq!(settings.reap.grace_ms.value, Some(2000));
    assert_eq!(settings.claude.warm_max.value, Some(8));
    assert_eq!(settings.codex.bin.value, None, "no default binary: the backend looks on PATH");
}

#[test]
fn a_file_value_names_its_line() {
    let text = "# comment\n[codex]\nbin = \"/opt/codex\"\n\n[agents]\nwrite-timeout-ms = 2500\n";
    let settings = Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap();
    assert_eq!(settings.codex.bin.value.map(|p| p.0), Some(PathBuf::from("/opt/codex")));
    assert_eq!(settings.codex.bin.source, Source::File { path: "/cfg/config.toml".into(), line: 3 });
    assert_eq!(settings.agents.write_timeout_ms.value, Some(2500));
    assert_eq!(settings.agents.write_timeout_ms.source, Source::File { path: "/cfg/config.toml".into(), line: 6 });
    assert_eq!(settings.codex.home.source, Source::Default);
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let text = "[bridge]\nstate-dir = \"/from/file\"\npass-env = [\"bedrock\"]\n[run]\nbackend = \"codex\"\n";
    let env = env_of(&[("CLAWBRIDGE_STATE_DIR", "/from/env")]);
    let mut flags = Flags::default();
    flags.bridge.pass_env = Some("vertex".parse().unwrap());
    let settings = Settings::resolve(Some(&file(text)), flags, &env).unwrap();
    assert_eq!(settings.bridge.state_dir.value, Some(PathBuf::from("/from/env")));
    assert_eq!(settings.bridge.state_dir.source, Source::Env("CLAWBRIDGE_STATE_DIR"));
    assert_eq!(settings.bridge.pass_env.value, Some("vertex".parse::<PassEnvList>().unwrap()));
    assert_eq!(settings.bridge.pass_env.source, Source::Flag("--pass-env"));
    assert_eq!(settings.run.backend.value.as_deref(), Some("codex"));
    assert!(matches!(settings.run.backend.source, Source::File { line: 5, .. }));
}

#[test]
fn the_first_set_variable_of_a_key_wins() {
    let env = env_of(&[("RUST_LOG", "trace"), ("CLAWBRIDGE_LOG", "debug")]);
    let settings = Settings::resolve(None, Flags::default(), &env).unwrap();
    assert_eq!(settings.logs.filter.value.as_ref().map(|f| f.0.as_str()), Some("debug"));
    assert_eq!(settings.logs.filter.source, Source::Env("CLAWBRIDGE_LOG"));
    let env = env_of(&[("RUST_LOG", "trace")]);
    let settings = Settings::resolve(None, Flags::default(), &env).unwrap();
    assert_eq!(settings.logs.filter.source, Source::Env("RUST_LOG"));
}

#[test]
fn cgroups_read_as_the_variable_always_was() {
    for (text, expected) in [
        ("off", CgroupsSetting::Off),
        ("NO", CgroupsSetting::Off),
        ("0", CgroupsSetting::Off),
        ("1", CgroupsSetting::Auto),
    ] {
        let settings = Settings::resolve(None, Flags::default(), &env_of(&[("CLAWBRIDGE_CGROUPS", text)])).unwrap();
        assert_eq!(settings.containment.cgroups.value, Some(expected), "{text}");
    }
    let settings =
        Settings::resolve(Some(&file("[containment]\ncgroups = \"off\"\n")), Flags::default(), &no_env).unwrap();
    assert_eq!(settings.containment.cgroups.value, Some(CgroupsSetting::Off));
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let (line, column, key, _) = invalid("[bridge]\nstate-dir = \"/x\"\npass-env = [\"bedrock\"\n");
    assert_eq!((line, key.as_deref()), (3, Some("bridge.pass-env")), "the list left open");
    assert!(column >= 1);
    let (line, column, ..) = invalid("[run]\nbackend = codex\n");
    assert_eq!((line, column), (2, 11));
}

#[test]
fn an_unknown_key_is_named_with_the_known_ones() {
    let (line, column, key, message) = invalid("[codex]\nbin = \"/x\"\nbinary = \"/y\"\n");
    assert_eq!((line, column, key.as_deref()), (3, 1, Some("codex.binary")));
    assert!(
        message.contains("unknown field `binary`") && message.contains("`bin`") && message.contains("`home`"),
        "{message}"
    );
    let (line, _, key, message) = invalid("[run]\nbackend = \"demo\"\n\n[acpx]\nagent = \"x\"\n");
    assert_eq!((line, key.as_deref()), (4, Some("acpx")));
    assert!(message.contains("`serve`"), "{message}");
}

#[test]
fn a_wrong_type_names_the_key_and_the_expected_type() {
    let (line, column, key, message) = invalid("[reap]\n\ngrace-ms = \"soon\"\n");
    assert_eq!((line, column, key.as_deref()), (3, 12, Some("reap.grace-ms")));
    assert!(message.contains("u64"), "{message}");
    let (_, _, key, message) = invalid("[bridge]\npass-env = [\"bedrock\", \"azure\"]\n");
    assert_eq!(key.as_deref(), Some("bridge.pass-env"));
    assert!(message.contains("azure"), "{message}");
}

#[test]
fn an_unreadable_env_value_names_the_variable_and_key() {
    let error =
        Settings::resolve(None, Flags::default(), &env_of(&[("CLAWBRIDGE_WRITE_TIMEOUT_MS", "ten")])).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("CLAWBRIDGE_WRITE_TIMEOUT_MS=ten") && text.contains("agents.write-timeout-ms"), "{text}");
}

#[test]
fn columns_count_characters_and_offsets_past_the_end_are_clamped() {
    let f = file("a = \"é\"\nb = 1");
    assert_eq!(f.line_column(0), (1, 1));
    assert_eq!(f.line_column(7), (1, 7), "after the two-byte é");
    assert_eq!(f.line_column(6), (1, 6), "inside é: its start");
    assert_eq!(f.line_column(1000), (2, 6));
}

#[test]
fn the_default_file_may_be_missing_a_named_one_may_not_and_size_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("config.toml");
    assert!(ConfigFile::read(&FileChoice::Default(Some(missing.clone()))).unwrap().is_none());
    assert!(matches!(ConfigFile::read(&FileChoice::Named(missing.clone())), Err(ConfigError::Unreadable { .. })));
    std::fs::write(&missing, vec![b'#'; usize::try_from(MAX_CONFIG_BYTES).unwrap() + 1]).unwrap();
    assert!(matches!(ConfigFile::read(&FileChoice::Named(missing.clone())), Err(ConfigError::TooLarge { .. })));
    std::fs::write(&missing, [0xff, 0xfe]).unwrap();
    assert!(matches!(ConfigFile::read(&FileChoice::Named(missing.clone())), Err(ConfigError::NotText { .. })));
    let link = dir.path().join("linked.toml");
    std::fs::write(&missing, "[run]\nbackend = \"codex\"\n").unwrap();
    std::os::unix::fs::symlink(&missing, &link).unwrap();
    let read = ConfigFile::read(&FileChoice::Named(link)).unwrap().unwrap();
    assert!(read.text.contains("codex"), "a symlinked file (dotfile managers) is followed");
}

#[test]
fn every_keys_documented_default_is_the_default_it_resolves_to() {
    // The docs' default is derived from the value; a declared text replaces it only where the
    // value cannot say it: no value (the consumer's own), or a path that depends on the machine.
    let machine_dependent = ["bridge.state-dir"];
    let keys = Settings::keys();
    let shown = Settings::resolve(None, Flags::default(), &no_env).unwrap().shown();
    let declared: Vec<_> = keys.iter().map(|k| format!("{}.{}", k.section, k.name)).collect();
    assert_eq!(shown.iter().map(|s| s.key.clone()).collect::<Vec<_>>(), declared, "config show lists the keys");
    for (key, shown) in keys.iter().zip(&shown) {
        assert!(!key.doc.is_empty(), "{key:?}");
        match (&shown.value, key.shown_override) {
            (None, Some(text)) => assert!(!text.is_empty(), "{key:?}"),
            (None, None) => panic!("{}: no default value and no words for it", shown.key),
            (Some(_), Some(_)) => assert!(
                machine_dependent.contains(&shown.key.as_str()),
                "{}: a hand-typed default beside a default value; derive it",
                shown.key
            ),
            (Some(value), None) => {
                let value = if value.is_empty() { "none" } else { value };
                assert_eq!(key.default, value, "{}: the docs' default is not the value", shown.key);
            }
        }
    }
}

#[test]
fn every_declared_section_is_a_section_of_the_file() {
    let sections: std::collections::BTreeSet<_> = Settings::keys().iter().map(|key| key.section).collect();
    assert!(sections.len() >= 9, "{sections:?}");
    for section in sections {
        let text = format!("[{section}]\n");
        assert!(Settings::resolve(Some(&file(&text)), Flags::default(), &no_env).is_ok(), "[{section}] is refused");
    }
}

#[test]
fn the_key_of_an_error_is_the_documents_not_the_nearest_line() {
    // A header inside a multi-line string is text, not a section: the stray key is under [logs].
    let (line, _, key, _) = invalid("[logs]\nfilter = \"\"\"\n[codex]\n\"\"\"\nbogus = 1\n");
    assert_eq!((line, key.as_deref()), (5, Some("logs.bogus")));
    let (_, _, key, _) = invalid("codex = { bin = \"/x\", bogus = 1 }\n");
    assert_eq!(key.as_deref(), Some("codex.bogus"), "an inline table");
    let (_, _, key, _) = invalid("serve.\"input-budget-bytes\" = \"many\"\n");
    assert_eq!(key.as_deref(), Some("serve.input-budget-bytes"), "a dotted, quoted key");
    let (line, _, key, _) = invalid("[run]\nbackend = \"demo\"\nbackend = \"codex\"\n");
    assert_eq!((line, key.as_deref()), (3, Some("run.backend")), "a duplicate key");
    let (_, _, key, _) = invalid("[[codex]]\nbin = \"/x\"\n");
    assert_eq!(key.as_deref(), Some("codex"), "an array of tables where a section belongs");
}

#[test]
fn an_empty_path_in_the_file_is_refused_at_its_line() {
    let (line, _, key, message) = invalid("[bridge]\nstate-dir = \"\"\n");
    assert_eq!((line, key.as_deref()), (2, Some("bridge.state-dir")));
    assert!(message.contains("non-empty path"), "{message}");
}

#[test]
fn relative_paths_in_the_file_are_beside_the_file_and_bare_programs_on_path() {
    let text = "[bridge]\nstate-dir = \"state\"\n[codex]\nbin = \"codex\"\n[claude]\nbin = \"bin/claude\"\n";
    let settings = Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap();
    assert_eq!(settings.bridge.state_dir.value, Some(PathBuf::from("/cfg/state")));
    assert_eq!(settings.codex.bin.value.map(|p| p.0), Some(PathBuf::from("codex")));
    assert_eq!(settings.claude.bin.value.map(|p| p.0), Some(PathBuf::from("/cfg/bin/claude")));
}

#[test]
fn a_log_filter_tracing_cannot_parse_is_an_error_not_the_default() {
    let (line, _, key, _) = invalid("[logs]\nfilter = \"[[[bad\"\n");
    assert_eq!((line, key.as_deref()), (2, Some("logs.filter")));
    let error = Settings::resolve(None, Flags::default(), &env_of(&[("RUST_LOG", "[[[bad")])).unwrap_err();
    assert!(matches!(error, ConfigError::BadEnv { var: "RUST_LOG", .. }), "{error:?}");
}

#[test]
fn a_variable_that_is_not_utf8_sets_a_path_and_refuses_text() {
    use std::os::unix::ffi::OsStrExt;
    let raw = std::ffi::OsStr::from_bytes(b"/tmp/st\xff").to_os_string();
    let env = {
        let raw = raw.clone();
        move |name: &str| matches!(name, "CLAWBRIDGE_STATE_DIR" | "CLAWBRIDGE_LOG").then(|| raw.clone())
    };
    let error = Settings::resolve(None, Flags::default(), &env).unwrap_err();
    assert!(matches!(error, ConfigError::BadEnv { var: "CLAWBRIDGE_LOG", .. }), "{error:?}");
    let paths_only = move |name: &str| (name == "CLAWBRIDGE_STATE_DIR").then(|| raw.clone());
    let settings = Settings::resolve(None, Flags::default(), &paths_only).unwrap();
    assert_eq!(settings.bridge.state_dir.value.unwrap().as_os_str().as_bytes(), b"/tmp/st\xff");
}

#[test]
fn every_declared_flag_is_a_flag_of_the_command_line() {
    use clap::CommandFactory;
    fn longs(command: &clap::Command, into: &mut Vec<String>) {
        into.extend(command.get_arguments().filter_map(|arg| arg.get_long()).map(|long| format!("--{long}")));
        for sub in command.get_subcommands() {
            longs(sub, into);
        }
    }
    let mut flags = Vec::new();
    longs(&crate::cli::Cli::command(), &mut flags);
    for key in Settings::keys() {
        if let Some(flag) = key.flag {
            assert!(flags.iter().any(|f| f == flag), "{}.{}: {flag} is no flag of clawbridge", key.section, key.name);
        }
    }
}

#[test]
fn the_acp_agent_gets_the_process_settings_and_its_lines_place() {
    let text =
        "[agents]\nwrite-timeout-ms = 4321\n[containment]\ncgroups = \"off\"\n[acp]\nagent = \"my-agent --acp\"\n";
    let settings = Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap();
    let acp = settings.backend_options().acp.unwrap();
    assert_eq!(acp.process.write_timeout, Some(std::time::Duration::from_millis(4321)));
    assert_eq!(acp.process.containment, Some(clawbridge_bridge::supervisor::Containment::TokenOnly));
    assert_eq!(acp.agent_named_by.as_deref(), Some("acp.agent (file:/cfg/config.toml:6)"));
}

#[test]
fn codex_connect_with_a_capability_token_file_becomes_the_remote_the_backend_connects_to() {
    use clawbridge_bridge::transport::bearer::{SecretSource, WsAuth};
    let text =
        "[codex]\nconnect = \"ws://127.0.0.1:4500\"\nws-auth = \"capability-token\"\nws-token-file = \"token\"\n";
    let settings = Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap();
    let remote = settings.codex_remote().unwrap().expect("a remote");
    assert_eq!(remote.endpoint.to_string(), "ws://127.0.0.1:4500");
    // A relative token file is beside the config file, as every path in it.
    assert_eq!(remote.auth, WsAuth::CapabilityToken { token: SecretSource::File("/cfg/token".into()) });
    assert_eq!(settings.backend_options().codex_connect, Some(remote));
}

#[test]
fn codex_connect_from_the_flag_needs_no_auth_for_a_unix_socket() {
    use clawbridge_bridge::transport::bearer::WsAuth;
    let mut flags = Flags::default();
    flags.codex.connect = Some("unix:///run/codex.sock".parse().unwrap());
    let settings = Settings::resolve(None, flags, &no_env).unwrap();
    let remote = settings.codex_remote().unwrap().expect("a remote");
    assert_eq!(remote.auth, WsAuth::None);
    assert_eq!(settings.codex.connect.source, Source::Flag("--connect"));
}

#[test]
fn codex_auth_keys_that_do_not_add_up_are_refused_when_read() {
    let incomplete = |text: &str| match Settings::resolve(Some(&file(text)), Flags::default(), &no_env).unwrap_err() {
        ConfigError::Incomplete { key, .. } => key,
        other => panic!("not Incomplete: {other:?}"),
    };
    assert_eq!(
        incomplete("[codex]\nconnect = \"ws://127.0.0.1:1\"\nws-auth = \"capability-token\"\n"),
        "codex.ws-auth"
    );
    assert_eq!(incomplete("[codex]\nws-auth = \"capability-token\"\nws-token-env = \"T\"\n"), "codex.connect");
    assert_eq!(incomplete("[codex]\nconnect = \"ws://127.0.0.1:1\"\nws-token-env = \"T\"\n"), "codex.ws-auth");
    let both = "[codex]\nconnect = \"ws://h:1\"\nws-auth = \"capability-token\"\nws-token-env = \"T\"\nws-token-file = \"/t\"\n";
    assert_eq!(incomplete(both), "codex.ws-token-file");
    let (line, _, key, message) = invalid("[codex]\nconnect = \"http://127.0.0.1:1\"\n");
    assert_eq!((line, key.as_deref()), (2, Some("codex.connect")));
    assert!(message.contains("unix:///absolute/path"), "{message}");
    let (_, _, key, _) = invalid("[codex]\nws-auth = \"password\"\n");
    assert_eq!(key.as_deref(), Some("codex.ws-auth"));
}
