// The plugin's per-attempt buffers are bounded in bytes, not in items: host tool runs kept for the
// result's delivery facts (whole while they fit, then compact, then dropped and counted), and what
// a compact run keeps is still enough for the facts.

import assert from "node:assert/strict";
import { test } from "node:test";

import { approxBytes, shrink } from "../src/bounds.js";
import { HostToolRuns, deliveryFacts } from "../src/delivery.js";

/** Messaging helpers standing in for the SDK's: `message` sends `args.text` to `args.to`. */
const helpers = {
  isMessagingTool: (name) => name === "message",
  isMessagingToolSendAction: (name) => name === "message",
  readEmbeddedMessageDeliveryFact: (value) => value,
  extractMessagingToolSend: (_name, args) => ({ to: args.to }),
  extractToolResultMediaArtifact: (result) => {
    const path = result?.details?.path;
    return result?.content?.some?.((b) => b.type === "image") && path ? { mediaUrls: [path] } : undefined;
  },
  filterToolResultMediaUrls: (_name, urls) => urls,
};

const bigRun = (i) => ({
  toolName: "web_fetch",
  callId: `call-${i}`,
  args: { url: `https://example.test/${i}` },
  result: { content: [{ type: "text", text: "p".repeat(64 * 1024) }], details: { status: "ok" } },
  isError: false,
});

test("host tool runs: many large results stay within the byte budget, and a late send still counts", () => {
  const runs = new HostToolRuns();
  for (let i = 0; i < 600; i += 1) runs.add(bigRun(i));
  runs.add({
    toolName: "message",
    callId: "send-1",
    args: { to: "channel:1", text: "hello" },
    result: { content: [{ type: "text", text: "q".repeat(1024 * 1024) }], details: { messageDelivery: { status: "settled" } } },
    isError: false,
  });
  runs.add({
    toolName: "image_gen",
    callId: "img-1",
    args: {},
    result: { content: [{ type: "image", mimeType: "image/png", data: "i".repeat(2 * 1024 * 1024) }], details: { path: "/tmp/out.png" } },
    isError: false,
  });
  runs.add({ toolName: "exec", callId: "err-1", args: {}, result: new Error(`boom ${"e".repeat(100_000)}`), isError: true });

  const held = approxBytes(runs.runs, 64 * 1024 * 1024);
  assert.ok(held <= 9 * 1024 * 1024, `${held} bytes held for ${runs.runs.length} runs`);
  assert.ok(runs.compacted > 0);
  assert.equal(runs.runs[0].result.content[0].text.length, 64 * 1024, "the first runs are whole");

  const facts = deliveryFacts(runs.runs, helpers);
  assert.equal(facts.didSendViaMessagingTool, true);
  assert.deepEqual(facts.messagingToolSentTexts, ["hello"]);
  assert.deepEqual(facts.messagingToolSentTargets, [{ to: "channel:1", text: "hello" }]);
  assert.deepEqual(facts.toolMediaUrls, ["/tmp/out.png"], "an image result past the budget still names its media");

  const compact = runs.find("call-599");
  assert.equal(compact.toolName, "web_fetch");
  assert.equal(compact.result.details.status, "ok");
  assert.ok(compact.result.content[0].text.length < 1024, "a compact run keeps a short text only");
  const failed = runs.find("err-1");
  assert.ok(failed.isError && failed.result instanceof Error && failed.result.message.startsWith("boom"));
  assert.ok(failed.result.message.length < 1024, "a short error");
});

test("host tool runs past every budget are dropped and counted", () => {
  const runs = new HostToolRuns({ fullBytes: 1024, allBytes: 8 * 1024 });
  for (let i = 0; i < 100; i += 1) runs.add(bigRun(i));
  assert.ok(runs.dropped > 0 && runs.compacted > 0, `${runs.compacted} compact, ${runs.dropped} dropped`);
  assert.ok(runs.bytes <= 8 * 1024);
  assert.equal(runs.runs.length + runs.dropped, 100);
});

test("bounded copies keep shape and the named keys first", () => {
  const copy = shrink({ noise: "n".repeat(10_000), messageDelivery: { status: "settled" } }, 256, { first: ["messageDelivery"] });
  assert.deepEqual(copy.messageDelivery, { status: "settled" });
  assert.ok(approxBytes(copy, 10_000) < 1024);
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  assert.ok(approxBytes(cyclic, 1000) < 1000);
  assert.doesNotThrow(() => shrink(cyclic, 100));
});
