// The user's MCP servers for the native runtime: OpenClaw config `mcp.servers` (enabled, not
// switched off by the session's `toolOverrides.mcpServers`), plus the enabled plugin bundles'
// servers as the SDK's `loadCodexBundleMcpThreadConfig` projects them, as Codex's `mcp_servers`
// thread config. The SDK's projection leaves the configured servers out (the official Codex
// harness serves those through OpenClaw's own MCP runtime as host tools); clawbridge hands them to
// the native runtime instead, projected by the same rules (`projectServer`). Sent as `attempt/run`
// `mcpServers` (host protocol version 2); the bridge applies them and keeps only a keyed hash of
// them in the session binding (their env and headers may hold credentials).

/**
 * Harnesses whose native runtime takes the user's MCP servers. The wire shape is Codex's
 * `mcp_servers` table for both; the bridge writes Claude Code's `--mcp-config` from it.
 */
const CODEX_SHAPED = new Set(["clawbridge-codex", "clawbridge-claude"]);

/** Whether harness `id`'s native runtime takes the user's MCP servers. */
export function appliesMcpServers(id) {
  return CODEX_SHAPED.has(id);
}

/**
 * The `mcpServers` of an attempt of harness `id`, or `undefined` when there are none or the harness
 * does not apply them. Never throws: a bundle projection that fails is logged and left out.
 */
export async function attemptMcpServers(runtime, id, params) {
  if (!CODEX_SHAPED.has(id)) return undefined;
  const servers = { ...(await bundleServers(runtime, id, params)), ...configuredServers(params) };
  return Object.keys(servers).length > 0 ? servers : undefined;
}

/** The enabled plugin bundles' servers, projected by the SDK; `{}` without the helper or on failure. */
async function bundleServers(runtime, id, params) {
  const load = runtime.options.sdk?.loadCodexBundleMcpThreadConfig;
  if (typeof load !== "function") return {};
  try {
    const projected = await load({
      workspaceDir: params.workspaceDir,
      ...(params.agentId ? { agentId: params.agentId } : {}),
      cfg: params.config,
      toolsEnabled: true,
      ...(params.disableTools !== undefined ? { disableTools: params.disableTools } : {}),
      ...(Array.isArray(params.toolsAllow) ? { toolsAllow: params.toolsAllow } : {}),
      ...(params.toolOverrides ? { toolOverrides: params.toolOverrides } : {}),
    });
    for (const diagnostic of projected?.diagnostics ?? []) {
      runtime.logger.warn?.(`clawbridge: MCP server config: ${diagnostic?.message ?? JSON.stringify(diagnostic)}`);
    }
    const servers = projected?.configPatch?.mcp_servers;
    return servers && typeof servers === "object" ? servers : {};
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: the bundles' MCP servers could not be projected for ${id}: ${error?.message ?? error}`);
    return {};
  }
}

const APPROVAL_MODES = new Set(["auto", "prompt", "approve"]);

/** `mcp.servers` of the attempt's config, enabled for this session, as Codex `mcp_servers` entries. */
export function configuredServers(params) {
  const servers = params?.config?.mcp?.servers;
  if (!servers || typeof servers !== "object") return {};
  const overrides = params?.toolOverrides?.mcpServers;
  const out = {};
  for (const [name, server] of Object.entries(servers)) {
    if (!server || typeof server !== "object" || Array.isArray(server)) continue;
    const override = overrides && Object.hasOwn(overrides, name) ? overrides[name] : undefined;
    if (override === false || (override !== true && server.enabled === false)) continue;
    const projected = projectServer(server);
    if (projected) out[name] = projected;
  }
  return out;
}

/**
 * One configured server as a Codex `mcp_servers` entry: `command`, `args`, `env`, `cwd` for a
 * stdio server, `url` with `http_headers` (and `${VAR}` placeholders as `env_http_headers` /
 * `bearer_token_env_var`) for a streamable HTTP one; timeouts, tool filters and the Codex approval
 * mode as the SDK projects them. `undefined` for a server that names neither a command nor a URL.
 */
export function projectServer(server) {
  const next = {};
  for (const field of ["command", "cwd", "url"]) if (typeof server[field] === "string" && server[field]) next[field] = server[field];
  if (!next.command && !next.url) return undefined;
  if (Array.isArray(server.args) && server.args.every((arg) => typeof arg === "string")) next.args = [...server.args];
  const env = stringRecord(server.env);
  if (env) next.env = env;
  const seconds = (ms) => (typeof ms === "number" && Number.isFinite(ms) && ms > 0 ? ms / 1000 : undefined);
  if (seconds(server.connectionTimeoutMs)) next.startup_timeout_sec = seconds(server.connectionTimeoutMs);
  if (seconds(server.requestTimeoutMs)) next.tool_timeout_sec = seconds(server.requestTimeoutMs);
  if (typeof server.supportsParallelToolCalls === "boolean") next.supports_parallel_tool_calls = server.supportsParallelToolCalls;
  const filter = server.toolFilter;
  if (filter && typeof filter === "object") {
    const names = (list) => (Array.isArray(list) ? list.filter((n) => typeof n === "string" && n.trim()).map((n) => n.trim()) : []);
    if (names(filter.include).length > 0) next.enabled_tools = names(filter.include);
    if (names(filter.exclude).length > 0) next.disabled_tools = names(filter.exclude);
  }
  const codex = server.codex && typeof server.codex === "object" && !Array.isArray(server.codex) ? server.codex : {};
  const approval = [codex.defaultToolsApprovalMode, codex.default_tools_approval_mode].find((m) => APPROVAL_MODES.has(m));
  if (approval) next.default_tools_approval_mode = approval;
  const headers = stringRecord(server.headers);
  if (headers) {
    const staticHeaders = {};
    const envHeaders = {};
    for (const [header, value] of Object.entries(headers)) {
      const placeholder = /^(Bearer )?\$\{([A-Z0-9_]+)\}$/.exec(value);
      if (!placeholder) staticHeaders[header] = value;
      else if (placeholder[1] && header.toLowerCase() === "authorization") next.bearer_token_env_var = placeholder[2];
      else envHeaders[header] = placeholder[2];
    }
    if (Object.keys(staticHeaders).length > 0) next.http_headers = staticHeaders;
    if (Object.keys(envHeaders).length > 0) next.env_http_headers = envHeaders;
  }
  return next;
}

function stringRecord(value) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
  const entries = Object.entries(value).filter(([, v]) => typeof v === "string");
  return entries.length > 0 ? Object.fromEntries(entries) : undefined;
}
