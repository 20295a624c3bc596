//! Every recorded ACP fixture (`fixtures/recordings/acp/`, the scripted fake ACP agent recorded
//! through the record proxy), replayed through the real `AcpSession` with the replay agent standing
//! in for the agent: the transcript it mirrors, the tool terminals it reports (each call exactly
//! once) and the attempt result must match `fixtures/golden/acp/<scenario>.json`
//! (`CLAWBRIDGE_UPDATE_GOLDEN=1` rewrites them). The turn id carries the wall clock, so it is
//! normalised to `<turn>` in the documents.
//!
//! The real agents' fixtures (`fixtures/recordings/acp/<agent>/`, codex-acp and claude-agent-acp
//! recorded through the bridge) replay the same way against `fixtures/golden/acp/<agent>/`; what the
//! client does in each comes from `clawbridge_fixtures::peers::acp::scenarios`. Two fault rows run
//! on real codex-acp traffic: garbage lines between updates, and an agent silent mid-answer.

use clawbridge_adapters::acp::{AcpConfig, AcpSession};
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
use clawbridge_bridge::backend::TurnInput;
use clawbridge_bridge::events::Event;
use clawbridge_fixtures::golden::{self, GoldenTranscript};
use clawbridge_fixtures::hooks::RecordingObserver;
use clawbridge_fixtures::peers::acp::{AcpAgent, scenarios};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The prompt every ACP fixture was recorded with.
const PROMPT: &str = "Write hi to note.txt";

async fn replay(fixture: &Path, scenario: &str) -> Value {
    let decision =
        if scenario.contains("denied") { ApprovalDecision::Deny { message: None } } else { ApprovalDecision::Allow };
    let cwd = tempfile::tempdir().unwrap();
    let config = AcpConfig::new(
        clawbridge_fixtures::fixture_bin("replay-agent"),
        vec![fixture.display().to_string()],
        cwd.path().to_path_buf(),
    );
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let mut session = AcpSession::connect(config, hooks, true).await.expect("the recorded agent passes the gate");
    let ready = session.new_session().await.expect("session/new is recorded");
    let mut transcript = GoldenTranscript::new(PROMPT);
    let mut turn_id = String::new();
    let result = session
        .run_turn(
            &ready.session_id,
            &TurnInput::text(PROMPT),
            &mut |event: &Event| {
                if let Event::TurnStarted { turn_id: id } = event {
                    turn_id.clone_from(id);
                }
                transcript.on_event(event);
            },
            &CancellationToken::new(),
        )
        .await;
    let reports = observed.reports();
    let mut ids: Vec<&str> = reports.iter().map(|r| r.tool_call_id.as_str()).collect();
    let all = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all, "{scenario}: each tool call reported once: {reports:?}");
    let outcome = session.shutdown().await.expect("the agent was running");
    assert_eq!(
        outcome.exit.map(clawbridge_bridge::exit::ExitState::success),
        Some(true),
        "{scenario}: the replay agent saw the recorded lines"
    );
    let document = golden::document(&transcript, reports, result);
    assert!(!turn_id.is_empty(), "{scenario}: the turn started");
    serde_json::from_str(&document.to_string().replace(&turn_id, "<turn>")).unwrap()
}

#[tokio::test]
async fn every_acp_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let mut documents = Vec::new();
    for fixture in golden::recorded_fixtures("acp") {
        let scenario = golden::scenario_of(&fixture);
        documents.push((scenario.clone(), replay(&fixture, &scenario).await));
    }
    assert!(documents.len() >= 2, "the allowed and denied recordings are checked in");
    let failures = golden::check("acp", &documents);
    assert!(failures.is_empty(), "{failures:#?}");
}

// ---------------------------------------------------------------------------------------------
// The real agents' recordings
// ---------------------------------------------------------------------------------------------

/// The folder of `agent`'s fixtures and goldens, below `recordings/` and `golden/`.
fn folder(agent: AcpAgent) -> String {
    format!("acp/{}", agent.name())
}

