#!/usr/bin/env bash
# Type-checks the OpenClaw plugin's JS (the files marked `// @ts-check`, JSDoc types) against the
# pinned openclaw's SDK declarations, with the pinned TypeScript (both from scripts/install-peers.sh):
# a result or terminal of the wrong shape fails here. Users run the JS as it is; nothing is emitted.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$(bash "$root/scripts/install-peers.sh" all)"
node_bin="$(sed -n 's/^node=//p' <<<"$peers")"
tsc="$(sed -n 's/^tsc=//p' <<<"$peers")"
openclaw="$(sed -n 's/^openclaw=//p' <<<"$peers")"
[ -n "$node_bin" ] && [ -n "$tsc" ] && [ -n "$openclaw" ] ||
  { echo "typecheck-plugin.sh: Node 24, TypeScript or openclaw is not installed" >&2; exit 1; }
plugin="$root/openclaw-plugin"
sdk="$(dirname "$openclaw")/dist/plugin-sdk/agent-harness-runtime.d.ts"
if [ "$sdk" -ef "$plugin/../.peers/openclaw/node_modules/openclaw/dist/plugin-sdk/agent-harness-runtime.d.ts" ]; then
  exec "$node_bin" "$tsc" -p "$plugin/tsconfig.json" "$@"
fi
# Peers installed elsewhere (CLAWBRIDGE_PEERS_DIR): the same check with the SDK path replaced.
config="$(mktemp "${TMPDIR:-/tmp}/clawbridge-tsconfig.XXXXXX.json")"
trap 'rm -f "$config"' EXIT
cat >"$config" <<JSON
{"extends": "$plugin/tsconfig.json",
 "compilerOptions": {"paths": {
   "openclaw/plugin-sdk/agent-harness-runtime": ["$sdk"],
   "openclaw/plugin-sdk/session-transcript-runtime": ["$plugin/types/session-transcript-runtime.d.ts"]}},
 "include": ["$plugin/index.js", "$plugin/src/**/*.js", "$plugin/types/**/*.d.ts"]}
JSON
"$node_bin" "$tsc" -p "$config" "$@"
