// Tests that need no bridge: the supports() rule, registration, config, framing, result mapping and
// the host-request handlers on their own.

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { test } from "node:test";

import { resolveConfig } from "../src/config.js";
import { routeAuth } from "../src/route-auth.js";
import { supportsRoute } from "../src/harness.js";
import { appendTranscript, decideApproval, executeTool } from "../src/host-requests.js";
import { createPlugin } from "../src/plugin.js";
import { toAttemptResult } from "../src/result.js";
import { LineRpcClient, RpcReplyError } from "../src/rpc-client.js";
import { fakeHost, fakeTranscript, recordingLogger } from "./support/fakes.js";

const ID = "clawbridge-codex";

test("supports() is gated on compatibleIds, transport overrides, the requested runtime and providerIds", () => {
  const observed = {
    provider: "mock",
    modelId: "mock-1",
    modelProvider: { api: "openai-completions", requestTransportOverrides: "none", endpointOverrides: "none" },
    requestedRuntime: ID,
    providerOwnerStatus: "unowned",
    providerOwnerPluginIds: [],
  };
  assert.equal(supportsRoute(ID, [], observed).supported, true, "explicit selection, as OpenClaw sends it");
  assert.equal(supportsRoute(ID, [], { ...observed, requestedRuntime: "auto" }).supported, false, "never every route");
  assert.equal(supportsRoute(ID, [], { ...observed, requestedRuntime: "clawbridge-demo" }).supported, false);
  assert.equal(supportsRoute(ID, ["openai"], { provider: "openai", requestedRuntime: "auto" }).priority, 50);

  const compatible = (ids) => ({ ...observed, modelProvider: { runtimePolicy: { compatibleIds: ids } } });
  assert.equal(supportsRoute(ID, [], compatible([ID])).supported, true);
  assert.equal(supportsRoute(ID, ["mock"], compatible(["other"])).supported, false, "compatibleIds wins");
  // The stock openai provider's route facts for an official Responses route, as 2026.9.6 sends them.
  const stockOpenAi = compatible(["openclaw", "codex"]);
  assert.equal(supportsRoute(ID, [], stockOpenAi).supported, true, "codex named: clawbridge-codex runs that Codex");
  assert.match(supportsRoute(ID, [], stockOpenAi).reason, /names codex/);
  const claude = supportsRoute("clawbridge-claude", [], { ...stockOpenAi, requestedRuntime: "clawbridge-claude" });
  assert.equal(claude.supported, false, "the codex alias is Codex's alone");
  assert.match(supportsRoute(ID, [], compatible(["openclaw"])).reason, /does not name clawbridge-codex or codex/);
  const overrides = { ...observed, modelProvider: { requestTransportOverrides: "present" } };
  const refused = supportsRoute(ID, [], overrides);
  assert.equal(refused.supported, false);
  assert.match(refused.reason, /requestTransportOverrides/);
  const unavailable = supportsRoute(ID, [], observed, { id: ID, available: false, unavailableReason: "no codex" });
  assert.deepEqual(unavailable, {
    supported: false,
    reason: `${ID} is unavailable: no codex; run \`clawbridge doctor --backend codex\` for details`,
  });
  assert.equal(supportsRoute(ID, [], undefined).supported, false, "a missing ctx is not a crash");
});

test("register() is idempotent per api, shares one runtime, and the harness is pure until an attempt", () => {
  const plugin = createPlugin({});
  const registered = [];
  const api = {
    pluginConfig: { command: "/nonexistent/clawbridge", providerIds: { [ID]: ["openai"] } },
    logger: recordingLogger(),
    registerAgentHarness: (h) => registered.push(h),
  };
  plugin.register(api);
  plugin.register(api);
  assert.deepEqual(registered.map((h) => h.id), ["clawbridge-codex", "clawbridge-claude", "clawbridge-demo"]);
  const runtime = plugin.runtime;
  const second = [];
  plugin.register({ ...api, registerAgentHarness: (h) => second.push(h) });
  assert.equal(second.length, 3, "a second registry gets the harnesses too");
  assert.equal(plugin.runtime, runtime, "one runtime, one bridge");
  const codex = registered[0];
  assert.deepEqual(codex.autoSelection, { providerIds: ["openai"] });
  assert.equal(typeof codex.runAttempt, "function");
  assert.equal(typeof codex.reset, "function");
  for (let i = 0; i < 20; i += 1) codex.supports({ provider: "openai" });
  assert.equal(runtime.supervisor.current, null, "supports() started no process");
});

