// The people side of an attempt: where OpenClaw's own question tools (`ask_user`, `secrets`) show
// their prompt, the native agent's runtime questions (`host/userInput/request`) asked through
// OpenClaw's gateway question helper, and the async context each attempt's host requests run in.

import { AsyncLocalStorage, AsyncResource } from "node:async_hooks";

import { ErrorCodes, RpcReplyError } from "./rpc-client.js";

/** The most questions one gateway question record holds (OpenClaw's `question.request` schema). */
const MAX_QUESTIONS = 3;
/** The question ids a gateway question record accepts (OpenClaw's `question.request` schema). */
const GATEWAY_QUESTION_ID = /^[a-z][a-z0-9_]*$/;
/** How long a question may wait for a person when the bridge names no deadline. */
const DEFAULT_QUESTION_TIMEOUT_MS = 300_000;

/**
 * A function that runs `fn` in the async context of the caller of `captureContext()`.
 *
 * The bridge's requests arrive on its stdout reader, which runs in the async context of whichever
 * attempt started the (shared) bridge. OpenClaw binds a gateway client's authority to the async
 * context of that client's run, so a host request handled in the reader's context acts with the
 * authority of the *first* attempt, and fails once that client disconnects. Each attempt therefore
 * captures its own context when it starts and runs its host requests inside it.
 */
export function captureContext() {
  if (typeof AsyncLocalStorage.snapshot === "function") return AsyncLocalStorage.snapshot();
  const resource = new AsyncResource("clawbridge.attempt");
  return (fn, ...args) => resource.runInAsyncScope(fn, undefined, ...args);
}

/**
 * The `questionPrompt` for `createToolSurface`: how a blocking OpenClaw question tool shows its
 * prompt in this run. clawbridge dispatches the tools itself (not through OpenClaw's embedded tool
 * lifecycle), so without it `ask_user` registers its question but nobody sees it.
 * `undefined` when the run has no way to show a reply.
 */
export function questionPromptFor(params) {
  const send = typeof params?.onToolResult === "function"
    ? params.onToolResult
    : typeof params?.onBlockReply === "function"
      ? params.onBlockReply
      : undefined;
  if (!send) return undefined;
  const messageChannel = typeof params.messageChannel === "string" && params.messageChannel ? params.messageChannel : undefined;
  return {
    send: (payload) => send(payload),
    ...(messageChannel ? { messageChannel } : {}),
  };
}

/**
 * `host/userInput/request`: the native agent's questions through OpenClaw's gateway question
 * helper (`runAgentHarnessGatewayQuestion`), which registers a gateway question, shows the prompt
 * in the run's conversation and waits for a person (a channel reply, the Control UI, or
 * `question.resolve` on the gateway). Anything but an answer is an error whose message says that
 * no person answered and why; the bridge passes that to the agent as the answer.
 */
export async function askUser(attempt, params, askGatewayQuestion) {
  if (typeof askGatewayQuestion !== "function") {
    throw new RpcReplyError(ErrorCodes.capabilityUnavailable, "no person can be reached: this OpenClaw offers no question surface");
  }
  const p = attempt.params;
  const sessionKey = p.sessionTarget?.sessionKey ?? p.sessionKey;
  if (typeof sessionKey !== "string" || !sessionKey) {
    throw new RpcReplyError(ErrorCodes.capabilityUnavailable, "no person can be reached: the run has no session to ask in");
  }
  const { questions, originalIds } = gatewayQuestions(params?.questions);
  if (questions.length === 0) return { answers: {} };
  if (questions.length > MAX_QUESTIONS) {
    throw new RpcReplyError(ErrorCodes.invalidParams, `at most ${MAX_QUESTIONS} questions can be asked at once, not ${questions.length}`);
  }
  const timeoutMs = Number.isFinite(params?.timeoutMs) && params.timeoutMs > 0 ? Math.floor(params.timeoutMs) : DEFAULT_QUESTION_TIMEOUT_MS;
  const agentId = p.sessionTarget?.agentId ?? p.agentId;
  let outcome;
  try {
    outcome = await askGatewayQuestion({
      questions,
      sessionKey,
      ...(typeof agentId === "string" && agentId ? { agentId } : {}),
      ...(typeof p.runId === "string" && p.runId ? { runId: p.runId } : {}),
      timeoutMs,
      // The original attempt params: the helper binds the question to their host capability.
      delivery: p,
      signal: attempt.signal,
    });
  } catch (error) {
    throw new RpcReplyError(
      ErrorCodes.capabilityUnavailable,
      `no person could be reached to answer: ${error?.message ?? error}`,
    );
  }
  if (outcome?.status !== "answered") {
    const why = { cancelled: "the question was cancelled", expired: "nobody answered in time", pending: "nobody answered in time" };
    throw new RpcReplyError(
      ErrorCodes.capabilityUnavailable,
      `no person answered: ${why[outcome?.status] ?? `the question ended as ${outcome?.status ?? "nothing"}`}`,
    );
  }
  const answers = {};
  for (const [id, list] of Object.entries(outcome.answers?.answers ?? {})) {
    if (Array.isArray(list)) answers[originalIds.get(id) ?? id] = { answers: list.filter((a) => typeof a === "string") };
  }
  return { answers };
}

/**
 * The bridge's questions in the helper's shape (`AgentHarnessUserInputQuestion`), and the bridge's
 * id of each by the id it is asked under: the gateway takes only snake_case ids (Claude Code keys
 * its questions by their text), so other ids are asked as `question_<n>` and mapped back.
 */
function gatewayQuestions(questions) {
  const originalIds = new Map();
  if (!Array.isArray(questions)) return { questions: [], originalIds };
  const asked = questions
    .filter((q) => q && typeof q.id === "string" && q.id)
    .map((q, index) => {
      const id = GATEWAY_QUESTION_ID.test(q.id) && q.id.length <= 64 ? q.id : `question_${index + 1}`;
      originalIds.set(id, q.id);
      const options = Array.isArray(q.options)
        ? q.options
            .filter((o) => typeof o?.label === "string" && o.label)
            .map((o) => ({ label: o.label, ...(typeof o.description === "string" && o.description ? { description: o.description } : {}) }))
        : [];
      return {
        id,
        header: typeof q.header === "string" && q.header ? q.header : "Question",
        question: typeof q.question === "string" && q.question ? q.question : q.header ?? q.id,
        ...(q.isOther === true ? { isOther: true } : {}),
        ...(q.isSecret === true ? { isSecret: true } : {}),
        ...(options.length > 0 ? { options } : {}),
      };
    });
  return { questions: asked, originalIds };
}
