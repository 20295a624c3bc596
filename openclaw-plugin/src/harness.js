// The AgentHarnessV2 objects and the runtime they share: one bridge (`BridgeSupervisor`), the
// attempts in flight by id (so the bridge's `host/*` requests and `attempt/event` notifications
// reach the right `runAttempt`), and the pure `supports()` rule.

import { BridgeSupervisor, RpcRemoteError } from "./bridge.js";
import { appendTranscript, decideApproval, executeTool, observeToolTerminal } from "./host-requests.js";
import { toAttemptResult } from "./result.js";
import { ErrorCodes, RpcReplyError, RpcTimeoutError } from "./rpc-client.js";
import { KNOWN_HARNESSES } from "./config.js";
import { AttemptProgress } from "./progress.js";

/** `-32034`: the attempt failed before any model or tool work (docs/host-protocol.md). */
const PREFLIGHT_FAILED = -32034;
/** How long past the attempt's own budget the result may take (the bridge's wind-down and stop). */
const RESULT_GRACE_MS = 120_000;
/** How long `attempt/cancel` and `session/reset` may take; both are immediate in the bridge. */
const CONTROL_TIMEOUT_MS = 30_000;

/**
 * The shared runtime.
 *
 * @param {object} options
 * @param {ReturnType<import("./config.js").resolveConfig>} options.config
 * @param {object} [options.logger]
 * @param {string} [options.hostVersion]
 * @param {Function} [options.appendTranscriptMessage] `appendSessionTranscriptMessageByIdentity`
 * @param {Function} [options.PreflightError] `AgentHarnessPreflightError`, when the SDK has it
 * @param {object} [options.progressSdk] the SDK helpers `progress.js` uses (`progressHelpers`)
 * @param {number} [options.protocolVersion] tests only
 * @param {Function} [options.tap] tests only: sees every message
 */
export function createRuntime(options) {
  const logger = options.logger ?? console;
  const attempts = new Map();
  let attemptCounter = 0;

  const supervisor = new BridgeSupervisor({
    command: options.config.command,
    args: options.config.args,
    env: options.config.env,
    logger,
    hostVersion: options.hostVersion,
    protocolVersion: options.protocolVersion,
    tap: options.tap,
    onRequest: (method, params) => route(method, params),
    onNotification: (method, params) => {
      if (method !== "attempt/event") return;
      attempts.get(params?.attemptId)?.onEvent(params);
    },
  });

  function route(method, params) {
    if (!method.startsWith("host/")) {
      throw new RpcReplyError(ErrorCodes.methodNotFound, `the host does not serve \`${method}\``);
    }
    const attempt = attempts.get(params?.attemptId);
    if (!attempt) {
      throw new RpcReplyError(ErrorCodes.unknownAttempt, `no attempt ${params?.attemptId}`);
    }
    switch (method) {
      case "host/tool/execute":
        return executeTool(attempt, params);
      case "host/approval/decide":
        return decideApproval(attempt, params);
      case "host/toolTerminal/observe":
        return observeToolTerminal(attempt, params);
      case "host/transcript/append":
        return appendTranscript(attempt, params, options.appendTranscriptMessage);
      case "host/userInput/request":
        // Not declared in `initialize` (no blocking user-input surface is wired yet), so the bridge
        // should never ask; if it does, "no answer" is the safe reply.
        return { answers: {} };
      default:
        throw new RpcReplyError(ErrorCodes.methodNotFound, `the host does not serve \`${method}\``);
    }
  }

  function nextAttemptId(params) {
    attemptCounter += 1;
    return `${params.runId ?? params.sessionId ?? "attempt"}:${attemptCounter}`;
  }

  return { supervisor, attempts, route, nextAttemptId, logger, options };
}

/** The pure, cheap `supports(ctx)` rule; mirrors `Catalog::supports` in src/serve/harness.rs. */
export function supportsRoute(id, providerIds, ctx, known) {
  if (known && known.available === false) {
    return { supported: false, reason: `${id} is unavailable: ${known.unavailableReason ?? "its backend cannot run"}` };
  }
  const provider = ctx?.modelProvider;
  if (provider?.requestTransportOverrides === "present") {
    return {
      supported: false,
      reason: "the route sets requestTransportOverrides, which a native harness cannot honour",
    };
  }
  const compatible = provider?.runtimePolicy?.compatibleIds;
  if (Array.isArray(compatible)) {
    return compatible.includes(id)
      ? { supported: true, priority: 100, reason: `runtimePolicy.compatibleIds names ${id}` }
      : { supported: false, reason: `runtimePolicy.compatibleIds does not name ${id}` };
  }
  if (ctx?.requestedRuntime === id) {
    return { supported: true, priority: 100, reason: `the route asks for ${id} explicitly` };
  }
  if (typeof ctx?.provider === "string" && providerIds.includes(ctx.provider)) {
    return { supported: true, priority: 50, reason: `provider ${ctx.provider} is in ${id}'s providerIds` };
  }
  return { supported: false, reason: `${id} runs only when selected explicitly or named by runtimePolicy.compatibleIds` };
}

