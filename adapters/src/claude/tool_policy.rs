//! The host's native tool policy applied to Claude Code 2.1 (docs/peers/claude.md#native-tool-policy):
//! each denied class becomes `--disallowedTools` entries, which take those tools out of the model's
//! tool list for the session and its subagents; what cannot be removed is refused up front.

use clawbridge_bridge::native_tools::{NativeToolClass, NativeToolPolicy, Unenforceable};

/// The backend's name in [`Unenforceable`] errors.
const BACKEND: &str = "Claude Code";

/// Claude Code's built-in tools of each class (older names kept: denying an absent tool is harmless).
fn claude_tools(class: NativeToolClass) -> Option<&'static [&'static str]> {
    Some(match class {
        // Background shells are watched and stopped through Monitor and TaskStop; worktrees run git.
        NativeToolClass::Shell => {
            &["Bash", "BashOutput", "KillShell", "KillBash", "Monitor", "TaskStop", "EnterWorktree", "ExitWorktree"]
        }
        NativeToolClass::FileEdits => &["Edit", "MultiEdit", "Write", "NotebookEdit"],
        NativeToolClass::FileReads => &["Read", "Glob", "Grep", "LS", "NotebookRead"],
        NativeToolClass::Web => &["WebFetch", "WebSearch"],
        _ => return None,
    })
}

/// The `--disallowedTools` entries that enforce `policy`, or why Claude Code cannot.
pub fn disallowed_tools(policy: &NativeToolPolicy) -> Result<Vec<String>, Unenforceable> {
    let mut denied = Vec::new();
    for class in policy.denied() {
        if policy.shell && matches!(class, NativeToolClass::FileEdits | NativeToolClass::FileReads) {
            return Err(Unenforceable {
                backend: BACKEND,
                denied: class,
                why: "its Bash tool, which the policy allows, reads and writes any file",
            });
        }
        let Some(tools) = claude_tools(class) else {
            return Err(Unenforceable { backend: BACKEND, denied: class, why: "this build does not know that class" });
        };
        denied.extend(tools.iter().map(|t| (*t).to_string()));
    }
    Ok(denied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_policy_denies_nothing_and_no_tools_denies_every_class() {
        assert!(disallowed_tools(&NativeToolPolicy::UNRESTRICTED).unwrap().is_empty());
        let denied = disallowed_tools(&NativeToolPolicy::NONE).unwrap();
        for tool in ["Bash", "Monitor", "Edit", "Write", "NotebookEdit", "Read", "WebFetch", "WebSearch"] {
            assert!(denied.iter().any(|d| d == tool), "{tool} in {denied:?}");
        }
    }

    #[test]
    fn reads_without_a_shell_keep_read_and_a_shell_without_edits_is_refused() {
        let read_only = NativeToolPolicy { file_reads: true, ..NativeToolPolicy::NONE };
        let denied = disallowed_tools(&read_only).unwrap();
        assert!(denied.iter().any(|d| d == "Bash") && !denied.iter().any(|d| d == "Read"), "{denied:?}");
        let shell_only = NativeToolPolicy { shell: true, ..NativeToolPolicy::NONE };
        assert_eq!(disallowed_tools(&shell_only).unwrap_err().denied, NativeToolClass::FileEdits);
    }
}
