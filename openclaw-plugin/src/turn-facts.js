// @ts-check
// The result facts OpenClaw's embedded runtime reads off each OpenClaw tool's original result when
// the tool ends — accepted child-session spawns, scheduler adds, the heartbeat tool's response, the
// message tool's source-reply delivery — derived here the same way over the attempt's host tool runs
// (the OpenClaw tools the native agent called through `host/tool/execute`). Native tools (a shell,
// an editor) are no OpenClaw tools, so they yield none of these. Every SDK helper is optional; a
// missing one leaves its fact empty rather than guessed. docs/peers/openclaw.md ("Result facts from
// host tools") names each rule.

import { deliveredByRun, messagingRoute } from "./delivery.js";

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */
/** @typedef {import("./delivery.js").HostToolRun} HostToolRun */

/**
 * The SDK helpers these facts come from (`openclaw/plugin-sdk/agent-harness-runtime`).
 *
 * @typedef {import("./delivery.js").DeliveryHelpers & {
 *   normalizeHeartbeatToolResponse?: (value: unknown) => any,
 *   HEARTBEAT_RESPONSE_TOOL_NAME?: string,
 *   extractMessagingToolSourceReplyPayload?: (result: unknown) => any,
 *   isDeliveredMessageToolOnlySourceReplyResult?: (params: any) => boolean,
 *   isDeliveredMessagingToolSendToCurrentSource?: (params: any) => boolean,
 * }} TurnFactHelpers
 */

/**
 * The scheduler tool's names: `automations` and its permanent alias `cron` (OpenClaw's own rule;
 * the SDK exports no predicate for it).
 */
const AUTOMATIONS_TOOL_NAMES = new Set(["automations", "cron"]);
/** The heartbeat tool's name when the SDK does not export its constant. */
const DEFAULT_HEARTBEAT_TOOL = "heartbeat_respond";

/**
 * @param {HostToolRun[]} runs in the order they ran
 * @param {TurnFactHelpers} helpers
 * @param {any} params the attempt params (the messaging route and delivery mode)
 * @returns {Pick<AttemptResult, "sourceReplyDeliveryState" | "successfulCronAdds"> & Partial<Pick<AttemptResult, "acceptedSessionSpawns" | "heartbeatToolResponse" | "messagingToolSourceReplyPayloads" | "didDeliverSourceReplyViaMessageTool">>}
 */
