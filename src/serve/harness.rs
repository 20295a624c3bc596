//! The harnesses `serve` offers, whether their backends can run here, and the pure
//! `harness/supports` rule.

use std::path::PathBuf;
use std::time::Duration;

use clawbridge_protocol::codex::version::VersionPolicy;
use clawbridge_protocol::host::{BackendInfo, HarnessInfo, SupportsParams, SupportsResponse};

use super::probe::{VersionProbe, find_program};

/// The harness id of the Codex backend.
pub const CODEX_HARNESS: &str = "clawbridge-codex";
/// The harness id of the demo backend (a bundled Codex recording played back).
pub const DEMO_HARNESS: &str = "clawbridge-demo";

/// Which native backend runs a harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// This binary re-run as `demo-agent`, playing the bundled Codex recording.
    Demo,
    /// A real `codex app-server`.
    Codex,
    /// A real Claude Code CLI (`super::claude`).
    Claude,
}

/// One harness and what runs it.
#[derive(Clone, Debug)]
pub struct Harness {
    /// What the host sees.
    pub info: HarnessInfo,
    /// The backend behind it.
    pub backend: BackendKind,
    /// The executable to launch.
    pub program: PathBuf,
}

/// Every harness and backend, probed once at start-up so `harness/supports` stays pure.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// The harnesses, in a stable order.
    pub harnesses: Vec<Harness>,
    /// The backends behind them.
    pub backends: Vec<BackendInfo>,
}

impl Catalog {
    /// Probes the backends: the demo needs this executable; Codex needs a `codex` binary
    /// (`CLAWBRIDGE_CODEX_BIN` or `PATH`) whose `--version` passes the version gate; Claude Code
    /// likewise (`CLAWBRIDGE_CLAUDE_BIN` or `claude` on `PATH`, see `super::claude::probe`).
    pub async fn probe(versions: &VersionProbe) -> Catalog {
        let mut harnesses = Vec::new();
        let mut backends = Vec::new();

        let me = std::env::current_exe();
        let (demo_ok, demo_detail) = match &me {
            Ok(path) if path.exists() => (true, None),
            Ok(path) => (false, Some(format!("{} no longer exists", path.display()))),
            Err(e) => (false, Some(format!("cannot find the clawbridge executable: {e}"))),
        };
        backends.push(BackendInfo {
            id: "demo".into(),
            available: demo_ok,
            version: Some("0.169.0".into()),
            detail: demo_detail.clone(),
        });
        harnesses.push(Harness {
            info: HarnessInfo {
                id: DEMO_HARNESS.into(),
                label: "Demo replay (clawbridge)".into(),
                backend: "demo".into(),
                available: demo_ok,
                unavailable_reason: demo_detail,
                provider_ids: Vec::new(),
            },
            backend: BackendKind::Demo,
            program: me.unwrap_or_default(),
        });

        let requested = std::env::var_os("CLAWBRIDGE_CODEX_BIN").map(PathBuf::from);
        let (codex, (claude, claude_backend)) =
            tokio::join!(probe_codex(requested, versions), super::claude::probe(versions));
        backends.push(BackendInfo {
            id: "codex".into(),
            available: codex.available,
            version: codex.version.clone(),
            detail: codex.detail.clone(),
        });
        harnesses.push(Harness {
            info: HarnessInfo {
                id: CODEX_HARNESS.into(),
                label: "Codex (clawbridge)".into(),
                backend: "codex".into(),
                available: codex.available,
                unavailable_reason: codex.detail,
                provider_ids: Vec::new(),
            },
            backend: BackendKind::Codex,
            program: codex.program,
        });

        backends.push(claude_backend);
        harnesses.push(claude);
        Catalog { harnesses, backends }
    }

    /// The host-facing list.
    pub fn infos(&self) -> Vec<HarnessInfo> {
        self.harnesses.iter().map(|h| h.info.clone()).collect()
    }

    /// The harness with `id`.
    pub fn get(&self, id: &str) -> Option<&Harness> {
        self.harnesses.iter().find(|h| h.info.id == id)
    }

    /// `harness/supports`: refuses unknown and unavailable harnesses, routes with transport
    /// overrides, and routes whose `compatibleIds` do not name the harness. Without
    /// `compatibleIds`, a route is supported only when selected explicitly (`requestedRuntime`) or
    /// when its provider is in the harness's `providerIds`: never every route.
    pub fn supports(&self, params: &SupportsParams) -> SupportsResponse {
        let refuse = |reason: String| SupportsResponse { supported: false, priority: None, reason: Some(reason) };
        let Some(harness) = self.get(&params.harness_id) else {
            return refuse(format!("no harness named {}", params.harness_id));
        };
        let id = &harness.info.id;
        if !harness.info.available {
            let why = harness.info.unavailable_reason.clone().unwrap_or_else(|| "its backend is unavailable".into());
            return refuse(format!("{id} is unavailable: {why}"));
        }
        let provider = params.model_provider.as_ref();
        if provider.and_then(|p| p.request_transport_overrides.as_deref()) == Some("present") {
            return refuse("the route sets requestTransportOverrides, which a native harness cannot honour".into());
        }
        if let Some(policy) = provider.and_then(|p| p.runtime_policy.as_ref()) {
            return if policy.compatible_ids.iter().any(|c| c == id) {
                SupportsResponse {
                    supported: true,
                    priority: Some(100),
                    reason: Some(format!("runtimePolicy.compatibleIds names {id}")),
                }
            } else {
                refuse(format!("runtimePolicy.compatibleIds does not name {id}"))
            };
        }
        if params.requested_runtime.as_deref() == Some(id.as_str()) {
            return SupportsResponse {
                supported: true,
                priority: Some(100),
                reason: Some(format!("the route asks for {id} explicitly")),
            };
        }
        if harness.info.provider_ids.iter().any(|p| p == &params.provider) {
            return SupportsResponse {
                supported: true,
                priority: Some(50),
                reason: Some(format!("provider {} is in {id}'s providerIds", params.provider)),
            };
        }
        refuse(format!("{id} runs only when selected explicitly or named by runtimePolicy.compatibleIds"))
    }
}

/// What the Codex probe found.
struct CodexProbe {
    program: PathBuf,
    available: bool,
    version: Option<String>,
    detail: Option<String>,
}

async fn probe_codex(requested: Option<PathBuf>, versions: &VersionProbe) -> CodexProbe {
    let name = requested.clone().unwrap_or_else(|| PathBuf::from("codex"));
    let Some(program) = find_program(&name) else {
        let detail = match requested {
            Some(path) => format!("CLAWBRIDGE_CODEX_BIN={} is not an executable file", path.display()),
            None => "codex not found on PATH".into(),
        };
        return CodexProbe { program: name, available: false, version: None, detail: Some(detail) };
    };
    let text = match versions.version_output(&program, &[], Duration::from_secs(10)).await {
        Ok(text) => text,
        Err(detail) => return CodexProbe { program, available: false, version: None, detail: Some(detail) },
    };
    let version = text.split_whitespace().rev().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()));
    let Some(version) = version.map(str::to_string) else {
        let detail = format!("`{} --version` printed no version: {}", program.display(), text.trim());
        return CodexProbe { program, available: false, version: None, detail: Some(detail) };
    };
    match VersionPolicy::default().check(Some(&format!("codex/{version}"))) {
        Ok(_) => CodexProbe { program, available: true, version: Some(version), detail: None },
        Err(rejected) => {
            CodexProbe { program, available: false, version: Some(version), detail: Some(rejected.to_string()) }
        }
    }
}
