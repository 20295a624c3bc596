//! The `clawbridge-claude` harness: attempts on the Claude Code CLI (`adapters/src/claude`).
//!
//! - **Probe** ([`probe`]): `CLAWBRIDGE_CLAUDE_BIN` or `claude` on `PATH`, whose `--version` must pass
//!   the Claude version gate; otherwise the harness is listed as unavailable with the reason.
//! - **Attempt** ([`run_started`]): a `ClaudeSession` whose approvals, host tools (served to the CLI
//!   as the SDK MCP server `openclaw`) and tool terminals go to the host, one turn streamed and
//!   mirrored like a Codex attempt.
//! - **Warm processes**: after its turn the session's CLI stays parked in a pool (at most
//!   [`PoolConfig::default`]'s 8, least recently used stopped first, idle ones stopped after 10
//!   minutes), so the session's next attempt pays no start-up. It is reused only while the host's
//!   binding still names its Claude session (a `session/reset` drops the binding) and the settings
//!   it started under (cwd, model, system prompt, host tools, auth profile) are unchanged.
//!   Otherwise a new CLI starts, continuing the bound session with `--resume`, which the session
//!   only tries while the CLI's own session file exists (else it starts fresh and the log says why,
//!   lessons H2). [`shutdown`] stops every parked CLI when `serve` ends.
//! - The CLI keeps the environment it needs from the bridge's (`ClaudeConfig::inherit_cli_environment`):
//!   its endpoint, config dir and switches; credentials reach it only through its environment.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clawbridge_adapters::claude::ClaudeError;
use clawbridge_adapters::claude::pool::{PoolConfig, SessionPool, WarmSession};
use clawbridge_adapters::claude::{ClaudeConfig, SessionHooks};
use clawbridge_bridge::attempt::hooks::HostToolSpec;
use clawbridge_bridge::events::{Event, TerminalKind};
use clawbridge_bridge::transcript::ModelLabel;
use clawbridge_protocol::claude::VersionPolicy;
use clawbridge_protocol::host::{BackendInfo, HarnessInfo};
use clawbridge_protocol::jsonrpc::ErrorObject;

use super::attempt::{self, AttemptJob, AttemptOutcome, Streaming};
use super::harness::{BackendKind, Harness};
use super::probe::{VersionProbe, find_program};

/// The harness id of the Claude Code backend.
pub const CLAUDE_HARNESS: &str = "clawbridge-claude";

/// The warm CLIs of this `serve` process, by host session id.
static POOL: OnceLock<Arc<SessionPool>> = OnceLock::new();

fn pool() -> &'static Arc<SessionPool> {
    POOL.get_or_init(|| SessionPool::new(PoolConfig::default()))
}

/// Stops every parked CLI and waits for them (when `serve` ends).
pub async fn shutdown() {
    if let Some(pool) = POOL.get() {
        pool.shutdown().await;
    }
}

/// Probes the CLI (`CLAWBRIDGE_CLAUDE_BIN` or `PATH`) and describes the harness and its backend.
pub async fn probe(versions: &VersionProbe) -> (Harness, BackendInfo) {
    let requested = std::env::var_os("CLAWBRIDGE_CLAUDE_BIN").map(PathBuf::from);
    let name = requested.clone().unwrap_or_else(|| PathBuf::from("claude"));
    let (program, version, problem) = match find_program(&name) {
        Some(program) => {
            let (version, problem) = check_version(&program, versions).await;
            (program, version, problem)
        }
        None => {
            let problem = match requested {
                Some(path) => format!("CLAWBRIDGE_CLAUDE_BIN={} is not an executable file", path.display()),
                None => "claude not found on PATH".into(),
            };
            (name, None, Some(problem))
        }
    };
    let available = problem.is_none();
    let backend = BackendInfo { id: "claude".into(), available, version, detail: problem.clone() };
    let harness = Harness {
        info: HarnessInfo {
            id: CLAUDE_HARNESS.into(),
            label: "Claude Code (clawbridge)".into(),
            backend: "claude".into(),
            available,
            unavailable_reason: problem,
            provider_ids: Vec::new(),
        },
        backend: BackendKind::Claude,
        program,
    };
    (harness, backend)
}

/// `program --version` judged by the Claude version gate: the version read, and why the CLI is
/// unusable (if it is).
async fn check_version(program: &std::path::Path, versions: &VersionProbe) -> (Option<String>, Option<String>) {
    let text = match versions.version_output(program, &["CLAUDECODE"], Duration::from_secs(15)).await {
        Ok(text) => text,
        Err(problem) => return (None, Some(problem)),
    };
    match VersionPolicy::default().check_cli_output((!text.is_empty()).then_some(text.as_str())) {
        Ok(verdict) => (Some(verdict.found().to_string()), None),
        Err(rejected) => (None, Some(rejected.to_string())),
    }
}

