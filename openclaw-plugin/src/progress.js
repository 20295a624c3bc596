// One attempt's streaming and lifecycle callbacks: the bridge's `attempt/event` notifications, in
// order, become the calls OpenClaw's own embedded runner makes for the same moments (partial and
// block replies, reasoning, tool summaries and output, item/tool/command/plan/lifecycle agent
// events, execution phases, deadlines, timeout and abort). docs/peers/openclaw.md#streaming-and-lifecycle-callbacks
// lists each callback, its payload and when the runner calls it; this module follows that page.
//
// Callbacks are best effort: one that throws or rejects is logged and never fails the attempt.
// Only the calls the runner itself awaits are awaited (block replies before a tool starts, the
// message-end and terminal flushes, the tool stream boundary), so a slow channel delays what it
// must and nothing else. Every callback runs in the async context of the attempt that created
// this object, not in that of whichever attempt's bridge connection delivered the event.

import { AsyncResource } from "node:async_hooks";

/** Live command output kept per call, like the runner's live exec output (longer is cut). */
const LIVE_OUTPUT_MAX_CHARS = 8000;
/** The runner refreshes live command output at most this often per call. */
const LIVE_OUTPUT_MIN_INTERVAL_MS = 250;
/** Events waiting behind a slow awaited callback; deltas merge first, then further deltas drop. */
const MAX_QUEUED_EVENTS = 4096;
/** The most text one merged delta may hold while waiting (the bridge's own bound). */
const MAX_QUEUED_DELTA_CHARS = 1024 * 1024;
/** Host tool results kept for their `toolFinished` (more in flight at once is not plausible). */
const MAX_HOST_RESULTS = 256;
/** A budget at or above this is "no deadline" for OpenClaw's lane (the runner's threshold). */
const UNLIMITED_TIMEOUT_MS = 2_147_000_000;

const DELTA_TYPES = new Set(["assistantDelta", "reasoningDelta", "toolOutputDelta"]);
/** Events whose loss a later one repairs (a final, the next plan), so a full queue drops them. */
const DROPPABLE_TYPES = new Set([...DELTA_TYPES, "plan"]);
/**
 * The events with a callback. `usage`: the host publishes usage itself (from reportOutputTokens),
 * a second event would double it. `turnTerminal`: the lifecycle ends with the result (`finish`).
 */
const HANDLED_TYPES = new Set([
  ...DELTA_TYPES,
  "turnStarted",
  "assistantFinal",
  "reasoningFinal",
  "plan",
  "toolStarted",
  "toolFinished",
]);

/**
 * Stand-ins for the SDK helpers on hosts that lack them (and for tests without OpenClaw). They keep
 * the callbacks' shapes; the real helpers add chunking, redaction and friendlier titles.
 */
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

/** OpenClaw's plan step statuses for the bridge's. */
const PLAN_STATUS = { pending: "pending", inProgress: "in_progress", completed: "completed" };

export class AttemptProgress {
  /**
   * @param {object} options
   * @param {object} options.params the attempt params (the callbacks live there)
   * @param {string} options.harnessId
   * @param {object} [options.logger]
   * @param {object} [options.sdk] SDK helpers (`progressHelpers`)
   * @param {() => number} [options.now] tests only
   */
  constructor({ params, harnessId, logger, sdk, now }) {
    this.params = params ?? {};
    this.harnessId = harnessId;
    this.logger = logger ?? console;
    this.sdk = progressHelpers(sdk);
    this.now = now ?? Date.now;
    const p = this.params;
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
    this.markdown = (p.toolResultFormat ?? "markdown") === "markdown";
    this.chunker = new this.sdk.EmbeddedBlockChunker(p.blockReplyChunking);
    this.scope = new AsyncResource("clawbridge.AttemptProgress");

    this.queue = [];
    this.draining = null;
    this.lastSeq = -1;
    // The runner's assistant message index: 0 before the first message, +1 at each new one.
    this.messageIndex = 0;
    this.assistant = null; // { itemId, text, finalized }
    this.partial = { inFlight: false, pending: null };
    this.pendingBlockReplies = new Set();
    this.reasoning = null; // { itemId, text, lastStreamed }
    this.reasoningOpen = false;
    this.lastReasoningSent = undefined;
    this.tools = new Map();
    this.hostResults = new Map();
    this.summarized = new Set();
    this.assistantOutputStarted = false;
    this.lifecycleStarted = false;
    this.finished = false;
    this.timeoutSignalled = false;
    this.abortSignalled = false;
  }

