// The plugin's per-attempt buffers are bounded in bytes, not in items: host tool runs kept for the
// result's delivery facts (whole while they fit, then compact, then dropped and counted), and what
// a compact run keeps is still enough for the facts.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { approxBytes, shrink } from "../src/bounds.js";
import { HostToolRuns, deliveryFacts } from "../src/delivery.js";
import { AttemptFacts, observeEvent } from "../src/facts.js";
import { ToolProgress } from "../src/progress-tools.js";
import { keepMirrored } from "../src/transcript.js";
import { sdkModuleUrl } from "./support/sdk.js";

// The media helper is the pinned OpenClaw's own (what index.js passes the plugin), so a compact
// run is checked against what the SDK really reads; without OpenClaw these tests skip (or fail
// under CLAWBRIDGE_REQUIRE_PEERS=1).
const sdkPresent = existsSync(fileURLToPath(sdkModuleUrl()));
if (!sdkPresent && process.env.CLAWBRIDGE_REQUIRE_PEERS === "1") throw new Error("CLAWBRIDGE_REQUIRE_PEERS=1 but OpenClaw is not installed");
const realSdk = sdkPresent ? await import(sdkModuleUrl()) : undefined;
const skip = sdkPresent ? false : "OpenClaw is not installed (scripts/install-peers.sh openclaw)";

/** Messaging helpers standing in for the SDK's: `message` sends `args.text` to `args.to`. */
const helpers = {
  isMessagingTool: (name) => name === "message",
  isMessagingToolSendAction: (name) => name === "message",
  readEmbeddedMessageDeliveryFact: (value) => value,
  extractMessagingToolSend: (_name, args) => ({ to: args.to }),
  extractToolResultMediaArtifact: realSdk?.extractToolResultMediaArtifact,
  filterToolResultMediaUrls: (_name, urls) => urls,
};

/** A messaging send of `text` to `to`, settled. */
const send = (callId, text, to = "channel:1") => ({
  toolName: "message",
  callId,
  args: { to, text },
  result: { content: [{ type: "text", text: "sent" }], details: { messageDelivery: { status: "settled" } } },
  isError: false,
});

const bigRun = (i) => ({
  toolName: "web_fetch",
  callId: `call-${i}`,
  args: { url: `https://example.test/${i}` },
  result: { content: [{ type: "text", text: "p".repeat(64 * 1024) }], details: { status: "ok" } },
  isError: false,
});

test("host tool runs: many large results stay within the byte budget, and a late send still counts", { skip }, () => {
  const runs = new HostToolRuns({ isMessagingTool: helpers.isMessagingTool });
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
    callId: "img-structured",
    args: {},
    result: { content: [{ type: "text", text: "x".repeat(100_000) }], details: { media: { mediaUrls: ["/tmp/structured.png"] } } },
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
  assert.deepEqual(facts.toolMediaUrls, ["/tmp/structured.png", "/tmp/out.png"], "results past the budget still name their media");

  const compact = runs.find("call-599");
  assert.equal(compact.toolName, "web_fetch");
  assert.equal(compact.result.details.status, "ok");
  assert.ok(compact.result.content[0].text.length < 1024, "a compact run keeps a short text only");
  const failed = runs.find("err-1");
  assert.ok(failed.isError && failed.result instanceof Error && failed.result.message.startsWith("boom"));
  assert.ok(failed.result.message.length < 1024, "a short error");
});

test("host tool runs past every budget are dropped and counted, but never a send, and media still counts", { skip }, () => {
  const runs = new HostToolRuns({ fullBytes: 1024, allBytes: 8 * 1024, skeletonBytes: 4096, isMessagingTool: helpers.isMessagingTool });
  for (let i = 0; i < 100; i += 1) runs.add(bigRun(i));
  assert.ok(runs.dropped > 0 && runs.compacted > 0, `${runs.compacted} compact, ${runs.dropped} dropped`);
  assert.ok(runs.bytes <= 8 * 1024 + 4096);
  assert.equal(runs.runs.length + runs.dropped, 100);
  assert.match(runs.summary(), /kept compact and \d+ dropped/, "the counts are there for the log");
  const long = `${"é".repeat(3000)} the end`;
  runs.add(send("late-send", long));
  const facts = deliveryFacts(runs.runs, helpers);
  assert.deepEqual(facts.messagingToolSentTexts, [long], "a send past every budget is kept, its text whole");
});

