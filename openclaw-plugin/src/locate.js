// @ts-check
// Where the plugin finds the `clawbridge` executable when nobody hand-set a path. The order, first
// match wins (README "Install"):
//   1. the plugin config's `command` (used as given: an explicit choice is never second-guessed);
//   2. `$CLAWBRIDGE_BIN` (likewise);
//   3. the binary in this platform's package (`@clawbridge/<platform>-<arch>`, an optional
//      dependency of the plugin package that npm installs only on its own os/cpu);
//   4. `cargo install`'s location: `$CARGO_HOME/bin`, `~/.cargo/bin` when CARGO_HOME is unset;
//   5. `clawbridge` on PATH.
// Found nowhere: an error naming every place looked at, in that order, and what was there.

import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";

/** The scope of the per-platform packages that carry the binary (scripts/pack-plugin.sh). */
export const PLATFORM_PACKAGE_SCOPE = "@clawbridge";

/** No clawbridge executable in any place the lookup knows. */
export class BridgeNotFoundError extends Error {
  /** @param {string} message @param {string[]} tried one line per place, in lookup order */
  constructor(message, tried) {
    super(message);
    this.name = "BridgeNotFoundError";
    this.tried = tried;
  }
}

/** The platform package's name for a Node `process.platform` and `process.arch`. */
/** @param {string} [platform] @param {string} [arch] */
export function platformPackageName(platform = process.platform, arch = process.arch) {
  return `${PLATFORM_PACKAGE_SCOPE}/${platform}-${arch}`;
}

/**
 * The executable to start, and which rule found it.
 *
 * @param {object} [options] every input is injectable so tests need no real installation
 * @param {string|null|undefined} [options.configured] the plugin config's `command`
 * @param {Record<string, string|undefined>} [options.env] the plugin's environment
 * @param {NodeJS.Platform} [options.platform] `process.platform`
 * @param {string} [options.arch] `process.arch`
 * @param {string} [options.home] the user's home directory
 * @param {(request: string) => string} [options.resolvePackage] `require.resolve` from the plugin
 * @param {(path: string) => boolean} [options.isExecutable]
 * @returns {{command: string, from: string}}
 * @throws {BridgeNotFoundError}
 */
export function locateBridge(options = {}) {
  const env = options.env ?? process.env;
  const isExecutable = options.isExecutable ?? isExecutableFile;
  const resolvePackage = options.resolvePackage ?? createRequire(import.meta.url).resolve;
  // The executable's file name on that kind of system.
  const binary = (options.platform ?? process.platform) === "win32" ? "clawbridge.exe" : "clawbridge";
  const tried = [];

  if (options.configured) return { command: options.configured, from: "the plugin config's `command`" };
  tried.push("the plugin config's `command`: not set");
  if (env.CLAWBRIDGE_BIN) return { command: env.CLAWBRIDGE_BIN, from: "$CLAWBRIDGE_BIN" };
  tried.push("$CLAWBRIDGE_BIN: not set");

  const pkg = platformPackageName(options.platform, options.arch);
  let manifest;
  try {
    manifest = resolvePackage(`${pkg}/package.json`);
  } catch {
    manifest = undefined;
  }
  if (manifest) {
    const shipped = join(dirname(manifest), "bin", binary);
    if (isExecutable(shipped)) return { command: shipped, from: `the platform package ${pkg}` };
    tried.push(`the platform package ${pkg}: installed, but ${shipped} is not an executable file`);
  } else {
    tried.push(`the platform package ${pkg} (the plugin's optional dependency): not installed`);
  }

  const cargoHome = env.CARGO_HOME || join(options.home ?? homedir(), ".cargo");
  const cargoBin = join(cargoHome, "bin", binary);
  if (isExecutable(cargoBin)) return { command: cargoBin, from: "cargo install's bin directory" };
  tried.push(`cargo install's location ${cargoBin} (${env.CARGO_HOME ? "$CARGO_HOME/bin" : "~/.cargo/bin"}): no executable there`);

  const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = join(dir, binary);
    if (isExecutable(candidate)) return { command: candidate, from: "PATH" };
  }
  tried.push(`PATH: no ${binary} in ${dirs.length ? dirs.join(delimiter) : "(PATH is empty)"}`);

  const message =
    `no clawbridge executable found; looked at, in order:\n${tried.map((line, i) => `  ${i + 1}. ${line}`).join("\n")}\n` +
    "Install it (`cargo install --path .` in a clawbridge checkout, or the plugin package with its " +
    `platform package ${pkg}) or set the plugin config's \`command\` to its path.`;
  throw new BridgeNotFoundError(message, tried);
}

/** A regular file this process may execute (a directory named clawbridge is not one). */
function isExecutableFile(path) {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
