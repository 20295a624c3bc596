// The progress callbacks through the whole plugin and the real `clawbridge serve` (the demo harness
// replays a recorded Codex turn: one approved `echo` command, then the answer), with the real SDK
// helpers: what a block-streaming, verbose channel sees of a turn.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, test } from "node:test";

import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest, protocolSchema } from "./support/fakes.js";
import { createProtocolChecker } from "./support/schema.js";
import { loadRealSdk } from "./support/sdk.js";

const DEMO = "clawbridge-demo";
let real;

before(async () => {
  real = await loadRealSdk();
});

test("a demo turn drives block replies, tool summaries and output, phases, the deadline and the lifecycle", async (t) => {
  if (real.skip) return t.skip(real.skip);
  const bus = [];
  const env = pluginUnderTest({ deps: { progressSdk: { ...real.sdk, emitAgentEvent: (e) => bus.push(e) } } });
  t.after(env.cleanup);
  const { params, events } = attemptParams();
  const log = [];
  const record = (name) => (...args) => void log.push([name, ...args]);
  Object.assign(params, {
    verboseLevel: "full",
    blockReplyBreak: "text_end",
    onBlockReply: record("onBlockReply"),
    onBlockReplyFlush: record("onBlockReplyFlush"),
    onToolResult: record("onToolResult"),
    onAgentToolResult: record("onAgentToolResult"),
    onToolStreamBoundary: record("onToolStreamBoundary"),
    onExecutionPhase: record("onExecutionPhase"),
    onAssistantMessageStart: record("onAssistantMessageStart"),
    onAttemptDeadlineChanged: record("onAttemptDeadlineChanged"),
    onAttemptTimeoutArmed: record("onAttemptTimeoutArmed"),
  });
  const before = Date.now();
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  const calls = (name) => log.filter(([n]) => n === name).map(([, ...args]) => args);

  const [[deadline]] = calls("onAttemptDeadlineChanged");
  assert.equal(deadline.kind, "bounded");
  assert.ok(deadline.deadlineAtMs >= before + params.timeoutMs && deadline.deadlineAtMs <= Date.now() + params.timeoutMs);
  assert.equal(calls("onAttemptTimeoutArmed").length, 1);

  // The answer reached the channel as block replies, all of it, after the tool.
  const answer = result.assistantTexts.at(-1);
  const replies = calls("onBlockReply").map(([payload]) => payload.text);
  assert.ok(replies.join(" ").replace(/\s+/g, " ").includes(answer.trim().replace(/\s+/g, " ")), JSON.stringify({ replies, answer }));
  const order = log.map(([n]) => n);
  assert.ok(order.lastIndexOf("onToolStreamBoundary") < order.lastIndexOf("onBlockReply"), order.join(","));
  assert.deepEqual(calls("onBlockReplyFlush").at(-1), [{ reason: "terminal" }]);
  assert.ok(calls("onBlockReplyFlush").some(([c]) => c.reason === "tool_start"));

  // The command: a summary at its start and its output at its end (verbose full), the observer
  // with the sanitized result, the phase.
  const tool = result.toolMetas[0];
  const toolTexts = calls("onToolResult").map(([p]) => p.text);
  assert.equal(toolTexts.length, 2, JSON.stringify(toolTexts));
  // The output block holds what the command printed: the mirrored tool result row's text.
  const row = env.transcript.rows.find((r) => r.message.role === "toolResult" && r.message.toolCallId === tool.toolCallId);
  const printed = row.message.content.map((b) => b.text ?? "").join("").trim();
  assert.ok(printed.length > 0, JSON.stringify(row));
  assert.ok(toolTexts[1].endsWith(`\n\`\`\`txt\n${printed}\n\`\`\``), JSON.stringify({ text: toolTexts[1], printed }));
  assert.ok(toolTexts[1].startsWith(toolTexts[0]), "the output sits under the start summary's heading");
  const [[observed]] = calls("onAgentToolResult");
  assert.equal(observed.toolName, tool.toolName);
  assert.equal(observed.isError, false);
  assert.ok(calls("onExecutionPhase").some(([i]) => i.phase === "tool_execution_started" && i.toolCallId === tool.toolCallId));
  assert.ok(calls("onExecutionPhase").some(([i]) => i.phase === "turn_accepted"));

  // Agent events: lifecycle start then end; the tool's start and result; item events; the same on
  // the bus, under the run id.
  const lifecycle = events.filter((e) => e.stream === "lifecycle").map((e) => e.data.phase);
  assert.deepEqual(lifecycle, ["start", "end"]);
  const toolPhases = events.filter((e) => e.stream === "tool" && e.data.toolCallId === tool.toolCallId).map((e) => e.data.phase);
  assert.equal(toolPhases[0], "start");
  assert.equal(toolPhases.at(-1), "result");
  assert.ok(events.some((e) => e.stream === "item" && e.data.toolCallId === tool.toolCallId && e.data.phase === "end"));
  assert.ok(bus.length > 0 && bus.every((e) => e.runId === params.runId));
  assert.ok(bus.some((e) => e.stream === "command_output" && e.data.phase === "end"));
});

