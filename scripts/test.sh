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
status=0
cargo test --workspace --locked --no-fail-fast "$@" || status=$?

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
