// OpenClaw's tool policy for the native agent's own actions: before a person is asked to approve a
// native command, file change or tool call, the action goes through the host's
// `runBeforeToolCall` (before_tool_call hooks, trusted tool policies, the exec reviewer), exactly
// as OpenClaw's own native relays do. Its outcome decides whether a person is asked at all.

/**
 * OpenClaw's policy name for a native action: commands are `exec` and file changes `apply_patch`
 * whatever the native runtime calls them (the names OpenClaw's own Codex relay uses), other tools
 * keep their (lower-cased) name.
 */
export function policyToolName(params) {
  switch (params?.kind) {
    case "command":
      return "exec";
    case "fileChange":
      return "apply_patch";
    default: {
      const name = String(params?.toolName ?? "tool").toLowerCase();
      return name === "bash" ? "exec" : name;
    }
  }
}

/**
 * Runs the host's policy for one native action. Returns `{decision: "deny", message}` when the
 * policy blocks it (a block is final: it is never escalated to a person), `{decision}` when the
 * policy already settled it with a person (a plugin approval it raised), or `undefined` when a
 * person should be asked next. An error is a deny: policy that cannot run never means permission.
 */
export async function checkNativeAction(attempt, params) {
  const host = attempt.params.hostCapabilities;
  if (typeof host?.runBeforeToolCall !== "function") return undefined;
  const args = params?.arguments ?? {};
  let outcome;
  try {
    outcome = await host.runBeforeToolCall({
      toolName: policyToolName(params),
      params: args,
      ...(params?.callId ? { toolCallId: String(params.callId) } : {}),
      signal: attempt.signal,
      ...(typeof args.cwd === "string" && args.cwd ? { nativeOperation: { cwd: args.cwd } } : {}),
    });
  } catch (error) {
    attempt.logger.warn?.(`clawbridge: OpenClaw's tool policy failed, denying: ${error?.message ?? error}`);
    return { decision: "deny", message: "OpenClaw's tool policy could not be checked" };
  }
  if (outcome?.blocked === true) {
    const reason = typeof outcome.reason === "string" && outcome.reason ? outcome.reason : "blocked by OpenClaw's tool policy";
    return { decision: "deny", message: reason };
  }
  if (outcome && "params" in outcome && stableJson(outcome.params) !== stableJson(args)) {
    // The native runtime runs what it asked for; a policy that rewrote the action cannot be honoured.
    return { decision: "deny", message: "OpenClaw's tool policy changed this action; the original is not run" };
  }
  switch (outcome?.approvalResolution) {
    case "allow-once":
      return { decision: "allow" };
    case "allow-always":
      return { decision: "allowForSession" };
    case "deny":
    case "timeout":
    case "cancelled":
      return { decision: "deny", message: `OpenClaw's tool policy approval ended as ${outcome.approvalResolution}` };
    default:
      return undefined;
  }
}

/** JSON with object keys sorted, so equal values compare equal whatever their key order. */
function stableJson(value) {
  const seen = new WeakSet();
  const order = (v) => {
    if (!v || typeof v !== "object") return v;
    if (seen.has(v)) return null;
    seen.add(v);
    if (Array.isArray(v)) return v.map(order);
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, order(v[k])]));
  };
  try {
    return JSON.stringify(order(value));
  } catch {
    return "";
  }
}
