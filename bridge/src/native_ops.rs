//! Work a backend does on its native side outside an attempt: listing the native runtime's models
//! (the host's model catalog) and compacting a bound native session. Each backend offers what its
//! native runtime can do ([`crate::backend::Backend::native_ops`]); `serve` answers the host's
//! `catalog/models` and `session/compact` through it.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::backend::{BackendError, OpenSettings};
pub use clawbridge_protocol::host::{NativeMcpServer, NativeMcpTool, NativeModel};

/// How long a native compaction may take before the bridge gives up on it.
pub const COMPACT_LIMIT: Duration = Duration::from_secs(180);

/// How long listing a native runtime's models may take.
pub const CATALOG_LIMIT: Duration = Duration::from_secs(30);

/// What a finished native compaction reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// The context's size before, in tokens, when the native side said.
    pub tokens_before: Option<u64>,
    /// The context's size after, in tokens, when the native side said.
    pub tokens_after: Option<u64>,
}

/// A backend's native work outside attempts.
pub trait NativeOps: Send + Sync {
    /// The models the native runtime offers under `settings` (program, cwd, environment), in its
    /// own order; where the list comes from, for a person (`codex model/list`).
    fn list_models(&self, settings: OpenSettings) -> BoxFuture<'_, Result<(Vec<NativeModel>, String), BackendError>>;

    /// Compacts the native session `native_id` with the runtime's own compactor, opened under
    /// `settings`.
    fn compact(&self, settings: OpenSettings, native_id: String) -> BoxFuture<'_, Result<Compacted, BackendError>>;

    /// The MCP servers and tools the native session `native_id` has, opened under `settings`
    /// (whose `mcp_servers` are the user's servers).
    fn list_mcp_tools(
        &self,
        settings: OpenSettings,
        native_id: String,
    ) -> BoxFuture<'_, Result<Vec<NativeMcpServer>, BackendError>>;
}
