// Run restrictions (src/run-restrictions.js) through the real bridge: what a native agent cannot
// honour is refused before any native work, `toolExecutionAllow` keeps every tool visible but lets
// only its names run, and the native harnesses declare their own tool surface to core.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { TOOL_EXECUTION_GATED_MESSAGE } from "../src/run-restrictions.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest } from "./support/fakes.js";

const DEMO = "clawbridge-demo";
const CODEX = "clawbridge-codex";
const CLAUDE = "clawbridge-claude";

class PreflightError extends Error {
  constructor(message, options) {
    super(message);
    this.options = options;
  }
}

function assertProtocolClean(protocol) {
  assert.deepEqual(protocol.problems, [], `protocol violations:\n${protocol.problems.join("\n")}`);
  assert.deepEqual([...protocol.pending.bridge.values()], [], "bridge requests the plugin never answered");
  assert.deepEqual([...protocol.pending.host.values()], [], "plugin requests the bridge never answered");
}

const REFUSED = [
  ["modelRun", (p) => (p.modelRun = true), /modelRun/],
  ["forceRestartSafeTools", (p) => (p.forceRestartSafeTools = true), /forceRestartSafeTools/],
  ["streamParams", (p) => (p.streamParams = { maxTokens: 100, temperature: 0.2 }), /streamParams maxTokens, temperature/],
];

for (const [name, set, pattern] of REFUSED) {
  test(`an attempt with ${name} is refused up front with a preflight error naming it, before the bridge runs anything`, async (t) => {
    const env = pluginUnderTest({ deps: { PreflightError } });
    t.after(env.cleanup);
    for (const id of [DEMO, CODEX, CLAUDE]) {
      const { params, events } = attemptParams();
      set(params);
      await assert.rejects(env.harness(id).runAttempt(params), (error) => {
        assert.ok(error instanceof PreflightError, String(error));
        assert.equal(error.options.scope, "harness");
        assert.match(error.message, pattern);
        assert.match(error.options.userMessage, pattern);
        assert.match(error.message, new RegExp(`clawbridge ${id}:`));
        return true;
      });
      assert.deepEqual(events, [], "nothing started, so no lifecycle event");
    }
    assert.equal(env.protocol.counts["attempt/run"], undefined, "no attempt reached the bridge");
    assertProtocolClean(env.protocol);
  });
}

test("a run without those restrictions (false flags, stream params with nothing set) runs", async (t) => {
  const env = pluginUnderTest({ deps: { PreflightError } });
  t.after(env.cleanup);
  const { params } = attemptParams();
  Object.assign(params, { modelRun: false, forceRestartSafeTools: false, streamParams: { temperature: undefined } });
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(env.protocol.counts["attempt/run"], 1);
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: toolExecutionAllow keeps a tool offered but refuses to run it; the bridge gets the list", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "lookup_weather" }) });
  t.after(env.cleanup);
  const executed = [];
  const weather = {
    name: "lookup_weather",
    description: "Looks up the weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } } },
    execute: async (toolCallId, args) => {
      executed.push({ toolCallId, args });
      return { content: [{ type: "text", text: `sunny in ${args.city}` }], details: {} };
    },
  };
  const host = fakeHost({ tools: [weather] });
  const { params } = attemptParams({ host });
  // Every native class is allowed (`*` would be too), but not the host tool.
  params.toolExecutionAllow = ["exec", "read", "write", "web_search"];
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(executed, [], "the gated tool never ran");
  const run = env.protocol.sent.find((m) => m.method === "attempt/run");
  assert.deepEqual(run.params.hostTools.map((h) => h.name), ["lookup_weather"], "the tool stays visible");
  assert.deepEqual(run.params.hostTools[0].inputSchema, weather.parameters);
  assert.deepEqual(run.params.toolExecutionAllow, params.toolExecutionAllow);
  const answer = env.protocol.sent.find((m) => m.result && typeof m.result.text === "string" && m.result.isError === true);
  assert.equal(answer?.result.text, TOOL_EXECUTION_GATED_MESSAGE, "the native agent got OpenClaw's gated answer");
  assertProtocolClean(env.protocol);
});

test("with a Codex backend: a tool toolExecutionAllow names runs (names compared as OpenClaw compares them)", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "lookup_weather" }) });
  t.after(env.cleanup);
  const executed = [];
  const weather = {
    name: "lookup_weather",
    parameters: { type: "object", properties: {} },
    execute: async (toolCallId) => {
      executed.push(toolCallId);
      return { content: [{ type: "text", text: "sunny" }], details: {} };
    },
  };
  const { params } = attemptParams({ host: fakeHost({ tools: [weather] }) });
  params.toolExecutionAllow = ["*", " Lookup_Weather "];
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(executed, ["call_9"]);
  assertProtocolClean(env.protocol);
});

test("the native harnesses declare their native tool surface in canonical OpenClaw names; the demo none", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  for (const id of [CODEX, CLAUDE]) {
    const names = env.harness(id).conversationToolPolicyNativeTools;
    assert.ok(Array.isArray(names), id);
    for (const name of ["exec", "process", "read", "write", "edit", "web_search"]) assert.ok(names.includes(name), `${id}: ${name}`);
  }
  assert.ok(env.harness(CODEX).conversationToolPolicyNativeTools.includes("apply_patch"));
  assert.ok(env.harness(CLAUDE).conversationToolPolicyNativeTools.includes("web_fetch"));
  assert.equal(env.harness(DEMO).conversationToolPolicyNativeTools, undefined);
  // Without `exact` support every such restriction stays fail-closed in core.
  for (const id of [CODEX, CLAUDE, DEMO]) assert.equal(env.harness(id).conversationToolPolicySupport, undefined);
});
