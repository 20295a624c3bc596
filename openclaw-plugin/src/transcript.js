// @ts-check
// `host/transcript/append`: one group of rows the bridge mirrored (what a burst of events made: tool
// calls with their results, assistant messages), stored the way OpenClaw's own harnesses store a
// turn: each row through the before-message-write hook (which may rewrite or block it), then the
// whole group in one atomic append by identity (all rows or none: a crash never leaves a tool call
// without its result), then one transcript update published for the rows that were new. Keys the
// store already holds are matched, not duplicated, so a retried or healing group is harmless.

import { approxBytes } from "./bounds.js";
import { ErrorCodes, RpcReplyError } from "./rpc-client.js";

/**
 * The transcript functions of the SDK this module needs.
 *
 * @typedef {{
 *   appendMessages?: typeof import("openclaw/plugin-sdk/session-transcript-runtime").appendSessionTranscriptMessagesByIdentity,
 *   appendMessage?: typeof import("openclaw/plugin-sdk/session-transcript-runtime").appendSessionTranscriptMessageByIdentity,
 *   publishUpdate?: typeof import("openclaw/plugin-sdk/session-transcript-runtime").publishSessionTranscriptUpdateByIdentity,
 *   beforeMessageWrite?: typeof import("openclaw/plugin-sdk/agent-harness-runtime").runAgentHarnessBeforeMessageWriteHook,
 * }} TranscriptApi
 */

/** The most rows one group may hold (the bridge sends at most 129: 128, plus a call's result). */
const MAX_GROUP_ROWS = 256;

/**
 * Stores one group; answers with one entry per row the bridge sent, in order.
 *
 * @param {{params: any, mirrored: unknown[], logger?: {warn?: (text: string) => void}}} attempt
 * @param {any} params the request's params (`messages`)
 * @param {TranscriptApi} api
 * @returns {Promise<{entries: Array<{idempotencyKey?: string, appended: boolean, messageId?: string}>}>}
 */
export async function appendTranscriptGroup(attempt, params, api) {
  if (typeof api.appendMessages !== "function" && typeof api.appendMessage !== "function") {
    throw new RpcReplyError(ErrorCodes.capabilityUnavailable, "the OpenClaw transcript API is not available");
  }
  const messages = Array.isArray(params?.messages) ? params.messages : [];
  if (messages.length > MAX_GROUP_ROWS) {
    throw new RpcReplyError(ErrorCodes.invalidParams, `a transcript group of ${messages.length} rows (at most ${MAX_GROUP_ROWS})`);
  }
  for (const message of messages) {
    if (!message || typeof message !== "object" || typeof message.role !== "string") {
      throw new RpcReplyError(ErrorCodes.invalidParams, "a transcript message without a role");
    }
  }
  const p = attempt.params;
  // A detached run writes nothing durable for its session (the bridge mirrors nothing for it).
  if (p.sessionPersistence === "detached") {
    throw new RpcReplyError(ErrorCodes.capabilityUnavailable, "a detached run writes no transcript rows");
  }
  const target = targetOf(p);
  // A durable write: a run the host has retired (superseded, closed) must not add rows.
  try {
    if (typeof p.hostCapabilities?.assertActive === "function") p.hostCapabilities.assertActive();
  } catch (error) {
    throw new RpcReplyError(ErrorCodes.capabilityUnavailable, `the OpenClaw run is no longer active: ${error instanceof Error ? error.message : error}`);
  }
  // The hook sees each row as it will be written; a blocked row is left out of the group.
  const hookTarget = {
    agentId: target.agentId,
    sessionKey: target.sessionKey,
    prepareAssistantTranscriptMessage: p.prepareAssistantTranscriptMessage,
    skipBeforeMessageWriteHooks: p.operation === "settled-tool-finalization",
  };
  const written = messages.map((message) => ({ message, hooked: beforeWrite(api, hookTarget, message) }));
  const kept = written.filter((w) => w.hooked !== null);
  let stored = [];
  if (kept.length > 0) {
    if (typeof api.appendMessages === "function") {
      stored = await api.appendMessages({
        ...target,
        messages: kept.map((w) => ({ message: /** @type {any} */ (w.hooked), idempotencyLookup: /** @type {const} */ ("scan") })),
      });
    } else {
      // An older host without the group append: one row at a time, in order.
      for (const w of kept) {
        const appendMessage = /** @type {NonNullable<TranscriptApi["appendMessage"]>} */ (api.appendMessage);
        stored.push(await appendMessage({ ...target, idempotencyLookup: "scan", message: /** @type {any} */ (w.hooked) }));
      }
    }
  }
  const byRow = new Map(kept.map((w, index) => [w, Array.isArray(stored) ? stored[index] : undefined]));
  const entries = written.map((w) => {
    const row = byRow.get(w);
    if (w.hooked !== null) keepMirrored(attempt, row?.message ?? w.hooked);
    return {
      ...(typeof w.message.idempotencyKey === "string" ? { idempotencyKey: w.message.idempotencyKey } : {}),
      appended: w.hooked !== null && row?.appended !== false,
      ...(typeof row?.messageId === "string" ? { messageId: row.messageId } : {}),
    };
  });
  const newRows = kept.filter((w) => byRow.get(w)?.appended === true);
  if (newRows.length > 0 && typeof api.publishUpdate === "function" && typeof api.appendMessages === "function") {
    const last = byRow.get(newRows[newRows.length - 1]);
    try {
      await api.publishUpdate({ ...target, update: typeof last?.messageId === "string" ? { messageId: last.messageId } : {} });
    } catch (error) {
      // The rows are stored; a live view that misses one update catches up on the next.
      attempt.logger?.warn?.(`clawbridge: the transcript update could not be published: ${error instanceof Error ? error.message : error}`);
    }
  }
  return { entries };
}

