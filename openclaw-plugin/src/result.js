// @ts-check
// Maps the bridge's `attempt/run` result (docs/host-protocol.md) onto OpenClaw's
// `AgentHarnessAttemptResult` (the canonical shape: `terminal`, no deprecated booleans). Every
// required field is always present, whatever the bridge sent, so a result from a newer or odd
// bridge still satisfies the host; tsc checks the shape against the SDK's types
// (scripts/typecheck-plugin.sh).

import { deliveryFacts, messagingRoute } from "./delivery.js";
import { internalEventMedia } from "./prompt-context.js";
import { toolRunFacts } from "./turn-facts.js";
import { classifyTerminalOutcome, toTerminal } from "./terminal.js";
import { contextFacts } from "./budget.js";
import { settledTurnFinalizationContext } from "./settled-context.js";

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */
/** @typedef {import("./delivery.js").DeliveryHelpers} DeliveryHelpers */
/** @typedef {import("./delivery.js").HostToolRun} HostToolRun */

/** How much reasoning or plan text the classification keeps (only its emptiness matters). */
const MAX_CLASSIFICATION_TEXT = 4096;

/**
 * What the plugin saw during the attempt, besides the bridge's response.
 *
 * @typedef {{
 *   params: any,
 *   harnessId?: string,
 *   externallyAborted?: boolean,
 *   mirrored?: any[],
 *   lastToolError?: any,
 *   reasoningText?: string,
 *   planText?: string,
 *   compactions?: number,
 *   compactionTokensAfter?: number,
 *   toolArguments?: Map<string, unknown>,
 *   hostToolRuns?: HostToolRun[],
 *   sdk?: DeliveryHelpers & {
 *     classifyAgentHarnessTerminalOutcome?: typeof import("openclaw/plugin-sdk/agent-harness-runtime").classifyAgentHarnessTerminalOutcome,
 *     inferToolMetaFromArgs?: typeof import("openclaw/plugin-sdk/agent-harness-runtime").inferToolMetaFromArgs,
 *   },
 * }} AttemptContext
 */

/**
 * @param {any} response the `attempt/run` result (untrusted wire data)
 * @param {AttemptContext} ctx
 * @returns {AttemptResult}
 */
export function toAttemptResult(response, ctx) {
  const r = response && typeof response === "object" ? response : {};
  const params = ctx.params ?? {};
  const sdk = ctx.sdk ?? {};
  const assistantTexts = Array.isArray(r.assistantTexts) ? r.assistantTexts.filter((/** @type {unknown} */ t) => typeof t === "string") : [];
  const mirrored = Array.isArray(ctx.mirrored) ? ctx.mirrored : [];
  const lastAssistant = [...mirrored].reverse().find((m) => m?.role === "assistant" && m.stopReason !== "toolUse");
  const terminal = toTerminal(r.terminal, { ...ctx, toolRunningAtTimeout: r.toolRunningAtTimeout === true });
  const owned = r.transcriptOwned === true;
  /** @type {AttemptResult} */
  const result = {
    terminal,
    sessionIdUsed: String(params.sessionId ?? ""),
    sessionFileUsed: params.sessionFile,
    messagesSnapshot: [...promptMessages(params), ...mirrored],
    assistantTexts,
    toolMetas: toToolMetas(r.tools, ctx.toolArguments, sdk.inferToolMetaFromArgs, params.toolProgressDetail),
    lastAssistant,
    ...deliveryFacts(ctx.hostToolRuns ?? [], sdk, messagingRoute(params), internalEventMedia(params.internalEvents)),
    ...toolRunFacts(ctx.hostToolRuns ?? [], sdk, params),
    cloudCodeAssistFormatError: false,
    replayMetadata: replayMetadataOf(r.replay, params.initialReplayState),
    itemLifecycle: {
      startedCount: count(r.itemLifecycle?.startedCount),
      completedCount: count(r.itemLifecycle?.completedCount),
      activeCount: count(r.itemLifecycle?.activeCount),
    },
    agentHarnessId: ctx.harnessId,
    assistantTranscriptOwned: owned,
    // Once the model answered (a final message, or a tool request), later failures do not undo it;
    // an older bridge without `modelResponded` only proves it by a completed turn with text.
    hasSuccessfulModelResponse:
      r.modelResponded === true || (terminal.kind === "ok" && assistantTexts.some((/** @type {string} */ t) => t.trim() !== "")),
  };
  if (owned && typeof r.transcriptIdempotencyKey === "string") {
    result.assistantTranscriptIdempotencyKey = r.transcriptIdempotencyKey;
  }
  const lastToolError = r.lastToolError ?? ctx.lastToolError;
  if (lastToolError !== undefined && lastToolError !== null) result.lastToolError = lastToolError;
  const usage = toUsage(r.usage);
  if (usage) result.attemptUsage = usage;
  // The window and the latest prompt size, as the native runtime reported them (budget.js).
  Object.assign(result, contextFacts(r.lastCall, params, String(ctx.harnessId ?? "")));
  const artifact = r.runtimeArtifact;
  if (artifact && typeof artifact.id === "string" && artifact.id && typeof artifact.fingerprint === "string" && artifact.fingerprint) {
    result.runtimeArtifact = { id: artifact.id, fingerprint: artifact.fingerprint };
  }
  // A settled tool turn that failed on its transport may still be finalized (settled-context.js).
  const settledContext = settledTurnFinalizationContext(r.terminal, result);
  if (settledContext) result.settledTurnFinalizationContext = settledContext;
  // The native runtime's own compactions during the turn: core adds them to the session's count.
  if (typeof ctx.compactions === "number" && ctx.compactions > 0) {
    result.compactionCount = ctx.compactions;
    if (typeof ctx.compactionTokensAfter === "number") result.compactionTokensAfter = ctx.compactionTokensAfter;
  }
  const classify = sdk.classifyAgentHarnessTerminalOutcome ?? classifyTerminalOutcome;
  const classification = classify({
    assistantTexts,
    reasoningText: bounded(ctx.reasoningText),
    planText: bounded(ctx.planText),
    turnCompleted: terminal.kind === "ok",
  });
  if (classification) result.agentHarnessResultClassification = classification;
  return result;
}

