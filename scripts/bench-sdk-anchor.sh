#!/usr/bin/env bash
# Installs the side-by-side anchor for `clawbridge-bench`: the official Python Claude Agent SDK, pinned,
# in its own virtualenv under an ignored folder (default .peers/sdk-anchor/venv). Idempotent: a venv whose
# stamp matches the pin is left alone. Prints `python=<path>` (what `clawbridge-bench --sdk-python` takes).
#
#   bash scripts/bench-sdk-anchor.sh            # install (or confirm) the venv
#   bash scripts/bench-sdk-anchor.sh --run ...  # run scripts/sdk-anchor/anchor.py with the venv's python
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${CLAWBRIDGE_PEERS_DIR:-$root/.peers}/sdk-anchor"
venv="$dest/venv"

SDK_VERSION=0.2.189
stamp="claude-agent-sdk==$SDK_VERSION"

python="${PYTHON:-python3}"
if [ ! -f "$venv/.clawbridge-stamp" ] || [ "$(cat "$venv/.clawbridge-stamp")" != "$stamp" ]; then
  command -v "$python" >/dev/null || { echo "bench-sdk-anchor: no $python to create the virtualenv" >&2; exit 1; }
  echo "bench-sdk-anchor: installing $stamp into $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$stamp"
  echo "$stamp" >"$venv/.clawbridge-stamp"
fi

if [ "${1:-}" = "--run" ]; then
  shift
  exec "$venv/bin/python" "$root/scripts/sdk-anchor/anchor.py" "$@"
fi
echo "python=$venv/bin/python"
