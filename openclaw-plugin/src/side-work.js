// Side work of a session on the native runtime: `runIsolatedCompletionV2` (session titles,
// conversation labels, progress narration) and `runSideQuestion` (`/btw`). Each is one
// `attempt/run` with `isolation` (docs/host-protocol.md, protocol version 2): the bridge runs it
// in an ephemeral native session the native side never stores, lent no host tool, and it neither
// reads nor writes the session's binding (a side question reads it only to fork an ephemeral copy)
// nor mirrors a transcript row. Nothing of it reaches the user's thread or transcript. A fresh
// session has no tools at all; a Codex fork keeps the definitions of the source thread's tools
// (codex 0.169's `thread/fork` takes no tool list), and a call to a host tool there is refused
// (docs/peers/codex.md#side-work).

import { routeAuth } from "./route-auth.js";
import { toUsage } from "./result.js";
import { readHistory } from "./history.js";
import { appendTranscriptGroup, transcriptApiOf } from "./transcript.js";

/** What each isolation is for, in messages. */
const SIDE_WORK_NAMES = { fresh: "isolated completion", fork: "side question", settle: "settled-turn finalization" };
/** How long past the completion's own budget its answer may take (the bridge's wind-down). */
const GRACE_MS = 30_000;
/** A side question without a budget of its own gets this one. */
const SIDE_QUESTION_TIMEOUT_MS = 120_000;

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessV2} AgentHarnessV2 */
/** @typedef {Awaited<ReturnType<NonNullable<AgentHarnessV2["runIsolatedCompletionV2"]>>>} IsolatedCompletionResult */
/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessSideQuestionResult} SideQuestionResult */
/** @typedef {Awaited<ReturnType<NonNullable<AgentHarnessV2["finalizeSettledTurn"]>>>} SettledTurnFinalizationResult */

let sideCounter = 0;

/** A routing id for one piece of side work, unique on the connection. */
function sideId(kind) {
  sideCounter += 1;
  return `${kind}:${process.pid}:${Date.now().toString(36)}:${sideCounter}`;
}

/**
 * `runIsolatedCompletionV2`: one fresh prompt-only completion with a literal zero-tool surface.
 * Fails (throws) when the native runtime did not answer with text, as core expects.
 *
 * @param {ReturnType<import("./harness.js").createRuntime>} runtime
 * @param {string} harnessId
 * @param {any} params `AgentHarnessIsolatedCompletionParamsV2`
 * @param {"host" | "harness"} authMode
 * @returns {Promise<IsolatedCompletionResult>}
 */