test("auth is per harness: host forwards the prepared route, harness declares authBootstrap and forwards nothing", async () => {
  const registered = [];
  const logger = recordingLogger();
  createPlugin({}).register({
    pluginConfig: { command: "/nonexistent/clawbridge", auth: { "clawbridge-claude": "harness", "clawbridge-demo": "both" } },
    logger,
    registerAgentHarness: (h) => registered.push(h),
  });
  const byId = Object.fromEntries(registered.map((h) => [h.id, h]));
  assert.equal(byId["clawbridge-claude"].authBootstrap, "harness");
  assert.equal("authBootstrap" in byId["clawbridge-codex"], false, "host is the default");
  assert.equal("authBootstrap" in byId["clawbridge-demo"], false, "a bad mode falls back to host");
  assert.match(logger.lines.join("\n"), /auth\.clawbridge-demo must be "host" or "harness"/);

  const model = { baseUrl: " http://127.0.0.1:9/v1 ", headers: { "X-Tenant": "t", Bad: 3 } };
  assert.deepEqual(await routeAuth({ model, resolvedApiKey: "sk-resolved" }), {
    baseUrl: "http://127.0.0.1:9/v1",
    apiKey: "sk-resolved",
    headers: { "X-Tenant": "t" },
  });
  const storage = { getApiKey: async (provider) => (provider === "anthropic" ? "sk-stored" : undefined) };
  assert.deepEqual(await routeAuth({ provider: "anthropic", authStorage: storage }), { apiKey: "sk-stored" });
  const broken = { getApiKey: async () => { throw new Error("locked"); } };
  assert.equal(await routeAuth({ provider: "x", authStorage: broken }), undefined, "no credential, nothing sent");
});

test("config: defaults, and bad values are reported and ignored", () => {
  const logger = recordingLogger();
  const cfg = resolveConfig({ command: 3, args: ["--x"], env: { A: "1", B: 2 }, harnesses: "x", hostTools: "no" }, logger);
  assert.deepEqual(cfg.args, ["--x"]);
  assert.deepEqual(cfg.env, { A: "1" });
  assert.deepEqual(cfg.harnesses, ["clawbridge-codex", "clawbridge-claude", "clawbridge-demo"]);
  assert.equal(cfg.hostTools, true);
  assert.equal(logger.lines.length, 4, logger.lines.join("\n"));
});

test("config: passEnv groups become the bridge's --pass-env, unknown ones are reported and dropped", () => {
  const logger = recordingLogger();
  const cfg = resolveConfig({ args: ["--state-dir", "/s"], passEnv: ["bedrock", "aws*", "vertex", "bedrock"] }, logger);
  assert.deepEqual(cfg.passEnv, ["bedrock", "vertex"]);
  assert.deepEqual(cfg.args, ["--state-dir", "/s", "--pass-env", "bedrock,vertex"]);
  assert.equal(logger.lines.length, 1, logger.lines.join("\n"));
  assert.deepEqual(resolveConfig({}).args, [], "no group unless asked for");
});

