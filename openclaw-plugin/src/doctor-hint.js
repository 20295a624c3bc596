// @ts-check
// Where a person finds out why clawbridge cannot run: every up-front refusal because the bridge or
// a backend is unusable ends with the `clawbridge doctor` command that explains it in full.

import { BridgeGoneError, RpcRemoteError } from "./bridge.js";

/** The bridge's `unknownHarness` error code: it offers no such harness (its backend is not configured). */
const UNKNOWN_HARNESS = -32020;
/** The bridge's `harnessUnavailable` error code (docs/host-protocol.md, error codes). */
const HARNESS_UNAVAILABLE = -32021;
/** The bridge's `preflightFailed` error code; with `data.phase: "open"` the backend failed to open. */
const PREFLIGHT_FAILED = -32034;
/** The prefix every shipped harness id carries before its backend's name. */
const HARNESS_PREFIX = "clawbridge-";

/**
 * What of the plugin's config the doctor command must repeat to check what the gateway's bridge
 * runs: its `--config` file, and the ACP agent the gateway's environment names (absent from the
 * user's shell, so `--backend acp` alone would find no agent).
 * @typedef {{configFile?: string, acpAgent?: string}} DoctorContext
 */

/**
 * `word` quoted for a POSIX shell: single quotes, each `'` closed, escaped and reopened.
 * @param {string} word
 */
export function shellQuote(word) {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The doctor command for harness `harnessId`: its backend as the bridge named it in `initialize`
 * (`known.backend`), else as the harness id spells it (the bridge never started), with the
 * plugin's config file and (for ACP) its agent from `context`.
 * @param {string} harnessId
 * @param {{backend?: unknown} | undefined} known
 * @param {DoctorContext} [context]
 */
export function doctorCommand(harnessId, known, context) {
  const backend =
    typeof known?.backend === "string" && known.backend
      ? known.backend
      : harnessId.startsWith(HARNESS_PREFIX)
        ? harnessId.slice(HARNESS_PREFIX.length)
        : harnessId;
  // `--config` is a global flag of the bridge: it goes before the subcommand.
  const config = context?.configFile ? `--config ${shellQuote(context.configFile)} ` : "";
  const agent = backend === "acp" && context?.acpAgent ? ` --agent ${shellQuote(context.acpAgent)}` : "";
  return `clawbridge ${config}doctor --backend ${backend}${agent}`;
}

/**
 * `message` with the doctor pointer at its end.
 * @param {string} message
 * @param {string} harnessId
 * @param {{backend?: unknown} | undefined} known
 * @param {DoctorContext} [context]
 */
export function withDoctorHint(message, harnessId, known, context) {
  return `${message}; run \`${doctorCommand(harnessId, known, context)}\` for details`;
}

/**
 * Whether `error` is the bridge's report that the backend failed while opening (its process exited
 * during its handshake, its version was refused): `preflightFailed` with `data.phase: "open"`.
 * @param {unknown} error
 */
export function isOpenFailure(error) {
  return error instanceof RpcRemoteError && error.code === PREFLIGHT_FAILED && error.data?.phase === "open";
}

/**
 * Whether `error` says the bridge or the harness's backend cannot run (rather than a turn failing).
 * @param {unknown} error
 */
export function isUnusable(error) {
  return (
    error instanceof BridgeGoneError ||
    (error instanceof RpcRemoteError && (error.code === HARNESS_UNAVAILABLE || error.code === UNKNOWN_HARNESS)) ||
    isOpenFailure(error)
  );
}

/**
 * What names the backend for the doctor command: the backend an open failure names, else `known`.
 * @param {unknown} error
 * @param {{backend?: unknown} | undefined} known
 * @returns {{backend?: unknown} | undefined}
 */
export function backendOf(error, known) {
  if (isOpenFailure(error) && error instanceof RpcRemoteError && typeof error.data?.backend === "string") {
    return { backend: error.data.backend };
  }
  return known;
}

/**
 * `error` with the doctor pointer appended to its message when it says the bridge or the backend
 * cannot run; other errors unchanged.
 * @template {unknown} E
 * @param {E} error
 * @param {string} harnessId
 * @param {{backend?: unknown} | undefined} known
 * @param {DoctorContext} [context]
 * @returns {E}
 */
export function explainUnusable(error, harnessId, known, context) {
  if (isUnusable(error) && error instanceof Error) {
    error.message = withDoctorHint(error.message, harnessId, backendOf(error, known), context);
  }
  return error;
}
