// The entry point as OpenClaw loads it: `index.js` imports the SDK by its bare
// `openclaw/plugin-sdk/*` names, which the host resolves. Here a module hook resolves them to
// stand-ins, so the wiring of the real entry (default export, SDK functions passed through) is
// tested without OpenClaw; tests/openclaw_e2e.rs loads it in the real OpenClaw.

import assert from "node:assert/strict";
import { registerHooks } from "node:module";
import { test } from "node:test";

const sdk = {
  "openclaw/plugin-sdk/session-transcript-runtime": [
    "export const calls = []; export async function appendSessionTranscriptMessageByIdentity(p) { calls.push(p); return { appended: true, messageId: 'm1' }; }",
    "export async function appendSessionTranscriptMessagesByIdentity() { return []; }",
    "export async function publishSessionTranscriptUpdateByIdentity() {}",
    "export async function readVisibleSessionTranscriptMessageEntries() { return []; }",
  ].join("\n"),
  "openclaw/plugin-sdk/agent-harness-runtime": [
    "export class AgentHarnessPreflightError extends Error { constructor(m, o) { super(m); this.options = o; } }",
    ...[
      "buildEmbeddedAttemptToolRunContext", "resolveAttemptSpawnWorkspaceDir", "resolveModelAuthMode", "buildEmbeddedForegroundPromptContext", "classifyAgentHarnessTerminalOutcome", "extractMessagingToolSend",
      "extractMessagingToolSendResult", "extractToolResultMediaArtifact", "filterToolResultMediaUrls",
      "inferToolMetaFromArgs", "isDeliveredMessagingToolResult", "isMessagingTool", "isMessagingToolSendAction",
      "readEmbeddedMessageDeliveryFact", "runAgentEndSideEffects", "runAgentHarnessBeforeMessageWriteHook",
      "emitAgentEvent", "formatToolAggregate", "projectAgentToolActivity", "sanitizeToolArgs", "sanitizeToolResult",
    ].map((name) => `export function ${name}() {}`),
    "export async function detectAndLoadAgentHarnessPromptImages() { return { images: [] }; }",
    "export function setActiveEmbeddedRun() {} export function clearActiveEmbeddedRun() {}",
    "export async function runAgentHarnessGatewayQuestion() { return { status: 'cancelled' }; }",
  ].join("\n"),
  "openclaw/plugin-sdk/agent-runtime": "export class EmbeddedBlockChunker {}",
};

registerHooks({
  resolve(specifier, context, next) {
    if (Object.hasOwn(sdk, specifier)) {
      return { url: `data:text/javascript,${encodeURIComponent(sdk[specifier])}`, shortCircuit: true };
    }
    return next(specifier, context);
  },
});

test("index.js default-exports the plugin object and registers the configured harnesses", async () => {
  const { default: plugin } = await import("../index.js");
  assert.equal(plugin.id, "clawbridge");
  assert.equal(typeof plugin.register, "function");
  const registered = [];
  const api = {
    pluginConfig: { command: "/nonexistent/clawbridge", harnesses: ["clawbridge-codex"] },
    logger: { info() {}, warn() {}, error() {}, debug() {} },
    registerAgentHarness: (h) => registered.push(h),
  };
  plugin.register(api);
  plugin.register(api);
  assert.deepEqual(registered.map((h) => [h.id, h.label, h.pluginId]), [["clawbridge-codex", "Codex (clawbridge)", "clawbridge"]]);
  assert.equal(typeof plugin.runtime.options.appendTranscriptMessage, "function", "the SDK's append is wired");
  assert.equal(plugin.runtime.options.PreflightError.name, "AgentHarnessPreflightError");
  for (const name of ["appendSessionTranscriptMessagesByIdentity", "runAgentEndSideEffects", "classifyAgentHarnessTerminalOutcome", "buildEmbeddedAttemptToolRunContext"]) {
    assert.equal(typeof plugin.runtime.options.sdk[name], "function", `the SDK's ${name} is wired`);
  }
  assert.equal(registered[0].dispose, undefined, "no harness dispose: OpenClaw calls it through a retired instance");
  assert.equal(plugin.runtime.options.loadPromptImages.name, "detectAndLoadAgentHarnessPromptImages");
  assert.equal(plugin.runtime.options.setActiveEmbeddedRun.name, "setActiveEmbeddedRun");
  assert.equal(plugin.runtime.options.clearActiveEmbeddedRun.name, "clearActiveEmbeddedRun");
  assert.equal(plugin.runtime.options.askGatewayQuestion.name, "runAgentHarnessGatewayQuestion", "the SDK's question helper is wired");
  const progressSdk = plugin.runtime.options.progressSdk;
  assert.equal(progressSdk.EmbeddedBlockChunker.name, "EmbeddedBlockChunker", "the SDK's block reply chunker is wired");
  for (const name of ["emitAgentEvent", "formatToolAggregate", "inferToolMetaFromArgs", "projectAgentToolActivity", "sanitizeToolArgs", "sanitizeToolResult"]) {
    assert.equal(progressSdk[name].name, name, `the SDK's ${name} is wired`);
  }
});

test("the manifest and package.json agree with the code", async () => {
  const { readFile } = await import("node:fs/promises");
  const manifest = JSON.parse(await readFile(new URL("../openclaw.plugin.json", import.meta.url), "utf8"));
  const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  const { KNOWN_HARNESSES, DEFAULT_HARNESSES } = await import("../src/config.js");
  assert.equal(manifest.id, "clawbridge");
  assert.deepEqual([...manifest.activation.onAgentHarnesses].sort(), Object.keys(KNOWN_HARNESSES).sort());
  assert.deepEqual([...manifest.configSchema.properties.harnesses.items.enum].sort(), Object.keys(KNOWN_HARNESSES).sort());
  assert.ok(DEFAULT_HARNESSES.every((h) => h in KNOWN_HARNESSES));
  assert.equal(manifest.configSchema.additionalProperties, false);
  assert.deepEqual(pkg.openclaw.extensions, ["./index.js"]);
  assert.equal(pkg.openclaw.compat.pluginApi, ">=2026.8.1");
  assert.equal(pkg.type, "module");
  assert.equal(pkg.dependencies, undefined, "no runtime dependencies");
});
