// The plugin's npm package (package.json): one version with the bridge and the workspace, the
// per-platform binary packages pinned at it, and only runtime files shipped. The packing itself,
// and `openclaw plugins install` of the result, are tests/openclaw_package.rs.

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";

import { PLUGIN_VERSION } from "../src/bridge.js";
import { PLATFORM_PACKAGE_SCOPE, platformPackageName } from "../src/locate.js";

const pkg = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));

test("one version: the package's, the plugin's own and the Rust workspace's", async () => {
  const cargo = await readFile(new URL("../../Cargo.toml", import.meta.url), "utf8");
  const workspace = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(cargo)?.[1];
  assert.equal(pkg.version, PLUGIN_VERSION);
  assert.equal(pkg.version, workspace);
});

test("the platform packages are optional dependencies pinned at the package's version", () => {
  const platforms = Object.entries(pkg.optionalDependencies ?? {});
  assert.ok(platforms.length > 0);
  for (const [name, version] of platforms) {
    const [os, cpu] = name.slice(PLATFORM_PACKAGE_SCOPE.length + 1).split("-");
    assert.equal(name, platformPackageName(os, cpu), `${name} is a name the lookup asks for`);
    assert.equal(version, pkg.version, `${name} is pinned exactly`);
  }
  assert.ok(pkg.optionalDependencies[platformPackageName("linux", "x64")], "the platform CI packs and tests");
});

test("publishable, ESM, and only runtime files ship", () => {
  assert.notEqual(pkg.private, true);
  assert.equal(pkg.type, "module");
  assert.deepEqual([...pkg.files].sort(), ["index.js", "openclaw.plugin.json", "src/"]);
});
