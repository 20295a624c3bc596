// Maps the bridge's `attempt/run` result (docs/host-protocol.md) onto OpenClaw's
// `AgentHarnessAttemptResult`. Every required field is always present, whatever the bridge sent, so
// a result from a newer or odd bridge still satisfies the host.

/**
 * @param {object} response the `attempt/run` result
 * @param {object} ctx what the plugin saw during the attempt:
 *   `params` (the attempt params), `harnessId`, `externallyAborted` (the host's abortSignal fired),
 *   `mirrored` (the messages stored through `host/transcript/append`, in order),
 *   `lastToolError` (from `observeToolTerminal`, used if the bridge did not carry one)
 */
export function toAttemptResult(response, ctx) {
  const r = response && typeof response === "object" ? response : {};
  const params = ctx.params ?? {};
  const assistantTexts = Array.isArray(r.assistantTexts) ? r.assistantTexts.filter((t) => typeof t === "string") : [];
  const mirrored = Array.isArray(ctx.mirrored) ? ctx.mirrored : [];
  const lastAssistant = [...mirrored].reverse().find((m) => m?.role === "assistant" && m.stopReason !== "toolUse");
  const terminal = toTerminal(r.terminal, ctx);
  const owned = r.transcriptOwned === true;
  const result = {
    terminal,
    sessionIdUsed: params.sessionId,
    sessionFileUsed: params.sessionFile,
    messagesSnapshot: mirrored,
    assistantTexts,
    toolMetas: toToolMetas(r.tools),
    lastAssistant,
    didSendViaMessagingTool: false,
    messagingToolSentTexts: [],
    messagingToolSentMediaUrls: [],
    messagingToolSentTargets: [],
    cloudCodeAssistFormatError: false,
    replayMetadata: {
      hadPotentialSideEffects: r.replay?.hadPotentialSideEffects === true,
      // Unknown means unsafe: a retry must never repeat a tool that may have run.
      replaySafe: r.replay?.replaySafe === true,
    },
    itemLifecycle: {
      startedCount: count(r.itemLifecycle?.startedCount),
      completedCount: count(r.itemLifecycle?.completedCount),
      activeCount: count(r.itemLifecycle?.activeCount),
    },
    agentHarnessId: ctx.harnessId,
    assistantTranscriptOwned: owned,
    hasSuccessfulModelResponse: terminal.kind === "ok" && assistantTexts.some((t) => t.trim() !== ""),
  };
  if (owned && typeof r.transcriptIdempotencyKey === "string") {
    result.assistantTranscriptIdempotencyKey = r.transcriptIdempotencyKey;
  }
  const lastToolError = r.lastToolError ?? ctx.lastToolError;
  if (lastToolError !== undefined && lastToolError !== null) result.lastToolError = lastToolError;
  const usage = toUsage(r.usage);
  if (usage) result.attemptUsage = usage;
  if (["empty", "reasoning-only", "planning-only"].includes(r.classification)) {
    result.agentHarnessResultClassification = r.classification;
  }
  if (typeof r.nativeSessionId === "string") result.nativeSessionId = r.nativeSessionId;
  return result;
}

/** The bridge's `{kind, message}` as OpenClaw's `terminal` union. */
export function toTerminal(terminal, ctx = {}) {
  const message = typeof terminal?.message === "string" && terminal.message ? terminal.message : undefined;
  switch (terminal?.kind) {
    case "ok":
      return { kind: "ok" };
    case "aborted":
      return {
        kind: "aborted",
        source: ctx.externallyAborted ? "external" : "runtime",
        ...(message ? { failure: message } : {}),
      };
    case "timeout":
      return {
        kind: "timeout",
        phase: "prompt",
        source: ctx.externallyAborted ? "external" : "run_budget",
        aborted: true,
        ...(message ? { failure: message } : {}),
      };
    case "failed":
      return { kind: "failed", source: "prompt", error: message ?? "the native turn failed" };
    default:
      return {
        kind: "failed",
        source: "prompt",
        error: `clawbridge reported an unknown terminal kind ${JSON.stringify(terminal?.kind)}${message ? `: ${message}` : ""}`,
      };
  }
}

function toToolMetas(tools) {
  if (!Array.isArray(tools)) return [];
  return tools
    .filter((t) => t && typeof t.toolName === "string")
    .map((t) => ({
      toolName: t.toolName,
      ...(typeof t.toolCallId === "string" ? { toolCallId: t.toolCallId } : {}),
      isError: t.isError === true,
    }));
}

/** Codex counts cached input inside input; OpenClaw keeps them apart. */
function toUsage(usage) {
  if (!usage || typeof usage !== "object") return undefined;
  const inputTokens = count(usage.inputTokens);
  const cached = Math.min(count(usage.cachedInputTokens), inputTokens);
  const output = count(usage.outputTokens);
  return { input: inputTokens - cached, output, cacheRead: cached, cacheWrite: 0, total: inputTokens + output };
}

function count(value) {
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