/**
 * The attempt's replay metadata: this attempt's own facts merged with the replay state of the run's
 * earlier attempts (`initialReplayState`), the way the embedded runner merges it: side effects
 * accumulate and replay safety only narrows, so a retry can never forget that an earlier attempt of
 * the same run may already have run a tool.
 *
 * @param {any} replay the bridge's `replay` (untrusted)
 * @param {any} initial `params.initialReplayState` (`{replayInvalid?, hadPotentialSideEffects?}`)
 * @returns {AttemptResult["replayMetadata"]}
 */
export function replayMetadataOf(replay, initial) {
  const earlier = initial && typeof initial === "object" ? initial : {};
  return {
    hadPotentialSideEffects: replay?.hadPotentialSideEffects === true || earlier.hadPotentialSideEffects === true,
    // Unknown means unsafe: a retry must never repeat a tool that may have run.
    replaySafe: replay?.replaySafe === true && earlier.replayInvalid !== true,
  };
}

/**
 * The user's prompt as the turn's first message, as the embedded runtime's snapshot holds it (the
 * host persisted it before the attempt; the snapshot is the turn as the model saw it).
 *
 * @param {any} params
 * @returns {any[]}
 */
function promptMessages(params) {
  const prompt = typeof params.prompt === "string" ? params.prompt : "";
  const images = Array.isArray(params.images)
    ? params.images.filter((/** @type {any} */ i) => typeof i?.data === "string" && typeof i?.mimeType === "string")
    : [];
  if (!prompt && images.length === 0) return [];
  const content =
    images.length === 0
      ? prompt
      : [
          ...(prompt ? [{ type: "text", text: prompt }] : []),
          ...images.map((/** @type {any} */ i) => ({ type: "image", data: i.data, mimeType: i.mimeType })),
        ];
  return [{ role: "user", content, timestamp: Date.now() }];
}

/**
 * One `toolMetas` entry per finished tool, with the compact display `meta` the embedded runtime
 * shows (the SDK's `inferToolMetaFromArgs` over the arguments the tool started with).
 *
 * @param {unknown} tools
 * @param {Map<string, unknown> | undefined} argumentsById
 * @param {((toolName: string, args: unknown, options?: {detailMode?: "explain" | "raw"}) => string | undefined) | undefined} inferMeta
 * @param {"explain" | "raw" | undefined} detailMode the attempt's `toolProgressDetail`
 * @returns {AttemptResult["toolMetas"]}
 */
function toToolMetas(tools, argumentsById, inferMeta, detailMode) {
  if (!Array.isArray(tools)) return [];
  return tools
    .filter((t) => t && typeof t.toolName === "string")
    .map((t) => {
      const id = typeof t.toolCallId === "string" ? t.toolCallId : undefined;
      let meta;
      if (id && argumentsById?.has(id) && typeof inferMeta === "function") {
        try {
          // The same detail as the live tool events: the embedded runner keeps one meta per call.
          meta = inferMeta(t.toolName, argumentsById.get(id), { detailMode: detailMode ?? "explain" });
        } catch {
          meta = undefined;
        }
      }
      return {
        toolName: t.toolName,
        ...(id ? { toolCallId: id } : {}),
        ...(typeof meta === "string" && meta ? { meta } : {}),
        isError: t.isError === true,
      };
    });
}

/**
 * Codex counts cached input inside input; OpenClaw keeps them apart.
 *
 * @param {any} usage
 * @returns {AttemptResult["attemptUsage"]}
 */
export function toUsage(usage) {
  if (!usage || typeof usage !== "object") return undefined;
  const inputTokens = count(usage.inputTokens);
  const cached = Math.min(count(usage.cachedInputTokens), inputTokens);
  const output = count(usage.outputTokens);
  return { input: inputTokens - cached, output, cacheRead: cached, cacheWrite: 0, total: inputTokens + output };
}

/** @param {string | undefined} text */
function bounded(text) {
  return typeof text === "string" ? text.slice(0, MAX_CLASSIFICATION_TEXT) : undefined;
}

/** @param {unknown} value */
function count(value) {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
