//! The host's native tool policy applied to Codex 0.169 (docs/peers/codex.md#native-tool-policy):
//! each denied class becomes a `-c` override that removes Codex's tools of that class from the
//! model's tool list, so the model never sees them; what cannot be removed is refused up front.

use clawbridge_bridge::native_tools::{NativeToolClass, NativeToolPolicy, Unenforceable};
use clawbridge_protocol::codex::policy::SandboxMode;

/// The backend's name in [`Unenforceable`] errors.
const BACKEND: &str = "Codex";

/// How one policy is applied to a Codex app-server and its thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CodexToolPolicy {
    /// `-c` overrides for `codex app-server` (process-wide, so subagents inherit them).
    pub config_overrides: Vec<String>,
    /// The sandbox the thread must run in, when the policy needs one.
    pub sandbox: Option<SandboxMode>,
}

/// The overrides that enforce `policy`, or why Codex cannot.
pub fn apply(policy: &NativeToolPolicy) -> Result<CodexToolPolicy, Unenforceable> {
    let mut applied = CodexToolPolicy::default();
    for class in policy.denied() {
        match class {
            // `exec_command` and `write_stdin` (unified exec) and the classic shell.
            NativeToolClass::Shell => applied.config_overrides.push("features.shell_tool=false".into()),
            NativeToolClass::FileEdits => {
                applied.config_overrides.push("include_apply_patch_tool=false".into());
                if policy.shell {
                    // Commands could still write files: the read-only sandbox stops them.
                    applied.sandbox = Some(SandboxMode::ReadOnly);
                }
            }
            NativeToolClass::FileReads => {
                if policy.shell {
                    return Err(Unenforceable {
                        backend: BACKEND,
                        denied: class,
                        why: "its shell, which the policy allows, reads any file",
                    });
                }
                applied.config_overrides.push("features.view_image=false".into());
            }
            NativeToolClass::Web => applied.config_overrides.push("web_search=\"disabled\"".into()),
            _ => {
                return Err(Unenforceable {
                    backend: BACKEND,
                    denied: class,
                    why: "this build does not know that class",
                });
            }
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_policy_changes_nothing() {
        assert_eq!(apply(&NativeToolPolicy::UNRESTRICTED).unwrap(), CodexToolPolicy::default());
    }

    #[test]
    fn no_tools_removes_every_class_and_needs_no_sandbox() {
        let applied = apply(&NativeToolPolicy::NONE).unwrap();
        assert_eq!(
            applied.config_overrides,
            [
                "features.shell_tool=false",
                "include_apply_patch_tool=false",
                "features.view_image=false",
                "web_search=\"disabled\""
            ]
        );
        assert_eq!(applied.sandbox, None);
    }

    #[test]
    fn a_shell_without_edits_runs_read_only_and_a_shell_without_reads_is_refused() {
        let no_edits = NativeToolPolicy { file_edits: false, ..NativeToolPolicy::UNRESTRICTED };
        let applied = apply(&no_edits).unwrap();
        assert_eq!(applied.config_overrides, ["include_apply_patch_tool=false"]);
        assert_eq!(applied.sandbox, Some(SandboxMode::ReadOnly));
        let no_reads = NativeToolPolicy { file_reads: false, ..NativeToolPolicy::UNRESTRICTED };
        let refused = apply(&no_reads).unwrap_err();
        assert_eq!(refused.denied, NativeToolClass::FileReads);
        assert!(refused.to_string().contains("Codex"), "{refused}");
    }
}
