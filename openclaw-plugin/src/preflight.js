// @ts-check
// The one way the plugin refuses an attempt before any native work: OpenClaw's
// `AgentHarnessPreflightError` (a plain Error on a host without one), naming the harness and why.

/**
 * @param {any} PreflightError `AgentHarnessPreflightError`, when the SDK lends it
 * @param {string} harnessId
 * @param {string} problem what cannot be honoured, in words an operator can act on
 * @param {string} userMessage what a person in the chat reads
 * @returns {Error}
 */
export function preflightRefusal(PreflightError, harnessId, problem, userMessage) {
  const message = `clawbridge ${harnessId}: ${problem}`;
  if (typeof PreflightError !== "function") return new Error(message);
  return new PreflightError(message, { scope: "harness", userMessage });
}
