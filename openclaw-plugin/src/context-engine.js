// The OpenClaw context engine on a native harness (`contextEngineHostCapabilities`): before the
// prompt, the plugin asks the engine to assemble the turn's context (`assemble-before-prompt`,
// through the SDK's `assembleHarnessContextEngine`) and hands the result to the bridge as
// `attempt/run` `context` (docs/host-protocol.md, protocol version 2). With a `thread_bootstrap`
// projection the bridge injects it once per epoch (the epoch is part of the session binding's
// fingerprint, so the native thread is reused while the epoch holds and a new one is started,
// with the context, when it changes: `thread-bootstrap-projection`); otherwise on every turn.

/** What clawbridge's native harnesses do for a context engine (and nothing more). */
export const CONTEXT_ENGINE_HOST_CAPABILITIES = Object.freeze(
  /** @type {("assemble-before-prompt" | "thread-bootstrap-projection")[]} */ (["assemble-before-prompt", "thread-bootstrap-projection"]),
);

/** The most assembled context sent per turn, in UTF-16 code units (the rest is cut, and said so). */
export const MAX_CONTEXT_CHARS = 256 * 1024;

/**
 * The engine's assembled context for this attempt as `attempt/run` `context` (`{text, epoch?}`),
 * or undefined when no (non-legacy) engine runs or it assembled nothing. An engine that fails to
 * assemble is logged and the turn runs without its context, as the embedded runner does.
 *
 * @param {any} sdk the SDK helpers (`assembleHarnessContextEngine`)
 * @param {string} harnessId
 * @param {any} params the attempt params
 * @param {any} logger
 * @returns {Promise<{text: string, epoch?: string} | undefined>}
 */
export async function assembledContext(sdk, harnessId, params, logger) {
  const engine = params?.contextEngine;
  if (!engine || engine.info?.id === "legacy") return undefined;
  if (typeof sdk?.assembleHarnessContextEngine !== "function") {
    logger.warn?.(`clawbridge: context engine ${engine.info?.id}: this OpenClaw has no assembleHarnessContextEngine; the turn runs without its context`);
    return undefined;
  }
  let assembled;
  try {
    assembled = await sdk.assembleHarnessContextEngine({
      contextEngine: engine,
      contextEngineHostSupport: {
        id: `agent-harness:${harnessId}`,
        label: `agent harness "${harnessId}"`,
        capabilities: CONTEXT_ENGINE_HOST_CAPABILITIES,
      },
      harnessId,
      runtimeId: harnessId,
      providerId: params.provider,
      requestedModelId: params.modelId,
      modelId: String(params.modelId ?? ""),
      sessionId: String(params.sessionId ?? ""),
      sessionKey: params.sessionTarget?.sessionKey ?? params.sessionKey,
      agentId: params.contextEngineAgentId ?? params.sessionTarget?.agentId ?? params.agentId,
      // The native thread keeps the conversation itself; the engine projects from its own store.
      messages: [],
      ...(Number.isFinite(params.contextTokenBudget) ? { tokenBudget: params.contextTokenBudget } : {}),
      prompt: typeof params.prompt === "string" ? params.prompt : undefined,
    });
  } catch (error) {
    logger.warn?.(`clawbridge: context engine ${engine.info?.id} could not assemble the context: ${error?.message ?? error}; the turn runs without it`);
    return undefined;
  }
  const text = renderContext(engine.info?.id, assembled);
  if (!text) return undefined;
  const projection = assembled?.contextProjection;
  const epoch =
    projection?.mode === "thread_bootstrap" ? [projection.epoch, projection.fingerprint].find((e) => typeof e === "string" && e !== "") : undefined;
  return epoch ? { text, epoch } : { text };
}

/** The assembled context as one text block: the prompt addition, then each message by role. */
export function renderContext(engineId, assembled) {
  const parts = [];
  if (typeof assembled?.systemPromptAddition === "string" && assembled.systemPromptAddition.trim()) {
    parts.push(assembled.systemPromptAddition.trim());
  }
  for (const message of Array.isArray(assembled?.messages) ? assembled.messages : []) {
    const text = messageText(message);
    if (text) parts.push(`${typeof message?.role === "string" ? message.role : "context"}: ${text}`);
  }
  if (parts.length === 0) return "";
  let body = parts.join("\n\n");
  if (body.length > MAX_CONTEXT_CHARS) body = `${body.slice(0, MAX_CONTEXT_CHARS)}\n[… context cut at ${MAX_CONTEXT_CHARS} characters]`;
  return `<context source="context engine ${engineId ?? "unknown"}">\n${body}\n</context>`;
}

function messageText(message) {
  const content = message?.content;
  if (typeof content === "string") return content.trim();
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n")
    .trim();
}
