// @ts-check
// What an attempt owes the host besides its result: the host capability checked before anything
// runs (its version, and `assertActive` before each effect the docs name), live output tokens
// reported once per model response, and the agent-end side effects after every attempt.

import { preflightRefusal } from "./preflight.js";

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessAttemptParamsV2} AttemptParams */
/** @typedef {AttemptParams["hostCapabilities"]} HostCapabilities */

/** The host capability versions this plugin implements (`hostCapabilities.version`). */
export const SUPPORTED_HOST_CAPABILITY_VERSIONS = Object.freeze([1]);

/**
 * Why an attempt cannot run on this host's capability: `undefined` when it can. A host without a
 * capability object (the deprecated V1 params) runs without its surfaces, as before.
 *
 * @param {HostCapabilities | undefined} host
 * @returns {string | undefined}
 */
export function hostCapabilityProblem(host) {
  if (host === undefined || host === null) return undefined;
  if (host.kind !== "agent-harness-host-capability") {
    return `the host capability has kind ${JSON.stringify(host.kind)}, not "agent-harness-host-capability"`;
  }
  if (!SUPPORTED_HOST_CAPABILITY_VERSIONS.includes(host.version)) {
    return `the host capability is version ${JSON.stringify(host.version)}; clawbridge supports version ${SUPPORTED_HOST_CAPABILITY_VERSIONS.join(", ")}`;
  }
  return undefined;
}

/**
 * Throws the host's own error when the admitted run is no longer active (superseded, closed):
 * called before the attempt starts and before each side effect a retired run must not have.
 *
 * @param {HostCapabilities | undefined} host
 */
export function assertActive(host) {
  if (typeof host?.assertActive === "function") host.assertActive();
}

/**
 * Reports output tokens to the host once per model response. The bridge's `usage` events carry the
 * turn's running total, so each report is the growth since the last one (a repeated total reports
 * nothing).
 */
export class OutputTokenReporter {
  /** @param {HostCapabilities | undefined} host */
  constructor(host) {
    this.host = host;
    this.reported = 0;
  }

  /**
   * @param {unknown} usage a bridge `usage` event
   * @param {(error: unknown) => void} [onError]
   */
  observe(usage, onError) {
    const total = /** @type {{outputTokens?: unknown}} */ (usage)?.outputTokens;
    if (typeof total !== "number" || !Number.isFinite(total) || total <= this.reported) return;
    const delta = Math.floor(total - this.reported);
    this.reported = total;
    if (delta <= 0 || typeof this.host?.reportOutputTokens !== "function") return;
    try {
      this.host.reportOutputTokens(delta);
    } catch (error) {
      // A closed or superseded capability rejects the report; the attempt goes on.
      onError?.(error);
    }
  }
}

/**
 * Starts OpenClaw's agent-end side effects (the `agent_end` hook and research capture) for one
 * finished attempt, success or not; never throws and never delays the result.
 *
 * @param {{runAgentEndSideEffects?: Function, buildEmbeddedForegroundPromptContext?: Function}} sdk
 * @param {any} params the attempt params
 * @param {{messages: unknown[], success: boolean, error?: string, durationMs: number, harnessId: string}} outcome
 * @param {{warn?: (text: string) => void}} [logger]
 */
export function runAgentEnd(sdk, params, outcome, logger) {
  if (typeof sdk.runAgentEndSideEffects !== "function") return;
  // The embedded runtime skips agent_end for a detached run and for settled-turn finalization.
  if (params.sessionPersistence === "detached" || params.operation === "settled-tool-finalization") return;
  try {
    const ctx = {
      ...(typeof params.runId === "string" ? { runId: params.runId } : {}),
      agentId: params.sessionTarget?.agentId ?? params.agentId,
      sessionKey: params.sessionTarget?.sessionKey ?? params.sessionKey,
      sessionId: params.sessionId,
      workspaceDir: params.workspaceDir,
      modelProviderId: params.provider,
      modelId: params.modelId,
      ...(typeof params.messageProvider === "string" ? { messageProvider: params.messageProvider } : {}),
      ...(typeof params.trigger === "string" ? { trigger: params.trigger } : {}),
      config: params.config,
      ...foregroundContext(sdk, params, logger),
    };
    sdk.runAgentEndSideEffects({
      event: {
        ...(typeof params.runId === "string" ? { runId: params.runId } : {}),
        messages: outcome.messages,
        success: outcome.success,
        ...(outcome.error ? { error: outcome.error } : {}),
        durationMs: outcome.durationMs,
      },
      ctx,
    });
  } catch (error) {
    logger?.warn?.(`clawbridge: agent-end side effects failed to start: ${describe(error)}`);
  }
}

