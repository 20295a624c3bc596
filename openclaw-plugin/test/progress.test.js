// The progress module on its own: bridge events in, OpenClaw callbacks out, against the real SDK
// helpers (block reply chunker, tool meta and activity projections, sanitizers). Each expected
// shape says which behaviour of OpenClaw's own embedded runner it copies.

import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { before, test } from "node:test";

import { AttemptProgress } from "../src/progress.js";
import { recordingLogger } from "./support/fakes.js";
import { loadRealSdk } from "./support/sdk.js";

const HARNESS = "clawbridge-codex";
let real;

before(async () => {
  real = await loadRealSdk();
});

/** Skips `t` when the real SDK is not installed (a failure under CLAWBRIDGE_REQUIRE_PEERS=1). */
function sdkOrSkip(t) {
  if (real.skip) {
    t.skip(real.skip);
    return undefined;
  }
  return real.sdk;
}

/**
 * Attempt params whose every callback appends `[name, ...args]` to one ordered `log`; `overrides`
 * replace callbacks or set options. `bus` records what reached the agent event bus.
 */
function recordingParams(overrides = {}) {
  const log = [];
  const bus = [];
  const record =
    (name) =>
    (...args) => {
      log.push([name, ...args]);
    };
  const names = [
    "onPartialReply",
    "onBlockReply",
    "onBlockReplyFlush",
    "onAssistantMessageStart",
    "onReasoningStream",
    "onReasoningEnd",
    "onToolResult",
    "onAgentToolResult",
    "onToolStreamBoundary",
    "onExecutionPhase",
    "onAgentEvent",
    "onAttemptDeadlineChanged",
    "onAttemptTimeoutArmed",
    "onAttemptTimeout",
    "onAttemptAbort",
  ];
  const params = {
    runId: "run-1",
    sessionKey: "agent:main:explicit:s-1",
    lifecycleGeneration: "gen-1",
    provider: "mock",
    modelId: "mock-1",
    thinkLevel: "low",
    timeoutMs: 60_000,
  };
  for (const name of names) params[name] = record(name);
  Object.assign(params, overrides);
  return { params, log, bus };
}

function progressFor(sdk, overrides, extra = {}) {
  const { params, log, bus } = recordingParams(overrides);
  const logger = recordingLogger();
  let clock = 1_000_000;
  const progress = new AttemptProgress({
    params,
    harnessId: HARNESS,
    logger,
    sdk: { ...sdk, emitAgentEvent: (event) => bus.push(event) },
    now: () => clock,
    ...extra,
  });
  let seq = 0;
  const feed = (...events) => {
    for (const event of events) progress.onEvent({ attemptId: "a:1", seq: seq++, event });
  };
  const advance = (ms) => {
    clock += ms;
  };
  return { progress, params, log, bus, logger, feed, advance };
}

const names = (log) => log.map(([name]) => name);
const calls = (log, name) => log.filter(([n]) => n === name).map(([, ...args]) => args);
const agentEvents = (log, stream) => calls(log, "onAgentEvent").map(([e]) => e).filter((e) => e.stream === stream);

const delta = (itemId, text) => ({ type: "assistantDelta", itemId, delta: text });
const final = (itemId, text) => ({ type: "assistantFinal", itemId, text });

test("text_end block streaming: the SDK chunker cuts the deltas, each chunk tagged with its assistant message", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const chunking = { minChars: 10, maxChars: 40, breakPreference: "sentence" };
  const { progress, log, feed } = progressFor(sdk, { blockReplyBreak: "text_end", blockReplyChunking: chunking });
  const text = "The first sentence is here. The second one follows it. A third closes the reply.";
  feed({ type: "turnStarted", turnId: "tu-1" });
  for (const piece of text.match(/.{1,7}/gs)) feed(delta("msg_1", piece));
  await progress.idle();
  const streamed = calls(log, "onBlockReply");
  // The runner drains its chunker after every text delta in text_end mode (not only at the end).
  assert.ok(streamed.length >= 1, "chunks go out while the text streams");
  feed(final("msg_1", text));
  await progress.finish({ kind: "ok" });

  const replies = calls(log, "onBlockReply");
  assert.ok(replies.length >= 2, JSON.stringify(replies));
  // The runner passes `{ assistantMessageIndex }` as the block reply context; the first message of
  // a run is index 1 (its counter starts at 0 and moves at each message start).
  assert.ok(replies.every(([, context]) => context.assistantMessageIndex === 1), JSON.stringify(replies));
  assert.ok(replies.every(([payload]) => payload.text.length <= chunking.maxChars && Object.keys(payload).join() === "text"));
  assert.equal(replies.map(([p]) => p.text).join(" ").replace(/\s+/g, " "), text, "every word once, in order");
  assert.equal(calls(log, "onAssistantMessageStart").length, 1, "one per assistant message");
  // text_end mode flushes at the tool boundary and the terminal only; message_end is not called.
  assert.deepEqual(calls(log, "onBlockReplyFlush"), [[{ reason: "terminal" }]]);
});

