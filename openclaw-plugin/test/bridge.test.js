// The plugin against the real `clawbridge serve` binary (the demo harness plays a recorded Codex
// turn: one approved `echo` command, then the answer). Every message both ways is validated against
// docs/host-protocol.schema.json.

import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { PROTOCOL_VERSION } from "../src/bridge.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest } from "./support/fakes.js";

const DEMO = "clawbridge-demo";
const CODEX = "clawbridge-codex";

function assertProtocolClean(protocol) {
  assert.deepEqual(protocol.problems, [], `protocol violations:\n${protocol.problems.join("\n")}`);
  // Every request either side sent has been answered.
  assert.deepEqual([...protocol.pending.bridge.values()], [], "bridge requests the plugin never answered");
  assert.deepEqual([...protocol.pending.host.values()], [], "plugin requests the bridge never answered");
}

test("a demo attempt runs end to end through the real bridge", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const { params, observed, events, host } = attemptParams();
  const result = await env.harness(DEMO).runAttempt(params);

  assert.equal(result.terminal.kind, "ok", JSON.stringify(result));
  assert.ok(result.assistantTexts.length > 0 && result.assistantTexts.every((t) => typeof t === "string"));
  assert.equal(result.sessionIdUsed, params.sessionId);
  assert.equal(result.agentHarnessId, DEMO);
  assert.equal(result.hasSuccessfulModelResponse, true);
  assert.equal(result.assistantTranscriptOwned, true);
  const key = result.assistantTranscriptIdempotencyKey;
  assert.ok(key.startsWith(`clawbridge:${params.runId}:`) && key.endsWith(":assistant"), key);
  assert.ok(Object.hasOwn(result, "lastAssistant"));
  assert.equal(result.lastAssistant.idempotencyKey, key);
  assert.ok(result.toolMetas.length >= 1, JSON.stringify(result.toolMetas));
  assert.equal(result.replayMetadata.replaySafe, false, "a command ran");
  assert.equal(result.itemLifecycle.activeCount, 0);
  assert.ok(result.attemptUsage && result.attemptUsage.total > 0, JSON.stringify(result.attemptUsage));

  // observeToolTerminal: exactly once per tool call, with the protocol call id; its lastToolError
  // comes back unchanged.
  assert.equal(observed.length, result.toolMetas.length);
  assert.deepEqual(observed.map((o) => o.toolCallId), result.toolMetas.map((m) => m.toolCallId));
  assert.ok(observed.every((o) => o.attemptId === undefined), "the routing id is not passed to OpenClaw");
  assert.deepEqual(result.lastToolError, { toolName: observed.at(-1).toolName, error: "sentinel", mutatingAction: false });

  // The approval went through requestApproval with the call id.
  assert.equal(host.calls.requestApproval.length, 1);
  assert.equal(host.calls.requestApproval[0].toolCallId, observed[0].toolCallId);

  // Transcript: every row keyed, on the attempt's session target, the result's key last; no user row.
  const rows = env.transcript.rows;
  assert.ok(rows.length >= 3, JSON.stringify(rows, null, 1));
  assert.ok(rows.every((r) => r.sessionId === params.sessionId && typeof r.message.idempotencyKey === "string"));
  assert.equal(new Set(rows.map((r) => r.message.idempotencyKey)).size, rows.length, "no key twice");
  assert.ok(rows.every((r) => r.message.role !== "user"), "core persists the prompt itself");
  assert.equal(rows.at(-1).message.idempotencyKey, key);
  const call = rows.find((r) => r.message.role === "assistant" && r.message.stopReason === "toolUse");
  const toolResult = rows.find((r) => r.message.role === "toolResult");
  assert.equal(call.message.content.find((b) => b.type === "toolCall").id, toolResult.message.toolCallId);
  assert.ok(env.transcript.calls.every((c) => c.storePath === params.sessionTarget.storePath && c.agentId === "main"));
  assert.deepEqual(result.messagesSnapshot[0], { role: "user", content: params.prompt, timestamp: result.messagesSnapshot[0].timestamp }, "the snapshot starts with the prompt");
  assert.deepEqual(result.messagesSnapshot.slice(1).map((m) => m.idempotencyKey), rows.map((r) => r.message.idempotencyKey));

  // Progress reached the callbacks.
  const streams = new Set(events.map((e) => e.stream));
  assert.ok(streams.has("lifecycle") && streams.has("tool") && streams.has("assistant"), [...streams].join(","));

  assert.ok(env.protocol.counts["attempt/event"] > 0);
  assert.equal(env.protocol.counts["host/transcript/append (answer)"], env.protocol.counts["host/transcript/append"]);
  assertProtocolClean(env.protocol);
});

