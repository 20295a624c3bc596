//! `clawbridge run`: one turn on a backend, shown as a person would want it — streamed text, a line
//! per tool, approvals at the terminal (or by flag), a summary — or as normalized-event JSONL.
//! The transcript and the session binding are kept under the state directory, so running again
//! with the same `--session` resumes the native thread.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
use clawbridge_bridge::attempt::AttemptResult;
use clawbridge_bridge::attempt::hooks::{
    ApprovalDecision, ApprovalRequest, Approver, FixedApprover, NoHostTools, NoObserver,
};
use clawbridge_bridge::binding::{Binding, Fingerprints, sidecar_path};
use clawbridge_bridge::events::{Event, TerminalKind, ToolOutcome};
use clawbridge_bridge::supervisor::PidRegistry;
use clawbridge_bridge::transcript::{JsonlSink, ModelLabel, SessionHeader, TranscriptMirror};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

/// What `run` was asked to do.
#[derive(Debug)]
pub struct RunArgs {
    /// `demo` or `codex`.
    pub backend: String,
    /// Session name; `None` runs a one-off session.
    pub session: Option<String>,
    /// Print normalized events as JSONL.
    pub json: bool,
    /// Fixed approval answer; `None` asks at the terminal (or denies when there is none).
    pub approval: Option<ApprovalDecision>,
    /// The codex executable (for `--backend codex`).
    pub codex: Option<PathBuf>,
    /// The model (for the binding's fingerprint and the thread).
    pub model: Option<String>,
    /// The prompt.
    pub prompt: String,
}

pub async fn run(args: RunArgs, state_dir: &Path) -> anyhow::Result<()> {
    let cwd = std::env::current_dir().context("no current directory")?;
    let mut config = match args.backend.as_str() {
        "demo" => demo_config()?,
        "codex" => {
            let mut config = CodexConfig::new(args.codex.clone().unwrap_or_else(|| PathBuf::from("codex")));
            // The user's CODEX_HOME (config, provider, threads) carries over; it is not inherited otherwise.
            config.codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
            config
        }
        other => bail!("`run --backend {other}` is not available yet (known: demo, codex)"),
    };
    config.cwd = Some(cwd.clone());
    // Record the app-server so a later run (or `clawbridge reap`) can stop it should this one crash,
    // and reap what crashed runs left behind before starting another.
    let registry = PidRegistry::open(state_dir.join("pids")).context("opening the pid registry")?;
    for orphan in registry.reap_orphans(std::time::Duration::from_secs(2)).await.context("reaping orphans")? {
        eprintln!("clawbridge: stopped process group {} left behind by a crashed run", orphan.pgid);
    }
    config.registry = Some(registry);

    let session_name = args.session.clone().unwrap_or_else(|| format!("run-{}", std::process::id()));
    let session_dir = state_dir.join("sessions").join(&session_name);
    std::fs::create_dir_all(&session_dir).with_context(|| format!("creating {}", session_dir.display()))?;
    let transcript_path = session_dir.join("transcript.jsonl");
    let binding_path = sidecar_path(&transcript_path);
    let cwd_text = cwd.display().to_string();
    let transcript = JsonlSink::open(&transcript_path, &SessionHeader::new(&session_name, &cwd_text))
        .with_context(|| format!("opening the transcript {}", transcript_path.display()))?;

    let approval = if args.backend == "demo" {
        // The recording answered its one approval with "accept"; nothing runs on this machine.
        eprintln!(
            "clawbridge: demo backend: playing a bundled codex 0.169.0 recording; its approval is granted as recorded"
        );
        Some(ApprovalDecision::Allow)
    } else {
        args.approval.clone()
    };
    let approver: Arc<dyn Approver> = match &approval {
        Some(decision) => Arc::new(FixedApprover(decision.clone())),
        None if std::io::stdin().is_terminal() => Arc::new(TerminalApprover),
        None => Arc::new(FixedApprover(ApprovalDecision::Deny {
            message: Some("no terminal to ask and neither --approve nor --deny was given".into()),
        })),
    };
    let hooks = SessionHooks { approver, tools: Arc::new(NoHostTools), observer: Arc::new(NoObserver) };
    let mut session = CodexSession::connect(config, hooks).await.context("starting the codex app-server")?;

    let model = args.model.clone().unwrap_or_default();
    let fingerprints = Fingerprints::new(&args.backend, &cwd_text, &model);
    let options = ThreadOptions { cwd: Some(cwd_text.clone()), model: args.model.clone(), ..ThreadOptions::default() };
    // The demo's recording holds one fresh thread, so a demo session never resumes.
    let resumable = args.backend != "demo";
    let previous = if resumable { Binding::load(&binding_path).context("reading the session binding")? } else { None };
    let thread = match previous.map(|binding| (binding.check(&fingerprints), binding)) {
        Some((Ok(()), binding)) => {
            let ready = session.resume_or_start(&binding.native_session_id, &options).await?;
            if let Some(why) = &ready.resume_failure {
                eprintln!(
                    "clawbridge: could not resume thread {}: {why}; started a new one",
                    binding.native_session_id
                );
            }
            ready
        }
        Some((Err(reason), _)) => {
            eprintln!("clawbridge: not resuming: {reason}");
            session.start_thread(&options).await?
        }
        None => session.start_thread(&options).await?,
    };

    let label = ModelLabel { api: "codex-app-server".into(), provider: args.backend.clone(), model };
    let scope = format!("clawbridge:{session_name}");
    let mut view = View::new(args.json);
    let mut mirror: Option<TranscriptMirror> = None;
    let mut mirror_error: Option<anyhow::Error> = None;
    let cancel = CancellationToken::new();
    let ctrl_c = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nclawbridge: interrupting the turn…");
                cancel.cancel();
            }
        })
    };
    let prompt = args.prompt.clone();
    let result = session
        .run_turn(
            &thread.thread_id,
            &args.prompt,
            &mut |event: &Event| {
                view.show(event);
                let mut messages = Vec::new();
                if let Event::TurnStarted { turn_id } = event {
                    let fresh = TranscriptMirror::new(scope.clone(), turn_id.clone(), label.clone());
                    messages.push(fresh.prompt(prompt.clone()));
                    mirror = Some(fresh);
                }
                if let Some(mirror) = mirror.as_mut() {
                    messages.extend(mirror.on_event(event));
                }
                if !messages.is_empty() {
                    if let Err(e) = transcript.append_blocking(messages) {
                        mirror_error.get_or_insert(anyhow::Error::new(e).context("writing the transcript"));
                    }
                }
            },
            &cancel,
        )
        .await;
    ctrl_c.abort();
    let stop = session.shutdown().await;
    tracing::debug!(?stop, "codex app-server stopped");
    let result = result.context("running the turn")?;
    transcript.sync_blocking().context("syncing the transcript")?;
    if let Some(error) = mirror_error {
        return Err(error);
    }
    if resumable {
        Binding::new(&thread.thread_id, &fingerprints).save(&binding_path).context("saving the session binding")?;
    }
    view.summary(&result, &session_name, &transcript_path);
    match result.terminal.kind {
        TerminalKind::Ok => Ok(()),
        kind => bail!("the turn ended as {kind}"),
    }
}