test("message_end block streaming: the whole message at its end, then onBlockReplyFlush once its replies are delivered", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const delivered = [];
  const { progress, log, feed } = progressFor(sdk, {
    blockReplyBreak: "message_end",
    onBlockReply: (payload) =>
      new Promise((resolve) =>
        setTimeout(() => {
          delivered.push(payload.text);
          resolve();
        }, 20),
      ),
    onBlockReplyFlush: (context) => {
      log.push(["onBlockReplyFlush", context, [...delivered]]);
    },
  });
  feed(delta("m1", "Hello "), delta("m1", "there."));
  await progress.idle();
  assert.deepEqual(delivered, [], "nothing before the message ends");
  feed(final("m1", "Hello there."));
  await progress.idle();
  // The runner awaits the message's block replies, then calls onBlockReplyFlush("message_end").
  assert.deepEqual(calls(log, "onBlockReplyFlush"), [[{ reason: "message_end" }, ["Hello there."]]]);
  await progress.finish({ kind: "ok" });
  assert.deepEqual(calls(log, "onBlockReplyFlush").at(-1), [{ reason: "terminal" }, ["Hello there."]]);
});

test("a tool start waits for the narration's block replies and onBlockReplyFlush(tool_start) before its own progress", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed } = progressFor(sdk, {
    onBlockReply: (payload, context) =>
      new Promise((resolve) =>
        setTimeout(() => {
          log.push(["onBlockReply delivered", payload, context]);
          resolve();
        }, 30),
      ),
  });
  feed(
    { type: "turnStarted", turnId: "tu-1" },
    delta("m1", "Let me look."),
    final("m1", "Let me look."),
    { type: "toolStarted", callId: "call_1", toolName: "exec", arguments: { command: "ls" }, native: true },
  );
  await progress.idle();
  const order = names(log).filter((n) => ["onBlockReply delivered", "onBlockReplyFlush", "onExecutionPhase"].includes(n));
  // The runner flushes its block reply buffer (awaiting delivery), then onBlockReplyFlush with the
  // tool_start reason, and only then reports the tool.
  assert.deepEqual(order.slice(-3), ["onBlockReply delivered", "onBlockReplyFlush", "onExecutionPhase"]);
  assert.deepEqual(calls(log, "onBlockReplyFlush")[0], [{ reason: "tool_start", assistantMessageIndex: 1 }]);
});

test("a final that differs from its deltas replaces the partial text; block replies carry the final text", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed } = progressFor(sdk, { blockReplyBreak: "message_end" });
  feed(delta("m1", "Helo"), final("m1", "Hello, world"));
  await progress.finish({ kind: "ok" });
  // Partial replies are `{ text, delta }` with `text` the message so far; a snapshot that is no
  // continuation is sent with `replace: true` (the runner's text_end snapshot).
  assert.deepEqual(calls(log, "onPartialReply"), [[{ text: "Helo", delta: "Helo" }], [{ text: "Hello, world", delta: "", replace: true }]]);
  assert.deepEqual(calls(log, "onBlockReply").map(([p]) => p.text), ["Hello, world"]);
  // The assistant agent event mirrors the runner's final-message rule: replace when the final is
  // not a continuation of what streamed, delta "" then.
  const assistant = agentEvents(log, "assistant").map((e) => e.data);
  assert.deepEqual(assistant, [
    { text: "Helo", delta: "Helo", itemId: "m1" },
    { text: "Hello, world", delta: "", replace: true, itemId: "m1" },
  ]);

  const cont = progressFor(sdk, {});
  cont.feed(delta("m1", "Hel"), final("m1", "Hello"), final("m1", "ignored: already final"));
  await cont.progress.finish({ kind: "ok" });
  assert.deepEqual(agentEvents(cont.log, "assistant").at(-1).data, { text: "Hello", delta: "lo", itemId: "m1" });
  assert.equal(agentEvents(cont.log, "assistant").length, 2);
});

