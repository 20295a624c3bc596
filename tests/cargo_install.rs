//! `cargo install --path .` (issue #17, packaging), the cheap and safe part: the root package
//! installs exactly one binary, `clawbridge` (no fixture or bench binaries), as `cargo metadata`
//! says, and the plugin's lookup finds a copy of the built binary in `<CARGO_HOME>/bin`, where
//! `cargo install` puts it (openclaw-plugin/src/locate.js).
//!
//! The real `cargo install --path . --locked --debug --root <tmp>` runs in scripts/test.sh after
//! the other tests (it rebuilds the dependency tree without the tests' `test-util` feature and
//! replaces `target/debug/clawbridge`, which tests running beside it execute).

use std::path::Path;
use std::process::Command;

use clawbridge_fixtures::peers::{peer_or_skip, repo_root};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_clawbridge");

#[test]
fn the_root_package_installs_only_the_clawbridge_binary() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let metadata = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline", "--manifest-path"])
        .arg(repo_root().join("Cargo.toml"))
        .output()
        .expect("cargo runs");
    assert!(metadata.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&metadata.stderr));
    let metadata: Value = serde_json::from_slice(&metadata.stdout).expect("JSON");
    let root_manifest = repo_root().join("Cargo.toml");
    let root = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|package| package["manifest_path"].as_str().map(Path::new) == Some(root_manifest.as_path()))
        .unwrap_or_else(|| panic!("the root package in {metadata:#}"));
    // What `cargo install --path .` installs: the root package's bin targets, nothing else.
    let bins: Vec<&str> = root["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|target| target["kind"].as_array().is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin")))
        .filter_map(|target| target["name"].as_str())
        .collect();
    assert_eq!(bins, ["clawbridge"], "only the product binary, no fixtures or bench binaries");
}

#[test]
fn the_plugin_finds_a_binary_in_cargo_homes_bin() {
    let Some(node) = peer_or_skip("node") else { return };
    let cargo_home = tempfile::tempdir().unwrap();
    let binary = cargo_home.path().join("bin/clawbridge");
    std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
    std::fs::copy(BIN, &binary).expect("copying the built binary");
    let version = Command::new(&binary).arg("--version").output().expect("the copy runs");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("clawbridge {}", env!("CARGO_PKG_VERSION")));

    // The plugin's lookup, with that CARGO_HOME and nothing on PATH.
    let locate = repo_root().join("openclaw-plugin/src/locate.js");
    let script = format!(
        "import {{ locateBridge }} from {locate:?}; \
         console.log(JSON.stringify(locateBridge({{ env: {{ CARGO_HOME: process.argv[1], PATH: '' }} }})));",
        locate = locate.display().to_string()
    );
    let found = Command::new(node)
        .args(["--input-type=module", "-e", &script])
        .arg(cargo_home.path())
        .output()
        .expect("node runs");
    assert!(found.status.success(), "locate: {}", String::from_utf8_lossy(&found.stderr));
    let found: Value = serde_json::from_slice(&found.stdout).expect("JSON");
    assert_eq!(found["command"].as_str().map(Path::new), Some(binary.as_path()), "{found}");
    assert_eq!(found["from"], "cargo install's bin directory");
}