  /** The attempt was handed to the bridge: its budget is the lane's authoritative deadline. */
  start() {
    const timeoutMs = this.params.timeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return;
    // The bridge enforces exactly this budget from now and does not pause it while a person is
    // asked, so a fixed deadline is the truthful one (the runner pauses its own budget instead).
    const deadline =
      timeoutMs >= UNLIMITED_TIMEOUT_MS ? { kind: "unlimited" } : { kind: "bounded", deadlineAtMs: this.now() + timeoutMs };
    this.call("attempt deadline", () => this.params.onAttemptDeadlineChanged?.(deadline));
    this.call("attempt timeout armed", () => this.params.onAttemptTimeoutArmed?.());
  }

  /** One `attempt/event` notification's params; events are handled strictly in `seq` order. */
  onEvent(note) {
    const event = note?.event;
    if (this.finished || !event || typeof event.type !== "string") return;
    if (Number.isInteger(note.seq)) {
      if (note.seq <= this.lastSeq) return;
      this.lastSeq = note.seq;
    }
    if (event.type === "turnTerminal" && event.kind === "timeout") this.timedOut(event.message);
    if (HANDLED_TYPES.has(event.type)) this.enqueue(event);
  }

  /** The attempt is being cancelled explicitly (the host's abort, or the run handle's). */
  aborted() {
    if (this.abortSignalled) return;
    this.abortSignalled = true;
    this.call("attempt abort", () => this.params.onAttemptAbort?.());
  }

  /** A deadline fired: the bridge's budget or idle watchdog, or the plugin's wait for the result. */
  timedOut(message) {
    if (this.timeoutSignalled) return;
    this.timeoutSignalled = true;
    const reason = new Error(message || "the attempt timed out");
    reason.name = "TimeoutError";
    this.call("attempt timeout", () => this.params.onAttemptTimeout?.(reason));
  }

  /**
   * The attempt ended with `terminal` (the `attempt/run` result's, or a stand-in when it failed
   * without one): handle every queued event, deliver what is buffered, close the lifecycle.
   */
  async finish(terminal) {
    if (this.finished) return;
    await this.idle();
    this.finished = true;
    if (terminal?.kind === "timeout") this.timedOut(terminal.message);
    this.endReasoning();
    await this.flushBlockReplies();
    await this.awaitCall("block reply flush", () => this.params.onBlockReplyFlush?.({ reason: "terminal" }));
    if (!this.lifecycleStarted) return;
    const failed = terminal?.kind === "failed" || !terminal;
    const data = {
      phase: this.params.deferTerminalLifecycle || this.params.deferTerminalLifecycleEnd ? "finishing" : failed ? "error" : "end",
      ...(failed ? { error: terminal?.message || "the attempt failed" } : {}),
      ...(terminal?.kind === "timeout" ? { timeoutPhase: "prompt" } : {}),
      aborted: terminal?.kind === "aborted" || terminal?.kind === "timeout",
    };
    this.publish("lifecycle", data, { global: { ...data, endedAt: this.now() } });
  }

  // --- the queue -------------------------------------------------------------------------------

  enqueue(event) {
    const last = this.queue.at(-1);
    if (last && DELTA_TYPES.has(event.type) && mergeable(last, event)) {
      if (last.delta.length + event.delta.length <= MAX_QUEUED_DELTA_CHARS) last.delta += event.delta;
      return;
    }
    if (this.queue.length >= MAX_QUEUED_EVENTS && DROPPABLE_TYPES.has(event.type)) return;
    this.queue.push(DELTA_TYPES.has(event.type) ? { ...event } : event);
    if (!this.draining) this.draining = this.scope.runInAsyncScope(() => this.drain());
  }

  async drain() {
    try {
      while (this.queue.length > 0) {
        const event = this.queue.shift();
        try {
          await this.handle(event);
        } catch (error) {
          this.logger.warn?.(`clawbridge: progress for a ${event.type} event failed: ${error?.message ?? error}`);
        }
      }
    } finally {
      this.draining = null;
    }
  }

  async idle() {
    while (this.draining) await this.draining;
  }

  async handle(event) {
    switch (event.type) {
      case "turnStarted":
        return this.turnStarted(event);
      case "assistantDelta":
        return this.assistantDelta(event);
      case "assistantFinal":
        return this.assistantFinal(event);
      case "reasoningDelta":
        return this.reasoningDelta(event);
      case "reasoningFinal":
        return this.reasoningFinal(event);
      case "plan":
        return this.plan(event);
      case "toolStarted":
        return this.toolStarted(event);
      case "toolOutputDelta":
        return this.toolOutputDelta(event);
      case "toolFinished":
        return this.toolFinished(event);
      default:
        return undefined;
    }
  }