export function toolRunFacts(runs, helpers, params) {
  /** @type {NonNullable<AttemptResult["acceptedSessionSpawns"]>} */
  const spawns = [];
  /** @type {any[]} */
  const sourceReplyPayloads = [];
  let cronAdds = 0;
  let heartbeat;
  let sourceReplyViaMessageTool = false;
  /** @type {"missing" | "delivered"} */
  let sourceReplyState = "missing";
  const heartbeatTool = typeof helpers.HEARTBEAT_RESPONSE_TOOL_NAME === "string" ? helpers.HEARTBEAT_RESPONSE_TOOL_NAME : DEFAULT_HEARTBEAT_TOOL;
  const p = params ?? {};
  for (const run of runs) {
    if (!run.isError) {
      if (run.toolName === "sessions_spawn") {
        const spawn = acceptedSpawn(run.result);
        if (spawn) spawns.push(spawn);
      }
      if (AUTOMATIONS_TOOL_NAMES.has(run.toolName) && String(run.args?.action ?? "").trim().toLowerCase() === "add") cronAdds += 1;
      if (run.toolName === heartbeatTool) {
        const response = safe(() => helpers.normalizeHeartbeatToolResponse?.(details(run.result)), undefined);
        // The last response of the turn is the one that counts, as in the embedded runtime.
        if (response) heartbeat = response;
      }
    }
    const delivery = deliveredByRun(run, helpers, messagingRoute(p));
    if (!delivery.messaging) continue;
    const sourceReplyFinal = run.args?.final !== false;
    const deliveredToSource =
      delivery.delivered &&
      safe(
        () =>
          helpers.isDeliveredMessageToolOnlySourceReplyResult?.({
            sourceReplyDeliveryMode: p.sourceReplyDeliveryMode,
            toolName: run.toolName,
            args: run.args,
            result: run.result,
            isError: run.isError,
            allowExplicitSourceRoute:
              safe(
                () =>
                  helpers.isDeliveredMessagingToolSendToCurrentSource?.({
                    send: delivery.confirmedTarget,
                    config: p.config,
                    currentProvider: p.messageChannel,
                    currentAccountId: p.currentAccountId,
                    currentChannelId: p.currentChannelId,
                    currentMessagingTarget: p.currentMessagingTarget,
                    currentThreadId: p.currentThreadId,
                    sessionKey: p.sessionKey,
                    deliveredPayload: run.result,
                  }),
                false,
              ) === true,
            deliveryConfirmed: delivery.delivered,
          }),
        false,
      ) === true;
    if (sourceReplyFinal && (delivery.fact?.sourceReplyDelivered === true || deliveredToSource)) sourceReplyState = "delivered";
    if (deliveredToSource) sourceReplyViaMessageTool = true;
    if (delivery.delivered && delivery.send) {
      const payload = safe(() => helpers.extractMessagingToolSourceReplyPayload?.(run.result), undefined);
      if (payload && typeof payload === "object") sourceReplyPayloads.push({ ...payload, sourceReplyFinal });
    }
  }
  return {
    sourceReplyDeliveryState: sourceReplyState,
    successfulCronAdds: cronAdds,
    ...(spawns.length > 0 ? { acceptedSessionSpawns: spawns } : {}),
    ...(heartbeat ? { heartbeatToolResponse: heartbeat } : {}),
    ...(sourceReplyPayloads.length > 0 ? { messagingToolSourceReplyPayloads: sourceReplyPayloads } : {}),
    ...(sourceReplyViaMessageTool ? { didDeliverSourceReplyViaMessageTool: true } : {}),
  };
}

/**
 * A `sessions_spawn` result that accepted a child session: `details.status === "accepted"` with
 * the child's run id and session key (OpenClaw's rule; the SDK does not export its normalizer).
 *
 * @param {unknown} result
 */
function acceptedSpawn(result) {
  const d = details(result);
  if (!d || d.status !== "accepted") return null;
  const runId = typeof d.runId === "string" ? d.runId.trim() : "";
  const childSessionKey = typeof d.childSessionKey === "string" ? d.childSessionKey.trim() : "";
  if (!runId || !childSessionKey) return null;
  return { runId, childSessionKey, expectsCompletionMessage: d.expectsCompletionMessage === true };
}

/** @param {unknown} result */
function details(result) {
  const value = result && typeof result === "object" ? /** @type {{details?: any}} */ (result).details : undefined;
  return value && typeof value === "object" ? value : undefined;
}

/**
 * @template T
 * @param {() => T} run
 * @param {T} fallback
 * @returns {T}
 */
function safe(run, fallback) {
  try {
    const value = run();
    return value === undefined ? fallback : value;
  } catch {
    return fallback;
  }
}

/**
 * The result of an attempt whose agent yielded (`sessions_yield` called the tool surface's `onYield`):
 * `yieldDetected`, the acknowledgment it gave, and an interrupted turn's terminal as the embedded
 * runner reports a yield's abort (`aborted`, `source: "yield_cleanup"`). A turn that completed
 * before the interrupt landed keeps its terminal.
 *
 * @param {AttemptResult} result
 * @param {{message?: unknown, acknowledgment?: unknown} | undefined} yielded
 */
export function applyYield(result, yielded) {
  if (!yielded) return;
  result.yieldDetected = true;
  if (typeof yielded.acknowledgment === "string" && yielded.acknowledgment.trim()) result.yieldAcknowledgment = yielded.acknowledgment;
  if (result.terminal.kind === "aborted") result.terminal = { kind: "aborted", source: "yield_cleanup" };
}
