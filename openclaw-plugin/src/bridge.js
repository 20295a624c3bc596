// One `clawbridge serve` child for the whole plugin: started on the first attempt, reused by every
// later one, replaced after it dies. The handshake (`initialize`) is part of starting it, so a
// version mismatch fails the attempt that started it, with both versions named.

import { spawn } from "node:child_process";

import { locateBridge } from "./locate.js";
import { ErrorCodes, LineRpcClient, RpcRemoteError, RpcReplyError } from "./rpc-client.js";

/** The host protocol version this plugin speaks (docs/host-protocol.md). */
export const PROTOCOL_VERSION = 3;
/** This plugin's release, reported in errors and to the bridge. */
export const PLUGIN_VERSION = "0.1.0";
/** `-32010`: the bridge does not speak the host's protocol version. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32010;

/** How much of the bridge's stderr is kept for error messages. */
const STDERR_TAIL_BYTES = 16 * 1024;
/** How long the handshake may take (the bridge probes its backends first). */
const INITIALIZE_TIMEOUT_MS = 30_000;
/** How long `dispose()` waits for `shutdown` and then for the process to exit. */
const SHUTDOWN_TIMEOUT_MS = 10_000;

/** A version mismatch between this plugin and the bridge. */
export class ProtocolVersionMismatchError extends Error {
  constructor(message) {
    super(message);
    this.name = "ProtocolVersionMismatchError";
  }
}

/** The bridge process ended (or could not start) while it was needed. */
export class BridgeGoneError extends Error {
  constructor(message) {
    super(message);
    this.name = "BridgeGoneError";
  }
}

/**
 * Starts and keeps the bridge.
 *
 * Options: `command` (unset: looked for, locate.js), `args` (before `serve`), `env` (added to the inherited environment), `cwd`,
 * `logger`, `hostVersion`, `protocolVersion` (tests only: speak another version), `userInput`
 * (whether the host can ask a person the agent's questions),
 * `onRequest(method, params)` and `onNotification(method, params)` for the bridge's messages,
 * `tap(direction, message)` to see every message (tests).
 */
export class BridgeSupervisor {
  constructor(options) {
    this.options = options;
    this.logger = options.logger ?? console;
    // The live connection: {child, client, init, exited}, or null.
    this.current = null;
    // The start in progress, so concurrent attempts share one child.
    this.starting = null;
    // The last successful `initialize` result, kept after the child dies: `supports()` reads it.
    this.lastInit = null;
    // Attempts in flight. While none runs the child's pipes are unref'd, so an idle bridge never
    // keeps the OpenClaw CLI process alive (the bridge exits on stdin EOF when OpenClaw does).
    this.holds = 0;
  }

  /** Marks an attempt in flight: the child keeps the event loop alive until `release()`. */
  hold() {
    this.holds += 1;
    if (this.current) setRef(this.current, true);
  }

  /** Ends a `hold()`. */
  release() {
    this.holds = Math.max(0, this.holds - 1);
    if (this.current && this.holds === 0) setRef(this.current, false);
  }