test("partial replies: one in flight at a time, the deltas that arrive meanwhile merge into the next call", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  let release;
  const seen = [];
  const { progress, feed } = progressFor(sdk, {
    onPartialReply: (payload) => {
      seen.push(payload);
      return seen.length === 1 ? new Promise((resolve) => (release = resolve)) : undefined;
    },
  });
  feed(delta("m1", "a"), delta("m1", "b"), delta("m1", "c"));
  await progress.idle();
  assert.deepEqual(seen, [{ text: "a", delta: "a" }]);
  release();
  await new Promise((resolve) => setImmediate(resolve));
  // The runner keeps one partial reply in flight and merges the deltas that queue behind it.
  assert.deepEqual(seen, [{ text: "a", delta: "a" }, { text: "abc", delta: "bc" }]);
  await progress.finish({ kind: "ok" });
});

test("a new assistant item is a new message: onAssistantMessageStart, fresh partial text, the next message index", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed } = progressFor(sdk, {});
  feed(delta("m1", "One."), final("m1", "One."), delta("m2", "Two."), final("m2", "Two."));
  await progress.finish({ kind: "ok" });
  assert.equal(calls(log, "onAssistantMessageStart").length, 2);
  assert.deepEqual(calls(log, "onPartialReply").map(([p]) => p.text), ["One.", "Two."]);
  assert.deepEqual(calls(log, "onBlockReply").map(([p, c]) => [p.text, c.assistantMessageIndex]), [["One.", 1], ["Two.", 2]]);
  // assistant_output_started is reported once, at the first visible output (as the CLI runner does).
  const phases = calls(log, "onExecutionPhase").map(([i]) => i.phase);
  assert.deepEqual(phases.filter((p) => p === "assistant_output_started"), ["assistant_output_started"]);
});

test("silentExpected shows nothing of the text or reasoning; suppressLiveStreamOutput sends each message whole at its end", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const turn = [
    { type: "reasoningDelta", itemId: "r1", delta: "Hmm" },
    { type: "reasoningFinal", itemId: "r1", text: "Hmm." },
    delta("m1", "HEARTBEAT"),
    final("m1", "HEARTBEAT_OK"),
  ];
  const silent = progressFor(sdk, { silentExpected: true, reasoningLevel: "stream", blockReplyBreak: "message_end" });
  silent.feed(...turn);
  await silent.progress.finish({ kind: "ok" });
  // The runner drops every visible emission of a run that is expected to be silent.
  for (const name of ["onPartialReply", "onBlockReply", "onReasoningStream"]) assert.equal(calls(silent.log, name).length, 0, name);
  assert.equal(agentEvents(silent.log, "assistant").length, 0);
  assert.equal(silent.bus.filter((e) => e.stream === "thinking").length, 0);
  assert.deepEqual(calls(silent.log, "onBlockReplyFlush"), [[{ reason: "terminal" }]], "no message_end flush either");

  const whole = progressFor(sdk, { suppressLiveStreamOutput: true });
  whole.feed(delta("m1", "Hel"), delta("m1", "lo"), final("m1", "Hello"));
  await whole.progress.finish({ kind: "ok" });
  // Without a live consumer the runner skips the per-delta stream; the message end still
  // publishes the text and delivers it as a block reply.
  assert.equal(calls(whole.log, "onPartialReply").length, 0);
  assert.deepEqual(agentEvents(whole.log, "assistant").map((e) => e.data), [{ text: "Hello", delta: "Hello", itemId: "m1" }]);
  assert.deepEqual(calls(whole.log, "onBlockReply").map(([p]) => p.text), ["Hello"]);
});

test("reasoning: streamed to onReasoningStream when the reasoning level is stream, ended once, on the bus as thinking", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, bus, feed } = progressFor(sdk, { reasoningLevel: "stream" });
  feed(
    { type: "reasoningDelta", itemId: "r1", delta: "Thinking " },
    { type: "reasoningDelta", itemId: "r1", delta: "hard" },
    { type: "reasoningDelta", itemId: "r1", delta: "  " },
    delta("m1", "Answer"),
  );
  await progress.finish({ kind: "ok" });
  // The runner streams the trimmed reasoning so far, skips a repeat of the same text, and adds no
  // opt-in flag in stream mode.
  assert.deepEqual(calls(log, "onReasoningStream"), [[{ text: "Thinking" }], [{ text: "Thinking hard" }]]);
  assert.equal(calls(log, "onReasoningEnd").length, 1);
  assert.ok(names(log).indexOf("onReasoningEnd") < names(log).indexOf("onAssistantMessageStart"), "ended before the answer");
  // Thinking goes to the agent event bus only, as `{ text, delta }`; onAgentEvent never sees it.
  assert.deepEqual(
    bus.filter((e) => e.stream === "thinking").map((e) => e.data),
    [{ text: "Thinking", delta: "Thinking" }, { text: "Thinking hard", delta: " hard" }],
  );
  assert.equal(agentEvents(log, "thinking").length, 0);
  assert.deepEqual(bus.find((e) => e.stream === "thinking").runId, "run-1");
});

