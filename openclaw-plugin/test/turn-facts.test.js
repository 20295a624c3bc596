// The attempt's turn facts as OpenClaw's embedded runner derives them: replay state across
// attempts, the before-message-write hook's options, detached runs, the result facts read off host
// tool runs (with the real SDK helpers), the model-response and timeout-phase facts the bridge
// reports, and the tool terminal observer's original result.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "node:test";
import { pathToFileURL } from "node:url";

import { HostToolRuns } from "../src/delivery.js";
import { observeToolTerminal } from "../src/host-requests.js";
import { replayMetadataOf, toAttemptResult } from "../src/result.js";
import { appendTranscriptGroup } from "../src/transcript.js";
import { applyYield, toolRunFacts } from "../src/turn-facts.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest, repoRoot } from "./support/fakes.js";

const CODEX = "clawbridge-codex";
const DEMO = "clawbridge-demo";
const SDK_PATH = join(repoRoot, ".peers/openclaw/node_modules/openclaw/dist/plugin-sdk/agent-harness-runtime.js");

/** The real SDK module, or a skip reason (a failure when peers are required). */
async function realSdk() {
  if (!existsSync(SDK_PATH)) {
    if (process.env.CLAWBRIDGE_REQUIRE_PEERS === "1") throw new Error(`CLAWBRIDGE_REQUIRE_PEERS=1 but ${SDK_PATH} is missing`);
    return null;
  }
  return import(pathToFileURL(SDK_PATH).href);
}

test("replayMetadata merges the run's earlier replay state: side effects accumulate, safety only narrows", () => {
  const safe = { hadPotentialSideEffects: false, replaySafe: true };
  assert.deepEqual(replayMetadataOf(safe, undefined), safe, "no earlier attempt: this attempt's facts");
  assert.deepEqual(replayMetadataOf(safe, { replayInvalid: false, hadPotentialSideEffects: false }), safe);
  assert.deepEqual(replayMetadataOf(safe, { replayInvalid: true, hadPotentialSideEffects: false }), { hadPotentialSideEffects: false, replaySafe: false });
  assert.deepEqual(replayMetadataOf(safe, { replayInvalid: false, hadPotentialSideEffects: true }), { hadPotentialSideEffects: true, replaySafe: true });
  // An earlier safe state never makes this attempt's unsafe facts safe.
  assert.deepEqual(
    replayMetadataOf({ hadPotentialSideEffects: true, replaySafe: false }, { replayInvalid: false, hadPotentialSideEffects: false }),
    { hadPotentialSideEffects: true, replaySafe: false },
  );
  const result = toAttemptResult(
    { terminal: { kind: "ok" }, replay: safe },
    { params: { sessionId: "s", initialReplayState: { replayInvalid: true, hadPotentialSideEffects: true } } },
  );
  assert.deepEqual(result.replayMetadata, { hadPotentialSideEffects: true, replaySafe: false });
});

