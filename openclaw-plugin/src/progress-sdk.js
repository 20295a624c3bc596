// The OpenClaw SDK helpers the progress module uses, with stand-ins for hosts (and tests) without
// them. The stand-ins keep the callbacks' shapes; the real helpers add chunking, redaction and
// friendlier titles.

const FALLBACK_SDK = {
  EmbeddedBlockChunker: class WholeTextChunker {
    #buffer = "";
    #consumed = 0;
    append(text) {
      this.#buffer += text;
    }
    replace(text) {
      this.#buffer = text.slice(Math.min(this.#consumed, text.length));
      return true;
    }
    reset() {
      this.#buffer = "";
      this.#consumed = 0;
    }
    get consumedLength() {
      return this.#consumed;
    }
    hasBuffered() {
      return this.#buffer.length > 0;
    }
    drain({ force, emit }) {
      if (!force || !this.#buffer) return;
      const text = this.#buffer;
      this.#consumed += text.length;
      this.#buffer = "";
      const trimmed = text.trim();
      if (trimmed) emit(trimmed);
    }
  },
  formatToolAggregate: (toolName, metas) => (metas?.length ? `${toolName}: ${metas.join(", ")}` : toolName),
  inferToolMetaFromArgs: () => undefined,
  projectAgentToolActivity: ({ toolCallId, name, phase, meta, status }) => ({
    itemId: `tool:${toolCallId}`,
    toolCallId,
    name,
    kind: "tool",
    phase: phase === "result" ? "end" : phase,
    title: name,
    status: status ?? "running",
    ...(meta ? { meta } : {}),
  }),
  sanitizeToolArgs: (args) => args,
  sanitizeToolResult: (result) => result,
  emitAgentEvent: () => {},
};

/** The SDK helpers this module uses, taken from `sdk` where present. */
export function progressHelpers(sdk = {}) {
  const out = {};
  for (const [name, fallback] of Object.entries(FALLBACK_SDK)) {
    out[name] = typeof sdk?.[name] === "function" ? sdk[name] : fallback;
  }
  return out;
}
