// A JSON-RPC 2.0 peer over a pair of byte streams, one compact message per `\n`-terminated line
// (docs/host-protocol.md, "Framing"). Both sides send requests: ours get numeric ids and wait for an
// answer; the other side's go to `onRequest` and are always answered, with a result or an error.
//
// Why hand-rolled: the framing is ten lines, and the plugin must run inside OpenClaw with no
// dependencies of its own. Node's `readline` is not used because it also breaks lines on U+2028 and
// U+2029, which are legal raw characters inside JSON strings.

/** JSON-RPC error codes used by this client. */
export const ErrorCodes = Object.freeze({
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  unknownAttempt: -32030,
  capabilityUnavailable: -32040,
});

/** The longest line we buffer; a longer one is skipped up to its newline (bounded memory). */
export const DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024;

/** An error answer from the other side, keeping its code and data. */
/**
 * A JSON.stringify replacer that makes every string well-formed UTF-16: a text cut inside a
 * surrogate pair (any of the plugin's length caps, or a lone surrogate the host passed on) would
 * otherwise be written as a lone `\uD8xx` escape, which the bridge's JSON parser refuses, and the
 * whole request would fail. A lone surrogate becomes U+FFFD.
 *
 * @param {string} _key
 * @param {unknown} value
 */
function wellFormed(_key, value) {
  return typeof value === "string" ? value.toWellFormed() : value;
}

export class RpcRemoteError extends Error {
  constructor(method, error) {
    super(`${method}: ${error?.message ?? "error without a message"} (code ${error?.code})`);
    this.name = "RpcRemoteError";
    this.code = error?.code;
    this.data = error?.data;
    this.remoteMessage = error?.message;
  }
}

/** Our request got no answer in time (the request is forgotten; a late answer is only logged). */
export class RpcTimeoutError extends Error {
  constructor(method, timeoutMs) {
    super(`${method}: no answer within ${timeoutMs} ms`);
    this.name = "RpcTimeoutError";
  }
}

/** Thrown by a request handler to answer with a specific JSON-RPC error. */
export class RpcReplyError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = "RpcReplyError";
    this.code = code;
    this.data = data;
  }
}

/**
 * One connection. `input` is readable (the other side's output), `output` writable.
 *
 * Options:
 * - `onRequest(method, params)`: returns (a promise of) the result; throw `RpcReplyError` for a
 *   specific error. A missing handler answers method-not-found.
 * - `onNotification(method, params)`: called in arrival order; its errors are logged, never fatal.
 * - `onProblem(text)`: a line that could not be used (not JSON, oversize, …).
 * - `tap(direction, message)`: sees every parsed message in (`"in"`) and out (`"out"`), for tests.
 * - `maxLineBytes`: the line cap.
 */
export class LineRpcClient {
  constructor(input, output, options = {}) {
    this.input = input;
    this.output = output;
    this.onRequest = options.onRequest;
    this.onNotification = options.onNotification;
    this.onProblem = options.onProblem ?? (() => {});
    // Told when the input ends; without it the end closes the connection at once. A process
    // supervisor uses it to wait for the exit status and fail requests with a better reason.
    this.onInputEnd = options.onInputEnd;
    this.tap = options.tap;
    this.maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
    // Our requests waiting for an answer: id → {resolve, reject, method, timer}.
    this.pending = new Map();
    this.nextId = 1;
    // The bytes of the line being read, as chunks (joined once the newline arrives).
    this.partial = [];
    this.partialBytes = 0;
    // Set while skipping the rest of an oversize line.
    this.skipping = false;
    // Set once the connection is closed; the error every later request fails with.
    this.closedError = null;
    this.decoder = new TextDecoder("utf-8", { fatal: true });

    this.onData = (chunk) => this.#receive(chunk);
    this.onEnd = () => {
      if (this.onInputEnd) this.onInputEnd();
      else this.close(new Error("the connection closed"));
    };
    input.on("data", this.onData);
    input.on("end", this.onEnd);
    input.on("error", (error) => this.close(error));
    output.on?.("error", (error) => this.close(error));
  }

  /** Whether the connection still works. */
  get open() {
    return this.closedError === null;
  }

