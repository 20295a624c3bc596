// Stand-ins for what OpenClaw hands the plugin (`api`, attempt params, host capabilities, the
// transcript API), recording every call so tests can assert on them. The bridge is always real.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { createPlugin } from "../../src/plugin.js";
import { createProtocolChecker, loadSchema } from "./schema.js";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root. */
export const repoRoot = resolve(here, "../../..");

// Every bridge a test starts inherits this environment: an empty config file, so the developer's
// own ~/.config/clawbridge/config.toml (or CLAWBRIDGE_CONFIG) never changes what a test sees. A
// test of `configFile` passes `--config`, which beats it.
process.env.CLAWBRIDGE_CONFIG = join(repoRoot, "fixtures/data/empty-config.toml");

/** The bridge binary: $CLAWBRIDGE_BIN, else the workspace's debug build. */
export function bridgeBinary() {
  const path = process.env.CLAWBRIDGE_BIN || join(repoRoot, "target/debug/clawbridge");
  if (!existsSync(path)) {
    throw new Error(`no clawbridge binary at ${path}: run \`cargo build\` or set CLAWBRIDGE_BIN`);
  }
  return path;
}

/** The checked-in host protocol schema. */
export function protocolSchema() {
  return loadSchema(join(repoRoot, "docs/host-protocol.schema.json"));
}

/** A logger that keeps what it was told. */
export function recordingLogger() {
  const lines = [];
  const log = (level) => (text) => lines.push(`${level}: ${text}`);
  return { lines, info: log("info"), warn: log("warn"), error: log("error"), debug: log("debug") };
}

/** The transcript API with dedupe by idempotency key, like OpenClaw's `idempotencyLookup: "scan"`. */
export function fakeTranscript() {
  const rows = [];
  const calls = [];
  let next = 1;
  const append = async (request) => {
    calls.push(request);
    const key = request.message?.idempotencyKey;
    const existing = key ? rows.find((r) => r.message.idempotencyKey === key) : undefined;
    if (existing) return { appended: false, messageId: existing.id, message: existing.message };
    const row = { id: `e${next++}`, sessionId: request.sessionId, message: request.message };
    rows.push(row);
    return { appended: true, messageId: row.id, message: row.message };
  };
  return { rows, calls, append };
}

/**
 * A plugin with a real bridge, a fake `api`, a fake transcript and a protocol checker.
 * `deps` may override `protocolVersion`; `config` is the plugin config.
 */
export function pluginUnderTest({ config = {}, deps = {}, checker, codexBin } = {}) {
  const transcript = fakeTranscript();
  const logger = recordingLogger();
  const protocol = checker ?? createProtocolChecker(protocolSchema());
  const plugin = createPlugin({ appendTranscriptMessage: transcript.append, tap: protocol.tap, ...deps });
  const registered = [];
  const stateDir = mkdtempSync(join(tmpdir(), "clawbridge-plugin-test-"));
  const api = {
    pluginConfig: {
      command: bridgeBinary(),
      // The fake codex plays one scripted thread per process: one app-server per attempt.
      env: {
        CLAWBRIDGE_STATE_DIR: stateDir,
        ...(codexBin ? { CLAWBRIDGE_CODEX_BIN: codexBin, CLAWBRIDGE_CODEX_SERVER: "per-attempt" } : {}),
      },
      ...config,
    },
    logger,
    runtime: { version: "2026.9.6" },
    registerAgentHarness: (harness) => registered.push(harness),
  };
  plugin.register(api);
  const harness = (id) => registered.find((h) => h.id === id);
  /** Stops the bridge and removes its state dir. */
  const cleanup = async () => {
    await plugin.dispose();
    rmSync(stateDir, { recursive: true, force: true });
  };
  return { plugin, api, registered, harness, transcript, logger, protocol, cleanup, stateDir };
}

/** Host capabilities whose approvals answer `decision` (or wait forever when it is `"hold"`). */
export function fakeHost({ decision = "allow-once", tools = [] } = {}) {
  const calls = { requestApproval: [], waitForApproval: [], createToolSurface: [] };
  return {
    calls,
    kind: "agent-harness-host-capability",
    version: 1,
    assertActive: () => {},
    bindToolSurface: (t) => t,
    runBeforeToolCall: async () => ({ blocked: false }),
    createToolSurface: (options, binding) => {
      calls.createToolSurface.push({ options, binding });
      return tools;
    },
    requestApproval: (request) => {
      calls.requestApproval.push(request);
      if (decision === "hold") {
        return new Promise((_, reject) => {
          request.signal?.addEventListener("abort", () => reject(new Error("aborted")), { once: true });
        });
      }
      if (decision === "async") return Promise.resolve({ id: "approval-1", decision: null });
      return Promise.resolve({ id: "approval-1", decision });
    },
    waitForApproval: (request) => {
      calls.waitForApproval.push(request);
      return Promise.resolve({ decision: "allow-once", terminalReason: null });
    },
  };
}

let sessions = 0;

/** Attempt params like OpenClaw's `agent exec` builds them, with recording callbacks. */
export function attemptParams({ host = fakeHost(), abortSignal, prompt = "Run echo hi" } = {}) {
  sessions += 1;
  const sessionId = `sess-${process.pid}-${sessions}`;
  const observed = [];
  const events = [];
  const partials = [];
  const params = {
    prompt,
    workspaceDir: tmpdir(),
    agentDir: join(tmpdir(), "agent"),
    config: {},
    sessionId,
    sessionKey: `agent:main:explicit:${sessionId}`,
    sessionFile: `agent:main:explicit:${sessionId}`,
    sessionTarget: {
      agentId: "main",
      sessionId,
      sessionKey: `agent:main:explicit:${sessionId}`,
      storePath: join(tmpdir(), "sessions.json"),
    },
    agentId: "main",
    provider: "mock",
    modelId: "mock-1",
    model: { id: "mock-1", api: "openai-completions", provider: "mock" },
    thinkLevel: "off",
    timeoutMs: 60_000,
    runId: `run-${sessionId}`,
    abortSignal,
    hostCapabilities: host,
    onAgentEvent: (event) => events.push(event),
    onPartialReply: (payload) => partials.push(payload),
    observeToolTerminal: (input) => {
      observed.push(input);
      return {
        lastToolError: { toolName: input.toolName, error: "sentinel", mutatingAction: false },
        executionStarted: true,
        sideEffectEvidence: false,
        effectReceipt: { state: "read_completed" },
      };
    },
  };
  return { params, observed, events, partials, host };
}