/// The demo: this very binary, re-run as a replay agent playing a bundled Codex recording.
fn demo_config() -> anyhow::Result<CodexConfig> {
    let me = std::env::current_exe().context("cannot find the clawbridge executable")?;
    let mut config = CodexConfig::new(me);
    config.launcher_args = vec!["demo-agent".into()];
    Ok(config)
}

/// Prints events for a person, or as JSONL.
struct View {
    json: bool,
    /// Whether the cursor is mid-line after streamed text.
    mid_line: bool,
}

impl View {
    fn new(json: bool) -> Self {
        Self { json, mid_line: false }
    }

    fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = serde_json::to_writer(&mut out, event);
            let _ = writeln!(out);
            return;
        }
        match event {
            Event::AssistantDelta { delta, .. } => {
                let _ = write!(out, "{delta}");
                self.mid_line = !delta.ends_with('\n');
            }
            Event::ToolStarted(call) => {
                self.end_line(&mut out);
                let what = call.arguments.get("command").and_then(|c| c.as_str()).unwrap_or_default();
                let _ = writeln!(out, "→ {} {what}", call.tool_name);
            }
            Event::ToolFinished(finish) => {
                self.end_line(&mut out);
                let mark = if matches!(finish.outcome, ToolOutcome::Success) { "✓" } else { "✗" };
                let exit = finish.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default();
                let _ = writeln!(out, "{mark} {} {}{exit}", finish.call.tool_name, finish.outcome.describe());
            }
            Event::TurnTerminal(_) => self.end_line(&mut out),
            _ => {}
        }
        let _ = out.flush();
    }

    fn end_line(&mut self, out: &mut impl Write) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
    }

    fn summary(&self, result: &AttemptResult, session: &str, transcript: &Path) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let line = serde_json::json!({"type": "result", "result": result});
            let _ = writeln!(out, "{line}");
            return;
        }
        let usage = result
            .usage
            .map(|u| format!(" · {} in / {} out tokens", u.input_tokens, u.output_tokens))
            .unwrap_or_default();
        let message = result.terminal.message.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
        let _ = writeln!(
            out,
            "— {}{message} · {} tool call(s){usage} · session {session} · thread {} · transcript {}",
            result.terminal.kind,
            result.tools.len(),
            result.native_session_id.as_deref().unwrap_or("?"),
            transcript.display()
        );
    }
}

/// Asks at the terminal (stderr for the question, stdin for the answer).
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn decide(&self, request: ApprovalRequest) -> BoxFuture<'static, Result<ApprovalDecision, String>> {
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let what = request.arguments.get("command").and_then(|c| c.as_str()).unwrap_or("");
                eprint!(
                    "\n{} wants to run {what}{}\nAllow? [y]es / [a]lways / [n]o / [s]top: ",
                    request.tool_name,
                    request.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                );
                let mut answer = String::new();
                std::io::stdin().lock().read_line(&mut answer).map_err(|e| e.to_string())?;
                Ok(match answer.trim().to_ascii_lowercase().as_str() {
                    "y" | "yes" => ApprovalDecision::Allow,
                    "a" | "always" => ApprovalDecision::AllowForSession,
                    "s" | "stop" => ApprovalDecision::Abort,
                    _ => ApprovalDecision::Deny { message: None },
                })
            })
            .await
            .map_err(|e| e.to_string())?
        })
    }
}