test("reasoning modes: non-stream modes need streamReasoningInNonStreamModes, `on` sends it as a reasoning block reply, thinking off shows nothing", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const events = [{ type: "reasoningDelta", itemId: "r1", delta: "Hmm" }, { type: "reasoningFinal", itemId: "r1", text: "Hmm, yes." }];

  const off = progressFor(sdk, { reasoningLevel: "off" });
  off.feed(...events);
  await off.progress.finish({ kind: "ok" });
  assert.equal(calls(off.log, "onReasoningStream").length, 0, "reasoning level off streams nothing");
  assert.equal(calls(off.log, "onReasoningEnd").length, 1, "the stream still ends (the runner ends an open stream regardless)");

  const optIn = progressFor(sdk, { reasoningLevel: "off", streamReasoningInNonStreamModes: true });
  optIn.feed(...events);
  await optIn.progress.finish({ kind: "ok" });
  // Outside stream mode the runner marks the payload as needing the channel's progress opt-in.
  assert.deepEqual(calls(optIn.log, "onReasoningStream").at(-1), [{ text: "Hmm, yes.", requiresReasoningProgressOptIn: true }]);

  const on = progressFor(sdk, { reasoningLevel: "on" });
  on.feed(...events, final("m1", "Yes."));
  await on.progress.finish({ kind: "ok" });
  assert.equal(calls(on.log, "onReasoningStream").length, 0, "`on` delivers reasoning as a block, not a stream");
  assert.deepEqual(calls(on.log, "onBlockReply").map(([p]) => p), [{ text: "Hmm, yes.", isReasoning: true }, { text: "Yes." }]);

  const noThinking = progressFor(sdk, { reasoningLevel: "stream", thinkLevel: "off" });
  noThinking.feed(...events);
  await noThinking.progress.finish({ kind: "ok" });
  assert.equal(calls(noThinking.log, "onReasoningStream").length, 0, "thinkLevel off hides reasoning");

  // With reasoning `on` and no block replies, the runner sends no partial replies at all.
  const noBlocks = progressFor(sdk, { reasoningLevel: "on", onBlockReply: undefined });
  noBlocks.feed(delta("m1", "x"));
  await noBlocks.progress.finish({ kind: "ok" });
  assert.equal(calls(noBlocks.log, "onPartialReply").length, 0);
});

test("a native command: phase, item/tool/command_output events, summaries and output by verbosity, tool result observer, stream boundary", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const boundaries = [];
  const { progress, log, bus, feed, advance } = progressFor(sdk, {
    verboseLevel: "full",
    onToolStreamBoundary: () =>
      new Promise((resolve) =>
        setTimeout(() => {
          boundaries.push("done");
          resolve();
        }, 10),
      ),
  });
  const call = { callId: "call_1", toolName: "exec", arguments: { command: "echo hi" }, native: true };
  feed({ type: "toolStarted", ...call }, { type: "toolOutputDelta", callId: "call_1", delta: "h" });
  await progress.idle();
  advance(10);
  feed({ type: "toolOutputDelta", callId: "call_1", delta: "i\n" });
  await progress.idle();
  advance(300);
  feed(
    { type: "toolOutputDelta", callId: "call_1", delta: "" },
    { type: "toolOutputDelta", callId: "call_1", delta: "!" },
    {
      type: "toolFinished",
      call,
      outcome: { kind: "success" },
      exitCode: 0,
      executionStarted: true,
      output: { text: "hi\n!", omittedBytes: 0 },
    },
  );
  await progress.idle();
  assert.deepEqual(boundaries, ["done"], "the tool stream boundary is awaited before the next event");

  const meta = sdk.inferToolMetaFromArgs("exec", call.arguments, { detailMode: "explain" });
  // onExecutionPhase as the runner reports a tool start.
  assert.deepEqual(calls(log, "onExecutionPhase").find(([i]) => i.phase === "tool_execution_started"), [
    { phase: "tool_execution_started", provider: "mock", model: "mock-1", backend: HARNESS, tool: "exec", toolCallId: "call_1" },
  ]);
  // Item events are the SDK's tool activity projection (start, update, end) plus timestamps.
  const items = agentEvents(log, "item").map((e) => e.data);
  assert.deepEqual(items.map((i) => i.phase), ["start", "update", "update", "end"], "exec updates are throttled to one per 250 ms");
  assert.deepEqual(items[0], { ...sdk.projectAgentToolActivity({ toolCallId: "call_1", name: "exec", phase: "start", args: call.arguments, meta }), startedAt: 1_000_000 });
  assert.equal(items[3].status, "completed");
  assert.equal(items[3].endedAt, 1_000_310);
  // Tool events: start with sanitized args; an update per output delta (no payload on the
  // callback); the result with meta/isError/commandBearing (the result itself only on the bus).
  const tools = agentEvents(log, "tool").map((e) => e.data);
  assert.deepEqual(tools[0], { phase: "start", name: "exec", toolCallId: "call_1", args: { command: "echo hi" } });
  assert.deepEqual(tools.slice(1, -1), [1, 2, 3].map(() => ({ phase: "update", name: "exec", toolCallId: "call_1" })));
  assert.deepEqual(tools.at(-1), { phase: "result", name: "exec", toolCallId: "call_1", meta, isError: false, commandBearing: true });
  const busResult = bus.filter((e) => e.stream === "tool").at(-1).data;
  assert.deepEqual(busResult.result, { content: [{ type: "text", text: "hi\n!" }], details: { status: "completed", exitCode: 0 } });
  // command_output: a running delta per refresh, then the end with the status and exit code.
  const commands = agentEvents(log, "command_output").map((e) => e.data);
  assert.deepEqual(commands.at(-1), {
    itemId: "command:call_1",
    phase: "end",
    title: `command ${meta}`,
    toolCallId: "call_1",
    name: "exec",
    output: "hi\n!",
    status: "completed",
    exitCode: 0,
  });
  assert.deepEqual(commands.slice(0, -1).map((c) => [c.phase, c.output, c.status]), [["delta", "h", "running"], ["delta", "hi\n!", "running"]]);
  // onToolResult: the start summary (a command's meta only in full verbosity) and, in full
  // verbosity, the output under the same heading in a txt fence.
  const heading = sdk.formatToolAggregate("exec", [meta], { markdown: true });
  assert.deepEqual(calls(log, "onToolResult"), [[{ text: heading }], [{ text: `${heading}\n\`\`\`txt\nhi\n!\n\`\`\`` }]]);
  // onAgentToolResult: synchronous, the sanitized result.
  assert.deepEqual(calls(log, "onAgentToolResult"), [[{ toolName: "exec", result: busResult.result, isError: false }]]);
});

