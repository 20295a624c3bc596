// The ACP harness: registered only when an agent command is configured, and the `acpAgent` key
// reaches the bridge as CLAWBRIDGE_ACP_AGENT.
import test from "node:test";
import assert from "node:assert/strict";

import { createPlugin } from "../src/plugin.js";
import { resolveConfig } from "../src/config.js";

function logger() {
  const lines = [];
  return { lines, warn: (text) => lines.push(text), info() {}, debug() {}, error: (text) => lines.push(text) };
}

test("clawbridge-acp is registered, labelled, only when an ACP agent is configured", () => {
  const saved = process.env.CLAWBRIDGE_ACP_AGENT;
  delete process.env.CLAWBRIDGE_ACP_AGENT;
  try {
    const register = (pluginConfig) => {
      const registered = [];
      createPlugin({}).register({ pluginConfig, logger: logger(), registerAgentHarness: (h) => registered.push(h) });
      return registered;
    };
    const without = register({ command: "/nonexistent/clawbridge" });
    assert.deepEqual(without.map((h) => h.id), ["clawbridge-codex", "clawbridge-claude", "clawbridge-demo"]);
    const withAgent = register({ command: "/nonexistent/clawbridge", acpAgent: "npx -y some-acp-agent" });
    const acp = withAgent.find((h) => h.id === "clawbridge-acp");
    assert.ok(acp, "registered with an agent");
    assert.equal(acp.label, "ACP agent (clawbridge)");
    // The bridge passes no route auth to ACP agents: the agent authenticates itself.
    assert.equal(acp.authBootstrap, "harness");

    const cfg = resolveConfig({ acpAgent: "agent --acp", env: { CODEX_HOME: "/c" } });
    assert.equal(cfg.env.CLAWBRIDGE_ACP_AGENT, "agent --acp", "the bridge gets the command line");
    assert.equal(cfg.env.CODEX_HOME, "/c");
    assert.ok(cfg.harnesses.includes("clawbridge-acp"));
    const fromEnv = resolveConfig({ env: { CLAWBRIDGE_ACP_AGENT: "agent" } });
    assert.ok(fromEnv.harnesses.includes("clawbridge-acp"), "an agent in the bridge's env counts too");

    const log = logger();
    const asked = resolveConfig({ harnesses: ["clawbridge-acp", "clawbridge-codex"], acpAgent: 5 }, log);
    assert.deepEqual(asked.harnesses, ["clawbridge-codex"], "listed without an agent: left out");
    assert.match(log.lines.join("\n"), /acpAgent must be a non-empty command line/);
    assert.match(log.lines.join("\n"), /clawbridge-acp needs an agent command/);

    assert.equal(cfg.auth["clawbridge-acp"], "harness", "ACP's default auth is the agent's own");
    assert.equal(cfg.auth["clawbridge-codex"], "host", "the others keep theirs");
    const hostLog = logger();
    const host = resolveConfig({ acpAgent: "agent", auth: { "clawbridge-acp": "host" } }, hostLog);
    assert.equal(host.auth["clawbridge-acp"], "harness");
    assert.match(hostLog.lines.join("\n"), /cannot be "host": the bridge passes no route auth to ACP agents/);
  } finally {
    if (saved === undefined) delete process.env.CLAWBRIDGE_ACP_AGENT;
    else process.env.CLAWBRIDGE_ACP_AGENT = saved;
  }
});
