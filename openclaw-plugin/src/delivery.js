// @ts-check
// The delivery facts of an attempt (`didSendViaMessagingTool`, `messagingToolSent*`,
// `toolMediaUrls`, `sourceReplyDelivered`) from the OpenClaw host tools that actually ran, the way
// OpenClaw's embedded runtime derives them from each tool's original result: through the SDK's
// messaging and media helpers, never from display text. Native tools (a shell, an editor) are no
// OpenClaw messaging tools and send nothing to a channel, so only host tools count.

/** @typedef {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult} AttemptResult */

import { ENTRY_BYTES, approxBytes, shrink, truncateText } from "./bounds.js";

/**
 * Bytes of host tool runs one attempt keeps whole (arguments and the tool's original result):
 * the delivery facts and `observeToolTerminal` read them. Runs past it are kept compact.
 */
const FULL_RUNS_BYTES = 4 * 1024 * 1024;
/** Bytes of every run kept, whole or compact; runs past it are dropped (and counted). */
const ALL_RUNS_BYTES = 8 * 1024 * 1024;
/** A compact run's arguments (a messaging send's text and target stay whole up to this). */
const COMPACT_ARGS_BYTES = 4096;
/** A compact result's `details` (delivery and media facts, status, a short error). */
const COMPACT_DETAILS_BYTES = 2048;
/** A compact result's text per content block, and how many blocks it keeps. */
const COMPACT_TEXT_CHARS = 512;
const COMPACT_BLOCKS = 8;
/** Bytes of skeleton runs (the facts only) kept past {@link ALL_RUNS_BYTES}; sends are never dropped. */
const SKELETON_BYTES = 2 * 1024 * 1024;
/** The details keys the SDK's delivery and media helpers read, kept before any other. */
const FACT_KEYS = ["messageDelivery", "media", "mediaUrls", "path", "status", "error", "exitCode"];

/**
 * The SDK helpers the facts come from; each is optional (an older host may lack one) and a missing
 * one leaves its facts empty rather than guessed.
 *
 * @typedef {{
 *   isMessagingTool?: (toolName: string) => boolean,
 *   isMessagingToolSendAction?: (toolName: string, args: Record<string, unknown>) => boolean,
 *   readEmbeddedMessageDeliveryFact?: (value: unknown) => {status?: string, partialDelivery?: boolean, sourceReplyDelivered?: boolean} | undefined,
 *   isDeliveredMessagingToolResult?: (params: {toolName?: string, args?: unknown, result?: unknown, isError?: boolean}) => boolean,
 *   extractMessagingToolSend?: (toolName: string, args: Record<string, unknown>, options?: any) => any,
 *   extractMessagingToolSendResult?: (pending: any, result: unknown) => any,
 *   extractToolResultMediaArtifact?: (result: unknown) => {mediaUrls: string[], audioAsVoice?: boolean, trustedLocalMedia?: boolean} | undefined,
 *   filterToolResultMediaUrls?: (toolName: string | undefined, mediaUrls: string[], result?: unknown) => string[],
 * }} DeliveryHelpers
 */

/**
 * One host tool run: its name, the arguments it ran with, its original result (or thrown error)
 * and whether it failed.
 *
 * @typedef {{toolName: string, args: Record<string, unknown>, result: unknown, isError: boolean, callId?: string}} HostToolRun
 */

/**
 * Collects an attempt's host tool runs for {@link deliveryFacts}, bounded in bytes: runs are kept
 * whole while they fit in {@link FULL_RUNS_BYTES}; later ones are kept compact ({@link compactRun}:
 * name, call id, error flag, arguments cut to a few KiB, the result's delivery and media facts, a
 * short text and which blocks were images, a thrown error's name and first part of its message),
 * and once {@link ALL_RUNS_BYTES} are held further runs are dropped and counted.
 */
export class HostToolRuns {
  /**
   * @param {{fullBytes?: number, allBytes?: number, skeletonBytes?: number, isMessagingTool?: (name: string) => unknown}} [options]
   *   `isMessagingTool` (the SDK's) names the runs whose arguments are kept whole; the limits are
   *   for tests only
   */
  constructor(options = {}) {
    const limits = options;
    /** Whether a run is a messaging send: its arguments are the sent text and target, kept whole. */
    this.isMessagingTool = (/** @type {string} */ name) => {
      try {
        return options.isMessagingTool?.(name) === true;
      } catch {
        return false;
      }
    };
    /** @type {HostToolRun[]} */
    this.runs = [];
    /** Bytes held by `runs` (as {@link approxBytes} counts them). */
    this.bytes = 0;
    /** Runs kept compact, and dropped, because the budget was spent. */
    this.compacted = 0;
    this.dropped = 0;
    this.fullBytes = limits.fullBytes ?? FULL_RUNS_BYTES;
    this.allBytes = limits.allBytes ?? ALL_RUNS_BYTES;
    this.skeletonBytes = limits.skeletonBytes ?? SKELETON_BYTES;
  }

