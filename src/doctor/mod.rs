//! `clawbridge doctor`: whether each backend can run here, and if not, what to do about it. The
//! checks every backend shares (where its executable is and where that came from, its version
//! gate) run here through the seam; a backend's own (handshake, auth, model endpoint, sandbox)
//! come from its [`Backend::diagnostics`]; the bridge's own (state dir, log file) follow. The
//! report is printed for a person or as one JSON document (`--json`, docs/doctor.md); any failed
//! check makes the exit code 1.

mod bridge_checks;
mod report;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clawbridge_bridge::backend::{Backend, GateRefusal, Registry};
use clawbridge_bridge::diagnose::{Check, Diagnostics, Limits, Verdict};
use clawbridge_bridge::probe::VersionProbe;

pub use report::{BackendReport, BridgeReport, Report};

/// `clawbridge doctor`'s arguments.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Check only this backend (repeatable); every registered backend by default.
    #[arg(long = "backend", value_name = "NAME")]
    backends: Vec<String>,
    /// Print the report as one JSON document (docs/doctor.md) instead of lines for a person.
    #[arg(long)]
    json: bool,
    /// The backend's executable, instead of the one it finds itself (needs exactly one --backend).
    #[arg(long, requires = "backends")]
    program: Option<PathBuf>,
    /// How long one native process gets to start and answer its handshake, and one request to a
    /// model endpoint, in seconds.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    timeout: u64,
    /// The ACP agent's command line to check, split as a shell would (`--agent "npx -y some-agent
    /// --acp"`), over CLAWBRIDGE_ACP_AGENT and acp.agent in the config file, as `run --agent` is.
    #[arg(long, value_name = "COMMAND")]
    agent: Option<String>,
}

impl DoctorArgs {
    /// The ACP agent `--agent` names, if given (a setting like `run --agent`'s).
    pub fn agent(&self) -> Option<&String> {
        self.agent.as_ref()
    }
}

/// Why the doctor could not run, or what it found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DoctorError {
    /// `--backend` named a backend the registry does not hold.
    #[error("unknown backend {name:?} (known: {known})")]
    UnknownBackend {
        /// The name given.
        name: String,
        /// The registry's names, comma-separated.
        known: String,
    },
    /// `--program` was given with other than one `--backend`.
    #[error("--program names one backend's executable: give exactly one --backend with it")]
    ProgramNeedsOneBackend,
    /// At least one check failed (the report says which).
    #[error("{failed} check(s) failed (the report says which and how to fix each)")]
    ChecksFailed {
        /// How many.
        failed: usize,
    },
    /// The report could not be written to stdout.
    #[error("could not write the report: {0}")]
    Output(#[from] std::io::Error),
}

/// Runs the doctor over `registry`'s backends (those `args` names), printing the report.
pub async fn run(args: DoctorArgs, state_dir: &Path, registry: &Registry) -> Result<(), DoctorError> {
    let selected = select(&args, registry)?;
    let limits = Limits { handshake: Duration::from_secs(args.timeout), endpoint: Duration::from_secs(args.timeout) };
    let versions = VersionProbe::in_memory();
    let requested = args.program.as_deref();
    let backends = futures::future::join_all(
        selected.iter().map(|backend| diagnose(backend.as_ref(), requested, &versions, limits)),
    )
    .await;
    let bridge = bridge_checks::run(state_dir);
    let report = Report::new(bridge, backends);
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        if args.json {
            writeln!(stdout, "{}", report.to_json())?;
        } else {
            write!(stdout, "{}", report.render())?;
        }
        stdout.flush()?;
    }
    match report.failed() {
        0 => Ok(()),
        failed => Err(DoctorError::ChecksFailed { failed }),
    }
}

