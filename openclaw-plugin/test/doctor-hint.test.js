// Every up-front refusal because the bridge or a backend cannot run points at `clawbridge doctor`
// for that backend: a bridge that cannot start, a real bridge whose codex is missing, and one whose
// codex exits during its handshake.

import assert from "node:assert/strict";
import { test } from "node:test";

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, pluginUnderTest } from "./support/fakes.js";

const CODEX = "clawbridge-codex";
const HINT = /; run `clawbridge doctor --backend codex` for details$/;

test("a bridge that cannot start fails the attempt with the doctor command", async (t) => {
  const env = pluginUnderTest({ config: { command: "/nonexistent/clawbridge" } });
  t.after(env.cleanup);
  const { params } = attemptParams();
  await assert.rejects(env.harness(CODEX).runAttempt(params), (error) => {
    assert.match(error.message, /nonexistent\/clawbridge/);
    assert.match(error.message, HINT);
    return true;
  });
});

test("a backend the real bridge reports unavailable is refused with the doctor command", async (t) => {
  const env = pluginUnderTest({ codexBin: "/nonexistent/codex" });
  t.after(env.cleanup);
  const { params } = attemptParams();
  await assert.rejects(env.harness(CODEX).runAttempt(params), (error) => {
    assert.match(error.message, /nonexistent\/codex/);
    assert.match(error.message, HINT);
    return true;
  });
  // The bridge has answered `initialize` by now: `supports` names the backend it reported.
  const verdict = env.harness(CODEX).supports({ requestedRuntime: CODEX });
  assert.equal(verdict.supported, false);
  assert.match(verdict.reason, /nonexistent\/codex/);
  assert.match(verdict.reason, HINT);
});

test("a backend that exits during its handshake is refused with the doctor command", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-doctor-hint-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "exitDuringHandshake" }) });
  t.after(env.cleanup);
  const { params } = attemptParams();
  await assert.rejects(env.harness(CODEX).runAttempt(params), (error) => {
    assert.match(error.message, /handshake|exited|initialize/i);
    assert.match(error.message, HINT);
    return true;
  });
});

test("the doctor command repeats the plugin's config file and, for ACP, its agent, quoted for a shell", async () => {
  const { doctorCommand } = await import("../src/doctor-hint.js");
  assert.equal(doctorCommand(CODEX, undefined), "clawbridge doctor --backend codex");
  assert.equal(
    doctorCommand(CODEX, { backend: "codex" }, { configFile: "/etc/my clawbridge.toml", acpAgent: "ignored" }),
    "clawbridge --config '/etc/my clawbridge.toml' doctor --backend codex",
  );
  assert.equal(
    doctorCommand("clawbridge-acp", undefined, { acpAgent: "npx -y it's-acp --flag='a b'" }),
    `clawbridge doctor --backend acp --agent 'npx -y it'\\''s-acp --flag='\\''a b'\\'''`,
  );
});