/** One AgentHarnessV2 for harness `id`, running on `runtime`. */
export function createHarness(runtime, id) {
  const providerIds = runtime.options.config.providerIds[id] ?? [];
  return {
    id,
    label: KNOWN_HARNESSES[id] ?? id,
    pluginId: "clawbridge",
    autoSelection: { providerIds: [...providerIds] },
    supports: (ctx) => supportsRoute(id, providerIds, ctx, runtime.supervisor.harnessInfo(id)),
    runAttempt: (params) => runAttempt(runtime, id, params),
    reset: (params) => reset(runtime, params),
    dispose: () => runtime.supervisor.dispose(),
  };
}

async function runAttempt(runtime, harnessId, params) {
  const { supervisor, attempts, logger } = runtime;
  const attemptId = runtime.nextAttemptId(params);
  const abort = new AbortController();
  const progress = new AttemptProgress({ params, harnessId, logger, sdk: runtime.options.progressSdk });
  const attempt = {
    attemptId,
    params,
    logger,
    tools: new Map(),
    signal: abort.signal,
    mirrored: [],
    lastToolError: undefined,
    progress,
    onEvent: (note) => progress.onEvent(note),
  };
  supervisor.hold();
  let conn;
  let onAbort;
  try {
    conn = await supervisor.connection();
    const hostTools = bindTools(runtime, attempt, params);
    attempts.set(attemptId, attempt);
    const externalSignal = params.abortSignal;
    if (externalSignal?.aborted) {
      // Nothing ran: an honest, replay-safe abort without bothering the bridge.
      return toAttemptResult(
        {
          terminal: { kind: "aborted", message: "aborted before the attempt started" },
          replay: { hadPotentialSideEffects: false, replaySafe: true },
        },
        { params, harnessId, externallyAborted: true, mirrored: [] },
      );
    }
    let settled = false;
    onAbort = () => {
      attempt.externallyAborted = true;
      progress.aborted();
      abort.abort(externalSignal?.reason);
      cancelUntilSeen(conn, attemptId, abortReason(externalSignal), () => settled, logger);
    };
    externalSignal?.addEventListener?.("abort", onAbort, { once: true });

    let response;
    try {
      // The bridge enforces the budget itself; this only catches a bridge that is alive but stuck.
      const deadline = Number.isFinite(params.timeoutMs) && params.timeoutMs > 0 ? params.timeoutMs + RESULT_GRACE_MS : undefined;
      progress.start();
      response = await conn.client.request("attempt/run", runParams(harnessId, attemptId, params, hostTools), {
        timeoutMs: deadline,
      });
    } catch (error) {
      settled = true;
      // A stuck attempt must not keep running in the bridge after we give up on it.
      if (error instanceof RpcTimeoutError) {
        progress.timedOut(`clawbridge ${harnessId} gave no result within the attempt's budget`);
        cancelUntilSeen(conn, attemptId, "no result in time", () => false, logger);
      }
      await progress.finish({ kind: "failed", message: error?.message ?? String(error) });
      throw toAttemptError(runtime, harnessId, attemptId, error);
    } finally {
      settled = true;
    }
    await progress.finish(response?.terminal);
    if (response?.transcriptOwned !== true) {
      // Core does not write assistant or tool rows for a plugin harness.
      logger.warn?.(`clawbridge: attempt ${attemptId}: the turn's assistant and tool rows are not in the transcript`);
    }
    return toAttemptResult(response, {
      params,
      harnessId,
      externallyAborted: attempt.externallyAborted === true,
      mirrored: attempt.mirrored,
      lastToolError: attempt.lastToolError,
    });
  } finally {
    params.abortSignal?.removeEventListener?.("abort", onAbort);
    abort.abort();
    attempts.delete(attemptId);
    supervisor.release();
  }
}

