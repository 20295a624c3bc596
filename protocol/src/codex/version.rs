//! The Codex app-server version gate (docs/peers/codex.md#the-version-gate). Pure logic, no I/O.
//!
//! The server's version is only in the `initialize` result's `userAgent`
//! (`<originator>/<version> (<os>; <arch>) <term> (<client>; <client version>)`). The policy is a
//! **floor** (inclusive) plus a **tested maximum** that only warns: exact pins and ceilings broke on
//! every upgrade. Unparseable or missing versions fail closed, and a prerelease ranks below the same
//! stable version, so `0.149.0-alpha.1` does not meet a `0.149.0` floor.

use std::sync::LazyLock;

use regex::Regex;

// The version number and its ordering are shared with the other peers' gates; re-exported so the
// `codex::version::{Version, ParseVersionError}` paths keep working.
use crate::version::judge;
pub use crate::version::{ParseVersionError, Version, VersionVerdict};

/// The userAgent rule of docs/peers/codex.md#the-version-gate (OpenClaw's), with `[0-9]` for `\d`: the Rust
/// crate's `\d` also matches non-ASCII digits, JavaScript's (where the rule comes from) does not. The
/// originator is everything before the first `/` and may contain spaces (`Codex Desktop/…`).
static USER_AGENT_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[^/]+/([0-9]+\.[0-9]+\.[0-9]+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)(?:[\s(]|$)")
        .expect("the userAgent pattern is valid")
});

/// The version text in a Codex `userAgent`, or `None` when it has none in the expected place
/// (`Codex Desktop/0.124`, `openclaw/0.125.0abc`, `missing-version`).
pub fn user_agent_version(user_agent: &str) -> Option<&str> {
    USER_AGENT_VERSION.captures(user_agent).and_then(|c| c.get(1)).map(|m| m.as_str())
}

/// Which Codex app-server versions clawbridge runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionPolicy {
    /// Oldest accepted version, inclusive. Default `0.149.0` (the OpenClaw Codex plugin's floor).
    pub floor: Version,
    /// Newest version tested; newer ones are accepted with a warning. Default `0.169.0` (the pinned
    /// peer the recordings come from).
    pub tested_max: Version,
}

impl Default for VersionPolicy {
    fn default() -> Self {
        Self { floor: Version::new(0, 149, 0), tested_max: Version::new(0, 169, 0) }
    }
}

impl VersionPolicy {
    /// Judges the `userAgent` of the `initialize` result (`None` when the server sent none).
    /// Below the floor, unparseable or missing → [`VersionRejected`] (the caller kills the child);
    /// above the tested maximum → accepted with [`VersionVerdict::AboveTested`].
    pub fn check(&self, user_agent: Option<&str>) -> Result<VersionVerdict, VersionRejected> {
        let required = self.floor.clone();
        let Some(user_agent) = user_agent else {
            return Err(VersionRejected::Missing { required });
        };
        let unparseable = |reason: String| VersionRejected::Unparseable {
            user_agent: user_agent.to_owned(),
            reason,
            required: self.floor.clone(),
        };
        let text = user_agent_version(user_agent)
            .ok_or_else(|| unparseable("no `<originator>/<major>.<minor>.<patch>` at its start".to_owned()))?;
        let found = Version::parse(text).map_err(|e| unparseable(e.to_string()))?;
        judge(found, &self.floor, &self.tested_max).map_err(|found| VersionRejected::BelowFloor { found, required })
    }
}

/// Why a server's version was refused. Never retryable: the same binary gives the same answer, so the
/// child is killed and the error reported as is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VersionRejected {
    /// The `initialize` result had no `userAgent`.
    #[error("Codex app-server {required} or newer is required, but the server reported no userAgent")]
    Missing {
        /// The floor.
        required: Version,
    },
    /// The `userAgent` carries no readable version (fail closed).
    #[error(
        "Codex app-server {required} or newer is required, but no version could be read from userAgent \
         {user_agent:?} ({reason})"
    )]
    Unparseable {
        /// The userAgent as received.
        user_agent: String,
        /// Why no version was found.
        reason: String,
        /// The floor.
        required: Version,
    },
    /// The version is older than the floor (a prerelease of the floor counts as older).
    #[error("Codex app-server {required} or newer is required, but found {found}")]
    BelowFloor {
        /// The server's version.
        found: Version,
        /// The floor.
        required: Version,
    },
}

impl VersionRejected {
    /// Always `false`: retrying cannot change the server's version.
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

