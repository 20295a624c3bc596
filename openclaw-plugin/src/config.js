// The plugin's configuration (`plugins.entries.clawbridge.config`, schema in openclaw.plugin.json),
// validated and defaulted once at registration. Bad values are reported and replaced by defaults
// rather than thrown: a typo in config must not take the whole gateway down.

import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

/** Harness ids this plugin knows how to label; the bridge decides which ones really run. */
export const KNOWN_HARNESSES = Object.freeze({
  "clawbridge-codex": "Codex (clawbridge)",
  "clawbridge-claude": "Claude Code (clawbridge)",
  "clawbridge-demo": "Demo replay (clawbridge)",
  "clawbridge-acp": "ACP agent (clawbridge)",
});

/** The ACP harness: registered only when an agent command is configured (`acpAgent`, env). */
export const ACP_HARNESS = "clawbridge-acp";
/** The bridge's variable holding the ACP agent's command line. */
export const ACP_AGENT_ENV = "CLAWBRIDGE_ACP_AGENT";

/**
 * Who authenticates a harness's model requests (config `auth`, per harness id):
 * - `host`: the endpoint, key and headers OpenClaw prepared for the route reach the native runtime
 *   (Codex: a model provider of its own; Claude: `ANTHROPIC_BASE_URL`/`ANTHROPIC_API_KEY`);
 * - `harness`: the harness declares `authBootstrap: "harness"` and the native runtime uses its own
 *   login and config (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, the bridge's env); nothing is forwarded.
 */
export const AUTH_MODES = Object.freeze(["host", "harness"]);
/** Every harness's auth when the config names none for it: OpenClaw owns credentials. (Not
 * `clawbridge-acp`'s: always "harness", since ACP agents authenticate themselves.) */
export const DEFAULT_AUTH_MODE = "host";

/**
 * Environment groups the bridge may pass to the native runtimes besides its defaults (config
 * `passEnv`, the bridge's `--pass-env`): `bedrock`, `vertex` — Claude Code on Amazon Bedrock or
 * Google Vertex AI, whose credentials then pass as secrets (the bridge's README lists each variable).
 */
export const PASS_ENV_GROUPS = Object.freeze(["bedrock", "vertex"]);

/** Registered when the config names none. */
export const DEFAULT_HARNESSES = Object.freeze(["clawbridge-codex", "clawbridge-claude", "clawbridge-demo"]);

/**
 * @param {unknown} raw the plugin config as OpenClaw passes it
 * @param {{warn?: (text: string) => void}} [logger]
 * @returns {{command: string|null, args: string[], env: Record<string,string>, harnesses: string[],
 *   providerIds: Record<string,string[]>, hostTools: boolean, auth: Record<string,"host"|"harness">,
 *   passEnv: string[], configFile: string | undefined, acpAgent: string|undefined}}
 */
