// @ts-check
// The session's transcript history for `attempt/run` (`history`, protocol version 2): the entries on
// the session's active branch before this prompt, flattened to text, the newest kept within the
// bridge's byte cap. The bridge compares the last entry with the position its binding was made at and
// seeds a new native session with these entries when it cannot or must not resume
// (docs/host-protocol.md#transcript-history).

import { isCompactionEntry } from "./compaction-entry.js";
import { targetOf } from "./transcript.js";

/** The bridge's cap on the history's text (roles, texts and keys), in UTF-8 bytes. */
export const MAX_HISTORY_BYTES = 512 * 1024;
/** The bridge's cap on the history's entries. */
export const MAX_HISTORY_ENTRIES = 4096;
/** The most text one entry keeps (a huge tool result must not crowd out the conversation). */
export const MAX_ENTRY_TEXT_BYTES = 32 * 1024;
/** What a tool call's arguments keep. */
const MAX_ARGS_CHARS = 1024;

/**
 * The history to send, or `undefined` when the SDK cannot read the transcript (an older host) or
 * the run is detached. Never throws: a transcript that cannot be read is logged and not sent.
 *
 * @param {any} params the attempt params
 * @param {{readVisibleSessionTranscriptMessageEntries?: Function} | undefined} sdk
 * @param {{warn?: (text: string) => void}} [logger]
 * @returns {Promise<{entries: Array<{role: string, text: string, key?: string}>, omitted: number} | undefined>}
 */
export async function readHistory(params, sdk, logger) {
  const read = sdk?.readVisibleSessionTranscriptMessageEntries;
  if (typeof read !== "function" || params?.sessionPersistence === "detached") return undefined;
  let rows;
  try {
    rows = await read(targetOf(params));
  } catch (error) {
    logger?.warn?.(`clawbridge: the session transcript could not be read for the native session: ${error instanceof Error ? error.message : error}`);
    return undefined;
  }
  rows = Array.isArray(rows) ? rows : [];
  await withMediaText(rows, params?.hostCapabilities?.prepareContextMedia, logger);
  return historyOf(rows);
}

/**
 * Rows whose message holds more than text (an image, an attachment) get the text the host's
 * `prepareContextMedia` rebuilds for them under its media policy (`mediaText`); the projection is
 * text, so the images it returns are named, not sent. Never throws.
 *
 * @param {any[]} rows
 * @param {Function | undefined} prepare
 * @param {{warn?: (text: string) => void}} [logger]
 */
async function withMediaText(rows, prepare, logger) {
  if (typeof prepare !== "function") return;
  for (const row of rows) {
    const content = row?.message?.content;
    if (!Array.isArray(content) || !content.some((b) => b && b.type !== "text" && b.type !== "toolCall" && b.type !== "thinking")) continue;
    try {
      const prepared = await prepare({ message: row.message, maxChars: MAX_ENTRY_TEXT_BYTES });
      const images = Array.isArray(prepared?.images) ? prepared.images.length : 0;
      if (typeof prepared?.text === "string") row.mediaText = prepared.text + "\n[image]".repeat(images);
    } catch (error) {
      logger?.warn?.(`clawbridge: a transcript entry's media could not be prepared: ${error instanceof Error ? error.message : error}`);
    }
  }
}

/**
 * The entries of `rows` (oldest first) as the bridge takes them: the current prompt, which core
 * stored before the attempt, left out; the newest entries kept within the caps.
 *
 * @param {any[]} rows
 */
export function historyOf(rows) {
  const entries = withoutCommandReplies(rows).map(entryOf).filter((e) => e !== null);
  // Core stores the user's prompt before it calls the harness: the prompt travels as the turn.
  const last = entries[entries.length - 1];
  if (last && last.role === "user" && !last.key?.startsWith("clawbridge:")) entries.pop();
  let bytes = 0;
  let kept = 0;
  for (let i = entries.length - 1; i >= 0 && kept < MAX_HISTORY_ENTRIES; i -= 1) {
    const e = entries[i];
    const size = utf8(e.role) + utf8(e.text) + (e.key ? utf8(e.key) : 0);
    if (bytes + size > MAX_HISTORY_BYTES) break;
    bytes += size;
    kept += 1;
  }
  return { entries: entries.slice(entries.length - kept), omitted: entries.length - kept };
}