  /** @param {HostToolRun} run */
  add(run) {
    const whole = approxBytes(run, this.fullBytes - this.bytes + 1);
    if (this.bytes + whole <= this.fullBytes) {
      this.runs.push(run);
      this.bytes += whole;
      return;
    }
    const messaging = this.isMessagingTool(String(run.toolName ?? ""));
    const compact = compactRun(run, { wholeArgs: messaging });
    const size = approxBytes(compact, Infinity) + ENTRY_BYTES;
    if (this.bytes + size <= this.allBytes) {
      this.runs.push(compact);
      this.bytes += size;
      this.compacted += 1;
      return;
    }
    // Past every budget a run still keeps what the result's facts read of it (its name, call id,
    // error flag, delivery and media facts; a send's arguments whole): without them a send would
    // be missing from `messagingToolSentTexts` and the reply delivered twice. Only the skeletons'
    // own budget ends that, and a run dropped then is counted and logged.
    const skeleton = skeletonRun(run, { wholeArgs: messaging });
    const skeletonSize = approxBytes(skeleton, Infinity) + ENTRY_BYTES;
    if (!messaging && this.bytes + skeletonSize > this.allBytes + this.skeletonBytes) {
      this.dropped += 1;
      return;
    }
    this.runs.push(skeleton);
    this.bytes += skeletonSize;
    this.compacted += 1;
  }

  /** What the budget did to this attempt's runs, for the log (undefined when every run is whole). */
  summary() {
    if (this.compacted === 0 && this.dropped === 0) return undefined;
    return `${this.compacted} host tool run(s) kept compact and ${this.dropped} dropped (byte budget ${this.allBytes}; ${this.bytes} held)`;
  }

  /**
   * The run of call `callId` (the latest, should a call id repeat), if it was kept.
   *
   * @param {unknown} callId
   */
  find(callId) {
    if (typeof callId !== "string" || callId === "") return undefined;
    for (let i = this.runs.length - 1; i >= 0; i -= 1) if (this.runs[i].callId === callId) return this.runs[i];
    return undefined;
  }
}

/**
 * What a run past the byte budget keeps: what the delivery facts read (the tool's name, call id,
 * error flag, the send's arguments, the result's delivery and media facts and whether it held an
 * image), never its full output.
 *
 * @param {HostToolRun} run
 * @param {{wholeArgs?: boolean}} [options] `wholeArgs` for a messaging run (its arguments are the send)
 * @returns {HostToolRun}
 */
export function compactRun(run, { wholeArgs = false } = {}) {
  return {
    toolName: String(run.toolName ?? ""),
    ...(typeof run.callId === "string" ? { callId: run.callId } : {}),
    isError: run.isError === true,
    // A send's text must match what the channel got, whole, or the duplicate-reply check misses it.
    args: wholeArgs ? run.args ?? {} : /** @type {Record<string, unknown>} */ (shrink(run.args ?? {}, COMPACT_ARGS_BYTES)),
    result: compactResult(run.result),
  };
}

/**
 * The least a run keeps: what the delivery facts read, with no output text at all.
 *
 * @param {HostToolRun} run
 * @param {{wholeArgs?: boolean}} [options]
 * @returns {HostToolRun}
 */
export function skeletonRun(run, { wholeArgs = false } = {}) {
  const compact = compactRun(run, { wholeArgs });
  const result = /** @type {any} */ (compact.result);
  if (result && typeof result === "object" && !(result instanceof Error)) {
    if (result.details !== undefined) result.details = shrink(record(run.result).details, 512, { maxString: 256, first: FACT_KEYS });
    if (Array.isArray(result.content)) result.content = result.content.map((/** @type {any} */ b) => (b.type === "text" ? { type: "text", text: "" } : b));
  }
  return { ...compact, args: wholeArgs ? compact.args : /** @type {Record<string, unknown>} */ (shrink(run.args ?? {}, 256, { maxString: 128 })) };
}

