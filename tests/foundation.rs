//! The foundation against a misbehaving peer: the scripted fake agent (fixtures/src/bin/fake_agent.rs)
//! driven through `AgentConnection` — transport, JSON-RPC peer and supervisor together. The 1 GB
//! stderr flood, the grandchild holding the pipes and the SIGTERM-ignoring child moved to
//! tests/fault_matrix.rs with the rest of the fault matrix.

use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::exit::ExitState;
use clawbridge_bridge::rpc::{
    HandlerError, HandlerFailure, PeerConfig, PeerEvent, PeerEvents, RejectAll, RequestHandler, RpcError, StreamProblem,
};
use clawbridge_bridge::supervisor::{
    CommandSpec, EnvPolicy, PidRegistry, SpawnOptions, StopStage, group_alive, group_members,
};
use clawbridge_protocol::jsonrpc::{Dialect, ErrorObject, Request};
use futures::future::BoxFuture;
use serde_json::{Value, json};

mod common;
use common::*;

/// Waits for the next event that is not a notification the test does not care about.
async fn next_event(events: &mut PeerEvents) -> PeerEvent {
    events.recv().await.expect("the reader ends with a Closed event, never silently")
}

#[tokio::test]
async fn a_100_mb_line_is_reported_and_the_next_message_still_arrives() {
    within(async {
        let (agent, mut events) = spawn(&[]);
        let peer = agent.peer().clone();
        let request =
            tokio::spawn(async move { peer.request("fake/oversize", Some(&json!({"bytes": 100_000_000}))).await });
        match next_event(&mut events).await {
            PeerEvent::Problem(StreamProblem::Oversize { len }) => assert_eq!(len, 100_000_000),
            other => panic!("expected the oversize report first, got {other:?}"),
        }
        let answer = request.await.unwrap().expect("the response after the huge line is delivered");
        assert_eq!(answer, json!({"bytes": 100_000_000}));
        let echo = agent.peer().request("fake/echo", Some(&json!({"still": "alive"}))).await.unwrap();
        assert_eq!(echo, json!({"still": "alive"}));
        assert_eq!(agent.shutdown(polite_stop()).await.stage, StopStage::StdinClosed);
    })
    .await;
}

