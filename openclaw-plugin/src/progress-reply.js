// The text side of an attempt's progress: assistant messages (partial replies, block replies
// through the SDK's chunker, the assistant agent event) and reasoning (the reasoning stream, its
// end, reasoning blocks, the thinking event). `progress.js` feeds it; see there for the rules.

export class ReplyProgress {
  /**
   * @param {object} out the owning AttemptProgress: `params`, `sdk` and its delivery helpers
   */
  constructor(out) {
    this.out = out;
    const p = out.params;
    this.params = p;
    this.reasoningMode = p.reasoningLevel ?? "off";
    const canShowReasoning = p.thinkLevel !== "off";
    this.includeReasoning = this.reasoningMode === "on" && canShowReasoning;
    this.streamReasoning =
      (p.streamReasoningInNonStreamModes === true ? this.reasoningMode !== "on" : this.reasoningMode === "stream") &&
      canShowReasoning &&
      typeof p.onReasoningStream === "function";
    this.shouldEmitPartialReplies = !(this.reasoningMode === "on" && !p.onBlockReply);
    // A caller expecting a silent reply (heartbeats) gets no visible text, reasoning or blocks; one
    // with no live consumer gets messages whole, at their end.
    this.silent = p.silentExpected === true;
    this.liveText = p.suppressLiveStreamOutput !== true;
    this.blockReplyBreak = p.blockReplyBreak ?? "text_end";
    this.chunker = new out.sdk.EmbeddedBlockChunker(p.blockReplyChunking);
    // The runner's assistant message index: 0 before the first message, +1 at each new one.
    this.messageIndex = 0;
    this.assistant = null; // { itemId, text, finalized }
    this.partial = { inFlight: false, pending: null };
    this.pendingBlockReplies = new Set();
    this.reasoning = null; // { itemId, text, lastStreamed }
    this.reasoningOpen = false;
    this.lastReasoningSent = undefined;
    this.assistantOutputStarted = false;
  }

  beginAssistantItem(itemId) {
    if (this.assistant?.itemId === itemId) return;
    if (this.assistant) void this.flushBlockReplies();
    this.messageIndex += 1;
    this.chunker.reset();
    this.assistant = { itemId, text: "", finalized: false };
    this.partial = { inFlight: false, pending: null };
    this.out.call("assistant message start", () => this.params.onAssistantMessageStart?.());
    if (!this.assistantOutputStarted) {
      this.assistantOutputStarted = true;
      this.out.phase("assistant_output_started");
    }
  }

  assistantDelta({ itemId, delta }) {
    if (typeof delta !== "string" || delta === "") return;
    this.endReasoning();
    this.beginAssistantItem(String(itemId ?? ""));
    const item = this.assistant;
    if (item.finalized || this.silent || !this.liveText) return;
    item.text += delta;
    this.partialReply({ text: item.text, delta });
    this.out.publish("assistant", { text: item.text, delta, itemId: item.itemId });
    if (!this.params.onBlockReply) return;
    this.chunker.append(delta);
    if (this.blockReplyBreak === "text_end" && this.params.blockReplyChunking) {
      this.chunker.drain({ force: false, emit: (chunk) => this.blockReply(chunk) });
    }
  }

  async assistantFinal({ itemId, text }) {
    if (typeof text !== "string") return;
    this.endReasoning();
    this.beginAssistantItem(String(itemId ?? ""));
    const item = this.assistant;
    if (item.finalized) return;
    const streamed = item.text;
    item.finalized = true;
    item.text = text;
    if (this.silent) return;
    if (text !== streamed) {
      // The final replaces the deltas (some may have been merged away): a continuation is a delta,
      // anything else replaces what the channel shows.
      const replace = !text.startsWith(streamed);
      const delta = replace ? "" : text.slice(streamed.length);
      if (this.liveText) this.partialReply(replace ? { text, delta: "", replace: true } : { text, delta });
      this.out.publish("assistant", { text, delta, ...(replace ? { replace: true } : {}), itemId: item.itemId });
    }
    if (!this.params.onBlockReply) return;
    if (text.startsWith(streamed)) this.chunker.append(text.slice(streamed.length));
    else this.chunker.replace(text, 0, text.startsWith(streamed.slice(0, this.chunker.consumedLength)));
    const flushed = this.flushBlockReplies();
    if (this.blockReplyBreak === "message_end" && this.params.onBlockReplyFlush) {
      await flushed;
      await this.out.awaitCall("block reply flush", () => this.params.onBlockReplyFlush({ reason: "message_end" }));
    }
  }