test("the bridge is started once and reused; reset drops the session binding", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const first = attemptParams();
  await env.harness(DEMO).runAttempt(first.params);
  const pid = env.plugin.runtime.supervisor.current.child.pid;
  const runs = await Promise.all([attemptParams(), attemptParams(), attemptParams()].map((a) => env.harness(DEMO).runAttempt(a.params)));
  assert.ok(runs.every((r) => r.terminal.kind === "ok"));
  assert.equal(env.plugin.runtime.supervisor.current.child.pid, pid, "one bridge for every attempt");
  assert.equal(env.protocol.counts.initialize, 1);
  await env.harness(DEMO).reset({ sessionId: first.params.sessionId, reason: "reset" });
  assert.equal(env.protocol.counts["session/reset"], 1);
  assertProtocolClean(env.protocol);
});

test("an abort on the demo harness sends attempt/cancel and the attempt still ends in a result", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const controller = new AbortController();
  const host = fakeHost({ decision: "hold" });
  const { params } = attemptParams({ host, abortSignal: controller.signal });
  const running = env.harness(DEMO).runAttempt(params);
  await waitFor(() => host.calls.requestApproval.length === 1);
  controller.abort("user pressed stop");
  const result = await running;
  // The demo replays a recording that has no interrupt in it, so the bridge reports the turn as
  // failed (the replay agent exits on the deviation); the Codex fake below shows `aborted`.
  assert.notEqual(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(env.protocol.counts["attempt/cancel"], 1);
  assertProtocolClean(env.protocol);
});

test("a bridge that dies fails the attempt in flight with a clear error; the next attempt starts a new one", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const host = fakeHost({ decision: "hold" });
  const { params } = attemptParams({ host });
  const running = env.harness(DEMO).runAttempt(params);
  await waitFor(() => host.calls.requestApproval.length === 1);
  const child = env.plugin.runtime.supervisor.current.child;
  child.kill("SIGKILL");
  await assert.rejects(running, (error) => {
    assert.match(error.message, /clawbridge serve \(pid \d+/);
    assert.match(error.message, /killed by signal SIGKILL/);
    assert.match(error.message, new RegExp(DEMO));
    // The bridge's own log file, named in initialize, is where the whole story is.
    const logFile = join(env.stateDir, "logs", "clawbridge.log");
    assert.ok(error.message.includes(`its log file: ${logFile}`), error.message);
    assert.match(readFileSync(logFile, "utf8"), /host connected/);
    return true;
  });
  const next = attemptParams();
  const result = await env.harness(DEMO).runAttempt(next.params);
  assert.equal(result.terminal.kind, "ok");
  assert.notEqual(env.plugin.runtime.supervisor.current.child.pid, child.pid, "a new bridge");
  assert.equal(env.protocol.counts.initialize, 2);
});

for (const [side, version] of [["newer", PROTOCOL_VERSION + 1], ["older", PROTOCOL_VERSION - 1]]) {
  test(`a ${side} plugin protocol version fails the attempt with a message naming both versions`, async (t) => {
    const env = pluginUnderTest({ deps: { protocolVersion: version } });
    t.after(env.cleanup);
    const { params } = attemptParams();
    await assert.rejects(env.harness(DEMO).runAttempt(params), (error) => {
      assert.match(error.message, /version mismatch/);
      assert.match(error.message, new RegExp(`host protocol version ${version}\\b`), "the plugin's version");
      assert.match(error.message, new RegExp(`speaks versions ${PROTOCOL_VERSION}\\.\\.${PROTOCOL_VERSION}`), "the bridge's versions");
      assert.match(error.message, /clawbridge 0\.1\.0/, "the bridge's release");
      return true;
    });
    assertProtocolClean(env.protocol);
    assert.equal(env.transcript.rows.length, 0);
  });
}

test("a missing bridge binary is a clear error, not a hang", async (t) => {
  const env = pluginUnderTest({ config: { command: "/nonexistent/clawbridge" } });
  t.after(env.cleanup);
  await assert.rejects(env.harness(DEMO).runAttempt(attemptParams().params), /could not run: spawn \/nonexistent\/clawbridge ENOENT/);
});

