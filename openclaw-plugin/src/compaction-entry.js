// @ts-check
// The transcript entry for a native compaction: core writes none for a harness's compaction (its
// `compact()` result is only counted on the session entry), so the harness records it the way
// OpenClaw's own Codex harness does: one `custom` message of type `openclaw.context-compaction`,
// shown to the user and kept out of the model's context, keyed by the native compaction's id so a
// repeated record (a retried request, a replayed event) finds the entry instead of adding another.
// Both `/compact` (compact()) and the native runtime's own compaction during an attempt (the
// `contextCompacted` event) record one (docs/peers/openclaw.md#compaction-in-the-transcript).

import { targetOf } from "./transcript.js";

/** The custom message type OpenClaw's transcript gives a native context compaction. */
export const CONTEXT_COMPACTION_CUSTOM_TYPE = "openclaw.context-compaction";

/**
 * The entry's idempotency key: the harness, the OpenClaw session and the compaction's native id.
 *
 * @param {{harnessId: string, sessionId: string, itemId?: string}} compaction
 */
export function compactionEntryKey(compaction) {
  return `clawbridge-context-compaction:${compaction.harnessId}:${compaction.sessionId}:${compaction.itemId}`;
}

/**
 * The transcript message for one native compaction.
 *
 * @param {{harnessId: string, sessionId: string, nativeSessionId?: string, itemId: string, trigger: string,
 *   tokensBefore?: number, tokensAfter?: number, runId?: string}} compaction
 * @param {number} timestamp
 */
export function compactionMessage(compaction, timestamp) {
  const key = compactionEntryKey(compaction);
  return {
    role: "custom",
    customType: CONTEXT_COMPACTION_CUSTOM_TYPE,
    content: "Context compacted",
    display: true,
    excludeFromContext: true,
    details: {
      kind: "context_compaction",
      backend: compaction.harnessId,
      trigger: compaction.trigger,
      itemId: compaction.itemId,
      ...(compaction.nativeSessionId ? { nativeSessionId: compaction.nativeSessionId } : {}),
      ...(typeof compaction.tokensBefore === "number" ? { tokensBefore: compaction.tokensBefore } : {}),
      ...(typeof compaction.tokensAfter === "number" ? { tokensAfter: compaction.tokensAfter } : {}),
      ...(compaction.runId ? { runId: compaction.runId } : {}),
    },
    __openclaw: { itemId: compaction.itemId, ...(compaction.runId ? { runId: compaction.runId } : {}) },
    timestamp,
    idempotencyKey: key,
  };
}

/**
 * Whether `message` is a compaction entry (it is no conversation: it moves no native position and
 * is no history to project).
 *
 * @param {any} message
 */
export function isCompactionEntry(message) {
  return message?.role === "custom" && message?.customType === CONTEXT_COMPACTION_CUSTOM_TYPE;
}

/**
 * Appends the entry for `compaction` to the session `params` names (once: a second record of the
 * same compaction finds the first), then publishes the update. Never throws: a transcript that
 * cannot be written is logged, the compaction stands.
 *
 * @param {{appendTranscriptMessage?: Function, sdk?: any}} options the runtime's options (the SDK's transcript functions)
 * @param {any} params the attempt's or compact()'s params (the session target)
 * @param {{harnessId: string, nativeSessionId?: string, itemId?: string, trigger: string,
 *   tokensBefore?: number, tokensAfter?: number, runId?: string}} compaction
 * @param {{warn?: (text: string) => void, debug?: (text: string) => void}} [logger]
 * @returns {Promise<boolean>} whether a new entry was written
 */
export async function recordCompaction(options, params, compaction, logger) {
  const append = options?.appendTranscriptMessage;
  if (typeof append !== "function" || params?.sessionPersistence === "detached") return false;
  if (!params?.sessionId || !compaction.itemId) {
    logger?.debug?.("clawbridge: a native compaction without a session or a native id gets no transcript entry");
    return false;
  }
  const target = targetOf(params);
  const message = compactionMessage({ ...compaction, sessionId: params.sessionId, itemId: compaction.itemId }, Date.now());
  try {
    const appended = await append({
      ...target,
      eventId: message.idempotencyKey,
      idempotencyLookup: "scan",
      message,
    });
    if (!appended?.appended) return false;
    const publish = options.sdk?.publishSessionTranscriptUpdateByIdentity;
    if (typeof publish === "function") {
      await publish({
        ...target,
        update: {
          message: appended.message,
          messageId: appended.messageId,
          ...(compaction.runId ? { runId: compaction.runId } : {}),
        },
      });
    }
    return true;
  } catch (error) {
    logger?.warn?.(`clawbridge: the native compaction's transcript entry could not be written: ${error instanceof Error ? error.message : error}`);
    return false;
  }
}
