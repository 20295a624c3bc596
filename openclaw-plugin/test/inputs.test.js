// Inputs besides the prompt's text: the prompt's images (OpenClaw's loader, bounded), a host tool's
// images (carried as images), and
// active-run injection (`messageInjectionV2` → `attempt/steer` → the native turn), the latter
// through the real bridge and a fake Codex that takes `turn/steer`.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { executeTool } from "../src/host-requests.js";
import { MAX_IMAGES, promptImages } from "../src/inputs.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, pluginUnderTest, recordingLogger } from "./support/fakes.js";

const CODEX = "clawbridge-codex";
const PNG = { data: "iVBORw0KGgo=", mimeType: "image/png" };

test("the prompt's images come from OpenClaw's loader, workspace only, for a model that takes images", async () => {
  const calls = [];
  const loader = async (args) => {
    calls.push(args);
    return { images: [{ type: "image", ...PNG }] };
  };
  const params = { prompt: "look at ./a.png", workspaceDir: "/w", model: { input: ["text", "image"] }, config: {} };
  assert.deepEqual(await promptImages(params, loader), [PNG]);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].workspaceOnly, true, "a prompt cannot turn any readable file into model input");
  assert.equal(calls[0].workspaceDir, "/w");
  assert.deepEqual(calls[0].model, { input: ["text", "image"] });

  // A text-only model: the loader is not asked, attached images still go.
  const textOnly = { ...params, model: { input: ["text"] }, images: [PNG, { data: 1 }] };
  assert.deepEqual(await promptImages(textOnly, loader), [PNG], "malformed images are dropped");
  assert.equal(calls.length, 1);

  // A failing loader leaves the attached images and logs why.
  const logger = recordingLogger();
  const failing = async () => {
    throw new Error("disk gone");
  };
  assert.deepEqual(await promptImages({ ...params, images: [PNG] }, failing, logger), [PNG]);
  assert.match(logger.lines.join("\n"), /disk gone/);

  // Bounded in count.
  const many = Array.from({ length: MAX_IMAGES + 3 }, () => PNG);
  assert.equal((await promptImages({ prompt: "x", images: many })).length, MAX_IMAGES);
});

test("a host tool's image content goes back as images, not as the text [image]", async () => {
  const shot = { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" };
  const attempt = { attemptId: "a:1", tools: new Map(), signal: new AbortController().signal, logger: recordingLogger() };
  attempt.tools.set("screenshot", { name: "screenshot", execute: async () => ({ content: [shot], details: {} }) });
  attempt.tools.set("both", {
    name: "both",
    execute: async () => ({ content: [{ type: "text", text: "the page" }, shot, { type: "image", data: 7 }] }),
  });
  assert.deepEqual(await executeTool(attempt, { toolName: "screenshot", callId: "c1" }), {
    text: "",
    isError: false,
    images: [{ data: shot.data, mimeType: "image/png" }],
  });
  assert.deepEqual(await executeTool(attempt, { toolName: "both", callId: "c2" }), {
    text: "the page",
    isError: false,
    images: [{ data: shot.data, mimeType: "image/png" }],
  });
});

async function waitFor(ready, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("with a Codex backend: a message OpenClaw injects into the running run reaches the native turn", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const active = [];
  const cleared = [];
  const deps = {
    setActiveEmbeddedRun: (sessionId, handle, sessionKey) => active.push({ sessionId, handle, sessionKey }),
    clearActiveEmbeddedRun: (sessionId, handle) => cleared.push({ sessionId, handle }),
  };
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "untilInterrupted" }), deps });
  t.after(env.cleanup);
  const controller = new AbortController();
  const { params, events } = attemptParams({ abortSignal: controller.signal });
  const running = env.harness(CODEX).runAttempt(params);
  await waitFor(() => events.some((e) => e.stream === "lifecycle" && e.data.phase === "start"));

  assert.equal(active.length, 1, "the run is the session's active run");
  assert.equal(active[0].sessionId, params.sessionId);
  assert.equal(active[0].sessionKey, params.sessionTarget.sessionKey);
  const injection = active[0].handle.messageInjectionV2;
  assert.equal(injection.version, 2);
  assert.equal(injection.isAvailable(), true);

  // The host's assertion runs before anything is sent; a revoked injection sends nothing.
  await assert.rejects(
    injection.queueMessage("revoked", undefined, () => {
      throw new Error("revoked");
    }, "run"),
    /revoked/,
  );
  assert.equal(env.protocol.counts["attempt/steer"] ?? 0, 0);

  let asserted = 0;
  await injection.queueMessage("Also update the changelog.", undefined, () => {
    asserted += 1;
  }, "source-bound");
  assert.equal(asserted, 1);
  const steer = env.protocol.sent.find((m) => m.method === "attempt/steer");
  assert.deepEqual(steer.params, { attemptId: steer.params.attemptId, text: "Also update the changelog." });
  assert.equal(env.protocol.counts["attempt/steer (answer)"], 1, "the bridge answered: the fake Codex took turn/steer");

  controller.abort(new Error("done"));
  const result = await running;
  assert.equal(result.terminal.kind, "aborted");
  assert.equal(cleared.length, 1, "the active run is cleared when the attempt ends");
  assert.equal(cleared[0].handle, active[0].handle);
  assert.equal(injection.isAvailable(), false);
  await assert.rejects(injection.queueMessage("after", undefined, () => {}, "run"), /already ended/);
  assert.deepEqual(env.protocol.problems, []);
});

