#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the pinned real peers (idempotent, quick when
# present), then runs every test. Live tests are required here: a missing peer fails them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

peers="$(bash scripts/install-peers.sh all)"
# OpenSSH for the launcher's live tests (tests/ssh_live.rs); when it cannot be installed they
# fail below, since peers are required here, naming what is missing.
bash scripts/install-sshd.sh || echo "test.sh: OpenSSH is not installed; tests/ssh_live.rs will fail" >&2
export CLAWBRIDGE_REQUIRE_PEERS="${CLAWBRIDGE_REQUIRE_PEERS:-1}"
# Every clawbridge the tests start reads an empty config file, never the developer's own
# (~/.config/clawbridge/config.toml); tests of the config file name theirs with --config.
export CLAWBRIDGE_CONFIG="$PWD/fixtures/data/empty-config.toml"
# Runs the suite's test targets as jobs, at most $1 at a time; the other arguments go to every
# `cargo test`. The first job is everything but the OpenClaw targets, each of which is a job of its own.
run_lanes() {
  local lanes="$1"; shift
  case "$lanes" in '' | *[!0-9]* | 0) echo "test.sh: CLAWBRIDGE_TEST_LANES must be a number above 0, not '$lanes'" >&2; return 2 ;; esac
  local dir; dir="$(mktemp -d)"
  # Every target is selected from the whole workspace (`--workspace --test NAME`), so the
  # dependencies' features are the ones the build above unified and nothing is rebuilt.
  local -a rest=() live=()
  local file name
  shopt -s nullglob
  for file in tests/*.rs */tests/*.rs; do
    name="$(basename "$file" .rs)"
    case "$file" in tests/openclaw_*) live+=("$name") ;; *) rest+=(--test "$name") ;; esac
  done
  rest_of_suite() {
    local rc=0
    cargo test --workspace --locked --no-fail-fast --lib --bins "${rest[@]}" "$@" || rc=$?
    cargo test --workspace --locked --no-fail-fast --doc "$@" || rc=$?
    return "$rc"
  }
  job() {
    local name="$1"; shift
    local rc=0
    "$@" >"$dir/$name.log" 2>&1 || rc=$?
    {
      flock 9
      cat "$dir/$name.log"
      [ "$rc" = 0 ] || echo "test.sh: $name failed (exit $rc)"
    } 9>"$dir/print.lock"
    echo "$rc" >"$dir/$name.rc"
  }
  job rest rest_of_suite "$@" &
  for name in "${live[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
    job "$name" cargo test --workspace --locked --no-fail-fast --test "$name" "$@" &
  done
  wait
  # A job that never wrote its status (killed, or a bug here) fails the run: count them.
  local failed=0 rc statuses=0
  for rc in "$dir"/*.rc; do
    statuses=$((statuses + 1))
    [ "$(cat "$rc")" = 0 ] || failed=1
  done
  if [ "$statuses" -ne $((${#live[@]} + 1)) ]; then
    echo "test.sh: $statuses of $((${#live[@]} + 1)) test jobs reported a status" >&2
    failed=1
  fi
  rm -rf "$dir"
  return "$failed"
}

status=0
# Build every test target once, then run them in lanes: the targets that start a real OpenClaw
# (tests/openclaw_*.rs) spend much of their time waiting on Node and the mock model, so two of them
# (or one beside the rest of the suite) share the cores well. Each target's output is printed whole
# when it ends.
cargo test --workspace --locked --no-run "$@" || exit $?
run_lanes "${CLAWBRIDGE_TEST_LANES:-2}" "$@" || status=$?

# The plugin's JS type-checked against the pinned openclaw SDK's .d.ts (scripts/typecheck-plugin.sh).
bash scripts/typecheck-plugin.sh || status=$?

# The OpenClaw plugin's tests (node's test runner, Node 24 from .peers/) against the binaries the
# cargo run above built: the real bridge, and the fake agent standing in for codex.
node_bin="$(sed -n 's/^node=//p' <<<"$peers")"
[ -n "$node_bin" ] || { echo "test.sh: Node 24 is not installed in .peers/" >&2; exit 1; }
bins="${CARGO_TARGET_DIR:-target}/debug"
PATH="$(dirname "$node_bin"):$PATH" \
  CLAWBRIDGE_BIN="$(realpath "$bins/clawbridge")" FAKE_AGENT_BIN="$(realpath "$bins/fake-agent")" \
  node --test openclaw-plugin/test/*.test.js || status=$?

# The real `cargo install --path .` (scripts/check-cargo-install.sh), last of the checks that use
# the target's binaries: it rebuilds them with the dependencies' install-time features.
bash scripts/check-cargo-install.sh || status=$?

# A short fuzz run of every cargo-fuzz target (installs cargo-fuzz on first use; see scripts/fuzz.sh).
# Its output goes to stderr so the test runners' summaries stay the last lines on stdout.
fuzz_seconds="${CLAWBRIDGE_FUZZ_SECONDS:-5}"
if [ "$fuzz_seconds" != 0 ]; then
  bash scripts/fuzz.sh "$fuzz_seconds" >&2 || status=$?
fi
exit "$status"
