#!/usr/bin/env bash
# Type-checks the OpenClaw plugin's JS (the files marked `// @ts-check`, JSDoc types) against the
# pinned openclaw's SDK declarations in .peers/, with the pinned TypeScript: a result or terminal of
# the wrong shape fails here. Users run the JS as it is; nothing is compiled or emitted.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$(bash "$root/scripts/install-peers.sh" all)"
node_bin="$(sed -n 's/^node=//p' <<<"$peers")"
tsc="$(sed -n 's/^tsc=//p' <<<"$peers")"
[ -n "$node_bin" ] && [ -n "$tsc" ] || { echo "typecheck-plugin.sh: Node 24 or TypeScript is not installed in .peers/" >&2; exit 1; }
exec "$node_bin" "$tsc" -p "$root/openclaw-plugin/tsconfig.json" "$@"
