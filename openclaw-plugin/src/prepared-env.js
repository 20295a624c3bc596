// The environment OpenClaw prepared for this run's local child processes
// (`hostCapabilities.preparedEnvironment()`), as one variable overlay for the attempt's native
// processes. The bridge is shared between attempts, so the overlay travels in each `attempt/run`
// (`processEnv`, docs/host-protocol.md#attemptrun) rather than in the bridge's own environment.

/**
 * `{processEnv}` for `attempt/run`, or nothing when the host prepares no environment. Layered as
 * OpenClaw layers it for its own gateway-host commands: the local process facts, then the
 * credential scrub (variables set empty), then the local identity overlay. A capability that
 * throws (the run was retired) stops the attempt: running without the scrub would not be honest.
 *
 * @param {any} params the attempt params
 * @returns {{processEnv?: Record<string, string>}}
 */
export function processEnvParam(params) {
  const host = params?.hostCapabilities;
  if (typeof host?.preparedEnvironment !== "function") return {};
  const prepared = host.preparedEnvironment();
  /** @type {Record<string, string>} */
  const env = {};
  for (const layer of [prepared?.localProcessEnv, prepared?.credentialScrubEnv, prepared?.localIdentityEnv]) {
    if (!layer || typeof layer !== "object") continue;
    for (const [name, value] of Object.entries(layer)) {
      if (typeof value === "string") env[name] = value;
    }
  }
  return Object.keys(env).length > 0 ? { processEnv: env } : {};
}