  /** Sends a request; resolves with its result, rejects with `RpcRemoteError` or a connection error. */
  request(method, params, { timeoutMs } = {}) {
    if (this.closedError) return Promise.reject(this.closedError);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const entry = { resolve, reject, method, timer: null };
      if (timeoutMs) {
        entry.timer = setTimeout(() => {
          this.pending.delete(id);
          reject(new RpcTimeoutError(method, timeoutMs));
        }, timeoutMs);
        entry.timer.unref?.();
      }
      this.pending.set(id, entry);
      try {
        this.#send({ jsonrpc: "2.0", id, method, params: params ?? {} });
      } catch (error) {
        this.pending.delete(id);
        if (entry.timer) clearTimeout(entry.timer);
        reject(error);
      }
    });
  }

  /** Sends a notification (no answer). */
  notify(method, params) {
    if (this.closedError) return;
    this.#send({ jsonrpc: "2.0", method, params: params ?? {} });
  }

  /** Fails every pending request with `error` and stops reading. Idempotent. */
  close(error) {
    if (this.closedError) return;
    this.closedError = error instanceof Error ? error : new Error(String(error ?? "closed"));
    this.input.off?.("data", this.onData);
    this.input.off?.("end", this.onEnd);
    for (const [id, entry] of this.pending) {
      this.pending.delete(id);
      if (entry.timer) clearTimeout(entry.timer);
      entry.reject(this.closedError);
    }
    this.partial = [];
    this.partialBytes = 0;
  }

  #send(message) {
    this.tap?.("out", message);
    this.output.write(`${JSON.stringify(message, wellFormed)}\n`);
  }

  #receive(chunk) {
    let buffer = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    while (buffer.length > 0) {
      const newline = buffer.indexOf(0x0a);
      const piece = newline === -1 ? buffer : buffer.subarray(0, newline);
      if (!this.skipping) {
        if (this.partialBytes + piece.length > this.maxLineBytes) {
          this.onProblem(`a line over ${this.maxLineBytes} bytes was skipped`);
          this.partial = [];
          this.partialBytes = 0;
          this.skipping = true;
        } else {
          this.partial.push(piece);
          this.partialBytes += piece.length;
        }
      }
      if (newline === -1) return;
      buffer = buffer.subarray(newline + 1);
      if (this.skipping) {
        this.skipping = false;
        continue;
      }
      const line = Buffer.concat(this.partial, this.partialBytes);
      this.partial = [];
      this.partialBytes = 0;
      this.#line(line);
      if (this.closedError) return;
    }
  }

  #line(bytes) {
    let text;
    try {
      text = this.decoder.decode(bytes);
    } catch {
      this.onProblem(`a ${bytes.length}-byte line is not UTF-8`);
      return;
    }
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return;
    let message;
    try {
      message = JSON.parse(text);
    } catch (error) {
      this.onProblem(`not JSON: ${error.message}: ${text.slice(0, 200)}`);
      return;
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      this.onProblem(`not a JSON-RPC message: ${text.slice(0, 200)}`);
      return;
    }
    this.tap?.("in", message);
    const hasId = Object.hasOwn(message, "id") && message.id !== null;
    if (typeof message.method === "string" && hasId) {
      this.#answer(message);
    } else if (typeof message.method === "string") {
      try {
        this.onNotification?.(message.method, message.params);
      } catch (error) {
        this.onProblem(`the ${message.method} notification handler failed: ${error?.message ?? error}`);
      }
    } else if (hasId && (Object.hasOwn(message, "result") || Object.hasOwn(message, "error"))) {
      this.#settle(message);
    } else if (Object.hasOwn(message, "error")) {
      // An error with a null id answers a line the other side could not parse.
      this.onProblem(`the bridge rejected a line: ${message.error?.message ?? JSON.stringify(message.error)}`);
    } else {
      this.onProblem(`not a JSON-RPC message: ${text.slice(0, 200)}`);
    }
  }

  #settle(message) {
    const entry = this.pending.get(message.id);
    if (!entry) {
      this.onProblem(`an answer to unknown request id ${JSON.stringify(message.id)}`);
      return;
    }
    this.pending.delete(message.id);
    if (entry.timer) clearTimeout(entry.timer);
    if (Object.hasOwn(message, "error")) entry.reject(new RpcRemoteError(entry.method, message.error));
    else entry.resolve(message.result);
  }

  async #answer(message) {
    const { id, method, params } = message;
    let reply;
    try {
      if (!this.onRequest) throw new RpcReplyError(ErrorCodes.methodNotFound, `unknown method \`${method}\``);
      const result = await this.onRequest(method, params ?? {});
      reply = { jsonrpc: "2.0", id, result: result ?? {} };
    } catch (error) {
      const code = Number.isInteger(error?.code) ? error.code : ErrorCodes.internalError;
      const body = { code, message: String(error?.message ?? error ?? "request failed") };
      if (error?.data !== undefined) body.data = error.data;
      reply = { jsonrpc: "2.0", id, error: body };
    }
    if (this.closedError) return;
    try {
      this.#send(reply);
    } catch (error) {
      // A result that cannot be encoded (a cycle, a BigInt) still gets an answer.
      this.#send({
        jsonrpc: "2.0",
        id,
        error: { code: ErrorCodes.internalError, message: `the answer could not be encoded: ${error.message}` },
      });
    }
  }
}
