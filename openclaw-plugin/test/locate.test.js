// Finding the bridge executable without a hand-set path (src/locate.js): every rule of the lookup
// order on real files in a temp dir, the order itself, and the refusal that names every place.

import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
    pkg: join(root, "node_modules", "@clawbridge", "linux-x64"),
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

/** The lookup on `dirs`, the platform package installed only when `withPackage`. */
function locate(dirs, { configured, env = {}, withPackage = false } = {}) {
  return locateBridge({
    configured,
    env: { PATH: dirs.pathDir, ...env },
    platform: "linux",
    arch: "x64",
    home: dirs.home,
    resolvePackage: (request) => {
      if (withPackage && request === "@clawbridge/linux-x64/package.json") return join(dirs.pkg, "package.json");
      throw new Error(`Cannot find module '${request}'`);
    },
  });
}

test("the platform package is named by Node's platform and arch", () => {
  assert.equal(platformPackageName("linux", "x64"), "@clawbridge/linux-x64");
  assert.equal(platformPackageName("darwin", "arm64"), "@clawbridge/darwin-arm64");
});

test("lookup order: command > $CLAWBRIDGE_BIN > platform package > cargo's bin > PATH", (t) => {
  const dirs = layout(t);
  const onPath = executable(join(dirs.pathDir, "clawbridge"));
  assert.deepEqual(locate(dirs), { command: onPath, from: "PATH" });

  const cargoDefault = executable(join(dirs.home, ".cargo", "bin", "clawbridge"));
  assert.deepEqual(locate(dirs), { command: cargoDefault, from: "cargo install's bin directory" }, "~/.cargo/bin without CARGO_HOME");
  const cargoHome = executable(join(dirs.cargoHome, "bin", "clawbridge"));
  assert.equal(locate(dirs, { env: { CARGO_HOME: dirs.cargoHome } }).command, cargoHome, "CARGO_HOME wins over ~/.cargo");

  const shipped = executable(join(dirs.pkg, "bin", "clawbridge"));
  assert.deepEqual(locate(dirs, { withPackage: true }), { command: shipped, from: "the platform package @clawbridge/linux-x64" });

  assert.deepEqual(locate(dirs, { withPackage: true, env: { CLAWBRIDGE_BIN: "/opt/cb" } }), { command: "/opt/cb", from: "$CLAWBRIDGE_BIN" });
  assert.deepEqual(
    locate(dirs, { withPackage: true, configured: "my-clawbridge", env: { CLAWBRIDGE_BIN: "/opt/cb" } }),
    { command: "my-clawbridge", from: "the plugin config's `command`" },
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
    `the platform package @clawbridge/linux-x64: installed, but ${join(dirs.pkg, "bin", "clawbridge")} is not an executable file`,
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

  assert.match(locateError(() => locate(dirs)), /platform package @clawbridge\/linux-x64 \(the plugin's optional dependency\): not installed/);
  assert.match(locateError(() => locate(dirs)), /\.cargo\/bin\/clawbridge \(~\/\.cargo\/bin\)/);
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