/// Replays `agent`'s `scenario`; returns the golden document.
async fn replay_real(agent: AcpAgent, scenario: &str) -> Value {
    let (_, _, prompt, approve) = scenarios(agent)
        .into_iter()
        .find(|(name, ..)| *name == scenario)
        .unwrap_or_else(|| panic!("{scenario} is not a scenario of peers::acp::scenarios()"));
    let fixture =
        clawbridge_fixtures::peers::record::recordings_dir().join(folder(agent)).join(format!("{scenario}.jsonl"));
    let decision = if approve { ApprovalDecision::Allow } else { ApprovalDecision::Deny { message: None } };
    let observed = Arc::new(RecordingObserver::default());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(decision)),
        tools: Arc::new(NoHostTools),
        observer: observed.clone(),
    };
    let cwd = tempfile::tempdir().unwrap();
    let mut config = AcpConfig::new(
        clawbridge_fixtures::fixture_bin("replay-agent"),
        vec![fixture.display().to_string()],
        cwd.path().into(),
    );
    config.stop.after_stdin_close = Duration::from_secs(2);
    let mut session = AcpSession::connect(config, hooks, true)
        .await
        .unwrap_or_else(|e| panic!("{scenario}: the handshake replays: {e}"));
    let ready = session.new_session().await.unwrap_or_else(|e| panic!("{scenario}: session/new replays: {e}"));
    let mut transcript = GoldenTranscript::new(prompt);
    let mut turn_ids = Vec::new();
    let result = session
        .run_turn(
            &ready.session_id,
            &TurnInput::text(prompt),
            &mut |event: &Event| {
                if let Event::TurnStarted { turn_id } = event {
                    turn_ids.push(turn_id.clone());
                }
                transcript.on_event(event);
            },
            &CancellationToken::new(),
        )
        .await;
    let outcome = session.shutdown().await.expect("the replay agent was running");
    // The replay agent ignores stdin EOF as codex-acp does not, so the stop may need a signal; what
    // matters is that it never reported a deviation (exit status 3).
    assert!(
        !matches!(outcome.exit, Some(clawbridge_bridge::exit::ExitState::Code(3))),
        "{scenario}: the replay agent saw the recorded client lines"
    );
    let reports = observed.reports();
    let mut reported: Vec<&str> = reports.iter().map(|r| r.tool_call_id.as_str()).collect();
    reported.sort_unstable();
    let mut unique = reported.clone();
    unique.dedup();
    assert_eq!(reported, unique, "{}/{scenario}: every tool call is reported exactly once: {reports:#?}", agent.name());
    let mut document = golden::document(&transcript, reports, result);
    // The bridge names the turn itself (session id, clock and pid): the only unstable bytes.
    let mut text = document.to_string();
    for id in turn_ids {
        text = text.replace(&id, "<turn>");
    }
    document = serde_json::from_str(&text).unwrap_or(document);
    document
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_real_agent_fixture_replays_to_its_golden_transcript_and_tool_terminals() {
    let mut failures = Vec::new();
    for agent in AcpAgent::ALL {
        let fixtures = golden::recorded_fixtures(&folder(agent));
        assert_eq!(fixtures.len(), scenarios(agent).len(), "every {} scenario is recorded: {fixtures:?}", agent.name());
        let mut documents = Vec::new();
        for fixture in &fixtures {
            let scenario = golden::scenario_of(fixture);
            documents.push((scenario.clone(), replay_real(agent, &scenario).await));
        }
        failures.extend(golden::check(&folder(agent), &documents));
    }
    assert!(failures.is_empty(), "{failures:#?}\n(re-create with CLAWBRIDGE_UPDATE_GOLDEN=1 after checking the diff)");
}

/// The goldens say what the issue asks of each scenario, so a rewrite cannot quietly accept a
/// regression: the allowed call ran, the denied one never started, each has exactly one terminal.
#[test]
fn the_golden_files_hold_the_expected_tool_terminals() {
    for agent in AcpAgent::ALL {
        let golden = |scenario: &str| -> Value {
            let path = clawbridge_fixtures::peers::repo_root()
                .join("fixtures/golden")
                .join(folder(agent))
                .join(format!("{scenario}.json"));
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
                .unwrap()
        };
        let name = agent.name();
        let plain = golden("plain-text");
        assert_eq!(plain["toolTerminals"], serde_json::json!([]), "{name}: a text turn runs no tool");
        assert_eq!(plain["result"]["terminal"]["kind"], "ok", "{name}");
        let allowed = golden("tool-allowed");
        let terminals = allowed["toolTerminals"].as_array().expect("an array");
        assert_eq!(terminals.len(), 1, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["executionStarted"], true, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["outcome"], "success", "{name}: {terminals:#?}");
        let denied = golden("tool-denied");
        let terminals = denied["toolTerminals"].as_array().expect("an array");
        assert_eq!(terminals.len(), 1, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["executionStarted"], false, "{name}: {terminals:#?}");
        assert_eq!(terminals[0]["outcome"], "failure", "{name}: {terminals:#?}");
    }
}

