//! The record → normalise → replay loop, end to end with the fake agent as the "real" peer.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::exit::ExitState;
use clawbridge_bridge::rpc::{HandlerError, PeerConfig, RequestHandler, RpcError, RpcPeer};
use clawbridge_bridge::supervisor::{CommandSpec, SpawnOptions, StopPolicy};
use clawbridge_fixtures::fixture_bin;
use clawbridge_fixtures::recording::Recording;
use clawbridge_protocol::jsonrpc::Request;
use futures::future::BoxFuture;
use serde_json::{Value, json};

struct Approver;

impl RequestHandler for Approver {
    fn handle(&self, request: Request) -> BoxFuture<'static, Result<Value, HandlerError>> {
        Box::pin(async move { Ok(json!({"decision": "accept", "for": request.method})) })
    }
}

/// The scenario: the same calls whether the peer is real (recorded) or replayed.
async fn drive(peer: &RpcPeer, workdir: &Path, echo_text: &str) -> Result<Vec<Value>, RpcError> {
    let mut answers = vec![peer.request("initialize", Some(&json!({"clientInfo": {"name": "clawbridge"}}))).await?];
    peer.notify("initialized", None::<&Value>).await?;
    let path = workdir.join("notes.txt");
    answers.push(peer.request("fake/echo", Some(&json!({"text": echo_text, "path": path}))).await?);
    answers.push(peer.request("fake/notify", Some(&json!({"method": "item/started", "count": 2}))).await?);
    answers
        .push(peer.request("fake/ask", Some(&json!({"method": "approval/request", "params": {"cmd": "ls"}}))).await?);
    answers.push(peer.request("fake/pid", None::<&Value>).await?);
    Ok(answers)
}

fn connect(spec: CommandSpec) -> AgentConnection {
    let config = PeerConfig { request_timeout: Duration::from_secs(20), ..PeerConfig::default() };
    AgentConnection::spawn(&spec, SpawnOptions::default(), config, Arc::new(Approver)).expect("spawn").0
}

async fn record(out: &Path, workdir: &Path) -> Vec<Value> {
    let spec = CommandSpec::new(fixture_bin("record-proxy")).args([
        "--out".as_ref(),
        out.as_os_str(),
        "--backend".as_ref(),
        "fake".as_ref(),
        "--peer-version".as_ref(),
        "1.0.0".as_ref(),
        "--scenario".as_ref(),
        "smoke".as_ref(),
        "--literal".as_ref(),
        format!("{}=<workdir>", workdir.display()).as_ref(),
        "--".as_ref(),
        fixture_bin("fake-agent").as_os_str(),
    ]);
    let agent = connect(spec);
    let answers = drive(agent.peer(), workdir, "hello").await.expect("the recorded scenario runs");
    agent.shutdown(StopPolicy::default()).await;
    answers
}

#[tokio::test]
async fn recordings_are_normalised_reproducible_and_replayable() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().join("work");
    let (first, second) = (dir.path().join("first.jsonl"), dir.path().join("second.jsonl"));
    let real_answers = record(&first, &workdir).await;
    record(&second, &workdir).await;

    let text = std::fs::read_to_string(&first).unwrap();
    assert_eq!(text, std::fs::read_to_string(&second).unwrap(), "re-recording yields the same bytes");
    assert!(!text.contains(&*dir.path().to_string_lossy()), "no machine path left:\n{text}");
    assert!(text.contains("<workdir>/notes.txt"));
    let recording = Recording::parse(&text).unwrap();
    assert_eq!(recording.header.backend, "fake");
    assert_eq!(recording.client_lines().count(), 7, "6 requests/notifications + 1 answer to the peer's question");
    assert_eq!(recording.entries.len(), 7 + 5 + 3, "5 answers, 2 notifications, 1 question");
    let timing = std::fs::read_to_string(dir.path().join("first.jsonl.timing")).unwrap();
    assert_eq!(timing.lines().count(), recording.entries.len());

    // The replay answers the same client the way the real peer did (modulo normalised values).
    let replay = connect(CommandSpec::new(fixture_bin("replay-agent")).args([first.as_os_str()]));
    let replayed = drive(replay.peer(), &workdir, "hello").await.expect("the replay follows the client");
    assert_eq!(replayed.len(), real_answers.len());
    assert_eq!(replayed[1], json!({"text": "hello", "path": "<workdir>/notes.txt"}));
    assert_eq!(replayed[3], real_answers[3], "the client's answer to the peer's question came back");
    assert_eq!(replayed[4]["pid"], 0, "volatile numbers are normalised");
    let outcome = replay.shutdown(StopPolicy::default()).await;
    assert_eq!(outcome.exit, Some(ExitState::Code(0)));
}

#[tokio::test]
async fn a_client_that_deviates_gets_a_precise_error() {
    let dir = tempfile::tempdir().unwrap();
    let workdir = dir.path().join("work");
    let path = dir.path().join("rec.jsonl");
    record(&path, &workdir).await;

    let replay = connect(CommandSpec::new(fixture_bin("replay-agent")).args([path.as_os_str()]));
    match drive(replay.peer(), &workdir, "goodbye").await {
        Err(RpcError::PeerGone { gone, .. }) => {
            assert_eq!(gone.exit, Some(ExitState::Code(3)));
            let tail = &gone.stderr_tail;
            assert!(tail.contains(r#"`params.text` is "goodbye", the recording has "hello""#), "{tail}");
            assert!(tail.contains("expected: {") && tail.contains("received: {"), "{tail}");
        }
        other => panic!("expected the replay agent to refuse, got {other:?}"),
    }
    replay.shutdown(StopPolicy::default()).await;
}
