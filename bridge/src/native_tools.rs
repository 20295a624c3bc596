//! Which of a native agent's *own* tools (its shell, file edits, file reads, web access) an attempt
//! may use. The host states its tool policy in its own tool names (`disableTools`, `toolsAllow`);
//! the host's tools are filtered by name, but the native agent's tools have other names and live
//! inside the native process, so each backend removes the classes this policy denies before the
//! session starts (docs/host-protocol.md#attempt-run), or the attempt is refused up front.

use std::fmt;

/// A class of native tools the host's policy can allow or deny as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum NativeToolClass {
    /// Running commands (Codex's shell and unified exec, Claude's `Bash`); OpenClaw's `exec`.
    Shell,
    /// Writing files (Codex's `apply_patch`, Claude's `Edit`/`Write`/…); OpenClaw's `write`,
    /// `edit`, `apply_patch`.
    FileEdits,
    /// Reading files by a tool of their own (Claude's `Read`/`Glob`/`Grep`/`LS`); OpenClaw's `read`.
    FileReads,
    /// Searching or fetching the web; OpenClaw's `web_search`, `web_fetch`.
    Web,
}

impl NativeToolClass {
    /// Every class, in a fixed order.
    pub const ALL: [NativeToolClass; 4] =
        [NativeToolClass::Shell, NativeToolClass::FileEdits, NativeToolClass::FileReads, NativeToolClass::Web];

    /// The host (OpenClaw) tool names, after its normalisation (lower case, `bash` → `exec`), that
    /// grant this class.
    pub fn host_names(self) -> &'static [&'static str] {
        match self {
            NativeToolClass::Shell => &["exec", "bash"],
            NativeToolClass::FileEdits => &["write", "edit", "apply_patch", "apply-patch"],
            NativeToolClass::FileReads => &["read"],
            NativeToolClass::Web => &["web_search", "web_fetch"],
        }
    }
}

impl fmt::Display for NativeToolClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NativeToolClass::Shell => "shell commands",
            NativeToolClass::FileEdits => "file edits",
            NativeToolClass::FileReads => "file reads",
            NativeToolClass::Web => "web access",
        })
    }
}

/// The native tool classes an attempt may use. The default allows every class (no policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one yes/no per class, each applied on its own
pub struct NativeToolPolicy {
    /// [`NativeToolClass::Shell`] is allowed.
    pub shell: bool,
    /// [`NativeToolClass::FileEdits`] is allowed.
    pub file_edits: bool,
    /// [`NativeToolClass::FileReads`] is allowed.
    pub file_reads: bool,
    /// [`NativeToolClass::Web`] is allowed.
    pub web: bool,
}

impl Default for NativeToolPolicy {
    fn default() -> Self {
        Self::UNRESTRICTED
    }
}

impl NativeToolPolicy {
    /// Every class allowed.
    pub const UNRESTRICTED: NativeToolPolicy =
        NativeToolPolicy { shell: true, file_edits: true, file_reads: true, web: true };
    /// No class allowed.
    pub const NONE: NativeToolPolicy =
        NativeToolPolicy { shell: false, file_edits: false, file_reads: false, web: false };

    /// The policy of a host that disables all tools (`disable_tools`) or allows only the tools
    /// named in `tools_allow`. A name grants a class when it is one of the class's
    /// [host names](NativeToolClass::host_names) (case-insensitive) or `*`; anything else (another
    /// tool, a glob, a group) grants nothing, so an allow list this module cannot read fails closed.
    pub fn from_host(disable_tools: bool, tools_allow: Option<&[String]>) -> Self {
        if disable_tools {
            return Self::NONE;
        }
        let Some(allow) = tools_allow else { return Self::UNRESTRICTED };
        let allowed: Vec<String> = allow.iter().map(|name| name.trim().to_ascii_lowercase()).collect();
        if allowed.iter().any(|name| name == "*") {
            return Self::UNRESTRICTED;
        }
        let grants = |class: NativeToolClass| allowed.iter().any(|name| class.host_names().contains(&name.as_str()));
        NativeToolPolicy {
            shell: grants(NativeToolClass::Shell),
            file_edits: grants(NativeToolClass::FileEdits),
            file_reads: grants(NativeToolClass::FileReads),
            web: grants(NativeToolClass::Web),
        }
    }