test("the before-message-write hook gets prepareAssistantTranscriptMessage and the settled-finalization skip", async (t) => {
  const sdk = await realSdk();
  if (!sdk) return t.skip("OpenClaw is not installed");
  const prepared = [];
  const prepare = (message, sourceText) => {
    prepared.push(sourceText);
    return { ...message, content: [{ type: "text", text: `[delivered] ${sourceText}` }] };
  };
  const groups = [];
  const api = {
    appendMessages: async (p) => {
      groups.push(p);
      return p.messages.map(({ message }) => ({ appended: true, messageId: `id-${message.idempotencyKey}`, message }));
    },
    beforeMessageWrite: sdk.runAgentHarnessBeforeMessageWriteHook,
  };
  const params = { sessionId: "s", sessionTarget: { agentId: "main", sessionKey: "k" }, prepareAssistantTranscriptMessage: prepare };
  const messages = [
    { role: "toolResult", toolCallId: "c", toolName: "exec", content: [{ type: "text", text: "hi" }], idempotencyKey: "clawbridge:r:t:tool:c:result" },
    { role: "assistant", content: [{ type: "text", text: "It printed hi." }], stopReason: "stop", idempotencyKey: "clawbridge:r:t:assistant" },
  ];
  await appendTranscriptGroup({ params, mirrored: [] }, { messages }, api);
  assert.deepEqual(prepared, ["It printed hi."], "only the assistant row is prepared, with its text");
  const written = groups[0].messages.map((m) => m.message);
  assert.equal(written[0].content[0].text, "hi", "a tool row is not an assistant reply");
  assert.equal(written[1].content[0].text, "[delivered] It printed hi.");
  assert.equal(written[1].idempotencyKey, "clawbridge:r:t:assistant", "the bridge's key survives");

  const seen = [];
  const recording = { ...api, beforeMessageWrite: (p) => (seen.push(p), p.message) };
  await appendTranscriptGroup({ params: { ...params, operation: "settled-tool-finalization" }, mirrored: [] }, { messages }, recording);
  await appendTranscriptGroup({ params: { ...params, operation: "attempt" }, mirrored: [] }, { messages }, recording);
  assert.deepEqual(seen.map((p) => p.skipBeforeMessageWriteHooks === true), [true, true, false, false]);
  assert.ok(seen.every((p) => p.prepareAssistantTranscriptMessage === prepare));
});

test("a detached run mirrors no rows and the bridge is told so; a durable one mirrors", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "Say hello." });
  params.sessionPersistence = "detached";
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(result.assistantTranscriptOwned, false);
  assert.equal(env.transcript.calls.length, 0, "no transcript rows for a detached run");
  assert.equal(env.protocol.sent.find((m) => m.method === "attempt/run").params.sessionPersistence, "detached");
  assert.ok(!env.logger.lines.some((l) => /not in the transcript/.test(l)), "no rows is what a detached run asks for");
  await assert.rejects(
    appendTranscriptGroup({ params, mirrored: [] }, { messages: [{ role: "assistant", content: [] }] }, { appendMessage: async () => ({}) }),
    /detached run writes no transcript rows/,
  );

  const durable = attemptParams({ prompt: "Say hello." }).params;
  const again = await env.harness(DEMO).runAttempt(durable);
  assert.equal(again.assistantTranscriptOwned, true);
  assert.ok(env.transcript.calls.length > 0, "the durable run mirrors its rows");
  assert.deepEqual(env.protocol.problems, []);
});

