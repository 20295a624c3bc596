// before_agent_finalize: the plugins' hooks judge a completed native answer; a revision request is
// reported as `beforeAgentFinalizeRevisionReason` (OpenClaw's run loop then runs the revision turn)
// under the embedded runner's conditions, and agent_end waits for the revised attempt.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "node:test";
import { pathToFileURL } from "node:url";

import { beforeAgentFinalize } from "../src/finalize.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, pluginUnderTest, repoRoot } from "./support/fakes.js";

const CODEX = "clawbridge-codex";
const SDK_PATH = join(repoRoot, ".peers/openclaw/node_modules/openclaw/dist/plugin-sdk/agent-harness-runtime.js");

/**
 * The SDK's own runAgentHarnessBeforeAgentFinalizeHook (its normalization and error handling) over a
 * stand-in hook runner answering `answer`, recording what the hooks saw.
 */
async function realHook(answer, seen) {
  if (!existsSync(SDK_PATH)) {
    if (process.env.CLAWBRIDGE_REQUIRE_PEERS === "1") throw new Error(`CLAWBRIDGE_REQUIRE_PEERS=1 but ${SDK_PATH} is missing`);
    return null;
  }
  const sdk = await import(pathToFileURL(SDK_PATH).href);
  const hookRunner = {
    hasHooks: (name) => name === "before_agent_finalize",
    runBeforeAgentFinalize: async (event, ctx) => {
      seen.push({ event, ctx });
      return typeof answer === "function" ? answer() : answer;
    },
  };
  return (params) => sdk.runAgentHarnessBeforeAgentFinalizeHook({ ...params, hookRunner });
}

test("with a Codex backend: a revision request on a completed answer is the result's revision reason, and agent_end waits", async (t) => {
  const seen = [];
  const hook = await realHook({ action: "revise", reason: "Mention the test results." }, seen);
  if (!hook) return t.skip("OpenClaw is not installed");
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const agentEnds = [];
  const env = pluginUnderTest({
    codexBin: fakeCodex(dir, { mode: "retryThenAnswer" }),
    deps: { sdk: { runAgentHarnessBeforeAgentFinalizeHook: hook, runAgentEndSideEffects: (p) => agentEnds.push(p) } },
  });
  t.after(env.cleanup);
  const { params } = attemptParams({ prompt: "Say hello." });
  params.maxBeforeAgentFinalizeRevisions = 3;
  params.beforeAgentFinalizeRevisionAttempts = 0;
  params.trigger = "user";
  const result = await env.harness(CODEX).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(result.beforeAgentFinalizeRevisionReason, "Mention the test results.");
  assert.equal(seen.length, 1);
  assert.equal(seen[0].event.lastAssistantMessage, "Hello from the mock model.");
  assert.equal(seen[0].event.sessionId, params.sessionId);
  assert.equal(seen[0].event.runId, params.runId);
  assert.equal(seen[0].event.stopHookActive, false);
  assert.ok(seen[0].event.messages.some((m) => m.role === "assistant"), "the hook sees the turn's messages");
  assert.equal(seen[0].ctx.sessionKey, params.sessionTarget.sessionKey);
  assert.equal(seen[0].ctx.trigger, "user");
  assert.deepEqual(agentEnds, [], "agent_end belongs to the revised attempt");

  // The revision attempt (what OpenClaw's run loop sends next) runs on the same native session; a
  // hook that now accepts the answer finalizes, and agent_end runs.
  seen.length = 0;
  const accepting = await realHook({ action: "continue" }, seen);
  env.plugin.runtime.options.sdk.runAgentHarnessBeforeAgentFinalizeHook = accepting;
  const revised = await env.harness(CODEX).runAttempt({ ...params, prompt: "Revise.", beforeAgentFinalizeRevisionAttempts: 1 });
  assert.equal(revised.terminal.kind, "ok");
  assert.equal(revised.beforeAgentFinalizeRevisionReason, undefined);
  assert.equal(seen.length, 1);
  assert.equal(agentEnds.length, 1);
  assert.deepEqual(env.protocol.problems, []);
});

test("a revision is not asked once the limit is spent, nor for a failed, silent or side-effecting turn", async (t) => {
  const seen = [];
  const hook = await realHook({ action: "revise", reason: "Again." }, seen);
  if (!hook) return t.skip("OpenClaw is not installed");
  const sdk = { runAgentHarnessBeforeAgentFinalizeHook: hook };
  const base = () => ({
    terminal: { kind: "ok" },
    assistantTexts: ["Done."],
    lastAssistant: { role: "assistant", content: [{ type: "text", text: "Done." }] },
    messagesSnapshot: [],
    replayMetadata: { hadPotentialSideEffects: false, replaySafe: true },
    assistantTranscriptOwned: true,
  });
  const params = { sessionId: "s", runId: "r", maxBeforeAgentFinalizeRevisions: 3, beforeAgentFinalizeRevisionAttempts: 2 };

  const underLimit = base();
  await beforeAgentFinalize(sdk, params, underLimit);
  assert.equal(underLimit.beforeAgentFinalizeRevisionReason, "Again.", "2 of 3 spent: one more is allowed");

  const spent = base();
  const warnings = [];
  await beforeAgentFinalize(sdk, { ...params, beforeAgentFinalizeRevisionAttempts: 3 }, spent, { warn: (w) => warnings.push(w) });
  assert.equal(spent.beforeAgentFinalizeRevisionReason, undefined);
  assert.match(warnings.join("\n"), /limit reached \(3\/3\)/);
  assert.equal(seen.length, 1, "the hook was not asked past the limit");

  const failed = { ...base(), terminal: { kind: "failed", source: "prompt", error: new Error("x") } };
  await beforeAgentFinalize(sdk, params, failed);
  const silent = { ...base(), assistantTexts: ["NO_REPLY"], lastAssistant: { role: "assistant", content: [{ type: "text", text: "NO_REPLY" }] } };
  await beforeAgentFinalize(sdk, { ...params, silentExpected: true }, silent);
  const settled = base();
  await beforeAgentFinalize(sdk, { ...params, operation: "settled-tool-finalization" }, settled);
  assert.equal(seen.length, 1, "none of these reaches the hook");
  for (const r of [failed, silent, settled]) assert.equal(r.beforeAgentFinalizeRevisionReason, undefined);

  // Asked, but a revision would repeat what already happened: finalized.
  const sideEffects = [
    { replayMetadata: { hadPotentialSideEffects: true, replaySafe: false } },
    { didSendViaMessagingTool: true },
    { acceptedSessionSpawns: [{ runId: "c", childSessionKey: "k", expectsCompletionMessage: false }] },
    { successfulCronAdds: 1 },
    { assistantTranscriptOwned: false },
  ];
  for (const extra of sideEffects) {
    const r = { ...base(), ...extra };
    await beforeAgentFinalize(sdk, params, r);
    assert.equal(r.beforeAgentFinalizeRevisionReason, undefined, JSON.stringify(extra));
  }
  assert.equal(seen.length, 1 + sideEffects.length);

  // A hook that throws finalizes (the SDK's own handling); no SDK hook, nothing happens.
  const throwing = await realHook(() => {
    throw new Error("hook crashed");
  }, seen);
  const crashed = base();
  await beforeAgentFinalize({ runAgentHarnessBeforeAgentFinalizeHook: throwing }, params, crashed);
  assert.equal(crashed.beforeAgentFinalizeRevisionReason, undefined);
  const bare = base();
  await beforeAgentFinalize({}, params, bare);
  assert.equal(bare.beforeAgentFinalizeRevisionReason, undefined);
});
