// The host capability members that shape native processes and their approvals:
// `preparedEnvironment()` reaches `attempt/run` as `processEnv` (src/prepared-env.js), a
// lightweight or tool-less turn as `skipNativeProjectDocs` (src/bootstrap.js), and
// `prepareMutableFileApproval` binds a native command's files around its approval
// (src/file-approval.js).

import assert from "node:assert/strict";
import { test } from "node:test";

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { decideWithFileBinding } from "../src/file-approval.js";
import { decideApproval } from "../src/host-requests.js";
import { fakeCodex } from "./support/fake-codex.js";
import { attemptParams, fakeHost, pluginUnderTest } from "./support/fakes.js";

const DEMO = "clawbridge-demo";

test("preparedEnvironment() reaches attempt/run as processEnv, layered as OpenClaw layers it", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const host = fakeHost();
  let calls = 0;
  host.preparedEnvironment = () => {
    calls += 1;
    return {
      localProcessEnv: { OPENCLAW_STATE_DIR: "/srv/oc", GH_TOKEN: "from-process-facts" },
      credentialScrubEnv: { GH_TOKEN: "", GITHUB_TOKEN: "" },
      localIdentityEnv: { GIT_AUTHOR_NAME: "Agent Person", GH_CONFIG_DIR: "/srv/oc/gh" },
      managedLocalIdentity: true,
    };
  };
  const { params } = attemptParams({ host });
  const result = await env.harness(DEMO).runAttempt(params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
  assert.equal(calls, 1);
  const run = env.protocol.sent.find((m) => m.method === "attempt/run");
  assert.deepEqual(run.params.processEnv, {
    OPENCLAW_STATE_DIR: "/srv/oc",
    GH_TOKEN: "",
    GITHUB_TOKEN: "",
    GIT_AUTHOR_NAME: "Agent Person",
    GH_CONFIG_DIR: "/srv/oc/gh",
  });
  assert.deepEqual(env.protocol.problems, []);
});

test("without preparedEnvironment (or with an empty one) attempt/run carries no processEnv", async (t) => {
  const env = pluginUnderTest();
  t.after(env.cleanup);
  const empty = fakeHost();
  empty.preparedEnvironment = () => ({ credentialScrubEnv: {}, localIdentityEnv: {}, managedLocalIdentity: false });
  for (const host of [fakeHost(), empty]) {
    const result = await env.harness(DEMO).runAttempt(attemptParams({ host }).params);
    assert.equal(result.terminal.kind, "ok");
  }
  const runs = env.protocol.sent.filter((m) => m.method === "attempt/run");
  assert.equal(runs.length, 2);
  for (const run of runs) assert.equal("processEnv" in run.params, false);
});

/** An attempt for the approval path, with a host whose file binding answers `binding`. */
function approvalAttempt({ binding, revalidated = { ok: true }, decision = "allow-always" }) {
  const host = fakeHost({ decision });
  const prepared = [];
  let revalidations = 0;
  host.prepareMutableFileApproval = async (request) => {
    prepared.push(request);
    if (binding instanceof Error) throw binding;
    return binding.ok
      ? { ...binding, revalidate: async () => ((revalidations += 1), revalidated) }
      : binding;
  };
  const { params } = attemptParams({ host });
  params.cwd = "/work/project";
  const attempt = { params, logger: { warn() {} }, signal: new AbortController().signal, attemptId: "a:1" };
  return { attempt, host, prepared, revalidations: () => revalidations };
}

const COMMAND = { kind: "command", callId: "c1", toolName: "exec", arguments: { command: "python run.py" } };

