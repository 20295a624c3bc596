// @ts-check
// `before_agent_finalize`: when a native turn completed with a visible answer, the plugins'
// before-agent-finalize hooks see it before OpenClaw accepts it, as with the embedded runner. A
// hook that asks for a revision does not get the answer delivered: the result carries
// `beforeAgentFinalizeRevisionReason`, and OpenClaw's run loop (the same one that runs the
// embedded runner's attempts) runs one more attempt with its revision prompt and
// `beforeAgentFinalizeRevisionAttempts` counted up, up to `maxBeforeAgentFinalizeRevisions`.
// For clawbridge that next attempt is a follow-up turn on the same native session (the bridge
// resumes the session's bound thread), so the agent revises with its whole turn in context.
// docs/peers/openclaw.md ("before_agent_finalize") says which conditions are the embedded runner's
// and what differs.

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */

/**
 * @typedef {{
 *   runAgentHarnessBeforeAgentFinalizeHook?: typeof import("openclaw/plugin-sdk/agent-harness-runtime").runAgentHarnessBeforeAgentFinalizeHook,
 *   buildAgentHookContextChannelFields?: (params: any) => Record<string, unknown>,
 * }} FinalizeSdk
 */

/**
 * Runs the hook for a finished attempt and sets `result.beforeAgentFinalizeRevisionReason` when a
 * plugin asks for a revision that may be honoured. Never throws: a failing hook finalizes.
 *
 * @param {FinalizeSdk} sdk
 * @param {any} params the attempt params
 * @param {AttemptResult} result the attempt's result, as built so far
 * @param {{warn?: (text: string) => void}} [logger]
 * @returns {Promise<void>}
 */
export async function beforeAgentFinalize(sdk, params, result, logger) {
  const run = sdk?.runAgentHarnessBeforeAgentFinalizeHook;
  if (typeof run !== "function") return;
  // Settled-tool finalization never revises; only a completed turn with an answer is finalized.
  if (params.operation === "settled-tool-finalization" || result.terminal.kind !== "ok") return;
  const lastAssistantMessage = finalText(result);
  if (!lastAssistantMessage) return;
  if (params.silentExpected === true && lastAssistantMessage.trim() === "NO_REPLY") return;
  if (result.yieldDetected === true || (result.clientToolCalls?.length ?? 0) > 0) return;
  const max = Number.isFinite(params.maxBeforeAgentFinalizeRevisions) ? params.maxBeforeAgentFinalizeRevisions : 0;
  const spent = Number.isFinite(params.beforeAgentFinalizeRevisionAttempts) ? params.beforeAgentFinalizeRevisionAttempts : 0;
  if (max > 0 && spent >= max) {
    logger?.warn?.(`clawbridge: before_agent_finalize revision limit reached (${spent}/${max}); finalizing run ${params.runId}`);
    return;
  }
  const sessionKey = params.sessionTarget?.sessionKey ?? params.sessionKey;
  let outcome;
  try {
    outcome = await run({
      event: {
        runId: params.runId,
        sessionId: params.sessionId,
        ...(sessionKey ? { sessionKey } : {}),
        provider: params.provider,
        model: params.modelId,
        ...((params.cwd ?? params.workspaceDir) ? { cwd: params.cwd ?? params.workspaceDir } : {}),
        ...(params.sessionFile ? { transcriptPath: params.sessionFile } : {}),
        stopHookActive: false,
        lastAssistantMessage,
        messages: result.messagesSnapshot,
      },
      ctx: {
        runId: params.runId,
        agentId: params.sessionTarget?.agentId ?? params.agentId,
        sessionKey,
        sessionId: params.sessionId,
        workspaceDir: params.workspaceDir,
        modelProviderId: params.provider,
        modelId: params.modelId,
        ...(typeof params.trigger === "string" ? { trigger: params.trigger } : {}),
        ...channelFields(sdk, params),
        config: params.config,
      },
    });
  } catch (error) {
    logger?.warn?.(`clawbridge: before_agent_finalize failed; finalizing: ${error instanceof Error ? error.message : error}`);
    return;
  }
  if (outcome?.action !== "revise" || typeof outcome.reason !== "string" || !outcome.reason.trim()) return;
  // A revision must not repeat what already reached the world, as in the embedded runner.
  if (hadSideEffects(result)) {
    logger?.warn?.(`clawbridge: before_agent_finalize asked for a revision after potential side effects; finalizing run ${params.runId}`);
    return;
  }
  // The rejected answer must be a stored row the revision follows (the embedded runner's rule).
  if (result.assistantTranscriptOwned !== true) {
    logger?.warn?.(`clawbridge: before_agent_finalize revision without a stored assistant row; finalizing run ${params.runId}`);
    return;
  }
  result.beforeAgentFinalizeRevisionReason = outcome.reason;
}

/**
 * The answer the hook judges: the last assistant row's visible text, else the turn's texts.
 *
 * @param {AttemptResult} result
 */
function finalText(result) {
  const last = /** @type {any} */ (result.lastAssistant);
  const blocks = Array.isArray(last?.content) ? last.content : [];
  const text = blocks
    .filter((/** @type {any} */ b) => b?.type === "text" && typeof b.text === "string")
    .map((/** @type {any} */ b) => b.text)
    .join("")
    .trim();
  if (text) return text;
  return result.assistantTexts.join("\n\n").trim();
}

/**
 * Side effects that make a revision unsafe: the replay state (this and earlier attempts of the run),
 * a message the messaging tool delivered, an accepted child session, a scheduler add.
 *
 * @param {AttemptResult} result
 */
function hadSideEffects(result) {
  return (
    result.replayMetadata.hadPotentialSideEffects === true ||
    result.didSendViaMessagingTool === true ||
    (result.acceptedSessionSpawns?.length ?? 0) > 0 ||
    (result.successfulCronAdds ?? 0) > 0
  );
}

/**
 * @param {FinalizeSdk} sdk
 * @param {any} params
 */
function channelFields(sdk, params) {
  if (typeof sdk.buildAgentHookContextChannelFields !== "function") return {};
  try {
    return sdk.buildAgentHookContextChannelFields(params) ?? {};
  } catch {
    return {};
  }
}