fn select<'r>(args: &DoctorArgs, registry: &'r Registry) -> Result<Vec<&'r std::sync::Arc<dyn Backend>>, DoctorError> {
    if args.program.is_some() && args.backends.len() != 1 {
        return Err(DoctorError::ProgramNeedsOneBackend);
    }
    if args.backends.is_empty() {
        return Ok(registry.iter().collect());
    }
    args.backends
        .iter()
        .map(|name| {
            registry
                .by_name(name)
                .ok_or_else(|| DoctorError::UnknownBackend { name: name.clone(), known: registry.names().join(", ") })
        })
        .collect()
}

/// Every check of one backend: found, version, then its own (skipped when it cannot run).
async fn diagnose(
    backend: &dyn Backend,
    requested: Option<&Path>,
    versions: &VersionProbe,
    limits: Limits,
) -> BackendReport {
    let facts = backend.facts();
    let diagnostics = backend.diagnostics();
    let install_hint = diagnostics.map_or_else(
        || format!("reinstall clawbridge: the {} backend ships with it", facts.backend),
        Diagnostics::install_hint,
    );
    let mut report = BackendReport::new(facts);
    // A backend without diagnostics gets one row saying so; one with them lists its own.
    let own_checks: &[&'static str] = diagnostics.map_or(&["handshake"], Diagnostics::check_names);
    let program = match backend.locate(requested) {
        Ok(program) => {
            let source = source(requested, diagnostics);
            // The doctor checks serve's backends; `run` has its own demo, so say which one this is.
            let which =
                if facts.backend == "demo" { "; the recorded replay serve runs, not run's scripted demo" } else { "" };
            report.checks.push(Check::ok("found", format!("{} ({source}{which})", program.display())));
            report.program = Some(program.display().to_string());
            report.source = Some(source);
            program
        }
        Err(missing) => {
            report.checks.push(Check::fail("found", format!("not found: {}", missing.why), install_hint));
            report.checks.push(Check::skipped("version", "not checked: no executable"));
            report.skip_rest(own_checks, "not checked: no executable");
            return report;
        }
    };
    let probe = backend.probe(&program, versions).await;
    report.version.clone_from(&probe.version);
    let detail = probe.detail.clone().unwrap_or_default();
    let version = probe.version.as_deref();
    // The gate's own reason, not a guess from whether a version came back.
    let version_check = match (probe.available, probe.refusal) {
        (true, _) => match version {
            Some(version) => Check::ok("version", format!("{version}, accepted by the version gate")),
            None => Check::ok("version", "accepted by the version gate"),
        },
        (false, Some(GateRefusal::BelowFloor)) => {
            Check::fail("version", format!("too old: {} ({detail})", version.unwrap_or("?")), install_hint)
        }
        (false, Some(GateRefusal::Unversioned)) => {
            Check::fail("version", format!("unversioned: {detail}"), install_hint)
        }
        (false, Some(GateRefusal::CannotRun)) => Check::fail(
            "version",
            format!("cannot run it to ask its version: {detail}"),
            format!("check that {} runs, or {install_hint}", program.display()),
        ),
        (false, _) => Check::fail("version", format!("refused by the version gate: {detail}"), install_hint),
    };
    let refused = version_check.verdict == Verdict::Fail;
    report.checks.push(version_check);
    if refused {
        report.skip_rest(own_checks, "not checked: the version gate refuses this executable");
        return report;
    }
    match diagnostics {
        Some(diagnostics) => report.checks.extend(diagnostics.checks(&program, limits).await),
        None => report.checks.push(Check::skipped("handshake", "this backend offers no further checks")),
    }
    report
}

/// Where the executable came from, for a person: the flag, else what the backend says (the
/// config file's key, its variable, `PATH`).
fn source(requested: Option<&Path>, diagnostics: Option<&dyn Diagnostics>) -> String {
    if requested.is_some() {
        return "from --program".into();
    }
    let Some(diagnostics) = diagnostics else {
        return "as the backend locates it".into();
    };
    diagnostics.program_source().unwrap_or_else(|| match diagnostics.program_variable() {
        Some(name) if std::env::var_os(name).is_some_and(|v| !v.is_empty()) => format!("from {name}"),
        Some(_) => "on PATH".into(),
        None => "as the backend locates it".into(),
    })
}
