// Side work and the context engine in the plugin (side-work.js, context-engine.js): what goes to the
// bridge in `attempt/run` and what comes back to core. The bridge's side is
// tests/openclaw_side_work.rs (real OpenClaw, real Codex).

import assert from "node:assert/strict";
import { test } from "node:test";

import { CONTEXT_ENGINE_HOST_CAPABILITIES, assembledContext, renderContext } from "../src/context-engine.js";
import { createHarness } from "../src/harness.js";
import { finalizeSettledTurn, runIsolatedCompletion, runSideQuestion } from "../src/side-work.js";

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
    assert.equal(typeof harness.finalizeSettledTurn, "function");
  }
  for (const id of ["clawbridge-demo", "clawbridge-acp"]) {
    const harness = createHarness(runtime, id);
    assert.equal(harness.contextEngineHostCapabilities, undefined);
    assert.equal(harness.runIsolatedCompletionV2, undefined);
    assert.equal(harness.runSideQuestion, undefined);
    assert.equal(harness.finalizeSettledTurn, undefined);
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

/** The transcript rows of a settled tool turn, as the SDK's reader returns them. */
const SETTLED_ROWS = [
  { message: { role: "user", content: "Run the check.", idempotencyKey: "run-7:prompt" } },
  { message: { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "bash", arguments: { command: "echo hi" } }], stopReason: "toolUse", idempotencyKey: "clawbridge:run-7:t1:tool:c1:call" } },
  { message: { role: "toolResult", toolCallId: "c1", toolName: "bash", content: [{ type: "text", text: "hi" }], idempotencyKey: "clawbridge:run-7:t1:tool:c1:result" } },
];

/** A finalization's params as core prepares them (operation settled-tool-finalization, no tools). */
function finalization(extra = {}) {
  return {
    attempt: {
      runId: "run-7",
      sessionId: "s-7",
      sessionKey: "agent:main:s-7",
      agentId: "main",
      provider: "mock",
      modelId: "mock-model",
      model: { api: "openai-completions" },
      workspaceDir: "/w",
      prompt: "The previous assistant turn completed its tool calls but did not produce a user-visible answer.",
      operation: "settled-tool-finalization",
      disableTools: true,
      timeoutMs: 9000,
      ...extra,
    },
    settledAttempt: { terminal: { kind: "ok" }, assistantTexts: [], messagesSnapshot: [] },
  };
}

test("finalizeSettledTurn: one tool-less settle run seeded with the transcript; the answer stored once and owned", async () => {
  const runtime = fakeRuntime({ ...OK, assistantTexts: ["The check printed hi."] });
  const appended = [];
  runtime.options.sdk = { readVisibleSessionTranscriptMessageEntries: async () => SETTLED_ROWS };
  runtime.options.appendTranscriptMessage = async (args) => {
    appended.push(args);
    return { appended: true, messageId: "m-9" };
  };
  const result = await finalizeSettledTurn(runtime, "clawbridge-codex", finalization(), "harness");
  assert.equal(runtime.sent.length, 1);
  const { method, params } = runtime.sent[0];
  assert.equal(method, "attempt/run");
  assert.equal(params.isolation, "settle");
  assert.equal(params.disableTools, true);
  assert.equal(params.hostTools, undefined);
  assert.equal(params.sessionId, "s-7");
  assert.equal(params.runId, "run-7");
  assert.equal(params.timeoutMs, 9000);
  assert.match(params.prompt, /did not produce a user-visible answer/);
  assert.equal(params.auth, undefined, "harness auth forwards nothing");
  const texts = params.history.entries.map((e) => e.text).join("\n");
  assert.match(texts, /echo hi/, "the settled tool call is in the history");
  assert.match(texts, /hi/, "and its result");
  assert.deepEqual(result.assistant.content, [{ type: "text", text: "The check printed hi." }]);
  assert.equal(result.assistant.stopReason, "stop");
  assert.equal(result.assistant.api, "openai-completions");
  assert.equal(result.usage.output, 3);
  assert.equal(appended.length, 1, "the answer is stored once");
  assert.equal(appended[0].message.idempotencyKey, "clawbridge:run-7:settled-final");
  assert.equal(appended[0].sessionId, "s-7");
  assert.equal(result.assistantTranscriptOwned, true);
  assert.equal(result.assistantTranscriptIdempotencyKey, "clawbridge:run-7:settled-final");
});

test("finalizeSettledTurn: an empty answer is returned empty and stores nothing; a detached run stores nothing", async () => {
  const runtime = fakeRuntime({ ...OK, assistantTexts: [""] });
  const appended = [];
  runtime.options.sdk = { readVisibleSessionTranscriptMessageEntries: async () => SETTLED_ROWS };
  runtime.options.appendTranscriptMessage = async (args) => (appended.push(args), { appended: true });
  const empty = await finalizeSettledTurn(runtime, "clawbridge-claude", finalization(), "harness");
  assert.deepEqual(empty.assistant.content, [{ type: "text", text: "" }]);
  assert.equal(empty.assistantTranscriptOwned, undefined, "core handles an empty answer (its retry, its fallback)");
  const answering = fakeRuntime({ ...OK, assistantTexts: ["Done."] });
  answering.options.sdk = runtime.options.sdk;
  answering.options.appendTranscriptMessage = runtime.options.appendTranscriptMessage;
  const detached = await finalizeSettledTurn(answering, "clawbridge-claude", finalization({ sessionPersistence: "detached" }), "harness");
  assert.equal(detached.assistantTranscriptOwned, undefined);
  assert.equal(answering.sent[0].params.history, undefined, "a detached run reads no transcript (the bridge then refuses it)");
  assert.equal(appended.length, 0);
});

test("finalizeSettledTurn: a failed run or a refusal by the bridge throws, so core keeps its own fallback", async () => {
  const failed = fakeRuntime({ attemptId: "x", terminal: { kind: "failed", message: "model down" }, assistantTexts: [] });
  failed.options.sdk = { readVisibleSessionTranscriptMessageEntries: async () => SETTLED_ROWS };
  await assert.rejects(finalizeSettledTurn(failed, "clawbridge-codex", finalization(), "harness"), /settled-turn finalization ended failed: model down/);
  const refusing = fakeRuntime(() => {
    throw new Error("the run sent no transcript history, so the settled tool turn cannot be finalized");
  });
  await assert.rejects(finalizeSettledTurn(refusing, "clawbridge-codex", finalization(), "harness"), /no transcript history/);
  await assert.rejects(finalizeSettledTurn(refusing, "clawbridge-codex", finalization({ sessionId: "" }), "harness"), /without a session/);
});