/**
 * The foreground prompt context the Skill Workshop review rebuilds its prompt from; left out when
 * the host cannot build it for these params (the review is then skipped, as for CLI hooks).
 *
 * @param {{buildEmbeddedForegroundPromptContext?: Function}} sdk
 * @param {any} params
 * @param {{warn?: (text: string) => void}} [logger]
 */
function foregroundContext(sdk, params, logger) {
  if (typeof sdk.buildEmbeddedForegroundPromptContext !== "function" || typeof params.agentDir !== "string") return {};
  try {
    const agentId = params.sessionTarget?.agentId ?? params.agentId;
    const context = sdk.buildEmbeddedForegroundPromptContext({ ...params, agentId }, params.agentDir);
    return context ? { foregroundPromptContext: context } : {};
  } catch (error) {
    logger?.warn?.(`clawbridge: no foreground prompt context for agent_end: ${describe(error)}`);
    return {};
  }
}

/** @param {unknown} error */
function describe(error) {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Runs one attempt (`run`) with what the host is owed around it: the capability checked and
 * `assertActive` honoured before anything starts (an unsupported version is a preflight refusal),
 * and the agent-end side effects after every attempt that ran, success or not, as the embedded
 * runtime runs them (none for a refusal, which ran nothing).
 *
 * @template T
 * @param {{options: {sdk?: any, PreflightError?: any}, logger?: any}} runtime
 * @param {string} harnessId
 * @param {any} params the attempt params
 * @param {(runtime: any, harnessId: string, params: any) => Promise<T>} run
 * @returns {Promise<T>}
 */
export async function runWithHostEffects(runtime, harnessId, params, run) {
  const problem = hostCapabilityProblem(params.hostCapabilities);
  if (problem) {
    throw preflightRefusal(runtime.options.PreflightError, harnessId, problem, `This OpenClaw is not supported by clawbridge: ${problem}.`);
  }
  // A run the host already retired must not start native work.
  assertActive(params.hostCapabilities);
  const startedAt = Date.now();
  /** @type {{result?: any, error?: unknown}} */
  const ended = {};
  try {
    ended.result = await run(runtime, harnessId, params);
    return ended.result;
  } catch (error) {
    ended.error = error;
    throw error;
  } finally {
    const PreflightError = runtime.options.PreflightError;
    const refused = typeof PreflightError === "function" && ended.error instanceof PreflightError;
    // A turn sent back for revision is not the run's end: the revised attempt's is (as embedded).
    const revising = typeof ended.result?.beforeAgentFinalizeRevisionReason === "string";
    if (!refused && !revising) runAgentEnd(runtime.options.sdk ?? {}, params, agentEndOutcome(ended, Date.now() - startedAt, harnessId), runtime.logger);
  }
}


/**
 * The agent_end outcome of an attempt: `success` only when it completed; `error` (as the embedded
 * runtime reports it) only for a failure, not for an abort or a timeout.
 *
 * @param {{result?: any, error?: unknown}} ended
 * @param {number} durationMs
 * @param {string} harnessId
 */
function agentEndOutcome(ended, durationMs, harnessId) {
  const terminal = ended.result?.terminal;
  let error;
  if (ended.error !== undefined) error = describe(ended.error);
  else if (terminal?.kind === "failed") error = describe(terminal.error);
  return {
    messages: ended.result?.messagesSnapshot ?? [],
    success: terminal?.kind === "ok",
    ...(error ? { error } : {}),
    durationMs,
    harnessId,
  };
}