test("tool summaries follow shouldEmitToolResult/shouldEmitToolOutput over verboseLevel; a declined tool is blocked, an error", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const read = { callId: "c2", toolName: "read", arguments: { path: "/tmp/notes.txt" }, native: true };
  const declined = {
    type: "toolFinished",
    call: read,
    outcome: { kind: "declined", reason: "the user denied this action" },
    executionStarted: false,
  };

  const quiet = progressFor(sdk, { verboseLevel: "full", shouldEmitToolResult: () => false, shouldEmitToolOutput: () => false });
  quiet.feed({ type: "toolStarted", ...read }, declined);
  await quiet.progress.finish({ kind: "ok" });
  assert.equal(calls(quiet.log, "onToolResult").length, 0, "the callbacks win over verboseLevel");

  const on = progressFor(sdk, { verboseLevel: "on" });
  on.feed({ type: "toolStarted", ...read }, declined);
  await on.progress.finish({ kind: "ok" });
  const meta = sdk.inferToolMetaFromArgs("read", read.arguments, { detailMode: "explain" });
  // verbose `on`: the summary names a non-command tool's meta; no output.
  assert.deepEqual(calls(on.log, "onToolResult"), [[{ text: sdk.formatToolAggregate("read", [meta], { markdown: true }) }]]);
  const end = agentEvents(on.log, "item").at(-1).data;
  // A tool that never ran ends `blocked` (the runner's status when execution did not start).
  assert.equal(end.status, "blocked");
  assert.equal(end.error, "declined: the user denied this action");
  assert.equal(agentEvents(on.log, "tool").at(-1).data.isError, true);
  assert.equal(agentEvents(on.log, "command_output").length, 0, "only commands have command output");

  const plain = progressFor(sdk, { verboseLevel: "full", toolResultFormat: "plain" });
  plain.feed(
    { type: "toolStarted", callId: "c3", toolName: "exec", arguments: { command: "true" }, native: true },
    { type: "toolFinished", call: { callId: "c3", toolName: "exec", arguments: { command: "true" } }, outcome: { kind: "success" }, executionStarted: true, output: { text: "  done \n", omittedBytes: 0 } },
  );
  await plain.progress.finish({ kind: "ok" });
  assert.match(calls(plain.log, "onToolResult").at(-1)[0].text, /\ndone$/, "plain format: no fence, trimmed");
});