test("a turn past its budget: the streamed terminal already says timeout, onAttemptTimeout fires before the result", async (t) => {
  if (real.skip) return t.skip(real.skip);
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const protocol = createProtocolChecker(protocolSchema());
  const seen = [];
  const checker = {
    ...protocol,
    tap: (direction, message) => {
      seen.push(message);
      protocol.tap(direction, message);
    },
  };
  const env = pluginUnderTest({ checker, codexBin: fakeCodex(dir, { mode: "untilInterrupted" }), deps: { progressSdk: real.sdk } });
  t.after(env.cleanup);
  const { params, events } = attemptParams();
  params.timeoutMs = 1500;
  const log = [];
  params.onAttemptTimeout = (reason) => log.push(["timeout", reason, seen.some((m) => m.result?.terminal)]);
  const result = await env.harness("clawbridge-codex").runAttempt(params);
  assert.equal(result.terminal.kind, "timeout", JSON.stringify(result.terminal));

  const terminal = seen.find((m) => m.method === "attempt/event" && m.params.event.type === "turnTerminal").params.event;
  // The bridge's budget cancels the native turn; its streamed terminal names the timeout like the
  // result does (it used to say "aborted" until the result corrected it).
  assert.equal(terminal.kind, "timeout");
  assert.match(terminal.message, /budget of 1500 ms/);
  assert.equal(log.length, 1, "once");
  const [[, reason, resultSeen]] = log;
  assert.equal(reason.name, "TimeoutError");
  assert.equal(reason.message, terminal.message);
  assert.equal(resultSeen, false, "signalled from the event, before the result arrived");
  assert.deepEqual(events.filter((e) => e.stream === "lifecycle").at(-1).data, { phase: "end", timeoutPhase: "prompt", aborted: true });
});

test("an OpenClaw tool's own result (with its details) reaches onAgentToolResult and the bus, not only the text", async (t) => {
  if (real.skip) return t.skip(real.skip);
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bus = [];
  const env = pluginUnderTest({
    codexBin: fakeCodex(dir, { mode: "toolCall", toolName: "lookup_weather" }),
    deps: { progressSdk: { ...real.sdk, emitAgentEvent: (e) => bus.push(e) } },
  });
  t.after(env.cleanup);
  const returned = { content: [{ type: "text", text: "sunny in Paris" }], details: { city: "Paris", celsius: 21 } };
  const weather = {
    name: "lookup_weather",
    description: "Looks up the weather in a city.",
    parameters: { type: "object", properties: { city: { type: "string" } } },
    execute: async () => returned,
  };
  const { params } = attemptParams({ host: fakeHost({ tools: [weather] }) });
  const observed = [];
  params.onAgentToolResult = (event) => observed.push(event);
  const result = await env.harness("clawbridge-codex").runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  // The runner hands its observers the sanitized tool result itself (memory recall reads the
  // details of memory tools this way).
  const expected = real.sdk.sanitizeToolResult(returned);
  assert.deepEqual(observed, [{ toolName: "lookup_weather", result: expected, isError: false }]);
  assert.deepEqual(bus.filter((e) => e.stream === "tool" && e.data.phase === "result").map((e) => e.data.result), [expected]);
});

test("an approval a person takes longer over than the whole budget: the bridge pauses the budget, the lane deadline goes unlimited then bounded again, the turn completes", async (t) => {
  if (real.skip) return t.skip(real.skip);
  const protocol = createProtocolChecker(protocolSchema());
  const env = pluginUnderTest({ checker: protocol, deps: { progressSdk: real.sdk } });
  t.after(env.cleanup);
  const host = fakeHost();
  const decide = host.requestApproval;
  // The person answers after 2.5 s; the budget is 1.5 s and the rest of the demo turn far less.
  host.requestApproval = (request) => new Promise((resolve) => setTimeout(() => resolve(decide(request)), 2500));
  const { params } = attemptParams({ host });
  params.timeoutMs = 1500;
  const log = [];
  params.onAttemptDeadlineChanged = (deadline) => log.push(["deadline", deadline, Date.now()]);
  params.onExecutionPhase = (info) => log.push(["phase", info]);
  params.onAttemptTimeout = (reason) => log.push(["timeout", reason]);
  const started = Date.now();
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(host.calls.requestApproval.length, 1);
  assert.ok(!log.some(([kind]) => kind === "timeout"), "the budget never fired");

  const deadlines = log.filter(([kind]) => kind === "deadline");
  assert.deepEqual(deadlines.map(([, d]) => d.kind), ["bounded", "unlimited", "bounded"], JSON.stringify(deadlines));
  const [[, first], , [, resumed, resumedAt]] = deadlines;
  assert.ok(first.deadlineAtMs >= started + 1500);
  // The new deadline is what was left of the budget from the resume: after the person answered,
  // and no later than the resume plus the whole budget.
  assert.ok(resumed.deadlineAtMs > first.deadlineAtMs, "the person's time was not charged to the budget");
  assert.ok(resumed.deadlineAtMs <= resumedAt + 1500, JSON.stringify({ resumed, resumedAt }));

  // The demo replays a recorded Codex turn: its model call start is the runner's phase.
  const phases = log.filter(([kind]) => kind === "phase").map(([, info]) => info);
  assert.deepEqual(
    phases.find((i) => i.phase === "model_call_started"),
    { phase: "model_call_started", provider: params.provider, model: params.modelId, firstModelCallStarted: true },
  );
  assert.ok(phases.findIndex((i) => i.phase === "turn_accepted") < phases.findIndex((i) => i.phase === "model_call_started"));
});
