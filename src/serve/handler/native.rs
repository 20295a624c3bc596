//! `catalog/models`, `catalog/mcpTools` and `session/compact` (protocol version 2): native work outside attempts,
//! through the backend's [`NativeOps`](clawbridge_bridge::native_ops::NativeOps).

use std::sync::Arc;

use clawbridge_bridge::backend::OpenSettings;
use clawbridge_bridge::native_ops::CATALOG_LIMIT;
use clawbridge_bridge::supervisor::error_chain;
use clawbridge_protocol::host::errors;
use clawbridge_protocol::host::{
    CatalogMcpToolsParams, CatalogMcpToolsResponse, CatalogModelsParams, CatalogModelsResponse, SessionCompactParams,
    SessionCompactResponse,
};
use clawbridge_protocol::jsonrpc::codes;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::super::harness::Harness;
use super::{Deregister, HandlerError, Running, Server, encode, reply};

/// Settings for native work outside an attempt: the harness's program, a working directory, a
/// model, and the server's process registry; nothing of an attempt (no tools, no person).
fn plain_settings(harness: &Harness, server: &Server, cwd: Option<&str>, model: Option<&str>) -> OpenSettings {
    OpenSettings {
        program: harness.program.clone(),
        cwd: cwd.filter(|c| !c.is_empty()).map(Into::into),
        model: model.filter(|m| !m.is_empty()).map(str::to_string),
        registry: server.registry.clone(),
        ..OpenSettings::default()
    }
}

impl Server {
    /// The available harness named `id`, or the error `attempt/run` gives for it.
    fn available_harness(&self, id: &str) -> Result<Harness, HandlerError> {
        let Some(harness) = self.catalog.get(id).cloned() else {
            return Err(reply(errors::UNKNOWN_HARNESS, format!("no harness named {id}")));
        };
        if !harness.info.available {
            let why = harness.info.unavailable_reason.clone().unwrap_or_else(|| "its backend is unavailable".into());
            return Err(reply(errors::HARNESS_UNAVAILABLE, format!("{} is unavailable: {why}", harness.info.id)));
        }
        Ok(harness)
    }