/**
 * `rows` without the exchanges of a chat command core answered itself: a slash command the user
 * sent (`/compact`) and core's reply to it right after, an assistant row of provider `openclaw`,
 * model `gateway-injected`, whose idempotency key is the command's run id (the command's row is
 * keyed `<run id>:user`), e.g. `/compact`'s "⚙️ Compacted (…)". Neither is conversation, and a
 * reply core wrote must not count as the transcript moving without the native thread (a `/compact`
 * would otherwise abandon the very thread it compacted).
 *
 * @param {any[]} rows
 */
function withoutCommandReplies(rows) {
  const out = [];
  for (const row of rows) {
    const previous = out[out.length - 1]?.message;
    if (isCommandReply(row?.message, previous)) {
      out.pop();
      continue;
    }
    out.push(row);
  }
  return out;
}

/**
 * @param {any} message
 * @param {any} previous the row before it
 */
function isCommandReply(message, previous) {
  return (
    message?.role === "assistant" &&
    message.provider === "openclaw" &&
    message.model === "gateway-injected" &&
    typeof message.idempotencyKey === "string" &&
    previous?.role === "user" &&
    previous.idempotencyKey === `${message.idempotencyKey}:user` &&
    textOf(previous).trim().startsWith("/")
  );
}

/**
 * @param {any} row
 * @returns {{role: string, text: string, key?: string} | null}
 */
function entryOf(row) {
  const message = row?.message;
  // A native compaction's entry is no conversation: kept out of the model's context, it moves no
  // native position either (compaction-entry.js).
  if (isCompactionEntry(message)) return null;
  const role = typeof message?.role === "string" ? message.role : typeof row?.role === "string" ? row.role : null;
  if (!role) return null;
  const key = [row?.idempotencyKey, message?.idempotencyKey, message?.__openclaw?.idempotencyKey].find((k) => typeof k === "string");
  let text = typeof row?.mediaText === "string" ? row.mediaText : textOf(message);
  if (role === "toolResult") text = `[tool result${typeof message.toolName === "string" ? ` of ${message.toolName}` : ""}] ${text}`;
  text = clip(text, MAX_ENTRY_TEXT_BYTES);
  return key ? { role, text, key } : { role, text };
}

/** @param {any} message */
function textOf(message) {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const parts = [];
  for (const block of content) {
    if (block?.type === "text" && typeof block.text === "string") parts.push(block.text);
    else if (block?.type === "toolCall") {
      let args = "";
      try {
        args = JSON.stringify(block.arguments ?? {}) ?? "";
      } catch {
        args = "";
      }
      if (args.length > MAX_ARGS_CHARS) args = `${args.slice(0, MAX_ARGS_CHARS)}…`;
      parts.push(`[tool call ${typeof block.name === "string" ? block.name : "tool"} ${args}]`);
    } else if (block?.type === "image") parts.push("[image]");
  }
  return parts.join("\n");
}

/** @param {string} text */
function utf8(text) {
  return Buffer.byteLength(text, "utf8");
}

/**
 * `text` cut to at most `max` UTF-8 bytes (on a character boundary), marked when cut.
 *
 * @param {string} text
 * @param {number} max
 */
function clip(text, max) {
  if (utf8(text) <= max) return text;
  const marker = " … [cut]";
  let out = Buffer.from(text, "utf8").subarray(0, max - utf8(marker)).toString("utf8");
  // A cut inside a character decodes to U+FFFD: dropped.
  out = out.replace(/\uFFFD+$/u, "");
  return out + marker;
}

/**
 * Tells the host the attempt ran in a new native session seeded with the transcript (the bridge's
 * `projection`), so the user sees why the native thread did not continue.
 *
 * @param {any} response the `attempt/run` result
 * @param {string} attemptId
 * @param {{warn?: (text: string) => void}} logger
 */
export function reportProjection(response, attemptId, logger) {
  const p = response?.projection;
  if (!p || typeof p.reason !== "string") return;
  const omitted = Number(p.omitted) > 0 ? ` (${p.omitted} older left out)` : "";
  logger.warn?.(`clawbridge: attempt ${attemptId}: a new native session was started with ${p.entries} transcript entries${omitted}: ${p.reason}`);
}
