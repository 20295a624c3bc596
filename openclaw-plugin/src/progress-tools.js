// The tool side of an attempt's progress: a tool's phase, item/tool/command_output agent events,
// summaries and output to the channel, the tool result observer and the stream boundary.
// `progress.js` feeds it; see there for the rules.

import { approxBytes } from "./bounds.js";

/** Live command output kept per call, like the runner's live exec output (longer is cut). */
const LIVE_OUTPUT_MAX_CHARS = 8000;
/** The runner refreshes live command output at most this often per call. */
const LIVE_OUTPUT_MIN_INTERVAL_MS = 250;
/**
 * Bytes of host tool results kept for their `toolFinished` (images included); past it the oldest
 * go first, and their `toolFinished` reports the bridge's text instead.
 */
const HOST_RESULTS_BYTES = 16 * 1024 * 1024;

export class ToolProgress {
  /**
   * @param {object} out the owning AttemptProgress: `params`, `sdk` and its delivery helpers
   * @param {import("./progress-reply.js").ReplyProgress} reply whose narration a tool start flushes
   */
  constructor(out, reply) {
    this.out = out;
    this.reply = reply;
    this.params = out.params;
    this.sdk = out.sdk;
    this.markdown = (this.params.toolResultFormat ?? "markdown") === "markdown";
    this.calls = new Map();
    /** @type {Map<string, {result: unknown, bytes: number}>} */
    this.hostResults = new Map();
    /** Bytes held by `hostResults`. */
    this.hostResultsBytes = 0;
    this.summarized = new Set();
  }

  /**
   * The result an OpenClaw tool returned for a host tool call: its observers get that (with its
   * `details`) rather than the text the bridge reports.
   */
  noteHostToolResult(callId, result) {
    if (typeof callId !== "string" || !callId || !result || typeof result !== "object") return;
    this.takeHostResult(callId);
    const bytes = approxBytes(result, HOST_RESULTS_BYTES + 1);
    if (bytes > HOST_RESULTS_BYTES) return;
    while (this.hostResultsBytes + bytes > HOST_RESULTS_BYTES && this.hostResults.size > 0) {
      this.takeHostResult(this.hostResults.keys().next().value);
    }
    this.hostResults.set(callId, { result, bytes });
    this.hostResultsBytes += bytes;
  }

  /** Removes and returns the kept host result of `callId`, if any. */
  takeHostResult(callId) {
    const kept = this.hostResults.get(callId);
    if (!kept) return undefined;
    this.hostResults.delete(callId);
    this.hostResultsBytes -= kept.bytes;
    return kept.result;
  }

  async toolStarted(call) {
    const toolCallId = String(call.callId ?? "");
    const name = String(call.toolName ?? "tool");
    if (this.calls.has(toolCallId)) return;
    this.reply.endReasoning();
    // Narration before a tool reaches the channel before the tool's progress does.
    await this.reply.flushBlockReplies();
    await this.out.awaitCall("block reply flush", () =>
      this.params.onBlockReplyFlush?.({ reason: "tool_start", assistantMessageIndex: this.reply.messageIndex }),
    );
    this.startTool(toolCallId, name, call.arguments);
  }

  startTool(toolCallId, name, args) {
    const startedAt = this.out.now();
    this.out.phase("tool_execution_started", { tool: name, toolCallId });
    const meta = this.toolMeta(name, args);
    const activity = this.sdk.projectAgentToolActivity({ toolCallId, name, phase: "start", args, meta });
    const tool = { name, args, meta, startedAt, commandBearing: activity?.commandBearing === true, output: "", lastLiveAt: -Infinity };
    this.calls.set(toolCallId, tool);
    this.out.publish("item", { ...activity, startedAt });
    this.out.publish("tool", { phase: "start", name, toolCallId, args: this.sdk.sanitizeToolArgs(args) });
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
    const tool = this.calls.get(toolCallId);
    if (!tool) return;
    if (tool.output.length <= LIVE_OUTPUT_MAX_CHARS) tool.output = (tool.output + delta).slice(0, LIVE_OUTPUT_MAX_CHARS + 1);
    const live = liveOutput(tool.output);
    const exec = isExec(tool.name);
    const now = this.out.now();
    const refresh = !exec || now - tool.lastLiveAt >= LIVE_OUTPUT_MIN_INTERVAL_MS;
    if (refresh) {
      tool.lastLiveAt = now;
      const partialResult = this.sdk.sanitizeToolResult({ content: [{ type: "text", text: live }], details: { status: "running" } });
      this.out.publish("item", this.sdk.projectAgentToolActivity({ toolCallId, name: tool.name, phase: "update", args: tool.args, meta: tool.meta }));
      this.out.publish("tool", { phase: "update", name: tool.name, toolCallId }, { global: { phase: "update", name: tool.name, toolCallId, partialResult } });
      if (exec) {
        this.out.publish("command_output", {
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
      this.out.publish("tool", { phase: "update", name: tool.name, toolCallId }, { global: false });
    }
  }

  async toolFinished(finish) {
    const call = finish?.call ?? {};
    const toolCallId = String(call.callId ?? "");
    const name = String(call.toolName ?? "tool");
    const tool = this.calls.get(toolCallId) ?? this.startTool(toolCallId, name, call.arguments);
    this.calls.delete(toolCallId);
    const outcome = finish.outcome ?? {};
    const isError = outcome.kind !== "success";
    const output = typeof finish.output?.text === "string" ? finish.output.text : tool.output;
    const errorText = isError ? outcomeError(outcome) : undefined;
    const status = isError ? (finish.executionStarted === false ? "blocked" : "failed") : "completed";
    const hostResult = this.takeHostResult(toolCallId);
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
    // Synchronous, as the runner calls it; a handler that throws or rejects is only logged.
    const failed = (error) => this.out.logger.warn?.(`onAgentToolResult handler failed: tool=${name} error=${error?.message ?? error}`);
    try {
      const out = this.out.scope.runInAsyncScope(() => this.params.onAgentToolResult?.({ toolName: name, result, isError }));
      if (out && typeof out.then === "function") Promise.resolve(out).catch(failed);
    } catch (error) {
      failed(error);
    }
    const args = call.arguments ?? tool.args;
    const activity = this.sdk.projectAgentToolActivity({ toolCallId, name, phase: "result", args, meta: tool.meta, result, status });
    this.out.publish("item", { ...activity, startedAt: tool.startedAt, endedAt: this.out.now(), ...(errorText ? { error: errorText } : {}) });
    const toolData = { phase: "result", name, toolCallId, meta: tool.meta, isError, commandBearing: tool.commandBearing };
    this.out.publish("tool", toolData, { global: { ...toolData, result } });
    if (isExec(name)) {
      const live = liveOutput(output);
      this.out.publish("command_output", {
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
    await this.out.awaitCall("tool stream boundary", () => this.params.onToolStreamBoundary?.());
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
    this.out.call("tool result", () => this.params.onToolResult({ text }));
  }
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
