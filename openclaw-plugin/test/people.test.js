// People and policy: every host request runs in the async context of its own attempt (not of the
// attempt that started the shared bridge), the agent's questions go through OpenClaw's gateway
// question helper, `ask_user` gets a prompt surface, and native actions pass OpenClaw's tool
// policy before a person is asked.

import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { decideApproval } from "../src/host-requests.js";
import { askUser, questionPromptFor } from "../src/people.js";
import { createPlugin } from "../src/plugin.js";
import { RpcReplyError } from "../src/rpc-client.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest, recordingLogger } from "./support/fakes.js";

const CODEX = "clawbridge-codex";

/** Stands in for the gateway client authority OpenClaw keeps in the async context of each run. */
const client = new AsyncLocalStorage();

test("each attempt's host requests and events run in that attempt's own async context", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const asked = [];
  const appended = [];
  const askGatewayQuestion = async (request) => {
    asked.push({ client: client.getStore(), sessionKey: request.sessionKey, delivery: request.delivery });
    return { status: "answered", answers: { answers: { colour: ["blue"] } } };
  };
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "askUser" }), deps: { askGatewayQuestion } });
  t.after(env.cleanup);
  const transcriptAppend = env.plugin.runtime.options.appendTranscriptMessage;
  env.plugin.runtime.options.appendTranscriptMessage = async (request) => {
    appended.push({ client: client.getStore(), sessionId: request.sessionId });
    return transcriptAppend(request);
  };

  const first = attemptParams();
  const second = attemptParams();
  const eventsSeen = [];
  second.params.onAgentEvent = (event) => eventsSeen.push(client.getStore());
  // Client 1's run starts the bridge, so the bridge's stdout reader lives in client 1's context.
  const one = await client.run("client-1", () => env.harness(CODEX).runAttempt(first.params));
  assert.equal(one.terminal.kind, "ok", JSON.stringify(one.terminal));
  const two = await client.run("client-2", () => env.harness(CODEX).runAttempt(second.params));
  assert.equal(two.terminal.kind, "ok", JSON.stringify(two.terminal));

  assert.deepEqual(
    asked.map((a) => [a.client, a.sessionKey]),
    [["client-1", first.params.sessionKey], ["client-2", second.params.sessionKey]],
    "each question is asked with its own attempt's authority",
  );
  assert.equal(asked[1].delivery, second.params, "the helper gets the original attempt params (their host capability)");
  const secondAppends = appended.filter((a) => a.sessionId === second.params.sessionId);
  assert.ok(secondAppends.length > 0, "the second attempt mirrored its rows");
  assert.deepEqual([...new Set(secondAppends.map((a) => a.client))], ["client-2"], "its appends run in its context");
  assert.ok(eventsSeen.length > 0 && eventsSeen.every((c) => c === "client-2"), `events: ${eventsSeen}`);

  const init = env.protocol.sent.find((m) => m.method === "initialize");
  assert.equal(init.params.capabilities.userInput, true, "userInput is declared once a question helper is wired");
  assert.equal(env.protocol.counts["host/userInput/request"], 2);
});

test("without a question helper the bridge is told userInput is not served", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const { params } = attemptParams();
  await env.harness("clawbridge-demo").runAttempt(params);
  const init = env.protocol.sent.find((m) => m.method === "initialize");
  assert.equal(init.params.capabilities.userInput, false);
});

test("questions: answers map back by id; no person, a cancel or a timeout is an error naming why", async () => {
  const attempt = fakeAttempt();
  const request = {
    attemptId: "a:1",
    callId: "ask_1",
    timeoutMs: 1000,
    questions: [{ id: "q1", header: "Deploy", question: "Deploy now?", options: [{ label: "yes" }, { label: "no", description: "" }] }],
  };
  const seen = [];
  const answered = await askUser(attempt, request, async (r) => {
    seen.push(r);
    return { status: "answered", answers: { answers: { q1: ["yes"] } } };
  });
  assert.deepEqual(answered, { answers: { q1: { answers: ["yes"] } } });
  assert.equal(seen[0].sessionKey, "k");
  assert.equal(seen[0].agentId, "main");
  assert.equal(seen[0].timeoutMs, 1000);
  assert.equal(seen[0].signal, attempt.signal);
  assert.deepEqual(seen[0].questions, [
    { id: "q1", header: "Deploy", question: "Deploy now?", options: [{ label: "yes" }, { label: "no" }] },
  ]);

  const byText = { ...request, questions: [{ id: "Which size?", header: "Size", question: "Which size?" }] };
  const textual = await askUser(attempt, byText, async (r) => {
    assert.equal(r.questions[0].id, "question_1", "the gateway takes snake_case ids only");
    return { status: "answered", answers: { answers: { question_1: ["large"] } } };
  });
  assert.deepEqual(textual, { answers: { "Which size?": { answers: ["large"] } } }, "answers come back under the bridge's id");

  const refused = (pattern) => (e) => e instanceof RpcReplyError && e.code === -32040 && pattern.test(e.message);
  await assert.rejects(askUser(attempt, request, async () => ({ status: "expired" })), refused(/no person answered: nobody answered in time/));
  await assert.rejects(askUser(attempt, request, async () => ({ status: "cancelled" })), refused(/cancelled/));
  await assert.rejects(
    askUser(attempt, request, async () => { throw new Error("gateway closed"); }),
    refused(/no person could be reached to answer: gateway closed/),
  );
  await assert.rejects(askUser(attempt, request, undefined), refused(/no question surface/));
  const noSession = fakeAttempt({ params: { sessionId: "s" } });
  await assert.rejects(askUser(noSession, request, async () => ({ status: "answered" })), refused(/no session/));
});