async function waitFor(ready, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("with a Codex backend: an abort interrupts the turn and the result says aborted, externally", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "untilInterrupted" }) });
  t.after(env.cleanup);
  const controller = new AbortController();
  const { params, events } = attemptParams({ abortSignal: controller.signal });
  const running = env.harness(CODEX).runAttempt(params);
  await waitFor(() => events.some((e) => e.stream === "lifecycle" && e.data.phase === "start"));
  controller.abort(new Error("user pressed stop"));
  const result = await running;
  assert.equal(result.terminal.kind, "aborted", JSON.stringify(result.terminal));
  assert.equal(result.terminal.source, "external");
  assert.equal(result.hasSuccessfulModelResponse, false);
  const cancels = env.protocol.counts["attempt/cancel"];
  assert.equal(cancels, 1);
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: a dynamic tool call runs the OpenClaw tool bound from createToolSurface", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "lookup_weather" }) });
  t.after(env.cleanup);
  const executed = [];
  const weather = {
    name: "lookup_weather",
    label: "Weather",
    description: "Looks up the weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    execute: async (toolCallId, args) => {
      executed.push({ toolCallId, args });
      return { content: [{ type: "text", text: `sunny in ${args.city}` }], details: {} };
    },
  };
  const host = fakeHost({ tools: [weather, { name: "not_allowed", execute: async () => ({ content: [] }) }] });
  const { params, observed } = attemptParams({ host });
  params.toolsAllow = ["lookup_weather"];
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(executed, [{ toolCallId: "call_9", args: { city: "Paris" } }]);
  assert.deepEqual(observed.map((o) => [o.toolCallId, o.toolName, o.outcome]), [["call_9", "lookup_weather", "success"]]);
  assert.deepEqual(result.toolMetas, [{ toolName: "lookup_weather", toolCallId: "call_9", isError: false }]);
  assert.equal(host.calls.createToolSurface.length, 1);
  assert.equal(host.calls.createToolSurface[0].options.sessionId, params.sessionId);
  assert.equal(env.protocol.counts["host/tool/execute"], 1);
  assert.equal(env.protocol.counts["host/tool/execute (answer)"], 1);
  const run = env.protocol.sent.find((m) => m.method === "attempt/run");
  assert.deepEqual(run.params.hostTools.map((h) => h.name), ["lookup_weather"], "toolsAllow filters the surface");
  assert.deepEqual(run.params.hostTools[0].inputSchema, weather.parameters);
  assertProtocolClean(env.protocol);
});

test("a transcript the host cannot write makes the result not own the transcript", async (t) => {
  const env = pluginUnderTest({ deps: { appendTranscriptMessage: async () => { throw new Error("disk full"); } } });
  t.after(env.cleanup);
  const { params } = attemptParams();
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok");
  assert.equal(result.assistantTranscriptOwned, false);
  assert.equal(result.assistantTranscriptIdempotencyKey, undefined);
  assert.ok(env.logger.lines.some((l) => /not in the transcript/.test(l)), env.logger.lines.join("\n"));
  assertProtocolClean(env.protocol);
});

test("an attempt aborted before it starts never reaches the bridge", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const controller = new AbortController();
  controller.abort("too late");
  const { params } = attemptParams({ abortSignal: controller.signal });
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "aborted");
  assert.equal(result.terminal.source, "external");
  assert.equal(result.terminal.failure.error.message, "aborted before the attempt started");
  assert.equal(result.replayMetadata.replaySafe, true);
  assert.equal(env.protocol.counts["attempt/run"], undefined);
});

