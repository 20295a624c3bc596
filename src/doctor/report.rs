//! The doctor's report: the same data for a person (aligned lines, a fix under each failure) and
//! for a program (`--json`, its shape documented in docs/doctor.md and kept by `tests/doctor.rs`).

use std::fmt::Write;

use clawbridge_bridge::backend::HarnessFacts;
use clawbridge_bridge::diagnose::{Check, Verdict};
use serde::Serialize;

/// The version of the JSON shape; bumped only when a field changes meaning or goes away.
const SCHEMA: u32 = 1;

/// The whole report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: u32,
    /// True when no check failed.
    pub ok: bool,
    /// The bridge's own checks.
    pub bridge: BridgeReport,
    /// One entry per backend checked, in the registry's order.
    pub backends: Vec<BackendReport>,
}

/// The bridge's own checks: where it keeps its state and its log.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BridgeReport {
    /// The state dir.
    pub state_dir: String,
    /// The log file `serve` and `run` write.
    pub log_file: String,
    /// `state-dir`, `log-file`.
    pub checks: Vec<Check>,
}

/// One backend's checks.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackendReport {
    /// Its short name (`codex`).
    pub backend: &'static str,
    /// Its harness id (`clawbridge-codex`).
    pub harness: &'static str,
    /// What a person reads.
    pub label: &'static str,
    /// The executable found, if any.
    pub program: Option<String>,
    /// Where it was found (`on PATH`, `from CLAWBRIDGE_CODEX_BIN`, `from codex.bin (file:…)`, `from
    /// --program`, `as the backend locates it`).
    pub source: Option<String>,
    /// The version it reported, if any.
    pub version: Option<String>,
    /// `found`, `version`, then the backend's own.
    pub checks: Vec<Check>,
}

impl BackendReport {
    /// A report with no checks yet.
    pub fn new(facts: &HarnessFacts) -> Self {
        BackendReport {
            backend: facts.backend,
            harness: facts.id,
            label: facts.label,
            program: None,
            source: None,
            version: None,
            checks: Vec::new(),
        }
    }

    /// Marks the backend's own checks (`names`, as its diagnostics declare them) as not made, and
    /// why, so every report lists them.
    pub fn skip_rest(&mut self, names: &[&'static str], why: &str) {
        self.checks.extend(names.iter().map(|name| Check::skipped(name, why)));
    }
}

impl Report {
    /// The report of these checks.
    pub fn new(bridge: BridgeReport, backends: Vec<BackendReport>) -> Self {
        let mut report = Report { schema: SCHEMA, ok: true, bridge, backends };
        report.ok = report.failed() == 0;
        report
    }

    fn all_checks(&self) -> impl Iterator<Item = &Check> {
        self.bridge.checks.iter().chain(self.backends.iter().flat_map(|b| b.checks.iter()))
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.all_checks().filter(|check| check.verdict == Verdict::Fail).count()
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The lines for a person: one per check, a `fix:` line under each that has one.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "clawbridge {}", env!("CARGO_PKG_VERSION"));
        render_checks(&mut out, &self.bridge.checks);
        for backend in &self.backends {
            let _ = writeln!(out, "\n{} ({})", backend.backend, backend.label);
            render_checks(&mut out, &backend.checks);
        }
        let failed = self.failed();
        let warned = self.all_checks().filter(|check| check.verdict == Verdict::Warn).count();
        let _ = writeln!(out, "\n{failed} failed, {warned} warning(s)");
        out
    }
}

fn render_checks(out: &mut String, checks: &[Check]) {
    for check in checks {
        let verdict = match check.verdict {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
            _ => "skip",
        };
        let _ = writeln!(out, "  {:<10} {verdict:<5} {}", check.name, check.summary);
        if let Some(fix) = &check.fix {
            let _ = writeln!(out, "  {:<10} {:<5} fix: {fix}", "", "");
        }
    }
}
