// @ts-check
// What the plugin keeps from an attempt's event stream for its result: reasoning and plan text (for
// the silent-turn classification), each tool's start arguments (for `toolMetas[].meta`), and the
// usage totals (for live output-token reports). Bounded: the classification needs only whether any
// text was seen, and a turn's tool arguments are bounded in bytes.

import { approxBytes, shrink } from "./bounds.js";
import { OutputTokenReporter } from "./effects.js";
import { HostToolRuns } from "./delivery.js";

const MAX_TEXT = 4096;
/**
 * Bytes of tool start arguments kept as they are (the same objects the events hold; keeping them
 * keeps them alive after a queued event was cut, so they are counted here too).
 */
const TOOL_ARGUMENTS_BYTES = 2 * 1024 * 1024;
/** Past that, each call's arguments are kept as a copy of at most this many bytes (for its meta). */
const CUT_ARGUMENTS_BYTES = 1024;
/** Bytes of all arguments kept, whole or cut; later calls keep none (their meta is left out). */
const ALL_TOOL_ARGUMENTS_BYTES = 4 * 1024 * 1024;

/** The facts of one attempt, filled by {@link observeEvent}. */
export class AttemptFacts {
  /**
   * @param {any} host the attempt's host capability
   * @param {{isMessagingTool?: (name: string) => unknown}} [sdk] the SDK's helpers (messaging runs keep their arguments)
   */
  constructor(host, sdk = {}) {
    this.reasoningText = "";
    this.planText = "";
    /** @type {Map<string, unknown>} */
    this.toolArguments = new Map();
    /** Bytes held by `toolArguments`. */
    this.toolArgumentsBytes = 0;
    this.hostToolRuns = new HostToolRuns({ isMessagingTool: sdk?.isMessagingTool });
    this.usage = new OutputTokenReporter(host);
    /** How many times the native runtime compacted the context by itself during the attempt. */
    this.compactions = 0;
    /** The context's size after the latest of them, in tokens, when the native runtime said. */
    /** @type {number | undefined} */
    this.compactionTokensAfter = undefined;
  }
}

/**
 * @param {AttemptFacts} facts
 * @param {any} event a bridge event
 * @param {{debug?: (text: string) => void}} [logger]
 */
export function observeEvent(facts, event, logger) {
  switch (event?.type) {
    case "reasoningDelta":
      facts.reasoningText = append(facts.reasoningText, event.delta);
      break;
    case "reasoningFinal":
      facts.reasoningText = append(facts.reasoningText, event.text);
      break;
    case "plan": {
      const steps = Array.isArray(event.steps) ? event.steps.map((/** @type {any} */ s) => s?.step).filter((/** @type {unknown} */ s) => typeof s === "string") : [];
      facts.planText = append(facts.planText, [event.explanation, ...steps].filter((t) => typeof t === "string").join("\n"));
      break;
    }
    case "toolStarted":
      if (typeof event.callId === "string") keepToolArguments(facts, event.callId, event.arguments);
      break;
    case "contextCompacted":
      facts.compactions += 1;
      // The compacted context's size, when the native runtime gave it (Claude Code's post_tokens).
      if (typeof event.tokensAfter === "number" && Number.isFinite(event.tokensAfter) && event.tokensAfter >= 0) {
        facts.compactionTokensAfter = event.tokensAfter;
      }
      break;
    case "usage":
      facts.usage.observe(event, (error) => logger?.debug?.(`clawbridge: reportOutputTokens refused: ${error instanceof Error ? error.message : error}`));
      break;
    default:
      break;
  }
}

/**
 * Keeps a call's start arguments within the byte budget: whole, then cut, then none.
 *
 * @param {AttemptFacts} facts
 * @param {string} callId
 * @param {unknown} args
 */
export function keepToolArguments(facts, callId, args) {
  if (facts.toolArguments.has(callId)) return;
  const whole = approxBytes(args, TOOL_ARGUMENTS_BYTES - facts.toolArgumentsBytes + 1);
  if (facts.toolArgumentsBytes + whole <= TOOL_ARGUMENTS_BYTES) {
    facts.toolArguments.set(callId, args);
    facts.toolArgumentsBytes += whole;
    return;
  }
  const cut = shrink(args, CUT_ARGUMENTS_BYTES, { maxString: 256 });
  const size = approxBytes(cut, Infinity);
  if (facts.toolArgumentsBytes + size > ALL_TOOL_ARGUMENTS_BYTES) return;
  facts.toolArguments.set(callId, cut);
  facts.toolArgumentsBytes += size;
}

/**
 * @param {string} text
 * @param {unknown} more
 */
function append(text, more) {
  if (typeof more !== "string" || text.length >= MAX_TEXT) return text;
  return (text + more).slice(0, MAX_TEXT);
}
