#!/usr/bin/env bash
# Packs the OpenClaw plugin for installing without a checkout (README "Install"): two npm tarballs,
#   clawbridge-openclaw-plugin-<version>.tgz           the plugin (`openclaw plugins install <it>`),
#                                                      with binaries.json pinning the binary's sha256;
#   clawbridge-openclaw-plugin-<version>-<plat>-<arch>.tgz  the bridge binary for this platform:
#       the version `<version>-<plat>-<arch>` of the same package name, which the plugin names as an
#       optional dependency under an alias (`@clawbridge/openclaw-plugin-<plat>-<arch>`:
#       `npm:@clawbridge/openclaw-plugin@<version>-<plat>-<arch>`, as @openai/codex does), so one
#       owned name carries every platform, and the plugin runs it only if its sha256 is the pinned one
#       (openclaw-plugin/src/locate.js).
# Publishing these needs whoever publishes to own `@clawbridge/openclaw-plugin` on the registry:
# the plugin asks the user's registry for that name, so a name someone else owns would ship
# their files (the sha256 pin stops their binary from running, not their package from installing).
# This packs one platform, this machine's; binaries.json pins only the binary it packed.
# Usage: scripts/pack-plugin.sh [--binary PATH] [--out DIR]
#   --binary  a clawbridge executable to ship; default: `cargo build --release --locked` builds one
#   --out     where the tarballs go; default: ${CARGO_TARGET_DIR:-target}/package
# Prints the two tarballs' absolute paths, the plugin's first. Needs node and npm on PATH.
set -euo pipefail
shopt -s inherit_errexit

usage="usage: pack-plugin.sh [--binary PATH] [--out DIR]"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary=""
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary | --out)
      [ $# -ge 2 ] && [ -n "$2" ] || { echo "pack-plugin: $1 needs a value ($usage)" >&2; exit 2; }
      if [ "$1" = --binary ]; then binary="$2"; else out="$2"; fi
      shift 2 ;;
    *) echo "pack-plugin: unknown argument $1 ($usage)" >&2; exit 2 ;;
  esac
done
# Absolute: npm pack runs in other directories, and the paths printed are used from anywhere.
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
target_dir="$(absolute "${CARGO_TARGET_DIR:-$root/target}")"
out="$(absolute "${out:-$target_dir/package}")"

if [ -z "$binary" ]; then
  (cd "$root" && CARGO_TARGET_DIR="$target_dir" cargo build --release --locked -p clawbridge --bin clawbridge >&2)
  binary="$target_dir/release/clawbridge"
fi
binary="$(absolute "$binary")"
[ -f "$binary" ] && [ -x "$binary" ] || { echo "pack-plugin: $binary is not an executable file" >&2; exit 1; }

# One version for everything: the workspace's, which the plugin's package.json must carry too.
version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' "$root/Cargo.toml")"
read -r plugin_name plugin_version platform alias pinned < <(
  cd "$root/openclaw-plugin" && node -e '
    const pkg = require("./package.json");
    const platform = `${process.platform}-${process.arch}`;
    const alias = `${pkg.name}-${platform}`;
    console.log(pkg.name, pkg.version, platform, alias, (pkg.optionalDependencies ?? {})[alias] ?? "-");')
[ "$plugin_version" = "$version" ] || {
  echo "pack-plugin: openclaw-plugin/package.json has version $plugin_version, the workspace $version" >&2; exit 1; }
[ "$pinned" = "npm:$plugin_name@$version-$platform" ] || {
  echo "pack-plugin: the plugin's optionalDependencies name $alias as $pinned, not npm:$plugin_name@$version-$platform" >&2; exit 1; }

mkdir -p "$out"
stage="$(mktemp -d "$out/.stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# The platform package: the binary, and os/cpu (and libc: the Linux build links glibc) so npm
# installs it only where it runs.
os="${platform%%-*}"; cpu="${platform#*-}"
libc=""
[ "$os" = linux ] && libc='
  "libc": ["glibc"],'
mkdir -p "$stage/platform/bin"
install -m 0755 "$binary" "$stage/platform/bin/clawbridge"
sha256="$(sha256sum "$stage/platform/bin/clawbridge" | cut -d' ' -f1)"
cat >"$stage/platform/package.json" <<JSON
{
  "name": "$plugin_name",
  "version": "$version-$platform",
  "description": "The clawbridge executable for $platform, found by $plugin_name $version",
  "license": "MIT OR Apache-2.0",
  "os": ["$os"],
  "cpu": ["$cpu"],$libc
  "files": ["bin/clawbridge"]
}
JSON

# The plugin: its shipped files plus the pin of the binary packed beside it.
mkdir -p "$stage/plugin"
(cd "$root/openclaw-plugin" && cp -R index.js src openclaw.plugin.json package.json README.md "$stage/plugin/")
printf '{\n  "%s": "%s"\n}\n' "$platform" "$sha256" >"$stage/plugin/binaries.json"

pack() { # dir → prints the tarball's absolute path; fails when npm made none
  local file
  file="$(cd "$1" && npm pack --ignore-scripts --silent --pack-destination "$out" | tail -n 1)"
  [ -n "$file" ] && [ -f "$out/$file" ] || { echo "pack-plugin: npm pack in $1 made no tarball in $out" >&2; exit 1; }
  echo "$out/$file"
}
plugin_tgz="$(pack "$stage/plugin")"
platform_tgz="$(pack "$stage/platform")"

# What ships is what `files` names: no tests, no type-check config. The listing is read once into a
# variable: `tar | grep -q` under pipefail fails whenever grep stops reading before tar is done
# writing (tar then dies of SIGPIPE), which made this check flaky.
listing="$(tar -tzf "$plugin_tgz")"
if grep -E '^package/(test|types|node_modules)/|^package/tsconfig\.json$' <<<"$listing" >&2; then
  echo "pack-plugin: $plugin_tgz carries development files (above)" >&2; exit 1
fi
grep -qx 'package/binaries.json' <<<"$listing" || { echo "pack-plugin: $plugin_tgz lacks binaries.json" >&2; exit 1; }
echo "$plugin_tgz"
echo "$platform_tgz"
