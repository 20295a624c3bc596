// The plugin object OpenClaw loads: `register(api)` registers one AgentHarnessV2 per configured
// harness id, all sharing one bridge runtime. OpenClaw calls `register` more than once per start
// (once per plugin registry it builds), so registration is idempotent per `api` and the runtime
// (and with it the one `clawbridge serve` child) is created once.

import { resolveConfig } from "./config.js";
import { PLUGIN_VERSION } from "./bridge.js";
import { createHarness, createRuntime } from "./harness.js";

/**
 * @param {object} [deps] what the OpenClaw SDK provides (injected so tests can run without it):
 *   `appendTranscriptMessage` (`appendSessionTranscriptMessageByIdentity`), `PreflightError`
 *   (`AgentHarnessPreflightError`), `loadPromptImages` (`detectAndLoadAgentHarnessPromptImages`),
 *   `setActiveEmbeddedRun` / `clearActiveEmbeddedRun` (active-run injection), `askGatewayQuestion`
 *   (`runAgentHarnessGatewayQuestion`), `progressSdk` (the helpers `progress.js` uses: the block
 *   reply chunker, tool meta/summary/activity projections, sanitizers, the agent event bus), and
 *   for tests `protocolVersion` and `tap`.
 */
export function createPlugin(deps = {}) {
  let runtime = null;
  const registeredWith = new WeakSet();
  const logger = switchableLogger();
  const plugin = {
    id: "clawbridge",
    name: "clawbridge",
    description: "Native agent daemons (Codex app-server, Claude Code) as OpenClaw agent harnesses, via clawbridge serve",
    version: PLUGIN_VERSION,
    register(api) {
      if (!api || registeredWith.has(api)) return;
      registeredWith.add(api);
      // The newest registration's logger: OpenClaw retires an older plugin instance's api.
      logger.use(api.logger);
      if (!runtime) {
        runtime = createRuntime({
          config: resolveConfig(api.pluginConfig, logger),
          logger,
          hostVersion: typeof api.runtime?.version === "string" ? api.runtime.version : undefined,
          appendTranscriptMessage: deps.appendTranscriptMessage,
          sdk: deps.sdk,
          PreflightError: deps.PreflightError,
          loadPromptImages: deps.loadPromptImages,
          setActiveEmbeddedRun: deps.setActiveEmbeddedRun,
          clearActiveEmbeddedRun: deps.clearActiveEmbeddedRun,
          askGatewayQuestion: deps.askGatewayQuestion,
          progressSdk: deps.progressSdk,
          protocolVersion: deps.protocolVersion,
          tap: deps.tap,
        });
      }
      for (const id of runtime.options.config.harnesses) {
        try {
          api.registerAgentHarness(createHarness(runtime, id));
        } catch (error) {
          logger.warn?.(`clawbridge: could not register harness ${id}: ${error?.message ?? error}`);
        }
      }
    },
    /** The shared runtime (tests and diagnostics). */
    get runtime() {
      return runtime;
    },
    /** Stops the bridge. */
    async dispose() {
      await runtime?.supervisor.dispose();
    },
  };
  return plugin;
}

/**
 * A logger that forwards to the current OpenClaw logger and never throws: a retired plugin
 * instance's logger may throw, and a log line must never fail an attempt. Falls back to stderr
 * (stdout may be OpenClaw's `--json` output).
 */
function switchableLogger() {
  let target;
  const write = (level) => (text) => {
    try {
      if (typeof target?.[level] === "function") {
        target[level](text);
        return;
      }
    } catch {
      // fall through to stderr
    }
    if (level !== "debug") process.stderr.write(`[clawbridge] ${level}: ${text}\n`);
  };
  return {
    use: (next) => {
      if (next) target = next;
    },
    info: write("info"),
    warn: write("warn"),
    error: write("error"),
    debug: write("debug"),
  };
}
