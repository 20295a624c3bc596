// Finding the bridge executable without a hand-set path (src/locate.js): every rule of the lookup
// order on real files in a temp dir, the order itself, and the refusal that names every place.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { BridgeNotFoundError, locateBridge, platformPackageName } from "../src/locate.js";
import { pluginUnderTest, attemptParams } from "./support/fakes.js";

/** A temp layout: a home, a CARGO_HOME, a PATH dir and an installed platform package, each empty. */
function layout(t) {
  const root = mkdtempSync(join(tmpdir(), "clawbridge-locate-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dirs = {
    root,
    home: join(root, "home"),
    cargoHome: join(root, "cargo"),
    pathDir: join(root, "path-bin"),
    pkg: join(root, "node_modules", "@clawbridge", "openclaw-plugin-linux-x64"),
  };
  for (const dir of [dirs.home, dirs.cargoHome, dirs.pathDir, dirs.pkg]) mkdirSync(dir, { recursive: true });
  return dirs;
}

function executable(path, mode = 0o755) {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, mode);
  return path;
}

const sha256 = (path) => createHash("sha256").update(readFileSync(path)).digest("hex");

/** The lookup on `dirs`, the platform package installed only when `withPackage`; its binary's
 * pinned sha256 is that of the file there now, unless `pinned` says otherwise. */
function locate(dirs, { configured, env = {}, withPackage = false, pinned } = {}) {
  const shipped = join(dirs.pkg, "bin", "clawbridge");
  let actual = "no-such-file";
  try {
    actual = sha256(shipped);
  } catch {}
  return locateBridge({
    pinnedSha256: pinned ?? { "linux-x64": actual },
    configured,
    env: { PATH: dirs.pathDir, ...env },
    platform: "linux",
    arch: "x64",
    home: dirs.home,
    resolvePackage: (request) => {
      if (withPackage && request === "@clawbridge/openclaw-plugin-linux-x64/package.json") return join(dirs.pkg, "package.json");
      throw new Error(`Cannot find module '${request}'`);
    },
  });
}

test("the platform package is named by Node's platform and arch", () => {
  assert.equal(platformPackageName("linux", "x64"), "@clawbridge/openclaw-plugin-linux-x64");
  assert.equal(platformPackageName("darwin", "arm64"), "@clawbridge/openclaw-plugin-darwin-arm64");
});

test("lookup order: command > $CLAWBRIDGE_BIN > platform package > cargo's bin > PATH", (t) => {
  const dirs = layout(t);
  const onPath = executable(join(dirs.pathDir, "clawbridge"));
  assert.deepEqual(locate(dirs), { command: onPath, from: "PATH", passedOver: [] });

  const cargoDefault = executable(join(dirs.home, ".cargo", "bin", "clawbridge"));
  assert.deepEqual(locate(dirs), { command: cargoDefault, from: "cargo install's bin directory", passedOver: [] }, "~/.cargo/bin without CARGO_HOME");
  const cargoHome = executable(join(dirs.cargoHome, "bin", "clawbridge"));
  assert.equal(locate(dirs, { env: { CARGO_HOME: dirs.cargoHome } }).command, cargoHome, "CARGO_HOME wins over ~/.cargo");

  const shipped = executable(join(dirs.pkg, "bin", "clawbridge"));
  assert.deepEqual(locate(dirs, { withPackage: true }), {
    command: shipped,
    from: "the platform package @clawbridge/openclaw-plugin-linux-x64",
    passedOver: [],
  });

  assert.deepEqual(locate(dirs, { withPackage: true, env: { CLAWBRIDGE_BIN: "/opt/cb" } }), { command: "/opt/cb", from: "$CLAWBRIDGE_BIN", passedOver: [] });
  assert.deepEqual(
    locate(dirs, { withPackage: true, configured: "my-clawbridge", env: { CLAWBRIDGE_BIN: "/opt/cb" } }),
    { command: "my-clawbridge", from: "the plugin config's `command`", passedOver: [] },
  );
});

test("a file that is not executable, or a directory, is passed over", (t) => {
  const dirs = layout(t);
  executable(join(dirs.pkg, "bin", "clawbridge"), 0o644);
  mkdirSync(join(dirs.home, ".cargo", "bin", "clawbridge"), { recursive: true });
  const onPath = executable(join(dirs.pathDir, "clawbridge"));
  assert.equal(locate(dirs, { withPackage: true }).command, onPath);
});