/** Binds OpenClaw's tool surface for this run; the bridge offers the tools to the native agent. */
function bindTools(runtime, attempt, params) {
  if (!runtime.options.config.hostTools || params.disableTools) return [];
  const host = params.hostCapabilities;
  if (typeof host?.createToolSurface !== "function") return [];
  let tools;
  try {
    tools = host.createToolSurface(
      {
        workspaceDir: params.workspaceDir,
        agentDir: params.agentDir,
        config: params.config,
        sessionKey: params.sessionKey,
        sessionId: params.sessionId,
        agentId: params.agentId,
        modelProvider: params.provider,
        modelId: params.modelId,
      },
      { cwd: params.cwd ?? params.workspaceDir },
    );
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: the OpenClaw tool surface could not be built: ${error?.message ?? error}`);
    return [];
  }
  const allow = Array.isArray(params.toolsAllow) ? new Set(params.toolsAllow) : null;
  const specs = [];
  for (const tool of Array.isArray(tools) ? tools : []) {
    if (!tool || typeof tool.name !== "string" || typeof tool.execute !== "function") continue;
    if (allow && !allow.has(tool.name)) continue;
    if (attempt.tools.has(tool.name)) continue;
    attempt.tools.set(tool.name, tool);
    specs.push({
      name: tool.name,
      description: typeof tool.description === "string" ? tool.description : "",
      inputSchema: plainSchema(tool.parameters),
    });
  }
  return specs;
}

/** The `attempt/run` params from OpenClaw's attempt params. */
function runParams(harnessId, attemptId, params, hostTools) {
  const out = {
    attemptId,
    harnessId,
    sessionId: String(params.sessionId ?? ""),
    prompt: String(params.prompt ?? ""),
    workspaceDir: String(params.workspaceDir ?? params.cwd ?? ""),
    provider: String(params.provider ?? ""),
    modelId: String(params.modelId ?? ""),
    disableTools: params.disableTools === true,
  };
  const optional = {
    sessionKey: params.sessionTarget?.sessionKey ?? params.sessionKey,
    agentId: params.sessionTarget?.agentId ?? params.agentId,
    runId: params.runId,
    extraSystemPrompt: params.extraSystemPrompt,
    cwd: params.cwd,
    modelApi: params.model?.api,
    thinkLevel: params.thinkLevel,
  };
  for (const [key, value] of Object.entries(optional)) {
    if (typeof value === "string" && value !== "") out[key] = value;
  }
  if (Number.isFinite(params.timeoutMs) && params.timeoutMs > 0) out.timeoutMs = Math.floor(params.timeoutMs);
  if (hostTools.length > 0) out.hostTools = hostTools;
  if (Array.isArray(params.toolsAllow)) out.toolsAllow = params.toolsAllow.filter((t) => typeof t === "string");
  const images = Array.isArray(params.images)
    ? params.images
        .filter((i) => typeof i?.data === "string" && typeof i?.mimeType === "string")
        .map((i) => ({ data: i.data, mimeType: i.mimeType }))
    : [];
  if (images.length > 0) out.images = images;
  return out;
}

/**
 * Sends `attempt/cancel` until the bridge has seen the attempt: a cancel can overtake the
 * `attempt/run` it is about (the bridge answers requests concurrently) and find nothing running.
 */
async function cancelUntilSeen(conn, attemptId, reason, settled, logger) {
  for (let tries = 0; tries < 20 && !settled(); tries += 1) {
    try {
      const answer = await conn.client.request("attempt/cancel", { attemptId, reason }, { timeoutMs: CONTROL_TIMEOUT_MS });
      if (answer?.status !== "notRunning") return;
    } catch (error) {
      logger.warn?.(`clawbridge: attempt/cancel failed: ${error.message}`);
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** An `attempt/run` that got no result: a clear error naming the harness and the attempt. */
function toAttemptError(runtime, harnessId, attemptId, error) {
  if (error instanceof RpcRemoteError) {
    if (error.code === PREFLIGHT_FAILED && runtime.options.PreflightError) {
      const userMessage = error.data?.userMessage ?? error.remoteMessage;
      return new runtime.options.PreflightError(`clawbridge ${harnessId}: ${error.remoteMessage}`, {
        scope: "harness",
        userMessage,
      });
    }
    return new Error(`clawbridge ${harnessId} could not run attempt ${attemptId}: ${error.remoteMessage} (code ${error.code})`);
  }
  return new Error(`clawbridge ${harnessId} attempt ${attemptId} failed: ${error?.message ?? error}`);
}

async function reset(runtime, params) {
  // Nothing to drop when no bridge runs: bindings live in the bridge (and its state dir).
  let conn;
  try {
    conn = await runtime.supervisor.connection();
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: reset skipped, the bridge is not available: ${error.message}`);
    return;
  }
  const request = {};
  for (const key of ["sessionId", "sessionKey", "agentId"]) {
    if (typeof params?.[key] === "string" && params[key]) request[key] = params[key];
  }
  if (typeof params?.reason === "string") request.reason = params.reason;
  if (!request.sessionId && !request.sessionKey) return;
  runtime.supervisor.hold();
  try {
    await conn.client.request("session/reset", request, { timeoutMs: CONTROL_TIMEOUT_MS });
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: session/reset failed: ${error.message}`);
  } finally {
    runtime.supervisor.release();
  }
}

function abortReason(signal) {
  const reason = signal?.reason;
  if (typeof reason === "string") return reason;
  if (reason instanceof Error) return reason.message;
  return "the OpenClaw run was aborted";
}

/** A tool's `parameters` (TypeBox schemas carry symbol keys) as plain JSON Schema. */
function plainSchema(parameters) {
  try {
    const schema = JSON.parse(JSON.stringify(parameters ?? { type: "object", properties: {} }));
    return schema && typeof schema === "object" ? schema : { type: "object", properties: {} };
  } catch {
    return { type: "object", properties: {} };
  }
}