function pair(options = {}) {
  const toClient = new PassThrough();
  const fromClient = new PassThrough();
  const client = new LineRpcClient(toClient, fromClient, options);
  const written = [];
  fromClient.on("data", (chunk) => written.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
  return { client, toClient, written };
}

const tick = () => new Promise((r) => setTimeout(r, 20));

test("framing: \\n only (U+2028 is data), CRLF, chunk splits, oversize lines skipped, junk reported", async () => {
  const notes = [];
  const problems = [];
  const { toClient } = pair({
    maxLineBytes: 64,
    onNotification: (method, params) => notes.push(params.text),
    onProblem: (text) => problems.push(text),
  });
  const line = (text) => `${JSON.stringify({ jsonrpc: "2.0", method: "n", params: { text } })}`;
  toClient.write(`${line("a\u2028b")}\r\n`);
  const split = Buffer.from(`${line("é")}\n`);
  toClient.write(split.subarray(0, 30));
  toClient.write(split.subarray(30));
  toClient.write(`${"x".repeat(100)}\n`);
  toClient.write(`not json\n${line("after")}\n`);
  await tick();
  assert.deepEqual(notes, ["a\u2028b", "é", "after"]);
  assert.equal(problems.length, 2, problems.join("\n"));
  assert.match(problems[0], /over 64 bytes/);
});

test("every line written is well-formed: a text cut inside a surrogate pair goes out as U+FFFD, never a lone surrogate", async () => {
  const { client, written } = pair();
  const emoji = "🦀";
  client.notify("n", { cut: `ok ${emoji.slice(0, 1)}`, whole: emoji, key: "x" });
  await tick();
  assert.equal(written.length, 1);
  assert.ok(!/\\ud[89ab][0-9a-f]{2}/i.test(written[0]), `no lone surrogate escape: ${written[0]}`);
  assert.deepEqual(JSON.parse(written[0]).params, { cut: "ok \uFFFD", whole: emoji, key: "x" });
});

test("every request from the other side is answered, also when the handler throws", async () => {
  const { toClient, written } = pair({
    onRequest: async (method) => {
      if (method === "ok") return { fine: true };
      if (method === "reply") throw new RpcReplyError(-32030, "no attempt x");
      throw new Error("boom");
    },
  });
  for (const [id, method] of [[1, "ok"], ["s", "reply"], [3, "crash"]]) {
    toClient.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params: {} })}\n`);
  }
  await tick();
  const answers = written.map((l) => JSON.parse(l));
  assert.deepEqual(answers.find((a) => a.id === 1).result, { fine: true });
  assert.equal(answers.find((a) => a.id === "s").error.code, -32030);
  assert.equal(answers.find((a) => a.id === 3).error.code, -32603);
  assert.match(answers.find((a) => a.id === 3).error.message, /boom/);
});

test("closing fails pending requests with the given error", async () => {
  const { client } = pair();
  const pending = client.request("attempt/run", {});
  client.close(new Error("bridge died"));
  await assert.rejects(pending, /bridge died/);
  await assert.rejects(client.request("x", {}), /bridge died/);
});

test("result mapping fills every required field and maps terminals", () => {
  const params = { sessionId: "s", sessionFile: "agent:main:explicit:s" };
  const minimal = toAttemptResult({ terminal: { kind: "ok" } }, { params, harnessId: ID, mirrored: [] });
  for (const key of [
    "terminal", "sessionIdUsed", "messagesSnapshot", "assistantTexts", "toolMetas", "didSendViaMessagingTool",
    "messagingToolSentTexts", "messagingToolSentMediaUrls", "messagingToolSentTargets", "cloudCodeAssistFormatError",
    "replayMetadata", "itemLifecycle",
  ]) {
    assert.ok(Object.hasOwn(minimal, key), key);
  }
  assert.ok(Object.hasOwn(minimal, "lastAssistant"), "the key is required even when undefined");
  assert.equal(minimal.replayMetadata.replaySafe, false, "unknown replay safety is unsafe");
  assert.equal(minimal.assistantTranscriptOwned, false);

  const full = toAttemptResult(
    {
      terminal: { kind: "aborted", message: "stop" },
      usage: { inputTokens: 300, outputTokens: 12, cachedInputTokens: 100, reasoningTokens: 0 },
      tools: [{ toolName: "exec", toolCallId: "c1", isError: false }],
      transcriptOwned: true,
      transcriptIdempotencyKey: "k",
      classification: "empty",
    },
    { params, harnessId: ID, externallyAborted: true, mirrored: [], lastToolError: { toolName: "exec" } },
  );
  assert.equal(full.terminal.kind, "aborted");
  assert.equal(full.terminal.source, "external");
  assert.equal(full.terminal.failure.source, "prompt", "failure is {source, error}, never a string");
  assert.equal(full.terminal.failure.error.message, "stop");
  assert.deepEqual(full.attemptUsage, { input: 200, output: 12, cacheRead: 100, cacheWrite: 0, total: 312 });
  assert.deepEqual(full.toolMetas, [{ toolName: "exec", toolCallId: "c1", isError: false }]);
  assert.equal(full.assistantTranscriptIdempotencyKey, "k");
  assert.deepEqual(full.lastToolError, { toolName: "exec" });
  // The SDK's rule: a turn that did not complete is never classified, whatever the bridge said.
  assert.equal(full.agentHarnessResultClassification, undefined);
  const failed = toAttemptResult({ terminal: { kind: "weird" } }, { params, mirrored: [] });
  assert.equal(failed.terminal.kind, "failed");
  assert.equal(toAttemptResult({ terminal: { kind: "timeout" } }, { params, mirrored: [] }).terminal.kind, "timeout");
});

function fakeAttempt(extra = {}) {
  return {
    attemptId: "a:1",
    tools: new Map(),
    signal: new AbortController().signal,
    logger: recordingLogger(),
    mirrored: [],
    params: { sessionId: "s", sessionTarget: { agentId: "main", sessionKey: "k", storePath: "/x" }, workspaceDir: "/w" },
    ...extra,
  };
}

test("host tools: execute with the call id, errors become failed calls, unknown tools are refused", async () => {
  const seen = [];
  const attempt = fakeAttempt();
  attempt.tools.set("read", {
    name: "read",
    prepareArguments: (a) => ({ ...a, prepared: true }),
    execute: async (id, args) => {
      seen.push([id, args]);
      return { content: [{ type: "text", text: "file body" }], details: {} };
    },
  });
  attempt.tools.set("bad", { name: "bad", execute: async () => { throw new Error("EACCES"); } });
  assert.deepEqual(await executeTool(attempt, { toolName: "read", callId: "c1", arguments: { path: "a" } }), {
    text: "file body",
    isError: false,
  });
  assert.deepEqual(seen, [["c1", { path: "a", prepared: true }]]);
  assert.deepEqual(await executeTool(attempt, { toolName: "bad", callId: "c2" }), { text: "EACCES", isError: true });
  await assert.rejects(executeTool(attempt, { toolName: "nope", callId: "c3" }), (e) => e.code === -32040);
});

test("approvals map OpenClaw decisions and fail closed", async () => {
  const decide = (host) => decideApproval(fakeAttempt({ params: { hostCapabilities: host } }), {
    kind: "command", callId: "c", toolName: "exec", arguments: { command: "ls" }, timeoutMs: 1000,
  });
  assert.deepEqual(await decide(fakeHost({ decision: "allow-once" })), { decision: "allow" });
  assert.deepEqual(await decide(fakeHost({ decision: "allow-always" })), { decision: "allowForSession" });
  assert.equal((await decide(fakeHost({ decision: "deny" }))).decision, "deny");
  const waiting = fakeHost({ decision: "async" });
  assert.deepEqual(await decide(waiting), { decision: "allow" }, "an id without a decision is waited for");
  assert.equal(waiting.calls.waitForApproval[0].approvalId, "approval-1");
  const throwing = { ...fakeHost(), requestApproval: async () => { throw new Error("relay down"); } };
  assert.equal((await decide(throwing)).decision, "deny");
  assert.equal((await decide({ ...fakeHost(), requestApproval: async () => undefined })).decision, "deny");
  assert.equal((await decide({ ...fakeHost(), requestApproval: async () => ({ decision: "maybe" }) })).decision, "deny");
  assert.equal((await decide({})).decision, "deny", "no approval surface");
});

test("transcript appends pass the session target and keys, and a repeated key is not duplicated", async () => {
  const transcript = fakeTranscript();
  const attempt = fakeAttempt();
  const messages = [
    { role: "assistant", content: [], idempotencyKey: "clawbridge:r:t:tool:c:call" },
    { role: "toolResult", toolCallId: "c", content: [], idempotencyKey: "clawbridge:r:t:tool:c:result" },
  ];
  const first = await appendTranscript(attempt, { messages }, transcript.append);
  const again = await appendTranscript(attempt, { messages }, transcript.append);
  assert.deepEqual(first.entries.map((e) => e.appended), [true, true]);
  assert.deepEqual(again.entries.map((e) => e.appended), [false, false]);
  assert.equal(transcript.rows.length, 2);
  const call = transcript.calls[0];
  assert.deepEqual(
    { agentId: call.agentId, sessionId: call.sessionId, sessionKey: call.sessionKey, storePath: call.storePath, cwd: call.cwd, lookup: call.idempotencyLookup },
    { agentId: "main", sessionId: "s", sessionKey: "k", storePath: "/x", cwd: "/w", lookup: "scan" },
  );
  await assert.rejects(appendTranscript(attempt, { messages: [{}] }, transcript.append), (e) => e.code === -32602);
});