test("supports() gives the bridge's own harness/supports answer for every route shape", async (t) => {
  const env = pluginUnderTest({ config: { providerIds: { [DEMO]: ["openai"] } } });
  t.after(env.cleanup);
  // Start the bridge through an attempt, as OpenClaw would, so supports() also knows availability.
  await env.harness(DEMO).runAttempt(attemptParams().params);
  const conn = await env.plugin.runtime.supervisor.connection();
  const routes = [
    { provider: "mock", requestedRuntime: DEMO },
    { provider: "mock", requestedRuntime: "auto" },
    { provider: "openai", requestedRuntime: "auto" },
    { provider: "mock", requestedRuntime: DEMO, modelProvider: { requestTransportOverrides: "present" } },
    { provider: "mock", requestedRuntime: DEMO, modelProvider: { requestTransportOverrides: "none" } },
    { provider: "mock", modelProvider: { runtimePolicy: { compatibleIds: [DEMO] } } },
    { provider: "openai", requestedRuntime: DEMO, modelProvider: { runtimePolicy: { compatibleIds: ["other"] } } },
    { provider: "mock", modelProvider: { runtimePolicy: { compatibleIds: [] } } },
  ];
  for (const ctx of routes) {
    const local = env.harness(DEMO).supports(ctx);
    const bridge = await conn.client.request("harness/supports", { harnessId: DEMO, ...ctx });
    // The bridge was started without providerIds (those are the plugin's config), so compare the
    // providerIds route against the plugin's own rule only.
    if (ctx.provider === "openai" && ctx.requestedRuntime === "auto") {
      assert.deepEqual(local, { supported: true, priority: 50, reason: `provider openai is in ${DEMO}'s providerIds` });
      continue;
    }
    assert.equal(local.supported, bridge.supported, `${JSON.stringify(ctx)}: ${local.reason} / ${bridge.reason}`);
    assert.equal(local.priority, bridge.priority, JSON.stringify(ctx));
    assert.equal(local.reason, bridge.reason, JSON.stringify(ctx));
  }
  assertProtocolClean(env.protocol);
});

test("a backend that cannot start is a preflight error with the user message", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const broken = join(dir, "broken-codex.sh");
  writeFileSync(
    broken,
    '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "codex-cli 0.169.0"; exit 0; fi\necho "no login" >&2\nexit 1\n',
  );
  chmodSync(broken, 0o755);
  class PreflightError extends Error {
    constructor(message, options) {
      super(message);
      this.options = options;
    }
  }
  const env = pluginUnderTest({ codexBin: broken, deps: { PreflightError } });
  t.after(env.cleanup);
  await assert.rejects(env.harness(CODEX).runAttempt(attemptParams().params), (error) => {
    assert.ok(error instanceof PreflightError, String(error));
    assert.equal(error.options.scope, "harness");
    assert.match(error.options.userMessage, /Codex \(clawbridge\) could not start/);
    assert.match(error.message, /clawbridge clawbridge-codex: codex app-server could not start/);
    return true;
  });
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: an attempt past its budget ends as a timeout", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "untilInterrupted" }) });
  t.after(env.cleanup);
  const { params } = attemptParams();
  params.timeoutMs = 1500;
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "timeout", JSON.stringify(result.terminal));
  assert.equal(result.terminal.source, "run_budget");
  assert.equal(result.terminal.phase, "prompt");
  assert.equal(result.terminal.failure.source, "prompt");
  assert.equal(result.terminal.failure.error.code, "runBudget", "the bridge named the budget as the cause");
  assert.match(result.terminal.failure.error.message, /1500 ms/);
  assertProtocolClean(env.protocol);
});

test("dispose stops the bridge; a later attempt (a newer registry) starts a new one", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  await env.harness(DEMO).runAttempt(attemptParams().params);
  const child = env.plugin.runtime.supervisor.current.child;
  await env.plugin.dispose();
  assert.ok(child.exitCode !== null || child.signalCode !== null, "the bridge exited");
  assert.equal(child.exitCode, 0, "after shutdown, not killed");
  assert.equal(env.protocol.counts.shutdown, 1);
  const again = await env.harness(DEMO).runAttempt(attemptParams().params);
  assert.equal(again.terminal.kind, "ok");
  assert.notEqual(env.plugin.runtime.supervisor.current.child.pid, child.pid);
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: native retries reach onAgentEvent as they happen, and OpenClaw is told not to retry again", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "retryThenAnswer" }) });
  t.after(env.cleanup);
  const { params } = attemptParams();
  const events = [];
  params.onAgentEvent = (event) => events.push(event);
  const progress = [];
  params.onRunProgress = (info) => progress.push(info);
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(
    progress.map((p) => [p.reason, p.backend]),
    [["model_retry", CODEX], ["model_retry", CODEX]],
    "each native retry keeps the run's lane alive",
  );
  const retries = events.filter((e) => e.stream === "error");
  assert.deepEqual(
    retries.map((e) => [e.data.reason, e.data.willRetry, e.data.attempt]),
    [["model_retry", true, 1], ["model_retry", true, 2]],
  );
  assert.match(retries[1].data.message, /Reconnecting\.\.\. 2\/5.*scripted outage/);
  const ended = events.findIndex((e) => e.stream === "lifecycle" && e.data.phase === "end");
  assert.ok(events.indexOf(retries[1]) < ended, "progress, before the turn ended");
  assert.equal(result.providerRetryMaxRetries, 0);
  assert.match(env.logger.lines.join("\n"), /the model request failed and is retried \(retry 2\)/);
});

