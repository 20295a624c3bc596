// Native work outside attempts (host protocol version 2): the harness's `compact(params)` as
// `session/compact`, and `loadModelCatalog` / `readModelCatalogReadiness` as `catalog/models`,
// cached per harness for a short time so a picker that asks again does not start a native process
// each time, and bounded so a slow native side never holds the host up.

import { recordCompaction } from "./compaction-entry.js";

/** How long a model catalog answer is reused. */
export const CATALOG_TTL_MS = 60_000;
/** How long a `catalog/models` request may take before the cached (or an empty) list is used. */
export const CATALOG_TIMEOUT_MS = 20_000;
/** How long `session/compact` may take: the bridge gives the native compactor 180 s. */
export const COMPACT_TIMEOUT_MS = 200_000;

/** The provider a native model is listed under, per harness: the one whose routes it reproduces. */
const CATALOG_PROVIDERS = Object.freeze({ "clawbridge-codex": "openai", "clawbridge-claude": "anthropic" });

/**
 * The model catalog of harness `id`: `load` asks the bridge (at most once per `CATALOG_TTL_MS`),
 * `read` answers from what the last load saw, with no I/O.
 */
export function createModelCatalog(runtime, id, options = {}) {
  const ttlMs = options.ttlMs ?? CATALOG_TTL_MS;
  const timeoutMs = options.timeoutMs ?? CATALOG_TIMEOUT_MS;
  const now = options.now ?? Date.now;
  /** @type {{ at: number, entries: object[], ids: Set<string> } | undefined} */
  let cached;
  /** @type {Promise<object[]> | undefined} */
  let inflight;

  async function fetchEntries() {
    const { supervisor, logger } = runtime;
    const conn = await supervisor.connection();
    supervisor.hold();
    try {
      const answer = await conn.client.request("catalog/models", { harnessId: id }, { timeoutMs });
      const entries = catalogEntries(id, answer);
      cached = { at: now(), entries, ids: new Set(entries.map((entry) => entry.id)) };
      logger.debug?.(`clawbridge: ${id} lists ${entries.length} native models (${answer?.source ?? "?"})`);
      return entries;
    } finally {
      supervisor.release();
    }
  }

  return {
    /** `loadModelCatalog`: never throws; a failed or slow load keeps the last list (or none). */
    async load() {
      if (cached && now() - cached.at < ttlMs) return cached.entries;
      inflight ??= fetchEntries().finally(() => {
        inflight = undefined;
      });
      try {
        return await inflight;
      } catch (error) {
        runtime.logger.warn?.(`clawbridge: ${id} model catalog unavailable: ${error?.message ?? error}`);
        return cached?.entries ?? [];
      }
    },
    /**
     * `readModelCatalogReadiness`: the native runtime listed this model within the TTL and runs on
     * its own login (`auth: "harness"`); otherwise no evidence (`undefined`).
     */
    read(params) {
      if (!cached || now() - cached.at >= ttlMs) return undefined;
      if (params?.provider !== CATALOG_PROVIDERS[id] || !cached.ids.has(params?.modelId)) return undefined;
      return { accountType: "native" };
    },
  };
}

/** `catalog/models` models as OpenClaw `ModelCatalogEntry` rows owned by harness `id`. */
export function catalogEntries(id, answer) {
  const provider = CATALOG_PROVIDERS[id];
  if (!provider || !Array.isArray(answer?.models)) return [];
  return answer.models
    .filter((model) => typeof model?.id === "string" && model.id && model.hidden !== true)
    .map((model, providerOrder) => {
      const efforts = Array.isArray(model.reasoningEfforts) ? model.reasoningEfforts : [];
      const input = (Array.isArray(model.input) ? model.input : []).filter((kind) =>
        ["text", "image", "audio", "video", "document"].includes(kind),
      );
      return {
        provider,
        id: model.id,
        name: model.displayName || model.id,
        providerOrder,
        nativeRuntime: id,
        reasoning: efforts.length > 0,
        ...(input.length > 0 ? { input } : {}),
        compat: { supportsReasoningEffort: efforts.length > 0, supportedReasoningEfforts: efforts },
      };
    });
}