/**
 * The attempt's transcript target, as OpenClaw prepared it.
 *
 * @param {any} p the attempt params
 */
export function targetOf(p) {
  const target = p.sessionTarget ?? {};
  return {
    agentId: target.agentId ?? p.agentId,
    sessionId: p.sessionId,
    sessionKey: target.sessionKey ?? p.sessionKey,
    storePath: target.storePath,
    config: p.config,
    cwd: p.cwd ?? p.workspaceDir,
  };
}

/**
 * The row after the before-message-write hook: rewritten, unchanged, or `null` when blocked. The
 * idempotency key stays the bridge's, so a rewrite never turns a retried row into a new one.
 *
 * @param {TranscriptApi} api
 * @param {{agentId?: string, sessionKey?: string, prepareAssistantTranscriptMessage?: any, skipBeforeMessageWriteHooks?: boolean}} target
 * @param {any} message
 */
function beforeWrite(api, target, message) {
  if (typeof api.beforeMessageWrite !== "function") return message;
  const hooked = api.beforeMessageWrite({
    message,
    agentId: target.agentId,
    sessionKey: target.sessionKey,
    // The reply dispatcher's last word on a visible assistant row (e.g. its delivered form), and
    // the skip the embedded runner applies to a settled-tool finalization, as the built-in passes them.
    ...(typeof target.prepareAssistantTranscriptMessage === "function"
      ? { prepareAssistantTranscriptMessage: target.prepareAssistantTranscriptMessage }
      : {}),
    ...(target.skipBeforeMessageWriteHooks ? { skipBeforeMessageWriteHooks: true } : {}),
  });
  if (hooked === null || hooked === undefined) return null;
  return typeof message.idempotencyKey === "string" ? { ...hooked, idempotencyKey: message.idempotencyKey } : hooked;
}

/**
 * The synthetic failed results for the tool calls this attempt mirrored that never got one: when
 * the bridge dies mid-turn it cannot close its own rows, so the plugin (still alive) does, with the
 * very keys the bridge would have used (`…:tool:<callId>:call` → `…:result`); a result the bridge
 * did store is matched by its key, never duplicated.
 *
 * @param {unknown[]} mirrored the rows stored for this attempt, in order
 * @param {string} why what ended the turn, for the model and the reader
 * @returns {any[]}
 */