test("lifecycle and phases: start at the turn, end/error/finishing at the result; timeouts and aborts signalled once", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const ok = progressFor(sdk, {});
  ok.progress.start();
  ok.feed({ type: "turnStarted", turnId: "tu-1" }, { type: "usage", inputTokens: 1, outputTokens: 2 }, { type: "turnTerminal", kind: "ok" });
  await ok.progress.finish({ kind: "ok" });
  // The runner arms a bounded lane deadline of the attempt's budget, then says the timeout is armed.
  assert.deepEqual(calls(ok.log, "onAttemptDeadlineChanged"), [[{ kind: "bounded", deadlineAtMs: 1_000_000 + 60_000 }]]);
  assert.equal(calls(ok.log, "onAttemptTimeoutArmed").length, 1);
  assert.deepEqual(calls(ok.log, "onExecutionPhase")[0], [{ phase: "turn_accepted", provider: "mock", model: "mock-1", backend: HARNESS }]);
  // Lifecycle on onAgentEvent: `{phase:"start", startedAt}`, then `{phase:"end", aborted}`; the bus
  // copy of the end also carries endedAt.
  assert.deepEqual(agentEvents(ok.log, "lifecycle").map((e) => e.data), [{ phase: "start", startedAt: 1_000_000 }, { phase: "end", aborted: false }]);
  assert.deepEqual(ok.bus.filter((e) => e.stream === "lifecycle").at(-1), {
    runId: "run-1",
    lifecycleGeneration: "gen-1",
    sessionKey: "agent:main:explicit:s-1",
    stream: "lifecycle",
    data: { phase: "end", aborted: false, endedAt: 1_000_000 },
  });
  // The host publishes usage itself (reportOutputTokens); a second usage event would double it.
  assert.equal(agentEvents(ok.log, "usage").length + ok.bus.filter((e) => e.stream === "usage").length, 0);

  const deferred = progressFor(sdk, { deferTerminalLifecycle: true });
  deferred.feed({ type: "turnStarted", turnId: "tu-1" });
  await deferred.progress.finish({ kind: "failed", message: "boom" });
  assert.deepEqual(agentEvents(deferred.log, "lifecycle").at(-1).data, { phase: "finishing", error: "boom", aborted: false });

  const failed = progressFor(sdk, {});
  failed.feed({ type: "turnStarted", turnId: "tu-1" });
  await failed.progress.finish({ kind: "failed", message: "the model is gone" });
  assert.deepEqual(agentEvents(failed.log, "lifecycle").at(-1).data, { phase: "error", error: "the model is gone", aborted: false });

  const timeout = progressFor(sdk, {});
  timeout.feed({ type: "turnStarted", turnId: "tu-1" }, { type: "turnTerminal", kind: "timeout", message: "no progress from codex for 300s" });
  // Signalled as the event arrives, before the result: the host must be able to unwind promptly.
  const [[reason]] = calls(timeout.log, "onAttemptTimeout");
  assert.ok(reason instanceof Error && reason.name === "TimeoutError" && reason.message === "no progress from codex for 300s");
  await timeout.progress.finish({ kind: "timeout", message: "no progress from codex for 300s" });
  assert.equal(calls(timeout.log, "onAttemptTimeout").length, 1, "once");
  assert.deepEqual(agentEvents(timeout.log, "lifecycle").at(-1).data, { phase: "end", timeoutPhase: "prompt", aborted: true });

  const budget = progressFor(sdk, {});
  await budget.progress.finish({ kind: "timeout", message: "the attempt's budget of 10 ms ran out" });
  assert.equal(calls(budget.log, "onAttemptTimeout")[0][0].message, "the attempt's budget of 10 ms ran out");
  assert.equal(agentEvents(budget.log, "lifecycle").length, 0, "no lifecycle end without a start");

  const aborted = progressFor(sdk, {});
  aborted.progress.aborted();
  aborted.progress.aborted();
  assert.equal(calls(aborted.log, "onAttemptAbort").length, 1);

  const unlimited = progressFor(sdk, { timeoutMs: 2_147_000_000 });
  unlimited.progress.start();
  assert.deepEqual(calls(unlimited.log, "onAttemptDeadlineChanged"), [[{ kind: "unlimited" }]]);
});

test("plan events carry OpenClaw's step statuses", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed } = progressFor(sdk, {});
  feed({
    type: "plan",
    explanation: "first things first",
    steps: [
      { step: "read", status: "completed" },
      { step: "edit", status: "inProgress" },
      { step: "test", status: "pending" },
      { step: "ship", status: "unknown" },
      { step: " ", status: "pending" },
    ],
  });
  await progress.finish({ kind: "ok" });
  // The shape the runner publishes for plan updates; the reply runner keeps only pending /
  // in_progress / completed steps, so the bridge's statuses are mapped onto those.
  assert.deepEqual(agentEvents(log, "plan").map((e) => e.data), [
    {
      phase: "update",
      title: "Plan updated",
      source: HARNESS,
      explanation: "first things first",
      steps: [
        { step: "read", status: "completed" },
        { step: "edit", status: "in_progress" },
        { step: "test", status: "pending" },
        { step: "ship", status: "pending" },
      ],
    },
  ]);
});

