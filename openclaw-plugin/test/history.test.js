// The transcript history the plugin sends with attempt/run (protocol version 2) and the projection
// notice it tells the host: flattening, the stored prompt left out, the byte caps, prepareContextMedia.

import { test } from "node:test";
import assert from "node:assert/strict";

import { MAX_ENTRY_TEXT_BYTES, MAX_HISTORY_BYTES, historyOf, readHistory, reportProjection } from "../src/history.js";

/** A row as readVisibleSessionTranscriptMessageEntries returns it. */
function row(role, content, idempotencyKey) {
  return { entryId: `e-${Math.random()}`, role, message: { role, content }, ...(idempotencyKey ? { idempotencyKey } : {}) };
}

test("the history flattens entries to text, keeps keys, and leaves out the stored prompt", () => {
  const rows = [
    row("user", "my name is Ada"),
    row("assistant", [{ type: "thinking", thinking: "hm" }, { type: "toolCall", name: "exec", arguments: { command: "ls" } }], "clawbridge:r1:tool:c1:call"),
    { entryId: "x", role: "toolResult", message: { role: "toolResult", toolName: "exec", content: [{ type: "text", text: "a.txt" }] } },
    row("assistant", [{ type: "text", text: "Hello Ada" }], "clawbridge:r1:assistant:0"),
    row("user", "what is my name?"),
  ];
  const history = historyOf(rows);
  assert.deepEqual(history, {
    entries: [
      { role: "user", text: "my name is Ada" },
      { role: "assistant", text: '[tool call exec {"command":"ls"}]', key: "clawbridge:r1:tool:c1:call" },
      { role: "toolResult", text: "[tool result of exec] a.txt" },
      { role: "assistant", text: "Hello Ada", key: "clawbridge:r1:assistant:0" },
    ],
    omitted: 0,
  });
});

test("the newest entries are kept within the bridge's byte cap; one entry's text is cut", () => {
  const big = "y".repeat(MAX_ENTRY_TEXT_BYTES * 2);
  const rows = [];
  for (let i = 0; i < 40; i += 1) rows.push(row("assistant", [{ type: "text", text: `${i}:${big}` }], `clawbridge:r${i}:assistant:0`));
  const history = historyOf(rows);
  const bytes = history.entries.reduce((n, e) => n + Buffer.byteLength(e.role) + Buffer.byteLength(e.text) + Buffer.byteLength(e.key ?? ""), 0);
  assert.ok(bytes <= MAX_HISTORY_BYTES, `${bytes}`);
  assert.ok(history.omitted > 0);
  assert.equal(history.entries.length + history.omitted, 40);
  assert.ok(history.entries.at(-1).text.startsWith("39:"), "the newest stays");
  assert.ok(history.entries[0].text.endsWith(" … [cut]"));
  assert.ok(Buffer.byteLength(history.entries[0].text) <= MAX_ENTRY_TEXT_BYTES);
});

test("readHistory reads the run's transcript target, uses prepareContextMedia for media, and never throws", async () => {
  const seen = [];
  const sdk = {
    async readVisibleSessionTranscriptMessageEntries(target) {
      seen.push(target);
      return [row("user", [{ type: "text", text: "look" }, { type: "image", data: "AAAA", mimeType: "image/png" }]), row("user", "now")];
    },
  };
  const params = {
    sessionId: "s-1",
    sessionTarget: { agentId: "main", sessionKey: "agent:main:s-1", storePath: "/store" },
    hostCapabilities: { prepareContextMedia: async ({ message, maxChars }) => ({ text: `${message.content[0].text} (${maxChars})`, images: [{}] }) },
  };
  const history = await readHistory(params, sdk);
  assert.equal(seen[0].sessionId, "s-1");
  assert.equal(seen[0].sessionKey, "agent:main:s-1");
  assert.deepEqual(history, { entries: [{ role: "user", text: `look (${MAX_ENTRY_TEXT_BYTES})\n[image]` }], omitted: 0 });
  const warnings = [];
  const failing = { readVisibleSessionTranscriptMessageEntries: async () => { throw new Error("store locked"); } };
  assert.equal(await readHistory(params, failing, { warn: (t) => warnings.push(t) }), undefined);
  assert.match(warnings[0], /store locked/);
  assert.equal(await readHistory({ ...params, sessionPersistence: "detached" }, sdk), undefined);
  assert.equal(await readHistory(params, {}), undefined);
});

test("a projection in the result is told to the host", () => {
  const warnings = [];
  reportProjection({ projection: { reason: "the native session could not be resumed", entries: 3, omitted: 1 } }, "a-1", { warn: (t) => warnings.push(t) });
  reportProjection({}, "a-2", { warn: (t) => warnings.push(t) });
  assert.deepEqual(warnings, ["clawbridge: attempt a-1: a new native session was started with 3 transcript entries (1 older left out): the native session could not be resumed"]);
});
