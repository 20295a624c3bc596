// @ts-check
// The bridge's turn terminal as OpenClaw's `AgentRunAttemptTerminal` union, and the fallback
// classification of a silent turn. Which branch of the union applies is decided by the bridge's
// `terminal.cause` (docs/host-protocol.md, the cause table) and whether the host's own abortSignal
// fired; an older bridge that sends no cause is mapped from `kind` alone.

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult["terminal"]} AttemptTerminal */
/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessTerminalOutcomeInput} TerminalOutcomeInput */
/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessTerminalOutcomeClassification} Classification */

/**
 * What a failed turn's `error` is: an Error whose `code` names the bridge's cause, so the host's
 * failover rules can read the message and a reader can still tell a crash from a provider error.
 */
export class ClawbridgeTurnError extends Error {
  /**
   * @param {string} message
   * @param {string} code the bridge's cause (`backendExited`, `native`, …) or `unknown`
   */
  constructor(message, code) {
    super(message);
    this.name = "ClawbridgeTurnError";
    this.code = code;
  }
}

/**
 * The bridge's `{kind, message, cause}` as OpenClaw's `terminal`.
 *
 * @param {any} terminal the bridge's terminal (untrusted wire data)
 * @param {{externallyAborted?: boolean, toolRunningAtTimeout?: boolean}} [ctx] whether the host's
 *   abortSignal fired; whether a tool call was running when the attempt's budget ran out
 * @returns {AttemptTerminal}
 */
export function toTerminal(terminal, ctx = {}) {
  const message = typeof terminal?.message === "string" && terminal.message ? terminal.message : undefined;
  const cause = typeof terminal?.cause === "string" ? terminal.cause : undefined;
  const failure = (/** @type {string} */ fallback) => ({
    source: /** @type {const} */ ("prompt"),
    error: new ClawbridgeTurnError(message ?? fallback, cause ?? "unknown"),
  });
  switch (terminal?.kind) {
    case "ok":
      return { kind: "ok" };
    case "aborted":
      // Spelled out rather than spread conditionally: tsc checks a literal's fields exactly.
      return message
        ? { kind: "aborted", source: ctx.externallyAborted ? "external" : "runtime", failure: failure(message) }
        : { kind: "aborted", source: ctx.externallyAborted ? "external" : "runtime" };
    case "timeout":
      return {
        kind: "timeout",
        // As the embedded runner observes it: a budget that ran out mid-tool timed out the tool.
        phase: ctx.toolRunningAtTimeout === true ? "tool_execution" : "prompt",
        source: ctx.externallyAborted ? "external" : timeoutSource(cause),
        aborted: true,
        failure: failure("the turn timed out"),
      };
    case "failed":
      return { kind: "failed", ...failure("the native turn failed") };
    default:
      return {
        kind: "failed",
        source: "prompt",
        error: new ClawbridgeTurnError(
          `clawbridge reported an unknown terminal kind ${JSON.stringify(terminal?.kind)}${message ? `: ${message}` : ""}`,
          "unknown",
        ),
      };
  }
}

/**
 * The timeout's source: the watchdog is `idle`, the attempt budget `run_budget`. An older bridge
 * names no cause; its only timeout was the budget.
 *
 * @param {string | undefined} cause
 * @returns {"idle" | "run_budget" | "runtime"}
 */
function timeoutSource(cause) {
  switch (cause) {
    case "idleTimeout":
      return "idle";
    case "runBudget":
    case undefined:
      return "run_budget";
    default:
      return "runtime";
  }
}

/**
 * `classifyAgentHarnessTerminalOutcome` as the SDK (2026.9.6) defines it, for a host that does not
 * lend the SDK's own (unit tests compare the two on the same inputs).
 *
 * @param {TerminalOutcomeInput} params
 * @returns {Classification | undefined}
 */
export function classifyTerminalOutcome(params) {
  if (!params.turnCompleted || (params.promptError !== undefined && params.promptError !== null)) return undefined;
  if (params.assistantTexts.some((text) => text.trim().length > 0)) return undefined;
  if (params.planText?.trim()) return "planning-only";
  if (params.reasoningText?.trim()) return "reasoning-only";
  return "empty";
}
