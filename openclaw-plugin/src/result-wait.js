// How long the plugin waits for an `attempt/run` result before it gives up on a stuck bridge: the
// attempt's budget plus a grace. The bridge stops its budget while a person is asked (it streams
// `budgetPaused` / `budgetResumed`, docs/host-protocol.md#the-attempt-budget), so this wait stops
// too, and after a resume it is re-armed from the time the bridge says is left: a person taking ten
// minutes over an approval must not make the plugin abandon a healthy attempt.

import { RpcTimeoutError } from "./rpc-client.js";

/** A budget at or above this is "no deadline" for OpenClaw's lane (the runner's threshold). */
export const UNLIMITED_TIMEOUT_MS = 2_147_000_000;
/** The longest delay one Node timer takes (a longer one fires after 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * How long to wait for a result of an attempt with budget `timeoutMs`: the budget plus `graceMs`,
 * or no limit for an unlimited (or absent) budget.
 * @param {unknown} timeoutMs
 * @param {number} graceMs
 * @returns {number | undefined}
 */
export function resultDeadline(timeoutMs, graceMs) {
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) return undefined;
  return timeoutMs >= UNLIMITED_TIMEOUT_MS ? undefined : timeoutMs + graceMs;
}

export class ResultWait {
  /**
   * @param {number} ms how long to wait from `race`
   * @param {number} graceMs what is added to the bridge's remaining budget on a resume
   */
  constructor(ms, graceMs) {
    this.ms = ms;
    this.graceMs = graceMs;
    this.timer = null;
    this.paused = false;
    this.done = false;
    this.fire = null;
  }

  /** `request`'s outcome, or an `RpcTimeoutError` when the wait runs out first. */
  race(request) {
    const expired = new Promise((_, reject) => {
      this.fire = () => reject(new RpcTimeoutError("attempt/run", this.ms));
    });
    if (!this.paused) this.#arm(this.ms);
    return Promise.race([request, expired]).finally(() => this.clear());
  }

  /** The bridge stopped its budget: stop waiting until it resumes. */
  pause() {
    if (this.done) return;
    this.paused = true;
    this.#disarm();
  }

  /** The bridge's budget counts again with `remainingMs` left: wait that plus the grace. */
  resume(remainingMs) {
    if (this.done || !this.paused) return;
    this.paused = false;
    this.#arm(Math.max(1, Number.isFinite(remainingMs) ? remainingMs : 0) + this.graceMs);
  }

  /** The result came (or the attempt failed): never fire. */
  clear() {
    this.done = true;
    this.#disarm();
  }

  #arm(ms) {
    this.#disarm();
    if (this.done || !this.fire) return;
    // Longer waits than one timer takes are chained, so they never fire early.
    const step = Math.min(ms, MAX_TIMER_MS);
    this.timer = setTimeout(() => (ms > step ? this.#arm(ms - step) : this.fire?.()), step);
    this.timer.unref?.();
  }

  #disarm() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
