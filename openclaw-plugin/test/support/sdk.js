// The real OpenClaw SDK helpers the plugin's progress module uses, loaded from the pinned peer
// install (what index.js gets from the host), so tests assert against the real chunker and
// projections. $CLAWBRIDGE_OPENCLAW_BIN names the package's `openclaw.mjs` (as
// scripts/install-peers.sh prints it); else the repository's `.peers/` install is used. Without it
// the tests that need it skip, unless CLAWBRIDGE_REQUIRE_PEERS=1 makes that a failure.

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

import { repoRoot } from "./fakes.js";

function packageDir() {
  const bin = process.env.CLAWBRIDGE_OPENCLAW_BIN;
  return bin ? dirname(bin) : join(repoRoot, ".peers/openclaw/node_modules/openclaw");
}

/** The URL of the pinned `agent-harness-runtime` module (for a test that needs another helper). */
export function sdkModuleUrl() {
  return pathToFileURL(join(packageDir(), "dist/plugin-sdk/agent-harness-runtime.js")).href;
}

/**
 * `{ sdk }` with the helpers `progressHelpers` takes, or `{ skip }` saying why there are none.
 * Throws when peers are required and OpenClaw is missing.
 */
export async function loadRealSdk() {
  const dir = packageDir();
  const harnessRuntime = join(dir, "dist/plugin-sdk/agent-harness-runtime.js");
  const agentRuntime = join(dir, "dist/plugin-sdk/agent-runtime.js");
  if (!existsSync(harnessRuntime) || !existsSync(agentRuntime)) {
    const why = `OpenClaw is not installed at ${dir} (run scripts/install-peers.sh openclaw or set CLAWBRIDGE_OPENCLAW_BIN)`;
    if (process.env.CLAWBRIDGE_REQUIRE_PEERS === "1") throw new Error(`CLAWBRIDGE_REQUIRE_PEERS=1 but ${why}`);
    return { skip: why };
  }
  const h = await import(pathToFileURL(harnessRuntime).href);
  const a = await import(pathToFileURL(agentRuntime).href);
  return {
    sdk: {
      EmbeddedBlockChunker: a.EmbeddedBlockChunker,
      formatToolAggregate: h.formatToolAggregate,
      inferToolMetaFromArgs: h.inferToolMetaFromArgs,
      projectAgentToolActivity: h.projectAgentToolActivity,
      sanitizeToolArgs: h.sanitizeToolArgs,
      sanitizeToolResult: h.sanitizeToolResult,
    },
  };
}
