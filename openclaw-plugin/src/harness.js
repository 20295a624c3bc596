// The AgentHarnessV2 objects and the runtime they share: one bridge (`BridgeSupervisor`), the
// attempts in flight by id (so the bridge's `host/*` requests and `attempt/event` notifications
// reach the right `runAttempt`), and the pure `supports()` rule.

import { readHistory, reportProjection } from "./history.js";
import { BridgeSupervisor, RpcRemoteError } from "./bridge.js";
import { appendTranscript, decideApproval, executeTool, observeToolTerminal } from "./host-requests.js";
import { askUser, captureContext, questionPromptFor } from "./people.js";
import { toAttemptResult } from "./result.js";
import { ErrorCodes, RpcReplyError, RpcTimeoutError } from "./rpc-client.js";
import { DEFAULT_AUTH_MODE, KNOWN_HARNESSES } from "./config.js";
import { runWithHostEffects } from "./effects.js";
import { AttemptFacts, observeEvent } from "./facts.js";
import { promptImages } from "./inputs.js";
import { nativeTurnInput } from "./prompt-context.js";
import { routeAuth } from "./route-auth.js";
import { registerActiveRun } from "./steering.js";
import { RunCleanups, toolSurfaceOptions } from "./tool-surface.js";
import { closeOrphanedCalls, transcriptApiOf } from "./transcript.js";
import { AttemptProgress } from "./progress.js";
import { decideWithFileBinding } from "./file-approval.js";
import { processEnvParam } from "./prepared-env.js";
import { assertRunRestrictions, gateToolExecution, nativeToolSurface, toolExecutionAllowParam } from "./run-restrictions.js";
import { ResultWait, resultDeadline } from "./result-wait.js";
import { beforeAgentFinalize } from "./finalize.js";
import { applyYield } from "./turn-facts.js";
import { backendOf, explainUnusable, isOpenFailure, isUnusable, withDoctorHint } from "./doctor-hint.js";
import { BridgeNotFoundError } from "./locate.js";
import { preflightRefusal } from "./preflight.js";
import { CONTEXT_ENGINE_HOST_CAPABILITIES, assembledContext } from "./context-engine.js";
import { finalizeSettledTurn, runIsolatedCompletion, runSideQuestion } from "./side-work.js";
import { compactSession, createMcpToolCatalog, createModelCatalog, offersModelCatalog } from "./native-ops.js";
import { appliesMcpServers, attemptMcpServers } from "./mcp-servers.js";
import { recordCompaction } from "./compaction-entry.js";
import { contextWindowParam } from "./budget.js";
import { BOOTSTRAP_HARNESSES, bootstrapGuidance, skipsNativeProjectDocs } from "./bootstrap.js";

/** `-32034`: the attempt failed before any model or tool work (docs/host-protocol.md). */
const PREFLIGHT_FAILED = -32034;
/** How long past the attempt's own budget the result may take (the bridge's wind-down and stop). */
const RESULT_GRACE_MS = 120_000;
/** Harnesses that replay a recorded turn and run nothing on the host. */
const REPLAY_ONLY_HARNESSES = new Set(["clawbridge-demo"]);
/**
 * Harnesses whose backend opens sessions the native side never stores (side work) and continues a
 * thread per context epoch (the context engine); the ACP agent and the demo do neither.
 */
const SIDE_WORK_HARNESSES = new Set(["clawbridge-codex", "clawbridge-claude"]);
/** How long `attempt/cancel` may take; it is immediate in the bridge. */
const CONTROL_TIMEOUT_MS = 30_000;
/**
 * How long `session/reset`, `session/delete` and `session/contextReset` may take: immediate, unless
 * an attempt runs on the session, after which the bridge applies and answers them.
 */
const SESSION_CHANGE_TIMEOUT_MS = 30 * 60_000;

