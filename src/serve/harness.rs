//! The harnesses `serve` offers (one per registered backend), whether their backends can run here,
//! and the pure `harness/supports` rule.

use std::path::PathBuf;
use std::sync::Arc;

use clawbridge_bridge::backend::{Backend, Registry, locate_and_probe};
use clawbridge_bridge::probe::VersionProbe;
use clawbridge_protocol::host::{BackendInfo, HarnessInfo, HarnessInputs, SupportsParams, SupportsResponse};

/// One harness and what runs it.
#[derive(Clone)]
pub struct Harness {
    /// What the host sees.
    pub info: HarnessInfo,
    /// The backend behind it.
    pub backend: Arc<dyn Backend>,
    /// The executable its sessions run (from the probe).
    pub program: PathBuf,
}

/// The runtime artifact of a harness (`AgentHarnessRuntimeArtifactBinding`): this bridge release,
/// the harness and its backend, and the native executable and version it runs. The id is for
/// people; the fingerprint is what a verified continuation must find again, so a changed bridge,
/// native release or executable is a different artifact. It holds no secret (no auth, no env).
pub fn runtime_artifact(
    harness: &str,
    backend: &str,
    version: Option<&str>,
    program: &std::path::Path,
) -> clawbridge_protocol::host::RuntimeArtifact {
    use sha2::{Digest, Sha256};
    let bridge = env!("CARGO_PKG_VERSION");
    let version = version.unwrap_or("unknown");
    let material = serde_json::json!({
        "bridge": bridge, "harness": harness, "backend": backend, "version": version,
        "program": program.to_string_lossy(),
    });
    let digest = Sha256::digest(material.to_string().as_bytes());
    clawbridge_protocol::host::RuntimeArtifact {
        id: format!("{harness}@clawbridge-{bridge}/{backend}-{version}"),
        fingerprint: digest.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Every harness and backend, probed once at start-up so `harness/supports` stays pure.
#[derive(Clone)]
pub struct Catalog {
    /// The harnesses, in the registry's order.
    pub harnesses: Vec<Harness>,
    /// The backends behind them.
    pub backends: Vec<BackendInfo>,
}

impl Catalog {
    /// Probes every backend of `registry` at once (each finds its executable and passes its
    /// version through its gate); an unavailable one is listed with the reason.
    pub async fn probe(registry: &Registry, versions: &VersionProbe) -> Catalog {
        let probes = registry
            .iter()
            .map(|backend| async move { (backend.clone(), locate_and_probe(backend.as_ref(), None, versions).await) });
        let mut harnesses = Vec::new();
        let mut backends = Vec::new();
        for (backend, report) in futures::future::join_all(probes).await {
            let facts = backend.facts();
            backends.push(BackendInfo {
                id: facts.backend.into(),
                available: report.available,
                version: report.version.clone(),
                detail: report.detail.clone(),
            });
            let runtime_artifact = report
                .available
                .then(|| runtime_artifact(facts.id, facts.backend, report.version.as_deref(), &report.program));
            harnesses.push(Harness {
                info: HarnessInfo {
                    id: facts.id.into(),
                    label: facts.label.into(),
                    backend: facts.backend.into(),
                    available: report.available,
                    unavailable_reason: report.detail,
                    provider_ids: Vec::new(),
                    inputs: HarnessInputs {
                        images: facts.supports.images,
                        think_level: facts.supports.reasoning_level,
                        steering: facts.supports.steering,
                    },
                    runtime_artifact,
                },
                backend,
                program: report.program,
            });
        }
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
    /// overrides, and routes whose `compatibleIds` name neither the harness nor the native runtime
    /// it reproduces ([`reproduced_runtime_ids`]). Without
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
            let named = |runtime: &str| policy.compatible_ids.iter().any(|c| c == runtime);
            let reproduced = reproduced_runtime_ids(id);
            let reason = if named(id) {
                format!("runtimePolicy.compatibleIds names {id}")
            } else if let Some(native) = reproduced.iter().find(|runtime| named(runtime)) {
                format!("runtimePolicy.compatibleIds names {native}, the native runtime {id} runs")
            } else {
                let names: Vec<&str> = std::iter::once(id.as_str()).chain(reproduced.iter().copied()).collect();
                return refuse(format!("runtimePolicy.compatibleIds does not name {}", names.join(" or ")));
            };
            return SupportsResponse { supported: true, priority: Some(100), reason: Some(reason) };
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

/// The OpenClaw runtime ids whose routes harness `id` reproduces because it runs the same native
/// program: providers' route facts name the native runtime (the stock `openai` provider names
/// `codex` for the official Responses routes), never clawbridge (docs/peers/openclaw.md#route-facts).
/// Mirrors `REPRODUCED_RUNTIME_IDS` in openclaw-plugin/src/harness.js.
pub fn reproduced_runtime_ids(id: &str) -> &'static [&'static str] {
    match id {
        "clawbridge-codex" => &["codex"],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let harnesses = clawbridge_adapters::registry(clawbridge_adapters::DemoAgent {
            program: PathBuf::from("/nonexistent/demo-agent"),
            args: Vec::new(),
            recorded_version: "0.0.0",
            scripted: false,
        })
        .iter()
        .map(|backend| {
            let facts = backend.facts();
            Harness {
                info: HarnessInfo {
                    id: facts.id.into(),
                    label: facts.label.into(),
                    backend: facts.backend.into(),
                    available: true,
                    unavailable_reason: None,
                    provider_ids: Vec::new(),
                    inputs: HarnessInputs::default(),
                    runtime_artifact: None,
                },
                backend: backend.clone(),
                program: PathBuf::from(facts.backend),
            }
        })
        .collect();
        Catalog { harnesses, backends: Vec::new() }
    }

    fn route(harness: &str, compatible: &[&str]) -> SupportsParams {
        serde_json::from_value(serde_json::json!({
            "harnessId": harness, "provider": "openai", "requestedRuntime": harness,
            "modelProvider": {"requestTransportOverrides": "none", "runtimePolicy": {"compatibleIds": compatible}}
        }))
        .expect("supports params")
    }

    // The Claude backend's pool starts its reaper on the runtime it is built on.
    #[tokio::test]
    async fn the_stock_openai_route_that_names_codex_selects_clawbridge_codex_and_no_other_harness() {
        let catalog = catalog();
        let codex = catalog.supports(&route("clawbridge-codex", &["openclaw", "codex"]));
        assert!(codex.supported, "{codex:?}");
        assert!(codex.reason.as_deref().is_some_and(|r| r.contains("names codex")), "{codex:?}");
        let claude = catalog.supports(&route("clawbridge-claude", &["openclaw", "codex"]));
        assert!(!claude.supported, "{claude:?}");
        let embedded_only = catalog.supports(&route("clawbridge-codex", &["openclaw"]));
        assert!(!embedded_only.supported, "{embedded_only:?}");
        assert_eq!(
            embedded_only.reason.as_deref(),
            Some("runtimePolicy.compatibleIds does not name clawbridge-codex or codex")
        );
    }
}
