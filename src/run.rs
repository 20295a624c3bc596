//! `clawbridge run`: one turn on a backend, shown as a person would want it — streamed text, a line
//! per tool, approvals at the terminal (or by flag), a summary — or as normalized-event JSONL.
//! The transcript and the session binding are kept under the state directory, so running again
//! with the same `--session` resumes the native thread (Codex) or session (Claude Code).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use clawbridge_adapters::claude::{ClaudeConfig, ClaudeSession};
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
    /// `demo`, `codex` or `claude`.
    pub backend: String,
    /// Session name; `None` runs a one-off session.
    pub session: Option<String>,
    /// Print normalized events as JSONL.
    pub json: bool,
    /// Fixed approval answer; `None` asks at the terminal (or denies when there is none).
    pub approval: Option<ApprovalDecision>,
    /// The codex executable (for `--backend codex`).
    pub codex: Option<PathBuf>,
    /// The claude executable (for `--backend claude`).
    pub claude: Option<PathBuf>,
    /// The model (for the binding's fingerprint and the native session).
    pub model: Option<String>,
    /// The prompt.
    pub prompt: String,
}

/// Where a run keeps its session, and what every backend shares.
struct Place {
    /// The working directory the agent runs in.
    cwd: PathBuf,
    /// The pid registry the agent is recorded in (reaped of crashed runs' agents first).
    registry: PidRegistry,
    /// The session's name.
    session_name: String,
    /// `sessions/<name>/transcript.jsonl`.
    transcript_path: PathBuf,
    /// The binding sidecar beside it.
    binding_path: PathBuf,
    /// The transcript itself.
    transcript: JsonlSink,
}

pub async fn run(args: RunArgs, state_dir: &Path) -> anyhow::Result<()> {
    if !matches!(args.backend.as_str(), "demo" | "codex" | "claude") {
        bail!("`run --backend {}` is not available yet (known: demo, codex, claude)", args.backend);
    }
    let cwd = std::env::current_dir().context("no current directory")?;
    // Record the agent so a later run (or `clawbridge reap`) can stop it should this one crash, and
    // reap what crashed runs left behind before starting another.
    let registry = PidRegistry::open(state_dir.join("pids")).context("opening the pid registry")?;
    for orphan in registry.reap_orphans(std::time::Duration::from_secs(2)).await.context("reaping orphans")? {
        eprintln!("clawbridge: stopped process group {} left behind by a crashed run", orphan.pgid);
    }
    let session_name = args.session.clone().unwrap_or_else(|| format!("run-{}", std::process::id()));
    let session_dir = state_dir.join("sessions").join(&session_name);
    std::fs::create_dir_all(&session_dir).with_context(|| format!("creating {}", session_dir.display()))?;
    let transcript_path = session_dir.join("transcript.jsonl");
    let binding_path = sidecar_path(&transcript_path);
    let transcript = JsonlSink::open(&transcript_path, &SessionHeader::new(&session_name, cwd.display().to_string()))
        .with_context(|| format!("opening the transcript {}", transcript_path.display()))?;
    let place = Place { cwd, registry, session_name, transcript_path, binding_path, transcript };
    match args.backend.as_str() {
        "claude" => run_claude(&args, place).await,
        _ => run_codex(&args, place).await,
    }
}

/// The approver a run uses: the fixed answer, else the terminal, else deny (nobody to ask).
fn approver(approval: Option<&ApprovalDecision>) -> Arc<dyn Approver> {
    match approval {
        Some(decision) => Arc::new(FixedApprover(decision.clone())),
        None if std::io::stdin().is_terminal() => Arc::new(TerminalApprover),
        None => Arc::new(FixedApprover(ApprovalDecision::Deny {
            message: Some("no terminal to ask and neither --approve nor --deny was given".into()),
        })),
    }
}