/**
 * The shared runtime.
 *
 * @param {object} options
 * @param {ReturnType<import("./config.js").resolveConfig>} options.config
 * @param {object} [options.logger]
 * @param {string} [options.hostVersion]
 * @param {Function} [options.appendTranscriptMessage] `appendSessionTranscriptMessageByIdentity`
 * @param {Function} [options.PreflightError] `AgentHarnessPreflightError`, when the SDK has it
 * @param {Function} [options.loadPromptImages] `detectAndLoadAgentHarnessPromptImages`, when the SDK has it
 * @param {Function} [options.setActiveEmbeddedRun] with `clearActiveEmbeddedRun`: active-run injection
 * @param {Function} [options.askGatewayQuestion] `runAgentHarnessGatewayQuestion`, when the SDK has it
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
    userInput: typeof options.askGatewayQuestion === "function",
    onRequest: (method, params) => route(method, params),
    onNotification: (method, params) => {
      if (method !== "attempt/event") return;
      const attempt = attempts.get(params?.attemptId);
      attempt?.inContext(() => attempt.onEvent(params));
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
    return attempt.inContext(() => handle(attempt, method, params));
  }

  /** One `host/*` request of `attempt`, run in that attempt's own async context. */
  function handle(attempt, method, params) {
    switch (method) {
      case "host/tool/execute":
        return executeTool(attempt, params);
      case "host/approval/decide":
        return decideWithFileBinding(attempt, params, decideApproval);
      case "host/toolTerminal/observe":
        return observeToolTerminal(attempt, params);
      case "host/transcript/append":
        return appendTranscript(attempt, params, transcriptApiOf(options));
      case "host/userInput/request":
        return askUser(attempt, params, options.askGatewayQuestion);
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

/**
 * The OpenClaw runtime ids whose routes a harness reproduces because it runs the same native
 * program: a provider's route facts (`runtimePolicy.compatibleIds`) name the native runtime, never
 * clawbridge. The stock `openai` provider names `codex` for the official Responses routes Codex
 * can reproduce (docs/peers/openclaw.md#route-facts). Mirrored by `reproduced_runtime_ids` in
 * src/serve/harness.rs.
 */
export const REPRODUCED_RUNTIME_IDS = Object.freeze({
  "clawbridge-codex": Object.freeze(["codex"]),
});

/** The pure, cheap `supports(ctx)` rule; mirrors `Catalog::supports` in src/serve/harness.rs. */
export function supportsRoute(id, providerIds, ctx, known, doctor) {
  if (known && known.available === false) {
    const reason = `${id} is unavailable: ${known.unavailableReason ?? "its backend cannot run"}`;
    return { supported: false, reason: withDoctorHint(reason, id, known, doctor) };
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
    if (compatible.includes(id)) return { supported: true, priority: 100, reason: `runtimePolicy.compatibleIds names ${id}` };
    const native = (REPRODUCED_RUNTIME_IDS[id] ?? []).find((runtime) => compatible.includes(runtime));
    if (native) {
      return {
        supported: true,
        priority: 100,
        reason: `runtimePolicy.compatibleIds names ${native}, the native runtime ${id} runs`,
      };
    }
    const names = [id, ...(REPRODUCED_RUNTIME_IDS[id] ?? [])].join(" or ");
    return { supported: false, reason: `runtimePolicy.compatibleIds does not name ${names}` };
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
  const authMode = runtime.options.config.auth?.[id] ?? DEFAULT_AUTH_MODE;
  const catalog = offersModelCatalog(id) ? createModelCatalog(runtime, id) : undefined;
  return {
    id,
    label: KNOWN_HARNESSES[id] ?? id,
    pluginId: "clawbridge",
    autoSelection: { providerIds: [...providerIds] },
    // Static, per harness: a harness that only sometimes owns auth must not declare it.
    ...(authMode === "harness" ? { authBootstrap: /** @type {"harness"} */ ("harness") } : {}),
    // The native agent runs on the gateway host (its own sandbox is not OpenClaw's): OpenClaw must
    // refuse sandbox-required, workspace-only and restricted-permission chats before the attempt.
    // The demo only replays a recording and runs nothing.
    ...(REPLAY_ONLY_HARNESSES.has(id) ? {} : { executionEnvironment: /** @type {"host-only"} */ ("host-only") }),
    // The native shell and file tools come as one surface OpenClaw's tool profiles must allow.
    ...nativeToolSurface(id),
    supports: (ctx) =>
      supportsRoute(id, providerIds, ctx, runtime.supervisor.harnessInfo(id), runtime.options.config),
    runAttempt: (params) =>
      runWithHostEffects(runtime, id, params, (run, harnessId, attemptParams) =>
        runAttempt(run, harnessId, attemptParams, authMode),
      ),
    reset: (params) => reset(runtime, params),
    runtimeArtifact: { validate: (binding) => validateArtifact(runtime, id, binding) },
    // Core's two-phase hooks around its own session transaction (docs/peers/openclaw.md#session-deletion-and-history-cuts):
    // the bridge forgets the native binding only once core's commit is complete.
    withSessionDeletion: (params, run) => withSessionChange(runtime, "session/delete", params, run),
    withSessionContextReset: (params, run) => withSessionChange(runtime, "session/contextReset", params, run),
    ...(SIDE_WORK_HARNESSES.has(id)
      ? {
          contextEngineHostCapabilities: CONTEXT_ENGINE_HOST_CAPABILITIES,
          runIsolatedCompletionV2: (params) => runIsolatedCompletion(runtime, id, params, authMode),
          runSideQuestion: (params) => runSideQuestion(runtime, id, params, authMode),
          finalizeSettledTurn: (params) => finalizeSettledTurn(runtime, id, params, authMode),
        }
      : {}),
    // Native work outside attempts (native-ops.js): the native compactor, the native model list.
    ...(REPLAY_ONLY_HARNESSES.has(id) ? {} : { compact: (params) => compactSession(runtime, id, params) }),
    ...(catalog
      ? { loadModelCatalog: () => catalog.load(), readModelCatalogReadiness: (params) => catalog.read(params) }
      : {}),
    // The MCP tools of the session's native thread, where the native runtime runs the user's servers.
    ...(appliesMcpServers(id) ? { loadMcpToolCatalog: createMcpToolCatalog(runtime, id, attemptMcpServers) } : {}),
    // No `dispose`: OpenClaw 2026.9.6 calls a harness's dispose through the plugin instance that
    // registered it, which a one-shot CLI has already retired by then, so every run logged
    // "dispose hook failed … Plugin clawbridge was reloaded or disabled" and nothing was stopped.
    // The bridge stops itself when OpenClaw's process ends (its stdin closes, docs/host-protocol.md
    // `shutdown`), and the plugin's own dispose() stops it on unload.
  };
}

async function runAttempt(runtime, harnessId, params, authMode) {
  const { supervisor, attempts, logger } = runtime;
  assertNoExpectedOwnership(runtime, harnessId, params);
  assertRunRestrictions(runtime, harnessId, params);
  const attemptId = runtime.nextAttemptId(params);
  const abort = new AbortController();
  const facts = new AttemptFacts(params.hostCapabilities, runtime.options.sdk);
  const progress = new AttemptProgress({ params, harnessId, logger, sdk: runtime.options.progressSdk });
  const attempt = {
    harnessId,
    runtimeOptions: runtime.options,
    facts,
    hostToolRuns: facts.hostToolRuns,
    attemptId,
    params,
    logger,
    tools: new Map(),
    signal: abort.signal,
    mirrored: [],
    lastToolError: undefined,
    progress,
    // What the attempt's tools registered to release when it ends (tool-surface.js).
    cleanups: new RunCleanups(),
    onEvent: (note) => onBridgeEvent(attempt, note),
    // This attempt's async context: its host requests and events run in it (people.js).
    inContext: captureContext(),
  };
  supervisor.hold();
  let conn;
  let onAbort;
  let unregisterRun = () => {};
  try {
    conn = await supervisor.connection().catch((error) => {
      // Nothing ran: a preflight refusal, naming every place the executable was looked for.
      if (error instanceof BridgeNotFoundError) {
        throw preflightRefusal(runtime.options.PreflightError, harnessId, error.message, "clawbridge is not installed on this host.");
      }
      throw explainUnusable(error, harnessId, supervisor.harnessInfo(harnessId), runtime.options.config);
    });
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
        { params, harnessId, externallyAborted: true, mirrored: [], sdk: runtime.options.sdk },
      );
    }
    let settled = false;
    // The agent handed its turn over (`sessions_yield`): the native turn ends now, as the embedded
    // runner aborts its run for a yield; the result says so (turn-facts.js `applyYield`).
    attempt.yieldTo = (message, acknowledgment) => {
      if (attempt.yielded || abort.signal.aborted) return;
      attempt.yielded = { message, acknowledgment };
      abort.abort("sessions_yield");
      cancelUntilSeen(conn, attemptId, "the agent yielded its turn (sessions_yield)", () => settled, logger);
    };
    // The host's abort signal, or the reply operation's `cancel` on the active-run handle.
    onAbort = (reason) => {
      if (abort.signal.aborted) return;
      attempt.externallyAborted = true;
      progress.aborted();
      abort.abort(typeof reason === "string" ? reason : externalSignal?.reason);
      cancelUntilSeen(conn, attemptId, typeof reason === "string" ? reason : abortReason(externalSignal), () => settled, logger);
    };
    externalSignal?.addEventListener?.("abort", onAbort, { once: true });

    let response;
    try {
      // The bridge enforces the budget itself; this only catches a bridge that is alive but stuck.
      const deadline = resultDeadline(params.timeoutMs, RESULT_GRACE_MS);
      // Stopped while the bridge's budget is paused for a person (result-wait.js).
      const wait = deadline ? new ResultWait(deadline, RESULT_GRACE_MS) : null;
      progress.budgetListener = wait;
      const images = await promptImages(params, runtime.options.loadPromptImages, logger);
      unregisterRun = registerActiveRun(runtime, harnessId, attempt, conn, (reason) => onAbort(reason));
      const turn = nativeTurnInput(params, { toolNames: hostTools.map((t) => t.name), logger });
      const run = runParams(harnessId, attemptId, { ...params, ...turn }, hostTools, images);
      // OpenClaw's workspace bootstrap files, as system guidance of their own: a changed file never
      // replaces the native session (bootstrap.js).
      const bootstrap = SIDE_WORK_HARNESSES.has(harnessId) ? await bootstrapGuidance(runtime.options.sdk, harnessId, params, logger) : undefined;
      if (bootstrap) run.bootstrapContext = bootstrap;
      if (BOOTSTRAP_HARNESSES.has(harnessId) && skipsNativeProjectDocs(params)) run.skipNativeProjectDocs = true;
      // The context engine's assembled context, once per epoch (context-engine.js).
      const context = SIDE_WORK_HARNESSES.has(harnessId) ? await assembledContext(runtime.options.sdk, harnessId, params, logger) : undefined;
      if (context) run.context = context;
      const mcpServers = await attemptMcpServers(runtime, harnessId, params);
      if (mcpServers) run.mcpServers = mcpServers;
      // The operator's context-window cap, for the native runtime's own budget (budget.js).
      const contextWindow = contextWindowParam(params, harnessId);
      if (contextWindow) run.contextWindow = contextWindow;
      // Host auth is only what OpenClaw prepared: even an empty one withholds the bridge's own
      // credentials from the native runtime, so it never authenticates two ways.
      if (authMode === "host") run.auth = (await routeAuth(params)) ?? {};
      // The transcript before this prompt (protocol version 2): how the bridge sees that the
      // transcript moved without the native thread, and what it seeds a new native session with.
      const history = await readHistory(params, runtime.options.sdk, logger);
      if (history) run.history = history;
      progress.start();
      const request = conn.client.request("attempt/run", run);
      response = await (wait ? wait.race(request) : request);
    } catch (error) {
      settled = true;
      // A stuck attempt must not keep running in the bridge after we give up on it.
      if (error instanceof RpcTimeoutError) {
        progress.timedOut(`clawbridge ${harnessId} gave no result within the attempt's budget`);
        cancelUntilSeen(conn, attemptId, "no result in time", () => false, logger);
      }
      const failure = toAttemptError(runtime, harnessId, attemptId, error);
      await progress.finish({ kind: "failed", message: error?.message ?? String(error) });
      await closeOrphanedCalls(attempt, transcriptApiOf(runtime.options), `the turn ended without a result (${failure.message})`);
      throw failure;
    } finally {
      settled = true;
    }
    await progress.finish(response?.terminal);
    logBudgets(attempt, facts, logger);
    reportProjection(response, attemptId, logger);
    // The native compactions' transcript entries are written before the result (never throw).
    await Promise.all(attempt.pendingWrites ?? []);
    // The bridge closes its own rows; a group it could not store leaves calls to close here.
    await closeOrphanedCalls(attempt, transcriptApiOf(runtime.options), "the turn ended before the tool reported an outcome");
    if (response?.transcriptOwned !== true && params.sessionPersistence !== "detached") {
      // Core does not write assistant or tool rows for a plugin harness.
      logger.warn?.(`clawbridge: attempt ${attemptId}: the turn's assistant and tool rows are not in the transcript`);
    }
    const result = toAttemptResult(response, {
      params,
      harnessId,
      externallyAborted: attempt.externallyAborted === true,
      mirrored: attempt.mirrored,
      lastToolError: attempt.lastToolError,
      reasoningText: facts.reasoningText,
      planText: facts.planText,
      compactions: facts.compactions,
      compactionTokensAfter: facts.compactionTokensAfter,
      toolArguments: facts.toolArguments,
      hostToolRuns: facts.hostToolRuns.runs,
      sdk: runtime.options.sdk,
    });
    // The native runtime already retried the model request; OpenClaw re-running the whole attempt
    // on top would repeat the turn (and its retries) many times over.
    if (attempt.modelRetries > 0) result.providerRetryMaxRetries = 0;
    applyYield(result, attempt.yielded);
    await beforeAgentFinalize(runtime.options.sdk ?? {}, params, result, logger);
    return result;
  } finally {
    unregisterRun();
    params.abortSignal?.removeEventListener?.("abort", onAbort);
    abort.abort();
    attempts.delete(attemptId);
    supervisor.release();
    await attempt.cleanups.run("the attempt ended", logger);
  }
}

/** Says what the attempt's byte budgets cut, if anything (the result's facts may be thinner). */
function logBudgets(attempt, facts, logger) {
  const runs = facts.hostToolRuns.summary();
  if (runs) logger.warn?.(`clawbridge: attempt ${attempt.attemptId}: ${runs}`);
  if (attempt.mirroredDropped > 0) {
    logger.warn?.(`clawbridge: attempt ${attempt.attemptId}: ${attempt.mirroredDropped} stored row(s) left out of the result's messagesSnapshot (byte budget)`);
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
      toolSurfaceOptions(params, {
        buildRunContext: runtime.options.sdk?.buildEmbeddedAttemptToolRunContext,
        resolveSpawnWorkspaceDir: runtime.options.sdk?.resolveAttemptSpawnWorkspaceDir,
        resolveModelAuthMode: runtime.options.sdk?.resolveModelAuthMode,
        signal: attempt.signal,
        registerRunCleanup: (cleanup) => attempt.cleanups.register(cleanup),
        // `sessions_yield` ends the turn through the attempt (yieldTo, set once the bridge is known).
        extra: { ...questionPromptOption(params), onYield: (message, acknowledgment) => attempt.yieldTo?.(message, acknowledgment) },
        logger: runtime.logger,
      }),
      { cwd: params.cwd ?? params.workspaceDir },
    );
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: the OpenClaw tool surface could not be built: ${error?.message ?? error}`);
    return [];
  }
  if (Array.isArray(tools)) tools = gateToolExecution(tools, params.toolExecutionAllow);
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

/** `questionPrompt` for the tool surface, when the run can show one (people.js). */
function questionPromptOption(params) {
  const questionPrompt = questionPromptFor(params);
  return questionPrompt ? { questionPrompt } : {};
}

/**
 * `expectedSessionRuntimeOwnership`: clawbridge declares no `resolveSessionRuntimeOwnership`, since
 * its bindings never own model selection (the native session runs the model OpenClaw selected, and
 * another model is another binding). Core only sends the expectation for a binding that reported
 * native ownership, so one arriving here cannot match any binding the bridge holds, and core's
 * rule is that missing ownership must never start a replacement thread: refused before any native
 * work (docs/peers/openclaw.md#session-runtime-ownership).
 */
function assertNoExpectedOwnership(runtime, harnessId, params) {
  const expected = params?.expectedSessionRuntimeOwnership;
  if (!expected || typeof expected !== "object") return;
  throw preflightRefusal(
    runtime.options.PreflightError,
    harnessId,
    `the attempt expects native session ownership (model: ${expected.model}, auth: ${expected.auth}), which no clawbridge binding has`,
    "This session's native runtime binding is unavailable. Reattach the original native session before retrying.",
  );
}

/** The `attempt/run` params from OpenClaw's attempt params. */
function runParams(harnessId, attemptId, params, hostTools, images) {
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
  if (images.length > 0) out.images = images;
  Object.assign(out, toolExecutionAllowParam(params), processEnvParam(params));
  // A detached run writes nothing durable: the bridge mirrors no rows and keeps no binding.
  if (params.sessionPersistence === "detached") out.sessionPersistence = "detached";
  // Core's verified continuations: name the artifact that ran the attempt, refuse any other.
  if (params.captureRuntimeArtifact === true) out.captureRuntimeArtifact = true;
  const expected = artifactOf(params.expectedRuntimeArtifact);
  if (expected) out.expectedRuntimeArtifact = expected;
  return out;
}

/**
 * A runtime artifact binding (`{id, fingerprint}`, both non-empty strings), or undefined.
 *
 * @param {any} value
 * @returns {{id: string, fingerprint: string} | undefined}
 */
export function artifactOf(value) {
  if (!value || typeof value !== "object") return undefined;
  const { id, fingerprint } = value;
  if (typeof id !== "string" || !id || typeof fingerprint !== "string" || !fingerprint) return undefined;
  return { id, fingerprint };
}

/**
 * `runtimeArtifact.validate(binding)`: whether `binding` is exactly the artifact the bridge runs
 * this harness with now (the bridge names it per harness in `initialize`). A bridge that cannot
 * start, or a harness without an artifact (unavailable), validates nothing.
 */
async function validateArtifact(runtime, id, binding) {
  const wanted = artifactOf(binding);
  if (!wanted) return false;
  try {
    await runtime.supervisor.connection();
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: cannot validate the runtime artifact of ${id}: ${error.message}`);
    return false;
  }
  const current = artifactOf(runtime.supervisor.harnessInfo(id)?.runtimeArtifact);
  return current !== undefined && current.id === wanted.id && current.fingerprint === wanted.fingerprint;
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
  const known = backendOf(error, runtime.supervisor.harnessInfo(harnessId));
  const failure = attemptErrorOf(runtime, harnessId, attemptId, error, known);
  if (isUnusable(error)) failure.message = withDoctorHint(failure.message, harnessId, known, runtime.options.config);
  return failure;
}

