//! The WebSocket adapter under the real rpc peer, against a tungstenite server over an in-memory
//! pipe: the same problems, ends and stalls the line path reports.

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::io::DuplexStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::{Keepalive, split_websocket_with, ws_config};
use crate::rpc::{GoneCause, NoProcess, PeerConfig, PeerEvent, PeerEvents, RejectAll, RpcPeer, StreamProblem};

/// The longest message the client side accepts in these tests.
const CAP: usize = 1024;

/// A server socket, and a peer on the client end of a WebSocket over a pipe of `pipe_bytes`.
async fn connected(
    pipe_bytes: usize,
    write_timeout: Option<Duration>,
) -> (WebSocketStream<DuplexStream>, RpcPeer, PeerEvents) {
    connected_with(pipe_bytes, write_timeout, Keepalive::DEFAULT).await
}

/// [`connected`] with the client's keepalive.
async fn connected_with(
    pipe_bytes: usize,
    write_timeout: Option<Duration>,
    keepalive: Keepalive,
) -> (WebSocketStream<DuplexStream>, RpcPeer, PeerEvents) {
    let (client_io, server_io) = tokio::io::duplex(pipe_bytes);
    let server = tokio::spawn(tokio_tungstenite::accept_async(server_io));
    let (client, _) = tokio_tungstenite::client_async_with_config("ws://localhost/", client_io, Some(ws_config(CAP)))
        .await
        .expect("the upgrade succeeds");
    let server = server.await.unwrap().expect("the server side accepts");
    let (frames, writer) = split_websocket_with(client, keepalive);
    let config = PeerConfig { max_line_bytes: CAP, write_timeout, label: "ws-test".into(), ..PeerConfig::default() };
    let (peer, events) = RpcPeer::start_framed(frames, writer, config, Arc::new(RejectAll), Arc::new(NoProcess));
    (server, peer, events)
}

async fn next(events: &mut PeerEvents) -> PeerEvent {
    tokio::time::timeout(Duration::from_secs(10), events.recv())
        .await
        .expect("an event comes")
        .expect("the stream is open")
}

fn gone_cause(event: PeerEvent) -> GoneCause {
    match event {
        PeerEvent::Closed(gone) => gone.cause.clone(),
        other => panic!("expected the end, got {other:?}"),
    }
}

#[tokio::test]
async fn a_message_over_the_cap_is_the_oversize_problem_and_then_the_connection_ends() {
    let (mut server, _peer, mut events) = connected(64 * 1024, None).await;
    server.send(Message::text("x".repeat(CAP + 1))).await.unwrap();
    match next(&mut events).await {
        PeerEvent::Problem(StreamProblem::Oversize { len }) => assert_eq!(len, CAP + 1),
        other => panic!("expected an oversize problem, got {other:?}"),
    }
    // Its payload is still unread on the socket, so nothing after it can be trusted as a message.
    assert!(matches!(gone_cause(next(&mut events).await), GoneCause::ReadFailed(why) if why.contains("cap")));
}

#[tokio::test]
async fn a_binary_non_utf8_message_and_a_non_json_one_are_problems_and_reading_goes_on() {
    let (mut server, _peer, mut events) = connected(64 * 1024, None).await;
    server.send(Message::binary(vec![0xff, 0xfe, b'{'])).await.unwrap();
    server.send(Message::text("not json")).await.unwrap();
    server.send(Message::text(r#"{"jsonrpc":"2.0","method":"still/here","params":{}}"#)).await.unwrap();
    assert!(matches!(next(&mut events).await, PeerEvent::Problem(StreamProblem::InvalidUtf8 { len: 3 })));
    assert!(matches!(next(&mut events).await, PeerEvent::Problem(StreamProblem::NotJson { .. })));
    match next(&mut events).await {
        PeerEvent::Notification(note) => assert_eq!(note.method, "still/here"),
        other => panic!("expected the notification after the problems, got {other:?}"),
    }
}

#[tokio::test]
async fn a_peer_that_closes_ends_the_stream_as_eof_and_pending_requests_fail() {
    let (mut server, peer, mut events) = connected(64 * 1024, None).await;
    let waiting = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request::<()>("never/answered", None).await }
    });
    // The request reached the server before it closes.
    let request = tokio::time::timeout(Duration::from_secs(10), server.next()).await.unwrap().unwrap().unwrap();
    assert!(request.to_text().unwrap().contains("never/answered"), "{request:?}");
    server.close(None).await.unwrap();
    assert!(matches!(gone_cause(next(&mut events).await), GoneCause::OutputClosed));
    let failed = waiting.await.unwrap().unwrap_err();
    assert!(matches!(failed, crate::rpc::RpcError::PeerGone { .. }), "{failed:?}");
}

#[tokio::test]
async fn a_socket_dropped_without_a_close_frame_also_ends_the_stream_as_eof() {
    let (server, _peer, mut events) = connected(64 * 1024, None).await;
    drop(server);
    assert!(matches!(gone_cause(next(&mut events).await), GoneCause::OutputClosed));
}

