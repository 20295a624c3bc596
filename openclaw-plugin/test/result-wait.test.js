// The plugin's own wait for an `attempt/run` result (result-wait.js): stopped while the bridge's
// budget is paused for a person, re-armed from what the bridge says is left.

import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";

import { ResultWait, UNLIMITED_TIMEOUT_MS, resultDeadline } from "../src/result-wait.js";
import { RpcTimeoutError } from "../src/rpc-client.js";

/** Whether `promise` settled within `ms`: "resolved", "rejected" or "pending". */
async function stateAfter(promise, ms) {
  let state = "pending";
  promise.then(
    () => (state = "resolved"),
    () => (state = "rejected"),
  );
  await sleep(ms);
  return state;
}

test("the result wait gives up after its time, but not while the budget is paused; after a resume it waits the time left plus the grace", async () => {
  const never = new Promise(() => {});
  const plain = new ResultWait(40, 30).race(never);
  await assert.rejects(plain, (error) => error instanceof RpcTimeoutError);

  const wait = new ResultWait(40, 30);
  const raced = wait.race(never);
  wait.pause();
  assert.equal(await stateAfter(raced, 150), "pending", "fired while a person was asked");
  wait.resume(20);
  // 20 ms left plus a 30 ms grace: not yet at 25 ms, given up well before 250 ms.
  assert.equal(await stateAfter(raced, 25), "pending");
  await assert.rejects(Promise.race([raced, sleep(250).then(() => "still waiting")]), (error) => error instanceof RpcTimeoutError);
});

test("a result that comes in time clears the wait for good", async () => {
  const wait = new ResultWait(30, 10);
  assert.equal(await wait.race(Promise.resolve("result")), "result");
  wait.pause();
  wait.resume(1);
  assert.equal(wait.timer, null, "nothing armed after the result");
});

test("an unlimited or absent budget has no result deadline; a wait longer than one timer does not fire early", async () => {
  assert.equal(resultDeadline(undefined, 120_000), undefined);
  assert.equal(resultDeadline(0, 120_000), undefined);
  assert.equal(resultDeadline(UNLIMITED_TIMEOUT_MS, 120_000), undefined, "the runner's unlimited budget");
  assert.equal(resultDeadline(2 ** 31 - 1, 120_000), undefined);
  assert.equal(resultDeadline(60_000, 120_000), 180_000);
  const wait = new ResultWait(3_000_000_000, 0);
  let settled = false;
  const outcome = wait.race(new Promise(() => {})).then(
    () => (settled = true),
    () => (settled = true),
  );
  await sleep(30);
  assert.equal(settled, false, "past Node's longest timer the wait is chained, not cut to 1 ms");
  wait.clear();
  void outcome;
});
