// @ts-check
// What the plugin keeps from an attempt's event stream for its result: reasoning and plan text (for
// the silent-turn classification), each tool's start arguments (for `toolMetas[].meta`), and the
// usage totals (for live output-token reports). Bounded: the classification needs only whether any
// text was seen, and a turn's tools are capped.

import { OutputTokenReporter } from "./effects.js";
import { HostToolRuns } from "./delivery.js";

const MAX_TEXT = 4096;
const MAX_TOOLS = 1024;

/** The facts of one attempt, filled by {@link observeEvent}. */
export class AttemptFacts {
  /** @param {any} host the attempt's host capability */
  constructor(host) {
    this.reasoningText = "";
    this.planText = "";
    /** @type {Map<string, unknown>} */
    this.toolArguments = new Map();
    this.hostToolRuns = new HostToolRuns();
    this.usage = new OutputTokenReporter(host);
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
      if (typeof event.callId === "string" && facts.toolArguments.size < MAX_TOOLS) {
        facts.toolArguments.set(event.callId, event.arguments);
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
 * @param {string} text
 * @param {unknown} more
 */
function append(text, more) {
  if (typeof more !== "string" || text.length >= MAX_TEXT) return text;
  return (text + more).slice(0, MAX_TEXT);
}
