// Native work outside attempts (native-ops.js): compact() as `session/compact` and the model
// catalog as `catalog/models`, the MCP tool catalog as `catalog/mcpTools`, and which harnesses
// declare them, against a stand-in bridge connection that records each request.

import assert from "node:assert/strict";
import { test } from "node:test";

import { catalogEntries, compactSession, createModelCatalog, offersModelCatalog } from "../src/native-ops.js";

/** A runtime whose bridge answers each request with `answer(method, params)` (or throws it). */
function fakeRuntime(answer) {
  const requests = [];
  let held = 0;
  const runtime = {
    logger: { warn() {}, debug() {}, info() {} },
    requests,
    get held() {
      return held;
    },
    supervisor: {
      hold: () => (held += 1),
      release: () => (held -= 1),
      connection: async () => ({
        client: {
          request: async (method, params, options) => {
            requests.push({ method, params, options });
            return answer(method, params);
          },
        },
      }),
    },
  };
  return runtime;
}

test("compact() sends session/compact and maps the answer: compacted, skipped, failed", async () => {
  let reply = { compacted: true, nativeSessionId: "thr-1", tokensBefore: 900, tokensAfter: 120 };
  const runtime = fakeRuntime(() => reply);
  const params = { sessionId: "s-1", sessionKey: "k", workspaceDir: "/w", cwd: "/w/sub", model: "gpt-x", trigger: "manual" };
  const done = await compactSession(runtime, "clawbridge-codex", params);
  assert.deepEqual(runtime.requests[0].method, "session/compact");
  assert.deepEqual(runtime.requests[0].params, {
    harnessId: "clawbridge-codex",
    sessionId: "s-1",
    cwd: "/w/sub",
    modelId: "gpt-x",
    trigger: "manual",
  });
  assert.equal(done.ok, true);
  assert.equal(done.compacted, true);
  assert.equal(done.compactionKind, "native-harness");
  assert.equal(done.result.tokensBefore, 900);
  assert.equal(done.result.tokensAfter, 120);
  assert.equal(done.result.details.nativeSessionId, "thr-1");
  assert.equal(runtime.held, 0, "the bridge is released after the request");

  reply = { compacted: false, reason: "session s-1 has no native session bound" };
  const skipped = await compactSession(runtime, "clawbridge-codex", { sessionId: "s-1", currentTokenCount: 42 });
  assert.equal(skipped.ok, true);
  assert.equal(skipped.compacted, false);
  assert.match(skipped.reason, /no native session bound/);
  assert.equal(skipped.result.tokensBefore, 42);

  reply = { compacted: false, nativeSessionId: "thr-1", reason: "the codex compaction did not complete" };
  const failed = await compactSession(runtime, "clawbridge-codex", { sessionId: "s-1" });
  assert.equal(failed.ok, false, "a native compactor that ran and failed is a failure");
  assert.equal(failed.compacted, false);

  const thrown = await compactSession(
    fakeRuntime(() => {
      throw new Error("bridge gone");
    }),
    "clawbridge-codex",
    { sessionId: "s-1" },
  );
  assert.deepEqual(thrown, { ok: false, compacted: false, reason: "bridge gone" });
  assert.equal((await compactSession(runtime, "clawbridge-codex", {})).ok, false, "no session id, no request");
});

