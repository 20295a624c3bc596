// The attempt result's settledTurnFinalizationContext: set only when a settled tool turn failed on
// the native runtime's transport (cause providerTransport) with no visible answer composed after
// its tool results; never for a crash, a refusal, a provider error, an abort, a timeout, a visible
// answer or a turn without a tool result.

import assert from "node:assert/strict";
import test from "node:test";

import { toAttemptResult } from "../src/result.js";

const params = { sessionId: "s", prompt: "Run the check." };
const toolCall = {
  role: "assistant",
  content: [{ type: "toolCall", id: "call_1", name: "exec", arguments: { command: "true" } }],
  stopReason: "toolUse",
};
const toolResult = { role: "toolResult", toolCallId: "call_1", toolName: "exec", content: [{ type: "text", text: "ok" }], isError: false };
const transport = { kind: "failed", cause: "providerTransport", message: "stream disconnected before completion [{\"responseStreamDisconnected\":{}}]" };
const lifecycle = { startedCount: 1, completedCount: 1, activeCount: 0 };

/** The result for a bridge `terminal`, the turn's mirrored rows and its assistant texts. */
function resultOf(terminal, mirrored, assistantTexts = [], ctx = {}) {
  return toAttemptResult({ terminal, assistantTexts, itemLifecycle: lifecycle, modelResponded: true }, { params, mirrored, ...ctx });
}

test("settledTurnFinalizationContext: a transport failure after settled tools and no answer carries the snapshot", () => {
  const result = resultOf(transport, [toolCall, toolResult]);
  assert.equal(result.terminal.kind, "failed");
  const context = result.settledTurnFinalizationContext;
  assert.ok(context, "the gate is open");
  assert.equal(context.source, "openclaw-transcript");
  assert.deepEqual(context.messages, result.messagesSnapshot, "the turn's own snapshot: prompt, tool call, tool result");
  assert.deepEqual(
    context.messages.map((m) => m.role),
    ["user", "assistant", "toolResult"],
  );
  assert.ok(Object.isFrozen(context.messages), "frozen evidence, as core freezes it");
  // Pre-tool commentary is not an answer (core keeps it apart from a composed one).
  const commentary = { ...toolCall, content: [{ type: "text", text: "Checking." }, ...toolCall.content] };
  assert.ok(resultOf(transport, [commentary, toolResult], ["Checking."]).settledTurnFinalizationContext);
});

test("settledTurnFinalizationContext: never for a crash, a refusal, a provider error, an abort or a timeout", () => {
  const rows = [toolCall, toolResult];
  const cases = [
    { kind: "failed", cause: "backendExited", message: "codex went away: exit 1" },
    { kind: "failed", cause: "backendError", message: "thread/start refused" },
    { kind: "failed", cause: "native", message: "unexpected status 500 [internalServerError]" },
    // Core's own runner matches messages like this one; the bridge's cause decides here, not prose.
    { kind: "failed", cause: "native", message: "network error" },
    { kind: "failed", message: "an older bridge names no cause" },
    { kind: "aborted", cause: "cancelled", message: "user pressed stop" },
    { kind: "timeout", cause: "idleTimeout", message: "no progress" },
    { kind: "timeout", cause: "runBudget", message: "budget" },
    { kind: "ok", cause: "native" },
    // A cause on the wrong kind is not a transport failure of the turn.
    { kind: "aborted", cause: "providerTransport" },
  ];
  for (const terminal of cases) {
    assert.equal(resultOf(terminal, rows).settledTurnFinalizationContext, undefined, JSON.stringify(terminal));
  }
  // A transport failure the host aborted is an abort.
  assert.equal(resultOf({ ...transport, kind: "aborted" }, rows, [], { externallyAborted: true }).settledTurnFinalizationContext, undefined);
});

test("settledTurnFinalizationContext: never after a visible answer or without a tool result", () => {
  // An answer composed after the tool results, as a row or as an assistant text.
  const answer = { role: "assistant", content: [{ type: "text", text: "The check passed." }], stopReason: "stop" };
  assert.equal(resultOf(transport, [toolCall, toolResult, answer]).settledTurnFinalizationContext, undefined);
  assert.equal(resultOf(transport, [toolCall, toolResult], ["The check passed."]).settledTurnFinalizationContext, undefined);
  // No tool ran: nothing settled to finalize, with or without text.
  assert.equal(resultOf(transport, []).settledTurnFinalizationContext, undefined);
  assert.equal(resultOf(transport, [], ["partial"]).settledTurnFinalizationContext, undefined);
  // A tool call without its result is not settled.
  assert.equal(resultOf(transport, [toolCall]).settledTurnFinalizationContext, undefined);
  // Whitespace is not an answer.
  assert.ok(resultOf(transport, [toolCall, toolResult], ["  \n"]).settledTurnFinalizationContext);
});
