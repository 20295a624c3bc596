// @ts-check
// The options `createToolSurface` gets: the same run context OpenClaw's embedded runner hands its
// own coding tools (who asked, in which channel and thread, under which model, with which
// delegation and media), so a tool the native agent calls behaves as it would in an OpenClaw run.
// The shared requester/channel part comes from the SDK's `buildEmbeddedAttemptToolRunContext`; the
// rest is read off the attempt params under the names the runner uses. Fields only the runner's
// own pipeline owns (Tool Search catalogs, code mode, computer use, skill caches) are left out:
// the host fills its defaults.

/**
 * Attempt params passed through under their own name, when set.
 * @type {readonly string[]}
 */
const PASSED_THROUGH = Object.freeze([
  "agentId",
  "agentDir",
  "config",
  "sessionId",
  "runId",
  "messageChannel",
  "messageProvider",
  "requireExplicitMessageTarget",
  "channelContext",
  "allowGatewaySubagentBinding",
  "conversationRecall",
  "oneShotCliRun",
  "preparedModelRuntime",
  "requireWorkspaceOnly",
  "delegationCapability",
  "disableMessageTool",
  "forceMessageTool",
  "enableHeartbeatTool",
  "forceHeartbeatTool",
  "onToolOutcome",
  "isTurnTainted",
  "allocateToolOutcomeOrdinal",
  "inputProvenance",
  "trustedInternalHandoff",
  "cronCreatorAuthorityUnavailableReason",
  "bootstrapUserProfileId",
]);

/**
 * @param {any} params the attempt params
 * @param {object} run what this attempt adds
 * @param {Function} [run.buildRunContext] `buildEmbeddedAttemptToolRunContext`, when the SDK has it
 * @param {Function} [run.resolveSpawnWorkspaceDir] `resolveAttemptSpawnWorkspaceDir`, when the SDK has it
 * @param {Function} [run.resolveModelAuthMode] `resolveModelAuthMode`, when the SDK has it
 * @param {AbortSignal} [run.signal] ends when the attempt does: tools stop with it
 * @param {(cleanup: (reason: string) => Promise<void>) => void} [run.registerRunCleanup] for tools
 *   that hold resources until the attempt ends
 * @param {object} [run.extra] further options (the question prompt)
 * @param {{warn?: (text: string) => void}} [run.logger]
 * @returns {Record<string, unknown>}
 */
export function toolSurfaceOptions(
  params,
  { buildRunContext, resolveSpawnWorkspaceDir, resolveModelAuthMode, signal, registerRunCleanup, extra, logger } = {},
) {
  const model = params?.model ?? {};
  /** @type {Record<string, unknown>} */
  const options = { ...runContext(params, buildRunContext, logger) };
  for (const key of PASSED_THROUGH) {
    if (params?.[key] !== undefined) options[key] = params[key];
  }
  Object.assign(
    options,
    defined({
      // Tool policy and sandbox scoping use the sandbox's session key where it differs; the run's
      // own key goes as runSessionKey, as the runner passes them.
      sessionKey: params?.sandboxSessionKey ?? params?.sessionKey,
      runSessionKey: (typeof params?.sessionKey === "string" && params.sessionKey.trim()) || params?.sessionId,
      workspaceDir: params?.workspaceDir,
      cwd: params?.cwd ?? params?.workspaceDir,
      modelProvider: params?.provider,
      modelId: params?.modelId,
      modelApi: model.api,
      modelBaseUrl: model.baseUrl,
      modelContextWindowTokens: params?.contextTokenBudget ?? model.contextWindow,
      modelHasVision: Array.isArray(model.input) ? model.input.includes("image") : undefined,
      modelCompat: model.compat && typeof model.compat === "object" ? model.compat : undefined,
      modelAuthMode: safely(() => resolveModelAuthMode?.(model.provider ?? params?.provider, params?.config, undefined, { workspaceDir: params?.workspaceDir }), logger),
      // Spawned subagents inherit the agent's workspace, which differs from the run's cwd when the
      // run works in a subfolder.
      spawnWorkspaceDir:
        params?.cwd && params?.workspaceDir && params.cwd !== params.workspaceDir
          ? params.workspaceDir
          : safely(() => resolveSpawnWorkspaceDir?.({ sandbox: params?.sandbox, resolvedWorkspace: params?.workspaceDir }), logger),
      authProfileStore: params?.toolAuthProfileStore ?? params?.authProfileStore,
      inboundEventKind: params?.currentInboundEventKind,
      // A one-shot CLI run keeps the session policy it started with; a gateway run follows updates.
      sessionConfigSource: params?.oneShotCliRun ? "pinned" : "runtime",
      webSearchEnabled: params?.toolOverrides?.webSearch !== false,
      exec: execOptions(params),
      abortSignal: signal,
      registerRunCleanup,
    }),
    extra ?? {},
  );
  return options;
}