  /** The live, initialized connection, starting the bridge if needed. */
  async connection() {
    if (this.current && !this.current.exited) return this.current;
    if (!this.starting) {
      this.starting = this.#start().finally(() => {
        this.starting = null;
      });
    }
    return await this.starting;
  }

  /** Availability of harness `id` from the last handshake, or undefined before one. */
  harnessInfo(id) {
    const harnesses = this.lastInit?.harnesses;
    if (!Array.isArray(harnesses)) return undefined;
    // A harness the plugin registered on the bridge's word (clawbridge-acp with a configFile) that
    // the bridge does not offer: unavailable, saying why, rather than left to fail at attempt/run.
    return (
      harnesses.find((h) => h?.id === id) ?? {
        id,
        available: false,
        unavailableReason: `the bridge offers no ${id}: its backend is not configured${
          id === "clawbridge-acp" ? " (acp.agent in the bridge's config file, acpAgent, or CLAWBRIDGE_ACP_AGENT)" : ""
        }`,
      }
    );
  }

  /**
   * Sends `shutdown`, closes stdin and waits for the child to exit (killing it if it will not).
   * Not final: OpenClaw disposes the harnesses of a retired plugin registry while a newer one
   * shares this supervisor, so a later attempt simply starts a new bridge.
   */
  async dispose() {
    const conn = this.current ?? (await this.starting?.catch(() => null));
    if (!conn || conn.exited) return;
    // Keep the event loop alive until the bridge has answered and exited.
    setRef(conn, true);
    try {
      await conn.client.request("shutdown", { reason: "plugin dispose" }, { timeoutMs: SHUTDOWN_TIMEOUT_MS });
    } catch (error) {
      this.logger.warn?.(`clawbridge: shutdown failed: ${error.message}`);
    }
    conn.child.stdin.end();
    const exited = new Promise((resolve) => {
      if (conn.exited) resolve();
      else conn.child.once("exit", resolve);
    });
    const timer = setTimeout(() => conn.child.kill("SIGKILL"), SHUTDOWN_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  }

  async #start() {
    const { args = [], env = {}, cwd } = this.options;
    // Throws BridgeNotFoundError, naming every place looked at, when there is no executable.
    const { command, from, passedOver } = locateBridge({
      configured: this.options.command,
      env: { ...process.env, ...env },
    });
    for (const place of passedOver) this.logger.warn?.(`clawbridge: passed over ${place}`);
    this.logger.info?.(`clawbridge: starting ${command} (found by ${from})`);
    const argv = [...args, "serve"];
    let child;
    try {
      child = spawn(command, argv, {
        cwd,
        env: { ...process.env, ...env },
        stdio: ["pipe", "pipe", "pipe"],
      });
    } catch (error) {
      throw new BridgeGoneError(`cannot start \`${command} ${argv.join(" ")}\`: ${error.message}`);
    }
    const conn = { child, client: null, init: null, exited: false, stderrTail: "" };
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text) => {
      // A bounded tail: the bridge logs to stderr and a chatty one must not grow memory.
      conn.stderrTail = (conn.stderrTail + text).slice(-STDERR_TAIL_BYTES);
    });
    const finishRef = {};
    const gone = new Promise((resolve) => {
      const finish = (why) => {
        if (conn.exited) return;
        conn.exited = true;
        const tail = conn.stderrTail.trim().split("\n").slice(-8).join("\n");
        // The whole log is in the file the bridge named in `initialize`; the tail is what we saw.
        const logFile = typeof conn.init?.logFile === "string" ? `; its log file: ${conn.init.logFile}` : "";
        const error = new BridgeGoneError(
          `clawbridge serve (pid ${child.pid ?? "?"}, \`${command}\`) ${why}${logFile}` +
            (tail ? `; its last stderr lines:\n${tail}` : ""),
        );
        conn.client?.close(error);
        if (this.current === conn) this.current = null;
        resolve(error);
      };
      finishRef.finish = finish;
      child.once("error", (error) => finish(`could not run: ${error.message}`));
      child.once("exit", (code, signal) =>
        finish(signal ? `was killed by signal ${signal}` : `exited with status ${code}`),
      );
    });
    // Writes to a dead child fail asynchronously; the exit handler reports the reason.
    child.stdin.on("error", () => {});
    conn.client = new LineRpcClient(child.stdout, child.stdin, {
      onRequest: (method, params) => this.options.onRequest(method, params),
      onNotification: (method, params) => this.options.onNotification?.(method, params),
      onProblem: (text) => this.logger.warn?.(`clawbridge: ${text}`),
      // stdout usually ends just before the exit is reported: wait briefly for the status.
      onInputEnd: () => {
        const timer = setTimeout(() => finishRef.finish?.("closed its output"), 2000);
        timer.unref?.();
      },
      tap: this.options.tap,
    });

    // Rejects when the child dies; handled here so a later, normal exit is not an unhandled rejection.
    const goneRejection = gone.then((error) => Promise.reject(error));
    goneRejection.catch(() => {});
    const version = this.options.protocolVersion ?? PROTOCOL_VERSION;
    let init;
    try {
      init = await Promise.race([
        conn.client.request(
          "initialize",
          {
            protocolVersion: version,
            host: { name: "openclaw", version: this.options.hostVersion ?? "unknown" },
            capabilities: {
              hostTools: true,
              approvals: true,
              toolTerminals: true,
              transcriptAppend: true,
              userInput: this.options.userInput === true,
            },
          },
          { timeoutMs: INITIALIZE_TIMEOUT_MS },
        ),
        goneRejection,
      ]);
    } catch (error) {
      this.#abandon(conn);
      if (error instanceof RpcRemoteError && error.code === UNSUPPORTED_PROTOCOL_VERSION) {
        const data = error.data ?? {};
        const range = data.supportedVersions
          ? `${data.supportedVersions.min}..${data.supportedVersions.max}`
          : "unknown";
        throw new ProtocolVersionMismatchError(
          `clawbridge version mismatch: the OpenClaw plugin ${PLUGIN_VERSION} speaks host protocol version ${version}, ` +
            `but clawbridge ${data.bridgeVersion ?? "(unknown release)"} speaks versions ${range} ` +
            `(${error.remoteMessage}); upgrade whichever side is older`,
        );
      }
      if (error instanceof BridgeGoneError) throw error;
      throw new BridgeGoneError(`clawbridge serve did not complete its handshake: ${error.message}`);
    }
    if (init?.protocolVersion !== version) {
      this.#abandon(conn);
      throw new ProtocolVersionMismatchError(
        `clawbridge version mismatch: the OpenClaw plugin ${PLUGIN_VERSION} asked for host protocol version ${version}, ` +
          `but clawbridge ${init?.bridge?.version ?? "(unknown release)"} answered version ${init?.protocolVersion}`,
      );
    }
    conn.init = init;
    this.lastInit = init;
    this.current = conn;
    setRef(conn, this.holds > 0);
    this.logger.info?.(
      `clawbridge: bridge ${init.bridge?.version} started (pid ${child.pid}), protocol ${init.protocolVersion}`,
    );
    return conn;
  }

  /** Stops a child that will not be used: close stdin (the bridge exits on EOF), kill if it lingers. */
  #abandon(conn) {
    conn.client?.close(new BridgeGoneError("the bridge connection was abandoned"));
    if (conn.exited) return;
    conn.child.stdin.end();
    const timer = setTimeout(() => conn.child.kill("SIGKILL"), SHUTDOWN_TIMEOUT_MS);
    timer.unref?.();
    conn.child.once("exit", () => clearTimeout(timer));
  }
}

/** Refs or unrefs the child and its pipes (whether they keep Node's event loop alive). */
function setRef(conn, on) {
  for (const handle of [conn.child, conn.child.stdin, conn.child.stdout, conn.child.stderr]) {
    try {
      if (on) handle?.ref?.();
      else handle?.unref?.();
    } catch {
      // A pipe that is already closed has nothing to keep alive.
    }
  }
}

export { ErrorCodes, RpcRemoteError, RpcReplyError };
