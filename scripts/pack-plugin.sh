#!/usr/bin/env bash
# Packs the OpenClaw plugin for installing without a checkout (README "Install"): two npm tarballs,
#   clawbridge-openclaw-plugin-<version>.tgz  the plugin (`openclaw plugins install <it>`), and
#   clawbridge-<platform>-<arch>-<version>.tgz the bridge binary for this platform, the package the
#                                              plugin names as an optional dependency and finds
#                                              the binary in (openclaw-plugin/src/locate.js).
# Usage: scripts/pack-plugin.sh [--binary PATH] [--out DIR]
#   --binary  a clawbridge executable to ship; default: `cargo build --release --locked` builds one
#   --out     where the tarballs go; default: ${CARGO_TARGET_DIR:-target}/package
# Prints the two tarballs' paths, the plugin's first. Needs node and npm on PATH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "pack-plugin: unknown argument $1 (usage: pack-plugin.sh [--binary PATH] [--out DIR])" >&2; exit 2 ;;
  esac
done
target_dir="${CARGO_TARGET_DIR:-$root/target}"
out="${out:-$target_dir/package}"

if [ -z "$binary" ]; then
  (cd "$root" && cargo build --release --locked -p clawbridge --bin clawbridge >&2)
  binary="$target_dir/release/clawbridge"
fi
[ -x "$binary" ] || { echo "pack-plugin: $binary is not an executable" >&2; exit 1; }

# One version for everything: the workspace's, which the plugin's package.json must carry too.
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")"
read -r plugin_name plugin_version platform_pkg pinned < <(
  cd "$root/openclaw-plugin" && node -e '
    const pkg = require("./package.json");
    const name = `@clawbridge/${process.platform}-${process.arch}`;
    console.log(pkg.name, pkg.version, name, (pkg.optionalDependencies ?? {})[name] ?? "-");')
[ "$plugin_version" = "$version" ] || {
  echo "pack-plugin: openclaw-plugin/package.json has version $plugin_version, the workspace $version" >&2; exit 1; }
[ "$pinned" = "$version" ] || {
  echo "pack-plugin: the plugin's optionalDependencies pin $platform_pkg at $pinned, not $version" >&2; exit 1; }

mkdir -p "$out"
stage="$(mktemp -d "$out/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# The platform package: the binary, and os/cpu so npm installs it only where it runs.
os="${platform_pkg#@clawbridge/}"; cpu="${os#*-}"; os="${os%%-*}"
mkdir -p "$stage/platform/bin"
install -m 0755 "$binary" "$stage/platform/bin/clawbridge"
cat >"$stage/platform/package.json" <<JSON
{
  "name": "$platform_pkg",
  "version": "$version",
  "description": "The clawbridge executable for $os-$cpu, found by $plugin_name",
  "license": "MIT OR Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],
  "files": ["bin/clawbridge"],
  "preferUnplugged": true
}
JSON

pack() { # dir → prints the tarball's path
  local file
  file="$(cd "$1" && npm pack --ignore-scripts --silent --pack-destination "$out" | tail -n 1)"
  echo "$out/$file"
}
plugin_tgz="$(pack "$root/openclaw-plugin")"
platform_tgz="$(pack "$stage/platform")"

# What ships is what `files` names: no tests, no type-check config.
if tar -tzf "$plugin_tgz" | grep -E '^package/(test|types|node_modules)/|^package/tsconfig\.json$' >&2; then
  echo "pack-plugin: $plugin_tgz carries development files (above)" >&2; exit 1
fi
echo "$plugin_tgz"
echo "$platform_tgz"
