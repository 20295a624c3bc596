// @ts-check
// Byte bounds for what the plugin holds while an attempt runs: a cheap size estimate of a value
// (string lengths, buffers' bytes, a fixed cost per entry; it stops counting past its limit, so a
// huge value costs no more to measure than the limit), and bounded copies of values that keep
// their shape and their first bytes.

/** What one container entry or scalar is counted as beyond its text: object and key overhead. */
export const ENTRY_BYTES = 16;

/**
 * Roughly how many bytes `value` holds, counted up to `limit` (a result above `limit` means "more
 * than `limit`"). Cycles and depth are cut off: they hold nothing new.
 *
 * @param {unknown} value
 * @param {number} limit
 * @returns {number}
 */
export function approxBytes(value, limit) {
  let total = 0;
  /** @type {unknown[]} */
  const stack = [value];
  const seen = new Set();
  while (stack.length > 0 && total <= limit) {
    const item = stack.pop();
    total += ENTRY_BYTES;
    if (typeof item === "string") total += utf8Bytes(item);
    else if (ArrayBuffer.isView(item)) total += item.byteLength;
    else if (item instanceof ArrayBuffer) total += item.byteLength;
    else if (item && typeof item === "object") {
      if (seen.has(item)) continue;
      seen.add(item);
      if (item instanceof Error) {
        // Not enumerable, so counted apart; `cause` and any other own property are entries below.
        total += utf8Bytes(String(item.message ?? "")) + utf8Bytes(String(item.stack ?? ""));
        if ("cause" in item) stack.push(item.cause);
      }
      if (Array.isArray(item)) {
        for (const entry of item) stack.push(entry);
      } else {
        for (const [key, entry] of Object.entries(item)) {
          total += utf8Bytes(key);
          stack.push(entry);
        }
      }
    }
  }
  return total;
}

/**
 * The bytes `text` takes in UTF-8 (what it costs in memory is about as much: a non-Latin-1 string
 * is held as UTF-16, two bytes per unit, never more than UTF-8's three per unit).
 *
 * @param {string} text
 */
export function utf8Bytes(text) {
  return Buffer.byteLength(text, "utf8");
}

/**
 * `text` cut to at most `max` characters, saying how much was cut.
 *
 * @param {string} text
 * @param {number} max
 */
export function truncateText(text, max) {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max))}…[${text.length - max} more characters not kept]`;
}

/**
 * A copy of `value` of about `budget` bytes at most: the same shape, strings cut (each to at most
 * `maxString` characters), entries past the budget left out, nothing deeper than `maxDepth`.
 * Keys named in `first` are copied before the others, so the facts that matter survive the cut.
 *
 * @param {unknown} value
 * @param {number} budget
 * @param {{maxString?: number, maxDepth?: number, first?: string[]}} [options]
 * @returns {unknown}
 */
export function shrink(value, budget, options = {}) {
  const maxString = options.maxString ?? 1024;
  const maxDepth = options.maxDepth ?? 6;
  const first = options.first ?? [];
  const left = { bytes: budget };
  const seen = new Set();
  /**
   * @param {unknown} item
   * @param {number} depth
   * @returns {unknown}
   */
  const copy = (item, depth) => {
    left.bytes -= ENTRY_BYTES;
    if (typeof item === "string") {
      const text = truncateText(item, Math.max(0, Math.min(maxString, left.bytes)));
      left.bytes -= text.length;
      return text;
    }
    if (item === null || typeof item !== "object") return item;
    if (item instanceof Error) {
      const error = new Error(truncateText(String(item.message ?? ""), maxString));
      error.name = item.name;
      left.bytes -= error.message.length;
      return error;
    }
    if (ArrayBuffer.isView(item) || item instanceof ArrayBuffer) return `[${item.byteLength} bytes not kept]`;
    if (depth >= maxDepth || seen.has(item)) return "[not kept]";
    seen.add(item);
    if (Array.isArray(item)) {
      /** @type {unknown[]} */
      const out = [];
      for (const entry of item) {
        if (left.bytes <= 0) break;
        out.push(copy(entry, depth + 1));
      }
      return out;
    }
    /** @type {Record<string, unknown>} */
    const out = {};
    const keys = Object.keys(item);
    const ordered = [...first.filter((key) => keys.includes(key)), ...keys.filter((key) => !first.includes(key))];
    for (const key of ordered) {
      if (left.bytes <= 0) break;
      left.bytes -= key.length;
      out[key] = copy(/** @type {Record<string, unknown>} */ (item)[key], depth + 1);
    }
    return out;
  };
  return copy(value, 0);
}
