// The result's contract pieces: the terminal union for every bridge cause, the silent-turn
// classification against the SDK's own function, live output tokens, delivery facts from host
// tools, the atomic transcript group, the host capability check and agent-end side effects.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import test from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { deliveryFacts } from "../src/delivery.js";
import { OutputTokenReporter, hostCapabilityProblem, runAgentEnd } from "../src/effects.js";
import { toAttemptResult } from "../src/result.js";
import { classifyTerminalOutcome, toTerminal } from "../src/terminal.js";
import { appendTranscriptGroup, orphanedCallResults } from "../src/transcript.js";

const sdkPath = resolve(dirname(fileURLToPath(import.meta.url)), "../../.peers/openclaw/node_modules/openclaw/dist/plugin-sdk/agent-harness-runtime.js");
const required = process.env.CLAWBRIDGE_REQUIRE_PEERS === "1";
const noSdk = !existsSync(sdkPath) && !required ? "openclaw is not installed in .peers/" : false;

test("every bridge cause maps onto the terminal branch the real types name", () => {
  const cases = [
    [{ kind: "ok", cause: "native" }, {}, { kind: "ok" }],
    [{ kind: "timeout", cause: "idleTimeout", message: "no progress for 30s" }, {}, { kind: "timeout", phase: "prompt", source: "idle", aborted: true }],
    [{ kind: "timeout", cause: "runBudget", message: "budget" }, {}, { kind: "timeout", phase: "prompt", source: "run_budget", aborted: true }],
    [{ kind: "timeout", message: "an older bridge" }, {}, { kind: "timeout", phase: "prompt", source: "run_budget", aborted: true }],
    [{ kind: "timeout", cause: "runBudget", message: "x" }, { externallyAborted: true }, { kind: "timeout", phase: "prompt", source: "external", aborted: true }],
    [{ kind: "aborted", cause: "cancelled" }, { externallyAborted: true }, { kind: "aborted", source: "external" }],
    [{ kind: "aborted", cause: "cancelled" }, {}, { kind: "aborted", source: "runtime" }],
    [{ kind: "failed", cause: "backendExited", message: "codex went away" }, {}, { kind: "failed", source: "prompt" }],
    [{ kind: "failed", cause: "native", message: "429 rate limited" }, {}, { kind: "failed", source: "prompt" }],
  ];
  for (const [bridge, ctx, expected] of cases) {
    const terminal = toTerminal(bridge, ctx);
    const { failure, error, ...rest } = terminal;
    assert.deepEqual(rest, expected, JSON.stringify(bridge));
    const err = terminal.kind === "failed" ? error : failure?.error;
    if (bridge.message) {
      assert.ok(err instanceof Error, `${JSON.stringify(bridge)}: the error is an Error`);
      assert.equal(err.message, bridge.message);
      assert.equal(err.code, bridge.cause ?? "unknown", "the error names the bridge's cause");
      if (terminal.kind !== "failed") assert.equal(failure.source, "prompt");
    } else {
      assert.equal(failure, undefined);
    }
    assert.equal(typeof terminal.failure, terminal.kind === "ok" || !bridge.message || terminal.kind === "failed" ? "undefined" : "object", "failure is never a string");
  }
  assert.equal(toTerminal({ kind: "weird" }).kind, "failed");
});

test("a crash and a provider error are told apart by the error's code", () => {
  const crash = toTerminal({ kind: "failed", cause: "backendExited", message: "claude went away: exit 1" });
  const provider = toTerminal({ kind: "failed", cause: "native", message: "overloaded" });
  assert.equal(crash.error.code, "backendExited");
  assert.equal(provider.error.code, "native");
});

