// The client side of the gateway bench: one OpenClaw GatewayClient connection, kept open for the
// whole run (a warm gateway and a warm client), that runs each turn of the plan with the
// gateway's `agent` method and prints one JSON line per turn with its wall time.
//
// argv: <openclaw dist dir> <port> <token> <plan JSON>
// plan: {warm, runs, turns, prompt, marker, targets: [{label, agentId, sessionKey}]}; each turn's
// session key is the target's with `-warm` or `-<run>` after it.
//
// Each timed round runs every target twice in a row: its first turn follows another agent's turn
// (`after: "other"`), its second follows its own (`after: "same"`). OpenClaw itself spends much
// longer before a turn whose agent differs from the one before (seen: ~1–2 s before the harness is
// called), so the two are timed apart, never mixed in one median. The order of the targets
// rotates every round, so a drift in the machine's load falls on all alike. Approvals (plugin or
// exec) are allowed once, as a person at the gateway would, so a harness that asks is timed with
// its approval round trip.
const [dist, port, token, planJson] = process.argv.slice(2);
const plan = JSON.parse(planJson);
const { GatewayClient } = await import(`${dist}/plugin-sdk/gateway-runtime.js`);
const say = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

let connected;
const hello = new Promise((resolve, reject) => {
  connected = { resolve, reject };
});
const client = new GatewayClient({
  url: `ws://127.0.0.1:${port}`,
  token,
  clientName: "cli",
  clientDisplayName: "clawbridge gateway bench",
  mode: "cli",
  caps: ["approvals"],
  scopes: ["operator.admin", "operator.approvals", "operator.read", "operator.write"],
  onHelloOk: () => connected.resolve(),
  onConnectError: (error) => connected.reject(error),
  onEvent: async (evt) => {
    const kind = { "plugin.approval.requested": "plugin", "exec.approval.requested": "exec" }[evt.event];
    if (!kind) return;
    try {
      await client.request(`${kind}.approval.resolve`, { id: evt.payload.id, decision: "allow-once" });
      say({ approval: kind });
    } catch (error) {
      say({ approval: kind, error: String(error?.message ?? error) });
    }
  },
});
client.start();
try {
  await hello;
} catch (error) {
  say({ fatal: `could not connect to the gateway: ${String(error?.message ?? error)}` });
  process.exit(1);
}

let serial = 0;
// The agent of the turn before, to say whether a turn follows its own agent or another.
let previousAgent = null;
// Every run has a session of its own per target, opened by one untimed turn, so a run's turns do
// not carry the history of the runs before it (the embedded runner resends it all every turn).
async function turn(target, run, index, warm) {
  serial += 1;
  const after = previousAgent === target.agentId ? "same" : "other";
  previousAgent = target.agentId;
  // Wall clock too, so a turn can be lined up with the bridge's and the gateway's own logs.
  const startedAt = Date.now();
  const started = performance.now();
  let result;
  let error;
  try {
    result = await client.request(
      "agent",
      {
        message: plan.prompt,
        agentId: target.agentId,
        sessionKey: `${target.sessionKey}-${run < 0 ? "warm" : run}`,
        idempotencyKey: `bench-${process.pid}-${serial}`,
        timeout: 120,
      },
      { expectFinal: true, timeoutMs: 180000 },
    );
  } catch (e) {
    error = String(e?.message ?? e);
  }
  const ms = performance.now() - started;
  const text = (result?.result?.payloads ?? []).map((p) => p.text ?? "").join("\n");
  const harness = result?.result?.meta?.agentMeta?.agentHarnessId ?? null;
  const ok = !error && result?.status === "ok" && text.includes(plan.marker);
  say({ label: target.label, run, turn: index, warm, after, startedAt, ms, ok, harness, text: text.slice(0, 200), status: result?.status ?? null, error: error ?? null });
}

for (let i = 0; i < plan.warm; i++) {
  for (const target of plan.targets) await turn(target, -1, i, true);
}
for (let run = 0; run < plan.runs; run++) {
  for (const target of plan.targets) await turn(target, run, -1, true);
  for (let i = 0; i < plan.turns; i++) {
    const shift = i % plan.targets.length;
    const order = [...plan.targets.slice(shift), ...plan.targets.slice(0, shift)];
    for (const target of order) {
      await turn(target, run, i, false);
      await turn(target, run, i, false);
    }
  }
}
client.stop();
say({ done: true });
process.exit(0);