/// One turn on the Codex app-server (or the demo's recording of one).
async fn run_codex(args: &RunArgs, place: Place) -> anyhow::Result<()> {
    let mut config = match args.backend.as_str() {
        "demo" => demo_config()?,
        _ => {
            let mut config = CodexConfig::new(args.codex.clone().unwrap_or_else(|| PathBuf::from("codex")));
            // The user's CODEX_HOME (config, provider, threads) carries over; it is not inherited otherwise.
            config.codex_home = std::env::var_os("CODEX_HOME").map(PathBuf::from);
            config
        }
    };
    config.cwd = Some(place.cwd.clone());
    config.registry = Some(place.registry.clone());
    let cwd_text = place.cwd.display().to_string();

    let approval = if args.backend == "demo" {
        // The recording answered its one approval with "accept"; nothing runs on this machine.
        eprintln!(
            "clawbridge: demo backend: playing a bundled codex 0.169.0 recording; its approval is granted as recorded"
        );
        Some(ApprovalDecision::Allow)
    } else {
        args.approval.clone()
    };
    let hooks = SessionHooks {
        approver: approver(approval.as_ref()),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let mut session = CodexSession::connect(config, hooks).await.context("starting the codex app-server")?;

    let model = args.model.clone().unwrap_or_default();
    let fingerprints = Fingerprints::new(&args.backend, &cwd_text, &model);
    let options = ThreadOptions { cwd: Some(cwd_text.clone()), model: args.model.clone(), ..ThreadOptions::default() };
    // The demo's recording holds one fresh thread, so a demo session never resumes.
    let resumable = args.backend != "demo";
    let previous =
        if resumable { Binding::load(&place.binding_path).context("reading the session binding")? } else { None };
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
    let mut turn = Turn::new(args, &place, label);
    let cancel = CancellationToken::new();
    let ctrl_c = interrupt_on_ctrl_c(&cancel);
    let result = session.run_turn(&thread.thread_id, &args.prompt, &mut |e: &Event| turn.on_event(e), &cancel).await;
    ctrl_c.abort();
    let stop = session.shutdown().await;
    tracing::debug!(?stop, "codex app-server stopped");
    let result = result.context("running the turn")?;
    turn.finish(&place)?;
    if resumable {
        Binding::new(&thread.thread_id, &fingerprints)
            .save(&place.binding_path)
            .context("saving the session binding")?;
    }
    View::new(args.json).summary(&result, &place, "thread");
    ended(&result)
}

/// One turn on the Claude Code CLI. The binding resumes the Claude session when its fingerprints
/// still hold and the CLI's own session file is still there; otherwise it says why and starts fresh.
async fn run_claude(args: &RunArgs, place: Place) -> anyhow::Result<()> {
    let program = args.claude.clone().unwrap_or_else(|| PathBuf::from("claude"));
    let mut config = ClaudeConfig::new(program);
    config.cwd = Some(place.cwd.clone());
    config.registry = Some(place.registry.clone());
    config.model = args.model.clone();
    // The CLI's own settings (endpoint, config dir, its switches) and credentials carry over.
    let auth_profile = config.inherit_cli_environment();
    let fingerprints = config.fingerprints(&[], &auth_profile);
    if let Some(binding) = Binding::load(&place.binding_path).context("reading the session binding")? {
        match binding.check(&fingerprints) {
            Ok(()) => config.resume = Some(binding.native_session_id),
            Err(reason) => eprintln!("clawbridge: not resuming: {reason}"),
        }
    }

    let hooks = clawbridge_adapters::claude::SessionHooks {
        approver: approver(args.approval.as_ref()),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    };
    let mut session = ClaudeSession::connect(config, hooks).await.context("starting claude")?;
    if let Some(why) = session.resume_failure() {
        eprintln!("clawbridge: could not resume: {why}; started a new Claude session");
    }

    let label = ModelLabel {
        api: "claude-code-cli".into(),
        provider: args.backend.clone(),
        model: args.model.clone().unwrap_or_default(),
    };
    let mut turn = Turn::new(args, &place, label);
    let cancel = CancellationToken::new();
    let ctrl_c = interrupt_on_ctrl_c(&cancel);
    let result = session.run_turn(&args.prompt, &mut |e: &Event| turn.on_event(e), &cancel).await;
    ctrl_c.abort();
    let native = session.session_id().map(str::to_owned);
    let stop = session.shutdown().await;
    tracing::debug!(?stop, "claude stopped");
    let result = result.context("running the turn")?;
    turn.finish(&place)?;
    if let Some(native) = native {
        Binding::new(native, &fingerprints).save(&place.binding_path).context("saving the session binding")?;
    }
    View::new(args.json).summary(&result, &place, "claude session");
    ended(&result)
}

/// Ctrl-C interrupts the turn (the backend's own interrupt), instead of killing the bridge.
fn interrupt_on_ctrl_c(cancel: &CancellationToken) -> tokio::task::JoinHandle<()> {
    let cancel = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nclawbridge: interrupting the turn…");
            cancel.cancel();
        }
    })
}