test("the classification is the SDK's own: planning-only needs plan text, NO_REPLY is output", { skip: noSdk }, async () => {
  const sdk = await import(pathToFileURL(sdkPath).href);
  const inputs = [
    { assistantTexts: [], turnCompleted: true },
    { assistantTexts: ["  "], turnCompleted: true },
    { assistantTexts: [], reasoningText: "hmm", turnCompleted: true },
    { assistantTexts: [], planText: "   ", reasoningText: "hmm", turnCompleted: true },
    { assistantTexts: [], planText: "1. read\n2. fix", turnCompleted: true },
    { assistantTexts: ["NO_REPLY"], turnCompleted: true },
    { assistantTexts: [], turnCompleted: false },
    { assistantTexts: [], promptError: new Error("x"), turnCompleted: true },
  ];
  for (const input of inputs) {
    assert.equal(classifyTerminalOutcome(input), sdk.classifyAgentHarnessTerminalOutcome(input), JSON.stringify(input));
  }
  // Through the result: an empty plan event is no plan.
  const result = toAttemptResult({ terminal: { kind: "ok" } }, { params: { sessionId: "s" }, planText: "", reasoningText: "thinking", sdk });
  assert.equal(result.agentHarnessResultClassification, "reasoning-only");
});

test("messagesSnapshot starts with the prompt; toolMetas carry the SDK's meta", { skip: noSdk }, async () => {
  const sdk = await import(pathToFileURL(sdkPath).href);
  const mirrored = [{ role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" }];
  const result = toAttemptResult(
    { terminal: { kind: "ok" }, assistantTexts: ["done"], tools: [{ toolName: "exec", toolCallId: "c1", isError: false }] },
    { params: { sessionId: "s", prompt: "Run ls" }, mirrored, toolArguments: new Map([["c1", { command: "ls -la" }]]), sdk },
  );
  assert.equal(result.messagesSnapshot[0].role, "user");
  assert.equal(result.messagesSnapshot[0].content, "Run ls");
  assert.deepEqual(result.messagesSnapshot.slice(1), mirrored);
  // No toolProgressDetail: the embedded runner's default detail, "explain".
  assert.equal(result.toolMetas[0].meta, sdk.inferToolMetaFromArgs("exec", { command: "ls -la" }, { detailMode: "explain" }));
  assert.equal(typeof result.toolMetas[0].meta, "string");
});

test("output tokens are reported once per response: the growth of the running total", () => {
  const reports = [];
  const reporter = new OutputTokenReporter({ reportOutputTokens: (n) => reports.push(n) });
  for (const total of [5, 5, 12, 12, 30]) reporter.observe({ type: "usage", outputTokens: total });
  assert.deepEqual(reports, [5, 7, 18]);
  const refusing = new OutputTokenReporter({ reportOutputTokens: () => { throw new Error("closed"); } });
  const errors = [];
  refusing.observe({ outputTokens: 3 }, (e) => errors.push(e.message));
  assert.deepEqual(errors, ["closed"], "a closed capability is logged, not thrown");
});

test("an unsupported host capability version is named; version 1 and no capability run", () => {
  assert.equal(hostCapabilityProblem({ kind: "agent-harness-host-capability", version: 1 }), undefined);
  assert.equal(hostCapabilityProblem(undefined), undefined);
  assert.match(hostCapabilityProblem({ kind: "agent-harness-host-capability", version: 2 }), /version 2; clawbridge supports version 1/);
  assert.match(hostCapabilityProblem({ kind: "something-else", version: 1 }), /kind "something-else"/);
});

test("agent-end side effects get the run's messages and outcome, and a failure never throws", () => {
  const calls = [];
  const params = { runId: "r1", sessionId: "s", sessionKey: "k", agentId: "main", workspaceDir: "/w", provider: "p", modelId: "m" };
  runAgentEnd({ runAgentEndSideEffects: (p) => calls.push(p) }, params, { messages: [{ role: "user" }], success: false, error: "boom", durationMs: 5, harnessId: "h" });
  assert.equal(calls.length, 1);
  assert.deepEqual(calls[0].event, { runId: "r1", messages: [{ role: "user" }], success: false, error: "boom", durationMs: 5 });
  assert.equal(calls[0].ctx.sessionKey, "k");
  assert.equal(calls[0].ctx.modelId, "m");
  runAgentEnd({ runAgentEndSideEffects: (p) => calls.push(p) }, { ...params, sessionPersistence: "detached" }, { messages: [], success: true, durationMs: 1, harnessId: "h" });
  assert.equal(calls.length, 1, "a detached run gets no agent_end, as in the embedded runtime");
  const warnings = [];
  runAgentEnd({ runAgentEndSideEffects: () => { throw new Error("hook crashed"); } }, params, { messages: [], success: true, durationMs: 1, harnessId: "h" }, { warn: (t) => warnings.push(t) });
  assert.match(warnings[0], /hook crashed/);
});

test("delivery facts come from the messaging tools that delivered, media from the rest", () => {
  const helpers = {
    isMessagingTool: (name) => name === "message",
    isMessagingToolSendAction: (_name, args) => args.action === "send",
    readEmbeddedMessageDeliveryFact: (v) => v,
    extractMessagingToolSend: (_name, args) => ({ tool: "message", provider: "telegram", to: args.to }),
    extractMessagingToolSendResult: (pending) => ({ ...pending, messageId: "m1" }),
    extractToolResultMediaArtifact: (result) => result?.details?.media ? { mediaUrls: result.details.media } : undefined,
    filterToolResultMediaUrls: (_name, urls) => urls.filter((u) => !u.includes("secret")),
  };
  const runs = [
    { toolName: "message", args: { action: "send", to: "chat-1", message: "hello" }, result: { details: { messageDelivery: { status: "settled" } } }, isError: false },
    { toolName: "message", args: { action: "send", to: "chat-2", message: "dry run" }, result: { details: { messageDelivery: { status: "suppressed" } } }, isError: false },
    { toolName: "image_generate", args: {}, result: { details: { media: ["/tmp/a.png", "/tmp/secret.png"] } }, isError: false },
  ];
  const facts = deliveryFacts(runs, helpers);
  assert.equal(facts.didSendViaMessagingTool, true);
  assert.deepEqual(facts.messagingToolSentTexts, ["hello"]);
  assert.deepEqual(facts.messagingToolSentTargets, [{ tool: "message", provider: "telegram", to: "chat-1", messageId: "m1", text: "hello" }]);
  assert.deepEqual(facts.toolMediaUrls, ["/tmp/a.png"]);
  const none = deliveryFacts([], helpers);
  assert.equal(none.didSendViaMessagingTool, false, "nothing ran, nothing was sent");
  assert.equal(none.toolMediaUrls, undefined);
});

test("a transcript group goes through the hook, is appended atomically, then published once", async () => {
  const groups = [];
  const published = [];
  const stored = new Set();
  const api = {
    appendMessages: async (p) => {
      groups.push(p);
      return p.messages.map(({ message }) => {
        const appended = !stored.has(message.idempotencyKey);
        stored.add(message.idempotencyKey);
        return { appended, messageId: `id-${message.idempotencyKey}`, message };
      });
    },
    publishUpdate: async (p) => published.push(p),
    beforeMessageWrite: ({ message }) => (message.role === "toolResult" ? { ...message, content: [{ type: "text", text: "[redacted]" }], idempotencyKey: "changed" } : message),
  };
  const attempt = { params: { sessionId: "s", sessionTarget: { agentId: "main", sessionKey: "k", storePath: "/x" }, cwd: "/w" }, mirrored: [] };
  const messages = [
    { role: "assistant", content: [], idempotencyKey: "clawbridge:r:t:tool:c:call" },
    { role: "toolResult", toolCallId: "c", content: [], idempotencyKey: "clawbridge:r:t:tool:c:result" },
  ];
  const first = await appendTranscriptGroup(attempt, { messages }, api);
  const again = await appendTranscriptGroup(attempt, { messages }, api);
  assert.equal(groups.length, 2, "one append per group, not per row");
  assert.deepEqual(groups[0].messages.map((m) => [m.message.idempotencyKey, m.idempotencyLookup]), [
    ["clawbridge:r:t:tool:c:call", "scan"],
    ["clawbridge:r:t:tool:c:result", "scan"],
  ], "the bridge's keys survive a hook rewrite");
  assert.equal(groups[0].messages[1].message.content[0].text, "[redacted]", "the hooked row is what is written");
  assert.deepEqual({ agentId: groups[0].agentId, sessionId: groups[0].sessionId, sessionKey: groups[0].sessionKey, storePath: groups[0].storePath }, { agentId: "main", sessionId: "s", sessionKey: "k", storePath: "/x" });
  assert.deepEqual(first.entries.map((e) => e.appended), [true, true]);
  assert.deepEqual(again.entries.map((e) => e.appended), [false, false], "a healed group duplicates nothing");
  assert.equal(published.length, 1, "published once, for the group that added rows");
  assert.deepEqual(published[0].update, { messageId: "id-clawbridge:r:t:tool:c:result" });

  const retired = { ...attempt, params: { ...attempt.params, hostCapabilities: { assertActive: () => { throw new Error("superseded"); } } } };
  await assert.rejects(appendTranscriptGroup(retired, { messages }, api), (e) => /no longer active: superseded/.test(e.message));
  assert.equal(groups.length, 2, "a retired run writes nothing");

  const blocking = { ...api, beforeMessageWrite: () => null };
  const blocked = await appendTranscriptGroup({ ...attempt, mirrored: [] }, { messages: [messages[0]] }, blocking);
  assert.deepEqual(blocked.entries, [{ idempotencyKey: messages[0].idempotencyKey, appended: false }], "a blocked row is not written");
});

test("every mirrored call without a result gets one synthetic failed result, keyed as the bridge keys it", () => {
  const rows = [
    { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec" }], idempotencyKey: "clawbridge:r:t:tool:c1:call" },
    { role: "toolResult", toolCallId: "c1", content: [], idempotencyKey: "clawbridge:r:t:tool:c1:result" },
    { role: "assistant", content: [{ type: "text", text: "next" }, { type: "toolCall", id: "c2", name: "write" }], idempotencyKey: "clawbridge:r:t:tool:c2:call" },
  ];
  const results = orphanedCallResults(rows, "the bridge exited");
  assert.equal(results.length, 1);
  assert.deepEqual(
    { id: results[0].toolCallId, name: results[0].toolName, key: results[0].idempotencyKey, isError: results[0].isError },
    { id: "c2", name: "write", key: "clawbridge:r:t:tool:c2:result", isError: true },
  );
  assert.match(results[0].content[0].text, /the bridge exited/);
  assert.deepEqual(orphanedCallResults(rows.slice(0, 2), "x"), [], "a closed call needs nothing");
});

test("delivery facts through the SDK's own helpers: a settled message send counts, a dry run does not", { skip: noSdk }, async () => {
  const sdk = await import(pathToFileURL(sdkPath).href);
  const fact = (status) => ({ details: { messageDelivery: { status, partialDelivery: false, createdThreadIds: [] } } });
  const send = { action: "send", channel: "telegram", to: "chat-1", message: "deploy finished" };
  const sent = deliveryFacts([{ toolName: "message", args: send, result: fact("settled"), isError: false }], sdk);
  assert.equal(sent.didSendViaMessagingTool, true, JSON.stringify(sent));
  assert.deepEqual(sent.messagingToolSentTexts, ["deploy finished"]);
  const dry = deliveryFacts([{ toolName: "message", args: send, result: fact("dryRun"), isError: false }], sdk);
  assert.equal(dry.didSendViaMessagingTool, false, "a dry run must not suppress a later reply");
  assert.deepEqual(dry.messagingToolSentTexts, []);
  const native = deliveryFacts([{ toolName: "exec", args: { command: "echo hi" }, result: { content: [] }, isError: false }], sdk);
  assert.equal(native.didSendViaMessagingTool, false, "a shell command is no messaging send");
});
