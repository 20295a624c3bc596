//! The seam holds: a backend that clawbridge does not ship — the fake agent behind a tiny adapter
//! written here — is registered next to the real ones and runs an attempt through `serve` and
//! through `run`, with no change to either. All the adapter supplies is the seam's three pieces:
//! its facts, how a session is opened, and how its stream maps to normalized events.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawbridge::run::RunArgs;
use clawbridge_bridge::attempt::{NativeTurn, SessionHooks, Step, TurnActivity, TurnDriver, TurnLimits};
use clawbridge_bridge::backend::{
    Backend, BackendError, HarnessFacts, NativeSession, OpenFuture, OpenSettings, ProbeReport, ProgramNotFound,
    Registry, Supports, TurnFuture, TurnRequest,
};
use clawbridge_bridge::binding::Fingerprints;
use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::events::{Event, TerminalKind, TurnTerminal};
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_bridge::rpc::{NoProcess, PeerConfig, PeerEvent, PeerEvents, RejectAll, RpcPeer};
use clawbridge_bridge::supervisor::{CommandSpec, SpawnOptions, StopPolicy};
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// The fake agent as an "echo" runtime: a turn asks it (`fake/notify`) to say the prompt back as
/// one `echo/said` notification, which maps to a started turn, one assistant message and `ok`.
struct EchoBackend {
    facts: HarnessFacts,
}

impl EchoBackend {
    fn new() -> Self {
        EchoBackend {
            facts: HarnessFacts {
                id: "test-echo",
                backend: "echo",
                label: "Echo (test)",
                process: "the echo agent",
                native_session: "echo session",
                transcript_api: "echo",
                supports: Supports { resume: true, ..Supports::default() },
                notice: None,
                fixed_approval: None,
            },
        }
    }
}

impl Backend for EchoBackend {
    fn facts(&self) -> &HarnessFacts {
        &self.facts
    }

    fn locate(&self, requested: Option<&Path>) -> Result<PathBuf, ProgramNotFound> {
        Ok(requested.map_or_else(|| clawbridge_fixtures::fixture_bin("fake-agent"), Path::to_path_buf))
    }

    fn probe<'a>(&'a self, program: &'a Path, _versions: &'a VersionProbe) -> BoxFuture<'a, ProbeReport> {
        Box::pin(async move { ProbeReport::available(program.to_path_buf(), Some("1.0.0".into())) })
    }

    fn fingerprints(&self, settings: &OpenSettings) -> Fingerprints {
        let cwd = settings.cwd.as_ref().map(|c| c.display().to_string()).unwrap_or_default();
        Fingerprints::new(self.facts.id, cwd, settings.model.clone().unwrap_or_default())
    }

    fn open(&self, settings: OpenSettings, hooks: SessionHooks) -> OpenFuture<'_> {
        Box::pin(async move {
            let mut spec = CommandSpec::new(settings.program.clone());
            spec.args = vec!["--dialect".into(), "jsonrpc2".into()];
            let spawn = SpawnOptions { registry: settings.registry.clone(), ..SpawnOptions::default() };
            let (conn, events) = AgentConnection::spawn(&spec, spawn, PeerConfig::default(), Arc::new(RejectAll))
                .map_err(|e| BackendError::Start { source: Box::new(e), retryable: true })?;
            // A resumed session keeps its id; a fresh one gets a new one.
            let id = settings.resume.unwrap_or_else(|| format!("echo-{}", conn.process().expect("spawned").pid()));
            let native = EchoSession { conn: Some(conn), events, hooks, activity: Arc::default(), id, turns: 0 };
            Ok(Box::new(native) as Box<dyn NativeSession>)
        })
    }
}

struct EchoSession {
    conn: Option<AgentConnection>,
    events: PeerEvents,
    hooks: SessionHooks,
    activity: Arc<TurnActivity>,
    id: String,
    turns: u32,
}

