// @ts-check
// The attempt result's `settledTurnFinalizationContext`: the gate that lets a *failed* settled tool
// turn still reach `finalizeSettledTurn` (docs/peers/openclaw.md#side-work-and-the-context-engine).
// OpenClaw 2026.9.6's own runner sets it (`resolveSettledTurnFinalizationContext`) when the turn
// failed on its prompt with a transient transport failure, no visible answer was composed after the
// settled tool results, and the turn's snapshot holds a tool result. The SDK exports none of those
// helpers, so the rules are applied here, on the bridge's facts:
// - "a transient transport failure" is the bridge's terminal cause `providerTransport`: the native
//   runtime itself classified the failure as its connection to the provider failing or the
//   response stream breaking off (docs/host-protocol.md, the cause table). No message text is
//   matched: a crash (`backendExited`), a refusal (`backendError`), a provider's own error
//   (`native`), an abort and a timeout never qualify.
// - "no visible answer after the settled tools": core's `hasComposedVisibleAnswerAfterSettledTools`
//   over the same snapshot and `assistantTexts`, comparing trimmed text (core also strips reply
//   directives first; a text that is only a directive counts as an answer here, which keeps the
//   gate closed, never opens it wrongly).

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */

/**
 * The context for `result`, or `undefined` when the failed turn may not be finalized.
 *
 * @param {any} bridgeTerminal the bridge's `terminal` (untrusted wire data)
 * @param {{terminal: AttemptResult["terminal"], messagesSnapshot: any[], assistantTexts: string[]}} result
 * @returns {AttemptResult["settledTurnFinalizationContext"]}
 */
export function settledTurnFinalizationContext(bridgeTerminal, result) {
  if (result.terminal.kind !== "failed" || result.terminal.source !== "prompt") return undefined;
  if (bridgeTerminal?.kind !== "failed" || bridgeTerminal?.cause !== "providerTransport") return undefined;
  const messages = Array.isArray(result.messagesSnapshot) ? result.messagesSnapshot : [];
  if (hasComposedVisibleAnswerAfterSettledTools(messages, result.assistantTexts)) return undefined;
  if (!messages.some((m) => m?.role === "toolResult")) return undefined;
  return { source: "openclaw-transcript", messages: Object.freeze([...messages]) };
}

/**
 * Whether the turn composed a visible answer after its last tool result: an assistant message with
 * text after it, or an assistant text that is not one of the pre-tool messages' (commentary).
 *
 * @param {any[]} messages
 * @param {string[]} assistantTexts
 */
function hasComposedVisibleAnswerAfterSettledTools(messages, assistantTexts) {
  const latestUser = messages.findLastIndex((m) => m?.role === "user");
  const current = messages.slice(latestUser + 1);
  const lastToolResult = current.findLastIndex((m) => m?.role === "toolResult");
  const texts = assistantTexts.map((t) => (typeof t === "string" ? t.trim() : "")).filter((t) => t !== "");
  if (lastToolResult < 0) return texts.length > 0;
  if (current.slice(lastToolResult + 1).some((m) => assistantText(m) !== "")) return true;
  const preTool = new Set(current.slice(0, lastToolResult).map(assistantText));
  return texts.some((t) => !preTool.has(t));
}

/**
 * An assistant message's text blocks, joined and trimmed; `""` for any other message.
 *
 * @param {any} message
 * @returns {string}
 */
function assistantText(message) {
  if (message?.role !== "assistant") return "";
  if (typeof message.content === "string") return message.content.trim();
  if (!Array.isArray(message.content)) return "";
  return message.content
    .filter((/** @type {any} */ b) => b?.type === "text" && typeof b.text === "string")
    .map((/** @type {any} */ b) => b.text.trimEnd())
    .join("\n")
    .trim();
}
