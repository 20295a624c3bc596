//! Sandbox and approval settings shared by `thread/start`, `thread/resume` and `turn/start`.
//!
//! Wire trap (docs/peers/codex.md#enum-spellings): `sandbox` and `approvalPolicy` are **kebab-case strings**
//! (`"workspace-write"`, `"on-request"`), while `sandboxPolicy` is an object tagged by a camelCase `type`
//! (`{"type":"dangerFullAccess"}`). The upstream README's camelCase strings fail on the wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;

open_string_enum! {
    /// `sandbox` on `thread/start` / `thread/resume`: how far commands may reach outside the sandbox.
    pub enum SandboxMode {
        /// Commands may read but not write the workspace.
        ReadOnly = "read-only",
        /// Commands may write inside the workspace roots.
        WorkspaceWrite = "workspace-write",
        /// No sandbox at all.
        DangerFullAccess = "danger-full-access",
    }
}

open_string_enum! {
    /// `approvalsReviewer`: who answers approval requests.
    pub enum ApprovalsReviewer {
        /// The client (us) is asked through server requests.
        User = "user",
        /// Codex reviews automatically.
        AutoReview = "auto_review",
    }
}

/// `approvalPolicy` (schema name `AskForApproval`): when Codex asks the client before running something.
/// `on-failure` was removed in 0.143 and now arrives as [`ApprovalPolicy::Unknown`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Ask for everything not known to be safe. Only valid through the API in 0.169 (fatal in
    /// `config.toml`).
    Untrusted,
    /// The model decides when to ask (e.g. for commands outside the sandbox).
    OnRequest,
    /// Never ask; failures go back to the model.
    Never,
    /// Experimental per-category settings: `{"granular":{…}}`, kept as sent.
    Granular(Value),
    /// A policy these types do not know, kept as received.
    #[serde(untagged)]
    Unknown(Value),
}

/// `sandboxPolicy` on `turn/start`, and `sandbox` in the `thread/start` / `thread/resume` result: the
/// effective sandbox as an object tagged by `type`. Unknown fields inside a known variant are dropped;
/// an unknown `type` (or a known one that does not decode) is kept whole in [`SandboxPolicy::Unknown`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// No sandbox.
    DangerFullAccess,
    /// Read-only filesystem.
    ReadOnly {
        /// Whether commands may use the network; absent means the server default.
        #[serde(rename = "networkAccess", default, skip_serializing_if = "Option::is_none")]
        network_access: Option<bool>,
    },
    /// Writes allowed inside the workspace and `writableRoots`.
    WorkspaceWrite {
        /// Extra absolute paths commands may write.
        #[serde(rename = "writableRoots", default, skip_serializing_if = "Vec::is_empty")]
        writable_roots: Vec<String>,
        /// Whether commands may use the network.
        #[serde(rename = "networkAccess", default, skip_serializing_if = "Option::is_none")]
        network_access: Option<bool>,
        /// Whether `$TMPDIR` is left out of the writable set.
        #[serde(rename = "excludeTmpdirEnvVar", default, skip_serializing_if = "Option::is_none")]
        exclude_tmpdir_env_var: Option<bool>,
        /// Whether `/tmp` is left out of the writable set.
        #[serde(rename = "excludeSlashTmp", default, skip_serializing_if = "Option::is_none")]
        exclude_slash_tmp: Option<bool>,
    },
    /// The process is already sandboxed from outside; Codex adds none.
    ExternalSandbox {
        /// Network setting as sent (its shape differs from the other variants).
        #[serde(rename = "networkAccess", default, skip_serializing_if = "Option::is_none")]
        network_access: Option<Value>,
    },
    /// A policy these types do not know, kept as received.
    #[serde(untagged)]
    Unknown(Value),
}