test("a one-shot binding offers only allow-once and turns an allow-always into allow", async () => {
  const a = approvalAttempt({ binding: { ok: true, requiresOneShot: true } });
  const answer = await decideWithFileBinding(a.attempt, COMMAND, decideApproval);
  assert.deepEqual(answer, { decision: "allow" });
  assert.deepEqual(a.prepared, [{ command: "python run.py", cwd: "/work/project" }]);
  assert.deepEqual(a.host.calls.requestApproval[0].allowedDecisions, ["allow-once", "deny"]);
  assert.equal(a.revalidations(), 1, "the files are checked again after the decision");
});

test("a binding that is not one-shot keeps every decision", async () => {
  const a = approvalAttempt({ binding: { ok: true, requiresOneShot: false } });
  const answer = await decideWithFileBinding(a.attempt, COMMAND, decideApproval);
  assert.deepEqual(answer, { decision: "allowForSession" });
  assert.equal(a.host.calls.requestApproval[0].allowedDecisions, undefined);
  assert.equal(a.revalidations(), 1);
});

test("files that cannot be bound, or changed after approval, deny the command", async () => {
  const refused = approvalAttempt({ binding: { ok: false, message: "script is a symlink" } });
  assert.deepEqual(await decideWithFileBinding(refused.attempt, COMMAND, decideApproval), {
    decision: "deny",
    message: "script is a symlink",
  });
  assert.equal(refused.host.calls.requestApproval.length, 0, "nobody is asked about a command that cannot be bound");

  const thrown = approvalAttempt({ binding: new Error("boom") });
  assert.equal((await decideWithFileBinding(thrown.attempt, COMMAND, decideApproval)).decision, "deny");

  const drifted = approvalAttempt({ binding: { ok: true, requiresOneShot: true }, revalidated: { ok: false, message: "run.py changed" } });
  const answer = await decideWithFileBinding(drifted.attempt, COMMAND, decideApproval);
  assert.equal(answer.decision, "deny");
  assert.match(answer.message, /run\.py changed/);
});

test("a denied command is not revalidated, and other approvals are not bound at all", async () => {
  const denied = approvalAttempt({ binding: { ok: true, requiresOneShot: true }, decision: "deny" });
  assert.equal((await decideWithFileBinding(denied.attempt, COMMAND, decideApproval)).decision, "deny");
  assert.equal(denied.revalidations(), 0);
  const patch = approvalAttempt({ binding: { ok: true, requiresOneShot: true } });
  const fileChange = { kind: "fileChange", callId: "c2", toolName: "apply_patch", arguments: { path: "a.txt" } };
  assert.deepEqual(await decideWithFileBinding(patch.attempt, fileChange, decideApproval), { decision: "allowForSession" });
  assert.deepEqual(patch.prepared, []);
});

test("a lightweight or tool-less turn asks the native runtime to skip its own project docs; an ordinary one does not", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-fake-codex-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const env = pluginUnderTest({ codexBin: fakeCodex(dir, { mode: "plain" }) });
  t.after(env.cleanup);
  const cases = [
    [{ bootstrapContextMode: "lightweight" }, true],
    [{ disableTools: true }, true],
    [{ bootstrapContextMode: "full" }, false],
    [{}, false],
  ];
  for (const [extra, skips] of cases) {
    const { params } = attemptParams();
    Object.assign(params, extra);
    const result = await env.harness("clawbridge-codex").runAttempt(params);
    assert.equal(result.terminal.kind, "ok", JSON.stringify(result.terminal));
    const run = env.protocol.sent.filter((m) => m.method === "attempt/run").at(-1);
    assert.equal(run.params.skipNativeProjectDocs === true, skips, `${JSON.stringify(extra)}: ${JSON.stringify(run.params)}`);
    if (!skips) assert.equal("skipNativeProjectDocs" in run.params, false);
  }
  // The demo harness has no native project docs to skip.
  const { params } = attemptParams();
  params.bootstrapContextMode = "lightweight";
  await env.harness(DEMO).runAttempt(params);
  assert.equal("skipNativeProjectDocs" in env.protocol.sent.filter((m) => m.method === "attempt/run").at(-1).params, false);
});