test("with a Codex backend: the active-run handle is the reply operation's backend, carries the tool authority, and its cancel stops the native turn", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const active = [];
  const deps = {
    setActiveEmbeddedRun: (sessionId, handle) => active.push({ sessionId, handle }),
    clearActiveEmbeddedRun: () => {},
  };
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "untilInterrupted" }), deps });
  t.after(env.cleanup);
  const { params, events } = attemptParams();
  const attached = [];
  const detached = [];
  params.toolAuthorityFingerprint = `authority-${process.pid}`;
  params.replyOperation = { attachBackend: (handle) => attached.push(handle), detachBackend: (handle) => detached.push(handle) };
  const running = env.harness(CODEX).runAttempt(params);
  await waitFor(() => events.some((e) => e.stream === "lifecycle" && e.data.phase === "start"));

  assert.equal(attached.length, 1, "attached to the reply operation while it runs");
  assert.equal(detached.length, 0);
  const handle = attached[0];
  assert.equal(handle, active[0].handle, "the same handle is the session's active run");
  assert.equal(handle.toolAuthorityFingerprint, params.toolAuthorityFingerprint);
  assert.equal(handle.kind, "embedded");
  assert.equal(handle.runId, params.runId);
  assert.equal(typeof handle.cancel, "function");

  // The reply operation's stop (a user's /stop) ends the native turn: an external abort.
  handle.cancel("user_abort");
  const result = await running;
  assert.equal(result.terminal.kind, "aborted", JSON.stringify(result.terminal));
  assert.equal(result.terminal.source, "external");
  assert.ok((env.protocol.counts["attempt/cancel"] ?? 0) >= 1, "attempt/cancel was sent");
  assert.deepEqual(detached, [handle], "detached once the attempt ended");
  assert.equal(handle.isStopped(), true);
  assert.deepEqual(env.protocol.problems, []);
});

test("a harness that cannot steer is still its reply operation's backend, never the injectable active run", async (t) => {
  const active = [];
  const attached = [];
  const detached = [];
  const env = pluginUnderTest({ deps: { setActiveEmbeddedRun: (...args) => active.push(args) } });
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "Say hello." });
  params.replyOperation = { attachBackend: (handle) => attached.push(handle), detachBackend: (handle) => detached.push(handle) };
  const result = await env.harness("clawbridge-demo").runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(active, []);
  assert.equal(attached.length, 1);
  assert.equal(attached[0].messageInjectionV2, undefined, "nothing to inject into");
  assert.deepEqual(detached, attached);
});

test("a harness that cannot steer is never offered as the active run", async (t) => {
  const active = [];
  const env = pluginUnderTest({ deps: { setActiveEmbeddedRun: (...args) => active.push(args) } });
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "Say hello." });
  const result = await env.harness("clawbridge-demo").runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.deepEqual(active, []);
});

test("images for a harness that cannot take them fail preflight with the reason; harness/list says who takes what", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "untilInterrupted" }) });
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "What is in this picture?" });
  // A real 4x4 PNG: the refusal is about the harness, not the image.
  params.images = [{ type: "image", data: "iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAEElEQVR4nGP4z8AARwzEcQCukw/x0F8jngAAAABJRU5ErkJggg==", mimeType: "image/png" }];
  await assert.rejects(env.harness("clawbridge-demo").runAttempt(params), (error) => {
    assert.match(error.message, /cannot take images/);
    assert.match(error.message, /-32034/);
    return true;
  });
  const run = env.protocol.sent.find((m) => m.method === "attempt/run");
  assert.equal(run.params.images.length, 1, "the attached image went on the wire");
  const inputs = (id) => env.plugin.runtime.supervisor.harnessInfo(id)?.inputs;
  assert.deepEqual(inputs(CODEX), { images: true, thinkLevel: true, steering: true });
  assert.equal(inputs("clawbridge-demo"), undefined, "the demo takes text only");
  const conn = await env.plugin.runtime.supervisor.connection();
  assert.deepEqual(await conn.client.request("attempt/steer", { attemptId: "nothing", text: "hi" }), { status: "notRunning" });
  assert.deepEqual(env.protocol.problems, []);
});