#[tokio::test]
async fn garbage_lines_are_reported_and_the_stream_continues() {
    within(async {
        let (agent, mut events) = spawn(&["--preamble", "Welcome to fake-agent v1 (a banner on stdout)"]);
        let lines = json!({"lines": ["not json at all", "[1,2,3]", "{\"id\":999,\"result\":1}", "{\"method\":"]});
        agent.peer().request("fake/raw", Some(&lines)).await.unwrap();
        agent.peer().request("fake/invalid_utf8", None::<&Value>).await.unwrap();
        agent.peer().request("fake/notify", Some(&json!({"method": "after/garbage", "count": 2}))).await.unwrap();

        let mut problems = Vec::new();
        let mut notes = Vec::new();
        while notes.len() < 2 {
            match next_event(&mut events).await {
                PeerEvent::Problem(p) => problems.push(p),
                PeerEvent::Notification(n) => notes.push(n),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(matches!(&problems[0], StreamProblem::NotJson { preview, .. } if preview.starts_with("Welcome")));
        assert!(matches!(&problems[1], StreamProblem::NotJson { preview, .. } if preview == "not json at all"));
        assert!(matches!(&problems[2], StreamProblem::NotJsonRpc { .. }));
        assert!(matches!(&problems[3], StreamProblem::UnmatchedResponse { .. }));
        assert!(matches!(&problems[4], StreamProblem::NotJson { .. }));
        assert!(matches!(&problems[5], StreamProblem::InvalidUtf8 { len: 3 }));
        assert_eq!(problems.len(), 6);
        assert_eq!(notes[0].method, "after/garbage");
        assert_eq!(notes[1].params_value(), Some(json!({"seq": 1})), "notifications arrive in order");
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn line_separators_inside_strings_are_ordinary_characters() {
    within(async {
        let (agent, _events) = spawn(&["--dialect", "codex"]);
        let text = json!({"text": "a\u{2028}b\u{2029}c\r\nd"});
        assert_eq!(agent.peer().request("fake/echo", Some(&text)).await.unwrap(), text);
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn a_crash_fails_every_pending_request_with_exit_status_and_stderr_tail() {
    within(async {
        let (agent, mut events) = spawn(&[]);
        let peer = agent.peer().clone();
        let hanging = tokio::spawn(async move { peer.request("fake/hang", None::<&Value>).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let crash =
            agent.peer().request("fake/crash", Some(&json!({"code": 7, "stderr": "panic: the model exploded"}))).await;
        for result in [crash, hanging.await.unwrap()] {
            match result {
                Err(RpcError::PeerGone { gone, .. }) => {
                    assert_eq!(gone.exit, Some(ExitState::Code(7)));
                    assert!(gone.stderr_tail.contains("panic: the model exploded"), "tail: {:?}", gone.stderr_tail);
                    let message = gone.to_string();
                    assert!(message.contains("exit code 7") && message.contains("the model exploded"), "{message}");
                }
                other => panic!("expected PeerGone, got {other:?}"),
            }
        }
        assert!(matches!(next_event(&mut events).await, PeerEvent::Closed(_)));
        // After the end, new requests fail at once with the same facts.
        match agent.peer().request("fake/echo", None::<&Value>).await {
            Err(RpcError::PeerGone { gone, .. }) => assert_eq!(gone.exit, Some(ExitState::Code(7))),
            other => panic!("expected PeerGone, got {other:?}"),
        }
        assert_eq!(agent.shutdown(polite_stop()).await.stage, StopStage::AlreadyExited);
    })
    .await;
}

#[tokio::test]
async fn eof_in_the_middle_of_a_line_is_reported() {
    within(async {
        let (agent, mut events) = spawn(&[]);
        let peer = agent.peer().clone();
        let pending = tokio::spawn(async move {
            peer.request("fake/eof_mid_line", Some(&json!({"text": "{\"method\":\"tor"}))).await
        });
        assert!(matches!(next_event(&mut events).await, PeerEvent::Problem(StreamProblem::TruncatedAtEof { len: 14 })));
        match next_event(&mut events).await {
            PeerEvent::Closed(gone) => assert_eq!(gone.exit, Some(ExitState::Code(0))),
            other => panic!("expected Closed, got {other:?}"),
        }
        assert!(matches!(pending.await.unwrap(), Err(RpcError::PeerGone { .. })), "the unanswered request fails");
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn a_child_that_closes_stdout_but_keeps_running_fails_pending_requests() {
    within(async {
        let (agent, _events) = spawn(&[]);
        agent.peer().request("fake/close_stdout", None::<&Value>).await.unwrap();
        match agent.peer().request("fake/echo", None::<&Value>).await {
            Err(RpcError::PeerGone { gone, .. }) => {
                assert_eq!(gone.exit, None, "it is still running");
            }
            other => panic!("expected PeerGone, got {other:?}"),
        }
        // It exits on stdin EOF, the first stage of the stop.
        assert_eq!(agent.shutdown(polite_stop()).await.stage, StopStage::StdinClosed);
    })
    .await;
}

#[tokio::test]
async fn dropping_the_connection_kills_the_group() {
    within(async {
        let (agent, _events) = spawn(&["--ignore-sigterm", "--grandchild", "--keep-running-on-eof"]);
        let pgid = agent.process().expect("spawned").pid() as i32;
        eventually("the grandchild started", || group_members(pgid).len() == 2).await;
        drop(agent);
        eventually("the group is gone after drop", || !group_alive(pgid)).await;
    })
    .await;
}

/// A handler that fails in a chosen way, with approval-style safe fallback.
struct Flaky;

impl RequestHandler for Flaky {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        Box::pin(async move {
            match request.method.as_str() {
                "approve/fails" => Err(HandlerError::Failed("the approval service is down".into())),
                "approve/panics" => panic!("handler bug"),
                "approve/hangs" => std::future::pending().await,
                "approve/refused" => Err(HandlerError::Reply(ErrorObject::new(-32601, "no such method"))),
                _ => Ok(json!({"decision": "accept"})),
            }
        })
    }

    fn fallback(&self, _method: &str, _params: Option<&Value>, failure: &HandlerFailure) -> Result<Value, ErrorObject> {
        Ok(json!({"decision": "decline", "why": failure.to_string()}))
    }
}

#[tokio::test]
async fn every_peer_request_is_answered_even_when_the_handler_fails() {
    within(async {
        let config = PeerConfig {
            dialect: Dialect::Codex,
            handler_timeout: Duration::from_millis(300),
            ..PeerConfig::default()
        };
        let (agent, _events) = spawn_with(fake_agent(&["--dialect", "codex"]), config, Arc::new(Flaky));
        let ask = |method: &'static str| {
            let peer = agent.peer().clone();
            async move {
                let answer = peer
                    .request("fake/ask", Some(&json!({"method": method, "params": {"cmd": "rm -rf /"}})))
                    .await
                    .unwrap();
                answer["clientReplied"].clone()
            }
        };
        let (ok, fails, panics, hangs, refused) = tokio::join!(
            ask("approve/ok"),
            ask("approve/fails"),
            ask("approve/panics"),
            ask("approve/hangs"),
            ask("approve/refused")
        );
        assert_eq!(ok["result"], json!({"decision": "accept"}));
        assert!(ok.get("jsonrpc").is_none(), "the Codex dialect omits the version field");
        assert!(ok["id"].as_str().unwrap().starts_with("fake-"), "string ids are echoed");
        assert_eq!(fails["result"]["decision"], "decline");
        assert!(fails["result"]["why"].as_str().unwrap().contains("approval service is down"));
        assert_eq!(panics["result"]["decision"], "decline");
        assert!(panics["result"]["why"].as_str().unwrap().contains("panicked"));
        assert_eq!(hangs["result"]["decision"], "decline");
        assert!(hangs["result"]["why"].as_str().unwrap().contains("no answer within"));
        assert_eq!(refused["error"]["code"], -32601, "a deliberate error answer is not replaced");
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn requests_time_out_and_late_answers_are_ignored() {
    within(async {
        let (agent, mut events) = spawn(&[]);
        let late = json!({"ms": 500});
        match agent.peer().request_with_timeout("fake/delay", Some(&late), Duration::from_millis(100)).await {
            Err(RpcError::Timeout { method, .. }) => assert_eq!(method, "fake/delay"),
            other => panic!("expected a timeout, got {other:?}"),
        }
        // The answer still comes, to a request nobody waits for any more: reported, then dropped.
        match next_event(&mut events).await {
            PeerEvent::Problem(StreamProblem::UnmatchedResponse { id }) => assert_eq!(id.as_i64(), Some(1)),
            other => panic!("expected the late answer to be reported as unmatched, got {other:?}"),
        }
        match agent.peer().request("no/such/method", None::<&Value>).await {
            Err(RpcError::Remote { error, .. }) => assert_eq!(error.code, -32601),
            other => panic!("expected a remote error, got {other:?}"),
        }
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn the_child_environment_is_an_allowlist_without_loader_injection() {
    within(async {
        // SAFETY: this test binary sets no other variables concurrently that the fake agent reads.
        #[expect(unsafe_code, reason = "the test edits its own environment; see SAFETY above")]
        unsafe {
            std::env::set_var("LD_PRELOAD", "/nonexistent/inject.so");
            std::env::set_var("CLAWBRIDGE_TEST_SECRET", "canary-7f3a");
        }
        let mut spec = fake_agent(&[]);
        spec.env = EnvPolicy::default()
            .with_var("CODEX_HOME", "/tmp/codex-home")
            .with_var("CLAUDECODE", "1")
            .without("CLAUDECODE");
        let (agent, _events) = spawn_with(spec, PeerConfig::default(), Arc::new(RejectAll));
        // The child has its environment; take the variables back out of this process at once,
        // before anything else this binary spawns (cargo, other fake agents) inherits them.
        #[expect(unsafe_code, reason = "the test edits its own environment")]
        unsafe {
            std::env::remove_var("LD_PRELOAD");
            std::env::remove_var("CLAWBRIDGE_TEST_SECRET");
        }
        let env = agent.peer().request("fake/env", None::<&Value>).await.unwrap();
        assert_eq!(env["CODEX_HOME"], "/tmp/codex-home");
        assert!(env.get("PATH").is_some());
        for absent in ["LD_PRELOAD", "CLAWBRIDGE_TEST_SECRET", "CLAUDECODE"] {
            assert!(env.get(absent).is_none(), "{absent} leaked into the child");
        }
        agent.shutdown(polite_stop()).await;
    })
    .await;
}

#[tokio::test]
async fn a_missing_program_is_a_clear_spawn_error() {
    let spec = CommandSpec::new("/nonexistent/agent-binary");
    let error =
        AgentConnection::spawn(&spec, SpawnOptions::default(), PeerConfig::default(), Arc::new(RejectAll)).unwrap_err();
    let message = format!("{error}: {}", std::error::Error::source(&error).unwrap());
    assert!(message.contains("/nonexistent/agent-binary") && message.contains("No such file"), "{message}");
}

#[tokio::test]
async fn a_restarted_bridge_reaps_children_orphaned_by_a_dead_one() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let registry = PidRegistry::open(dir.path()).unwrap();
        let options =
            SpawnOptions { registry: Some(registry.clone()), die_with_bridge: false, ..SpawnOptions::default() };
        let spec = fake_agent(&["--ignore-sigterm", "--grandchild", "--keep-running-on-eof"]);
        let (agent, _events) =
            AgentConnection::spawn(&spec, options, PeerConfig::default(), Arc::new(RejectAll)).unwrap();
        let pgid = agent.process().expect("spawned").pid() as i32;
        eventually("the grandchild started", || group_members(pgid).len() == 2).await;

        // The owner is alive: nothing is touched.
        assert!(registry.reap_orphans(Duration::from_millis(100)).await.unwrap().is_empty());
        assert!(group_alive(pgid));

        // Pretend the bridge that spawned it crashed: its record now names an owner that is gone.
        let record_path = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).next().unwrap();
        let mut record: Value = serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
        record["owner_pid"] = json!(i32::MAX - 7);
        std::fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
        let reaped = registry.reap_orphans(Duration::from_millis(200)).await.unwrap();
        assert_eq!(reaped.len(), 1);
        assert_eq!((reaped[0].pgid, reaped[0].members), (Some(pgid), 2));
        eventually("the orphaned group is gone", || !group_alive(pgid)).await;
        assert!(!record_path.exists());
        drop(agent);
    })
    .await;
}