  /** `onPartialReply`, one call in flight at a time; what arrives meanwhile merges into one. */
  partialReply(payload) {
    if (!this.shouldEmitPartialReplies || typeof this.params.onPartialReply !== "function") return;
    const state = this.partial;
    if (state.inFlight) {
      const held = state.pending;
      state.pending =
        held && !payload.replace
          ? { ...payload, delta: held.delta + payload.delta, ...(held.replace ? { replace: true } : {}) }
          : payload;
      return;
    }
    const send = (next) => {
      state.inFlight = true;
      const settled = () => {
        state.inFlight = false;
        if (this.partial !== state || !state.pending) return;
        const queued = state.pending;
        state.pending = null;
        send(queued);
      };
      this.out.call("assistant partial reply", () => this.params.onPartialReply(next), settled);
    };
    send(payload);
  }

  /** One block-reply chunk to the channel, tagged with its assistant message. */
  blockReply(text, extra = {}) {
    if (!text || !this.params.onBlockReply) return;
    const payload = { text, ...extra };
    const context = { assistantMessageIndex: this.messageIndex };
    const task = this.out.callAsync("block reply", () => this.params.onBlockReply(payload, context));
    if (task) {
      this.pendingBlockReplies.add(task);
      void task.finally(() => this.pendingBlockReplies.delete(task));
    }
  }

  /** Everything the chunker holds as block replies, then every block reply still being sent. */
  async flushBlockReplies() {
    if (!this.params.onBlockReply) return;
    if (this.chunker.hasBuffered()) this.chunker.drain({ force: true, emit: (chunk) => this.blockReply(chunk) });
    while (this.pendingBlockReplies.size > 0) await Promise.allSettled([...this.pendingBlockReplies]);
  }

  // --- reasoning -------------------------------------------------------------------------------

  reasoningDelta({ itemId, delta }) {
    if (typeof delta !== "string" || delta === "") return;
    const item = this.reasoningItem(String(itemId ?? ""));
    item.text += delta;
    this.reasoningOpen = true;
    this.streamReasoningText(item, item.text);
  }

  reasoningFinal({ itemId, text }) {
    if (typeof text !== "string") return;
    const item = this.reasoningItem(String(itemId ?? ""));
    item.text = text;
    this.reasoningOpen = true;
    this.streamReasoningText(item, text);
    const trimmed = text.trim();
    if (!this.silent && this.includeReasoning && this.params.onBlockReply && trimmed && trimmed !== this.lastReasoningSent) {
      this.lastReasoningSent = trimmed;
      this.blockReply(trimmed, { isReasoning: true });
    }
    this.endReasoning();
  }

  reasoningItem(itemId) {
    if (this.reasoning?.itemId !== itemId) this.reasoning = { itemId, text: "", lastStreamed: "" };
    return this.reasoning;
  }

  streamReasoningText(item, text) {
    if (this.silent) return;
    const trimmed = text.trim();
    if (!trimmed || trimmed === item.lastStreamed) return;
    const prior = item.lastStreamed;
    item.lastStreamed = trimmed;
    const delta = trimmed.startsWith(prior) ? trimmed.slice(prior.length) : trimmed;
    // The runner publishes thinking on the agent event bus only, not through onAgentEvent.
    this.out.publish("thinking", { text: trimmed, delta }, { callback: false });
    if (this.streamReasoning) {
      const payload = { text: trimmed, ...(this.reasoningMode === "stream" ? {} : { requiresReasoningProgressOptIn: true }) };
      this.out.call("reasoning stream", () => this.params.onReasoningStream(payload));
    }
  }

  endReasoning() {
    if (!this.reasoningOpen) return;
    this.reasoningOpen = false;
    this.out.call("reasoning end", () => this.params.onReasoningEnd?.());
  }
}