/** @param {unknown} value */
function record(value) {
  return value && typeof value === "object" ? /** @type {Record<string, any>} */ (value) : {};
}

/** @param {unknown} result */
function compactResult(result) {
  if (result instanceof Error || typeof result !== "object" || result === null) {
    return shrink(result, COMPACT_TEXT_CHARS, { maxString: COMPACT_TEXT_CHARS });
  }
  const record = /** @type {{details?: unknown, content?: unknown}} */ (result);
  /** @type {Record<string, unknown>} */
  const out = {};
  if (record.details !== undefined) out.details = shrink(record.details, COMPACT_DETAILS_BYTES, { maxString: 512, first: FACT_KEYS });
  if (Array.isArray(record.content)) {
    out.content = record.content.slice(0, COMPACT_BLOCKS).map((/** @type {any} */ block) => {
      if (block?.type === "text") return { type: "text", text: truncateText(String(block.text ?? ""), COMPACT_TEXT_CHARS) };
      // The media helper only asks whether an image was there; its bytes stay out.
      if (block?.type === "image") return { type: "image", mimeType: String(block.mimeType ?? ""), data: "" };
      return { type: String(block?.type ?? "unknown") };
    });
  }
  return out;
}

/**
 * The delivery fields of the attempt result.
 *
 * @param {HostToolRun[]} runs in the order they ran
 * @param {DeliveryHelpers} helpers
 * @param {Record<string, unknown>} [route] the messaging route ({@link messagingRoute})
 * @param {{mediaUrls: string[], trusted: Set<string>}} [pending] media queued before any tool ran
 *   (the attempt's internal events), with the URLs that are trusted local media
 * @returns {Pick<AttemptResult, "didSendViaMessagingTool" | "messagingToolSentTexts" | "messagingToolSentMediaUrls" | "messagingToolSentTargets"> & Partial<Pick<AttemptResult, "toolMediaUrls" | "toolAudioAsVoice" | "toolTrustedLocalMedia" | "sourceReplyDelivered">>}
 */
export function deliveryFacts(runs, helpers, route = {}, pending = { mediaUrls: [], trusted: new Set() }) {
  /** @type {string[]} */
  const texts = [];
  /** @type {string[]} */
  const sentMedia = [];
  /** @type {any[]} */
  const targets = [];
  /** @type {string[]} */
  const toolMedia = [];
  // Whether each queued URL is trusted local media: the embedded runner trusts a URL once any
  // producer vouches for it, and reports the reply's media as trusted only when every URL is.
  /** @type {Map<string, boolean>} */
  const trustByUrl = new Map();
  const queue = (/** @type {string} */ url, /** @type {boolean} */ trusted) => {
    if (trusted) trustByUrl.set(url, true);
    else if (!trustByUrl.has(url)) trustByUrl.set(url, false);
    if (!toolMedia.includes(url)) toolMedia.push(url);
  };
  for (const url of pending.mediaUrls) if (typeof url === "string" && url.trim()) queue(url.trim(), pending.trusted.has(url));
  let audioAsVoice = false;
  let sourceReplyDelivered = false;
  for (const run of runs) {
    const delivery = deliveredByRun(run, helpers, route);
    if (delivery.messaging) {
      if (delivery.fact?.sourceReplyDelivered === true) sourceReplyDelivered = true;
      if (!delivery.delivered || !delivery.send) continue;
      const text = messagingText(run.args);
      if (text) texts.push(text);
      const media = [...mediaUrlsOf(run.args), ...(artifact(helpers, run)?.mediaUrls ?? [])];
      sentMedia.push(...media);
      if (delivery.confirmedTarget) {
        targets.push({ ...delivery.confirmedTarget, ...(text ? { text } : {}), ...(media.length > 0 ? { mediaUrls: media } : {}) });
      }
      continue;
    }
    if (run.isError) continue;
    const found = artifact(helpers, run);
    if (!found || found.mediaUrls.length === 0) continue;
    const allowed = safe(() => helpers.filterToolResultMediaUrls?.(run.toolName, found.mediaUrls, run.result), []) ?? [];
    for (const url of allowed) if (typeof url === "string" && url.trim()) queue(url.trim(), found.trustedLocalMedia === true);
    audioAsVoice ||= found.audioAsVoice === true && allowed.length > 0;
  }
  const trustedLocalMedia = toolMedia.length > 0 && toolMedia.every((url) => trustByUrl.get(url) === true);
  return {
    // The embedded runtime's rule: any sent text, sent media or confirmed target is a send.
    didSendViaMessagingTool: texts.some((t) => t.trim() !== "") || sentMedia.some((u) => u.trim() !== "") || targets.length > 0,
    messagingToolSentTexts: texts,
    messagingToolSentMediaUrls: sentMedia,
    messagingToolSentTargets: targets,
    ...(toolMedia.length > 0 ? { toolMediaUrls: toolMedia } : {}),
    ...(audioAsVoice ? { toolAudioAsVoice: true } : {}),
    ...(trustedLocalMedia ? { toolTrustedLocalMedia: true } : {}),
    ...(sourceReplyDelivered ? { sourceReplyDelivered: /** @type {const} */ (true) } : {}),
  };
}

