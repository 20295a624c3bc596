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
# What failed, a line per failed step (and the names of its failed tests), printed again as the
# run's last lines: a CI log that keeps only its tail still names the failing test.
failures="$(mktemp)"
trap 'rm -f "$failures"' EXIT
# failed STEP RC [LOG]: records a failed step, with the failed tests its LOG names (cargo's
# "test NAME ... FAILED", node's "not ok N - NAME").
failed() {
  local step="$1" rc="$2" log="${3:-}" tests=""
  if [ -n "$log" ] && [ -f "$log" ]; then
    tests="$(sed -nE 's/^test (.+) \.\.\. FAILED$/\1/p; s/^ *not ok [0-9]+ - (.+)$/\1/p' "$log" | sort -u | awk 'NR > 1 { printf "; " } { printf "%s", $0 }')"
  fi
  {
    flock 8
    echo "$step (exit $rc)${tests:+: $tests}" >>"$failures"
  } 8>>"$failures"
}
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
    [ "$rc" = 0 ] || failed "cargo test job $name" "$rc" "$dir/$name.log"
    echo "$rc" >"$dir/$name.rc"
  }
  job rest rest_of_suite "$@" &
  for name in "${live[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$lanes" ]; do wait -n || true; done
    job "$name" cargo test --workspace --locked --no-fail-fast --test "$name" "$@" &
  done
  wait
  # A job that never wrote its status (killed, or a bug here) fails the run: count them.
  local any_failed=0 rc statuses=0
  for rc in "$dir"/*.rc; do
    statuses=$((statuses + 1))
    [ "$(cat "$rc")" = 0 ] || any_failed=1
  done
  if [ "$statuses" -ne $((${#live[@]} + 1)) ]; then
    echo "test.sh: $statuses of $((${#live[@]} + 1)) test jobs reported a status" >&2
    failed "cargo test: $statuses of $((${#live[@]} + 1)) jobs reported a status" 1
    any_failed=1
  fi
  rm -rf "$dir"
  return "$any_failed"
}

status=0
# Build every test target once, then run them in lanes: the targets that start a real OpenClaw
# (tests/openclaw_*.rs) spend much of their time waiting on Node and the mock model, so two of them
# (or one beside the rest of the suite) share the cores well. Each target's output is printed whole
# when it ends.
cargo test --workspace --locked --no-run "$@" || exit $?
run_lanes "${CLAWBRIDGE_TEST_LANES:-2}" "$@" || status=$?

# step NAME COMMAND…: runs one check after the cargo tests; a failure is recorded, the run goes on.
# Its output is printed as it comes and kept, so the failed tests can be named at the end.
step() {
  local name="$1"; shift
  local log rc=0
  log="$(mktemp)"
  "$@" 2>&1 | tee "$log" || rc=$?
  [ "$rc" = 0 ] || { failed "$name" "$rc" "$log"; status=$rc; }
  rm -f "$log"
}

# The plugin's JS type-checked against the pinned openclaw SDK's .d.ts (scripts/typecheck-plugin.sh).
step "plugin type check" bash scripts/typecheck-plugin.sh

# The OpenClaw plugin's tests (node's test runner, Node 24 from .peers/) against the binaries the
# cargo run above built: the real bridge, and the fake agent standing in for codex.
node_bin="$(sed -n 's/^node=//p' <<<"$peers")"
[ -n "$node_bin" ] || { echo "test.sh: Node 24 is not installed in .peers/" >&2; exit 1; }
bins="${CARGO_TARGET_DIR:-target}/debug"
step "plugin tests (node --test)" env PATH="$(dirname "$node_bin"):$PATH" \
  CLAWBRIDGE_BIN="$(realpath "$bins/clawbridge")" FAKE_AGENT_BIN="$(realpath "$bins/fake-agent")" \
  node --test openclaw-plugin/test/*.test.js

# The real `cargo install --path .` (scripts/check-cargo-install.sh), last of the checks that use
# the target's binaries: it rebuilds them with the dependencies' install-time features.
step "cargo install check" bash scripts/check-cargo-install.sh

# A short fuzz run of every cargo-fuzz target (installs cargo-fuzz on first use; see scripts/fuzz.sh).
# Its output goes to stderr so the test runners' summaries stay the last lines on stdout.
fuzz_seconds="${CLAWBRIDGE_FUZZ_SECONDS:-5}"
if [ "$fuzz_seconds" != 0 ]; then
  bash scripts/fuzz.sh "$fuzz_seconds" >&2 || { rc=$?; failed "fuzz (scripts/fuzz.sh)" "$rc"; status=$rc; }
fi
if [ -s "$failures" ]; then
  # On both streams: a log that keeps either one's tail names what failed. Written to each
  # stream's own descriptor: `tee /dev/stderr` would reopen a log file that both streams go to and
  # truncate it, losing everything the run wrote before.
  summary="$(echo "test.sh: FAILED:"; sed 's/^/test.sh:   /' "$failures")"
  echo "$summary"
  echo "$summary" >&2
else
  echo "test.sh: every step passed"
fi
exit "$status"
