// The context window and prompt facts (budget.js): the operator's cap goes to the bridge only when
// one was authored, and the bridge's last model call becomes contextTokens and promptCache.

import assert from "node:assert/strict";
import test from "node:test";

import { contextFacts, contextWindowParam } from "../src/budget.js";
import { toAttemptResult } from "../src/result.js";

test("the context window goes to the bridge only under an authored cap, as core's budget under it", () => {
  assert.equal(contextWindowParam({ contextTokenBudget: 128000 }, "clawbridge-codex"), undefined, "no cap: the runtime's own window");
  assert.equal(contextWindowParam({ contextTokenBudget: 64000, authoredContextTokenCap: 64000 }, "clawbridge-codex"), 64000);
  assert.equal(contextWindowParam({ contextTokenBudget: 32000, authoredContextTokenCap: 64000 }, "clawbridge-codex"), 32000);
  assert.equal(contextWindowParam({ authoredContextTokenCap: 50000.7 }, "clawbridge-codex"), 50000);
  assert.equal(contextWindowParam({ contextTokenBudget: 64000, authoredContextTokenCap: 0 }, "clawbridge-codex"), undefined);
  // Claude Code has no window knob: the cap is not sent, and its own window is no configured one.
  assert.equal(contextWindowParam({ contextTokenBudget: 64000, authoredContextTokenCap: 64000 }, "clawbridge-claude"), undefined);
  assert.equal(contextFacts({ contextWindow: 1000000 }, { authoredContextTokenCap: 64000 }, "clawbridge-claude").contextTokensSource, "runtime");
  assert.equal(contextWindowParam({ authoredContextTokenCap: "64000" }, "clawbridge-codex"), undefined);
});

test("the last model call is contextTokens (runtime, or runtime-configured under a cap) and promptCache.lastCallUsage", () => {
  const lastCall = { usage: { inputTokens: 1000, outputTokens: 20, cachedInputTokens: 600 }, cacheWriteTokens: 300, contextWindow: 258400 };
  assert.deepEqual(contextFacts(lastCall, {}, "clawbridge-codex"), {
    contextTokens: 258400,
    contextTokensSource: "runtime",
    promptCache: { lastCallUsage: { input: 100, output: 20, cacheRead: 600, cacheWrite: 300, total: 1020 } },
  });
  assert.equal(contextFacts(lastCall, { authoredContextTokenCap: 64000 }, "clawbridge-codex").contextTokensSource, "runtime-configured");
  // No window reported (Claude before its result): no contextTokens, the usage still counts.
  assert.deepEqual(contextFacts({ usage: { inputTokens: 50, outputTokens: 5 } }, {}, "clawbridge-codex"), {
    promptCache: { lastCallUsage: { input: 50, output: 5, cacheRead: 0, cacheWrite: 0, total: 55 } },
  });
  // Odd wire data never yields negative or made-up counts.
  assert.deepEqual(contextFacts({ usage: { inputTokens: 10, cachedInputTokens: 50 }, cacheWriteTokens: 9, contextWindow: -1 }, {}, "clawbridge-codex"), {
    promptCache: { lastCallUsage: { input: 0, output: 0, cacheRead: 10, cacheWrite: 0, total: 10 } },
  });
  assert.deepEqual(contextFacts(undefined, {}, "clawbridge-codex"), {});
  assert.deepEqual(contextFacts("x", {}, "clawbridge-codex"), {});
});

test("toAttemptResult carries the bridge's lastCall into contextTokens and promptCache; without it they are absent", () => {
  const base = { terminal: { kind: "ok" }, replay: { hadPotentialSideEffects: false, replaySafe: true } };
  const withCall = toAttemptResult({ ...base, lastCall: { usage: { inputTokens: 4321, outputTokens: 9 }, contextWindow: 60800 } }, { params: { authoredContextTokenCap: 64000 }, harnessId: "clawbridge-codex" });
  assert.equal(withCall.contextTokens, 60800);
  assert.equal(withCall.contextTokensSource, "runtime-configured");
  assert.deepEqual(withCall.promptCache, { lastCallUsage: { input: 4321, output: 9, cacheRead: 0, cacheWrite: 0, total: 4330 } });
  assert.equal(withCall.contextBudgetStatus, undefined, "the built-in runner's pre-prompt estimate is never made up");
  const without = toAttemptResult(base, { params: {} });
  assert.equal("contextTokens" in without, false);
  assert.equal("promptCache" in without, false);
});