test("host tool runs yield the embedded runner's result facts through the real SDK helpers", async (t) => {
  const sdk = await realSdk();
  if (!sdk) return t.skip("OpenClaw is not installed");
  const delivered = (extra = {}) => ({
    content: [{ type: "text", text: "sent" }],
    details: {
      messageDelivery: { status: "settled", partialDelivery: false, createdThreadIds: [], sourceReplyDelivered: true },
      sourceReplySink: "internal-ui",
      sourceReply: { text: "Done: the build is green." },
      ...extra,
    },
  });
  const heartbeat = { outcome: "progress", notify: true, summary: "Half way." };
  const runs = [
    { toolName: "sessions_spawn", args: {}, result: { details: { status: "accepted", runId: "child-run", childSessionKey: "agent:main:child", expectsCompletionMessage: true } }, isError: false },
    { toolName: "sessions_spawn", args: {}, result: { details: { status: "rejected", runId: "x", childSessionKey: "y" } }, isError: false },
    { toolName: "automations", args: { action: "add" }, result: { details: {} }, isError: false },
    { toolName: "cron", args: { action: "ADD" }, result: { details: {} }, isError: false },
    { toolName: "cron", args: { action: "add" }, result: new Error("invalid schedule"), isError: true },
    { toolName: "cron", args: { action: "list" }, result: { details: {} }, isError: false },
    { toolName: sdk.HEARTBEAT_RESPONSE_TOOL_NAME, args: {}, result: { details: heartbeat }, isError: false },
    { toolName: "message", args: { action: "send", message: "Done: the build is green." }, result: delivered(), isError: false },
  ];
  const facts = toolRunFacts(runs, sdk, { sessionKey: "agent:main:main", config: {} });
  assert.deepEqual(facts.acceptedSessionSpawns, [{ runId: "child-run", childSessionKey: "agent:main:child", expectsCompletionMessage: true }]);
  assert.equal(facts.successfulCronAdds, 2, "two scheduler adds succeeded; a failed add and a list are none");
  assert.deepEqual(facts.heartbeatToolResponse, sdk.normalizeHeartbeatToolResponse(heartbeat));
  assert.equal(facts.heartbeatToolResponse.summary, "Half way.");
  assert.equal(facts.sourceReplyDeliveryState, "delivered");
  assert.equal(facts.didDeliverSourceReplyViaMessageTool, true);
  assert.deepEqual(facts.messagingToolSourceReplyPayloads, [{ text: "Done: the build is green.", sourceReplyFinal: true }]);

  // A non-final source reply is delivered but leaves the source reply missing; no tools, no facts.
  const notFinal = toolRunFacts([{ ...runs[7], args: { ...runs[7].args, final: false } }], sdk, { config: {} });
  assert.equal(notFinal.sourceReplyDeliveryState, "missing");
  assert.equal(notFinal.didDeliverSourceReplyViaMessageTool, true);
  assert.deepEqual(notFinal.messagingToolSourceReplyPayloads, [{ text: "Done: the build is green.", sourceReplyFinal: false }]);
  assert.deepEqual(toolRunFacts([], sdk, {}), { sourceReplyDeliveryState: "missing", successfulCronAdds: 0 });
  // Without the SDK helpers nothing is guessed.
  const bare = toolRunFacts(runs, {}, {});
  assert.equal(bare.heartbeatToolResponse, undefined);
  assert.equal(bare.messagingToolSourceReplyPayloads, undefined);
  assert.equal(bare.sourceReplyDeliveryState, "missing");
});

test("a model response before a failure is a successful model response; a budget that ran out mid-tool is tool_execution", () => {
  const ctx = { params: { sessionId: "s" } };
  const failed = toAttemptResult({ terminal: { kind: "failed", message: "boom" }, modelResponded: true }, ctx);
  assert.equal(failed.terminal.kind, "failed");
  assert.equal(failed.hasSuccessfulModelResponse, true);
  assert.equal(toAttemptResult({ terminal: { kind: "failed", message: "boom" } }, ctx).hasSuccessfulModelResponse, false);
  assert.equal(toAttemptResult({ terminal: { kind: "ok" }, assistantTexts: ["hi"] }, ctx).hasSuccessfulModelResponse, true, "an older bridge: a completed turn with text");

  const timeout = { kind: "timeout", cause: "runBudget", message: "the attempt's budget of 10 ms ran out" };
  const midTool = toAttemptResult({ terminal: timeout, toolRunningAtTimeout: true }, ctx);
  assert.equal(midTool.terminal.kind, "timeout");
  assert.equal(midTool.terminal.phase, "tool_execution");
  assert.equal(midTool.terminal.source, "run_budget");
  assert.equal(toAttemptResult({ terminal: timeout }, ctx).terminal.phase, "prompt");
});

test("observeToolTerminal gets the OpenClaw tool's original result or error; a native tool has none", () => {
  const runs = new HostToolRuns();
  const original = { content: [{ type: "text", text: "sunny" }], details: { city: "Paris", receipt: { id: 7 } } };
  const thrown = new Error("no such city");
  runs.add({ toolName: "lookup_weather", args: { city: "Paris" }, result: original, isError: false, callId: "call_1" });
  runs.add({ toolName: "lookup_weather", args: { city: "Atlantis" }, result: thrown, isError: true, callId: "call_2" });
  const seen = [];
  const attempt = { hostToolRuns: runs, params: { observeToolTerminal: (input) => (seen.push(input), { executionStarted: true }) } };
  observeToolTerminal(attempt, { attemptId: "a", toolCallId: "call_1", toolName: "lookup_weather", outcome: "success" });
  observeToolTerminal(attempt, { attemptId: "a", toolCallId: "call_2", toolName: "lookup_weather", outcome: "failure" });
  observeToolTerminal(attempt, { attemptId: "a", toolCallId: "n_1", toolName: "exec", outcome: "success" });
  assert.equal(seen[0].result, original, "the very object the tool returned");
  assert.equal(seen[1].result, thrown, "the very error the tool threw");
  assert.equal("result" in seen[2], false);
  assert.equal("attemptId" in seen[0], false);
});

