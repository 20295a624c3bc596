//! Helpers shared by the integration tests that drive the scripted fake agent through
//! `AgentConnection` (tests/foundation.rs, tests/fault_matrix.rs) or watch processes
//! (tests/serve.rs), and the live OpenClaw tests' setup ([`openclaw`], tests/openclaw_*.rs). Each
//! test crate uses a subset.
#![allow(dead_code)]

pub mod openclaw;
pub mod raw_host;
pub mod stub_codex;

use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::rpc::{PeerConfig, PeerEvents, RejectAll, RequestHandler};
use clawbridge_bridge::supervisor::{CommandSpec, SpawnOptions, StopPolicy};

/// Every test runs under this limit: a hang is a failure, not a stuck CI job.
pub const TEST_LIMIT: Duration = Duration::from_secs(120);

pub async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(TEST_LIMIT, fut).await.expect("the test hung")
}

pub fn fake_agent(flags: &[&str]) -> CommandSpec {
    CommandSpec::new(clawbridge_fixtures::fixture_bin("fake-agent")).args(flags.iter().copied())
}

/// For children that exit on stdin EOF: generous graces (a loaded machine may take a while to
/// schedule the exit), which cost nothing because each stage ends as soon as the group is gone.
pub fn polite_stop() -> StopPolicy {
    StopPolicy {
        after_stdin_close: Duration::from_secs(10),
        after_sigterm: Duration::from_secs(10),
        after_sigkill: Duration::from_secs(5),
    }
}

pub fn spawn_with(
    spec: CommandSpec,
    config: PeerConfig,
    handler: Arc<dyn RequestHandler>,
) -> (AgentConnection, PeerEvents) {
    AgentConnection::spawn(&spec, SpawnOptions::default(), config, handler).expect("the fake agent starts")
}

pub fn spawn(flags: &[&str]) -> (AgentConnection, PeerEvents) {
    spawn_with(fake_agent(flags), PeerConfig::default(), Arc::new(RejectAll))
}

/// Polls `condition` every 10 ms, for up to 10 s.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Pids whose parent is `parent` (from /proc).
pub fn children_of(parent: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return out };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the parenthesised command: state, ppid, …
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let ppid = rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}