test("ask_user's prompt surface is the run's tool-result reply, with its channel", () => {
  const sent = [];
  const prompt = questionPromptFor({ onToolResult: (p) => sent.push(p), messageChannel: "telegram" });
  prompt.send({ text: "Which colour?" });
  assert.deepEqual(sent, [{ text: "Which colour?" }]);
  assert.equal(prompt.messageChannel, "telegram");
  const blocks = [];
  questionPromptFor({ onBlockReply: (p) => blocks.push(p) }).send({ text: "q" });
  assert.deepEqual(blocks, [{ text: "q" }], "a block reply when there is no tool-result callback");
  assert.equal(questionPromptFor({}), undefined, "nothing to show a prompt with");
});

test("createToolSurface gets the questionPrompt", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const host = fakeHost();
  const { params } = attemptParams({ host });
  const shown = [];
  params.onToolResult = (payload) => shown.push(payload);
  await env.harness("clawbridge-demo").runAttempt(params);
  const options = host.calls.createToolSurface[0].options;
  assert.equal(typeof options.questionPrompt?.send, "function");
  await options.questionPrompt.send({ text: "asked" });
  assert.deepEqual(shown, [{ text: "asked" }]);
});

test("native actions pass OpenClaw's tool policy before a person is asked; a block is never escalated", async () => {
  const request = { kind: "command", callId: "c1", toolName: "shell", arguments: { command: "rm -rf x", cwd: "/w" }, timeoutMs: 1000 };
  const run = async (runBeforeToolCall) => {
    const host = { ...fakeHost({ decision: "allow-once" }), runBeforeToolCall };
    const policy = [];
    host.runBeforeToolCall = async (r) => {
      policy.push(r);
      return runBeforeToolCall(r);
    };
    const answer = await decideApproval(fakeAttempt({ params: { hostCapabilities: host } }), request);
    return { answer, policy, asked: host.calls.requestApproval.length };
  };

  const passed = await run(async (r) => ({ blocked: false, params: r.params }));
  assert.deepEqual(passed.answer, { decision: "allow" });
  assert.equal(passed.asked, 1, "the policy passed: a person decides");
  assert.deepEqual(passed.policy[0], {
    toolName: "exec", params: request.arguments, toolCallId: "c1", signal: passed.policy[0].signal, nativeOperation: { cwd: "/w" },
  });

  const vetoed = await run(async () => ({ blocked: true, kind: "veto", reason: "the exec reviewer denied it: destructive" }));
  assert.deepEqual(vetoed.answer, { decision: "deny", message: "the exec reviewer denied it: destructive" });
  assert.equal(vetoed.asked, 0, "a block is final");

  const rewritten = await run(async () => ({ blocked: false, params: { command: "echo safe" } }));
  assert.equal(rewritten.answer.decision, "deny");
  assert.equal(rewritten.asked, 0);

  const approved = await run(async (r) => ({ blocked: false, params: r.params, approvalResolution: "allow-always" }));
  assert.deepEqual(approved.answer, { decision: "allowForSession" }, "a person already decided through the policy");
  assert.equal(approved.asked, 0);

  const broken = await run(async () => { throw new Error("hook crashed"); });
  assert.equal(broken.answer.decision, "deny");
  assert.equal(broken.asked, 0, "policy that cannot run is no permission");

  const patch = await run(async (r) => ({ blocked: false, params: r.params }));
  assert.equal(patch.policy[0].toolName, "exec");
  const fileChange = { ...request, kind: "fileChange", toolName: "apply_patch", arguments: { path: "x" } };
  const seen = [];
  const host = { ...fakeHost(), runBeforeToolCall: async (r) => (seen.push(r.toolName), { blocked: false, params: r.params }) };
  await decideApproval(fakeAttempt({ params: { hostCapabilities: host } }), fileChange);
  assert.deepEqual(seen, ["apply_patch"]);
});

function fakeAttempt(extra = {}) {
  return {
    attemptId: "a:1",
    tools: new Map(),
    signal: new AbortController().signal,
    logger: recordingLogger(),
    mirrored: [],
    params: { sessionId: "s", agentId: "main", sessionTarget: { agentId: "main", sessionKey: "k", storePath: "/x" }, workspaceDir: "/w" },
    ...extra,
  };
}

test("the native harnesses declare that they run on the host, outside OpenClaw's sandbox; the demo runs nothing", () => {
  const plugin = createPlugin({});
  const registered = [];
  plugin.register({ pluginConfig: { command: "/nonexistent/clawbridge" }, logger: recordingLogger(), registerAgentHarness: (h) => registered.push(h) });
  const declared = Object.fromEntries(registered.map((h) => [h.id, h.executionEnvironment]));
  assert.deepEqual(declared, { "clawbridge-codex": "host-only", "clawbridge-claude": "host-only", "clawbridge-demo": undefined });
});