/** Whether harness `id` has a native model catalog (Codex's `model/list`, Claude Code's `initialize` models). */
export function offersModelCatalog(id) {
  return Object.hasOwn(CATALOG_PROVIDERS, id);
}

/**
 * `compact(params)`: the native compactor on the session's bound thread, its answer in the shape
 * core reads (`EmbeddedAgentCompactResult`). A session without a binding is "skipped", not failed.
 */
export async function compactSession(runtime, id, params) {
  const { supervisor, logger } = runtime;
  if (typeof params?.sessionId !== "string" || !params.sessionId) {
    return { ok: false, compacted: false, reason: "no session id to compact" };
  }
  let conn;
  try {
    conn = await supervisor.connection();
  } catch (error) {
    return { ok: false, compacted: false, reason: `the bridge is not available: ${error?.message ?? error}` };
  }
  const request = { harnessId: id, sessionId: params.sessionId };
  const cwd = params.cwd ?? params.workspaceDir;
  if (typeof cwd === "string" && cwd) request.cwd = cwd;
  if (typeof params.model === "string" && params.model) request.modelId = params.model;
  if (typeof params.trigger === "string") request.trigger = params.trigger;
  supervisor.hold();
  let answer;
  try {
    answer = await conn.client.request("session/compact", request, { timeoutMs: COMPACT_TIMEOUT_MS });
  } catch (error) {
    logger.warn?.(`clawbridge: session/compact failed: ${error?.message ?? error}`);
    return { ok: false, compacted: false, reason: error?.message ?? String(error) };
  } finally {
    supervisor.release();
  }
  const details = {
    backend: id,
    signal: "session/compact",
    ...(answer?.nativeSessionId ? { nativeSessionId: answer.nativeSessionId } : {}),
    ...(params.trigger ? { trigger: params.trigger } : {}),
  };
  const tokensBefore = answer?.tokensBefore ?? params.currentTokenCount ?? 0;
  if (answer?.compacted === true) {
    // Core writes no transcript entry for a harness's compaction: the harness records it.
    await recordCompaction(runtime.options, params, {
      harnessId: id,
      nativeSessionId: answer.nativeSessionId,
      itemId: answer.itemId,
      trigger: params.trigger ?? "manual",
      tokensBefore: answer.tokensBefore,
      tokensAfter: answer.tokensAfter,
      runId: params.runId,
    }, logger);
  }
  // Not compacted with a native session named: the native compactor ran and failed. Without
  // one there was nothing bound to compact, which core reports as skipped.
  const failed = answer?.compacted !== true && Boolean(answer?.nativeSessionId);
  return {
    ok: !failed,
    compacted: answer?.compacted === true,
    ...(answer?.compacted === true ? { compactionKind: /** @type {"native-harness"} */ ("native-harness") } : {}),
    ...(answer?.reason ? { reason: answer.reason } : {}),
    result: {
      summary: "",
      firstKeptEntryId: "",
      tokensBefore,
      ...(typeof answer?.tokensAfter === "number" ? { tokensAfter: answer.tokensAfter } : {}),
      details,
    },
  };
}

/** How long a session's MCP tool catalog is reused. */
export const MCP_CATALOG_TTL_MS = 30_000;

/**
 * `loadMcpToolCatalog(params)` of harness `id`: `catalog/mcpTools` on the session's bound native
 * thread, as an OpenClaw `McpToolCatalog`, cached per session for `MCP_CATALOG_TTL_MS`.
 * `undefined` (core then says the servers are not connected) when the session has no native
 * thread, the native side listed nothing, or the request failed; never throws.
 */