    /// The classes both policies allow: several host restrictions apply at once (`toolsAllow` and
    /// `toolExecutionAllow`), and a class runs only when none of them denies it.
    #[must_use]
    pub fn intersect(self, other: NativeToolPolicy) -> Self {
        NativeToolPolicy {
            shell: self.shell && other.shell,
            file_edits: self.file_edits && other.file_edits,
            file_reads: self.file_reads && other.file_reads,
            web: self.web && other.web,
        }
    }

    /// Whether `class` is allowed.
    pub fn allows(&self, class: NativeToolClass) -> bool {
        match class {
            NativeToolClass::Shell => self.shell,
            NativeToolClass::FileEdits => self.file_edits,
            NativeToolClass::FileReads => self.file_reads,
            NativeToolClass::Web => self.web,
        }
    }

    /// True when nothing is denied.
    pub fn is_unrestricted(&self) -> bool {
        *self == Self::UNRESTRICTED
    }

    /// The denied classes, in [`NativeToolClass::ALL`] order.
    pub fn denied(&self) -> Vec<NativeToolClass> {
        NativeToolClass::ALL.into_iter().filter(|class| !self.allows(*class)).collect()
    }
}

/// A backend cannot keep a denied class from its agent: the attempt must be refused up front.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{backend} cannot enforce the host's tool policy: it cannot take away {denied}, because {why}")]
pub struct Unenforceable {
    /// The backend (for a person).
    pub backend: &'static str,
    /// The class the policy denies.
    pub denied: NativeToolClass,
    /// Why that class cannot be removed.
    pub why: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn no_policy_allows_everything_and_disable_tools_allows_nothing() {
        assert!(NativeToolPolicy::from_host(false, None).is_unrestricted());
        assert_eq!(NativeToolPolicy::from_host(true, None), NativeToolPolicy::NONE);
        assert_eq!(NativeToolPolicy::from_host(true, Some(&names(&["exec"]))), NativeToolPolicy::NONE);
        assert_eq!(NativeToolPolicy::NONE.denied(), NativeToolClass::ALL.to_vec());
    }

    #[test]
    fn an_allow_list_grants_only_the_classes_it_names() {
        let policy = NativeToolPolicy::from_host(false, Some(&names(&["read", "message"])));
        assert_eq!(policy, NativeToolPolicy { file_reads: true, ..NativeToolPolicy::NONE });
        assert_eq!(policy.denied(), vec![NativeToolClass::Shell, NativeToolClass::FileEdits, NativeToolClass::Web]);
        let policy = NativeToolPolicy::from_host(false, Some(&names(&["Bash", " apply_patch ", "web_fetch"])));
        assert_eq!(policy, NativeToolPolicy { file_reads: false, ..NativeToolPolicy::UNRESTRICTED });
        assert!(NativeToolPolicy::from_host(false, Some(&names(&["*"]))).is_unrestricted());
    }

    #[test]
    fn an_intersection_allows_only_what_both_policies_allow() {
        let allow = NativeToolPolicy::from_host(false, Some(&names(&["exec", "read"])));
        let execution = NativeToolPolicy::from_host(false, Some(&names(&["read", "web_search"])));
        let both = allow.intersect(execution);
        assert_eq!(both.denied(), vec![NativeToolClass::Shell, NativeToolClass::FileEdits, NativeToolClass::Web]);
        assert!(both.allows(NativeToolClass::FileReads));
        assert_eq!(allow.intersect(NativeToolPolicy::UNRESTRICTED), allow);
        assert_eq!(NativeToolPolicy::UNRESTRICTED.intersect(NativeToolPolicy::NONE), NativeToolPolicy::NONE);
    }

    #[test]
    fn globs_groups_and_an_empty_list_fail_closed() {
        assert_eq!(NativeToolPolicy::from_host(false, Some(&[])), NativeToolPolicy::NONE);
        assert_eq!(NativeToolPolicy::from_host(false, Some(&names(&["ex*", "group:runtime"]))), NativeToolPolicy::NONE);
    }
}