  // --- lifecycle -------------------------------------------------------------------------------

  turnStarted() {
    if (this.lifecycleStarted) return;
    this.lifecycleStarted = true;
    this.phase("turn_accepted");
    this.publish("lifecycle", { phase: "start", startedAt: this.now() });
  }

  phase(phase, extra = {}) {
    const info = { phase, provider: this.params.provider, model: this.params.modelId, backend: this.harnessId, ...extra };
    this.call("execution phase", () => this.params.onExecutionPhase?.(info));
  }

  // --- assistant text --------------------------------------------------------------------------

  beginAssistantItem(itemId) {
    if (this.assistant?.itemId === itemId) return;
    if (this.assistant) void this.flushBlockReplies();
    this.messageIndex += 1;
    this.chunker.reset();
    this.assistant = { itemId, text: "", finalized: false };
    this.partial = { inFlight: false, pending: null };
    this.call("assistant message start", () => this.params.onAssistantMessageStart?.());
    if (!this.assistantOutputStarted) {
      this.assistantOutputStarted = true;
      this.phase("assistant_output_started");
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
    this.publish("assistant", { text: item.text, delta, itemId: item.itemId });
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
      this.publish("assistant", { text, delta, ...(replace ? { replace: true } : {}), itemId: item.itemId });
    }
    if (!this.params.onBlockReply) return;
    if (text.startsWith(streamed)) this.chunker.append(text.slice(streamed.length));
    else this.chunker.replace(text, 0, text.startsWith(streamed.slice(0, this.chunker.consumedLength)));
    const flushed = this.flushBlockReplies();
    if (this.blockReplyBreak === "message_end" && this.params.onBlockReplyFlush) {
      await flushed;
      await this.awaitCall("block reply flush", () => this.params.onBlockReplyFlush({ reason: "message_end" }));
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
      this.call("assistant partial reply", () => this.params.onPartialReply(next), settled);
    };
    send(payload);
  }

  /** One block-reply chunk to the channel, tagged with its assistant message. */
  blockReply(text, extra = {}) {
    if (!text || !this.params.onBlockReply) return;
    const payload = { text, ...extra };
    const context = { assistantMessageIndex: this.messageIndex };
    const task = this.callAsync("block reply", () => this.params.onBlockReply(payload, context));
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
    this.publish("thinking", { text: trimmed, delta }, { callback: false });
    if (this.streamReasoning) {
      const payload = { text: trimmed, ...(this.reasoningMode === "stream" ? {} : { requiresReasoningProgressOptIn: true }) };
      this.call("reasoning stream", () => this.params.onReasoningStream(payload));
    }
  }

  endReasoning() {
    if (!this.reasoningOpen) return;
    this.reasoningOpen = false;
    this.call("reasoning end", () => this.params.onReasoningEnd?.());
  }

  // --- plan ------------------------------------------------------------------------------------

  plan(event) {
    const steps = (Array.isArray(event.steps) ? event.steps : [])
      .filter((s) => typeof s?.step === "string" && s.step.trim())
      .map((s) => ({ step: s.step.trim(), status: PLAN_STATUS[s.status] ?? "pending" }));
    const data = {
      phase: "update",
      title: "Plan updated",
      source: this.harnessId,
      ...(typeof event.explanation === "string" && event.explanation ? { explanation: event.explanation } : {}),
      steps,
    };
    this.publish("plan", data);
  }

  // --- tools -----------------------------------------------------------------------------------

  /**
   * The result an OpenClaw tool returned for a host tool call: its observers get that (with its
   * `details`) rather than the text the bridge reports.
   */
  noteHostToolResult(callId, result) {
    if (typeof callId !== "string" || !callId || !result || typeof result !== "object") return;
    if (this.hostResults.size >= MAX_HOST_RESULTS) this.hostResults.delete(this.hostResults.keys().next().value);
    this.hostResults.set(callId, result);
  }

  async toolStarted(call) {
    const toolCallId = String(call.callId ?? "");
    const name = String(call.toolName ?? "tool");
    if (this.tools.has(toolCallId)) return;
    this.endReasoning();
    // Narration before a tool reaches the channel before the tool's progress does.
    await this.flushBlockReplies();
    await this.awaitCall("block reply flush", () =>
      this.params.onBlockReplyFlush?.({ reason: "tool_start", assistantMessageIndex: this.messageIndex }),
    );
    this.startTool(toolCallId, name, call.arguments);
  }

