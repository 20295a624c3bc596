// The options the plugin gives `createToolSurface`: the run context OpenClaw's embedded runner gives
// its own coding tools (from the SDK's `buildEmbeddedAttemptToolRunContext` and the attempt params
// under the runner's names), and run cleanups that run once when the attempt ends.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { RunCleanups, toolSurfaceOptions } from "../src/tool-surface.js";
import { attemptParams, fakeHost, pluginUnderTest, recordingLogger, repoRoot } from "./support/fakes.js";

/** A channel run's params, as OpenClaw prepares them for a group chat turn. */
function channelParams() {
  return {
    sessionId: "s-1",
    sessionKey: "agent:main:telegram:group:42",
    runId: "run-7",
    agentId: "main",
    agentDir: "/agents/main",
    workspaceDir: "/work",
    cwd: "/work/sub",
    provider: "anthropic",
    modelId: "claude-sonnet-4-6",
    model: { id: "claude-sonnet-4-6", provider: "anthropic", api: "anthropic-messages", baseUrl: "https://api.example", contextWindow: 200000, input: ["text", "image"] },
    messageChannel: "telegram",
    messageProvider: "telegram",
    chatType: "group",
    groupId: "42",
    senderId: "u-9",
    senderName: "Ada",
    senderIsOwner: false,
    currentMessageId: 1001,
    messageThreadId: 7,
    disableMessageTool: false,
    oneShotCliRun: true,
    execOverrides: { host: "gateway" },
    bashElevated: false,
    toolOverrides: { webSearch: false },
    currentInboundEventKind: "message",
  };
}

test("the requester, channel, model and exec facts reach createToolSurface under the runner's names", () => {
  const seen = [];
  const signal = new AbortController().signal;
  const registerRunCleanup = () => {};
  const options = toolSurfaceOptions(channelParams(), {
    buildRunContext: (p) => {
      seen.push(p);
      return { senderId: p.senderId, chatType: p.chatType, runtimeToolAllowlist: undefined };
    },
    signal,
    registerRunCleanup,
    extra: { questionPrompt: { send() {} } },
  });
  assert.equal(seen.length, 1, "the SDK's run context is built once from the attempt params");
  assert.equal(seen[0].groupId, "42");
  assert.equal(options.senderId, "u-9");
  assert.equal(options.chatType, "group");
  assert.ok(!("runtimeToolAllowlist" in options), "undefined members are left out, not set to undefined");
  assert.equal(options.messageChannel, "telegram");
  assert.equal(options.messageProvider, "telegram");
  assert.equal(options.runId, "run-7");
  assert.equal(options.sessionKey, "agent:main:telegram:group:42");
  assert.equal(options.runSessionKey, "agent:main:telegram:group:42");
  assert.equal(options.cwd, "/work/sub");
  assert.equal(options.modelApi, "anthropic-messages");
  assert.equal(options.modelBaseUrl, "https://api.example");
  assert.equal(options.modelContextWindowTokens, 200000);
  assert.equal(options.modelHasVision, true);
  assert.equal(options.sessionConfigSource, "pinned", "a one-shot CLI run keeps its session policy");
  assert.equal(options.webSearchEnabled, false);
  assert.equal(options.inboundEventKind, "message");
  assert.deepEqual(options.exec, { host: "gateway", elevated: false });
  assert.equal(options.abortSignal, signal);
  assert.equal(options.registerRunCleanup, registerRunCleanup);
  assert.equal(typeof options.questionPrompt.send, "function");
});

test("the sandbox's session key, the spawn workspace, the model's compat hints and auth mode go as the runner passes them", () => {
  const authModes = [];
  const options = toolSurfaceOptions(
    { ...channelParams(), sandboxSessionKey: "agent:main:sandbox:42", model: { ...channelParams().model, compat: { toolCallIdFormat: "strict" } } },
    {
      resolveModelAuthMode: (provider, config, store, opts) => (authModes.push([provider, store, opts]), "api-key"),
      resolveSpawnWorkspaceDir: () => "/never-asked",
    },
  );
  assert.equal(options.sessionKey, "agent:main:sandbox:42", "tool policy is scoped by the sandbox's key");
  assert.equal(options.runSessionKey, "agent:main:telegram:group:42", "the run keeps its own key");
  assert.equal(options.spawnWorkspaceDir, "/work", "a run in a subfolder spawns children in the agent's workspace");
  assert.deepEqual(options.modelCompat, { toolCallIdFormat: "strict" });
  assert.equal(options.modelAuthMode, "api-key");
  assert.deepEqual(authModes, [["anthropic", undefined, { workspaceDir: "/work" }]]);

  const atRoot = toolSurfaceOptions(
    { ...channelParams(), cwd: "/work" },
    { resolveSpawnWorkspaceDir: ({ resolvedWorkspace }) => `${resolvedWorkspace}` },
  );
  assert.equal(atRoot.spawnWorkspaceDir, "/work", "otherwise the SDK resolves it from the workspace");
  assert.ok(!("modelCompat" in atRoot) && !("modelAuthMode" in atRoot), "nothing to say: nothing set");
});

