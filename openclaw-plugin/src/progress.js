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
//
// This module keeps the order, the lifecycle, deadlines and delivery; the text side (replies,
// reasoning) is progress-reply.js, the tool side progress-tools.js, the SDK stand-ins
// progress-sdk.js.

import { AsyncResource } from "node:async_hooks";

import { ENTRY_BYTES, approxBytes, shrink, truncateText } from "./bounds.js";
import { UNLIMITED_TIMEOUT_MS } from "./result-wait.js";

import { ReplyProgress } from "./progress-reply.js";
import { progressHelpers } from "./progress-sdk.js";
import { ToolProgress } from "./progress-tools.js";

export { progressHelpers };

/** Events waiting behind a slow awaited callback; deltas merge first, then further deltas drop. */
const MAX_QUEUED_EVENTS = 4096;
/** The most text one merged delta may hold while waiting (the bridge's own bound). */
const MAX_QUEUED_DELTA_CHARS = 1024 * 1024;
/**
 * Bytes the queue may hold behind a slow callback. Past it, the oldest progress-only events
 * (deltas, plans: a final or the next plan repairs their loss) are dropped and counted; if it is
 * still over, queued tool outputs and tool arguments are cut to {@link QUEUED_TOOL_KEEP_BYTES}.
 * Finals, tool starts and finishes and the lifecycle are never dropped.
 */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