test("the model catalog is cached, bounded, and read without I/O", async () => {
  let clock = 1_000;
  let fail = false;
  const runtime = fakeRuntime(() => {
    if (fail) throw new Error("timed out");
    return {
      source: "codex app-server model/list",
      models: [
        { id: "gpt-a", displayName: "GPT A", isDefault: true, hidden: false, input: ["text", "image"], reasoningEfforts: ["low"] },
        { id: "gpt-hidden", hidden: true },
        { id: "gpt-b", hidden: false },
      ],
    };
  });
  const catalog = createModelCatalog(runtime, "clawbridge-codex", { now: () => clock, ttlMs: 100, timeoutMs: 5 });
  assert.equal(catalog.read({ provider: "openai", modelId: "gpt-a" }), undefined, "no evidence before a load");
  const rows = await catalog.load();
  assert.deepEqual(
    rows.map((row) => [row.provider, row.id, row.name, row.nativeRuntime, row.providerOrder, row.reasoning]),
    [
      ["openai", "gpt-a", "GPT A", "clawbridge-codex", 0, true],
      ["openai", "gpt-b", "gpt-b", "clawbridge-codex", 1, false],
    ],
  );
  assert.deepEqual(rows[0].input, ["text", "image"]);
  assert.equal(runtime.requests[0].method, "catalog/models");
  assert.deepEqual(runtime.requests[0].params, { harnessId: "clawbridge-codex" });
  assert.equal(runtime.requests[0].options.timeoutMs, 5);
  await catalog.load();
  assert.equal(runtime.requests.length, 1, "reused within the TTL");
  assert.deepEqual(catalog.read({ provider: "openai", modelId: "gpt-a" }), { accountType: "native" });
  assert.equal(catalog.read({ provider: "openai", modelId: "gpt-hidden" }), undefined);
  assert.equal(catalog.read({ provider: "anthropic", modelId: "gpt-a" }), undefined);

  clock += 200;
  assert.equal(catalog.read({ provider: "openai", modelId: "gpt-a" }), undefined, "stale evidence is none");
  fail = true;
  const kept = await catalog.load();
  assert.equal(kept.length, 2, "a failed refresh keeps the last list, and never throws");
  assert.equal(runtime.requests.length, 2);
  assert.equal(runtime.held, 0);

  assert.deepEqual(await createModelCatalog(runtime, "clawbridge-codex", { now: () => clock }).load(), []);
  assert.equal(offersModelCatalog("clawbridge-codex"), true);
  assert.equal(offersModelCatalog("clawbridge-claude"), true);
  assert.equal(offersModelCatalog("clawbridge-demo"), false);
  assert.deepEqual(catalogEntries("clawbridge-demo", { models: [{ id: "x" }] }), []);
  // Claude Code's models (its initialize answer) are listed under anthropic.
  const claude = catalogEntries("clawbridge-claude", {
    models: [{ id: "claude-opus-5-5", displayName: "Opus", isDefault: true, reasoningEfforts: ["low", "high"] }],
  });
  assert.deepEqual(
    claude.map((row) => [row.provider, row.id, row.name, row.nativeRuntime, row.reasoning, row.input]),
    [["anthropic", "claude-opus-5-5", "Opus", "clawbridge-claude", true, undefined]],
  );
  const claudeRuntime = {
    logger: { debug() {}, warn() {} },
    supervisor: {
      connection: async () => ({ client: { request: async () => ({ models: [{ id: "claude-opus-5-5" }], source: "claude initialize models" }) } }),
      hold() {},
      release() {},
    },
  };
  const claudeCatalog = createModelCatalog(claudeRuntime, "clawbridge-claude");
  await claudeCatalog.load();
  assert.deepEqual(claudeCatalog.read({ provider: "anthropic", modelId: "claude-opus-5-5" }), { accountType: "native" });
  assert.equal(claudeCatalog.read({ provider: "openai", modelId: "claude-opus-5-5" }), undefined);
});

