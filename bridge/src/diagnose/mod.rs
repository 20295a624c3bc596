//! What a backend can say about its own health, for `clawbridge doctor`: each check ends in one
//! [`Verdict`] with one line saying what was found and, when something is wrong, one line saying
//! how to fix it. A backend offers its own checks (handshake, auth, endpoint, sandbox) through
//! [`crate::backend::Backend::diagnostics`]; the doctor runs the ones every backend shares itself
//! (where the executable is, its version gate, the state dir, the log file).

pub mod endpoint;

use std::path::Path;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;

/// How one check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verdict {
    /// Works.
    Ok,
    /// Works, with something worth knowing.
    Warn,
    /// Does not work: sessions of this backend will fail.
    Fail,
    /// Not checked (not applicable here, or an earlier check failed).
    Skipped,
}

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What was checked, one word (`handshake`, `auth`, `endpoint`, `sandbox`).
    pub name: &'static str,
    /// How it came out.
    pub verdict: Verdict,
    /// One line: what was found.
    pub summary: String,
    /// One line: how to fix it (only for a warning or failure that has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    /// A check that passed.
    pub fn ok(name: &'static str, summary: impl Into<String>) -> Check {
        Check { name, verdict: Verdict::Ok, summary: one_line(summary.into()), fix: None }
    }

    /// A check that passed with something worth knowing, and what to do about it.
    pub fn warn(name: &'static str, summary: impl Into<String>, fix: Option<String>) -> Check {
        Check { name, verdict: Verdict::Warn, summary: one_line(summary.into()), fix: fix.map(one_line) }
    }

    /// A check that failed, and how to fix it.
    pub fn fail(name: &'static str, summary: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name, verdict: Verdict::Fail, summary: one_line(summary.into()), fix: Some(one_line(fix.into())) }
    }

    /// A check that was not made, and why.
    pub fn skipped(name: &'static str, why: impl Into<String>) -> Check {
        Check { name, verdict: Verdict::Skipped, summary: one_line(why.into()), fix: None }
    }

    /// The failed `handshake` check of a backend whose `initialize` failed with `error`, the same
    /// words for every backend: a deadline that passed says so and that `process` was stopped (every
    /// backend stops what did not answer), anything else names the error and its causes.
    pub fn handshake_failure(
        error: &(dyn std::error::Error + 'static),
        process: &str,
        fix: impl Into<String>,
    ) -> Check {
        let chain: Vec<&(dyn std::error::Error + 'static)> =
            std::iter::successors(Some(error), |e| e.source()).collect();
        let timed_out = chain.iter().find_map(|e| match e.downcast_ref::<crate::rpc::RpcError>() {
            Some(crate::rpc::RpcError::Timeout { after, .. }) => Some(*after),
            _ => None,
        });
        let summary = match timed_out {
            Some(after) => format!("no answer to initialize in {} s (the {process} was stopped)", after.as_secs()),
            None => chain.iter().map(ToString::to_string).collect::<Vec<_>>().join(": "),
        };
        Check::fail("handshake", summary, fix)
    }

    /// The `endpoint` check of a request to `shown` that got no answer: not probed (a scheme the
    /// probe does not speak), reached but refused at the TLS layer (the error's own fix, since
    /// "start the model server" would send the person the wrong way), or unreachable
    /// (`unreachable_fix`, which names the backend's own setting).
    pub fn endpoint_error(shown: &str, error: &endpoint::EndpointError, unreachable_fix: impl Into<String>) -> Check {
        match (error, error.fix()) {
            (endpoint::EndpointError::Unsupported { .. }, _) => Check::skipped("endpoint", error.to_string()),
            (_, Some(fix)) => Check::fail("endpoint", format!("model endpoint {shown}: {error}"), fix),
            (_, None) => {
                Check::fail("endpoint", format!("model endpoint {shown} unreachable: {error}"), unreachable_fix)
            }
        }
    }
}

/// The most of a peer's text one verdict line quotes: a line a person reads, not a log.
const MAX_LINE_CHARS: usize = 300;

/// `text` as one bounded line: peers' messages may span lines or run long.
pub fn one_line(text: String) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MAX_LINE_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(MAX_LINE_CHARS).collect();
    cut.push('…');
    cut
}

/// [`Diagnostics::program_source`] for a backend whose executable is the operator's `configured`
/// one (config file, variable or flag, as it named itself), else `variable`'s, else on `PATH`.
pub fn program_source(configured: Option<&crate::backend::ConfiguredProgram>, variable: &str) -> String {
    match configured {
        Some(configured) => format!("from {}", configured.named_by),
        None if std::env::var_os(variable).is_some_and(|v| !v.is_empty()) => format!("from {variable}"),
        None => "on PATH".into(),
    }
}

/// How long each of a backend's checks may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// One native process's start and handshake, and one request on it.
    pub handshake: Duration,
    /// One request to the model endpoint.
    pub endpoint: Duration,
}

/// The checks a backend makes of itself beyond what every backend shares.
pub trait Diagnostics: Send + Sync {
    /// The environment variable that names the backend's executable, so the doctor can say where
    /// the one it found came from.
    fn program_variable(&self) -> Option<&'static str>;

    /// Where the executable [`crate::backend::Backend::locate`] finds (without `--program`) comes
    /// from, for a person: `from codex.bin (file:/home/u/.config/clawbridge/config.toml:3)`, `from
    /// CLAWBRIDGE_CODEX_BIN`, `on PATH`, `from the configured command line`. `None`: the doctor says
    /// it from [`Self::program_variable`].
    fn program_source(&self) -> Option<String> {
        None
    }

    /// The names of the checks [`Self::checks`] makes, in order, so a report lists them as
    /// skipped when they cannot run (an executable missing or refused).
    fn check_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// One line telling a person how to get a usable executable (`install codex ≥ 0.169.0 or set
    /// CLAWBRIDGE_CODEX_BIN`).
    fn install_hint(&self) -> String;

    /// The backend's own checks of `program` (which passed the version gate), each bounded by
    /// `limits`; every process started is stopped before this returns.
    fn checks<'a>(&'a self, program: &'a Path, limits: Limits) -> BoxFuture<'a, Vec<Check>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verdict_line_is_one_bounded_line() {
        assert_eq!(one_line("two\nlines  and\ttabs".into()), "two lines and tabs");
        let long = one_line("x".repeat(10_000));
        assert_eq!(long.chars().count(), MAX_LINE_CHARS + 1, "cut, with an ellipsis");
        assert!(long.ends_with('…'));
        let check = Check::fail("auth", "no\nkey", "set\nit");
        assert_eq!((check.summary.as_str(), check.fix.as_deref()), ("no key", Some("set it")));
    }
}
