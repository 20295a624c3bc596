//! The user's MCP servers for Claude Code (docs/peers/claude.md#the-users-mcp-servers): the host
//! protocol's `mcpServers` (Codex's `mcp_servers` table shape) become Claude's `--mcp-config`
//! entries, written to a private file (mode 0600, never argv: their env and headers may hold
//! credentials), plus the permission rules their approval mode and tool filters ask for.

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::{Map, Value, json};

/// What the user's servers become for one CLI: its `mcpServers` entries and the permission rules.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpPlan {
    /// Claude `--mcp-config` entries by server name (`{type: "stdio", command, args, env}` or
    /// `{type: "http", url, headers}`).
    pub servers: Map<String, Value>,
    /// `--allowedTools` rules: tools of servers whose approval mode is `approve` (all of them, or
    /// the ones `enabled_tools` names) run without a `can_use_tool` prompt.
    pub allowed: Vec<String>,
    /// `--disallowedTools` rules: the tools `disabled_tools` names.
    pub disallowed: Vec<String>,
    /// What could not be carried over, for the log (never a value, only names and fields).
    pub notes: Vec<String>,
}

/// The Claude side of `servers` (Codex-shaped entries). `reserved` is the host's own SDK server
/// name, which a user's server may not take.
pub fn plan(servers: &BTreeMap<String, Value>, reserved: &str) -> McpPlan {
    let mut plan = McpPlan::default();
    for (name, server) in servers {
        if name == reserved {
            plan.notes.push(format!("server {name:?} is left out: the host's own tools are served under that name"));
            continue;
        }
        if !is_rule_name(name) {
            plan.notes.push(format!(
                "server {name:?} is left out: Claude Code's permission rules take only letters, digits, `_` and `-` in a name"
            ));
            continue;
        }
        let Some(entry) = server.as_object() else {
            plan.notes.push(format!("server {name:?} is left out: its entry is not an object"));
            continue;
        };
        let Some(claude) = entry_for_claude(name, entry, &mut plan.notes) else { continue };
        plan.servers.insert(name.clone(), claude);
        let mut tools = |key: &str| -> Vec<String> {
            let named = entry.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str);
            let (kept, odd): (Vec<&str>, Vec<&str>) = named.partition(|tool| is_rule_name(tool));
            if !odd.is_empty() {
                plan.notes.push(format!(
                    "server {name:?}: {} tool name(s) in `{key}` left out: not a permission rule name",
                    odd.len()
                ));
            }
            kept.into_iter().map(str::to_owned).collect()
        };
        let enabled = tools("enabled_tools");
        let disabled = tools("disabled_tools");
        if entry.get("default_tools_approval_mode").and_then(Value::as_str) == Some("approve") {
            if enabled.is_empty() {
                plan.allowed.push(format!("mcp__{name}__*"));
            } else {
                plan.allowed.extend(enabled.iter().map(|tool| format!("mcp__{name}__{tool}")));
            }
        }
        if !enabled.is_empty() {
            plan.notes.push(format!(
                "server {name:?}: Claude Code has no tool allow-list for a server; its other tools stay visible and ask for approval"
            ));
        }
        plan.disallowed.extend(disabled.iter().map(|tool| format!("mcp__{name}__{tool}")));
        for field in ["startup_timeout_sec", "tool_timeout_sec", "supports_parallel_tool_calls"] {
            if entry.contains_key(field) {
                plan.notes
                    .push(format!("server {name:?}: `{field}` has no per-server Claude Code setting; not applied"));
            }
        }
    }
    plan
}

/// Whether `name` can stand in a `mcp__<server>__<tool>` permission rule as it is: the CLI splits
/// `--allowedTools` / `--disallowedTools` on commas and spaces, so a name with either (or any
/// other character outside MCP's usual name set) could smuggle in a rule for another tool.
fn is_rule_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One Codex-shaped entry as Claude's, or `None` (noted) when it names neither a command nor a URL.
fn entry_for_claude(name: &str, entry: &Map<String, Value>, notes: &mut Vec<String>) -> Option<Value> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    let strings = |key: &str| -> Option<Map<String, Value>> {
        let map: Map<String, Value> = entry
            .get(key)?
            .as_object()?
            .iter()
            .filter(|(_, v)| v.is_string())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!map.is_empty()).then_some(map)
    };
    if let Some(command) = text("command") {
        let mut out = json!({"type": "stdio", "command": command});
        if let Some(args) = entry.get("args").and_then(Value::as_array) {
            out["args"] = Value::Array(args.iter().filter(|a| a.is_string()).cloned().collect());
        }
        if let Some(env) = strings("env") {
            out["env"] = Value::Object(env);
        }
        if text("cwd").is_some() {
            notes.push(format!(
                "server {name:?}: Claude Code 2.1.328 starts a stdio server in the session's directory; its `cwd` is not applied"
            ));
        }
        return Some(out);
    }
    if let Some(url) = text("url") {
        let mut headers = strings("http_headers").unwrap_or_default();
        // Claude expands `${VAR}` in headers from its own environment (checked on 2.1.328).
        for (header, var) in strings("env_http_headers").unwrap_or_default() {
            if let Some(var) = var.as_str() {
                headers.insert(header, Value::String(format!("${{{var}}}")));
            }
        }
        if let Some(var) = text("bearer_token_env_var") {
            headers.insert("Authorization".into(), Value::String(format!("Bearer ${{{var}}}")));
        }
        let mut out = json!({"type": "http", "url": url});
        if !headers.is_empty() {
            out["headers"] = Value::Object(headers);
        }
        return Some(out);
    }
    notes.push(format!("server {name:?} is left out: it names neither a command nor a url"));
    None
}