  startTool(toolCallId, name, args) {
    const startedAt = this.now();
    this.phase("tool_execution_started", { tool: name, toolCallId });
    const meta = this.toolMeta(name, args);
    const activity = this.sdk.projectAgentToolActivity({ toolCallId, name, phase: "start", args, meta });
    const tool = { name, args, meta, startedAt, commandBearing: activity?.commandBearing === true, output: "", lastLiveAt: -Infinity };
    this.tools.set(toolCallId, tool);
    this.publish("item", { ...activity, startedAt });
    this.publish("tool", { phase: "start", name, toolCallId, args: this.sdk.sanitizeToolArgs(args) });
    if (this.params.onToolResult && this.shouldEmitToolResult() && !this.summarized.has(toolCallId)) {
      this.summarized.add(toolCallId);
      const visibleMeta = this.params.verboseLevel === "full" || !tool.commandBearing ? meta : undefined;
      this.toolResultMessage(this.sdk.formatToolAggregate(name, visibleMeta ? [visibleMeta] : undefined, { markdown: this.markdown }));
    }
    return tool;
  }

  toolOutputDelta({ callId, delta }) {
    if (typeof delta !== "string" || delta === "") return;
    const toolCallId = String(callId ?? "");
    const tool = this.tools.get(toolCallId);
    if (!tool) return;
    if (tool.output.length <= LIVE_OUTPUT_MAX_CHARS) tool.output = (tool.output + delta).slice(0, LIVE_OUTPUT_MAX_CHARS + 1);
    const live = liveOutput(tool.output);
    const exec = isExec(tool.name);
    const now = this.now();
    const refresh = !exec || now - tool.lastLiveAt >= LIVE_OUTPUT_MIN_INTERVAL_MS;
    if (refresh) {
      tool.lastLiveAt = now;
      const partialResult = this.sdk.sanitizeToolResult({ content: [{ type: "text", text: live }], details: { status: "running" } });
      this.publish("item", this.sdk.projectAgentToolActivity({ toolCallId, name: tool.name, phase: "update", args: tool.args, meta: tool.meta }));
      this.publish("tool", { phase: "update", name: tool.name, toolCallId }, { global: { phase: "update", name: tool.name, toolCallId, partialResult } });
      if (exec) {
        this.publish("command_output", {
          itemId: `command:${toolCallId}`,
          phase: "delta",
          title: commandTitle(tool.name, tool.meta),
          toolCallId,
          name: tool.name,
          output: live,
          status: "running",
        });
      }
    } else {
      this.publish("tool", { phase: "update", name: tool.name, toolCallId }, { global: false });
    }
  }

  async toolFinished(finish) {
    const call = finish?.call ?? {};
    const toolCallId = String(call.callId ?? "");
    const name = String(call.toolName ?? "tool");
    const tool = this.tools.get(toolCallId) ?? this.startTool(toolCallId, name, call.arguments);
    this.tools.delete(toolCallId);
    const outcome = finish.outcome ?? {};
    const isError = outcome.kind !== "success";
    const output = typeof finish.output?.text === "string" ? finish.output.text : tool.output;
    const errorText = isError ? outcomeError(outcome) : undefined;
    const status = isError ? (finish.executionStarted === false ? "blocked" : "failed") : "completed";
    const hostResult = this.hostResults.get(toolCallId);
    this.hostResults.delete(toolCallId);
    const result = this.sdk.sanitizeToolResult(
      hostResult && call.native !== true
        ? hostResult
        : {
            content: [{ type: "text", text: output || errorText || "" }],
            details: {
              status,
              ...(Number.isInteger(finish.exitCode) ? { exitCode: finish.exitCode } : {}),
              ...(errorText ? { error: errorText } : {}),
            },
          },
    );
    try {
      this.scope.runInAsyncScope(() => this.params.onAgentToolResult?.({ toolName: name, result, isError }));
    } catch (error) {
      this.logger.warn?.(`onAgentToolResult handler failed: tool=${name} error=${error?.message ?? error}`);
    }
    const args = call.arguments ?? tool.args;
    const activity = this.sdk.projectAgentToolActivity({ toolCallId, name, phase: "result", args, meta: tool.meta, result, status });
    this.publish("item", { ...activity, startedAt: tool.startedAt, endedAt: this.now(), ...(errorText ? { error: errorText } : {}) });
    const toolData = { phase: "result", name, toolCallId, meta: tool.meta, isError, commandBearing: tool.commandBearing };
    this.publish("tool", toolData, { global: { ...toolData, result } });
    if (isExec(name)) {
      const live = liveOutput(output);
      this.publish("command_output", {
        itemId: `command:${toolCallId}`,
        phase: "end",
        title: commandTitle(name, tool.meta),
        toolCallId,
        name,
        ...(live ? { output: live } : {}),
        status,
        ...(Number.isInteger(finish.exitCode) ? { exitCode: finish.exitCode } : {}),
      });
    }
    if (this.params.onToolResult && this.shouldEmitToolOutput() && output) {
      const heading = this.sdk.formatToolAggregate(name, tool.meta ? [tool.meta] : undefined, { markdown: this.markdown });
      this.toolResultMessage(`${heading}\n${this.outputBlock(output)}`);
    }
    await this.awaitCall("tool stream boundary", () => this.params.onToolStreamBoundary?.());
  }