test("without the SDK helper, or when it throws, the attempt's own facts still go", () => {
  const logger = recordingLogger();
  const bare = toolSurfaceOptions(channelParams(), {});
  assert.equal(bare.messageChannel, "telegram");
  assert.equal(bare.senderId, undefined, "requester facts come from the SDK's run context");
  const failing = toolSurfaceOptions(channelParams(), {
    buildRunContext: () => {
      throw new Error("bad facts");
    },
    logger,
  });
  assert.equal(failing.runId, "run-7");
  assert.match(logger.lines.join("\n"), /tool run context could not be built: bad facts/);
});

test("the real SDK's run context carries the requester facts", async (t) => {
  const sdkFile = join(repoRoot, ".peers/openclaw/node_modules/openclaw/dist/plugin-sdk/agent-harness-runtime.js");
  if (!existsSync(sdkFile)) {
    if (process.env.CLAWBRIDGE_REQUIRE_PEERS === "1") throw new Error(`CLAWBRIDGE_REQUIRE_PEERS=1 but ${sdkFile} is missing`);
    t.skip("OpenClaw is not installed in .peers/");
    return;
  }
  const { buildEmbeddedAttemptToolRunContext } = await import(pathToFileURL(sdkFile).href);
  const options = toolSurfaceOptions(channelParams(), { buildRunContext: buildEmbeddedAttemptToolRunContext });
  assert.equal(options.senderId, "u-9");
  assert.equal(options.senderName, "Ada");
  assert.equal(options.groupId, "42");
  assert.equal(options.chatType, "group");
  assert.equal(options.currentMessageId, 1001);
});

test("run cleanups run once when the attempt ends; a failing one is logged", async () => {
  const cleanups = new RunCleanups();
  const ran = [];
  const logger = recordingLogger();
  cleanups.register(async (reason) => ran.push(reason));
  cleanups.register(async () => {
    throw new Error("still busy");
  });
  await cleanups.run("the attempt ended", logger);
  await cleanups.run("again", logger);
  assert.deepEqual(ran, ["the attempt ended"]);
  assert.match(logger.lines.join("\n"), /run cleanup failed: still busy/);
});

test("a run cleanup that never settles does not hold the attempt's end", async () => {
  const cleanups = new RunCleanups();
  const logger = recordingLogger();
  cleanups.register(() => new Promise(() => {}));
  const started = Date.now();
  await cleanups.run("the attempt ended", logger, 50);
  assert.ok(Date.now() - started < 5000);
  assert.match(logger.lines.join("\n"), /did not finish within 50 ms/);
});

test("through the bridge: createToolSurface gets the run context and the attempt runs its tools' cleanups", async (t) => {
  const built = [];
  const env = pluginUnderTest({
    deps: { sdk: { buildEmbeddedAttemptToolRunContext: (p) => (built.push(p), { senderId: p.senderId }) } },
  });
  t.after(env.cleanup);
  const host = fakeHost();
  const cleaned = [];
  const surface = host.createToolSurface;
  host.createToolSurface = (options, binding) => {
    options.registerRunCleanup?.(async (reason) => cleaned.push(reason));
    return surface(options, binding);
  };
  const { params } = attemptParams({ host });
  params.senderId = "u-1";
  params.messageChannel = "slack";
  const result = await env.harness("clawbridge-demo").runAttempt(params);
  assert.equal(result.terminal.kind, "ok");
  const options = host.calls.createToolSurface[0].options;
  assert.equal(options.senderId, "u-1");
  assert.equal(options.messageChannel, "slack");
  assert.equal(built.length, 1);
  assert.deepEqual(cleaned, ["the attempt ended"]);
});