/// Writes `{"mcpServers": servers}` to a new private file (0600, removed when the handle drops).
pub fn write_config(servers: &Map<String, Value>) -> std::io::Result<tempfile::NamedTempFile> {
    let mut file = tempfile::Builder::new().prefix("clawbridge-mcp-").suffix(".json").tempfile()?;
    let body = json!({"mcpServers": servers});
    file.write_all(body.to_string().as_bytes())?;
    file.flush()?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_shaped_servers_become_claude_entries_and_permission_rules() {
        let mut servers = BTreeMap::new();
        servers.insert(
            "probe".to_string(),
            json!({"command": "node", "args": ["p.mjs"], "env": {"TOKEN": "t"}, "cwd": "/x",
                   "default_tools_approval_mode": "approve", "disabled_tools": ["drop"]}),
        );
        servers.insert(
            "web".to_string(),
            json!({"url": "https://mcp.example/x", "http_headers": {"X-A": "1"}, "env_http_headers": {"X-B": "B_VAR"},
                   "bearer_token_env_var": "TOK", "enabled_tools": ["one"], "default_tools_approval_mode": "approve"}),
        );
        servers.insert("openclaw".to_string(), json!({"command": "evil"}));
        servers.insert("a,Bash".to_string(), json!({"command": "evil", "default_tools_approval_mode": "approve"}));
        servers.insert(
            "sly".to_string(),
            json!({"command": "node", "default_tools_approval_mode": "approve", "enabled_tools": ["x,Bash", "y Bash", "ok"]}),
        );
        servers.insert("empty".to_string(), json!({"args": []}));
        let plan = plan(&servers, "openclaw");
        assert_eq!(
            Value::Object(plan.servers.clone()),
            json!({
                "probe": {"type": "stdio", "command": "node", "args": ["p.mjs"], "env": {"TOKEN": "t"}},
                "sly": {"type": "stdio", "command": "node"},
                "web": {"type": "http", "url": "https://mcp.example/x",
                        "headers": {"X-A": "1", "X-B": "${B_VAR}", "Authorization": "Bearer ${TOK}"}}
            })
        );
        // A name that could split into another rule (`x,Bash`) never reaches the permission flags.
        assert_eq!(plan.allowed, ["mcp__probe__*", "mcp__sly__ok", "mcp__web__one"]);
        assert!(!plan.allowed.iter().chain(&plan.disallowed).any(|rule| rule.contains("Bash")), "{plan:?}");
        assert_eq!(plan.disallowed, vec!["mcp__probe__drop".to_string()]);
        let notes = plan.notes.join("\n");
        assert!(notes.contains("\"openclaw\" is left out") && notes.contains("\"empty\" is left out"), "{notes}");
        assert!(
            notes.contains("\"a,Bash\" is left out") && notes.contains("2 tool name(s) in `enabled_tools`"),
            "{notes}"
        );
        assert!(notes.contains("`cwd` is not applied") && !notes.contains("TOKEN"), "{notes}");
    }

    #[test]
    fn the_config_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let mut servers = Map::new();
        servers.insert("probe".into(), json!({"type": "stdio", "command": "node", "env": {"TOKEN": "t"}}));
        let file = write_config(&servers).unwrap();
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let written: Value = serde_json::from_str(&std::fs::read_to_string(file.path()).unwrap()).unwrap();
        assert_eq!(written["mcpServers"]["probe"]["env"]["TOKEN"], "t");
        let path = file.path().to_path_buf();
        drop(file);
        assert!(!path.exists(), "removed with its handle");
    }
}
