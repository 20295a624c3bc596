//! Claude Code's native work outside attempts (docs/peers/claude.md#the-model-set,
//! docs/peers/claude.md#mcp_status, docs/peers/claude.md#compaction): the model set its
//! `initialize` answer offers, the MCP servers its `mcp_status` control request lists (each from a
//! CLI of its own that is sent no user line, so no model is asked and no session file is written),
//! and `/compact` in a session's bound Claude session.

use std::sync::Arc;
use std::time::Duration;

use clawbridge_bridge::attempt::SessionHooks;
use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools, NoObserver};
use clawbridge_bridge::backend::{BackendError, OpenSettings};
use clawbridge_bridge::events::Event;
use clawbridge_bridge::native_ops::{COMPACT_LIMIT, Compacted, NativeMcpServer, NativeMcpTool, NativeModel, NativeOps};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::backend::ClaudeBackend;
use super::session::{ClaudeError, ClaudeSession};

/// The slash command Claude Code compacts its session on, sent as the user line of a turn.
const COMPACT_COMMAND: &str = "/compact";

/// Hooks for a CLI that runs no tool: every approval denied, no host tools, nothing observed.
fn inert_hooks() -> SessionHooks {
    SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Deny { message: None })),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(NoObserver),
    }
}

/// The `initialize` answer's `models` as catalog models: one per model (`resolvedModel`, else the
/// picker's `value`), in the CLI's order, the one its `default` choice resolves to marked default.
pub fn models_of(models: &Value) -> Vec<NativeModel> {
    let text =
        |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let entries = models.as_array().map(Vec::as_slice).unwrap_or_default();
    let default =
        entries.iter().find(|e| text(e, "value").as_deref() == Some("default")).and_then(|e| text(e, "resolvedModel"));
    let mut out: Vec<NativeModel> = Vec::new();
    for entry in entries {
        if text(entry, "value").as_deref() == Some("default") {
            continue;
        }
        let Some(id) = text(entry, "resolvedModel").or_else(|| text(entry, "value")) else { continue };
        if out.iter().any(|m| m.id == id) {
            continue;
        }
        let efforts = entry.get("supportedEffortLevels").and_then(Value::as_array).into_iter().flatten();
        out.push(NativeModel {
            is_default: default.as_deref() == Some(id.as_str()),
            display_name: text(entry, "displayName"),
            description: text(entry, "description"),
            reasoning_efforts: efforts.filter_map(Value::as_str).map(str::to_owned).collect(),
            id,
            ..NativeModel::default()
        });
    }
    out
}

/// The `mcp_status` answer's `mcpServers` as catalog servers: name, status, error and tools (their
/// names and, when given, descriptions and input schemas). The entries' `config` is never read: it
/// holds the servers' headers with their variables expanded.
pub fn mcp_servers_of(answer: &Value) -> Vec<NativeMcpServer> {
    let text =
        |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let servers = answer.get("mcpServers").and_then(Value::as_array).into_iter().flatten();
    servers
        .filter_map(|server| {
            let name = text(server, "name")?;
            let tools = server.get("tools").and_then(Value::as_array).into_iter().flatten();
            let tools = tools
                .filter_map(|tool| {
                    Some(NativeMcpTool {
                        name: text(tool, "name")?,
                        title: text(tool, "title"),
                        description: text(tool, "description"),
                        input_schema: tool.get("inputSchema").filter(|s| s.is_object()).cloned().unwrap_or(Value::Null),
                    })
                })
                .collect();
            Some(NativeMcpServer { name, status: text(server, "status"), error: text(server, "error"), tools })
        })
        .collect()
}

/// How long the servers of a new CLI may stay `pending` (still connecting) before what they are
/// then is the answer; inside `catalog/mcpTools`' own limit.
const MCP_SETTLE_LIMIT: Duration = Duration::from_secs(20);
/// How often `mcp_status` is asked again while a server is `pending`.
const MCP_SETTLE_POLL: Duration = Duration::from_millis(200);

/// `mcp_status` once no server is `pending` any more (2.1.328 answers `initialize` before its
/// servers have connected, and a pending server lists no tools yet), or at [`MCP_SETTLE_LIMIT`].
async fn settled_mcp_status(session: &mut ClaudeSession) -> Result<Vec<NativeMcpServer>, ClaudeError> {
    let deadline = tokio::time::Instant::now() + MCP_SETTLE_LIMIT;
    loop {
        let servers = session.mcp_status().await?;
        let pending = servers.iter().any(|server| server.status.as_deref() == Some("pending"));
        if !pending || tokio::time::Instant::now() >= deadline {
            return Ok(servers);
        }
        tokio::time::sleep(MCP_SETTLE_POLL).await;
    }
}

impl ClaudeBackend {
    /// A CLI of its own under `settings`, handshake done, no turn; with `no_mcp`, it starts no MCP
    /// server at all (`--strict-mcp-config` and none of the user's).
    async fn own_cli(&self, settings: &OpenSettings, no_mcp: bool) -> Result<ClaudeSession, BackendError> {
        let (mut config, _) = self.config(settings)?;
        config.resume = None;
        if no_mcp {
            config.mcp_servers.clear();
            config.strict_mcp_config = true;
        }
        ClaudeSession::connect(config, inert_hooks()).await.map_err(|error| {
            let retryable = error.is_retryable();
            BackendError::Start { source: Box::new(error), retryable }
        })
    }
}

/// A failure of the CLI while compacting, as the backend reports it.
fn conversation(error: ClaudeError) -> BackendError {
    BackendError::Conversation { source: Box::new(error) }
}