test("with a Codex backend: a host tool's spawn receipt and original result reach the result and the observer", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "sessions_spawn", args: { task: "lint" } }) });
  t.after(env.cleanup);
  const receipt = { content: [{ type: "text", text: "spawned" }], details: { status: "accepted", runId: "child-1", childSessionKey: "agent:main:subagent:1" } };
  const spawn = {
    name: "sessions_spawn",
    description: "Spawns a child session.",
    parameters: { type: "object", properties: { task: { type: "string" } } },
    execute: async () => receipt,
  };
  const { params, observed } = attemptParams({ host: fakeHost({ tools: [spawn] }) });
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(result.acceptedSessionSpawns, [{ runId: "child-1", childSessionKey: "agent:main:subagent:1", expectsCompletionMessage: false }]);
  assert.equal(observed.length, 1);
  assert.equal(observed[0].toolName, "sessions_spawn");
  assert.equal(observed[0].result, receipt, "the observer sees the tool's own result object");
  assert.equal(result.hasSuccessfulModelResponse, true);
  assert.equal(result.successfulCronAdds, 0);
  assert.equal(result.sourceReplyDeliveryState, "missing");
  assert.deepEqual(env.protocol.problems, []);
});

test("a yield is yieldDetected with its acknowledgment, and an interrupted turn is a yield's abort", () => {
  const interrupted = { terminal: { kind: "aborted", source: "runtime" } };
  applyYield(interrupted, { message: "waiting for the child", acknowledgment: "I'll report back when the lint run is done." });
  assert.equal(interrupted.yieldDetected, true);
  assert.equal(interrupted.yieldAcknowledgment, "I'll report back when the lint run is done.");
  assert.deepEqual(interrupted.terminal, { kind: "aborted", source: "yield_cleanup" });
  const completed = { terminal: { kind: "ok" } };
  applyYield(completed, { message: "m", acknowledgment: "  " });
  assert.equal(completed.yieldDetected, true);
  assert.equal("yieldAcknowledgment" in completed, false);
  assert.deepEqual(completed.terminal, { kind: "ok" }, "a turn that completed first keeps its terminal");
  const none = { terminal: { kind: "ok" } };
  applyYield(none, undefined);
  assert.equal("yieldDetected" in none, false);
});

test("with a Codex backend: sessions_yield calls the tool surface's onYield, which ends the native turn", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "sessions_yield", args: { message: "waiting" } }) });
  t.after(env.cleanup);
  let host;
  const yieldTool = {
    name: "sessions_yield",
    description: "Ends this turn until the child reports.",
    parameters: { type: "object", properties: { message: { type: "string" } } },
    execute: async (_id, args) => {
      host.calls.createToolSurface[0].options.onYield(args.message, "Waiting for the child session.");
      return { content: [{ type: "text", text: "yielded" }], details: { status: "yielded" } };
    },
  };
  host = fakeHost({ tools: [yieldTool] });
  const { params } = attemptParams({ host });
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(typeof host.calls.createToolSurface[0].options.onYield, "function", "the tool surface got onYield");
  assert.equal(result.yieldDetected, true);
  assert.equal(result.yieldAcknowledgment, "Waiting for the child session.");
  assert.ok((env.protocol.counts["attempt/cancel"] ?? 0) >= 1, "the native turn was told to end");
  assert.notEqual(result.terminal.source, "external", "a yield is no external abort");
  assert.deepEqual(env.protocol.problems, []);
});
