// Active-run injection: while an attempt runs on a harness that steers (`harness/list`
// `inputs.steering`), it is registered with OpenClaw as the session's active run
// (`setActiveEmbeddedRun`), so a message OpenClaw injects into the running run — a user typing
// while the agent works — reaches the native turn through `attempt/steer` instead of waiting for
// the next turn. The handle offers `messageInjectionV2`: the host's per-injection assertion is
// invoked right before the request leaves, the last point before the bridge's native dispatch.
//
// The same handle is the reply operation's backend (`replyOperation.attachBackend`, detached when
// the attempt ends), as the embedded runner attaches its own: the operation's stop (a user's
// /stop, a restart, a superseding turn) reaches the native turn through `cancel()` →
// `attempt/cancel`, and the handle carries the attempt's `toolAuthorityFingerprint`, the exact tool
// authority core bound for this concrete attempt, which core compares before it lets steered input
// join the run. A harness that cannot steer is still attached (it can be stopped), only never
// offered for injection.

/** How long one `attempt/steer` may take. */
const STEER_TIMEOUT_MS = 30_000;

/**
 * Registers `attempt` as the session's active run and as its reply operation's backend; returns
 * the function that unregisters both. `cancel(reason)` stops the attempt (harness.js: the same path
 * as the attempt's abort signal). The active-run registration is skipped when the SDK's registry
 * is missing or the harness cannot steer; the reply operation is attached whenever there is one.
 *
 * @param {any} runtime
 * @param {string} harnessId
 * @param {any} attempt
 * @param {any} conn
 * @param {(reason?: string) => void} [cancel]
 */
export function registerActiveRun(runtime, harnessId, attempt, conn, cancel = () => {}) {
  const { setActiveEmbeddedRun, clearActiveEmbeddedRun } = runtime.options;
  const params = attempt.params;
  const steers = runtime.supervisor.harnessInfo(harnessId)?.inputs?.steering === true;
  const operation = params.replyOperation;
  const attachable = typeof operation?.attachBackend === "function";
  const offered = steers && typeof setActiveEmbeddedRun === "function" && typeof params.sessionId === "string";
  if (!offered && !attachable) return () => {};
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
  const stop = (/** @type {unknown} */ reason) => {
    if (ended || attempt.signal.aborted) return;
    cancel(typeof reason === "string" ? reason : undefined);
  };
  const handle = {
    kind: "embedded",
    runId: params.runId,
    startedAtMs: Date.now(),
    // Read live, as the embedded runner's handle does: core binds it to this concrete attempt.
    get toolAuthorityFingerprint() {
      return typeof params.toolAuthorityFingerprint === "string" ? params.toolAuthorityFingerprint : undefined;
    },
    ...(steers ? { queueMessage: async (/** @type {string} */ text) => steer(text), messageInjectionV2: injection } : {}),
    isStreaming: () => !ended,
    isStopped: () => ended || attempt.signal.aborted,
    isAborted: () => attempt.signal.aborted,
    isAbortable: () => !ended && !attempt.signal.aborted,
    isCompacting: () => false,
    supportsQueueMessageImages: false,
    cancel: stop,
    abort: stop,
  };
  const sessionKey = params.sessionTarget?.sessionKey ?? params.sessionKey;
  const agentId = params.sessionTarget?.agentId ?? params.agentId;
  let attached = false;
  if (attachable) {
    try {
      operation.attachBackend(handle);
      attached = true;
    } catch (error) {
      attempt.logger.warn?.(`clawbridge: the run could not be attached to its reply operation: ${error?.message ?? error}`);
    }
  }
  let registered = false;
  if (offered) {
    try {
      setActiveEmbeddedRun(params.sessionId, handle, sessionKey, params.sessionFile, agentId);
      registered = true;
    } catch (error) {
      attempt.logger.warn?.(`clawbridge: the run could not be offered for steering: ${error?.message ?? error}`);
    }
  }
  return () => {
    ended = true;
    if (attached) {
      try {
        operation.detachBackend?.(handle);
      } catch (error) {
        attempt.logger.debug?.(`clawbridge: detaching from the reply operation failed: ${error?.message ?? error}`);
      }
    }
    if (registered) {
      try {
        clearActiveEmbeddedRun?.(params.sessionId, handle, sessionKey, params.sessionFile, "ended");
      } catch (error) {
        attempt.logger.debug?.(`clawbridge: clearing the active run failed: ${error?.message ?? error}`);
      }
    }
  };
}