  toolMeta(name, args) {
    try {
      return this.sdk.inferToolMetaFromArgs(name, args, { detailMode: this.params.toolProgressDetail ?? "explain" });
    } catch {
      return undefined;
    }
  }

  shouldEmitToolResult() {
    const p = this.params;
    return typeof p.shouldEmitToolResult === "function" ? p.shouldEmitToolResult() : p.verboseLevel === "on" || p.verboseLevel === "full";
  }

  shouldEmitToolOutput() {
    const p = this.params;
    return typeof p.shouldEmitToolOutput === "function" ? p.shouldEmitToolOutput() : p.verboseLevel === "full";
  }

  outputBlock(text) {
    const trimmed = text.trim();
    if (!trimmed) return "(no output)";
    return this.markdown ? `\`\`\`txt\n${trimmed}\n\`\`\`` : trimmed;
  }

  toolResultMessage(text) {
    if (!text) return;
    this.call("tool result", () => this.params.onToolResult({ text }));
  }

  // --- delivery helpers ------------------------------------------------------------------------

  /**
   * An agent event to `onAgentEvent` and to OpenClaw's agent event bus (the gateway's chat stream
   * and the OpenAI-compatible endpoint read the bus). `options.global` replaces the bus's data
   * (`false`: bus not told); `options.callback: false` keeps it off `onAgentEvent`.
   */
  publish(stream, data, options = {}) {
    const globalData = options.global === undefined ? data : options.global;
    if (globalData !== false) {
      const p = this.params;
      const event = {
        runId: p.runId,
        ...(p.lifecycleGeneration ? { lifecycleGeneration: p.lifecycleGeneration } : {}),
        ...(p.sessionKey ? { sessionKey: p.sessionKey } : {}),
        stream,
        data: globalData,
      };
      if (typeof p.runId === "string" && p.runId) this.call(`${stream} agent event (bus)`, () => this.sdk.emitAgentEvent(event));
    }
    if (options.callback !== false) this.call(`${stream} agent event`, () => this.params.onAgentEvent?.({ stream, data }));
  }

  /** Calls `fn` best effort: a throw or rejection is logged; `settled` runs after either way. */
  call(label, fn, settled) {
    const task = this.callAsync(label, fn);
    if (!settled) return;
    if (task) void task.then(settled);
    else settled();
  }

  /** Like `call`, returning the settled promise when `fn` returned one (never rejects). */
  callAsync(label, fn) {
    try {
      const out = this.scope.runInAsyncScope(fn);
      if (out && typeof out.then === "function") {
        return Promise.resolve(out).then(
          () => {},
          (error) => this.logger.warn?.(`clawbridge: ${label} callback failed: ${error?.message ?? error}`),
        );
      }
    } catch (error) {
      this.logger.warn?.(`clawbridge: ${label} callback failed: ${error?.message ?? error}`);
    }
    return undefined;
  }

  /** `call`, awaited: for the moments the runner itself waits for the callback. */
  async awaitCall(label, fn) {
    await this.callAsync(label, fn);
  }
}

function mergeable(last, event) {
  if (last.type !== event.type || typeof last.delta !== "string" || typeof event.delta !== "string") return false;
  return event.type === "toolOutputDelta" ? last.callId === event.callId : last.itemId === event.itemId;
}

function isExec(name) {
  return name === "exec" || name === "bash";
}

function commandTitle(name, meta) {
  return meta ? `command ${meta}` : `${name} command`;
}

function liveOutput(text) {
  if (!text) return "";
  return text.length <= LIVE_OUTPUT_MAX_CHARS ? text : `${text.slice(0, LIVE_OUTPUT_MAX_CHARS)}\n...(live output truncated)...`;
}

function outcomeError(outcome) {
  switch (outcome.kind) {
    case "failure":
      return outcome.error || (outcome.timedOut ? "timed out" : "failed");
    case "declined":
      return outcome.reason ? `declined: ${outcome.reason}` : "declined";
    case "cancelled":
      return outcome.reason ? `cancelled: ${outcome.reason}` : "cancelled";
    default:
      return "failed";
  }
}
