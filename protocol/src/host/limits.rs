//! The host connection's size limits: every line the bridge reads from the host is bounded by its
//! method's cap before anything of it is decoded, and the inputs of running attempts share one
//! byte budget. A request over its cap is answered with
//! [`REQUEST_TOO_LARGE`](super::errors::REQUEST_TOO_LARGE); an attempt that would take the
//! budget over is refused with [`INPUT_BUDGET_EXCEEDED`](super::errors::INPUT_BUDGET_EXCEEDED).

const MIB: usize = 1024 * 1024;

/// The longest line the bridge reads from the host at all (the largest cap below). A longer line
/// is buffered up to this cap, then dropped and skipped to its newline without buffering more, and
/// answered with `-32600` and `id: null` (its id was never read).
pub const MAX_LINE_BYTES: usize = ATTEMPT_RUN_MAX_BYTES;

/// `attempt/run`: the prompt's images (at most 32 MiB decoded, about 43 MiB in base64), the prompt,
/// the extra system prompt, the prepared environment (at most 8 MiB) and the host tools' schemas.
pub const ATTEMPT_RUN_MAX_BYTES: usize = 64 * MIB;

/// `attempt/steer`: 1 MiB of text, with room for JSON's escapes.
pub const ATTEMPT_STEER_MAX_BYTES: usize = 4 * MIB;

/// Every other host → bridge request, and every notification whatever its method: none carries
/// more than names, ids and flags.
pub const DEFAULT_REQUEST_MAX_BYTES: usize = MIB;

/// The host's answer to `host/tool/execute`: a tool's text and images, bounded like a prompt's.
pub const HOST_TOOL_EXECUTE_ANSWER_MAX_BYTES: usize = 64 * MIB;

/// The host's answer to every other `host/*` request (a decision, a resolution, answers to
/// questions, an acknowledgement).
pub const DEFAULT_ANSWER_MAX_BYTES: usize = MIB;

/// The bytes the running attempts' inputs may hold together (prompts, images, extra system
/// prompts, prepared environments, host tool specs, as decoded — unknown members are never
/// kept). Four attempts at their line cap fit; past it `attempt/run` is refused until attempts end.
pub const ATTEMPT_INPUT_BUDGET_BYTES: usize = 256 * MIB;

/// How many copies of one line reading it can take at most: the reader's buffer while it grows, the
/// line, and what its params decode to (measured: about 1.5, BENCHMARKS.md *Worst host input*).
pub const LINE_READ_COPIES: usize = 4;

/// How many times a running attempt holds its input at most: once for its life (its turn input),
/// and twice more while its turn starts (the native request's copy of the prompt and that request's
/// line on its way to the agent).
pub const ATTEMPT_INPUT_COPIES: usize = 3;

/// The memory any host input can add to the bridge's idle footprint, with the default limits: one
/// line at the line cap being read, plus the running attempts' inputs up to the input budget, each
/// held [`ATTEMPT_INPUT_COPIES`] times (1 GiB). The serve fuzz harness holds the server to it.
pub const HOST_INPUT_MEMORY_BOUND_BYTES: usize =
    LINE_READ_COPIES * MAX_LINE_BYTES + ATTEMPT_INPUT_COPIES * ATTEMPT_INPUT_BUDGET_BYTES;

/// `attempt/run`'s `toolsAllow` and `toolExecutionAllow`: the most names each may list. A longer
/// list is refused while it is decoded (`-32602` naming the member), before its elements are built.
pub const MAX_TOOL_NAMES: usize = 4096;

/// `attempt/run`'s `hostTools`: the most host tools one attempt may declare (refused at decode).
pub const MAX_HOST_TOOLS: usize = 1024;

/// `attempt/run`'s `processEnv`: the most entries decoded (the attempt then fails with `-32034`
/// past 256 variables; this bound is what decoding may build before that check).
pub const MAX_PROCESS_ENV_ENTRIES: usize = 4096;

/// `attempt/run`'s `images`: the most decoded (the bridge then refuses more than 16 with its own
/// error; this bound is what decoding may build before that check).
pub const MAX_IMAGES: usize = 64;

/// (protocol version 2) `attempt/run`'s `history`: the most entries decoded (refused at decode).
pub const MAX_HISTORY_ENTRIES: usize = 4096;

/// (protocol version 2) `attempt/run`'s `history`: the most bytes of text its entries may hold
/// (roles, texts and keys); the host keeps the newest entries within it, a bridge refuses more.
pub const MAX_HISTORY_BYTES: usize = 512 * 1024;

/// `attempt/run`'s `auth.headers`: the most headers a route may add (refused at decode).
pub const MAX_AUTH_HEADERS: usize = 256;

/// The cap of a host → bridge request named `method` (every notification has the default cap).
pub fn request_cap(method: &str) -> usize {
    match method {
        super::methods::ATTEMPT_RUN => ATTEMPT_RUN_MAX_BYTES,
        super::methods::ATTEMPT_STEER => ATTEMPT_STEER_MAX_BYTES,
        _ => DEFAULT_REQUEST_MAX_BYTES,
    }
}

/// The cap of the host's answer to the bridge's request `method`.
pub fn answer_cap(method: &str) -> usize {
    match method {
        super::methods::HOST_TOOL_EXECUTE => HOST_TOOL_EXECUTE_ANSWER_MAX_BYTES,
        _ => DEFAULT_ANSWER_MAX_BYTES,
    }
}
