//! The warm-session pool (`adapters/src/claude/pool.rs`) with the replay agent standing in for the
//! CLI: a parked session is handed back only under the same settings, the cap stops the least
//! recently used process, idle processes are stopped, and a warm process serves the next turn's
//! hooks (the replay deviates — and the turn fails — if the old hooks answered).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_adapters::claude::pool::{PoolConfig, SessionPool, WarmSession};
use clawbridge_adapters::claude::{ClaudeConfig, SessionHooks};
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::events::TerminalKind;
use clawbridge_bridge::supervisor::group_alive;
use clawbridge_fixtures::hooks::RecordingObserver;
use tokio_util::sync::CancellationToken;

fn config(fixture: &str, home: &Path) -> ClaudeConfig {
    let recording = clawbridge_fixtures::peers::repo_root().join("fixtures/recordings/claude").join(fixture);
    let mut config = ClaudeConfig::new(clawbridge_fixtures::fixture_bin("replay-agent"));
    config.launcher_args = vec![recording.into()];
    config.env = config.env.clone().with_var("HOME", home);
    config.cwd = Some(home.to_path_buf());
    config.stop.after_stdin_close = Duration::from_millis(500);
    config
}

fn hooks(decision: ApprovalDecision) -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

fn settings(model: &str) -> Fingerprints {
    Fingerprints::new("claude", "/w", model)
}

async fn warm(home: &Path, model: &str) -> WarmSession {
    WarmSession::connect(config("plain-text.jsonl", home), hooks(ApprovalDecision::Allow), settings(model))
        .await
        .expect("the replayed CLI connects")
}

/// Waits (bounded) until the process group `pid` is gone.
async fn stopped(pid: u32) -> bool {
    for _ in 0..200 {
        if !group_alive(pid as i32) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

#[tokio::test]
async fn a_parked_session_comes_back_only_under_the_same_settings() {
    let home = tempfile::tempdir().unwrap();
    let pool = SessionPool::new(PoolConfig::default());
    let mut first = warm(home.path(), "m").await;
    let pid = first.session().pid().unwrap();
    pool.park("s", first);
    assert_eq!(pool.warm_count(), 1);
    let mut again = pool.take("s", &settings("m")).expect("the warm session");
    assert_eq!(again.session().pid(), Some(pid), "the same process");
    assert!(pool.take("s", &settings("m")).is_none(), "taken once");
    pool.park("s", again);
    assert!(pool.take("s", &settings("other-model")).is_none(), "started under another model");
    assert!(stopped(pid).await, "the mismatched process was stopped");
    assert_eq!(pool.warm_count(), 0);
}

#[tokio::test]
async fn the_cap_stops_the_least_recently_used_and_idle_processes_are_stopped() {
    let home = tempfile::tempdir().unwrap();
    let pool = SessionPool::new(PoolConfig { max_warm: 2, idle_timeout: Duration::from_secs(3600) });
    let mut pids = Vec::new();
    for key in ["a", "b", "c"] {
        let mut session = warm(home.path(), "m").await;
        pids.push(session.session().pid().unwrap());
        pool.park(key, session);
    }
    assert_eq!(pool.warm_count(), 2);
    assert!(stopped(pids[0]).await, "the least recently used (a) was stopped");
    assert!(group_alive(pids[1] as i32) && group_alive(pids[2] as i32));
    assert!(pool.take("a", &settings("m")).is_none());
    assert!(pool.discard("b"));
    assert!(stopped(pids[1]).await);
    pool.shutdown().await;
    assert!(!group_alive(pids[2] as i32), "shutdown waits for every stop");

    let idle = SessionPool::new(PoolConfig { max_warm: 8, idle_timeout: Duration::from_millis(300) });
    let mut session = warm(home.path(), "m").await;
    let pid = session.session().pid().unwrap();
    idle.park("x", session);
    assert!(stopped(pid).await, "the idle reaper stopped it");
    assert_eq!(idle.warm_count(), 0);
}

#[tokio::test]
async fn a_warm_process_serves_the_hooks_of_the_turn_it_runs() {
    let home = tempfile::tempdir().unwrap();
    // Connected with hooks that would deny; the recording allowed the command.
    let mut warm = WarmSession::connect(
        config("bash-allowed.jsonl", home.path()),
        hooks(ApprovalDecision::Deny { message: None }),
        settings("m"),
    )
    .await
    .unwrap();
    let observed = Arc::new(RecordingObserver::default());
    warm.set_hooks(SessionHooks { observer: observed.clone(), ..hooks(ApprovalDecision::Allow) });
    let result = warm
        .session()
        .run_turn("Please run the live test command.", &mut |_| {}, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{:?}", result.terminal);
    let reports = observed.reports();
    assert_eq!(reports.len(), 1, "the new observer got the terminal");
    assert!(reports[0].execution_started, "the new approver allowed it, as recorded");
    warm.shutdown().await;
}
