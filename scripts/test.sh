#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs the pinned real peers (idempotent, quick when
# present), then runs every test. Live tests are required here: a missing peer fails them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-peers.sh all >&2
export CLAWBRIDGE_REQUIRE_PEERS="${CLAWBRIDGE_REQUIRE_PEERS:-1}"
cargo test --workspace --locked --no-fail-fast "$@"
