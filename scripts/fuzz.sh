#!/usr/bin/env bash
# Fuzzes what peers send us, with cargo-fuzz (libFuzzer): the line codec and the decoding (and
# mapping) of Codex, Claude CLI, host and plain JSON-RPC messages. Targets live in fuzz/.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET…]     default: 60 s, every target
#
# Installs cargo-fuzz once (pinned, from the Rust package registry; later runs find it and start at once). cargo-fuzz
# needs nightly-only compiler flags: a nightly toolchain is used when rustup has one, otherwise the
# stable compiler with RUSTC_BOOTSTRAP=1 (a new machine has only stable). FUZZ_TOOLCHAIN=stable
# forces the fallback. Seeds are the checked-in recordings, copied into target/fuzz/seeds at run
# time; the growing corpus stays in target/fuzz/corpus (under $CARGO_TARGET_DIR when set, or
# $FUZZ_TARGET_DIR). A crash fails the run and leaves its input in fuzz/artifacts/TARGET/; replay it
# from fuzz/ with `cargo fuzz run TARGET artifacts/TARGET/<file>` and turn it into a regression test
# in the crate that owns the code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"

CARGO_FUZZ_VERSION=0.13.2
ALL_TARGETS=(line_codec jsonrpc_classify codex_messages claude_messages host_messages acp_messages)

seconds="${1:-60}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${ALL_TARGETS[@]}")

if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
    echo "fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
    cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION" >&2
fi

toolchain=()
if [[ "${FUZZ_TOOLCHAIN:-auto}" != stable ]] && rustup run nightly rustc --version >/dev/null 2>&1; then
    toolchain=(+nightly)
    echo "fuzz.sh: using $(rustup run nightly rustc --version)" >&2
else
    # cargo-fuzz passes -Z flags (sanitizer, coverage passes); RUSTC_BOOTSTRAP lets stable take them.
    export RUSTC_BOOTSTRAP=1
    echo "fuzz.sh: no nightly toolchain; using $(rustc --version) with RUSTC_BOOTSTRAP=1" >&2
fi

# Short runs are dominated by the build, long ones by execution speed.
profile=()
if [[ "${FUZZ_PROFILE:-$([[ $seconds -lt 60 ]] && echo dev || echo release)}" == dev ]]; then
    profile=(--dev)
fi

work="${FUZZ_TARGET_DIR:-${CARGO_TARGET_DIR:-$root/target}/fuzz}"
work="$(realpath -m "$work")"
seeds="$work/seeds"
python3 - "$root" "$seeds" <<'PY'
import json, pathlib, shutil, sys

root, seeds = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
shutil.rmtree(seeds, ignore_errors=True)
def put(target, name, data):
    folder = seeds / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())

def peer_lines(path):
    out = []
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        if entry.get("dir") == "from_agent":
            out.append(json.dumps(entry["json"], separators=(",", ":")) if "json" in entry else entry.get("raw", ""))
    return out

recordings = root / "fixtures" / "recordings"
for backend, target in (("codex", "codex_messages"), ("demo", "codex_messages"), ("claude", "claude_messages")):
    for path in sorted((recordings / backend).glob("*.jsonl")):
        if path.name.endswith(".model.jsonl"):
            continue
        lines = peer_lines(path)
        put(target, f"{backend}-{path.stem}", "\n".join(lines) + "\n")
        for i, line in enumerate(lines):
            put("jsonrpc_classify", f"{backend}-{path.stem}-{i}", line)
        text = path.read_bytes()[:4096]
        put("line_codec", f"{backend}-{path.stem}-cap63", b"\x3f\x07" + text)
        put("line_codec", f"{backend}-{path.stem}-cap16", b"\x10\x2a" + text)
put("line_codec", "crlf-separators", b"\x08\x01a\r\nb\xe2\x80\xa8c\n\r\r\n\n\xff\xfe\ntail")

host = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1,
        "host": {"name": "openclaw", "version": "2026.9.6"},
        "capabilities": {"hostTools": True, "approvals": True, "toolTerminals": True, "transcriptAppend": True, "userInput": False}}},
    {"jsonrpc": "2.0", "id": 2, "method": "harness/list", "params": {}},
    {"jsonrpc": "2.0", "id": 3, "method": "harness/supports", "params": {"harnessId": "codex", "provider": "openai", "modelId": "gpt-5"}},
    {"jsonrpc": "2.0", "id": 4, "method": "attempt/run", "params": {"attemptId": "a-1", "harnessId": "clawbridge-demo",
        "sessionId": "s-1", "runId": "r-1", "prompt": "Run echo hi", "workspaceDir": "/tmp", "provider": "mock",
        "modelId": "mock-1", "modelApi": "openai-completions", "disableTools": False,
        "hostTools": [{"name": "lookup", "description": "d", "inputSchema": {"type": "object"}}]}},
    {"jsonrpc": "2.0", "id": 5, "method": "attempt/cancel", "params": {"attemptId": "a-1", "reason": "stop"}},
    {"jsonrpc": "2.0", "id": 6, "method": "session/reset", "params": {"sessionId": "s-1", "reason": "reset"}},
    {"jsonrpc": "2.0", "id": 7, "method": "shutdown", "params": {}},
    {"jsonrpc": "2.0", "id": 8, "result": {"decision": "allow"}},
    {"jsonrpc": "2.0", "id": 9, "result": {"text": "ok", "isError": False}},
    {"jsonrpc": "2.0", "id": 10, "result": {"lastToolError": {"toolName": "exec", "error": "x", "mutatingAction": False}}},
    {"jsonrpc": "2.0", "id": 11, "result": {"entries": [{"appended": True}]}},
    {"jsonrpc": "2.0", "id": 12, "error": {"code": -32601, "message": "no"}},
]
for i, message in enumerate(host):
    line = json.dumps(message, separators=(",", ":"))
    put("host_messages", f"host-{i}", line)
    put("jsonrpc_classify", f"host-{i}", line)
acp = [
    {"sessionId": "s1", "update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}},
    {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}, "messageId": "m1"}},
    {"sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute", "status": "pending", "rawInput": {"command": "ls"}}},
    {"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress", "content": [{"type": "content", "content": {"type": "text", "text": "a"}}]}},
    {"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": {"exit_code": 0}}},
    {"declined": "c2", "sessionId": "s1", "update": {"sessionUpdate": "tool_call", "toolCallId": "c2", "kind": "edit", "content": [{"type": "diff", "path": "/w/a", "oldText": None, "newText": "x"}]}},
    {"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "failed"}},
    {"sessionId": "s1", "update": {"sessionUpdate": "plan", "entries": [{"content": "step", "priority": "high", "status": "in_progress"}]}},
    {"sessionId": "s1", "update": {"sessionUpdate": "usage_update", "used": 10, "size": 100}},
    {"sessionId": "s1", "update": {"sessionUpdate": "current_mode_update", "currentModeId": "ask"}},
    {"sessionId": "s1", "update": {"sessionUpdate": "from_the_future", "x": 1}},
    {"stopReason": "end_turn", "usage": {"inputTokens": 3, "outputTokens": 4}},
]
put("acp_messages", "acp-turn", "\n".join(json.dumps(m, separators=(",", ":")) for m in acp) + "\n")
put("host_messages", "host-all", "\n".join(json.dumps(m, separators=(",", ":")) for m in host) + "\n")
PY

cd fuzz
for target in "${targets[@]}"; do
    mkdir -p "$work/corpus/$target"
    echo "fuzz.sh: $target for ${seconds}s" >&2
    # libFuzzer prints a line per new input; that log is kept in a file and shown only when the
    # target fails, so a short run leaves a few lines and the suite's summary stays readable.
    log="$work/logs/$target.log"
    mkdir -p "$work/logs"
    if ! cargo "${toolchain[@]}" fuzz run "${profile[@]}" --target-dir "$work" "$target" "$work/corpus/$target" "$seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
        tail -n 80 "$log" >&2
        echo "fuzz.sh: $target failed; its whole log is $log" >&2
        exit 1
    fi
    grep -E '^(Done [0-9]+ runs|stat::peak_rss_mb)' "$log" | sed "s/^/fuzz.sh: $target: /" >&2
done
echo "fuzz.sh: ${#targets[@]} target(s) ran ${seconds}s each without a crash" >&2