impl NativeSession for EchoSession {
    fn run_turn<'a>(&'a mut self, turn: TurnRequest<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let TurnRequest { input, sink, cancel } = turn;
            self.turns += 1;
            let peer = self.conn.as_ref().expect("open").peer().clone();
            let params = json!({"method": "echo/said", "params": {"text": input.text}, "count": 1});
            tokio::spawn(async move { peer.request("fake/notify", Some(&params)).await });
            let driver = TurnDriver::new(self.hooks.observer.clone(), self.activity.clone(), sink);
            let limits =
                TurnLimits { idle: Duration::from_secs(30), interrupt_grace: Duration::from_secs(2), backend: "echo" };
            // Unique across processes too, or a resumed session's turn would reuse the transcript keys.
            let pid = self.conn.as_ref().expect("open").process().expect("spawned").pid();
            let turn_id = format!("{}-{pid}-turn-{}", self.id, self.turns);
            let mut turn = EchoTurn { events: &mut self.events, turn_id, complete: false };
            Ok(driver.run(&mut turn, limits, cancel).await.finish(Some(self.id.clone())))
        })
    }

    fn native_id(&self) -> Option<String> {
        Some(self.id.clone())
    }

    fn resume_failure(&self) -> Option<String> {
        None
    }

    fn shutdown(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        let conn = self.conn.take();
        Box::pin(async move {
            if let Some(conn) = conn {
                conn.shutdown(StopPolicy::default()).await;
            }
        })
    }
}

struct EchoTurn<'a> {
    events: &'a mut PeerEvents,
    turn_id: String,
    complete: bool,
}

impl NativeTurn for EchoTurn<'_> {
    async fn next(&mut self) -> Step {
        loop {
            match self.events.recv().await {
                Some(PeerEvent::Notification(note)) if note.method == "echo/said" => {
                    let text =
                        note.params_value().and_then(|p| p["text"].as_str().map(str::to_owned)).unwrap_or_default();
                    self.complete = true;
                    return Step::Events(vec![
                        Event::TurnStarted { turn_id: self.turn_id.clone() },
                        Event::AssistantFinal { item_id: format!("{}-said", self.turn_id), text },
                        Event::TurnTerminal(TurnTerminal { kind: TerminalKind::Ok, message: None, cause: None }),
                    ]);
                }
                Some(PeerEvent::Closed(gone)) => {
                    return Step::Ended(
                        self.abandon(TerminalKind::Failed, format!("the echo agent went away: {gone}")),
                    );
                }
                None => return Step::Ended(self.abandon(TerminalKind::Failed, "closed".into())),
                Some(_) => {}
            }
        }
    }

    fn has_queued(&self) -> bool {
        !self.events.is_empty()
    }

    async fn interrupt(&mut self) -> Result<bool, String> {
        Ok(true)
    }

    fn abandon(&mut self, kind: TerminalKind, message: String) -> Vec<Event> {
        self.complete = true;
        vec![Event::TurnTerminal(TurnTerminal { kind, message: Some(message), cause: None })]
    }

    fn is_complete(&self) -> bool {
        self.complete
    }
}

/// The product's registry plus the echo backend: one registry line, as for a shipped backend.
fn registry() -> Registry {
    clawbridge::demo::registry().with(Arc::new(EchoBackend::new()))
}

