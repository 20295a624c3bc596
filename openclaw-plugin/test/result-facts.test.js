// Result and progress facts an attempt takes from its params or from a host tool's result, proven
// through the real bridge (a fake Codex calls the host tool) with the real SDK's helpers:
// `toolProgressDetail` picks the tool meta's detail, `sessionFileUsed` echoes `sessionFile`, and a
// host tool's own result sets `sourceReplyDelivered`, `toolAudioAsVoice` and `toolTrustedLocalMedia`.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { deliveryFacts } from "../src/delivery.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest } from "./support/fakes.js";
import { loadRealSdk, sdkModuleUrl } from "./support/sdk.js";

const CODEX = "clawbridge-codex";

/** A plugin whose result and progress helpers are the real SDK's, behind a fake Codex that calls `toolName`. */
async function codexCalling(t, toolName, args) {
  const loaded = await loadRealSdk();
  if (loaded.skip) return { skip: loaded.skip };
  const sdk = await import(sdkModuleUrl());
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({
    codexBin: fakeCodex(dir, { mode: "toolCall", toolName, args }),
    deps: { sdk, progressSdk: loaded.sdk },
  });
  t.after(env.cleanup);
  return { env };
}

/** A host tool named `name` answering `result`. */
function hostTool(name, result) {
  return { name, description: name, parameters: { type: "object" }, execute: async () => result };
}

for (const [detail, expected] of [
  [undefined, "print text"],
  ["explain", "print text"],
  ["raw", "print text, `echo hi`"],
]) {
  test(`toolProgressDetail ${detail ?? "(unset)"}: the tool meta, live and in the result, is the SDK's ${JSON.stringify(expected)}`, async (t) => {
    const { env, skip } = await codexCalling(t, "exec", { command: "echo hi" });
    if (skip) return t.skip(skip);
    const host = fakeHost({ tools: [hostTool("exec", { content: [{ type: "text", text: "hi" }], details: {} })] });
    const { params, events } = attemptParams({ host });
    if (detail) params.toolProgressDetail = detail;
    params.verboseLevel = "on";
    const results = [];
    params.onToolResult = (payload) => results.push(payload);
    const result = await env.harness(CODEX).runAttempt(params);
    assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
    assert.deepEqual(result.toolMetas.map((m) => [m.toolName, m.meta]), [["exec", expected]]);
    const live = events.filter((e) => e.stream === "tool" && e.data?.phase === "result");
    assert.ok(live.length > 0, `a live tool result event: ${JSON.stringify(events.map((e) => e.stream))}`);
    assert.ok(live.every((e) => e.data.meta === expected), JSON.stringify(live));
  });
}

test("sessionFileUsed echoes the attempt's sessionFile", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "Say hello." });
  params.sessionFile = join(tmpdir(), `session-${process.pid}-echo.jsonl`);
  const result = await env.harness("clawbridge-demo").runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(result.sessionFileUsed, params.sessionFile);
});

test("a messaging host tool whose result says the source reply was delivered sets sourceReplyDelivered", async (t) => {
  const args = { action: "send", to: "chat-1", message: "done" };
  const { env, skip } = await codexCalling(t, "message", args);
  if (skip) return t.skip(skip);
  const delivered = { status: "settled", partialDelivery: false, createdThreadIds: [], sourceReplyDelivered: true };
  const host = fakeHost({ tools: [hostTool("message", { content: [{ type: "text", text: "sent" }], details: { messageDelivery: delivered } })] });
  const { params } = attemptParams({ host });
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(result.sourceReplyDelivered, true);
  assert.equal(result.didSendViaMessagingTool, true);
  assert.deepEqual(result.messagingToolSentTexts, ["done"]);

  // The same send whose result does not say so leaves it unset.
  const { env: other } = await codexCalling(t, "message", args);
  const plain = { ...delivered, sourceReplyDelivered: false };
  const quiet = fakeHost({ tools: [hostTool("message", { content: [{ type: "text", text: "sent" }], details: { messageDelivery: plain } })] });
  const second = await other.harness(CODEX).runAttempt(attemptParams({ host: quiet }).params);
  assert.equal(second.terminal.kind, "ok", JSON.stringify(second.terminal));
  assert.equal(second.sourceReplyDelivered, undefined);
  assert.equal(second.didSendViaMessagingTool, true);
});

test("a host tool's media result sets toolMediaUrls, toolAudioAsVoice and toolTrustedLocalMedia", async (t) => {
  const { env, skip } = await codexCalling(t, "tts", { text: "hello" });
  if (skip) return t.skip(skip);
  const url = "https://media.example.test/voice-1.ogg";
  const media = { mediaUrls: [url], audioAsVoice: true, trustedLocalMedia: true };
  const host = fakeHost({ tools: [hostTool("tts", { content: [{ type: "text", text: "spoken" }], details: { media } })] });
  const result = await env.harness(CODEX).runAttempt(attemptParams({ host }).params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(result.toolMediaUrls, [url]);
  assert.equal(result.toolAudioAsVoice, true);
  assert.equal(result.toolTrustedLocalMedia, true);

  // Media without those flags sets neither.
  const { env: other } = await codexCalling(t, "tts", { text: "hello" });
  const bare = fakeHost({ tools: [hostTool("tts", { content: [{ type: "text", text: "spoken" }], details: { media: { mediaUrls: [url] } } })] });
  const second = await other.harness(CODEX).runAttempt(attemptParams({ host: bare }).params);
  assert.deepEqual(second.toolMediaUrls, [url]);
  assert.equal(second.toolAudioAsVoice, undefined);
  assert.equal(second.toolTrustedLocalMedia, undefined);
});

test("toolTrustedLocalMedia needs every queued URL trusted, as the embedded runner's pending media", async (t) => {
  const loaded = await loadRealSdk();
  if (loaded.skip) return t.skip(loaded.skip);
  const sdk = await import(sdkModuleUrl());
  const run = (url, trustedLocalMedia) => ({
    toolName: "tts",
    args: {},
    result: { content: [], details: { media: { mediaUrls: [url], ...(trustedLocalMedia ? { trustedLocalMedia } : {}) } } },
    isError: false,
  });
  const a = "https://media.example.test/a.ogg";
  const b = "https://media.example.test/b.ogg";
  assert.equal(deliveryFacts([run(a, true), run(b, true)], sdk).toolTrustedLocalMedia, true);
  const mixed = deliveryFacts([run(a, true), run(b, false)], sdk);
  assert.deepEqual(mixed.toolMediaUrls, [a, b]);
  assert.equal(mixed.toolTrustedLocalMedia, undefined, "one untrusted URL: the reply's media is not trusted");
  // A URL one producer vouches for stays trusted when another repeats it untrusted.
  assert.equal(deliveryFacts([run(a, true), run(a, false)], sdk).toolTrustedLocalMedia, true);
});
