// Side work and the context engine in the plugin (side-work.js, context-engine.js): what goes to the
// bridge in `attempt/run` and what comes back to core. The bridge's side is
// tests/openclaw_side_work.rs (real OpenClaw, real Codex).

import assert from "node:assert/strict";
import { test } from "node:test";

import { CONTEXT_ENGINE_HOST_CAPABILITIES, assembledContext, renderContext } from "../src/context-engine.js";
import { createHarness } from "../src/harness.js";
import { runIsolatedCompletion, runSideQuestion } from "../src/side-work.js";

/** A runtime whose bridge answers `attempt/run` with `answer` and records every request. */
function fakeRuntime(answer) {
  const sent = [];
  const client = {
    request: async (method, params) => {
      sent.push({ method, params });
      return typeof answer === "function" ? answer(params) : answer;
    },
  };
  return {
    sent,
    logger: { warn() {}, info() {}, debug() {} },
    options: { config: { providerIds: {}, auth: {} } },
    supervisor: { hold() {}, release() {}, connection: async () => ({ client }), harnessInfo: () => undefined },
  };
}

const OK = { attemptId: "x", terminal: { kind: "ok" }, assistantTexts: ["Garden bed planning"], usage: { inputTokens: 12, cachedInputTokens: 2, outputTokens: 3 } };

test("an isolated completion is one fresh, tool-less, isolated attempt/run; its text comes back as the assistant", async () => {
  const runtime = fakeRuntime(OK);
  const result = await runIsolatedCompletion(
    runtime,
    "clawbridge-codex",
    {
      provider: "mock",
      modelId: "mock-utility",
      workspaceDir: "/w",
      systemPrompt: "Label it.",
      prompt: "Plan the garden",
      timeoutMs: 5000,
      authorization: { owner: "host", model: { baseUrl: "http://127.0.0.1:9/v1", api: "openai-responses" }, auth: { apiKey: "k" } },
    },
    "host",
  );
  assert.equal(runtime.sent.length, 1);
  const { method, params } = runtime.sent[0];
  assert.equal(method, "attempt/run");
  assert.equal(params.isolation, "fresh");
  assert.equal(params.disableTools, true);
  assert.equal(params.hostTools, undefined);
  assert.equal(params.sessionId, params.attemptId, "a session of its own");
  assert.equal(params.extraSystemPrompt, "Label it.");
  assert.equal(params.prompt, "Plan the garden");
  assert.equal(params.timeoutMs, 5000);
  assert.deepEqual(params.auth, { baseUrl: "http://127.0.0.1:9/v1", apiKey: "k" });
  assert.equal(result.assistant.role, "assistant");
  assert.equal(result.assistant.stopReason, "stop");
  assert.deepEqual(result.assistant.content, [{ type: "text", text: "Garden bed planning" }]);
  assert.equal(result.assistant.usage.input, 10);
  assert.equal(result.assistant.usage.cacheRead, 2);
});

test("a failed isolated completion throws with the bridge's reason instead of returning text", async () => {
  const runtime = fakeRuntime({ attemptId: "x", terminal: { kind: "error", message: "model refused" }, assistantTexts: [] });
  await assert.rejects(
    runIsolatedCompletion(runtime, "clawbridge-codex", { provider: "p", modelId: "m", prompt: "q" }, "harness"),
    /isolated completion ended error: model refused/,
  );
  assert.equal(runtime.sent[0].params.auth, undefined, "harness auth sends none");
});

test("a side question forks the session's thread: isolation fork on the session id, the answer as text", async () => {
  const runtime = fakeRuntime({ ...OK, assistantTexts: ["You mentioned heliotrope."] });
  const result = await runSideQuestion(
    runtime,
    "clawbridge-claude",
    { sessionId: "s-1", sessionKey: "agent:main:explicit:s-1", question: "which flower?", provider: "mock", model: "mock-model", workspaceDir: "/w" },
    "harness",
  );
  const { params } = runtime.sent[0];
  assert.equal(params.isolation, "fork");
  assert.equal(params.sessionId, "s-1");
  assert.equal(params.sessionKey, "agent:main:explicit:s-1");
  assert.equal(params.prompt, "which flower?");
  assert.equal(params.disableTools, true);
  assert.equal(result.text, "You mentioned heliotrope.");
  assert.equal(result.usage.output, 3);
});

test("the native harnesses declare side work and the context capabilities; the demo and ACP do not", () => {
  const runtime = fakeRuntime(OK);
  for (const id of ["clawbridge-codex", "clawbridge-claude"]) {
    const harness = createHarness(runtime, id);
    assert.deepEqual(harness.contextEngineHostCapabilities, ["assemble-before-prompt", "thread-bootstrap-projection"]);
    assert.equal(typeof harness.runIsolatedCompletionV2, "function");
    assert.equal(typeof harness.runSideQuestion, "function");
  }
  for (const id of ["clawbridge-demo", "clawbridge-acp"]) {
    const harness = createHarness(runtime, id);
    assert.equal(harness.contextEngineHostCapabilities, undefined);
    assert.equal(harness.runIsolatedCompletionV2, undefined);
    assert.equal(harness.runSideQuestion, undefined);
  }
  assert.ok(Object.isFrozen(CONTEXT_ENGINE_HOST_CAPABILITIES));
});

test("assembled context: the engine is asked through the SDK helper, a thread_bootstrap epoch comes along, legacy is skipped", async () => {
  const calls = [];
  const sdk = {
    assembleHarnessContextEngine: async (params) => {
      calls.push(params);
      return {
        messages: [{ role: "user", content: [{ type: "text", text: "earlier note" }] }],
        estimatedTokens: 4,
        systemPromptAddition: "Remember CTX.",
        contextProjection: { mode: "thread_bootstrap", epoch: "e7" },
      };
    },
  };
  const engine = { info: { id: "marker" } };
  const params = { contextEngine: engine, sessionId: "s", modelId: "m", provider: "p", prompt: "hi", contextTokenBudget: 1000, contextEngineAgentId: "main" };
  const context = await assembledContext(sdk, "clawbridge-codex", params, console);
  assert.equal(context.epoch, "e7");
  assert.match(context.text, /^<context source="context engine marker">\nRemember CTX\.\n\nuser: earlier note\n<\/context>$/);
  assert.equal(calls[0].contextEngine, engine);
  assert.equal(calls[0].tokenBudget, 1000);
  assert.equal(calls[0].agentId, "main");
  assert.deepEqual(calls[0].contextEngineHostSupport.capabilities, ["assemble-before-prompt", "thread-bootstrap-projection"]);

  assert.equal(await assembledContext(sdk, "clawbridge-codex", { ...params, contextEngine: { info: { id: "legacy" } } }, console), undefined);
  assert.equal(calls.length, 1, "the legacy engine is not asked");
  const perTurn = { assembleHarnessContextEngine: async () => ({ messages: [], estimatedTokens: 0, systemPromptAddition: "x" }) };
  assert.deepEqual(await assembledContext(perTurn, "clawbridge-codex", params, console), { text: '<context source="context engine marker">\nx\n</context>' });
  const failing = { assembleHarnessContextEngine: async () => { throw new Error("boom"); } };
  const warnings = [];
  assert.equal(await assembledContext(failing, "clawbridge-codex", params, { warn: (w) => warnings.push(w) }), undefined);
  assert.match(warnings[0], /could not assemble the context: boom/);
  assert.equal(renderContext("e", { messages: [] }), "", "nothing assembled, nothing sent");
});
