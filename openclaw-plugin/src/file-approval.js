// A native command's mutable file operands bound before it is approved
// (`hostCapabilities.prepareMutableFileApproval`): OpenClaw snapshots the files a shell command
// would run or read as code (a script it executes, …), says whether the approval may only be used
// once, and revalidates the snapshot after the decision, so a person never approves one script and
// the agent runs another (docs/peers/openclaw.md#native-command-approvals).

/**
 * `host/approval/decide` for `params` through `decide` (host-requests.js `decideApproval`), with
 * the command's files bound around it. Anything but a clean binding is a deny: approvals fail
 * closed.
 *
 * @param {any} attempt
 * @param {any} params the bridge's approval request
 * @param {(attempt: any, params: any, options?: {allowedDecisions?: string[]}) => Promise<any>} decide
 */
export async function decideWithFileBinding(attempt, params, decide) {
  const host = attempt.params.hostCapabilities;
  const command = params?.kind === "command" ? params?.arguments?.command : undefined;
  if (typeof host?.prepareMutableFileApproval !== "function" || typeof command !== "string" || command === "") {
    return decide(attempt, params);
  }
  const cwd = [params.arguments.cwd, attempt.params.cwd, attempt.params.workspaceDir].find(
    (dir) => typeof dir === "string" && dir !== "",
  );
  let binding;
  try {
    binding = await host.prepareMutableFileApproval({ command, ...(cwd ? { cwd } : {}) });
  } catch (error) {
    attempt.logger.warn?.(`clawbridge: the command's files could not be bound, denying: ${error?.message ?? error}`);
    return { decision: "deny", message: "the command's files could not be bound for approval" };
  }
  if (!binding?.ok) {
    return { decision: "deny", message: String(binding?.message ?? "the command's files could not be bound for approval") };
  }
  // A one-shot binding covers this run of the command only: a session-wide allow would let the
  // agent run it again after the files changed.
  const oneShot = binding.requiresOneShot === true;
  const answer = await decide(attempt, params, oneShot ? { allowedDecisions: ["allow-once", "deny"] } : {});
  if (answer?.decision !== "allow" && answer?.decision !== "allowForSession") return answer;
  let current;
  try {
    current = await binding.revalidate();
  } catch (error) {
    current = { ok: false, message: String(error?.message ?? error) };
  }
  if (!current?.ok) {
    return { decision: "deny", message: `the command's files changed after approval: ${current?.message ?? "no longer valid"}` };
  }
  return oneShot && answer.decision === "allowForSession" ? { ...answer, decision: "allow" } : answer;
}
