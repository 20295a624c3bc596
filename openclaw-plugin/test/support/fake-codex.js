// A stand-in for `codex app-server` behind the bridge's Codex harness: the workspace's scripted
// `fake-agent` (fixtures/src/bin/fake_agent.rs) playing the recorded plain-text turn
// (fixtures/recordings/codex/plain-text.jsonl), with the changes a test needs (a dynamic tool call,
// a turn that only ends when interrupted). Derived from the recording at test time, so a
// re-recording updates it. Only the bridge's Codex launch is faked; the bridge itself is real.

import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { repoRoot } from "./fakes.js";

/** The fake agent binary: $FAKE_AGENT_BIN, else the workspace's debug build. */
export function fakeAgentBinary() {
  const path = process.env.FAKE_AGENT_BIN || join(repoRoot, "target/debug/fake-agent");
  if (!existsSync(path)) {
    throw new Error(`no fake-agent at ${path}: run \`cargo build -p clawbridge-fixtures\` or set FAKE_AGENT_BIN`);
  }
  return path;
}

/** The recorded plain-text turn: answers by method and the notifications after `turn/start`. */
function recordedTurn() {
  const lines = readFileSync(join(repoRoot, "fixtures/recordings/codex/plain-text.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .slice(1)
    .map((line) => JSON.parse(line));
  const answers = {};
  const afterTurnStart = [];
  let turnStarted = false;
  for (const [i, entry] of lines.entries()) {
    const message = entry.json;
    if (entry.dir === "to_agent" && typeof message.method === "string" && message.id !== undefined) {
      const answer = lines.slice(i + 1).find((e) => e.dir === "from_agent" && e.json.id === message.id && "result" in e.json);
      if (answer && message.method !== "initialize") answers[message.method] = answer.json.result;
      if (message.method === "turn/start") turnStarted = true;
    } else if (turnStarted && entry.dir === "from_agent" && typeof message.method === "string" && message.id === undefined) {
      afterTurnStart.push(message);
    }
  }
  return { answers, afterTurnStart };
}

/**
 * Writes a launcher for the bridge's `CLAWBRIDGE_CODEX_BIN` into `dir` and returns its path.
 * `mode`: `"toolCall"` (the turn calls the dynamic tool `toolName` with `args`, then completes) or
 * `"untilInterrupted"` (the turn starts and only completes, as interrupted, on `turn/interrupt`) or
 * `"retryThenAnswer"` (two `error` notifications with `willRetry`, then the recorded answer) or
 * `"askUser"` (the turn asks the user one question through `item/tool/requestUserInput`, then
 * completes) or `"plain"` (the recorded turn as it is) or `"exitDuringHandshake"` (it exits with
 * status 1 when asked `initialize`, never answering it). With `recordInputTo`, the launcher appends
 * every line the bridge sends Codex to that file.
 */
export function fakeCodex(dir, { mode, toolName = "lookup_weather", args = { city: "Paris" }, recordInputTo }) {
  const { answers, afterTurnStart } = recordedTurn();
  const started = afterTurnStart.find((m) => m.method === "turn/started");
  const completed = afterTurnStart.find((m) => m.method === "turn/completed");
  const { threadId, turn } = started.params;
  const after = {};
  if (mode === "toolCall") {
    // The item lifecycle and the request as codex 0.169.0 sends them (see dynamic-tool.jsonl).
    const item = { arguments: args, id: "call_9", namespace: null, tool: toolName, type: "dynamicToolCall" };
    const itemNote = (method, fields) => ({
      method,
      params: { item: { ...item, ...fields }, threadId, turnId: turn.id },
    });
    after["turn/start"] = [
      { send: started },
      { send: itemNote("item/started", { status: "inProgress", success: null, contentItems: null }) },
      {
        send: {
          id: 900,
          method: "item/tool/call",
          params: { arguments: args, callId: "call_9", namespace: null, threadId, tool: toolName, turnId: turn.id },
        },
      },
      // Let the bridge run the host tool before the item completes.
      { sleep_ms: 1500 },
      {
        send: itemNote("item/completed", {
          status: "completed",
          success: true,
          contentItems: [{ type: "inputText", text: "tool answered" }],
        }),
      },
      ...afterTurnStart.filter((m) => m !== started).map((m) => ({ send: m })),
    ];
  } else if (mode === "askUser") {
    const question = {
      id: "colour", header: "Colour", question: "Which colour?", isOther: false, isSecret: false,
      options: [{ label: "blue", description: "calm" }, { label: "red", description: "" }],
    };
    after["turn/start"] = [
      { send: started },
      {
        send: {
          id: 901,
          method: "item/tool/requestUserInput",
          params: { threadId, turnId: turn.id, itemId: "ask_1", questions: [question] },
        },
      },
      // Let the bridge ask the host before the turn completes.
      { sleep_ms: 1500 },
      ...afterTurnStart.filter((m) => m !== started).map((m) => ({ send: m })),
    ];
  } else if (mode === "untilInterrupted") {
    after["turn/start"] = [{ send: started }];
    // Input steered into the running turn is taken (the answer names the active turn).
    answers["turn/steer"] = { turnId: turn.id };
    answers["turn/interrupt"] = {};
    after["turn/interrupt"] = [
      {
        send: {
          ...completed,
          params: { ...completed.params, turn: { ...completed.params.turn, items: [], status: "interrupted" } },
        },
      },
    ];
  } else if (mode === "exitDuringHandshake") {
    after.initialize = [{ crash: { code: 1, stderr: "scripted: cannot start" } }];
  } else if (mode === "plain") {
    after["turn/start"] = afterTurnStart.map((m) => ({ send: m }));
  } else if (mode === "retryThenAnswer") {
    // Two transient errors as codex 0.169.0 words a dropped stream, then the recorded turn.
    const retry = (n) => ({
      method: "error",
      params: {
        error: { message: `Reconnecting... ${n}/5`, codexErrorInfo: { responseStreamDisconnected: {} }, additionalDetails: "scripted outage" },
        willRetry: true,
        threadId,
        turnId: turn.id,
      },
    });
    after["turn/start"] = [
      { send: started },
      { send: retry(1) },
      { send: retry(2) },
      ...afterTurnStart.filter((m) => m !== started).map((m) => ({ send: m })),
    ];
  } else {
    throw new Error(`unknown fake codex mode ${mode}`);
  }
  const scriptPath = join(dir, `fake-codex-${mode}.json`);
  writeFileSync(scriptPath, JSON.stringify({ answers, after }));
  const launcher = join(dir, `fake-codex-${mode}.sh`);
  // The bridge probes `--version` and gives its Codex child a scrubbed environment, so the
  // launcher answers the probe and sets the fake's own variables itself.
  writeFileSync(
    launcher,
    [
      "#!/bin/sh",
      'if [ "$1" = "--version" ]; then echo "codex-cli 0.169.0"; exit 0; fi',
      "export FAKE_AGENT_DIALECT=codex",
      "export FAKE_AGENT_USER_AGENT='clawbridge/0.169.0 (Debian 12.0.0; x86_64) dumb (clawbridge; 0.1.0)'",
      `export FAKE_AGENT_SCRIPT='${scriptPath}'`,
      // `recordInputTo`: every line the bridge sends Codex, so a test can read what reached it.
      recordInputTo ? `tee -a '${recordInputTo}' | '${fakeAgentBinary()}' "$@"` : `exec '${fakeAgentBinary()}' "$@"`,
      "",
    ].join("\n"),
  );
  chmodSync(launcher, 0o755);
  return launcher;
}
