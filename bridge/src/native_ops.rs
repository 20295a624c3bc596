//! Work a backend does on its native side outside an attempt: listing the native runtime's models
//! (the host's model catalog) and compacting a bound native session. Each backend offers what its
//! native runtime can do ([`crate::backend::Backend::native_ops`]); `serve` answers the host's
//! `catalog/models` and `session/compact` through it.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::backend::{BackendError, OpenSettings};
pub use clawbridge_protocol::host::{NativeMcpServer, NativeMcpTool, NativeModel};

/// How long a native compaction may take before the bridge gives up on it: all of it, from
/// starting a native process to stopping it (the host waits a little longer for the answer).
pub const COMPACT_LIMIT: Duration = Duration::from_secs(180);

/// A native compaction that did not end within [`COMPACT_LIMIT`].
#[derive(Debug, thiserror::Error)]
#[error("the native compaction did not end within {0:?}")]
pub struct CompactionTimedOut(pub Duration);

/// `compaction` bounded as a whole by [`COMPACT_LIMIT`]: a native process slow to start or to stop
/// must not keep the session busy past the host's wait for the answer.
pub async fn within_compact_limit(
    compaction: impl std::future::Future<Output = Result<Compacted, BackendError>>,
) -> Result<Compacted, BackendError> {
    tokio::time::timeout(COMPACT_LIMIT, compaction)
        .await
        .unwrap_or_else(|_| Err(BackendError::Conversation { source: Box::new(CompactionTimedOut(COMPACT_LIMIT)) }))
}

/// How long listing a native runtime's models may take.
pub const CATALOG_LIMIT: Duration = Duration::from_secs(30);

/// What a finished native compaction reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// The context's size before, in tokens, when the native side said.
    pub tokens_before: Option<u64>,
    /// The context's size after, in tokens, when the native side said.
    pub tokens_after: Option<u64>,
    /// The native side's id of the compaction (its item or line), when it gave one.
    pub item_id: Option<String>,
}

/// A backend's native work outside attempts.
pub trait NativeOps: Send + Sync {
    /// The models the native runtime offers under `settings` (program, cwd, environment), in its
    /// own order; where the list comes from, for a person (`codex model/list`).
    fn list_models(&self, settings: OpenSettings) -> BoxFuture<'_, Result<(Vec<NativeModel>, String), BackendError>>;

    /// Whether [`compact`](Self::compact) runs a native compactor; a backend that answers `false`
    /// is told nothing to compact (`serve` answers `compacted: false` with the reason).
    fn compacts(&self) -> bool {
        true
    }

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
