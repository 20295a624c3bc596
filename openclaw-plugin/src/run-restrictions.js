// Attempt params that restrict or reshape a run in ways a native agent either honours exactly or
// must refuse before any native work (docs/peers/openclaw.md#run-restrictions): internal model
// probes (`modelRun`), restart-recovery runs limited to restart-safe tools
// (`forceRestartSafeTools`), explicit per-run sampling parameters (`streamParams`), and the
// "visible but not executable" tool gate (`toolExecutionAllow`).

import { clientToolsProblem } from "./prompt-context.js";
import { preflightRefusal } from "./preflight.js";

/** What a gated tool answers, in OpenClaw's own words for an execution-gated tool. */
export const TOOL_EXECUTION_GATED_MESSAGE =
  "Unavailable in this run. Continue with the tools permitted by the run's instructions.";

/**
 * OpenClaw's tool-name aliases, applied before names are compared (its `normalizeToolPolicyName`:
 * lower case, `bash` is `exec`, `apply-patch` is `apply_patch`, `cron` is `automations`).
 */
const TOOL_NAME_ALIASES = new Map([
  ["bash", "exec"],
  ["apply-patch", "apply_patch"],
  ["cron", "automations"],
]);

/** A tool name as OpenClaw's tool policy compares it. */
export function normalizeToolName(name) {
  const lower = String(name ?? "").trim().toLowerCase();
  return TOOL_NAME_ALIASES.get(lower) ?? lower;
}

/**
 * The `streamParams` members each harness can pass to its native runtime per turn. None: Codex's
 * app-server and Claude Code take no per-turn sampling parameters (temperature, maxTokens, stop,
 * seed, …), and the demo calls no model.
 */
const MAPPED_STREAM_PARAMS = Object.freeze({});

/**
 * Why this attempt cannot be run as asked, or `undefined`. Each reason names the param, so the
 * operator learns what to change.
 *
 * @param {string} harnessId
 * @param {any} params the attempt params
 * @returns {string | undefined}
 */
export function runRestrictionProblem(harnessId, params) {
  if (params?.modelRun === true) {
    // A probe wants a bare model call with no tools and no workspace policy; a native agent
    // always runs as an agent in a workspace.
    return "modelRun (an internal one-shot model probe) needs a bare model call, and a native agent always runs with its workspace and own tools";
  }
  if (params?.forceRestartSafeTools === true) {
    // The restart-safe subset is OpenClaw's own tool classification; the native agent's shell and
    // file tools are not restart-safe and cannot be reduced to that subset.
    return "forceRestartSafeTools (a restart-recovery run limited to restart-safe tools) cannot be honoured: the native agent's own tools are not restart-safe";
  }
  const unmapped = explicitStreamParams(params?.streamParams).filter(
    (key) => !(MAPPED_STREAM_PARAMS[harnessId] ?? []).includes(key),
  );
  if (unmapped.length > 0) {
    return `streamParams ${unmapped.join(", ")} cannot be passed to the native runtime per turn`;
  }
  return undefined;
}

/** The members of `streamParams` that are set (an absent or `undefined` member asks for nothing). */
function explicitStreamParams(streamParams) {
  if (!streamParams || typeof streamParams !== "object") return [];
  return Object.keys(streamParams)
    .filter((key) => streamParams[key] !== undefined)
    .sort();
}

/**
 * Throws the host's preflight error when the attempt cannot be honoured (before any native work).
 *
 * @param {{options: {PreflightError?: any}}} runtime
 * @param {string} harnessId
 * @param {any} params
 */
export function assertRunRestrictions(runtime, harnessId, params) {
  const problem = runRestrictionProblem(harnessId, params) ?? clientToolsProblem(params);
  if (!problem) return;
  throw preflightRefusal(runtime.options.PreflightError, harnessId, problem, `This run cannot use clawbridge: ${problem}.`);
}

/**
 * The tool surface with `toolExecutionAllow` applied as OpenClaw applies it to its own runs: every
 * tool stays visible (same name, description and schema), a tool outside the list refuses to run.
 * Absent, every tool runs; an empty list lets none run.
 *
 * @param {any[]} tools
 * @param {unknown} toolExecutionAllow
 */
export function gateToolExecution(tools, toolExecutionAllow) {
  if (!Array.isArray(toolExecutionAllow)) return tools;
  const allowed = new Set(toolExecutionAllow.map(normalizeToolName));
  return tools.map((tool) => {
    if (!tool || typeof tool.name !== "string" || allowed.has(normalizeToolName(tool.name))) return tool;
    return {
      ...tool,
      prepareArguments: undefined,
      execute: async () => {
        throw new Error(TOOL_EXECUTION_GATED_MESSAGE);
      },
    };
  });
}

/** `toolExecutionAllow` for `attempt/run` (the bridge takes away native classes outside it). */
export function toolExecutionAllowParam(params) {
  const list = params?.toolExecutionAllow;
  if (!Array.isArray(list)) return {};
  return { toolExecutionAllow: list.filter((name) => typeof name === "string") };
}

/**
 * The canonical OpenClaw tool names of each native harness's own tool surface, declared as
 * `conversationToolPolicyNativeTools`: OpenClaw checks each against the chat's effective tool
 * profile, and a profile missing one (`messaging`, `minimal`) marks the chat restricted, which
 * core refuses before the attempt since clawbridge certifies no exact policy enforcement.
 * Codex runs commands (and keeps background processes), reads and patches files and searches the
 * web; Claude Code runs commands (and background shells), reads, writes and edits files, searches
 * and fetches from the web (docs/peers/codex.md, docs/peers/claude.md#native-tool-policy).
 */
export const NATIVE_TOOL_SURFACES = Object.freeze({
  "clawbridge-codex": Object.freeze(["exec", "process", "read", "write", "edit", "apply_patch", "web_search"]),
  "clawbridge-claude": Object.freeze(["exec", "process", "read", "write", "edit", "web_search", "web_fetch"]),
  // An ACP agent's own tools are whatever it has; the bridge cannot remove any (docs/peers/acp.md).
  "clawbridge-acp": Object.freeze(["exec", "process", "read", "write", "edit", "web_search", "web_fetch"]),
});

/** `{conversationToolPolicyNativeTools}` for harness `id`, or nothing for one that runs no tools. */
export function nativeToolSurface(id) {
  const names = NATIVE_TOOL_SURFACES[/** @type {keyof typeof NATIVE_TOOL_SURFACES} */ (id)];
  return names ? { conversationToolPolicyNativeTools: names } : {};
}