#[tokio::test]
async fn a_peer_that_stops_reading_is_disconnected_as_stalled_and_later_sends_fail() {
    // The server never reads: the pipe and tungstenite's write buffer fill, the sink stops taking
    // messages, and the writer's timeout ends the connection.
    let (server, peer, mut events) = connected(16 * 1024, Some(Duration::from_millis(300))).await;
    let filler = tokio::spawn({
        let peer = peer.clone();
        async move {
            let params = serde_json::json!({ "pad": "p".repeat(8 * 1024) });
            for _ in 0..10_000 {
                if peer.notify("fill", Some(&params)).await.is_err() {
                    return true;
                }
            }
            false
        }
    });
    assert!(matches!(gone_cause(next(&mut events).await), GoneCause::InputStalled { .. }));
    assert!(filler.await.unwrap(), "a send after the stall fails instead of queueing forever");
    let late = peer.notify::<()>("late", None).await.unwrap_err();
    assert!(matches!(late, crate::rpc::RpcError::PeerGone { .. } | crate::rpc::RpcError::NotSent { .. }), "{late:?}");
    drop(server);
}

#[tokio::test]
async fn lines_we_send_arrive_as_one_text_message_each() {
    let (mut server, peer, _events) = connected(64 * 1024, None).await;
    peer.notify("first", Some(&serde_json::json!({ "n": 1 }))).await.unwrap();
    peer.notify("second", Some(&serde_json::json!({ "n": 2 }))).await.unwrap();
    for method in ["first", "second"] {
        let message = tokio::time::timeout(Duration::from_secs(10), server.next()).await.unwrap().unwrap().unwrap();
        let Message::Text(text) = message else { panic!("expected a text message, got {message:?}") };
        let value: serde_json::Value = serde_json::from_str(text.as_str()).expect("one whole JSON value per message");
        assert_eq!(value["method"], method);
        assert!(!text.as_str().ends_with('\n'));
    }
}

/// A keepalive short enough for a test.
const QUICK: Keepalive = Keepalive { interval: Duration::from_millis(50), timeout: Duration::from_millis(300) };
/// Quick pings with an answer timeout that a loaded machine's scheduling never reaches: the test
/// that the answers keep a connection open must not fail because its own reader was not run.
const PATIENT: Keepalive = Keepalive { interval: Duration::from_millis(100), timeout: Duration::from_millis(1500) };

#[tokio::test]
async fn a_silent_peer_that_answers_pings_stays_connected_and_sees_them() {
    let (mut server, peer, mut events) = connected_with(64 * 1024, None, PATIENT).await;
    // The server reads (so its WebSocket layer answers each ping) and sends nothing itself, for
    // three times the answer's timeout.
    let mut pings = 0;
    let quiet_until = tokio::time::Instant::now() + PATIENT.timeout * 3;
    while let Ok(message) = tokio::time::timeout_at(quiet_until, server.next()).await {
        match message.expect("the connection is open").expect("a message") {
            Message::Ping(_) => pings += 1,
            other => panic!("only pings come while both sides are silent, got {other:?}"),
        }
    }
    assert!(pings >= 3, "a silent connection is pinged every interval ({pings} pings)");
    assert!(events.try_recv().is_err(), "the connection is still open and nothing came");
    // And it still carries lines both ways (pings go on meanwhile: one may come first).
    peer.notify("after/silence", None::<&()>).await.unwrap();
    let message = loop {
        let message = tokio::time::timeout(Duration::from_secs(10), server.next()).await.unwrap().unwrap().unwrap();
        if !matches!(message, Message::Ping(_)) {
            break message;
        }
    };
    assert!(message.to_text().unwrap().contains("after/silence"), "{message:?}");
    server.send(Message::text(r#"{"jsonrpc":"2.0","method":"still/here","params":{}}"#)).await.unwrap();
    match next(&mut events).await {
        PeerEvent::Notification(note) => assert_eq!(note.method, "still/here"),
        other => panic!("expected the notification, got {other:?}"),
    }
}

#[tokio::test]
async fn a_peer_that_never_answers_a_ping_ends_the_stream_naming_the_ping() {
    // The server side is held but never read: nothing answers the ping, as with a daemon that died
    // behind a proxy or a host that fell off the network without a FIN.
    let (server, peer, mut events) = connected_with(64 * 1024, None, QUICK).await;
    let waiting = tokio::spawn({
        let peer = peer.clone();
        async move { peer.request::<()>("never/answered", None).await }
    });
    match gone_cause(next(&mut events).await) {
        GoneCause::ReadFailed(why) => assert!(why.contains("did not answer a ping"), "{why}"),
        other => panic!("expected the unanswered ping to end the stream, got {other:?}"),
    }
    let failed = waiting.await.unwrap().unwrap_err();
    assert!(matches!(failed, crate::rpc::RpcError::PeerGone { .. }), "{failed:?}");
    drop(server);
}
