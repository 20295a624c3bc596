// Active-run injection: while an attempt runs on a harness that steers (`harness/list`
// `inputs.steering`), it is registered with OpenClaw as the session's active run
// (`setActiveEmbeddedRun`), so a message OpenClaw injects into the running run — a user typing
// while the agent works — reaches the native turn through `attempt/steer` instead of waiting for
// the next turn. The handle offers `messageInjectionV2`: the host's per-injection assertion is
// invoked right before the request leaves, the last point before the bridge's native dispatch.

/** How long one `attempt/steer` may take. */
const STEER_TIMEOUT_MS = 30_000;

/**
 * Registers `attempt` as the session's active run; returns the function that unregisters it.
 * A no-op (returning a no-op) when the SDK's registry is missing or the harness cannot steer.
 */
export function registerActiveRun(runtime, harnessId, attempt, conn) {
  const { setActiveEmbeddedRun, clearActiveEmbeddedRun } = runtime.options;
  const params = attempt.params;
  const steers = runtime.supervisor.harnessInfo(harnessId)?.inputs?.steering === true;
  if (!steers || typeof setActiveEmbeddedRun !== "function" || typeof params.sessionId !== "string") return () => {};
  let ended = false;
  const steer = async (text) => {
    if (ended) throw new Error(`clawbridge ${harnessId}: the attempt already ended`);
    const answer = await conn.client.request(
      "attempt/steer",
      { attemptId: attempt.attemptId, text: String(text ?? "") },
      { timeoutMs: STEER_TIMEOUT_MS },
    );
    if (answer?.status !== "accepted") {
      // Not delivered: the host must not count it as part of this run.
      throw new Error(`clawbridge ${harnessId}: the running turn did not take the message (${answer?.status}${answer?.message ? `: ${answer.message}` : ""})`);
    }
  };
  const injection = {
    version: 2,
    isAvailable: () => !ended && !attempt.signal.aborted,
    queueMessage: async (text, _options, assertCurrent, _authorityKind) => {
      if (typeof assertCurrent !== "function") throw new Error("clawbridge: a V2 injection needs its assertion");
      assertCurrent();
      await steer(text);
    },
  };
  const handle = {
    kind: "embedded",
    runId: params.runId,
    startedAtMs: Date.now(),
    queueMessage: async (text) => steer(text),
    messageInjectionV2: injection,
    isStreaming: () => !ended,
    isStopped: () => ended || attempt.signal.aborted,
    isAborted: () => attempt.signal.aborted,
    isCompacting: () => false,
    supportsQueueMessageImages: false,
  };
  const sessionKey = params.sessionTarget?.sessionKey ?? params.sessionKey;
  const agentId = params.sessionTarget?.agentId ?? params.agentId;
  try {
    setActiveEmbeddedRun(params.sessionId, handle, sessionKey, params.sessionFile, agentId);
  } catch (error) {
    attempt.logger.warn?.(`clawbridge: the run could not be offered for steering: ${error?.message ?? error}`);
    return () => {};
  }
  return () => {
    ended = true;
    try {
      clearActiveEmbeddedRun?.(params.sessionId, handle, sessionKey, params.sessionFile, "ended");
    } catch (error) {
      attempt.logger.debug?.(`clawbridge: clearing the active run failed: ${error?.message ?? error}`);
    }
  };
}
