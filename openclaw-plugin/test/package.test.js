// The plugin's npm package (package.json): one version with the bridge and the workspace, the
// per-platform binary packages pinned at it, and only runtime files shipped. The packing itself,
// and `openclaw plugins install` of the result, are tests/openclaw_package.rs.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { PLUGIN_VERSION } from "../src/bridge.js";
import { PLUGIN_PACKAGE, platformPackageName } from "../src/locate.js";

const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));

test("one version: the package's, the plugin's own and the Rust workspace's", async () => {
  const cargo = await readFile(new URL("../../Cargo.toml", import.meta.url), "utf8");
  const workspace = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(cargo)?.[1];
  assert.equal(pkg.version, PLUGIN_VERSION);
  assert.equal(pkg.version, workspace);
});

test("the platform packages are versions of the plugin's one name, aliased, pinned at its version", () => {
  assert.equal(pkg.name, PLUGIN_PACKAGE);
  const platforms = Object.entries(pkg.optionalDependencies ?? {});
  assert.ok(platforms.length > 0);
  for (const [name, spec] of platforms) {
    const [os, cpu] = name.slice(PLUGIN_PACKAGE.length + 1).split("-");
    assert.equal(name, platformPackageName(os, cpu), `${name} is a name the lookup asks for`);
    assert.equal(spec, `npm:${pkg.name}@${pkg.version}-${os}-${cpu}`, `${name}: no name but the plugin's own`);
  }
  assert.ok(pkg.optionalDependencies[platformPackageName("linux", "x64")], "the platform CI packs and tests");
});

test("publishable, ESM, and only runtime files ship", () => {
  assert.notEqual(pkg.private, true);
  assert.equal(pkg.type, "module");
  assert.deepEqual([...pkg.files].sort(), ["binaries.json", "index.js", "openclaw.plugin.json", "src/"]);
});
