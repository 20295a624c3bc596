//! The Claude Code CLI version gate (docs/peers/claude.md#version-detection-and-the-gate). Pure logic, no I/O.
//!
//! `claude --version` prints `2.1.328 (Claude Code)`; in band, `system/init` and the `initialize`
//! answer carry `claude_code_version` (`2.1.328`). The policy is the same shape as the Codex one: a
//! **floor** (inclusive; below it, refuse) and a **tested maximum** (above it, run and warn;
//! docs/peers/codex.md#version-drift). Missing or unreadable versions fail closed. The version number
//! and its ordering (a prerelease ranks below its release) are the shared [`Version`].

use std::sync::LazyLock;

use regex::Regex;

use crate::version::judge;
pub use crate::version::{ParseVersionError, Version, VersionVerdict};

/// The rule `^(\d+\.\d+\.\d+)`, with `[0-9]` (Rust's `\d` matches non-ASCII digits), an
/// optional semver suffix, and a required end of token, so `2.1.3280abc` is not read as `2.1.328`.
/// Leading whitespace is allowed: the text comes from a process's stdout.
static CLI_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)(?:\s|$)")
        .expect("the version pattern is valid")
});

/// The version text at the start of `claude --version` output (`2.1.328 (Claude Code)` → `2.1.328`),
/// or `None` when there is none.
pub fn cli_version_text(output: &str) -> Option<&str> {
    CLI_VERSION.captures(output).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// Which Claude Code CLI versions clawbridge runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionPolicy {
    /// Oldest accepted version, inclusive. Default `2.1.328`: the oldest version recorded under
    /// `fixtures/recordings/claude/` (refuse below the oldest recorded one,
    /// docs/peers/claude.md#version-detection-and-the-gate; lower it when an older CLI's recordings are checked in).
    pub floor: Version,
    /// Newest version tested; newer ones run with a warning. Default `2.1.328` (the pinned peer).
    pub tested_max: Version,
}

impl Default for VersionPolicy {
    fn default() -> Self {
        Self { floor: Version::new(2, 1, 328), tested_max: Version::new(2, 1, 328) }
    }
}

impl VersionPolicy {
    /// Judges the stdout of `claude --version` (`None` when the command printed nothing usable).
    pub fn check_cli_output(&self, output: Option<&str>) -> Result<VersionVerdict, VersionRejected> {
        self.judge(output, cli_version_text, "no `<major>.<minor>.<patch>` at its start")
    }

    /// Judges an in-band `claude_code_version` (`system/init`, the `initialize` answer), a bare
    /// version such as `2.1.328`.
    pub fn check_claude_code_version(&self, version: Option<&str>) -> Result<VersionVerdict, VersionRejected> {
        self.judge(version, |t| Some(t.trim()), "not a version")
    }

    fn judge(
        &self,
        text: Option<&str>,
        extract: impl Fn(&str) -> Option<&str>,
        no_version: &str,
    ) -> Result<VersionVerdict, VersionRejected> {
        let required = self.floor.clone();
        let Some(text) = text else {
            return Err(VersionRejected::Missing { required });
        };
        let unparseable =
            |reason: String| VersionRejected::Unparseable { text: text.to_owned(), reason, required: required.clone() };
        let version = extract(text).ok_or_else(|| unparseable(no_version.to_owned()))?;
        let found = Version::parse(version).map_err(|e| unparseable(e.to_string()))?;
        judge(found, &self.floor, &self.tested_max).map_err(|found| VersionRejected::BelowFloor { found, required })
    }
}

/// Whether an in-band `claude_code_version` names the same version `claude --version` did
/// (docs/peers/claude.md#version-mismatch: a mismatch means the binary was swapped, or a wrapper runs another CLI).
/// Unreadable text never matches.
pub fn same_version(expected: &Version, reported: &str) -> bool {
    Version::parse(reported.trim()).is_ok_and(|v| &v == expected)
}

/// Why a CLI version was refused. Never retryable: the same binary gives the same answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionRejected {
    /// No version text at all.
    #[error("Claude Code CLI {required} or newer is required, but it reported no version")]
    Missing {
        /// The floor.
        required: Version,
    },
    /// The text carries no readable version (fail closed).
    #[error("Claude Code CLI {required} or newer is required, but no version could be read from {text:?} ({reason})")]
    Unparseable {
        /// The text as received.
        text: String,
        /// Why no version was found.
        reason: String,
        /// The floor.
        required: Version,
    },
    /// Older than the floor (a prerelease of the floor counts as older).
    #[error("Claude Code CLI {required} or newer is required, but found {found}")]
    BelowFloor {
        /// The CLI's version.
        found: Version,
        /// The floor.
        required: Version,
    },
}

