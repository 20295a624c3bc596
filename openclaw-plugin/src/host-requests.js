// Answers the bridge's `host/*` requests for one running attempt by calling into OpenClaw: the bound
// tool surface, the approval host capability, `observeToolTerminal` and the transcript API.
// Every handler either returns a result or throws an `RpcReplyError`; approvals fail closed.

import { checkNativeAction } from "./policy.js";
import { ErrorCodes, RpcReplyError } from "./rpc-client.js";
import { appendTranscriptGroup } from "./transcript.js";

/** The most text a host tool result may send back to the bridge (bounded like every buffer). */
const MAX_TOOL_TEXT = 4 * 1024 * 1024;
/** The most images one host tool result sends back (the bridge bounds them again, in bytes). */
const MAX_TOOL_IMAGES = 16;
/** The most base64 characters of all images of one host tool result. */
const MAX_TOOL_IMAGE_CHARS = 44 * 1024 * 1024;

/** `host/tool/execute`: run one tool of the attempt's bound tool surface. */
export async function executeTool(attempt, params) {
  const tool = attempt.tools.get(params?.toolName);
  if (!tool) {
    throw new RpcReplyError(
      ErrorCodes.capabilityUnavailable,
      `no host tool named \`${params?.toolName}\` was offered to attempt ${attempt.attemptId}`,
    );
  }
  let args = params.arguments ?? {};
  try {
    if (typeof tool.prepareArguments === "function") args = tool.prepareArguments(args);
    const output = await tool.execute(String(params.callId ?? ""), args, attempt.signal);
    attempt.hostToolRuns?.add({ toolName: tool.name, args, result: output, isError: false, callId: params.callId });
    attempt.progress?.noteHostToolResult(params.callId, output);
    const images = toolImages(output);
    return { text: cap(toolText(output, images.length > 0)), isError: false, ...(images.length > 0 ? { images } : {}) };
  } catch (error) {
    attempt.hostToolRuns?.add({ toolName: tool.name, args, result: error, isError: true, callId: params.callId });
    // Tools throw on failure (the AgentTool contract); the model sees the message as the error.
    return { text: cap(String(error?.message ?? error)), isError: true };
  }
}

/**
 * `host/approval/decide`: OpenClaw's tool policy first (`runBeforeToolCall`, policy.js), then a
 * person through `requestApproval` / `waitForApproval`. Anything but a clear allow (an error, a
 * timeout, no decision, an unknown decision) is a deny: approvals fail closed.
 */
export async function decideApproval(attempt, params, options = {}) {
  const settled = await checkNativeAction(attempt, params);
  if (settled) return settled;
  const host = attempt.params.hostCapabilities;
  if (typeof host?.requestApproval !== "function") {
    return { decision: "deny", message: "OpenClaw offers no approval surface for this run" };
  }
  const timeoutMs = Number.isFinite(params?.timeoutMs) && params.timeoutMs > 0 ? params.timeoutMs : 120_000;
  try {
    const request = await host.requestApproval({
      signal: attempt.signal,
      title: approvalTitle(params),
      description: approvalDescription(params),
      detail: JSON.stringify(params?.arguments ?? {}, null, 2).slice(0, 8192),
      severity: params?.kind === "command" || params?.kind === "fileChange" ? "warning" : "info",
      toolName: String(params?.toolName ?? "tool"),
      ...(params?.callId ? { toolCallId: String(params.callId) } : {}),
      ...(options.allowedDecisions ? { allowedDecisions: options.allowedDecisions } : {}),
      timeoutMs,
    });
    let decision = request?.decision;
    let terminalReason;
    if (decision == null && request?.id && typeof host.waitForApproval === "function") {
      const waited = await host.waitForApproval({ approvalId: request.id, timeoutMs, signal: attempt.signal });
      decision = waited?.decision;
      terminalReason = waited?.terminalReason;
    }
    switch (decision) {
      case "allow-once":
        return { decision: "allow" };
      case "allow-always":
        return { decision: "allowForSession" };
      case "deny":
        return { decision: "deny", message: "the user denied this action" };
      default:
        return {
          decision: "deny",
          message: `no approval was given${terminalReason ? ` (${terminalReason})` : ""}`,
        };
    }
  } catch (error) {
    attempt.logger.warn?.(`clawbridge: approval failed, denying: ${error?.message ?? error}`);
    return { decision: "deny", message: "the approval could not be decided" };
  }
}

/** `host/toolTerminal/observe`: `observeToolTerminal` with the bridge's input; its output back. */
export function observeToolTerminal(attempt, params) {
  const { attemptId: _attemptId, ...input } = params ?? {};
  const observe = attempt.params.observeToolTerminal;
  if (typeof observe !== "function") return {};
  // For an OpenClaw tool the observer gets the tool's own result (or the error it threw), as the
  // embedded runner gives it, not the text the bridge relayed to the model; a native tool has none.
  const run = attempt.hostToolRuns?.find?.(input.toolCallId);
  if (run) input.result = run.result;
  const resolution = observe(input);
  if (resolution?.lastToolError) attempt.lastToolError = resolution.lastToolError;
  return jsonSafe(resolution ?? {});
}

/**
 * `host/transcript/append`: the group through the before-message-write hook and OpenClaw's atomic
 * group append by identity (transcript.js).
 */
export async function appendTranscript(attempt, params, api) {
  // A bare function is the single-row append (hosts and tests without the group API).
  return appendTranscriptGroup(attempt, params, typeof api === "function" ? { appendMessage: api } : (api ?? {}));
}

/**
 * The text of an AgentToolResult: its text blocks joined; nothing more when its images go as images
 * (`withImages`); else its JSON.
 */
function toolText(output, withImages) {
  if (typeof output === "string") return output;
  const blocks = Array.isArray(output?.content) ? output.content : [];
  const texts = blocks.filter((b) => b?.type === "text" && typeof b.text === "string").map((b) => b.text);
  if (texts.length > 0) return texts.join("\n");
  if (withImages) return "";
  try {
    return JSON.stringify(output?.details ?? output ?? null);
  } catch {
    return String(output);
  }
}

/** The image blocks of an AgentToolResult (`{type:"image", data, mimeType}`), bounded. */
function toolImages(output) {
  const blocks = Array.isArray(output?.content) ? output.content : [];
  const images = [];
  let chars = 0;
  for (const block of blocks) {
    if (block?.type !== "image" || typeof block.data !== "string" || typeof block.mimeType !== "string") continue;
    if (images.length === MAX_TOOL_IMAGES || chars + block.data.length > MAX_TOOL_IMAGE_CHARS) break;
    chars += block.data.length;
    images.push({ data: block.data, mimeType: block.mimeType });
  }
  return images;
}

function cap(text) {
  return text.length > MAX_TOOL_TEXT ? `${text.slice(0, MAX_TOOL_TEXT)}\n[… truncated by clawbridge]` : text;
}

function approvalTitle(params) {
  switch (params?.kind) {
    case "command":
      return "Run a command?";
    case "fileChange":
      return "Apply a file change?";
    case "permissions":
      return "Grant more permissions?";
    default:
      return `Use ${params?.toolName ?? "a tool"}?`;
  }
}

function approvalDescription(params) {
  const args = params?.arguments ?? {};
  const what = typeof args.command === "string" ? args.command : JSON.stringify(args).slice(0, 500);
  return params?.reason ? `${what}\n\n${params.reason}` : what;
}

/** A JSON round trip, so an answer never carries functions or cycles to the encoder. */
function jsonSafe(value) {
  try {
    return JSON.parse(JSON.stringify(value)) ?? {};
  } catch {
    return {};
  }
}
