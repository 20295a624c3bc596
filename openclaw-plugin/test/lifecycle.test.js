// Session lifecycle through the real `clawbridge serve` (the demo harness): reset by reason, a reset
// during a running attempt, and core's two-phase deletion / context-reset hooks reaching the bridge
// only once core's commit is complete. Every message both ways is validated against the schema.

import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { attemptParams, fakeHost, pluginUnderTest, protocolSchema } from "./support/fakes.js";
import { createProtocolChecker } from "./support/schema.js";

const DEMO = "clawbridge-demo";

/** A protocol checker that also keeps each plugin request with the bridge's answer. */
function answeringChecker() {
  const base = createProtocolChecker(protocolSchema());
  const asked = new Map();
  const answers = [];
  const tap = (direction, message) => {
    if (direction === "out" && typeof message.method === "string" && Object.hasOwn(message, "id")) asked.set(message.id, message);
    if (direction === "in" && typeof message.method !== "string" && asked.has(message.id)) {
      const request = asked.get(message.id);
      answers.push({ method: request.method, params: request.params, result: message.result, error: message.error });
    }
    base.tap(direction, message);
  };
  return { ...base, tap, answers };
}

function bindingFiles(env) {
  try {
    return readdirSync(join(env.stateDir, "serve", "bindings")).filter((name) => name.endsWith(".json")).length;
  } catch {
    return 0;
  }
}

function clean(env) {
  assert.deepEqual(env.protocol.problems, [], env.protocol.problems.join("\n"));
  assert.deepEqual([...env.protocol.pending.host.values()], [], "plugin requests the bridge never answered");
}