function attemptErrorOf(runtime, harnessId, attemptId, error, known) {
  if (error instanceof RpcRemoteError) {
    if (error.code === PREFLIGHT_FAILED && runtime.options.PreflightError) {
      const shown = error.data?.userMessage ?? error.remoteMessage;
      // The person reads `userMessage`: a backend that failed to open points them at the doctor too.
      const userMessage = isOpenFailure(error) ? withDoctorHint(shown, harnessId, known, runtime.options.config) : shown;
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
  // Nothing to drop when no bridge can run: bindings live in the bridge (and its state dir).
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
    // Waits while an attempt runs on the session: the bridge applies the reset when it ends.
    const answer = await conn.client.request("session/reset", request, { timeoutMs: SESSION_CHANGE_TIMEOUT_MS });
    if (answer?.afterAttempt) {
      runtime.logger.info?.(`clawbridge: session reset (${request.reason ?? "unknown"}) took effect after attempt ${answer.afterAttempt}`);
    }
    return;
  } catch (error) {
    // Thrown, not swallowed: core reports a failed reset hook with the harness's label.
    throw new Error(`clawbridge: session/reset (${request.reason ?? "unknown"}) failed: ${error.message}`);
  } finally {
    runtime.supervisor.release();
  }
}

/**
 * `withSessionDeletion` / `withSessionContextReset`: prepared outside core's session writer, the
 * commit recorded synchronously at core's commit edge (the bridge's state cannot change
 * synchronously), and the bridge told only once `run` resolved with the commit in place, so a
 * rolled-back or never-committed mutation leaves the native binding as it was.
 *
 * @template T
 * @param {object} runtime
 * @param {"session/delete" | "session/contextReset"} method
 * @param {{sessionId: string, sessionKey: string, agentId: string, previousSessionId?: string, assertCurrent: () => void}} params
 * @param {(mutation: {commit: () => void, rollback: () => void}) => Promise<T>} run
 * @returns {Promise<T>}
 */
async function withSessionChange(runtime, method, params, run) {
  params.assertCurrent?.();
  let committed = false;
  const result = await run({
    commit: () => {
      committed = true;
    },
    rollback: () => {
      committed = false;
    },
  });
  if (!committed || typeof params.sessionId !== "string" || !params.sessionId) return result;
  const request = { sessionId: params.sessionId };
  for (const key of ["sessionKey", "agentId", ...(method === "session/contextReset" ? ["previousSessionId"] : [])]) {
    if (typeof params[key] === "string" && params[key]) request[key] = params[key];
  }
  // Core's transaction has committed: failing here would not undo it, and the binding names a
  // session id core no longer uses, so a failure is reported, not thrown.
  try {
    const conn = await runtime.supervisor.connection();
    runtime.supervisor.hold();
    try {
      await conn.client.request(method, request, { timeoutMs: SESSION_CHANGE_TIMEOUT_MS });
    } finally {
      runtime.supervisor.release();
    }
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: ${method} for session ${params.sessionId} failed after OpenClaw committed it: ${error.message}`);
  }
  return result;
}

/**
 * One bridge event of the attempt: the facts the result is built from (facts.js), native retries
 * (counted and logged here, shown live as an `error` agent event), then OpenClaw's streaming and
 * lifecycle callbacks (progress.js).
 */
function onBridgeEvent(attempt, note) {
  const event = note?.event;
  if (event && typeof event.type === "string") {
    observeEvent(attempt.facts, event, attempt.logger);
    if (event.type === "modelRetry") noteModelRetry(attempt, event);
    if (event.type === "contextCompacted") noteAutoCompaction(attempt, event);
  }
  attempt.progress.onEvent(note);
}

/**
 * The native runtime compacted by itself: the run's `onAutoCompactionSucceeded` gets the count so
 * far, and the transcript an entry for it (compaction-entry.js; written before the attempt's
 * result, in the attempt's settlement).
 */
function noteAutoCompaction(attempt, event) {
  attempt.logger.info?.(`clawbridge: attempt ${attempt.attemptId}: the native runtime compacted its context`);
  const record = recordCompaction(attempt.runtimeOptions ?? {}, attempt.params, {
    harnessId: attempt.harnessId,
    itemId: typeof event.itemId === "string" && event.itemId ? event.itemId : undefined,
    trigger: "auto",
    tokensBefore: event.tokensBefore,
    tokensAfter: event.tokensAfter,
    runId: attempt.params.runId,
  }, attempt.logger);
  (attempt.pendingWrites ??= []).push(record);
  try {
    const out = attempt.params.onAutoCompactionSucceeded?.(attempt.facts.compactions);
    if (out && typeof out.catch === "function") out.catch(() => {});
  } catch (error) {
    attempt.logger.debug?.(`clawbridge: onAutoCompactionSucceeded failed: ${error?.message ?? error}`);
  }
}

/** The native runtime retries a failed model request itself; the host sees why the turn waits. */
function noteModelRetry(attempt, event) {
  attempt.modelRetries = (attempt.modelRetries ?? 0) + 1;
  attempt.logger.info?.(
    `clawbridge: attempt ${attempt.attemptId}: the model request failed and is retried` +
      `${event.attempt ? ` (retry ${event.attempt})` : ""}: ${event.message}`,
  );
  const p = attempt.params;
  const call = (fn, payload) => {
    try {
      const out = fn?.(payload);
      if (out && typeof out.catch === "function") out.catch(() => {});
    } catch (error) {
      attempt.logger.debug?.(`clawbridge: a progress callback failed: ${error?.message ?? error}`);
    }
  };
  call(p.onAgentEvent, {
    stream: "error",
    data: { reason: "model_retry", willRetry: true, message: event.message, attempt: event.attempt },
  });
  // The run is alive while the native side waits to retry: the lane must not read it as idle.
  call(p.onRunProgress, { reason: "model_retry", provider: p.provider, model: p.modelId, backend: attempt.harnessId });
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