test("the user's mcp.servers become Codex mcp_servers entries for the attempt, session overrides applied", async () => {
  const { attemptMcpServers, projectServer } = await import("../src/mcp-servers.js");
  const config = {
    mcp: {
      servers: {
        probe: { command: "node", args: ["probe.mjs"], env: { TOKEN: "t", N: 1 }, codex: { defaultToolsApprovalMode: "approve" } },
        web: { url: "https://mcp.example/mcp", headers: { Authorization: "Bearer ${WEB_TOKEN}", "X-Team": "${TEAM}", "X-Static": "a" }, requestTimeoutMs: 5000 },
        off: { command: "off", enabled: false },
        forced: { command: "forced", enabled: false },
        denied: { command: "denied" },
        nothing: { transport: "stdio" },
      },
    },
  };
  const bundleCalls = [];
  const runtime = {
    logger: { warn() {} },
    options: {
      sdk: {
        loadCodexBundleMcpThreadConfig: async (p) => {
          bundleCalls.push(p);
          return { configPatch: { mcp_servers: { bundled: { command: "bundled" } } }, diagnostics: [] };
        },
      },
    },
  };
  const params = {
    workspaceDir: "/w",
    agentId: "main",
    config,
    toolOverrides: { mcpServers: { forced: true, denied: false } },
  };
  const servers = await attemptMcpServers(runtime, "clawbridge-codex", params);
  assert.deepEqual(Object.keys(servers).sort(), ["bundled", "forced", "probe", "web"]);
  assert.deepEqual(servers.probe, { command: "node", args: ["probe.mjs"], env: { TOKEN: "t" }, default_tools_approval_mode: "approve" });
  assert.deepEqual(servers.web, {
    url: "https://mcp.example/mcp",
    tool_timeout_sec: 5,
    bearer_token_env_var: "WEB_TOKEN",
    http_headers: { "X-Static": "a" },
    env_http_headers: { "X-Team": "TEAM" },
  });
  assert.equal(bundleCalls[0].cfg, config);
  assert.equal(bundleCalls[0].workspaceDir, "/w");
  assert.equal(projectServer({ transport: "stdio" }), undefined);
  assert.deepEqual(await attemptMcpServers(runtime, "clawbridge-claude", params), servers, "Claude Code gets the same table");
  assert.equal(await attemptMcpServers(runtime, "clawbridge-demo", params), undefined, "the demo takes none");
  const noSdk = { logger: { warn() {} }, options: {} };
  assert.deepEqual(Object.keys(await attemptMcpServers(noSdk, "clawbridge-codex", params)).sort(), ["forced", "probe", "web"]);
  const failing = { logger: { warn() {} }, options: { sdk: { loadCodexBundleMcpThreadConfig: async () => { throw new Error("x"); } } } };
  const kept = await attemptMcpServers(failing, "clawbridge-codex", params);
  assert.deepEqual(Object.keys(kept).sort(), ["forced", "probe", "web"], "a failed bundle projection never throws");
  assert.equal(await attemptMcpServers(noSdk, "clawbridge-codex", { config: {} }), undefined, "none configured");
});

test("loadMcpToolCatalog asks catalog/mcpTools for the session and maps the native servers to an McpToolCatalog", async () => {
  const { createMcpToolCatalog, mcpToolCatalog } = await import("../src/native-ops.js");
  let clock = 5_000;
  let reply = {
    nativeSessionId: "thr-1",
    servers: [
      { name: "probe", status: "connected", tools: [{ name: "lookup", description: "Looks up.", inputSchema: { type: "object" } }] },
      { name: "broken.one", status: "failed", error: "spawn failed", tools: [] },
      { name: "other", tools: [{ name: "x" }] },
    ],
  };
  const runtime = fakeRuntime(() => reply);
  const project = async (_runtime, _id, p) => ({ probe: { command: "node" }, seen: { cwd: p.workspaceDir } });
  const load = createMcpToolCatalog(runtime, "clawbridge-codex", project, { now: () => clock, ttlMs: 100 });
  const catalog = await load({ sessionId: "s-1", workspaceDir: "/w", config: {}, mcpServerNames: ["probe", "broken.one"] });
  assert.equal(runtime.requests[0].method, "catalog/mcpTools");
  assert.deepEqual(runtime.requests[0].params, {
    harnessId: "clawbridge-codex",
    sessionId: "s-1",
    cwd: "/w",
    mcpServers: { probe: { command: "node" }, seen: { cwd: "/w" } },
  });
  assert.deepEqual(Object.keys(catalog.servers), ["probe", "broken.one"], "only the servers core asked about");
  assert.equal(catalog.servers["broken.one"].safeServerName, "broken_one");
  assert.equal(catalog.servers.probe.toolCount, 1);
  assert.deepEqual(catalog.tools, [
    {
      serverName: "probe",
      safeServerName: "probe",
      toolName: "lookup",
      description: "Looks up.",
      inputSchema: { type: "object" },
      fallbackDescription: "lookup (MCP server probe)",
    },
  ]);
  assert.equal(catalog.diagnostics[0].message, "spawn failed");
  assert.equal(catalog.generatedAt, 5_000);
  await load({ sessionId: "s-1", workspaceDir: "/w" });
  assert.equal(runtime.requests.length, 1, "cached per session");
  clock += 200;
  reply = { servers: [], reason: "session s-1 has no native session bound" };
  assert.equal(await load({ sessionId: "s-1", workspaceDir: "/w" }), undefined, "no binding, no catalog");
  assert.equal(await load({}), undefined);
  assert.equal(mcpToolCatalog({ servers: [{ name: "p", tools: [] }] }, [], 1), undefined, "no native session, no catalog");
  const failing = createMcpToolCatalog(fakeRuntime(() => { throw new Error("gone"); }), "clawbridge-codex", project);
  assert.equal(await failing({ sessionId: "s-2" }), undefined, "never throws");
});

