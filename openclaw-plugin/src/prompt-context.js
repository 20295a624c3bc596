// @ts-check
// The native turn's input text and system-prompt addition from the attempt's prompt inputs, as
// OpenClaw's embedded runner renders them (docs/peers/openclaw.md#prompt-inputs):
//
// - the context internal producers add for this turn (`internalEvents`, `runtimeContextFragments`)
//   and the current turn's inbound context (`currentInboundContext`) go into one protected runtime
//   context block ahead of the prompt — the embedded runner sends the same text as a hidden
//   runtime-context message right before the user's prompt; a native runtime has no hidden message,
//   so the block leads the turn's input;
// - a turn that is only runtime context (no prompt text) asks the model to continue the runtime
//   event, with the inbound context inline before it, as the embedded runner does;
// - `finalizePromptForResolvedTools` finalizes the prompt once the offered tools are known;
// - `gitCoauthorPrompt` is system-prompt guidance, appended to `extraSystemPrompt`.
//
// The SDK exports none of these renderers, so they are reproduced here.

/** The protected runtime-context delimiters OpenClaw's runtimes recognise. */
export const RUNTIME_CONTEXT_BEGIN = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";
export const RUNTIME_CONTEXT_END = "<<<END_OPENCLAW_INTERNAL_CONTEXT>>>";
const ESCAPED_BEGIN = "[[OPENCLAW_INTERNAL_CONTEXT_BEGIN]]";
const ESCAPED_END = "[[OPENCLAW_INTERNAL_CONTEXT_END]]";
/** The user prompt of a turn that carries only runtime context. */
export const RUNTIME_EVENT_PROMPT = "Continue the OpenClaw runtime event.";
const TASK_COMPLETION_MARKER = "[Internal task completion event]";
/** The most characters one event's status label keeps. */
const MAX_STATUS_LABEL_CHARS = 500;
/** The most characters of runtime context one turn carries; a runaway producer cannot flood it. */
export const MAX_RUNTIME_CONTEXT_CHARS = 256 * 1024;
const PROMPT_JOINERS = new Set(["\n\n", "\n", " "]);

/**
 * @param {any} params the attempt params
 * @param {{toolNames?: string[], logger?: any}} [options] the names of the OpenClaw tools offered
 * @returns {{prompt: string, extraSystemPrompt: string | undefined}}
 */
export function nativeTurnInput(params, options = {}) {
  const logger = options.logger;
  let prompt = typeof params.prompt === "string" ? params.prompt : String(params.prompt ?? "");
  prompt = finalizeForTools(prompt, params.finalizePromptForResolvedTools, options.toolNames ?? [], logger);

  const eventFragments = [
    ...(promptCarriesInternalEvents(prompt) ? [] : internalEventFragments(params.internalEvents)),
    ...fragmentsOf(params.runtimeContextFragments),
  ];
  const inbound = inboundContextOf(params.currentInboundContext);
  const runtimeOnly = !prompt.trim() && eventFragments.length > 0;
  let turnPrompt;
  let fragments;
  if (runtimeOnly) {
    // As the embedded runner: the inbound context is inline, before the continue prompt.
    turnPrompt = [inbound?.text.trim() ?? "", RUNTIME_EVENT_PROMPT].filter(Boolean).join(inbound?.joiner ?? "\n\n");
    fragments = eventFragments;
  } else {
    turnPrompt = prompt;
    fragments = [...(inbound ? [inbound.text] : []), ...eventFragments];
  }
  const context = bounded(fragments.join("\n\n"));
  const input = context ? `${RUNTIME_CONTEXT_BEGIN}\n${context}\n${RUNTIME_CONTEXT_END}\n\n${turnPrompt}` : turnPrompt;

  const system = [params.extraSystemPrompt, params.gitCoauthorPrompt]
    .filter((part) => typeof part === "string" && part.trim() !== "")
    .join("\n\n");
  return { prompt: input, extraSystemPrompt: system || undefined };
}

/** `finalizePromptForResolvedTools` with whether the `message` tool is among the offered tools. */
function finalizeForTools(prompt, finalize, toolNames, logger) {
  if (typeof finalize !== "function") return prompt;
  try {
    const out = finalize({ prompt, messageToolAvailable: toolNames.some((name) => name.trim().toLowerCase() === "message") });
    return typeof out === "string" ? out : prompt;
  } catch (error) {
    // A finalizer that throws leaves the prompt as the caller wrote it.
    logger?.warn?.(`clawbridge: finalizePromptForResolvedTools failed: ${error?.message ?? error}`);
    return prompt;
  }
}

/** The non-blank texts of `RuntimeContextFragment[]`. */
function fragmentsOf(fragments) {
  if (!Array.isArray(fragments)) return [];
  return fragments.map((f) => (typeof f?.text === "string" ? f.text : "")).filter((text) => text.trim() !== "");
}

/** `currentInboundContext` as its text and the channel's joiner, when it has text. */
function inboundContextOf(context) {
  if (!context || typeof context.text !== "string" || context.text.trim() === "") return undefined;
  const joiner = PROMPT_JOINERS.has(context.promptJoiner) ? context.promptJoiner : "\n\n";
  return { text: context.text, joiner };
}

/**
 * Whether the prompt already leads with OpenClaw's rendering of the internal events (the `agent`
 * command prepends it for runtimes that own their prompt assembly): rendering them again would
 * show the model each event twice.
 */
function promptCarriesInternalEvents(prompt) {
  if (!prompt.startsWith(RUNTIME_CONTEXT_BEGIN)) return false;
  const end = prompt.indexOf(RUNTIME_CONTEXT_END);
  return end > 0 && prompt.slice(0, end).includes(TASK_COMPLETION_MARKER);
}