export function createMcpToolCatalog(runtime, id, projectServers, options = {}) {
  const ttlMs = options.ttlMs ?? MCP_CATALOG_TTL_MS;
  const timeoutMs = options.timeoutMs ?? CATALOG_TIMEOUT_MS + 20_000;
  const now = options.now ?? Date.now;
  const cache = new Map();
  return async function loadMcpToolCatalog(params) {
    const sessionId = params?.sessionId;
    if (typeof sessionId !== "string" || !sessionId) return undefined;
    const hit = cache.get(sessionId);
    if (hit && now() - hit.at < ttlMs) return hit.catalog;
    const { supervisor, logger } = runtime;
    try {
      const conn = await supervisor.connection();
      const request = { harnessId: id, sessionId };
      if (typeof params.workspaceDir === "string" && params.workspaceDir) request.cwd = params.workspaceDir;
      const servers = await projectServers(runtime, id, {
        workspaceDir: params.workspaceDir,
        agentId: params.agentId,
        config: params.config,
        toolOverrides: params.toolOverrides,
      });
      if (servers) request.mcpServers = servers;
      supervisor.hold();
      let answer;
      try {
        answer = await conn.client.request("catalog/mcpTools", request, { timeoutMs });
      } finally {
        supervisor.release();
      }
      const catalog = mcpToolCatalog(answer, params.mcpServerNames, now());
      // Said at info: an operator reading why a session's tools show as not connected needs it.
      logger.info?.(
        `clawbridge: ${id} MCP tool catalog of ${sessionId}: ${catalog ? `${catalog.tools.length} tools` : `none (${answer?.reason ?? "no servers"})`}`,
      );
      cache.set(sessionId, { at: now(), catalog });
      return catalog;
    } catch (error) {
      logger.warn?.(`clawbridge: ${id} MCP tool catalog unavailable: ${error?.message ?? error}`);
      return undefined;
    }
  };
}

/** A server name as OpenClaw's tool names may carry it. */
function safeServerName(name) {
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

/**
 * A `catalog/mcpTools` answer as an OpenClaw `McpToolCatalog`, keeping the servers named in
 * `serverNames` (all when none is named); `undefined` without servers.
 */
export function mcpToolCatalog(answer, serverNames, generatedAt) {
  const wanted = Array.isArray(serverNames) && serverNames.length > 0 ? new Set(serverNames) : undefined;
  const listed = (Array.isArray(answer?.servers) ? answer.servers : []).filter(
    (server) => typeof server?.name === "string" && server.name && (!wanted || wanted.has(server.name)),
  );
  if (!answer?.nativeSessionId || listed.length === 0) return undefined;
  const servers = {};
  const tools = [];
  const diagnostics = [];
  for (const server of listed) {
    const safe = safeServerName(server.name);
    const serverTools = (Array.isArray(server.tools) ? server.tools : []).filter((t) => typeof t?.name === "string" && t.name);
    servers[server.name] = {
      serverName: server.name,
      safeServerName: safe,
      launchSummary: `native MCP client (${server.status ?? "status unknown"})`,
      toolCount: serverTools.length,
    };
    if (server.error) {
      diagnostics.push({ serverName: server.name, safeServerName: safe, launchSummary: servers[server.name].launchSummary, message: server.error });
    }
    for (const tool of serverTools) {
      tools.push({
        serverName: server.name,
        safeServerName: safe,
        toolName: tool.name,
        ...(tool.title ? { title: tool.title } : {}),
        ...(tool.description ? { description: tool.description } : {}),
        inputSchema: tool.inputSchema && typeof tool.inputSchema === "object" ? tool.inputSchema : { type: "object", properties: {} },
        fallbackDescription: `${tool.name} (MCP server ${server.name})`,
      });
    }
  }
  return { version: 1, generatedAt, servers, tools, ...(diagnostics.length > 0 ? { diagnostics } : {}) };
}