test("the native runtime's own compactions are counted into compactionCount", async () => {
  const { AttemptFacts, observeEvent } = await import("../src/facts.js");
  const { toAttemptResult } = await import("../src/result.js");
  const facts = new AttemptFacts(undefined);
  observeEvent(facts, { type: "contextCompacted", itemId: "cc-1" });
  observeEvent(facts, { type: "contextCompacted", itemId: "cc-2" });
  assert.equal(facts.compactions, 2);
  const response = { terminal: { kind: "ok" }, assistantTexts: ["hi"], replay: {}, itemLifecycle: {} };
  const result = toAttemptResult(response, { params: { sessionId: "s" }, compactions: facts.compactions });
  assert.equal(result.compactionCount, 2);
  assert.equal(toAttemptResult(response, { params: { sessionId: "s" }, compactions: 0 }).compactionCount, undefined);
});

test("Codex and Claude Code declare the model and MCP tool catalogs; the demo and ACP do not", async () => {
  const { createHarness } = await import("../src/harness.js");
  const runtime = fakeRuntime(() => ({ models: [], source: "x" }));
  runtime.options = { config: { providerIds: {}, auth: {} } };
  runtime.supervisor.harnessInfo = () => undefined;
  for (const id of ["clawbridge-codex", "clawbridge-claude"]) {
    const harness = createHarness(runtime, id);
    assert.equal(typeof harness.loadModelCatalog, "function", id);
    assert.equal(typeof harness.readModelCatalogReadiness, "function", id);
    assert.equal(typeof harness.loadMcpToolCatalog, "function", id);
  }
  for (const id of ["clawbridge-demo", "clawbridge-acp"]) {
    const harness = createHarness(runtime, id);
    assert.equal(harness.loadModelCatalog, undefined, id);
    assert.equal(harness.readModelCatalogReadiness, undefined, id);
    assert.equal(harness.loadMcpToolCatalog, undefined, id);
  }
});

/** A transcript store standing in for the SDK's: appends by `eventId` once, records publishes. */
function fakeTranscript() {
  const rows = [];
  const published = [];
  return {
    rows,
    published,
    appendTranscriptMessage: async (params) => {
      if (rows.some((r) => r.eventId === params.eventId)) return { appended: false, message: params.message };
      rows.push(params);
      return { appended: true, message: params.message, messageId: `m-${rows.length}` };
    },
    sdk: { publishSessionTranscriptUpdateByIdentity: async (params) => published.push(params) },
  };
}

test("a compaction leaves one openclaw.context-compaction transcript entry, once per native compaction", async () => {
  const store = fakeTranscript();
  const reply = { compacted: true, nativeSessionId: "claude-s", tokensBefore: 120, tokensAfter: 2532, itemId: "cb-1" };
  const runtime = { ...fakeRuntime(() => reply), options: store };
  runtime.supervisor = fakeRuntime(() => reply).supervisor;
  const params = {
    sessionId: "s-1",
    sessionKey: "agent:main:explicit:s-1",
    sessionTarget: { agentId: "main", sessionId: "s-1", sessionKey: "agent:main:explicit:s-1", storePath: "/store" },
    workspaceDir: "/w",
    trigger: "manual",
  };
  const done = await compactSession(runtime, "clawbridge-claude", params);
  assert.equal(done.compacted, true);
  assert.equal(done.result.tokensAfter, 2532);
  assert.equal(store.rows.length, 1, "one entry");
  const row = store.rows[0];
  assert.equal(row.sessionId, "s-1");
  assert.equal(row.sessionKey, "agent:main:explicit:s-1");
  assert.equal(row.storePath, "/store");
  assert.equal(row.message.role, "custom");
  assert.equal(row.message.customType, "openclaw.context-compaction");
  assert.equal(row.message.excludeFromContext, true, "no model context");
  assert.equal(row.message.display, true);
  assert.deepEqual(row.message.details, {
    kind: "context_compaction",
    backend: "clawbridge-claude",
    trigger: "manual",
    itemId: "cb-1",
    nativeSessionId: "claude-s",
    tokensBefore: 120,
    tokensAfter: 2532,
  });
  assert.equal(row.eventId, "clawbridge-context-compaction:clawbridge-claude:s-1:cb-1");
  assert.equal(store.published.length, 1, "the update is published once");
  // The same compaction answered again (a retried request): found, not written twice.
  await compactSession(runtime, "clawbridge-claude", params);
  assert.equal(store.rows.length, 1, "idempotent");
  assert.equal(store.published.length, 1);
  // Nothing compacted, nothing written.
  const skipped = { ...fakeRuntime(() => ({ compacted: false, reason: "no binding" })), options: store };
  await compactSession(skipped, "clawbridge-claude", { ...params, sessionId: "s-2" });
  assert.equal(store.rows.length, 1);
});