export function resolveConfig(raw, logger) {
  const warn = (text) => logger?.warn?.(`clawbridge config: ${text}`);
  const cfg = raw && typeof raw === "object" && !Array.isArray(raw) ? raw : {};
  const strings = (value, name) => {
    if (value === undefined) return undefined;
    if (Array.isArray(value) && value.every((v) => typeof v === "string")) return [...value];
    warn(`${name} must be a list of strings; ignored`);
    return undefined;
  };

  // Unset: the bridge is looked for when it is started (locate.js), so an install made after
  // OpenClaw started is found without a restart.
  let command = null;
  if (cfg.command !== undefined) {
    if (typeof cfg.command === "string" && cfg.command.trim()) command = cfg.command;
    else warn("command must be a non-empty string; ignored");
  }
  const args = strings(cfg.args, "args") ?? [];
  const passEnv = [...new Set(strings(cfg.passEnv, "passEnv") ?? [])].filter((group) => {
    if (PASS_ENV_GROUPS.includes(group)) return true;
    warn(`passEnv: unknown group ${JSON.stringify(group)} (known: ${PASS_ENV_GROUPS.join(", ")}); ignored`);
    return false;
  });
  // A global flag of the bridge, so it goes before `serve` with the other arguments.
  if (passEnv.length) args.push("--pass-env", passEnv.join(","));
  // The bridge's own config file (its `--config`, also a global flag): the bridge reads and checks it.
  // Absolute only (`~/` is the home): a relative one would be read from wherever the gateway runs.
  let configFile;
  if (cfg.configFile !== undefined) {
    const raw = typeof cfg.configFile === "string" ? cfg.configFile.trim() : "";
    const named = raw.startsWith("~/") ? join(homedir(), raw.slice(2)) : raw;
    if (!raw) {
      warn("configFile must be a non-empty path; ignored");
    } else if (!isAbsolute(named)) {
      warn(`configFile must be an absolute path (or start with ~/): ${JSON.stringify(raw)}; ignored`);
    } else if (args.some((arg) => arg === "--config" || arg.startsWith("--config="))) {
      // The bridge refuses a flag given twice; args is the escape hatch, so it keeps its own.
      warn("configFile is ignored: args already passes --config");
    } else {
      configFile = named;
      args.push("--config", configFile);
    }
  }

  const env = {};
  if (cfg.env !== undefined) {
    if (cfg.env && typeof cfg.env === "object" && !Array.isArray(cfg.env)) {
      for (const [key, value] of Object.entries(cfg.env)) {
        if (typeof value === "string") env[key] = value;
        else warn(`env.${key} must be a string; ignored`);
      }
    } else {
      warn("env must be an object of strings; ignored");
    }
  }

  if (cfg.acpAgent !== undefined) {
    if (typeof cfg.acpAgent === "string" && cfg.acpAgent.trim()) env[ACP_AGENT_ENV] = cfg.acpAgent;
    else warn("acpAgent must be a non-empty command line; ignored");
  }
  // The bridge reads the agent from its environment: the plugin's `env`, else the gateway's own.
  const acpAgent = env[ACP_AGENT_ENV] ?? (process.env[ACP_AGENT_ENV]?.trim() ? process.env[ACP_AGENT_ENV] : undefined);
  // The bridge's config file may name the agent (`[acp] agent = …`): only the bridge knows, so with
  // one the harness stays registered and the bridge's `initialize` decides whether it is available.
  const bridgeConfig = args.some((arg) => arg === "--config" || arg.startsWith("--config="));
  const listed = strings(cfg.harnesses, "harnesses");
  const offerAcp = Boolean(acpAgent) || bridgeConfig;
  let harnesses = [...new Set(listed ?? (offerAcp ? [...DEFAULT_HARNESSES, ACP_HARNESS] : DEFAULT_HARNESSES))];
  if (!offerAcp && harnesses.includes(ACP_HARNESS)) {
    warn(`${ACP_HARNESS} needs an agent command (acpAgent, ${ACP_AGENT_ENV}, or acp.agent in configFile); not registered`);
    harnesses = harnesses.filter((id) => id !== ACP_HARNESS);
  }

  const providerIds = {};
  if (cfg.providerIds !== undefined) {
    if (cfg.providerIds && typeof cfg.providerIds === "object" && !Array.isArray(cfg.providerIds)) {
      for (const [harness, ids] of Object.entries(cfg.providerIds)) {
        const list = strings(ids, `providerIds.${harness}`);
        if (list) providerIds[harness] = list;
      }
    } else {
      warn("providerIds must map harness ids to lists of provider ids; ignored");
    }
  }

  let hostTools = true;
  if (cfg.hostTools !== undefined) {
    if (typeof cfg.hostTools === "boolean") hostTools = cfg.hostTools;
    else warn("hostTools must be true or false; ignored");
  }
  const auth = {};
  const authConfig = cfg.auth && typeof cfg.auth === "object" && !Array.isArray(cfg.auth) ? cfg.auth : {};
  if (cfg.auth !== undefined && authConfig !== cfg.auth) warn("auth must map harness ids to \"host\" or \"harness\"; ignored");
  for (const harness of harnesses) {
    const mode = authConfig[harness];
    // The bridge never hands an ACP agent the route's endpoint or key (ACP has no way to), so the
    // agent always authenticates itself: "host" would claim what does not happen.
    if (harness === ACP_HARNESS) {
      if (mode === "host") warn(`auth.${ACP_HARNESS} cannot be "host": the bridge passes no route auth to ACP agents; using "harness"`);
      else if (mode !== undefined && !AUTH_MODES.includes(mode)) warn(`auth.${harness} must be "host" or "harness"; using "harness"`);
      auth[harness] = "harness";
      continue;
    }
    if (mode !== undefined && !AUTH_MODES.includes(mode)) warn(`auth.${harness} must be "host" or "harness"; using "${DEFAULT_AUTH_MODE}"`);
    auth[harness] = AUTH_MODES.includes(mode) ? mode : DEFAULT_AUTH_MODE;
  }
  return { command, args, env, harnesses, providerIds, hostTools, auth, passEnv, configFile, acpAgent };
}