export async function runIsolatedCompletion(runtime, harnessId, params, authMode) {
  params?.assertCurrent?.();
  const attemptId = sideId("isolated");
  const run = {
    attemptId,
    harnessId,
    // A session of its own: nothing bound to the user's session is read or written.
    sessionId: attemptId,
    prompt: String(params?.prompt ?? ""),
    workspaceDir: String(params?.workspaceDir ?? ""),
    provider: String(params?.provider ?? ""),
    modelId: String(params?.modelId ?? ""),
    disableTools: true,
    // A tool-less internal completion: no project docs of the native runtime's own (bootstrap.js).
    skipNativeProjectDocs: true,
    isolation: "fresh",
  };
  if (typeof params?.systemPrompt === "string" && params.systemPrompt) run.extraSystemPrompt = params.systemPrompt;
  if (typeof params?.thinkLevel === "string" && params.thinkLevel) run.thinkLevel = params.thinkLevel;
  if (Number.isFinite(params?.timeoutMs) && params.timeoutMs > 0) run.timeoutMs = Math.floor(params.timeoutMs);
  const authorization = params?.authorization;
  if (authMode === "host") {
    // Only what OpenClaw prepared for this call: its exact model route and credential.
    const prepared = authorization?.owner === "host" ? { model: authorization.model, resolvedApiKey: authorization.auth?.apiKey } : {};
    run.auth = (await routeAuth(prepared)) ?? {};
  }
  const response = await runSide(runtime, run, params?.abortSignal);
  params?.assertCurrent?.();
  const text = answerText(response, harnessId, "isolated completion");
  const usage = toUsage(response?.usage);
  return /** @type {IsolatedCompletionResult} */ ({
    assistant: {
      role: "assistant",
      content: [{ type: "text", text }],
      api: params?.authorization?.model?.api ?? "openai-responses",
      provider: run.provider,
      model: run.modelId,
      usage: {
        input: usage?.input ?? 0,
        output: usage?.output ?? 0,
        cacheRead: usage?.cacheRead ?? 0,
        cacheWrite: usage?.cacheWrite ?? 0,
        totalTokens: usage?.total ?? 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: Date.now(),
    },
  });
}

/**
 * `runSideQuestion` (`/btw`): the question answered on an ephemeral copy of the session's native
 * thread (it sees the conversation so far; the thread itself and the transcript stay as they were),
 * or on a fresh ephemeral session when the session has no native thread yet.
 *
 * @param {ReturnType<import("./harness.js").createRuntime>} runtime
 * @param {string} harnessId
 * @param {any} params `AgentHarnessSideQuestionParamsV2`
 * @param {"host" | "harness"} authMode
 * @returns {Promise<SideQuestionResult>}
 */
export async function runSideQuestion(runtime, harnessId, params, authMode) {
  const attemptId = sideId("btw");
  const run = {
    attemptId,
    harnessId,
    sessionId: String(params?.sessionId ?? attemptId),
    prompt: String(params?.question ?? ""),
    workspaceDir: String(params?.workspaceDir ?? ""),
    provider: String(params?.provider ?? ""),
    modelId: String(params?.model ?? ""),
    disableTools: true,
    isolation: "fork",
    timeoutMs: SIDE_QUESTION_TIMEOUT_MS,
  };
  if (typeof params?.sessionKey === "string" && params.sessionKey) run.sessionKey = params.sessionKey;
  if (typeof params?.agentId === "string" && params.agentId) run.agentId = params.agentId;
  if (typeof params?.resolvedThinkLevel === "string" && params.resolvedThinkLevel) run.thinkLevel = params.resolvedThinkLevel;
  if (authMode === "host") {
    const prepared = params?.preparedRuntimeAuth ?? {};
    run.auth =
      (await routeAuth({
        model: params?.runtimeModel,
        provider: params?.provider,
        resolvedApiKey: prepared.resolvedApiKey,
        authStorage: prepared.authStorage,
      })) ?? {};
  }
  const response = await runSide(runtime, run, params?.opts?.abortSignal);
  const text = answerText(response, harnessId, "side question");
  const usage = toUsage(response?.usage);
  return usage ? { text, usage } : { text };
}

/**
 * `finalizeSettledTurn`: core calls it (under zero OpenClaw tools) when a turn's tool calls all
 * settled but the model ended without a visible answer; its `attempt.prompt` asks for that answer
 * without repeating completed work. The answer comes from a fresh, ephemeral, tool-less native
 * session seeded with the session's transcript (`isolation: "settle"`, protocol version 3): the
 * model sees the settled tool calls and their results and has no tool to repeat or extend them
 * with, and the user's native thread is neither extended nor replaced. Not a copy of the native
 * thread: Codex's `thread/fork` keeps the source thread's tools. Without a readable transcript the
 * bridge refuses the run (fail closed: the answer would not know the work it sums up), and core
 * falls back to its own notice. The answer is stored in the transcript here, as the plugin stores
 * every row of a clawbridge turn, under `clawbridge:<runId>:settled-final`, and the result says so
 * (`assistantTranscriptOwned`), so core neither writes nor duplicates it.
 *
 * @param {ReturnType<import("./harness.js").createRuntime>} runtime
 * @param {string} harnessId
 * @param {any} params `AgentHarnessSettledTurnFinalizationParams`
 * @param {"host" | "harness"} authMode
 * @returns {Promise<SettledTurnFinalizationResult>}
 */
export async function finalizeSettledTurn(runtime, harnessId, params, authMode) {
  const attempt = params?.attempt ?? {};
  const sessionId = typeof attempt.sessionId === "string" ? attempt.sessionId : "";
  if (!sessionId) throw new Error(`clawbridge ${harnessId}: a settled turn without a session cannot be finalized`);
  const run = {
    attemptId: sideId("settle"),
    harnessId,
    sessionId,
    prompt: String(attempt.prompt ?? ""),
    workspaceDir: String(attempt.workspaceDir ?? ""),
    provider: String(attempt.provider ?? ""),
    modelId: String(attempt.modelId ?? ""),
    disableTools: true,
    isolation: "settle",
  };
  const sessionKey = attempt.sessionTarget?.sessionKey ?? attempt.sessionKey;
  if (typeof sessionKey === "string" && sessionKey) run.sessionKey = sessionKey;
  if (typeof attempt.agentId === "string" && attempt.agentId) run.agentId = attempt.agentId;
  if (typeof attempt.runId === "string" && attempt.runId) run.runId = attempt.runId;
  if (typeof attempt.thinkLevel === "string" && attempt.thinkLevel) run.thinkLevel = attempt.thinkLevel;
  run.timeoutMs = Number.isFinite(attempt.timeoutMs) && attempt.timeoutMs > 0 ? Math.floor(attempt.timeoutMs) : SIDE_QUESTION_TIMEOUT_MS;
  if (authMode === "host") run.auth = (await routeAuth(attempt)) ?? {};
  // The transcript, with the settled tool calls and their results: what the answer is made from.
  // Without it the bridge refuses the run.
  const history = await readHistory(attempt, runtime.options.sdk, runtime.logger);
  if (history) run.history = history;
  const response = await runSide(runtime, run, attempt.abortSignal);
  const text = answerText(response, harnessId, "settled-turn finalization");
  const usage = toUsage(response?.usage);
  const assistant = assistantMessage(text, attempt?.model?.api, run.provider, run.modelId, usage);
  /** @type {SettledTurnFinalizationResult} */
  const result = { assistant };
  if (usage) result.usage = usage;
  const key = text ? await storeAnswer(runtime, attempt, assistant) : undefined;
  if (key) {
    result.assistantTranscriptOwned = true;
    result.assistantTranscriptIdempotencyKey = key;
  }
  return result;
}

/**
 * Stores the finalization's answer as the turn's assistant row; its idempotency key, or undefined
 * when nothing was stored (a detached run, no transcript API, the store refused it), so core
 * keeps the row to itself.
 *
 * @param {ReturnType<import("./harness.js").createRuntime>} runtime
 * @param {any} attempt the finalization's attempt params
 * @param {any} assistant
 * @returns {Promise<string | undefined>}
 */
async function storeAnswer(runtime, attempt, assistant) {
  if (attempt.sessionPersistence === "detached" || typeof attempt.runId !== "string" || !attempt.runId) return undefined;
  const key = `clawbridge:${attempt.runId}:settled-final`;
  try {
    const { entries } = await appendTranscriptGroup(
      { params: attempt, mirrored: [], logger: runtime.logger },
      { messages: [{ ...assistant, idempotencyKey: key }] },
      transcriptApiOf(runtime.options),
    );
    return entries[0]?.appended ? key : undefined;
  } catch (error) {
    runtime.logger.warn?.(`clawbridge: the settled turn's answer was not stored by the plugin: ${error instanceof Error ? error.message : error}`);
    return undefined;
  }
}

/** An assistant message of side work, in the transcript's shape. */
function assistantMessage(text, api, provider, model, usage) {
  return {
    role: /** @type {const} */ ("assistant"),
    content: [{ type: /** @type {const} */ ("text"), text }],
    api: typeof api === "string" && api ? api : "openai-responses",
    provider,
    model,
    usage: {
      input: usage?.input ?? 0,
      output: usage?.output ?? 0,
      cacheRead: usage?.cacheRead ?? 0,
      cacheWrite: usage?.cacheWrite ?? 0,
      totalTokens: usage?.total ?? 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: /** @type {const} */ ("stop"),
    timestamp: Date.now(),
  };
}

/** One isolated `attempt/run`, cancelled when `signal` aborts. */
async function runSide(runtime, run, signal) {
  const { supervisor, logger } = runtime;
  if (signal?.aborted) throw new Error(`clawbridge ${run.harnessId}: the ${SIDE_WORK_NAMES[run.isolation] ?? "side work"} was aborted before it started`);
  supervisor.hold();
  let onAbort;
  try {
    const conn = await supervisor.connection();
    onAbort = () => {
      conn.client.request("attempt/cancel", { attemptId: run.attemptId, reason: "aborted by the host" }).catch((error) => {
        logger.warn?.(`clawbridge: attempt/cancel of ${run.attemptId} failed: ${error?.message ?? error}`);
      });
    };
    signal?.addEventListener?.("abort", onAbort, { once: true });
    const timeoutMs = run.timeoutMs ? run.timeoutMs + GRACE_MS : undefined;
    return await conn.client.request("attempt/run", run, timeoutMs ? { timeoutMs } : undefined);
  } finally {
    signal?.removeEventListener?.("abort", onAbort);
    supervisor.release();
  }
}

/** The answer's text; a failed, aborted or empty-handed run is an error naming why. */
function answerText(response, harnessId, what) {
  const terminal = response?.terminal;
  if (terminal?.kind !== "ok") {
    const why = terminal?.message ? `: ${terminal.message}` : "";
    throw new Error(`clawbridge ${harnessId}: the ${what} ended ${terminal?.kind ?? "without a result"}${why}`);
  }
  const texts = Array.isArray(response?.assistantTexts) ? response.assistantTexts.filter((t) => typeof t === "string") : [];
  return texts.join("\n\n").trim();
}