/// How the attempt's CLI is launched (cwd, model, the host's extra system prompt, the environment),
/// and the auth profile it uses.
fn config(job: &AttemptJob) -> (ClaudeConfig, String) {
    let params = &job.params;
    let mut config = ClaudeConfig::new(job.harness.program.clone());
    let cwd = params.cwd.clone().unwrap_or_else(|| params.workspace_dir.clone());
    if !cwd.is_empty() && std::path::Path::new(&cwd).is_dir() {
        config.cwd = Some(PathBuf::from(&cwd));
    }
    config.model = (!params.model_id.is_empty()).then(|| params.model_id.clone());
    config.append_system_prompt = params.extra_system_prompt.clone().filter(|p| !p.is_empty());
    let auth_profile = config.inherit_cli_environment();
    config.approval_timeout = super::hooks::APPROVAL_TIMEOUT;
    config.tool_timeout = super::hooks::TOOL_TIMEOUT;
    config.interrupt_grace = Duration::from_secs(5);
    config.registry = job.registry.clone();
    config.resume = job.previous_thread.clone();
    (config, auth_profile)
}

/// The session's parked CLI when it may run this attempt (same bound Claude session, same
/// settings), else a new one.
async fn lease(job: &AttemptJob, hooks: SessionHooks, specs: &[HostToolSpec]) -> Result<WarmSession, ClaudeError> {
    let (config, auth_profile) = config(job);
    let fingerprints = config.fingerprints(specs, &auth_profile);
    let key = &job.params.session_id;
    if let Some(mut warm) = pool().take(key, &fingerprints) {
        if warm.session().session_id() == job.previous_thread.as_deref() && job.previous_thread.is_some() {
            warm.set_hooks(hooks);
            return Ok(warm);
        }
        tracing::info!(session = %key, "the session is no longer bound to the warm CLI's Claude session; starting another");
        tokio::spawn(warm.shutdown());
    }
    WarmSession::connect(config, hooks, fingerprints).await
}

/// Runs one attempt on the session's warm CLI, or a new one (continuing the session's Claude
/// session when bound), and parks the CLI for the next attempt. `Err` only when the CLI could not
/// start (a preflight failure).
pub async fn run_started(job: &AttemptJob, timed_out: &AtomicBool) -> Result<AttemptOutcome, ErrorObject> {
    let params = &job.params;
    let attempt_id = params.attempt_id.clone();
    let specs = attempt::host_tool_specs(job);
    let (approver, tools, observer) = attempt::host_hooks(job, specs.clone());
    let hooks = SessionHooks { approver, tools, observer };
    let mut warm = match lease(job, hooks, &specs).await {
        Ok(warm) => warm,
        Err(error) => {
            return Err(attempt::preflight(
                format!("claude could not start: {error}"),
                format!("{} could not start: {error}", job.harness.info.label),
            ));
        }
    };
    let session = warm.session();
    if let Some(why) = session.resume_failure() {
        tracing::warn!(attempt = %attempt_id, %why, "not resuming the session's Claude session; started a new one");
    }
    if job.cancel.is_cancelled() {
        pool().park(&params.session_id, warm);
        return Ok(attempt::not_run(&attempt_id, TerminalKind::Aborted, "cancelled before the turn started"));
    }

    let label = ModelLabel {
        api: params.model_api.clone().unwrap_or_else(|| "claude-code-cli".into()),
        provider: params.provider.clone(),
        model: params.model_id.clone(),
    };
    let streaming = Streaming::start(job, label);
    let turn = {
        let mut sink = |event: &Event| streaming.push(event);
        session.run_turn(&params.prompt, &mut sink, &job.cancel).await
    };
    let native = session.session_id().map(str::to_owned);
    let result = match turn {
        Ok(result) => result,
        Err(error) => attempt::failed_result(native.as_deref(), format!("the turn could not run: {error}")),
    };
    let mirrored = streaming.finish(&result).await;
    // Kept warm for the session's next attempt; a process the turn had to stop is respawned
    // (with `--resume`) by that attempt.
    pool().park(&params.session_id, warm);
    Ok(attempt::outcome(job, timed_out, result, mirrored, native))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_or_old_cli_makes_the_harness_unavailable_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("claude");
        std::fs::write(&old, "#!/bin/sh\necho '2.0.1 (Claude Code)'\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
        let versions = VersionProbe::open(None);
        let (version, problem) = check_version(&old, &versions).await;
        assert_eq!(version, None);
        assert!(problem.as_deref().is_some_and(|p| p.contains("2.0.1") && p.contains("2.1.328")), "{problem:?}");

        std::fs::write(&old, "#!/bin/sh\necho '2.1.328 (Claude Code)'\n").unwrap();
        assert_eq!(check_version(&old, &versions).await, (Some("2.1.328".into()), None));
    }
}
