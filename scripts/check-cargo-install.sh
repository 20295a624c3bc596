#!/usr/bin/env bash
# The real `cargo install --path . --locked --debug` into a temp root (README "Install"): it must
# put exactly `clawbridge` in <root>/bin, and that binary must run. scripts/test.sh runs it after
# the other tests: it rebuilds the dependency tree without the dev-only tokio `test-util` feature
# (cargo test unifies it in; cargo install does not) and replaces the shared target's
# debug/clawbridge, which tests running at the same time execute. The debug profile keeps it to an
# incremental rebuild of the dependencies that feature touches, not a release build from scratch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
cargo install --path . --locked --offline --debug --root "$root" >&2
installed="$(ls -A "$root/bin")"
[ "$installed" = clawbridge ] || { echo "check-cargo-install: $root/bin holds: $installed (want only clawbridge)" >&2; exit 1; }
version="$("$root/bin/clawbridge" --version)"
want="clawbridge $(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[ "$version" = "$want" ] || { echo "check-cargo-install: --version says '$version', not '$want'" >&2; exit 1; }
echo "cargo install: ok ($root/bin/clawbridge, $version)"