    /// The version found, when one was read.
    pub fn found(&self) -> Option<&Version> {
        match self {
            VersionRejected::BelowFloor { found, .. } => Some(found),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn ua(version: &str) -> String {
        format!("clawbridge/{version} (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)")
    }

    #[test]
    fn reference_user_agents_parse_as_documented() {
        let table = [
            ("openclaw/0.169.0 (Debian 12.0.0; x86_64) xterm (openclaw; 2026.9.6)", Some("0.169.0")),
            ("codex_cli_rs/0.118.1-dev (linux; test)", Some("0.118.1-dev")),
            ("Codex Desktop/0.124", None),
            ("openclaw/0.125.0abc", None),
            ("missing-version", None),
            ("clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)", Some("0.169.0")),
        ];
        for (agent, expected) in table {
            assert_eq!(user_agent_version(agent), expected, "{agent}");
        }
    }

    #[test]
    fn originators_may_contain_spaces() {
        assert_eq!(user_agent_version("Codex Desktop/0.170.2 (Mac OS 15.1; arm64) unknown (x; 1)"), Some("0.170.2"));
        assert_eq!(user_agent_version("Codex Desktop/0.149.0-alpha.3"), Some("0.149.0-alpha.3"));
        assert_eq!(user_agent_version("a b/c/1.2.3"), None, "the originator ends at the first slash");
        assert_eq!(user_agent_version("/0.169.0"), None, "an empty originator is not one");
        assert_eq!(user_agent_version("x/0.169.0+build.5(y)"), Some("0.169.0+build.5"));
        assert_eq!(user_agent_version("x/\u{0661}.169.0"), None, "ASCII digits only");
    }

    #[test]
    fn prereleases_and_builds_rank_below_the_bare_version() {
        assert!(v("0.149.0-alpha.1") < v("0.149.0"));
        assert!(v("0.149.0+build") < v("0.149.0"));
        assert!(v("0.149.0-alpha.1") < v("0.149.0-alpha.2"));
        assert!(v("0.149.0-alpha.2") < v("0.149.0-beta"));
        assert!(v("0.148.9") < v("0.149.0-alpha.1"));
        assert!(v("0.149.1-dev") > v("0.149.0"));
        assert!(v("0.100.0") < v("0.149.0"));
        assert_eq!(v("0.149.0").cmp(&v("0.149.0")), Ordering::Equal);
    }

    #[test]
    fn gate_refuses_old_unversioned_and_garbage() {
        let policy = VersionPolicy::default();
        let floor = Version::new(0, 149, 0);
        match policy.check(Some(&ua("0.100.0"))) {
            Err(e @ VersionRejected::BelowFloor { .. }) => {
                assert_eq!(e.found(), Some(&v("0.100.0")));
                assert_eq!(e.required(), &floor);
                assert!(!e.is_retryable());
                assert_eq!(e.to_string(), "Codex app-server 0.149.0 or newer is required, but found 0.100.0");
            }
            other => panic!("expected BelowFloor, got {other:?}"),
        }
        match policy.check(Some(&ua("0.149.0-alpha.1"))) {
            Err(VersionRejected::BelowFloor { found, required }) => {
                assert_eq!(found.to_string(), "0.149.0-alpha.1");
                assert_eq!(required, floor);
            }
            other => panic!("a prerelease of the floor must be refused, got {other:?}"),
        }
        assert_eq!(policy.check(None), Err(VersionRejected::Missing { required: floor.clone() }));
        for agent in ["missing-version", "Codex Desktop/0.124", "openclaw/0.125.0abc", "", "clawbridge/01.169.0"] {
            match policy.check(Some(agent)) {
                Err(e @ VersionRejected::Unparseable { .. }) => {
                    assert!(!e.is_retryable());
                    assert!(e.to_string().contains("0.149.0 or newer is required"), "{e}");
                    assert!(e.to_string().contains(&format!("{agent:?}")), "{e}");
                }
                other => panic!("{agent:?} must be refused as unparseable, got {other:?}"),
            }
        }
    }

    #[test]
    fn gate_accepts_floor_and_tested_and_warns_above() {
        let policy = VersionPolicy::default();
        for version in ["0.149.0", "0.155.1", "0.169.0"] {
            let verdict = policy.check(Some(&ua(version))).unwrap();
            assert_eq!(verdict, VersionVerdict::Supported { found: v(version) });
            assert_eq!(verdict.warning("Codex app-server"), None);
        }
        let verdict = policy.check(Some(&ua("0.170.0"))).unwrap();
        assert_eq!(verdict, VersionVerdict::AboveTested { found: v("0.170.0"), tested: v("0.169.0") });
        assert_eq!(verdict.found(), &v("0.170.0"));
        assert!(verdict.warning("Codex app-server").unwrap().contains("0.170.0"));
        // docs/peers/codex.md#the-version-gate: 0.169.0 from OpenClaw's originator, a desktop build above the max.
        let openclaw = "openclaw/0.169.0 (Debian 12.0.0; x86_64) xterm (openclaw; 2026.9.6)";
        assert!(matches!(policy.check(Some(openclaw)), Ok(VersionVerdict::Supported { .. })));
        let desktop = "Codex Desktop/0.171.0-alpha.2 (Mac OS 15.1.0; arm64) unknown (Codex Desktop; 1.2.3)";
        assert!(matches!(policy.check(Some(desktop)), Ok(VersionVerdict::AboveTested { .. })));
        let dev = "codex_cli_rs/0.118.1-dev (linux; test)";
        assert!(matches!(policy.check(Some(dev)), Err(VersionRejected::BelowFloor { .. })));
    }

    #[test]
    fn policy_is_configurable() {
        let policy = VersionPolicy { floor: v("0.169.0"), tested_max: v("0.169.0") };
        assert!(policy.check(Some(&ua("0.168.9"))).is_err());
        assert!(matches!(policy.check(Some(&ua("0.169.0"))), Ok(VersionVerdict::Supported { .. })));
        assert!(matches!(policy.check(Some(&ua("0.169.1-dev"))), Ok(VersionVerdict::AboveTested { .. })));
    }
}