/// A recorded turn of `agent`'s `scenario` as lines, the header first.
fn recorded_lines(agent: AcpAgent, scenario: &str) -> Vec<String> {
    let path =
        clawbridge_fixtures::peers::record::recordings_dir().join(folder(agent)).join(format!("{scenario}.jsonl"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// An `AcpSession` on the replay agent playing `lines`, with a short idle watchdog.
async fn session_on(lines: &[String], dir: &std::path::Path, observer: Arc<RecordingObserver>) -> AcpSession {
    let fixture = dir.join("edited.jsonl");
    std::fs::write(&fixture, lines.join("\n") + "\n").unwrap();
    let mut config = AcpConfig::new(
        clawbridge_fixtures::fixture_bin("replay-agent"),
        vec![fixture.display().to_string()],
        dir.into(),
    );
    config.turn_idle_timeout = Duration::from_secs(2);
    config.interrupt_grace = Duration::from_secs(1);
    config.stop.after_stdin_close = Duration::from_secs(1);
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer,
    };
    AcpSession::connect(config, hooks, true).await.expect("the handshake replays")
}

/// Fault row (real codex-acp traffic): lines that are no JSON-RPC arrive between two text chunks;
/// each is skipped and the turn completes with the whole answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_lines_between_real_updates_are_skipped_and_the_turn_completes() {
    let mut lines = recorded_lines(AcpAgent::CodexAcp, "plain-text");
    let first_chunk = lines.iter().position(|l| l.contains("agent_message_chunk")).expect("a text chunk");
    for (offset, garbage) in [
        "not json at all",
        "[1,2,3]",
        "{\\\"method\\\":\\\"session/update\\\",\\\"params\\\":",
        "{\\\"id\\\":4242,\\\"result\\\":{}}",
    ]
    .iter()
    .enumerate()
    {
        lines.insert(first_chunk + 1 + offset, format!("{{\"dir\":\"from_agent\",\"raw\":\"{garbage}\"}}"));
    }
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_on(&lines, dir.path(), Arc::default()).await;
    let ready = session.new_session().await.expect("session/new replays");
    let result = session
        .run_turn(&ready.session_id, &TurnInput::text("Say hello."), &mut |_: &Event| {}, &CancellationToken::new())
        .await;
    assert_eq!(result.terminal.kind, clawbridge_bridge::events::TerminalKind::Ok, "{:?}", result.terminal);
    assert!(result.assistant_texts.concat().ends_with("Hello from the mock model."), "{:?}", result.assistant_texts);
    session.shutdown().await;
}

/// Fault row (real codex-acp traffic): the agent goes silent in the middle of its answer, no tool
/// running. The idle watchdog ends the turn as a timeout, keeps what was streamed, and the agent
/// is gone after the stop. (While a tool runs the turn is not idle, for every backend: a command may
/// run silently for long; the host's own timeout or cancel bounds it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_silent_mid_answer_ends_the_turn_as_a_timeout() {
    let lines = recorded_lines(AcpAgent::CodexAcp, "plain-text");
    let chunks: Vec<usize> =
        lines.iter().enumerate().filter(|(_, l)| l.contains("agent_message_chunk")).map(|(i, _)| i).collect();
    assert!(chunks.len() >= 3, "a streamed answer: {chunks:?}");
    let dir = tempfile::tempdir().unwrap();
    let mut session = session_on(&lines[..=chunks[2]], dir.path(), Arc::default()).await;
    let pid = session.pid().expect("the agent runs") as i32;
    let ready = session.new_session().await.expect("session/new replays");
    let mut streamed = String::new();
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        session.run_turn(
            &ready.session_id,
            &TurnInput::text("Say hello."),
            &mut |event: &Event| {
                if let Event::AssistantDelta { delta, .. } = event {
                    streamed.push_str(delta);
                }
            },
            &CancellationToken::new(),
        ),
    )
    .await
    .expect("the watchdog ends the turn");
    assert_eq!(result.terminal.kind, clawbridge_bridge::events::TerminalKind::Timeout, "{:?}", result.terminal);
    let recorded: String = lines[..=chunks[2]]
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|entry| entry["json"]["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|entry| entry["json"]["params"]["update"]["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(streamed, recorded, "what arrived before the silence was streamed");
    session.shutdown().await;
    assert!(!clawbridge_bridge::supervisor::group_alive(pid), "the agent is gone");
}

/// Conformance guard: every `session/update` the real agents sent decodes into a known variant (or
/// an unknown kind, which the spec allows), never into a decode failure of a kind the protocol
/// crate types; and every `session/request_permission` decodes into its typed params. A peer
/// upgrade that changes a shape fails here, before a turn quietly loses the update.
#[test]
fn every_update_and_permission_request_in_the_real_recordings_decodes() {
    use clawbridge_protocol::acp::{RequestPermissionParams, SessionNotification, SessionUpdate, methods};
    let mut checked = 0;
    for agent in AcpAgent::ALL {
        for (scenario, ..) in scenarios(agent) {
            for line in recorded_lines(agent, scenario).iter().skip(1) {
                let line: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{scenario}: {e}: {line}"));
                if line["dir"] != "from_agent" {
                    continue;
                }
                let message = &line["json"];
                match message["method"].as_str() {
                    Some(methods::SESSION_UPDATE) => {
                        let note = SessionNotification::decode(Some(message["params"].clone()));
                        if let SessionUpdate::Unknown { kind, decode_error: Some(error), .. } = note.update {
                            panic!("{}/{scenario}: a `{kind}` update does not decode: {error}", agent.name());
                        }
                        checked += 1;
                    }
                    Some(methods::REQUEST_PERMISSION) => {
                        serde_json::from_value::<RequestPermissionParams>(message["params"].clone())
                            .unwrap_or_else(|e| panic!("{}/{scenario}: a permission request: {e}", agent.name()));
                        checked += 1;
                    }
                    _ => {}
                }
            }
        }
    }
    assert!(checked > 10, "the recordings hold updates: {checked}");
}