export function orphanedCallResults(mirrored, why) {
  /** @type {Map<string, {toolName: string, key: string | undefined}>} */
  const open = new Map();
  for (const row of mirrored) {
    const message = /** @type {any} */ (row);
    if (message?.role === "assistant" && Array.isArray(message.content)) {
      for (const block of message.content) {
        if (block?.type !== "toolCall" || typeof block.id !== "string") continue;
        const key = typeof message.idempotencyKey === "string" && message.idempotencyKey.endsWith(":call")
          ? `${message.idempotencyKey.slice(0, -":call".length)}:result`
          : undefined;
        open.set(block.id, { toolName: typeof block.name === "string" ? block.name : "tool", key });
      }
    } else if (message?.role === "toolResult" && typeof message.toolCallId === "string") {
      open.delete(message.toolCallId);
    }
  }
  return [...open].map(([toolCallId, call]) => ({
    role: "toolResult",
    toolCallId,
    toolName: call.toolName,
    content: [{ type: "text", text: `No result was received for this tool call: ${why}.` }],
    details: { synthetic: true },
    isError: true,
    timestamp: Date.now(),
    ...(call.key ? { idempotencyKey: call.key } : {}),
  }));
}

/**
 * The SDK's transcript functions a runtime was given (`createRuntime` options).
 *
 * @param {{appendTranscriptMessage?: any, sdk?: any}} options
 * @returns {TranscriptApi}
 */
export function transcriptApiOf(options) {
  return {
    appendMessage: options.appendTranscriptMessage,
    appendMessages: options.sdk?.appendSessionTranscriptMessagesByIdentity,
    publishUpdate: options.sdk?.publishSessionTranscriptUpdateByIdentity,
    beforeMessageWrite: options.sdk?.runAgentHarnessBeforeMessageWriteHook,
  };
}

/**
 * Closes the tool calls an attempt mirrored without a result (the bridge died before it could):
 * each gets its synthetic failed result, so the transcript never holds an orphan call. Never throws.
 *
 * @param {{attemptId?: string, params: any, mirrored: unknown[], logger?: {warn?: (text: string) => void}}} attempt
 * @param {TranscriptApi} api
 * @param {string} why
 */
export async function closeOrphanedCalls(attempt, api, why) {
  for (const result of orphanedCallResults(attempt.mirrored, why)) {
    try {
      await appendTranscriptGroup(attempt, { messages: [result] }, api);
    } catch (error) {
      attempt.logger?.warn?.(
        `clawbridge: attempt ${attempt.attemptId}: could not close tool call ${result.toolCallId}: ${error instanceof Error ? error.message : error}`,
      );
    }
  }
}

/**
 * Bytes of the rows an attempt keeps of what it stored (the result's `messagesSnapshot` and its
 * last assistant text come from them); past it the oldest rows go first (the newest, which
 * carries the answer, always stays), counted in `attempt.mirroredDropped`.
 */
export const MIRRORED_BYTES = 8 * 1024 * 1024;

/**
 * @param {{mirrored: unknown[], mirroredBytes?: number[], mirroredDropped?: number}} attempt
 * @param {unknown} row
 * @param {number} [budget] tests only
 */
export function keepMirrored(attempt, row, budget = MIRRORED_BYTES) {
  attempt.mirroredBytes ??= [];
  attempt.mirroredDropped ??= 0;
  attempt.mirrored.push(row);
  attempt.mirroredBytes.push(approxBytes(row, budget + 1));
  let total = attempt.mirroredBytes.reduce((sum, bytes) => sum + bytes, 0);
  while (total > budget && attempt.mirrored.length > 1) {
    attempt.mirrored.shift();
    total -= attempt.mirroredBytes.shift() ?? 0;
    attempt.mirroredDropped += 1;
  }
}
