// @ts-check
// The context window and the prompt facts of an attempt (host protocol version 3).
//
// In: an operator's per-model `contextTokens` cap reaches OpenClaw's attempt as
// `authoredContextTokenCap`, with `contextTokenBudget` the window core budgets the run with (the
// model's window under that cap). Only then is the window sent to the bridge (`attempt/run`
// `contextWindow`), which applies it where the native runtime has a knob (Codex thread config
// `model_context_window`); without an authored cap the native runtime keeps its own window, as
// OpenClaw's bundled Codex harness leaves it.
//
// Out: the bridge's `lastCall` (the turn's most recent model call, as the native runtime reported
// it) becomes the result's `contextTokens` (the window the runtime applied; `runtime-configured`
// when the operator's cap was applied, as the bundled Codex harness says) and
// `promptCache.lastCallUsage` (that call's usage alone, which core takes as the session's latest
// prompt size). `contextBudgetStatus` is not produced: it is the built-in runner's pre-prompt
// estimate over its own message array, which a native runtime does not expose.

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */

/** @param {unknown} value */
function positive(value) {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : undefined;
}

/** Harnesses whose native runtime takes a context window (Codex's `model_context_window`). */
const APPLIES_CONTEXT_WINDOW = new Set(["clawbridge-codex"]);

/**
 * The `contextWindow` of an `attempt/run` of harness `harnessId`: the budget core resolved under the
 * operator's authored cap, or `undefined` when no cap was authored or the native runtime has no
 * knob for it (Claude Code keeps its own window).
 *
 * @param {any} params the attempt params
 * @param {string} harnessId
 * @returns {number | undefined}
 */
export function contextWindowParam(params, harnessId) {
  if (!APPLIES_CONTEXT_WINDOW.has(harnessId)) return undefined;
  const cap = positive(params?.authoredContextTokenCap);
  if (cap === undefined) return undefined;
  const budget = positive(params?.contextTokenBudget);
  return budget === undefined ? cap : Math.min(budget, cap);
}

/**
 * The result's context facts from the bridge's `lastCall` (untrusted wire data): the window is
 * `runtime-configured` only when the operator's cap reached the native runtime.
 *
 * @param {any} lastCall
 * @param {any} params the attempt params
 * @param {string} harnessId
 * @returns {Pick<AttemptResult, "contextTokens" | "contextTokensSource" | "promptCache">}
 */
export function contextFacts(lastCall, params, harnessId) {
  if (!lastCall || typeof lastCall !== "object") return {};
  /** @type {Pick<AttemptResult, "contextTokens" | "contextTokensSource" | "promptCache">} */
  const facts = {};
  const window = positive(lastCall.contextWindow);
  if (window !== undefined) {
    facts.contextTokens = window;
    facts.contextTokensSource = contextWindowParam(params, harnessId) === undefined ? "runtime" : "runtime-configured";
  }
  const usage = lastCall.usage && typeof lastCall.usage === "object" ? lastCall.usage : undefined;
  const prompt = positive(usage?.inputTokens) ?? 0;
  const output = positive(usage?.outputTokens) ?? 0;
  if (prompt > 0 || output > 0) {
    // The bridge counts cached reads and writes inside the prompt; OpenClaw keeps them apart.
    const cacheRead = Math.min(positive(usage?.cachedInputTokens) ?? 0, prompt);
    const cacheWrite = Math.min(positive(lastCall.cacheWriteTokens) ?? 0, prompt - cacheRead);
    facts.promptCache = {
      lastCallUsage: { input: prompt - cacheRead - cacheWrite, output, cacheRead, cacheWrite, total: prompt + output },
    };
  }
  return facts;
}