test("a messaging send over 1 KiB past the whole-run budget keeps its text whole", { skip }, () => {
  const runs = new HostToolRuns({ fullBytes: 1024, isMessagingTool: helpers.isMessagingTool });
  runs.add(bigRun(0));
  const long = "a long reply ".repeat(400);
  runs.add(send("send-1", long));
  assert.equal(runs.compacted, 2);
  const facts = deliveryFacts(runs.runs, helpers);
  assert.deepEqual(facts.messagingToolSentTexts, [long]);
  assert.deepEqual(facts.messagingToolSentTargets, [{ to: "channel:1", text: long }]);
});

test("byte counts are UTF-8 bytes, and an error's cause and properties count", () => {
  assert.ok(approxBytes("é".repeat(1000), 1e6) >= 2000, "two bytes per é");
  assert.ok(approxBytes("字".repeat(1000), 1e6) >= 3000, "three bytes per 字");
  const error = new Error("short", { cause: { body: "c".repeat(10_000) } });
  error.response = "r".repeat(10_000);
  assert.ok(approxBytes(error, 1e6) >= 20_000, `${approxBytes(error, 1e6)}`);
});

test("tool start arguments are bounded in bytes: whole, then cut, then none", () => {
  const facts = new AttemptFacts(undefined);
  for (let i = 0; i < 200; i += 1) {
    observeEvent(facts, { type: "toolStarted", callId: `c${i}`, toolName: "write", arguments: { content: "w".repeat(64 * 1024) } });
  }
  assert.ok(facts.toolArgumentsBytes <= 4 * 1024 * 1024, `${facts.toolArgumentsBytes}`);
  assert.ok(approxBytes([...facts.toolArguments.values()], 64 * 1024 * 1024) <= 4 * 1024 * 1024 + 200 * 64);
  assert.equal(facts.toolArguments.get("c0").content.length, 64 * 1024, "the first are whole");
  assert.ok(facts.toolArguments.get("c199") === undefined || facts.toolArguments.get("c199").content.length < 1024);
});

test("host results kept for their toolFinished are bounded in bytes, the oldest going first", () => {
  const tools = new ToolProgress({ params: {}, sdk: {} }, {});
  const image = (i) => ({ content: [{ type: "image", mimeType: "image/png", data: String(i).repeat(4 * 1024 * 1024) }] });
  for (let i = 0; i < 10; i += 1) tools.noteHostToolResult(`c${i}`, image(i));
  assert.ok(tools.hostResultsBytes <= 16 * 1024 * 1024, `${tools.hostResultsBytes}`);
  assert.ok(tools.hostResults.size < 10 && tools.hostResults.has("c9") && !tools.hostResults.has("c0"));
  assert.equal(tools.takeHostResult("c9").content[0].data.length, 4 * 1024 * 1024);
});

test("the rows an attempt keeps of its stored transcript are bounded in bytes; the newest stays", () => {
  const attempt = { mirrored: [] };
  for (let i = 0; i < 50; i += 1) keepMirrored(attempt, { role: "toolResult", content: [{ type: "text", text: "t".repeat(1024) }] }, 16 * 1024);
  keepMirrored(attempt, { role: "assistant", stopReason: "stop", content: [{ type: "text", text: "the answer" }] }, 16 * 1024);
  assert.ok(attempt.mirroredDropped > 0);
  assert.ok(approxBytes(attempt.mirrored, 1e6) <= 16 * 1024);
  assert.equal(attempt.mirrored.at(-1).stopReason, "stop");
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