/**
 * What one host tool run delivered through OpenClaw's messaging: whether it is a messaging tool,
 * its delivery fact, whether it delivered (the settled fact, else the SDK's result check), whether
 * it was a send, and the send's target confirmed by its result.
 *
 * @param {HostToolRun} run
 * @param {DeliveryHelpers} helpers
 * @param {Record<string, unknown>} route the messaging route ({@link messagingRoute})
 */
export function deliveredByRun(run, helpers, route) {
  const messaging = safe(() => helpers.isMessagingTool?.(run.toolName), false) === true;
  if (!messaging) return { messaging, fact: undefined, delivered: false, send: false, confirmedTarget: undefined };
  const fact = safe(() => helpers.readEmbeddedMessageDeliveryFact?.(details(run.result)?.messageDelivery), undefined);
  const delivered = fact
    ? fact.status === "settled" && (!run.isError || fact.partialDelivery === true)
    : safe(() => helpers.isDeliveredMessagingToolResult?.({ ...run, args: run.args }), false) === true;
  const send = safe(() => helpers.isMessagingToolSendAction?.(run.toolName, run.args), false) === true;
  let confirmedTarget;
  if (delivered && send) {
    const pending = safe(() => helpers.extractMessagingToolSend?.(run.toolName, run.args, route), undefined);
    if (pending) confirmedTarget = safe(() => helpers.extractMessagingToolSendResult?.(pending, run.result), pending) ?? pending;
  }
  return { messaging, fact, delivered, send, confirmedTarget };
}

/**
 * The messaging route facts OpenClaw prepared, for the messaging target helpers.
 *
 * @param {any} params the attempt params
 * @returns {Record<string, unknown>}
 */
export function messagingRoute(params) {
  /** @type {Record<string, unknown>} */
  const route = { config: params?.config };
  for (const key of ["currentChannelId", "currentMessagingTarget", "currentThreadId", "currentMessageId"]) {
    if (params?.[key] !== undefined) route[key] = params[key];
  }
  return route;
}

/**
 * @param {DeliveryHelpers} helpers
 * @param {HostToolRun} run
 */
function artifact(helpers, run) {
  const found = safe(() => helpers.extractToolResultMediaArtifact?.(run.result), undefined);
  return found && Array.isArray(found.mediaUrls) ? { ...found, mediaUrls: found.mediaUrls.filter((u) => typeof u === "string") } : undefined;
}

/** @param {unknown} result */
function details(result) {
  const value = result && typeof result === "object" ? /** @type {{details?: any}} */ (result).details : undefined;
  return value && typeof value === "object" ? value : undefined;
}

/**
 * The message a send carries, read from the keys the embedded runtime reads, in its order.
 *
 * @param {Record<string, unknown>} args
 */
function messagingText(args) {
  for (const key of ["content", "message", "text", "body"]) {
    const value = args?.[key];
    if (typeof value === "string" && value.trim()) return value;
  }
  return undefined;
}

/** @param {Record<string, unknown>} args */
function mediaUrlsOf(args) {
  /** @type {string[]} */
  const urls = [];
  for (const key of ["media", "mediaUrl", "mediaUrls"]) {
    const value = args?.[key];
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item === "string" && item.trim()) urls.push(item.trim());
    }
  }
  return urls;
}

/**
 * A helper's answer, or `fallback` when it throws: a host helper failing must not fail the attempt.
 *
 * @template T
 * @param {() => T} run
 * @param {T} fallback
 * @returns {T}
 */
function safe(run, fallback) {
  try {
    const value = run();
    return value === undefined ? fallback : value;
  } catch {
    return fallback;
  }
}