test("found nowhere: the error names every place looked at, in order", (t) => {
  const dirs = layout(t);
  executable(join(dirs.pkg, "bin", "clawbridge"), 0o644);
  let caught;
  try {
    locate(dirs, { withPackage: true, env: { CARGO_HOME: dirs.cargoHome } });
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof BridgeNotFoundError, String(caught));
  assert.equal(caught.tried.length, 5, caught.message);
  const places = [
    "the plugin config's `command`: not set",
    "$CLAWBRIDGE_BIN: not set",
    `the platform package @clawbridge/openclaw-plugin-linux-x64: installed, but ${join(dirs.pkg, "bin", "clawbridge")} is not an executable file`,
    `cargo install's location ${join(dirs.cargoHome, "bin", "clawbridge")} ($CARGO_HOME/bin)`,
    `PATH: no clawbridge in ${dirs.pathDir}`,
  ];
  let from = 0;
  for (const [i, place] of places.entries()) {
    const at = caught.message.indexOf(`${i + 1}. ${place}`);
    assert.ok(at >= from, `place ${i + 1} (${place}) in order in:\n${caught.message}`);
    from = at;
  }
  assert.match(caught.message, /cargo install --path \./);

  assert.match(locateError(() => locate(dirs)), /platform package @clawbridge\/openclaw-plugin-linux-x64 \(the plugin's optional dependency\): not installed/);
  assert.match(locateError(() => locate(dirs)), /\.cargo\/bin\/clawbridge \(~\/\.cargo\/bin\)/);
});

test("a platform-package binary whose sha256 is not the pinned one is not run: the next rule is", (t) => {
  const dirs = layout(t);
  const shipped = executable(join(dirs.pkg, "bin", "clawbridge"));
  const pinned = { "linux-x64": sha256(shipped) };
  writeFileSync(shipped, "#!/bin/sh\necho tampered\n"); // replaced after packing
  const onPath = executable(join(dirs.pathDir, "clawbridge"));
  const found = locate(dirs, { withPackage: true, pinned });
  assert.equal(found.command, onPath, "PATH's, not the tampered one");
  assert.equal(found.passedOver.length, 1, String(found.passedOver));
  assert.match(found.passedOver[0], new RegExp(`${shipped.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} has sha256 ${sha256(shipped)}, not the ${pinned["linux-x64"]} the plugin pins; not run`));

  // No pin at all (a plugin not packed by pack-plugin.sh): not run either.
  const unpinned = locate(dirs, { withPackage: true, pinned: {} });
  assert.equal(unpinned.command, onPath);
  assert.match(unpinned.passedOver[0], /binaries\.json pins no sha256 for linux-x64; not run/);

  // The untampered binary with its pin is run.
  assert.equal(locate(dirs, { withPackage: true }).command, shipped);
});

function locateError(run) {
  try {
    run();
  } catch (error) {
    return error.message;
  }
  assert.fail("expected no executable to be found");
}

test("a plugin with no executable anywhere refuses the attempt in preflight, naming the places", async (t) => {
  const dirs = layout(t);
  const saved = { PATH: process.env.PATH, CLAWBRIDGE_BIN: process.env.CLAWBRIDGE_BIN, CARGO_HOME: process.env.CARGO_HOME };
  t.after(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });
  // The bridge's environment (`env`) is part of the lookup: nothing on its PATH, an empty CARGO_HOME.
  const env = pluginUnderTest({ config: { command: undefined, env: { PATH: dirs.pathDir, CARGO_HOME: dirs.cargoHome } } });
  t.after(env.cleanup);
  delete process.env.CLAWBRIDGE_BIN;
  class PreflightError extends Error {}
  env.plugin.runtime.options.PreflightError = PreflightError;
  await assert.rejects(env.harness("clawbridge-demo").runAttempt(attemptParams().params), (error) => {
    assert.ok(error instanceof PreflightError, `a preflight refusal: ${error}`);
    assert.match(error.message, /^clawbridge clawbridge-demo: no clawbridge executable found; looked at, in order:/);
    assert.match(error.message, /5\. PATH: no clawbridge in /);
    return true;
  });
});