/**
 * The embedded runner's fragments for each task-completion event: how to use it, the event as
 * data, then the producer's reply instruction.
 */
function internalEventFragments(events) {
  if (!Array.isArray(events)) return [];
  const out = [];
  for (const event of events) {
    if (!event || event.type !== "task_completion") continue;
    out.push(
      "A background task completed. Keep internal details private and use its result to reply in your normal assistant voice.",
      taskCompletionData(event),
    );
    if (typeof event.replyInstruction === "string" && event.replyInstruction.trim()) out.push(escapeDelimiters(event.replyInstruction.trim()));
  }
  return out;
}

function taskCompletionData(event) {
  const line = (value, fallback) => {
    const text = typeof value === "string" ? escapeDelimiters(value).replace(/\r?\n+/g, " ").trim() : "";
    return text || fallback;
  };
  let status = line(event.statusLabel, line(event.status, "unknown"));
  if (status.length > MAX_STATUS_LABEL_CHARS) status = `${status.slice(0, MAX_STATUS_LABEL_CHARS - 12)}…[truncated]`;
  const lines = [
    TASK_COMPLETION_MARKER,
    `source: ${line(event.source, "unknown")}`,
    `session_key: ${line(event.childSessionKey, "unknown")}`,
    `session_id: ${line(event.childSessionId, "unknown")}`,
    `type: ${line(event.announceType, "unknown")}`,
    `task: ${line(event.taskLabel, "unnamed task")}`,
    `status: ${status}`,
    "",
    typeof event.result === "string" && event.result ? escapeDelimiters(event.result) : "(no output)",
  ];
  if (typeof event.modelRouteChange === "string" && event.modelRouteChange.trim()) lines.push("", line(event.modelRouteChange, ""));
  const media = [
    ...(Array.isArray(event.mediaUrls) ? event.mediaUrls : []),
    ...(Array.isArray(event.attachments) ? event.attachments.map((a) => a?.path ?? a?.url ?? a?.mediaUrl ?? a?.filePath) : []),
  ]
    .filter((m) => typeof m === "string" && m.trim())
    .map((m) => line(m, ""));
  // Quoted as OpenClaw quotes a directive whose URL a reply parser could misread.
  const directive = (m) => `MEDIA:${m.includes('"') || /[`'\\})\],]$/u.test(m) ? `"${m}"` : m}`;
  if (media.length > 0) lines.push("", "Generated media:", ...[...new Set(media)].filter(Boolean).map(directive));
  if (typeof event.statsLine === "string" && event.statsLine.trim()) lines.push("", escapeDelimiters(event.statsLine.trim()));
  return lines.join("\n");
}

/** Untrusted text cannot close or open the protected block. */
function escapeDelimiters(text) {
  return text.replaceAll(RUNTIME_CONTEXT_BEGIN, ESCAPED_BEGIN).replaceAll(RUNTIME_CONTEXT_END, ESCAPED_END);
}

/** The runtime context, escaped (a fragment cannot end the block early) and bounded. */
function bounded(context) {
  const escaped = escapeDelimiters(context);
  if (escaped.length <= MAX_RUNTIME_CONTEXT_CHARS) return escaped;
  return `${escaped.slice(0, MAX_RUNTIME_CONTEXT_CHARS)}\n…[runtime context truncated]`;
}

/** Internal event sources whose media OpenClaw generated itself (trusted local media). */
const GENERATED_MEDIA_SOURCES = new Set(["image_generation", "video_generation", "music_generation"]);

/**
 * The media the attempt's internal events carry (a subagent's or a generation task's output), in
 * order and deduplicated: the embedded runner queues it for the turn's reply before any tool runs,
 * trusting it as local media only when a generation task produced it.
 *
 * @param {unknown} events `params.internalEvents`
 * @returns {{mediaUrls: string[], trusted: Set<string>}}
 */
export function internalEventMedia(events) {
  /** @type {string[]} */
  const mediaUrls = [];
  const trusted = new Set();
  for (const event of Array.isArray(events) ? events : []) {
    if (!event || typeof event !== "object") continue;
    const generated = event.type === "task_completion" && GENERATED_MEDIA_SOURCES.has(event.source);
    const attachments = Array.isArray(event.attachments) ? event.attachments : [];
    const refs = [
      ...(Array.isArray(event.mediaUrls) ? event.mediaUrls : []),
      ...attachments.map((a) => a?.path ?? a?.url ?? a?.mediaUrl ?? a?.filePath),
    ];
    for (const ref of refs) {
      if (typeof ref !== "string" || !ref.trim()) continue;
      const url = ref.trim();
      if (!mediaUrls.includes(url)) mediaUrls.push(url);
      if (generated) trusted.add(url);
    }
  }
  return { mediaUrls, trusted };
}

/**
 * Why the attempt's `clientTools` cannot be honoured, or `undefined` when it carries none.
 * OpenResponses client tools are executed by the caller: the embedded runner offers them and ends
 * the turn at the first call, reporting it as `clientToolCalls`. Neither native runtime can end
 * its turn at a tool call and hand the call back unanswered (docs/peers/openclaw.md#client-tools).
 */
export function clientToolsProblem(params) {
  const tools = Array.isArray(params?.clientTools) ? params.clientTools : [];
  if (tools.length === 0) return undefined;
  const names = tools
    .map((t) => t?.function?.name ?? t?.name)
    .filter((n) => typeof n === "string")
    .slice(0, 5);
  return `the attempt carries OpenResponses client tools${names.length ? ` (${names.join(", ")})` : ""}, which a native harness cannot hand back to the caller`;
}