async function waitFor(ready, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test("reset by reason: compaction keeps the native binding, new/reset/idle/daily/deleted/unknown drop it", async (t) => {
  const checker = answeringChecker();
  const env = pluginUnderTest({ checker });
  t.after(env.cleanup);
  const harness = env.harness(DEMO);
  for (const reason of ["new", "reset", "idle", "daily", "deleted", "unknown"]) {
    const { params } = attemptParams();
    assert.equal((await harness.runAttempt(params)).terminal.kind, "ok");
    assert.equal(bindingFiles(env), 1, reason);
    await harness.reset({ sessionId: params.sessionId, sessionKey: params.sessionKey, reason });
    assert.deepEqual(checker.answers.at(-1).result, { dropped: true, action: "dropped" }, reason);
    assert.equal(bindingFiles(env), 0, `${reason}: the next attempt starts a fresh native session`);
  }
  const { params } = attemptParams();
  await harness.runAttempt(params);
  await harness.reset({ sessionId: params.sessionId, reason: "compaction" });
  assert.deepEqual(checker.answers.at(-1).result, { dropped: false, action: "kept" });
  assert.equal(bindingFiles(env), 1, "compaction keeps the native thread");
  clean(env);
});

test("a reset while an attempt runs is applied and answered after it, never refused or only logged", async (t) => {
  const checker = answeringChecker();
  const env = pluginUnderTest({ checker });
  t.after(env.cleanup);
  const controller = new AbortController();
  const host = fakeHost({ decision: "hold" });
  const { params } = attemptParams({ host, abortSignal: controller.signal });
  const harness = env.harness(DEMO);
  const running = harness.runAttempt(params);
  await waitFor(() => host.calls.requestApproval.length === 1);
  let resetDone = false;
  const reset = harness.reset({ sessionId: params.sessionId, reason: "reset" }).then(() => {
    resetDone = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(resetDone, false, "the reset waits for the running attempt");
  controller.abort("stop");
  await running;
  await reset;
  const answer = checker.answers.find((a) => a.method === "session/reset");
  assert.equal(answer.error, undefined, JSON.stringify(answer));
  assert.ok(answer.result.afterAttempt, JSON.stringify(answer.result));
  assert.equal(bindingFiles(env), 0, "the binding the attempt stored is gone");
  assert.ok(env.logger.lines.some((l) => l.includes("took effect after attempt")), env.logger.lines.join("\n"));
  clean(env);
});

test("a failed reset is thrown to core, not only logged", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const harness = env.harness(DEMO);
  await harness.runAttempt(attemptParams().params);
  const conn = await env.plugin.runtime.supervisor.connection();
  const request = conn.client.request.bind(conn.client);
  conn.client.request = (method, ...rest) =>
    method === "session/reset" ? Promise.reject(new Error("the bridge refused")) : request(method, ...rest);
  await assert.rejects(harness.reset({ sessionId: "s-x", reason: "reset" }), /session\/reset \(reset\) failed: the bridge refused/);
});

test("withSessionDeletion forgets the binding only after core's commit; a rollback or no commit leaves it", async (t) => {
  const checker = answeringChecker();
  const env = pluginUnderTest({ checker });
  t.after(env.cleanup);
  const harness = env.harness(DEMO);
  const { params } = attemptParams();
  await harness.runAttempt(params);
  const target = { agentId: "main", sessionKey: params.sessionKey, sessionId: params.sessionId, assertCurrent: () => {} };

  // Core's transaction fails before COMMIT: commit then rollback, nothing reaches the bridge.
  const rolledBack = await harness.withSessionDeletion(target, async (mutation) => {
    mutation.commit();
    mutation.rollback();
    return "rolled back";
  });
  assert.equal(rolledBack, "rolled back");
  // No commit at all (the row had changed): nothing either.
  await harness.withSessionDeletion(target, async () => "skipped");
  assert.equal(env.protocol.counts["session/delete"] ?? 0, 0);
  assert.equal(bindingFiles(env), 1);

  // The bridge is told after `run` resolved, not at the synchronous commit edge.
  let sentAtCommit;
  const result = await harness.withSessionDeletion(target, async (mutation) => {
    mutation.commit();
    sentAtCommit = env.protocol.counts["session/delete"] ?? 0;
    return "deleted";
  });
  assert.equal(result, "deleted", "core's result is passed through");
  assert.equal(sentAtCommit, 0);
  assert.deepEqual(checker.answers.at(-1), {
    method: "session/delete",
    params: { sessionId: params.sessionId, sessionKey: params.sessionKey, agentId: "main" },
    result: { forgotten: true },
    error: undefined,
  });
  assert.equal(bindingFiles(env), 0, "the binding file is gone");

  // A harness owner that changed: core's assertCurrent throws before anything runs.
  const stale = { ...target, assertCurrent: () => { throw new Error("Session mutation harness owner changed"); } };
  await assert.rejects(harness.withSessionDeletion(stale, async () => "never"), /owner changed/);
  clean(env);
});

test("withSessionContextReset drops the session's and its predecessor's binding after the cut commits", async (t) => {
  const checker = answeringChecker();
  const env = pluginUnderTest({ checker });
  t.after(env.cleanup);
  const harness = env.harness(DEMO);
  const before = attemptParams().params;
  const cut = attemptParams().params;
  const other = attemptParams().params;
  for (const params of [before, cut, other]) await harness.runAttempt(params);
  assert.equal(bindingFiles(env), 3);
  const result = await harness.withSessionContextReset(
    { agentId: "main", sessionKey: cut.sessionKey, sessionId: cut.sessionId, previousSessionId: before.sessionId, assertCurrent: () => {} },
    async (mutation) => {
      mutation.commit();
      return { status: "cut" };
    },
  );
  assert.deepEqual(result, { status: "cut" });
  const answer = checker.answers.at(-1);
  assert.equal(answer.method, "session/contextReset");
  assert.deepEqual(answer.result, { invalidated: [cut.sessionId, before.sessionId] });
  assert.equal(bindingFiles(env), 1, "the other session keeps its native thread");
  clean(env);
});

test("runtimeArtifact: captured on request, validated against the bridge's, and a different expected one refused up front", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const harness = env.harness(DEMO);
  assert.equal(typeof harness.runtimeArtifact?.validate, "function");

  const plain = await harness.runAttempt(attemptParams().params);
  assert.equal(plain.runtimeArtifact, undefined, "only when core asks");
  const asked = attemptParams();
  asked.params.captureRuntimeArtifact = true;
  const captured = await harness.runAttempt(asked.params);
  const artifact = captured.runtimeArtifact;
  assert.ok(artifact && artifact.id.startsWith(`${DEMO}@clawbridge-`) && /^[0-9a-f]{64}$/.test(artifact.fingerprint), JSON.stringify(captured));
  assert.deepEqual(Object.keys(artifact).sort(), ["fingerprint", "id"]);

  assert.equal(await harness.runtimeArtifact.validate(artifact), true);
  assert.equal(await harness.runtimeArtifact.validate({ ...artifact, fingerprint: "0".repeat(64) }), false);
  assert.equal(await harness.runtimeArtifact.validate({ id: artifact.id }), false);
  assert.equal(await env.harness("clawbridge-codex").runtimeArtifact.validate(artifact), false, "another harness's artifact");

  const continued = attemptParams();
  continued.params.expectedRuntimeArtifact = artifact;
  assert.equal((await harness.runAttempt(continued.params)).terminal.kind, "ok");
  const stale = attemptParams();
  stale.params.expectedRuntimeArtifact = { ...artifact, fingerprint: "0".repeat(64) };
  await assert.rejects(harness.runAttempt(stale.params), /not the runtime artifact/);
  clean(env);
});

test("no session runtime ownership is declared, and an attempt expecting native ownership is refused before any native work", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  for (const harness of env.registered) assert.equal(harness.resolveSessionRuntimeOwnership, undefined, harness.id);
  const { params } = attemptParams();
  params.expectedSessionRuntimeOwnership = { model: "native", auth: "host", modelRef: { provider: "mock", model: "mock-1" } };
  await assert.rejects(env.harness(DEMO).runAttempt(params), /expects native session ownership \(model: native, auth: host\)/);
  assert.equal(env.protocol.counts["attempt/run"] ?? 0, 0, "nothing reached the bridge");
});