/** What a queued tool's output or arguments keep once the queue is over its bytes. */
const QUEUED_TOOL_KEEP_BYTES = 16 * 1024;

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
  "modelCallStarted",
]);

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
   * @param {number} [options.maxQueuedBytes] tests only
   */
  constructor({ params, harnessId, logger, sdk, now, maxQueuedBytes }) {
    this.params = params ?? {};
    this.harnessId = harnessId;
    this.logger = logger ?? console;
    this.sdk = progressHelpers(sdk);
    this.now = now ?? Date.now;
    this.scope = new AsyncResource("clawbridge.AttemptProgress");

    this.reply = new ReplyProgress(this);
    this.tools = new ToolProgress(this, this.reply);
    /** Events waiting, in order, each with the bytes it is counted as. */
    this.queue = [];
    this.queuedBytes = 0;
    this.maxQueuedBytes = maxQueuedBytes ?? MAX_QUEUED_BYTES;
    /** What the queue's bound cost: progress-only events dropped, and their bytes; tool events cut. */
    this.shed = { events: 0, bytes: 0, cut: 0 };
    this.draining = null;
    this.lastSeq = -1;
    this.lifecycleStarted = false;
    this.finished = false;
    this.timeoutSignalled = false;
    this.abortSignalled = false;
    /** The lane's deadline as last reported: `bounded`, `unlimited`, or null before `start`. */
    this.deadlineKind = null;
    /**
     * Told when the bridge's budget pauses and resumes (the plugin's own wait for the result).
     * @type {{ pause(): void, resume(remainingMs: number): void } | null}
     */
    this.budgetListener = null;
  }

  /** The attempt was handed to the bridge: its budget is the lane's authoritative deadline. */
  start() {
    const timeoutMs = this.params.timeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) return;
    // The bridge enforces exactly this budget from now; it pauses it while a person is asked and
    // says so (budgetPaused / budgetResumed), which moves this deadline as the runner's pauses do.
    const deadline =
      timeoutMs >= UNLIMITED_TIMEOUT_MS ? { kind: "unlimited" } : { kind: "bounded", deadlineAtMs: this.now() + timeoutMs };
    this.deadlineKind = deadline.kind;
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
    if (event.type === "budgetPaused") this.budgetPaused();
    if (event.type === "budgetResumed") this.budgetResumed(event.remainingMs);
    if (HANDLED_TYPES.has(event.type)) this.enqueue(event);
  }

  /**
   * The bridge stopped the budget while a person is asked: as the runner does for a pending
   * approval, the lane's deadline is `unlimited` until the budget resumes. Only a bounded deadline
   * pauses (an unlimited one has nothing to stop).
   */
  budgetPaused() {
    if (this.deadlineKind !== "bounded") return;
    this.deadlineKind = "paused";
    this.budgetListener?.pause();
    this.call("attempt deadline", () => this.params.onAttemptDeadlineChanged?.({ kind: "unlimited" }));
  }

  /** The budget counts again with `remainingMs` left: a new bounded deadline, as the runner re-arms. */
  budgetResumed(remainingMs) {
    if (this.deadlineKind !== "paused") return;
    const left = Number.isFinite(remainingMs) && remainingMs > 0 ? remainingMs : 1;
    this.deadlineKind = "bounded";
    this.budgetListener?.resume(left);
    const deadline = { kind: "bounded", deadlineAtMs: this.now() + left };
    this.call("attempt deadline", () => this.params.onAttemptDeadlineChanged?.(deadline));
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
    if (this.shed.events > 0 || this.shed.cut > 0) {
      this.logger.warn?.(
        `clawbridge: the progress callbacks lagged: ${this.shed.events} progress-only events (${this.shed.bytes} bytes) dropped, ${this.shed.cut} tool events cut`,
      );
    }
    if (terminal?.kind === "timeout") this.timedOut(terminal.message);
    this.reply.endReasoning();
    await this.reply.flushBlockReplies();
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
    if (last && DELTA_TYPES.has(event.type) && mergeable(last.event, event)) {
      if (last.event.delta.length + event.delta.length <= MAX_QUEUED_DELTA_CHARS) {
        last.event.delta += event.delta;
        last.bytes += event.delta.length;
        this.queuedBytes += event.delta.length;
      } else {
        this.shed.events += 1;
        this.shed.bytes += event.delta.length;
      }
      this.bound();
      return;
    }
    const bytes = approxBytes(event, this.maxQueuedBytes + 1) + ENTRY_BYTES;
    if (this.queue.length >= MAX_QUEUED_EVENTS && DROPPABLE_TYPES.has(event.type)) {
      this.shed.events += 1;
      this.shed.bytes += bytes;
      return;
    }
    this.queue.push({ event: DELTA_TYPES.has(event.type) ? { ...event } : event, bytes });
    this.queuedBytes += bytes;
    this.bound();
    if (!this.draining) this.draining = this.scope.runInAsyncScope(() => this.drain());
  }

  /**
   * Brings the queue back under its bytes: the oldest progress-only events go first, then queued
   * tool outputs and arguments are cut; what remains is needed whole.
   */
  bound() {
    for (let i = 0; this.queuedBytes > this.maxQueuedBytes && i < this.queue.length; ) {
      const item = this.queue[i];
      if (!DROPPABLE_TYPES.has(item.event.type)) {
        i += 1;
        continue;
      }
      this.queue.splice(i, 1);
      this.queuedBytes -= item.bytes;
      this.shed.events += 1;
      this.shed.bytes += item.bytes;
    }
    for (const item of this.queue) {
      if (this.queuedBytes <= this.maxQueuedBytes) return;
      const cut = item.cut ? null : cutToolEvent(item.event);
      if (!cut) continue;
      item.cut = true;
      const bytes = approxBytes(cut, this.maxQueuedBytes + 1) + ENTRY_BYTES;
      if (bytes >= item.bytes) continue;
      this.queuedBytes -= item.bytes - bytes;
      item.event = cut;
      item.bytes = bytes;
      this.shed.cut += 1;
    }
  }

  async drain() {
    try {
      while (this.queue.length > 0) {
        const { event, bytes } = this.queue.shift();
        this.queuedBytes -= bytes;
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
        return this.reply.assistantDelta(event);
      case "assistantFinal":
        return this.reply.assistantFinal(event);
      case "reasoningDelta":
        return this.reply.reasoningDelta(event);
      case "reasoningFinal":
        return this.reply.reasoningFinal(event);
      case "plan":
        return this.plan(event);
      case "toolStarted":
        return this.tools.toolStarted(event);
      case "toolOutputDelta":
        return this.tools.toolOutputDelta(event);
      case "toolFinished":
        return this.tools.toolFinished(event);
      case "modelCallStarted":
        return this.modelCallStarted();
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

  /** The native runtime started a model request: the runner's phase, with its payload. */
  modelCallStarted() {
    const info = {
      phase: "model_call_started",
      provider: this.params.provider,
      model: this.params.modelId,
      firstModelCallStarted: true,
    };
    this.call("execution phase", () => this.params.onExecutionPhase?.(info));
  }

  phase(phase, extra = {}) {
    const info = { phase, provider: this.params.provider, model: this.params.modelId, backend: this.harnessId, ...extra };
    this.call("execution phase", () => this.params.onExecutionPhase?.(info));
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

  /** What an OpenClaw tool returned for host tool call `callId` (see ToolProgress). */
  noteHostToolResult(callId, result) {
    this.tools.noteHostToolResult(callId, result);
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

/**
 * A queued tool event with its output and arguments cut to {@link QUEUED_TOOL_KEEP_BYTES} (the
 * channel then sees the first part, as the runner shows long output), or null when there is nothing
 * to cut. The result's facts do not come from these events.
 */
function cutToolEvent(event) {
  const keep = QUEUED_TOOL_KEEP_BYTES;
  if (event.type === "toolStarted" && approxBytes(event.arguments, keep + 1) > keep) {
    return { ...event, arguments: shrink(event.arguments, keep, { maxString: keep }) };
  }
  if (event.type !== "toolFinished") return null;
  const longOutput = approxBytes(event.output, keep + 1) > keep;
  const longArgs = approxBytes(event.call?.arguments, keep + 1) > keep;
  if (!longOutput && !longArgs) return null;
  const text = typeof event.output?.text === "string" ? truncateText(event.output.text, keep) : event.output?.text;
  return {
    ...event,
    ...(longArgs ? { call: { ...event.call, arguments: shrink(event.call.arguments, keep, { maxString: keep }) } } : {}),
    // The progress callbacks show the output's text; its images are not shown from here.
    ...(longOutput ? { output: { ...event.output, text, images: [] } } : {}),
  };
}

function mergeable(last, event) {
  if (last.type !== event.type || typeof last.delta !== "string" || typeof event.delta !== "string") return false;
  return event.type === "toolOutputDelta" ? last.callId === event.callId : last.itemId === event.itemId;
}