impl ClaudeBackend {
    /// Resumes `native_id` in a CLI of its own and runs `/compact` as its one turn, within
    /// [`COMPACT_LIMIT`]: the turn's `compact_boundary` (a `ContextCompacted` event) is the
    /// compaction and carries its sizes. A parked CLI of the session is stopped first: it holds the
    /// uncompacted conversation in memory, and the next attempt must resume the compacted one.
    async fn compact_session(&self, mut settings: OpenSettings, native_id: String) -> Result<Compacted, BackendError> {
        if !settings.session_key.is_empty() && self.discard_warm(&settings.session_key) {
            tracing::info!(session = %settings.session_key, "stopped the parked claude process before compacting");
        }
        settings.resume = Some(native_id.clone());
        settings.ephemeral = false;
        let (mut config, _) = self.config(&settings)?;
        // A summary needs no MCP server: none of the user's Claude-configured ones is started.
        config.strict_mcp_config = true;
        let mut session = ClaudeSession::connect(config, inert_hooks()).await.map_err(|error| {
            let retryable = error.is_retryable();
            BackendError::Start { source: Box::new(error), retryable }
        })?;
        // A session whose file is gone started fresh: compacting it compacts nothing.
        if let Some(why) = session.resume_failure().map(ToString::to_string) {
            session.shutdown().await;
            return Err(conversation(ClaudeError::Compaction(format!(
                "claude session {native_id} cannot be resumed: {why}"
            ))));
        }
        let mut compacted: Option<Compacted> = None;
        let mut sink = |event: &Event| {
            if let Event::ContextCompacted { item_id, tokens_before, tokens_after } = event {
                compacted = Some(Compacted {
                    tokens_before: *tokens_before,
                    tokens_after: *tokens_after,
                    item_id: (!item_id.is_empty()).then(|| item_id.clone()),
                });
            }
        };
        let cancel = CancellationToken::new();
        let turn = tokio::time::timeout(COMPACT_LIMIT, session.run_turn(COMPACT_COMMAND, &mut sink, &cancel)).await;
        session.shutdown().await;
        let result = match turn {
            Err(_) => {
                let why = format!("/compact did not end within {COMPACT_LIMIT:?}");
                return Err(conversation(ClaudeError::Compaction(why)));
            }
            Ok(Err(error)) => return Err(conversation(error)),
            Ok(Ok(result)) => result,
        };
        compacted.ok_or_else(|| {
            let answered = result.assistant_texts.join(" ");
            let message = result.terminal.message.clone().unwrap_or_default();
            let why = match (answered.trim(), message.trim()) {
                ("", "") => "the turn ended without a compact_boundary".to_string(),
                ("", said) | (said, _) => format!("the turn ended without a compact_boundary: {said}"),
            };
            conversation(ClaudeError::Compaction(why))
        })
    }
}

impl NativeOps for ClaudeBackend {
    fn list_models(&self, settings: OpenSettings) -> BoxFuture<'_, Result<(Vec<NativeModel>, String), BackendError>> {
        Box::pin(async move {
            let session = self.own_cli(&settings, true).await?;
            let models = session.models().to_vec();
            session.shutdown().await;
            Ok((models, "claude initialize models".to_string()))
        })
    }

    fn compact(&self, settings: OpenSettings, native_id: String) -> BoxFuture<'_, Result<Compacted, BackendError>> {
        Box::pin(clawbridge_bridge::native_ops::within_compact_limit(self.compact_session(settings, native_id)))
    }

    fn list_mcp_tools(
        &self,
        settings: OpenSettings,
        _native_id: String,
    ) -> BoxFuture<'_, Result<Vec<NativeMcpServer>, BackendError>> {
        Box::pin(async move {
            let mut session = self.own_cli(&settings, false).await?;
            let listed = settled_mcp_status(&mut session).await;
            session.shutdown().await;
            listed.map_err(|error| BackendError::Conversation { source: Box::new(error) })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_initialize_models_become_catalog_models_once_each() {
        // As CLI 2.1.328 answers (trimmed).
        let models = json!([
            {"value": "default", "resolvedModel": "claude-opus-5-5", "displayName": "Default (recommended)"},
            {"value": "opus", "resolvedModel": "claude-opus-5-5", "displayName": "Opus", "description": "Opus 5.5",
             "supportedEffortLevels": ["low", "high"]},
            {"value": "haiku", "resolvedModel": "claude-haiku-5-5", "displayName": "Haiku"},
            {"value": "custom"},
            {"displayName": "no id"},
            7
        ]);
        let listed = models_of(&models);
        let ids: Vec<_> = listed.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["claude-opus-5-5", "claude-haiku-5-5", "custom"]);
        assert!(listed[0].is_default && !listed[1].is_default);
        assert_eq!(listed[0].display_name.as_deref(), Some("Opus"));
        assert_eq!(listed[0].reasoning_efforts, ["low", "high"]);
        assert!(models_of(&json!({"not": "a list"})).is_empty());
    }

    #[test]
    fn the_mcp_status_answer_becomes_catalog_servers_without_their_config() {
        let answer = json!({"mcpServers": [
            {"name": "probe", "status": "connected", "config": {"headers": {"Authorization": "Bearer sk-x"}},
             "tools": [{"name": "lookup", "annotations": {"readOnly": true}}, {"nameless": true}]},
            {"name": "web", "status": "failed", "error": "ECONNREFUSED"},
            {"status": "connected"}
        ]});
        let servers = mcp_servers_of(&answer);
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "probe");
        assert_eq!(servers[0].tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["lookup"]);
        assert_eq!(servers[1].error.as_deref(), Some("ECONNREFUSED"));
        assert!(!serde_json::to_string(&servers).unwrap().contains("sk-x"));
    }
}
