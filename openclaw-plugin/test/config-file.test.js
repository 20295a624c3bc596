// The plugin's `configFile` reaches the bridge it spawns: as the bridge's `--config`, read by the
// real `clawbridge serve` (a setting from the file takes effect; a bad file is the bridge's error,
// with its file:line, in the attempt's failure).

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { resolveConfig } from "../src/config.js";
import { attemptParams, pluginUnderTest, recordingLogger } from "./support/fakes.js";

const DEMO = "clawbridge-demo";

/** A temp dir holding `config.toml` with `text`; the test removes it. */
function configDir(t, text) {
  const dir = mkdtempSync(join(tmpdir(), "clawbridge-config-file-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "config.toml");
  writeFileSync(file, typeof text === "function" ? text(dir) : text);
  return { dir, file };
}

test("config: configFile becomes the bridge's --config before serve; a blank one is reported and dropped", () => {
  const logger = recordingLogger();
  const cfg = resolveConfig({ args: ["--x"], configFile: "/etc/clawbridge.toml", passEnv: ["vertex"] }, logger);
  assert.deepEqual(cfg.args, ["--x", "--pass-env", "vertex", "--config", "/etc/clawbridge.toml"]);
  assert.equal(cfg.configFile, "/etc/clawbridge.toml");
  assert.equal(logger.lines.length, 0, logger.lines.join("\n"));
  const blank = resolveConfig({ configFile: " " }, logger);
  assert.deepEqual(blank.args, []);
  assert.equal(logger.lines.length, 1, logger.lines.join("\n"));
});

test("config: a relative configFile is refused, ~/ is the home, and --config already in args wins", () => {
  const logger = recordingLogger();
  const relative = resolveConfig({ configFile: "clawbridge.toml" }, logger);
  assert.deepEqual(relative.args, []);
  assert.equal(relative.configFile, undefined);
  assert.match(logger.lines.join("\n"), /absolute path/);
  const home = resolveConfig({ configFile: "~/cb.toml" }, logger);
  assert.deepEqual(home.args, ["--config", join(homedir(), "cb.toml")]);
  const twice = resolveConfig({ args: ["--config=/a.toml"], configFile: "/b.toml" }, logger);
  assert.deepEqual(twice.args, ["--config=/a.toml"], "one --config reaches the bridge");
  assert.match(logger.lines.at(-1), /already passes --config/);
});

test("a setting from configFile takes effect in the bridge the plugin spawns (its state dir)", async (t) => {
  const { dir, file } = configDir(t, (d) => `[bridge]\nstate-dir = ${JSON.stringify(join(d, "from-file"))}\n`);
  // No state dir from the environment, which would win over the file (an empty variable is unset).
  const env = pluginUnderTest({ config: { configFile: file, env: { CLAWBRIDGE_STATE_DIR: "" } } });
  t.after(env.cleanup);
  const result = await env.harness(DEMO).runAttempt(attemptParams().params);
  assert.equal(result.terminal.kind, "ok", JSON.stringify(result));
  assert.ok(existsSync(join(dir, "from-file", "pids")), "the bridge keeps its pid registry in the file's state dir");
});

test("a configFile the bridge refuses fails the attempt with the bridge's file:line and key", async (t) => {
  const { file } = configDir(t, "[bridge]\nstate-dirr = \"/tmp/x\"\n");
  const env = pluginUnderTest({ config: { configFile: file } });
  t.after(env.cleanup);
  await assert.rejects(env.harness(DEMO).runAttempt(attemptParams().params), (error) => {
    assert.ok(error.message.includes(`${file}:2:1`), error.message);
    assert.match(error.message, /bridge\.state-dirr/);
    return true;
  });
});

test("config: with a configFile clawbridge-acp stays registered, an explicit one too; the bridge decides", () => {
  const saved = process.env.CLAWBRIDGE_ACP_AGENT;
  delete process.env.CLAWBRIDGE_ACP_AGENT;
  try {
    const logger = recordingLogger();
    const cfg = resolveConfig({ configFile: "/etc/clawbridge.toml" }, logger);
    assert.ok(cfg.harnesses.includes("clawbridge-acp"), "the file may name the agent");
    const listed = resolveConfig({ configFile: "/etc/clawbridge.toml", harnesses: ["clawbridge-acp"] }, logger);
    assert.deepEqual(listed.harnesses, ["clawbridge-acp"], "an explicit entry is kept");
    const viaArgs = resolveConfig({ args: ["--config=/etc/clawbridge.toml"] }, logger);
    assert.ok(viaArgs.harnesses.includes("clawbridge-acp"), "--config in args counts too");
    assert.ok(!logger.lines.some((line) => /needs an agent command/.test(line)), logger.lines.join("\n"));
    assert.ok(!resolveConfig({}, logger).harnesses.includes("clawbridge-acp"), "no file, no agent: not registered");
  } finally {
    if (saved !== undefined) process.env.CLAWBRIDGE_ACP_AGENT = saved;
  }
});

test("clawbridge-acp on a bridge whose configFile names no agent is refused clearly, with the doctor command", async (t) => {
  const saved = process.env.CLAWBRIDGE_ACP_AGENT;
  delete process.env.CLAWBRIDGE_ACP_AGENT;
  t.after(() => {
    if (saved !== undefined) process.env.CLAWBRIDGE_ACP_AGENT = saved;
  });
  const { file } = configDir(t, "[run]\nbackend = \"demo\"\n");
  const env = pluginUnderTest({ config: { configFile: file } });
  t.after(env.cleanup);
  const acp = env.harness("clawbridge-acp");
  assert.ok(acp, "registered on the bridge's word");
  // The bridge answers `initialize` during this attempt; it offers no ACP harness.
  await env.harness(DEMO).runAttempt(attemptParams().params);
  const verdict = acp.supports({ requestedRuntime: "clawbridge-acp" });
  assert.equal(verdict.supported, false);
  assert.match(verdict.reason, /clawbridge-acp is unavailable: the bridge offers no clawbridge-acp/);
  assert.match(verdict.reason, /acp\.agent in the bridge's config file/);
  assert.ok(verdict.reason.includes(`run \`clawbridge --config ${file} doctor --backend acp\``), verdict.reason);
});