test("callbacks that throw or reject are logged and never stop the attempt's progress", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const boom = () => {
    throw new Error("sync boom");
  };
  const reject = () => Promise.reject(new Error("async boom"));
  const overrides = {};
  for (const name of ["onPartialReply", "onAssistantMessageStart", "onAgentEvent", "onExecutionPhase", "onToolResult", "onAgentToolResult", "onAttemptDeadlineChanged"]) {
    overrides[name] = boom;
  }
  for (const name of ["onBlockReply", "onBlockReplyFlush", "onToolStreamBoundary"]) overrides[name] = reject;
  const { progress, logger, feed } = progressFor(sdk, { ...overrides, verboseLevel: "full" }, {});
  progress.start();
  feed(
    { type: "turnStarted", turnId: "tu-1" },
    delta("m1", "Hi."),
    { type: "toolStarted", callId: "c1", toolName: "exec", arguments: { command: "ls" } },
    { type: "toolFinished", call: { callId: "c1", toolName: "exec" }, outcome: { kind: "success" }, executionStarted: true },
    final("m2", "Done."),
  );
  await progress.finish({ kind: "ok" });
  const warnings = logger.lines.filter((l) => l.startsWith("warn:"));
  assert.ok(warnings.some((l) => l.includes("sync boom")) && warnings.some((l) => l.includes("async boom")), warnings.join("\n"));
  assert.ok(warnings.some((l) => l.includes("onAgentToolResult handler failed")));
});

test("a stalled awaited callback does not let queued events grow without bound: deltas merge", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  let release;
  const { progress, log, feed } = progressFor(sdk, {
    // Stalls at the tool start only; the terminal flush answers at once.
    onBlockReplyFlush: (context) => (context.reason === "tool_start" ? new Promise((resolve) => (release = resolve)) : undefined),
  });
  feed({ type: "toolStarted", callId: "c1", toolName: "exec", arguments: { command: "ls" } });
  await new Promise((resolve) => setImmediate(resolve));
  for (let i = 0; i < 10_000; i += 1) feed(delta("m1", "x"));
  assert.ok(progress.queue.length <= 2, `queued ${progress.queue.length}`);
  release();
  await progress.finish({ kind: "ok" });
  assert.equal(calls(log, "onPartialReply").at(-1)[0].text.length, 10_000, "no text lost");
});

test("a stalled callback keeps the queue within its bytes: progress-only events are dropped oldest first and counted, tool events kept", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  let release;
  const maxQueuedBytes = 256 * 1024;
  const { progress, log, logger, feed } = progressFor(
    sdk,
    // Stalls at the first tool start only.
    { onBlockReplyFlush: (context) => (context.reason === "tool_start" && !release ? new Promise((resolve) => (release = resolve)) : undefined) },
    { maxQueuedBytes },
  );
  feed({ type: "toolStarted", callId: "c0", toolName: "exec", arguments: { command: "ls" } });
  await new Promise((resolve) => setImmediate(resolve));
  // Output deltas of two calls in turn never merge; each is 4 KiB: 16 MiB in all behind the stall.
  const chunk = "y".repeat(4096);
  let peak = 0;
  for (let i = 0; i < 4096; i += 1) {
    feed({ type: "toolOutputDelta", callId: i % 2 ? "c1" : "c2", delta: chunk });
    peak = Math.max(peak, progress.queuedBytes);
  }
  // Tool events the result and the channel need, each with a 1 MiB output: kept, their outputs cut.
  for (const callId of ["c1", "c2"]) {
    feed({ type: "toolStarted", callId, toolName: "exec", arguments: { command: "cat big" } });
    feed({
      type: "toolFinished",
      call: { callId, toolName: "exec", arguments: { command: "cat big" } },
      outcome: { kind: "success" },
      output: { text: "z".repeat(1024 * 1024) },
    });
    peak = Math.max(peak, progress.queuedBytes);
  }
  assert.ok(peak <= maxQueuedBytes, `peak ${peak} bytes queued`);
  assert.ok(progress.shed.events > 4000, `dropped ${progress.shed.events}`);
  assert.equal(progress.shed.cut, 2);
  release();
  await progress.finish({ kind: "ok" });
  const finished = calls(log, "onAgentToolResult").map(([r]) => r.toolName);
  assert.deepEqual(finished, ["exec", "exec"], "both tools finished");
  assert.equal(progress.queuedBytes, 0);
  assert.ok(logger.lines.some((l) => l.includes("progress-only events") && l.includes("dropped")), logger.lines.join("\n"));
});

