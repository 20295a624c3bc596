//! Steering a running native turn (issue #12 point 4), on the real codex 0.169.0 and claude 2.1.328
//! against the scripted mock model: while the model streams the turn's answer slowly, more user text
//! is steered in through the seam's `Steering` handle; the model is asked with it within the same
//! turn, the turn ends once, and (Claude) the next turn is not confused by the steered part's end.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawbridge_adapters::claude::steering::ClaudeSteering;
use clawbridge_adapters::claude::{ClaudeConfig, ClaudeSession, Secret};
use clawbridge_adapters::codex::{CodexConfig, CodexSession, ThreadOptions};
use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::backend::Steering;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_fixtures::mock_model::MockModel;
use clawbridge_fixtures::peers::claude::API_KEY;
use clawbridge_fixtures::peers::codex::config_toml;
use clawbridge_fixtures::peers::{Sandbox, describe_requests, peer_or_skip, start_mock};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const PROMPT: &str = "Count slowly to ten.";
const STEER: &str = "This was steered in: also say the steer word.";
const STEERED_ANSWER: &str = "Steer word.";

/// The first answer streams slowly (the steer lands while it runs); a request that holds the
/// steered text is answered with [`STEERED_ANSWER`].
fn scenario() -> Value {
    json!({
        "rules": [{"when": {"last_user_text_contains": "steered in"}, "reply": {"text": STEERED_ANSWER}}],
        "default": {"text": "one two three four five six seven eight nine ten", "delay_ms": 300}
    })
}

fn hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

/// Waits until the mock was asked `text` (the native turn reached the model).
async fn asked(mock: &MockModel, text: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !mock.model_requests().iter().any(|r| r.body.to_string().contains(text)) {
        assert!(std::time::Instant::now() < deadline, "never asked {text:?}: {}", describe_requests(&mock.requests()));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn texts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| if let Event::AssistantFinal { text, .. } = e { Some(text.clone()) } else { None })
        .collect()
}

fn terminals(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(e, Event::TurnTerminal(_))).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_a_line_steered_into_the_running_turn_continues_it() {
    let Some(claude) = peer_or_skip("claude") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&scenario()).await.unwrap();
    let mut config = ClaudeConfig::new(&claude);
    config.env = sandbox
        .env()
        .with_var("ANTHROPIC_BASE_URL", mock.base_url())
        .with_var("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    config.secret_env.push(("ANTHROPIC_API_KEY".into(), Secret::new(API_KEY)));
    config.cwd = Some(sandbox.work());
    config.turn_idle_timeout = Duration::from_secs(60);
    let mut session = ClaudeSession::connect(config, hooks()).await.expect("claude starts");
    let steering = ClaudeSteering { gate: session.steer_gate() };

    let events = Arc::new(Mutex::new(Vec::new()));
    let result = {
        let sink_events = events.clone();
        let mut sink = move |e: &Event| sink_events.lock().unwrap().push(e.clone());
        let cancel = CancellationToken::new();
        let turn = session.run_turn(PROMPT, &mut sink, &cancel);
        let steer = async {
            asked(&mock, PROMPT).await;
            steering.steer("", STEER).await
        };
        let (result, steered) = tokio::time::timeout(Duration::from_secs(120), futures::future::join(turn, steer))
            .await
            .expect("the turn ends");
        steered.expect("the running turn takes the line");
        result.expect("the turn runs")
    };
    let seen = events.lock().unwrap().clone();
    let describe = || format!("{result:?}\n{seen:#?}\nmock saw:\n{}", describe_requests(&mock.requests()));
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{}", describe());
    assert_eq!(terminals(&seen), 1, "one turn: {}", describe());
    assert!(texts(&seen).iter().any(|t| t.contains(STEERED_ANSWER)), "the steered part is this turn's: {}", describe());
    assert!(steering.steer("", "too late").await.is_err(), "a finished turn takes nothing");

    // The next turn ends with its own result, not a leftover of the steered part.
    let mut next = Vec::new();
    let second = tokio::time::timeout(
        Duration::from_secs(120),
        session.run_turn("Say hello.", &mut |e: &Event| next.push(e.clone()), &CancellationToken::new()),
    )
    .await
    .expect("the second turn ends")
    .expect("it runs");
    assert_eq!(second.terminal.kind, TerminalKind::Ok);
    assert!(texts(&next).iter().all(|t| !t.contains(STEERED_ANSWER)), "{next:#?}");
    assert!(texts(&next).iter().any(|t| t.contains("one two three")), "{next:#?}");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_input_steered_into_the_running_turn_reaches_the_model_in_that_turn() {
    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().unwrap();
    let mock = start_mock(&scenario()).await.unwrap();
    std::fs::write(sandbox.codex_home().join("config.toml"), config_toml(&mock)).unwrap();
    let mut config = CodexConfig::new(PathBuf::from(&codex));
    config.codex_home = Some(sandbox.codex_home());
    config.env = sandbox.env();
    config.cwd = Some(sandbox.work());
    config.turn_idle_timeout = Duration::from_secs(60);
    let mut session = CodexSession::connect(config, hooks()).await.expect("codex starts");
    let options = ThreadOptions { cwd: Some(sandbox.work().display().to_string()), ..ThreadOptions::default() };
    let thread = session.start_thread(&options).await.unwrap().thread_id;
    let steering = session.steering();

    let events = Arc::new(Mutex::new(Vec::new()));
    let result = {
        let sink_events = events.clone();
        let mut sink = move |e: &Event| sink_events.lock().unwrap().push(e.clone());
        let cancel = CancellationToken::new();
        let turn = session.run_turn(&thread, PROMPT, &mut sink, &cancel);
        let steer = async {
            asked(&mock, PROMPT).await;
            let turn_id = events
                .lock()
                .unwrap()
                .iter()
                .find_map(|e| if let Event::TurnStarted { turn_id } = e { Some(turn_id.clone()) } else { None })
                .expect("the turn started before the model was asked");
            steering.steer(&thread, &turn_id, STEER).await
        };
        let (result, steered) = tokio::time::timeout(Duration::from_secs(120), futures::future::join(turn, steer))
            .await
            .expect("the turn ends");
        steered.expect("codex takes the input");
        result.expect("the turn runs")
    };
    let seen = events.lock().unwrap().clone();
    let describe = || format!("{result:?}\n{seen:#?}\nmock saw:\n{}", describe_requests(&mock.requests()));
    assert_eq!(result.terminal.kind, TerminalKind::Ok, "{}", describe());
    assert_eq!(terminals(&seen), 1, "{}", describe());
    asked(&mock, STEER).await;
    assert!(texts(&seen).iter().any(|t| t.contains(STEERED_ANSWER)), "answered within the turn: {}", describe());
    session.shutdown().await;
}
