//! `cargo install --path .` (issue #17, packaging): it installs exactly the `clawbridge` binary
//! (no fixture or bench binaries) into `<root>/bin`, the binary runs, and the plugin's lookup finds
//! it there (`$CARGO_HOME/bin` is one of its places, openclaw-plugin/src/locate.js).
//!
//! The check builds the debug profile in this test's own target dir, so it reuses what the test
//! run built and takes seconds; the release build a user's `cargo install` makes differs only in
//! profile, and a full release build on CI's two cores costs more than it proves.

use std::path::{Path, PathBuf};
use std::process::Command;

use clawbridge_fixtures::peers::{peer_or_skip, repo_root};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_clawbridge");

/// The target dir this test binary was built in (`<target>/debug/clawbridge` → `<target>`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(BIN).parent().and_then(Path::parent).expect("<target>/debug/clawbridge").to_path_buf(),
        PathBuf::from,
    )
}

#[test]
fn cargo_install_puts_only_clawbridge_in_root_bin_and_the_plugin_finds_it_there() {
    let root = tempfile::tempdir().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let install = Command::new(cargo)
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(repo_root())
        .arg("--root")
        .arg(root.path())
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("cargo runs");
    assert!(
        install.status.success(),
        "cargo install: {}\n{}",
        install.status,
        String::from_utf8_lossy(&install.stderr)
    );

    let bin_dir = root.path().join("bin");
    let installed: Vec<String> = std::fs::read_dir(&bin_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(installed, ["clawbridge"], "only the product binary, no fixtures or bench binaries");
    let binary = bin_dir.join("clawbridge");
    let version = Command::new(&binary).arg("--version").output().expect("the installed binary runs");
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), format!("clawbridge {}", env!("CARGO_PKG_VERSION")));

    // The plugin's lookup, with `cargo install`'s root as CARGO_HOME and nothing on PATH.
    let Some(node) = peer_or_skip("node") else { return };
    let locate = repo_root().join("openclaw-plugin/src/locate.js");
    let script = format!(
        "import {{ locateBridge }} from {locate:?}; \
         console.log(JSON.stringify(locateBridge({{ env: {{ CARGO_HOME: process.argv[1], PATH: '' }} }})));",
        locate = locate.display().to_string()
    );
    let found =
        Command::new(node).args(["--input-type=module", "-e", &script]).arg(root.path()).output().expect("node runs");
    assert!(found.status.success(), "locate: {}", String::from_utf8_lossy(&found.stderr));
    let found: Value = serde_json::from_slice(&found.stdout).expect("JSON");
    assert_eq!(found["command"].as_str().map(Path::new), Some(binary.as_path()), "{found}");
    assert_eq!(found["from"], "cargo install's bin directory");
}