/** How long an attempt's end waits for its tools' run cleanups. */
const RUN_CLEANUP_LIMIT_MS = 10_000;

/** Cleanups tools registered for this attempt, run once when it ends (failures only logged). */
export class RunCleanups {
  constructor() {
    /** @type {Array<(reason: string) => Promise<void>>} */
    this.cleanups = [];
  }

  /** @param {(reason: string) => Promise<void>} cleanup */
  register(cleanup) {
    if (typeof cleanup === "function") this.cleanups.push(cleanup);
  }

  /**
   * @param {string} reason
   * @param {{warn?: (text: string) => void}} [logger]
   */
  async run(reason, logger, limitMs = RUN_CLEANUP_LIMIT_MS) {
    const cleanups = this.cleanups.splice(0);
    if (cleanups.length === 0) return;
    const settled = Promise.allSettled(cleanups.map(async (cleanup) => cleanup(reason)));
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    // A cleanup that never settles must not hold the attempt's result back from OpenClaw.
    const late = new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), limitMs);
      timer.unref?.();
    });
    const results = await Promise.race([settled, late]);
    clearTimeout(timer);
    if (!results) {
      logger?.warn?.(`clawbridge: tools' run cleanups did not finish within ${limitMs} ms; the attempt ends without them`);
      return;
    }
    for (const result of results) {
      if (result.status === "rejected") {
        logger?.warn?.(`clawbridge: a tool's run cleanup failed: ${result.reason?.message ?? result.reason}`);
      }
    }
  }
}

/**
 * The SDK's shared requester/channel context, or nothing when the SDK lacks it or it throws.
 * @param {any} params
 * @param {Function | undefined} build
 * @param {{warn?: (text: string) => void}} [logger]
 */
function runContext(params, build, logger) {
  if (typeof build !== "function") return {};
  try {
    const context = build({ ...params });
    return context && typeof context === "object" ? defined(context) : {};
  } catch (error) {
    logger?.warn?.(`clawbridge: the tool run context could not be built: ${/** @type {any} */ (error)?.message ?? error}`);
    return {};
  }
}

/**
 * `compute()`'s value, or undefined (logged) when it throws: an SDK helper's failure costs one
 * option, never the tool surface.
 * @param {() => unknown} compute
 * @param {{warn?: (text: string) => void}} [logger]
 */
function safely(compute, logger) {
  try {
    return compute() ?? undefined;
  } catch (error) {
    logger?.warn?.(`clawbridge: a tool-surface option could not be computed: ${/** @type {any} */ (error)?.message ?? error}`);
    return undefined;
  }
}

/**
 * The exec tool's defaults, as the runner builds them: the run's overrides, the config, elevation.
 * @param {any} params
 */
function execOptions(params) {
  if (!params?.execOverrides && params?.bashElevated === undefined) return undefined;
  return defined({ ...params.execOverrides, config: params.config, elevated: params.bashElevated });
}

/**
 * `value` without its undefined members.
 * @param {Record<string, unknown>} value
 * @returns {Record<string, unknown>}
 */
function defined(value) {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
}
