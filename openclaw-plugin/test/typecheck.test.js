// The type check bites: the plugin as it is passes tsc against the pinned SDK's declarations (its
// result, terminal and harness object: src/contract.js), and the shapes the plugin once sent
// (`failure` as a string) or could send (an unknown failure source, a harness without runAttempt)
// fail it. Needs TypeScript from .peers/ (install-peers.sh).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

const pluginDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = resolve(pluginDir, "../.peers/typescript/node_modules/typescript/bin/tsc");
const required = process.env.CLAWBRIDGE_REQUIRE_PEERS === "1";
const skip = !existsSync(tsc) && !required ? "TypeScript is not installed in .peers/ (scripts/install-peers.sh)" : false;

function typecheck(project) {
  const run = spawnSync(process.execPath, [tsc, "-p", project], { encoding: "utf8" });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

test("the plugin type-checks against the pinned SDK", { skip }, () => {
  const { status, output } = typecheck(join(pluginDir, "tsconfig.json"));
  assert.equal(status, 0, output);
});

test("a result of the wrong shape fails the type check", { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-typecheck-"));
  try {
    writeFileSync(
      join(dir, "wrong.js"),
      [
        "// @ts-check",
        '/** @type {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult["terminal"]} */',
        'export const aborted = { kind: "aborted", source: "runtime", failure: "stop" };',
        '/** @type {import("openclaw/plugin-sdk/agent-harness-runtime").EmbeddedRunAttemptResult["terminal"]} */',
        'export const failed = { kind: "failed", source: "backend", error: "crashed" };',
        '/** @type {import("openclaw/plugin-sdk/agent-harness-runtime").AgentHarnessV2} */',
        'export const harness = { id: "h", label: "H", supports: () => ({ supported: true }) };',
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ extends: join(pluginDir, "tsconfig.json"), include: [], files: [join(dir, "wrong.js")] }),
    );
    const { status, output } = typecheck(join(dir, "tsconfig.json"));
    assert.notEqual(status, 0, "tsc accepted a wrong shape");
    assert.match(output, /wrong\.js\(3,\d+\): error TS2322: Type 'string' is not assignable to type 'AgentRunAttemptFailure'/);
    assert.match(output, /wrong\.js\(5,\d+\): error TS2322: Type '"backend"' is not assignable/);
    assert.match(output, /wrong\.js\(7,\d+\): error TS2322:[^\n]*AgentHarnessV2'\.\n\s*Property 'runAttempt' is missing/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