test("callbacks run in the attempt's own async context, whoever delivers the event", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const store = new AsyncLocalStorage();
  const seen = [];
  const made = store.run("attempt-b", () =>
    progressFor(sdk, {
      onPartialReply: () => {
        seen.push(store.getStore());
      },
      onBlockReply: () => {
        seen.push(store.getStore());
      },
    }),
  );
  // Events arrive on the bridge connection, which another attempt's context started.
  store.run("attempt-a", () => made.feed(delta("m1", "x"), final("m1", "x")));
  await made.progress.finish({ kind: "ok" });
  assert.deepEqual(seen, ["attempt-b", "attempt-b"]);
});

test("without the SDK helpers the callbacks keep their shapes (whole-message block replies)", async () => {
  const { params, log } = recordingParams({ verboseLevel: "on" });
  const progress = new AttemptProgress({ params, harnessId: HARNESS, logger: recordingLogger() });
  let seq = 0;
  for (const event of [
    delta("m1", "A. "),
    delta("m1", "B."),
    final("m1", "A. B."),
    { type: "toolStarted", callId: "c1", toolName: "exec", arguments: { command: "ls" } },
    { type: "toolFinished", call: { callId: "c1", toolName: "exec" }, outcome: { kind: "success" }, executionStarted: true },
  ]) {
    progress.onEvent({ seq: seq++, event });
  }
  await progress.finish({ kind: "ok" });
  assert.deepEqual(calls(log, "onBlockReply"), [[{ text: "A. B." }, { assistantMessageIndex: 1 }]]);
  assert.deepEqual(calls(log, "onToolResult"), [[{ text: "exec" }]]);
  assert.deepEqual(agentEvents(log, "item").map((e) => [e.data.itemId, e.data.phase, e.data.status]), [["tool:c1", "start", "running"], ["tool:c1", "end", "completed"]]);
});

test("model_call_started: each modelCallStarted event is the runner's phase with its payload (provider, model)", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed } = progressFor(sdk, { provider: "anthropic", modelId: "claude-x" });
  progress.start();
  feed({ type: "turnStarted", turnId: "tu-1" }, { type: "modelCallStarted" }, final("m1", "Hi"), { type: "modelCallStarted" });
  await progress.finish({ kind: "ok" });
  const phases = calls(log, "onExecutionPhase").map(([info]) => info);
  assert.deepEqual(
    phases.map((i) => i.phase),
    ["turn_accepted", "model_call_started", "assistant_output_started", "model_call_started"],
  );
  // The runner's own report of a model call start: provider, model and firstModelCallStarted.
  assert.deepEqual(phases[1], { phase: "model_call_started", provider: "anthropic", model: "claude-x", firstModelCallStarted: true });
});

test("a paused budget: the lane deadline is unlimited while a person is asked, then bounded from what the bridge says is left", async (t) => {
  const sdk = sdkOrSkip(t);
  if (!sdk) return;
  const { progress, log, feed, advance } = progressFor(sdk, { timeoutMs: 10_000 });
  const listener = [];
  progress.budgetListener = { pause: () => listener.push("pause"), resume: (ms) => listener.push(["resume", ms]) };
  progress.start();
  feed({ type: "turnStarted", turnId: "tu-1" });
  advance(4_000);
  feed({ type: "budgetPaused", remainingMs: 6_000 });
  advance(60_000);
  feed({ type: "budgetResumed", remainingMs: 6_000 });
  // A resume without a pause (a duplicate) changes nothing.
  feed({ type: "budgetResumed", remainingMs: 6_000 });
  await progress.finish({ kind: "ok" });
  assert.deepEqual(calls(log, "onAttemptDeadlineChanged"), [
    [{ kind: "bounded", deadlineAtMs: 1_000_000 + 10_000 }],
    [{ kind: "unlimited" }],
    [{ kind: "bounded", deadlineAtMs: 1_000_000 + 64_000 + 6_000 }],
  ]);
  assert.deepEqual(listener, ["pause", ["resume", 6_000]]);

  // An unlimited budget has nothing to pause: the runner reports nothing more.
  const unlimited = progressFor(sdk, { timeoutMs: 2_147_000_000 });
  unlimited.progress.start();
  unlimited.feed({ type: "budgetPaused", remainingMs: 5 }, { type: "budgetResumed", remainingMs: 5 });
  await unlimited.progress.finish({ kind: "ok" });
  assert.deepEqual(calls(unlimited.log, "onAttemptDeadlineChanged"), [[{ kind: "unlimited" }]]);
});
