// The workspace bootstrap files (bootstrap.js): asked of the SDK helper for the run's workspace,
// kind and mode; AGENTS.md left to a native runtime that reads it from its own working directory.

import assert from "node:assert/strict";
import test from "node:test";

import { MAX_BOOTSTRAP_CHARS, bootstrapGuidance, bootstrapWorkspace, renderBootstrap, skipsNativeProjectDocs } from "../src/bootstrap.js";

const files = [
  { path: "/agent/USER.md", content: "Call me Sam." },
  { path: "/agent/AGENTS.md", content: "Keep the log tidy." },
  { path: "/agent/SOUL.md", content: "Answer like a lighthouse keeper." },
  { path: "/agent/HEARTBEAT.md", content: "[MISSING] Expected at: /agent/HEARTBEAT.md" },
];

function sdkReturning(contextFiles) {
  const calls = [];
  return { calls, sdk: { resolveBootstrapContextForRun: async (args) => (calls.push(args), { bootstrapFiles: [], contextFiles }) } };
}

const quiet = { warn() {} };

test("the SDK helper is asked for the canonical workspace, the run kind, the mode and the session", async () => {
  const { sdk, calls } = sdkReturning(files);
  const params = {
    workspaceDir: "/run/elsewhere",
    bootstrapWorkspaceDir: "/agent",
    cwd: "/run/elsewhere",
    bootstrapContextMode: "lightweight",
    bootstrapContextRunKind: "heartbeat",
    sessionKey: "agent:main:x",
    sessionId: "s-1",
    agentId: "main",
    config: { agents: {} },
  };
  const text = await bootstrapGuidance(sdk, "clawbridge-codex", params, quiet);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].workspaceDir, "/agent");
  assert.equal(calls[0].contextMode, "lightweight");
  assert.equal(calls[0].runKind, "heartbeat");
  assert.equal(calls[0].sessionKey, "agent:main:x");
  assert.equal(calls[0].agentId, "main");
  assert.equal(calls[0].config, params.config);
  // Run elsewhere: Codex does not see the agent workspace's AGENTS.md, so it is sent.
  assert.match(text, /## \/agent\/AGENTS\.md\n\nKeep the log tidy\./);
  assert.ok(text.indexOf("AGENTS.md") < text.indexOf("## /agent/SOUL.md") && text.indexOf("## /agent/SOUL.md") < text.indexOf("## /agent/USER.md"), text);
  assert.match(text, /^# Project Context/);
  assert.match(text, /SOUL\.md: persona\/tone/);
  assert.doesNotMatch(text, /MISSING/, "a missing file is not sent");
  assert.equal(bootstrapWorkspace({ workspaceDir: "/w" }), "/w");
});

test("a native runtime working in the bootstrap workspace reads AGENTS.md itself: it is not sent twice", async () => {
  const { sdk } = sdkReturning(files);
  const text = await bootstrapGuidance(sdk, "clawbridge-codex", { workspaceDir: "/agent", cwd: "/agent/" }, quiet);
  assert.doesNotMatch(text, /Keep the log tidy/);
  assert.match(text, /lighthouse keeper/);
});

test("Claude Code gets the bootstrap files too, AGENTS.md left to it in its own workspace; other harnesses none", async () => {
  const { sdk, calls } = sdkReturning(files);
  const text = await bootstrapGuidance(sdk, "clawbridge-claude", { workspaceDir: "/agent" }, quiet);
  assert.match(text, /lighthouse keeper/);
  assert.match(text, /Call me Sam/);
  assert.doesNotMatch(text, /Keep the log tidy/, "Claude Code reads AGENTS.md from its working directory itself");
  assert.equal(await bootstrapGuidance(sdk, "clawbridge-acp", { workspaceDir: "/agent" }, quiet), undefined);
  assert.equal(await bootstrapGuidance(sdk, "clawbridge-demo", { workspaceDir: "/agent" }, quiet), undefined);
  assert.equal(calls.length, 1, "asked only for the harness that takes them");
});

test("no helper, no files or a failing helper: the turn runs without bootstrap guidance", async () => {
  assert.equal(await bootstrapGuidance({}, "clawbridge-codex", { workspaceDir: "/w" }, quiet), undefined);
  assert.equal(await bootstrapGuidance(sdkReturning([]).sdk, "clawbridge-codex", { workspaceDir: "/w" }, quiet), undefined);
  const warnings = [];
  const failing = { resolveBootstrapContextForRun: async () => { throw new Error("disk gone"); } };
  assert.equal(await bootstrapGuidance(failing, "clawbridge-codex", { workspaceDir: "/w" }, { warn: (m) => warnings.push(m) }), undefined);
  assert.match(warnings[0], /disk gone/);
  assert.equal(await bootstrapGuidance(sdkReturning(files).sdk, "clawbridge-codex", {}, quiet), undefined, "no workspace");
});

test("the guidance is bounded", () => {
  const text = renderBootstrap([{ path: "/w/TOOLS.md", content: "x".repeat(MAX_BOOTSTRAP_CHARS * 2) }]);
  assert.equal(text.length, MAX_BOOTSTRAP_CHARS);
  assert.match(text, /cut here/);
});

test("a turn that skips the native project docs gets AGENTS.md from OpenClaw instead", async () => {
  for (const params of [{ bootstrapContextMode: "lightweight" }, { disableTools: true }]) {
    assert.equal(skipsNativeProjectDocs(params), true);
    const text = await bootstrapGuidance(sdkReturning(files).sdk, "clawbridge-codex", { workspaceDir: "/agent", ...params }, quiet);
    assert.match(text, /Keep the log tidy/, `${JSON.stringify(params)}: the native runtime does not read it this time`);
  }
  assert.equal(skipsNativeProjectDocs({ bootstrapContextMode: "full", disableTools: false }), false);
});