#[tokio::test]
async fn a_throwaway_backend_runs_an_attempt_through_serve() {
    let state = tempfile::tempdir().unwrap();
    let (host_side, bridge_side) = tokio::io::duplex(1 << 20);
    let (bridge_in, bridge_out) = tokio::io::split(bridge_side);
    let state_dir = state.path().to_path_buf();
    let server =
        tokio::spawn(async move { clawbridge::serve::serve_on(bridge_in, bridge_out, &state_dir, registry()).await });

    let (host_in, host_out) = tokio::io::split(host_side);
    let (host, mut events) =
        RpcPeer::start(host_in, host_out, PeerConfig::default(), Arc::new(RejectAll), Arc::new(NoProcess));
    let streamed = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            match event {
                PeerEvent::Notification(note) if note.method == "attempt/event" => {
                    seen.push(note.params_value().unwrap_or_default());
                }
                PeerEvent::Closed(_) => break,
                _ => {}
            }
        }
        seen
    });

    let init = json!({
        "protocolVersion": clawbridge_protocol::host::PROTOCOL_VERSION,
        "host": {"name": "test-host", "version": "0"},
        "capabilities": {"hostTools": false, "approvals": false, "toolTerminals": false, "transcriptAppend": false, "userInput": false}
    });
    let answer = host.request("initialize", Some(&init)).await.expect("initialize");
    let harnesses: Vec<&str> =
        answer["harnesses"].as_array().unwrap().iter().filter_map(|h| h["id"].as_str()).collect();
    assert!(harnesses.contains(&"test-echo") && harnesses.contains(&"clawbridge-codex"), "{harnesses:?}");

    let run = json!({
        "attemptId": "a-1", "harnessId": "test-echo", "sessionId": "s-1",
        "prompt": "hello through the seam", "workspaceDir": state.path().display().to_string(),
    });
    let result = host.request("attempt/run", Some(&run)).await.expect("attempt/run answers");
    assert_eq!(result["terminal"]["kind"], "ok", "{result}");
    assert_eq!(result["assistantTexts"], json!(["hello through the seam"]), "{result}");
    let native = result["nativeSessionId"].as_str().expect("a native session id").to_string();

    // The session is bound: the next attempt resumes the same echo session.
    let again = json!({
        "attemptId": "a-2", "harnessId": "test-echo", "sessionId": "s-1",
        "prompt": "again", "workspaceDir": state.path().display().to_string(),
    });
    let second = host.request("attempt/run", Some(&again)).await.expect("attempt/run answers");
    assert_eq!(second["nativeSessionId"], Value::String(native), "{second}");

    host.request("shutdown", Some(&json!({}))).await.expect("shutdown");
    host.close();
    tokio::time::timeout(Duration::from_secs(30), server).await.expect("serve ends").unwrap().expect("serve ok");
    let seen = streamed.await.unwrap();
    let kinds: Vec<&str> =
        seen.iter().filter(|e| e["attemptId"] == "a-1").filter_map(|e| e["event"]["type"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"turnStarted"), "{seen:?}");
    assert_eq!(kinds.last(), Some(&"turnTerminal"), "{seen:?}");
}

#[tokio::test]
async fn a_throwaway_backend_runs_a_turn_through_run_and_the_next_run_resumes_it() {
    let state = tempfile::tempdir().unwrap();
    let args = |prompt: &str| RunArgs {
        backend: "echo".into(),
        session: Some("echo-session".into()),
        json: true,
        approval: None,
        program: None,
        model: None,
        prompt: prompt.into(),
        turn_idle_timeout: None,
    };
    let registry = registry();
    clawbridge::run::run(args("hello from run"), state.path(), &registry).await.expect("the run succeeds");
    let session = state.path().join("sessions/echo-session");
    let transcript = std::fs::read_to_string(session.join("transcript.jsonl")).unwrap();
    assert!(transcript.contains("hello from run"), "{transcript}");
    let binding_file = clawbridge_bridge::binding::sidecar_path(&session.join("transcript.jsonl"));
    let first: Value = serde_json::from_str(&std::fs::read_to_string(&binding_file).unwrap()).unwrap();

    clawbridge::run::run(args("and again"), state.path(), &registry).await.expect("the second run succeeds");
    let second: Value = serde_json::from_str(&std::fs::read_to_string(&binding_file).unwrap()).unwrap();
    assert_eq!(first["nativeSessionId"], second["nativeSessionId"], "the second run resumed the echo session");
    let transcript = std::fs::read_to_string(session.join("transcript.jsonl")).unwrap();
    assert!(transcript.contains("and again"), "{transcript}");
}

#[tokio::test]
async fn an_unreadable_binding_starts_the_session_afresh_instead_of_failing_the_run() {
    let state = tempfile::tempdir().unwrap();
    let session = state.path().join("sessions/damaged");
    std::fs::create_dir_all(&session).unwrap();
    let binding_file = clawbridge_bridge::binding::sidecar_path(&session.join("transcript.jsonl"));
    std::fs::write(&binding_file, b"{\"version\":1,").unwrap();
    let args = RunArgs {
        backend: "echo".into(),
        session: Some("damaged".into()),
        json: true,
        approval: None,
        program: None,
        model: None,
        prompt: "after the damage".into(),
        turn_idle_timeout: None,
    };
    clawbridge::run::run(args, state.path(), &registry()).await.expect("the run starts fresh");
    let rebound: Value = serde_json::from_str(&std::fs::read_to_string(&binding_file).unwrap()).unwrap();
    assert!(rebound["nativeSessionId"].as_str().is_some_and(|id| id.starts_with("echo-")), "{rebound}");
}
