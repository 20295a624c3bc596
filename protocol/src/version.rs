//! What every peer's version gate shares (Codex `userAgent`, Claude Code `--version`): the number,
//! its ordering, and the judgement against a floor and the newest tested version. Pure logic, no
//! I/O: each backend reads its own version text and words its own refusals.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A semver version with the gate's ordering: numeric triple first, then any `-pre` or `+build`
/// suffix ranks below the bare version (`0.149.0-alpha.1 < 0.149.0` and `0.149.0+x < 0.149.0`);
/// two suffixed versions of the same triple compare by prerelease (semver rules), then build.
///
/// Parsing and prerelease ordering come from the `semver` crate (well kept, no dependencies); only the
/// `+build` rule is ours, because semver itself sorts build metadata *above* the bare version.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Version(semver::Version);

impl Version {
    /// A stable version `major.minor.patch`.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Version(semver::Version::new(major, minor, patch))
    }

    /// Parses `major.minor.patch[-pre][+build]` (strict semver: no leading zeros, no empty identifiers).
    pub fn parse(text: &str) -> Result<Self, ParseVersionError> {
        semver::Version::parse(text)
            .map(Version)
            .map_err(|e| ParseVersionError { input: text.to_owned(), reason: e.to_string() })
    }

    /// Major component.
    pub fn major(&self) -> u64 {
        self.0.major
    }

    /// Minor component.
    pub fn minor(&self) -> u64 {
        self.0.minor
    }

    /// Patch component.
    pub fn patch(&self) -> u64 {
        self.0.patch
    }

    /// Whether the version has neither a `-pre` nor a `+build` suffix.
    pub fn is_stable(&self) -> bool {
        self.0.pre.is_empty() && self.0.build.is_empty()
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let (a, b) = (&self.0, &other.0);
        (a.major, a.minor, a.patch)
            .cmp(&(b.major, b.minor, b.patch))
            .then_with(|| self.is_stable().cmp(&other.is_stable()))
            .then_with(|| a.pre.cmp(&b.pre))
            .then_with(|| a.build.cmp(&b.build))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl FromStr for Version {
    type Err = ParseVersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Version::parse(s)
    }
}

/// Text that is not a semver version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a version: {reason}")]
pub struct ParseVersionError {
    /// The text given.
    pub input: String,
    /// What the parser objected to.
    pub reason: String,
}

/// An accepted peer version.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionVerdict {
    /// Within `[floor, tested_max]`.
    Supported {
        /// The peer's version.
        found: Version,
    },
    /// Newer than anything tested: run, but warn (never a refusal; docs/peers/codex.md#version-drift).
    AboveTested {
        /// The peer's version.
        found: Version,
        /// The newest tested version.
        tested: Version,
    },
}

impl VersionVerdict {
    /// The peer's version.
    pub fn found(&self) -> &Version {
        match self {
            VersionVerdict::Supported { found } | VersionVerdict::AboveTested { found, .. } => found,
        }
    }

    /// The warning to log, if any; `peer` names the program (`"Codex app-server"`).
    pub fn warning(&self, peer: &str) -> Option<String> {
        match self {
            VersionVerdict::Supported { .. } => None,
            VersionVerdict::AboveTested { found, tested } => {
                Some(format!("{peer} {found} is newer than the newest tested version {tested}; continuing"))
            }
        }
    }
}

/// Judges `found` against `[floor, tested_max]`: below the floor is refused (`Err(found)`), above the
/// tested maximum is accepted with a warning.
pub fn judge(found: Version, floor: &Version, tested_max: &Version) -> Result<VersionVerdict, Version> {
    if &found < floor {
        return Err(found);
    }
    if &found > tested_max {
        return Ok(VersionVerdict::AboveTested { found, tested: tested_max.clone() });
    }
    Ok(VersionVerdict::Supported { found })
}