    /// `catalog/models`: the native runtime's models, listed in a process of its own (never a
    /// session's), within [`CATALOG_LIMIT`].
    pub(super) fn catalog_models(
        self: &Arc<Self>,
        params: CatalogModelsParams,
    ) -> Result<BoxFuture<'static, Result<Value, HandlerError>>, HandlerError> {
        let harness = self.available_harness(&params.harness_id)?;
        let server = self.clone();
        Ok(Box::pin(async move {
            let Some(ops) = harness.backend.native_ops() else {
                let source = format!("{} offers no model catalog", harness.info.id);
                return encode(CatalogModelsResponse { models: Vec::new(), source });
            };
            let settings = plain_settings(&harness, &server, None, None);
            match tokio::time::timeout(CATALOG_LIMIT, ops.list_models(settings)).await {
                Ok(Ok((models, source))) => encode(CatalogModelsResponse { models, source }),
                // The native side's failure, not the bridge's: the harness cannot answer now.
                Ok(Err(error)) => Err(reply(
                    errors::HARNESS_UNAVAILABLE,
                    format!("{} could not list its models: {}", harness.info.id, error_chain(&error)),
                )),
                Err(_) => Err(reply(
                    errors::HARNESS_UNAVAILABLE,
                    format!("{} did not list its models within {CATALOG_LIMIT:?}", harness.info.id),
                )),
            }
        }))
    }

    /// `session/compact`: the native compactor on the session's bound thread. Admitted like an
    /// attempt of the session (so an attempt or a reset of it written after this waits for
    /// nothing and is refused as busy, and `shutdown` cancels it), under the id `compact:<session>`.
    pub(super) fn compact_session(
        self: &Arc<Self>,
        params: SessionCompactParams,
    ) -> Result<BoxFuture<'static, Result<Value, HandlerError>>, HandlerError> {
        let harness = self.available_harness(&params.harness_id)?;
        if params.session_id.is_empty() {
            return Err(reply(codes::INVALID_PARAMS, "session/compact needs a sessionId".into()));
        }
        let not_compacted =
            |reason: String| encode(SessionCompactResponse { reason: Some(reason), ..Default::default() });
        let Some(native_id) = self.bindings.native_id(&params.session_id) else {
            return not_compacted(format!("session {} has no native session bound", params.session_id))
                .map(|value| Box::pin(std::future::ready(Ok(value))) as BoxFuture<'static, _>);
        };
        let id = format!("compact:{}", params.session_id);
        let cancel = CancellationToken::new();
        {
            let mut state = self.lock();
            if state.shutting_down {
                return Err(reply(errors::SHUTTING_DOWN, "the bridge is shutting down".into()));
            }
            if let Some((running, _)) = state.attempts.iter().find(|(_, r)| r.session_id == params.session_id) {
                return Err(reply(errors::SESSION_BUSY, format!("session {} runs {running}", params.session_id)));
            }
            state.attempts.insert(
                id.clone(),
                Running {
                    session_id: params.session_id.clone(),
                    cancel: cancel.clone(),
                    steer: Arc::default(),
                    input_bytes: 0,
                },
            );
        }
        let guard = Deregister { server: self.clone(), attempt_id: id };
        let server = self.clone();
        Ok(Box::pin(async move {
            let _guard = guard;
            let Some(ops) = harness.backend.native_ops().filter(|ops| ops.compacts()) else {
                return not_compacted(format!("{} has no native compactor", harness.info.id));
            };
            let mut settings = plain_settings(&harness, &server, params.cwd.as_deref(), params.model_id.as_deref());
            // The host session, so a backend that keeps a warm process per session can retire it.
            settings.session_key.clone_from(&params.session_id);
            tracing::info!(session = %params.session_id, thread = %native_id, trigger = ?params.trigger, "compacting");
            let outcome = tokio::select! {
                outcome = ops.compact(settings, native_id.clone()) => outcome,
                () = cancel.cancelled() => return not_compacted("cancelled: the bridge is shutting down".into()),
            };
            match outcome {
                Ok(done) => encode(SessionCompactResponse {
                    compacted: true,
                    reason: None,
                    native_session_id: Some(native_id),
                    tokens_before: done.tokens_before,
                    tokens_after: done.tokens_after,
                    item_id: done.item_id,
                }),
                Err(error) => {
                    let why = error_chain(&error);
                    tracing::warn!(session = %params.session_id, %why, "native compaction failed");
                    encode(SessionCompactResponse {
                        reason: Some(why),
                        native_session_id: Some(native_id),
                        ..Default::default()
                    })
                }
            }
        }))
    }

    /// `catalog/mcpTools`: the MCP servers and tools of the session's bound native thread, listed
    /// by a native process of its own within [`CATALOG_LIMIT`]. Never waits for an attempt: a busy
    /// session answers at once with no servers.
    pub(super) fn catalog_mcp_tools(
        self: &Arc<Self>,
        params: CatalogMcpToolsParams,
    ) -> Result<BoxFuture<'static, Result<Value, HandlerError>>, HandlerError> {
        let harness = self.available_harness(&params.harness_id)?;
        let nothing = |reason: String| {
            let answer = encode(CatalogMcpToolsResponse { reason: Some(reason), ..Default::default() });
            Ok(Box::pin(std::future::ready(answer)) as BoxFuture<'static, _>)
        };
        if harness.backend.native_ops().is_none() {
            return nothing(format!("{} has no native MCP client", harness.info.id));
        }
        let Some(native_id) = self.bindings.native_id(&params.session_id) else {
            return nothing(format!("session {} has no native session bound", params.session_id));
        };
        if let Some((running, _)) = self.lock().attempts.iter().find(|(_, r)| r.session_id == params.session_id) {
            return nothing(format!("session {} runs {running}", params.session_id));
        }
        let server = self.clone();
        Ok(Box::pin(async move {
            let Some(ops) = harness.backend.native_ops() else {
                return encode(CatalogMcpToolsResponse::default());
            };
            let mut settings = plain_settings(&harness, &server, params.cwd.as_deref(), None);
            settings.mcp_servers = params.mcp_servers;
            match tokio::time::timeout(CATALOG_LIMIT, ops.list_mcp_tools(settings, native_id.clone())).await {
                Ok(Ok(servers)) => {
                    encode(CatalogMcpToolsResponse { native_session_id: Some(native_id), servers, reason: None })
                }
                Ok(Err(error)) => encode(CatalogMcpToolsResponse {
                    native_session_id: Some(native_id),
                    servers: Vec::new(),
                    reason: Some(error_chain(&error)),
                }),
                Err(_) => encode(CatalogMcpToolsResponse {
                    native_session_id: Some(native_id),
                    servers: Vec::new(),
                    reason: Some(format!("the MCP servers were not listed within {CATALOG_LIMIT:?}")),
                }),
            }
        }))
    }
}