impl VersionRejected {
    /// Always `false`: retrying cannot change the binary's version.
    pub fn is_retryable(&self) -> bool {
        false
    }

    /// The version the policy requires.
    pub fn required(&self) -> &Version {
        match self {
            VersionRejected::Missing { required }
            | VersionRejected::Unparseable { required, .. }
            | VersionRejected::BelowFloor { required, .. } => required,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn cli_output_parses_as_documented() {
        let table = [
            ("2.1.328 (Claude Code)", Some("2.1.328")),
            ("2.1.328 (Claude Code)\n", Some("2.1.328")),
            ("  2.1.328\n", Some("2.1.328")),
            ("2.1.329-beta.1 (Claude Code)", Some("2.1.329-beta.1")),
            ("2.1.3280abc (Claude Code)", None),
            ("Claude Code 2.1.328", None),
            ("2.1 (Claude Code)", None),
            ("", None),
            ("\u{0662}.1.328", None),
        ];
        for (output, expected) in table {
            assert_eq!(cli_version_text(output), expected, "{output:?}");
        }
    }

    #[test]
    fn gate_accepts_the_tested_version_and_warns_above() {
        let policy = VersionPolicy::default();
        let verdict = policy.check_cli_output(Some("2.1.328 (Claude Code)")).unwrap();
        assert_eq!(verdict, VersionVerdict::Supported { found: v("2.1.328") });
        assert_eq!(verdict.warning("Claude Code CLI"), None);
        let verdict = policy.check_cli_output(Some("2.2.0 (Claude Code)")).unwrap();
        assert_eq!(verdict, VersionVerdict::AboveTested { found: v("2.2.0"), tested: v("2.1.328") });
        assert!(verdict.warning("Claude Code CLI").unwrap().contains("2.2.0"));
        assert_eq!(verdict.found(), &v("2.2.0"));
        assert!(matches!(policy.check_claude_code_version(Some("2.1.328")), Ok(VersionVerdict::Supported { .. })));
    }

    #[test]
    fn gate_refuses_old_missing_and_garbage() {
        let policy = VersionPolicy::default();
        match policy.check_cli_output(Some("2.1.39 (Claude Code)")) {
            Err(e @ VersionRejected::BelowFloor { .. }) => {
                assert!(!e.is_retryable());
                assert_eq!(e.required(), &v("2.1.328"));
                assert_eq!(e.to_string(), "Claude Code CLI 2.1.328 or newer is required, but found 2.1.39");
            }
            other => panic!("expected BelowFloor, got {other:?}"),
        }
        assert!(matches!(
            policy.check_cli_output(Some("2.1.328-rc.1 (Claude Code)")),
            Err(VersionRejected::BelowFloor { .. })
        ));
        assert_eq!(policy.check_cli_output(None), Err(VersionRejected::Missing { required: v("2.1.328") }));
        for text in ["command not found", "", "2.1.0328"] {
            match policy.check_cli_output(Some(text)) {
                Err(e @ VersionRejected::Unparseable { .. }) => assert!(e.to_string().contains(&format!("{text:?}"))),
                other => panic!("{text:?} must be refused as unparseable, got {other:?}"),
            }
        }
        assert!(matches!(policy.check_claude_code_version(Some("latest")), Err(VersionRejected::Unparseable { .. })));
    }

    #[test]
    fn policy_is_configurable_and_cross_checks() {
        let policy = VersionPolicy { floor: v("2.0.0"), tested_max: v("2.1.328") };
        assert!(matches!(policy.check_cli_output(Some("2.1.39 (Claude Code)")), Ok(VersionVerdict::Supported { .. })));
        assert!(policy.check_cli_output(Some("1.9.9 (Claude Code)")).is_err());
        assert!(same_version(&v("2.1.328"), "2.1.328"));
        assert!(!same_version(&v("2.1.328"), "2.1.329"));
        assert!(!same_version(&v("2.1.328"), "garbage"));
    }
}
