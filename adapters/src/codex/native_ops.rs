//! Codex's native work outside attempts: `model/list` for the host's model catalog and
//! `thread/compact/start` on a session's bound thread (docs/peers/codex.md#compaction).

use std::sync::Arc;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::backend::{BackendError, OpenSettings};
use clawbridge_bridge::native_ops::{COMPACT_LIMIT, Compacted, NativeMcpServer, NativeModel, NativeOps};
use futures::future::BoxFuture;

use super::backend::{CodexBackend, start_error};
use super::session::CodexSession;
use super::tool_policy;

/// Hooks for work that runs no tool: every approval is denied, no host tools, nothing observed.
fn inert_hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

impl CodexBackend {
    /// An app-server of its own for `settings` (never a shared one: this work holds no thread a
    /// session may want), handshake done.
    async fn own_server(&self, settings: &OpenSettings) -> Result<CodexSession, BackendError> {
        let tools = tool_policy::apply(&settings.native_tools)?;
        let config = self.config(settings, &tools);
        CodexSession::connect(config, inert_hooks()).await.map_err(start_error)
    }
}

impl NativeOps for CodexBackend {
    fn list_models(&self, settings: OpenSettings) -> BoxFuture<'_, Result<(Vec<NativeModel>, String), BackendError>> {
        Box::pin(async move {
            let mut session = self.own_server(&settings).await?;
            let listed = session.list_models().await;
            session.shutdown().await;
            let models = listed.map_err(|error| BackendError::Conversation { source: Box::new(error) })?;
            Ok((models, "codex app-server model/list".to_string()))
        })
    }

    fn compact(&self, settings: OpenSettings, native_id: String) -> BoxFuture<'_, Result<Compacted, BackendError>> {
        Box::pin(clawbridge_bridge::native_ops::within_compact_limit(async move {
            let tools = tool_policy::apply(&settings.native_tools)?;
            let options = self.thread_options(&settings, &tools);
            // The shared server that keeps the thread loaded between attempts compacts it (no
            // other process may resume it); else an app-server of its own.
            let held = self.server_pool().and_then(|pool| {
                CodexSession::on_server_holding(pool, &native_id, self.config(&settings, &tools), inert_hooks())
            });
            let mut session = match held {
                Some(session) => {
                    tracing::info!(thread = %native_id, "compacting on the shared codex app-server that holds the thread");
                    session
                }
                None => self.own_server(&settings).await?,
            };
            let report = session.compact_thread(&native_id, &options, COMPACT_LIMIT).await;
            session.shutdown().await;
            let report = report.map_err(|error| BackendError::Conversation { source: Box::new(error) })?;
            Ok(Compacted {
                tokens_before: report.tokens_before,
                tokens_after: report.tokens_after,
                item_id: report.item_id,
            })
        }))
    }

    fn list_mcp_tools(
        &self,
        settings: OpenSettings,
        native_id: String,
    ) -> BoxFuture<'_, Result<Vec<NativeMcpServer>, BackendError>> {
        Box::pin(async move {
            let tools = tool_policy::apply(&settings.native_tools)?;
            let options = self.thread_options(&settings, &tools);
            let mut session = self.own_server(&settings).await?;
            let listed = session.list_mcp_tools(&native_id, &options).await;
            session.shutdown().await;
            listed.map_err(|error| BackendError::Conversation { source: Box::new(error) })
        })
    }
}
