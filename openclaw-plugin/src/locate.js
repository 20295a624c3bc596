// @ts-check
// Where the plugin finds the `clawbridge` executable when nobody hand-set a path. The order, first
// match wins (README "Install"):
//   1. the plugin config's `command` (used as given: an explicit choice is never second-guessed);
//   2. `$CLAWBRIDGE_BIN` (likewise);
//   3. the binary in this platform's package: the version `<v>-<platform>-<arch>` of the plugin's
//      own package name, installed under the alias `@clawbridge/openclaw-plugin-<platform>-<arch>`
//      (an optional dependency npm installs only on its own os/cpu/libc), and run only when its
//      sha256 is the one `binaries.json` in the plugin package pins for that platform: the
//      registry's copy of a platform package is not trusted on its name alone;
//   4. `cargo install`'s location: `$CARGO_HOME/bin`, `~/.cargo/bin` when CARGO_HOME is unset;
//   5. `clawbridge` on PATH.
// Found nowhere: an error naming every place looked at, in that order, and what was there.

import { createHash } from "node:crypto";
import { accessSync, constants, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";

/** The plugin's package name; each platform's binary is a version of this one name (pack-plugin.sh). */
export const PLUGIN_PACKAGE = "@clawbridge/openclaw-plugin";

/** No clawbridge executable in any place the lookup knows. */
export class BridgeNotFoundError extends Error {
  /** @param {string} message @param {string[]} tried one line per place, in lookup order */
  constructor(message, tried) {
    super(message);
    this.name = "BridgeNotFoundError";
    this.tried = tried;
  }
}

/** The alias the platform package is installed under, for a Node `process.platform` and `process.arch`. */
/** @param {string} [platform] @param {string} [arch] */
export function platformPackageName(platform = process.platform, arch = process.arch) {
  return `${PLUGIN_PACKAGE}-${platform}-${arch}`;
}

/** The sha256 per `<platform>-<arch>` that pack-plugin.sh wrote into the plugin package; none in a checkout. */
function packedSha256() {
  try {
    return JSON.parse(readFileSync(new URL("../binaries.json", import.meta.url), "utf8"));
  } catch {
    return {};
  }
}

/** @param {string} path */
function sha256OfFile(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
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
 * @param {(path: string) => string} [options.sha256Of] the hex sha256 of a file
 * @param {(path: string) => boolean} [options.isExecutable]
 * @param {Record<string, string>} [options.pinnedSha256] sha256 per `<platform>-<arch>`; default the package's binaries.json
 * @returns {{command: string, from: string, passedOver: string[]}} `passedOver`: places that had
 *   a binary the lookup refused to run (worth a warning: a tampered or mismatched install)
 * @throws {BridgeNotFoundError}
 */
export function locateBridge(options = {}) {
  const env = options.env ?? process.env;
  const isExecutable = options.isExecutable ?? isExecutableFile;
  const resolvePackage = options.resolvePackage ?? createRequire(import.meta.url).resolve;
  // The executable's file name on that kind of system.
  const binary = (options.platform ?? process.platform) === "win32" ? "clawbridge.exe" : "clawbridge";
  const tried = [];
  const passedOver = [];
  const found = (command, from) => ({ command, from, passedOver });

  if (options.configured) return found(options.configured, "the plugin config's `command`");
  tried.push("the plugin config's `command`: not set");
  if (env.CLAWBRIDGE_BIN) return found(env.CLAWBRIDGE_BIN, "$CLAWBRIDGE_BIN");
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
    const platformKey = `${options.platform ?? process.platform}-${options.arch ?? process.arch}`;
    const pinned = (options.pinnedSha256 ?? packedSha256())[platformKey];
    if (!isExecutable(shipped)) {
      tried.push(`the platform package ${pkg}: installed, but ${shipped} is not an executable file`);
    } else if (typeof pinned !== "string") {
      tried.push(`the platform package ${pkg}: installed, but the plugin's binaries.json pins no sha256 for ${platformKey}; not run`);
      passedOver.push(tried.at(-1));
    } else {
      let actual;
      try {
        actual = (options.sha256Of ?? sha256OfFile)(shipped);
      } catch (error) {
        actual = `unreadable (${error instanceof Error ? error.message : error})`;
      }
      if (actual === pinned) return found(shipped, `the platform package ${pkg}`);
      tried.push(`the platform package ${pkg}: installed, but ${shipped} has sha256 ${actual}, not the ${pinned} the plugin pins; not run`);
      passedOver.push(tried.at(-1));
    }
  } else {
    tried.push(`the platform package ${pkg} (the plugin's optional dependency): not installed`);
  }

  const cargoHome = env.CARGO_HOME || join(options.home ?? homedir(), ".cargo");
  const cargoBin = join(cargoHome, "bin", binary);
  if (isExecutable(cargoBin)) return found(cargoBin, "cargo install's bin directory");
  tried.push(`cargo install's location ${cargoBin} (${env.CARGO_HOME ? "$CARGO_HOME/bin" : "~/.cargo/bin"}): no executable there`);

  const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean);
  for (const dir of dirs) {
    const candidate = join(dir, binary);
    if (isExecutable(candidate)) return found(candidate, "PATH");
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