/// A run succeeds only when its turn ended `ok`.
fn ended(result: &AttemptResult) -> anyhow::Result<()> {
    match result.terminal.kind {
        TerminalKind::Ok => Ok(()),
        kind => bail!("the turn ended as {kind}"),
    }
}

/// The turn's events on their way to the person (or JSONL) and to the transcript: the prompt is
/// mirrored as soon as the turn starts, then every message the mirror completes.
struct Turn<'a> {
    /// What the person sees.
    view: View,
    /// The transcript file.
    transcript: &'a JsonlSink,
    /// Keys are `<scope>:<turn id>:…`.
    scope: String,
    /// The model the assistant rows name.
    label: ModelLabel,
    /// The prompt, mirrored first.
    prompt: String,
    /// The current turn's mirror, once it started.
    mirror: Option<TranscriptMirror>,
    /// The first transcript write that failed (the turn goes on; the run fails after it).
    error: Option<anyhow::Error>,
}

impl<'a> Turn<'a> {
    fn new(args: &RunArgs, place: &'a Place, label: ModelLabel) -> Self {
        Turn {
            view: View::new(args.json),
            transcript: &place.transcript,
            scope: format!("clawbridge:{}", place.session_name),
            label,
            prompt: args.prompt.clone(),
            mirror: None,
            error: None,
        }
    }

    fn on_event(&mut self, event: &Event) {
        self.view.show(event);
        let mut messages = Vec::new();
        if let Event::TurnStarted { turn_id } = event {
            let fresh = TranscriptMirror::new(self.scope.clone(), turn_id.clone(), self.label.clone());
            messages.push(fresh.prompt(self.prompt.clone()));
            self.mirror = Some(fresh);
        }
        if let Some(mirror) = self.mirror.as_mut() {
            messages.extend(mirror.on_event(event));
        }
        if !messages.is_empty() {
            if let Err(e) = self.transcript.append_blocking(messages) {
                self.error.get_or_insert(anyhow::Error::new(e).context("writing the transcript"));
            }
        }
    }

    /// Makes the transcript durable; fails if any write failed.
    fn finish(self, place: &Place) -> anyhow::Result<()> {
        place.transcript.sync_blocking().context("syncing the transcript")?;
        match self.error {
            Some(error) => Err(error),
            None => Ok(()),
        }
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
    /// Text items shown through their deltas; the others are shown whole when final (a backend or
    /// recording without partial messages sends no deltas).
    streamed: std::collections::HashSet<String>,
}

impl View {
    fn new(json: bool) -> Self {
        Self { json, mid_line: false, streamed: Default::default() }
    }

    fn show(&mut self, event: &Event) {
        let mut out = std::io::stdout().lock();
        if self.json {
            let _ = serde_json::to_writer(&mut out, event);
            let _ = writeln!(out);
            return;
        }
        match event {
            Event::AssistantDelta { item_id, delta } => {
                self.streamed.insert(item_id.clone());
                let _ = write!(out, "{delta}");
                self.mid_line = !delta.ends_with('\n');
            }
            Event::AssistantFinal { item_id, text } if !self.streamed.contains(item_id) => {
                self.end_line(&mut out);
                let _ = write!(out, "{text}");
                self.mid_line = !text.ends_with('\n');
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

    /// The last line: how the turn ended, and where its session lives. `native` names the backend's
    /// own session kind (`thread`, `claude session`).
    fn summary(&self, result: &AttemptResult, place: &Place, native: &str) {
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
            "— {}{message} · {} tool call(s){usage} · session {} · {native} {} · transcript {}",
            result.terminal.kind,
            result.tools.len(),
            place.session_name,
            result.native_session_id.as_deref().unwrap_or("?"),
            place.transcript_path.display()
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
