//! The Codex session's handshake and version gate, against the fake agent speaking the Codex
//! dialect with a chosen userAgent.

use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::codex::{CodexConfig, CodexError, CodexSession, SessionHooks};
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::supervisor::group_alive;

fn config(user_agent: &str) -> CodexConfig {
    let mut config = CodexConfig::new(clawbridge_fixtures::fixture_bin("fake-agent"));
    // The fake agent takes its flags after the `app-server` subcommand the config adds.
    config.config_overrides = Vec::new();
    config.handshake_timeout = Duration::from_secs(20);
    config.stop.after_stdin_close = Duration::from_secs(2);
    config.env = config.env.with_var("FAKE_AGENT_USER_AGENT", user_agent).with_var("FAKE_AGENT_DIALECT", "codex");
    config
}

fn hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

async fn connect(user_agent: &str) -> Result<CodexSession, CodexError> {
    CodexSession::connect(config(user_agent), hooks()).await
}

#[tokio::test]
async fn old_unversioned_and_prerelease_servers_are_refused_and_stopped() {
    for user_agent in [
        "codex_cli_rs/0.100.0 (linux; test)",
        "missing-version",
        "Codex Desktop/0.124",
        "clawbridge/0.149.0-alpha.1 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)",
    ] {
        let error = connect(user_agent).await.err().unwrap_or_else(|| panic!("{user_agent} was accepted"));
        assert!(matches!(error, CodexError::VersionRejected { .. }), "{user_agent}: {error}");
        assert!(!error.is_retryable());
        let message = error.to_string();
        assert!(message.contains("0.149.0"), "names the required version: {message}");
        assert_eq!(running_with_user_agent(user_agent), Vec::<i32>::new(), "the refused server was stopped");
    }
}

#[tokio::test]
async fn the_floor_and_newer_than_tested_servers_are_accepted() {
    for (user_agent, version) in [
        ("clawbridge/0.149.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)", "0.149.0"),
        ("Codex Desktop/0.170.0 (Mac OS 15; arm64) xterm (clawbridge; 0.1.0)", "0.170.0"),
    ] {
        let session = connect(user_agent).await.unwrap_or_else(|e| panic!("{user_agent} refused: {e}"));
        assert_eq!(session.server_version().to_string(), version);
        let pid = session.pid() as i32;
        assert_eq!(running_with_user_agent(user_agent), vec![pid], "the probe finds a live server");
        session.shutdown().await;
        assert_eq!(running_with_user_agent(user_agent), Vec::<i32>::new());
        assert!(!group_alive(pid));
    }
}

/// Live fake agents started with this userAgent (each test case uses its own).
fn running_with_user_agent(user_agent: &str) -> Vec<i32> {
    let needle = format!("FAKE_AGENT_USER_AGENT={user_agent}\0");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let live = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')));
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            live && String::from_utf8_lossy(&environ).contains(&needle)
        })
        .collect()
}
