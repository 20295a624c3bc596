// @ts-check
// Compile-time only: the objects the plugin hands OpenClaw, checked against the SDK's own types
// (scripts/typecheck-plugin.sh). Nothing imports this module at run time.

import { createHarness } from "./harness.js";

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessV2} AgentHarnessV2 */

/**
 * A harness as `api.registerAgentHarness` takes it.
 *
 * @param {any} runtime
 * @param {string} id
 * @returns {AgentHarnessV2}
 */
export function typedHarness(runtime, id) {
  return createHarness(runtime, id);
}