test("a compaction entry is no conversation: the projected history skips it", async () => {
  const { historyOf } = await import("../src/history.js");
  const { compactionMessage } = await import("../src/compaction-entry.js");
  const entry = compactionMessage({ harnessId: "clawbridge-codex", sessionId: "s", itemId: "cc-1", trigger: "manual" }, 1);
  const rows = [
    { message: { role: "user", content: "hi" } },
    { message: { role: "assistant", content: [{ type: "text", text: "hello" }] }, idempotencyKey: "clawbridge:run-1:assistant:0" },
    { message: entry, idempotencyKey: entry.idempotencyKey },
  ];
  const history = historyOf(rows);
  assert.deepEqual(history.entries.map((e) => e.role), ["user", "assistant"], "the bound attempt's row stays the last");
});

test("the native runtime's own compaction reports the compacted size as compactionTokensAfter", async () => {
  const { AttemptFacts, observeEvent } = await import("../src/facts.js");
  const { toAttemptResult } = await import("../src/result.js");
  const facts = new AttemptFacts(undefined);
  observeEvent(facts, { type: "contextCompacted", itemId: "cb-1", tokensBefore: 190008, tokensAfter: 2597 });
  const response = { terminal: { kind: "ok" }, assistantTexts: ["hi"], replay: {}, itemLifecycle: {} };
  const result = toAttemptResult(response, {
    params: { sessionId: "s" },
    compactions: facts.compactions,
    compactionTokensAfter: facts.compactionTokensAfter,
  });
  assert.equal(result.compactionCount, 1);
  assert.equal(result.compactionTokensAfter, 2597);
  // Codex's item carries no size: none is reported.
  const codex = new AttemptFacts(undefined);
  observeEvent(codex, { type: "contextCompacted", itemId: "cc-1" });
  const plain = toAttemptResult(response, { params: { sessionId: "s" }, compactions: codex.compactions, compactionTokensAfter: codex.compactionTokensAfter });
  assert.equal(plain.compactionTokensAfter, undefined);
});

test("a chat command core answered itself (/compact and its reply) is no conversation in the projected history", async () => {
  const { historyOf } = await import("../src/history.js");
  const rows = [
    { message: { role: "user", content: "hi" } },
    { message: { role: "assistant", content: [{ type: "text", text: "hello" }] }, idempotencyKey: "clawbridge:run-1:assistant:0" },
    { message: { role: "user", content: "/compact", idempotencyKey: "compact-1:user" } },
    {
      message: {
        role: "assistant",
        provider: "openclaw",
        model: "gateway-injected",
        content: [{ type: "text", text: "⚙️ Compacted (120 → 2.6k)" }],
        idempotencyKey: "compact-1",
      },
    },
    { message: { role: "user", content: "next question" } },
  ];
  const history = historyOf(rows);
  assert.deepEqual(history.entries.map((e) => e.text), ["hi", "hello"], "the bound attempt's row stays the last");
  // An ordinary assistant row still counts, and so does an injected one that answers no command.
  const other = historyOf([...rows.slice(0, 2), { message: { role: "assistant", content: [{ type: "text", text: "embedded" }] } }]);
  assert.equal(other.entries.length, 3);
  const injected = historyOf([...rows.slice(0, 2), { message: { ...rows[3].message, idempotencyKey: "other" } }]);
  assert.equal(injected.entries.length, 3);
});