test("end effects through the real bridge: output tokens, agent_end after success and refusal, the version check", async (t) => {
  const agentEnds = [];
  const env = pluginUnderTest({ deps: { sdk: { runAgentEndSideEffects: (p) => agentEnds.push(p) } } });
  t.after(env.cleanup);
  const reports = [];
  const host = { ...fakeHost(), reportOutputTokens: (n) => reports.push(n) };
  const { params, events } = attemptParams({ host });
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok");
  assert.ok(reports.length >= 1 && reports.every((n) => Number.isInteger(n) && n > 0), JSON.stringify(reports));
  assert.equal(reports.reduce((a, b) => a + b, 0), result.attemptUsage.output, "the reports add up to the turn's output");
  assert.ok(!events.some((e) => e.stream === "usage"), "the host publishes usage itself: no second usage event");
  assert.equal(agentEnds.length, 1);
  assert.equal(agentEnds[0].event.success, true);
  assert.equal(agentEnds[0].event.messages[0].role, "user", "agent_end sees the turn's messages, prompt first");

  // An unsupported capability version is refused before anything runs (so no agent_end: the
  // embedded runtime runs it only for attempts that ran).
  const newer = attemptParams({ host: { ...fakeHost(), version: 2 } });
  await assert.rejects(env.harness(DEMO).runAttempt(newer.params), /capability is version 2; clawbridge supports version 1/);
  assert.equal(agentEnds.length, 1);

  // An attempt that ran and failed gets its agent_end with success false.
  const aborted = new AbortController();
  aborted.abort("stop");
  const stopped = attemptParams({ abortSignal: aborted.signal });
  const stoppedResult = await env.harness(DEMO).runAttempt(stopped.params);
  assert.equal(stoppedResult.terminal.kind, "aborted");
  assert.equal(agentEnds.length, 2);
  assert.equal(agentEnds[1].event.success, false);
  assert.equal(agentEnds[1].event.error, undefined, "an abort is no error (as the embedded runtime reports it)");

  // A run the host already retired starts nothing.
  const retired = attemptParams({ host: { ...fakeHost(), assertActive: () => { throw new Error("run superseded"); } } });
  const appendsBefore = env.transcript.calls.length;
  await assert.rejects(env.harness(DEMO).runAttempt(retired.params), /run superseded/);
  assert.equal(env.transcript.calls.length, appendsBefore, "no row was written");
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: a bridge killed while a host tool runs leaves no orphan call in the transcript", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall" }) });
  t.after(async () => {
    await env.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  let started;
  const running = new Promise((resolve) => (started = resolve));
  const hanging = {
    name: "lookup_weather",
    description: "Looks up the weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } } },
    // Never answers: the bridge is killed while it runs.
    execute: () => {
      started();
      return new Promise(() => {});
    },
  };
  const { params } = attemptParams({ host: fakeHost({ tools: [hanging] }) });
  const attempt = env.harness(CODEX).runAttempt(params);
  await running;
  await waitFor(() => env.transcript.rows.some((r) => r.message.role === "assistant"));
  env.plugin.runtime.supervisor.current.child.kill("SIGKILL");
  await assert.rejects(attempt, /clawbridge clawbridge-codex/);
  const rows = env.transcript.rows.map((r) => r.message);
  const call = rows.find((m) => m.role === "assistant" && m.content.some((b) => b.type === "toolCall"));
  assert.ok(call, JSON.stringify(rows));
  const result = rows.find((m) => m.role === "toolResult" && m.toolCallId === "call_9");
  assert.ok(result, `the call got its synthetic result: ${JSON.stringify(rows)}`);
  assert.equal(result.isError, true);
  assert.equal(result.idempotencyKey, call.idempotencyKey.replace(/:call$/, ":result"), "the key the bridge would have used");
  const keys = rows.map((m) => m.idempotencyKey);
  assert.equal(new Set(keys).size, keys.length, "no key twice");
});
