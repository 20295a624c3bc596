//! The packaged plugin (issue #17, packaging): `scripts/pack-plugin.sh` packs the plugin and this
//! platform's binary package, the real `openclaw plugins install <plugin.tgz>` (openclaw 2026.9.6)
//! installs the plugin into a fresh OpenClaw state dir, and npm, run by OpenClaw for the plugin's
//! optional dependencies, fetches the platform package (the version `<v>-<platform>-<arch>` of the
//! plugin's own name, under an alias) as a user's npm does from the public registry; here from a
//! loopback stand-in serving the packed tarball. Then one
//! turn on `clawbridge-demo` runs with no `command` in the config and no `CLAWBRIDGE_BIN` in the
//! environment: the plugin finds the binary in the platform package.
//!
//! The demo's recorded turn asks one approval, and only a gateway can ask a person (`openclaw agent
//! exec` without one denies it; with one running on its state dir it refuses to start): so the
//! turn is `openclaw agent` through the running gateway, approved by a client there, as in
//! tests/openclaw_gateway.rs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clawbridge_fixtures::npm_registry::NpmRegistry;
use clawbridge_fixtures::peers::openclaw::{Harness, OpenClawHome, TempRootGuard};
use clawbridge_fixtures::peers::openclaw_gateway::{
    Approver, Gateway, agent_turn, free_port, reply_text, with_gateway,
};
use clawbridge_fixtures::peers::{Sandbox, repo_root, start_mock};
use common::openclaw::{OpenClawPeers, bridge_bin};
use serde_json::{Value, json};

const PROMPT: &str = "Show me what the demo does.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_packed_plugin_installs_into_a_fresh_openclaw_and_runs_a_turn_without_a_bridge_path() {
    let Some(peers) = OpenClawPeers::or_skip() else { return };
    let sandbox = Sandbox::new().unwrap();
    let path = node_first_path(&peers.node);

    // Both tarballs, packed as a release would pack them. The binary: this test's own build,
    // stripped as a release's is (a fifth of the bytes to copy, gzip and hash; same code).
    let binary = stripped_copy(&sandbox);
    let out = sandbox.root().join("packed");
    let pack = Command::new("bash")
        .arg(repo_root().join("scripts/pack-plugin.sh"))
        .arg("--binary")
        .arg(&binary)
        .arg("--out")
        .arg(&out)
        .env("PATH", &path)
        .env("HOME", sandbox.home())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&pack.stdout);
    assert!(
        pack.status.success(),
        "pack-plugin.sh: {}\n{stdout}\n{}",
        pack.status,
        String::from_utf8_lossy(&pack.stderr)
    );
    let tarballs: Vec<PathBuf> = stdout.lines().map(PathBuf::from).collect();
    let [plugin_tgz, platform_tgz] = tarballs.as_slice() else { panic!("two tarballs, the plugin's first: {stdout}") };
    let plugin_manifest = manifest_of(plugin_tgz);
    let platform_manifest = manifest_of(platform_tgz);
    // One owned name: the platform package is a version of the plugin's, installed under an alias.
    let name = plugin_manifest["name"].as_str().expect("a name").to_owned();
    assert_eq!(platform_manifest["name"], name.as_str(), "the platform package is a version of {name}");
    let platform_version = platform_manifest["version"].as_str().expect("a version").to_owned();
    let platform_suffix = platform_version.split_once('-').expect("<version>-<platform>-<arch>").1.to_owned();
    let platform_package = format!("{name}-{platform_suffix}");
    assert_eq!(
        plugin_manifest["optionalDependencies"][&platform_package],
        format!("npm:{name}@{platform_version}").as_str(),
        "the plugin names this platform's package, aliased, at its version"
    );
    let pinned = tar_file(plugin_tgz, "package/binaries.json");
    assert_eq!(pinned[&platform_suffix], sha256_of(&binary).as_str(), "the plugin pins the packed binary");

    let registry = NpmRegistry::start(&[(platform_manifest, platform_tgz.as_path())]).unwrap();
    let tarball_path = format!("/-/tarball/{name}/{platform_version}");
    let mock = start_mock(&json!({"default": {"text": "never asked: the demo plays a recording"}})).await.unwrap();
    let mut run = OpenClawHome::without_bridge_path(&peers.node, &peers.openclaw, &sandbox, Harness::Demo, &mock);
    run.extra_env.push(("npm_config_registry".into(), registry.url().into()));
    // npm's own update check asks the registry for `npm` (now and then, by its cache's age): off, so
    // every request the registry sees is the install's.
    run.extra_env.push(("npm_config_update_notifier".into(), "false".into()));
    let port = free_port();
    run.write_config(&with_gateway(run.installed_plugin_config(), port));
    let _temp_root = TempRootGuard::snapshot();

    let install = ["plugins", "install", plugin_tgz.to_str().unwrap(), "--force", "--accept-capabilities"];
    let (status, stdout, stderr) = run.output(&install).await;
    assert!(status.success(), "openclaw plugins install: {status}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let requests = registry.requests();
    assert!(
        requests.contains(&tarball_path),
        "npm fetched {platform_package} ({tarball_path}) from the registry: {requests:?}\n{stdout}\n{stderr}"
    );
    // Every alias resolves through the one name (the other platforms' versions are not published
    // here: npm skipped those optional dependencies); no other name was asked for.
    assert!(requests.contains(&format!("/{name}")), "npm asked for {name}: {requests:?}");
    let strangers: Vec<&String> =
        requests.iter().filter(|path| **path != format!("/{name}") && **path != tarball_path).collect();
    assert!(strangers.is_empty(), "npm asked only for {name}: {requests:?}");
    let shipped = find_file(&run.state, &Path::new("node_modules").join(&platform_package).join("bin/clawbridge"))
        .unwrap_or_else(|| panic!("{platform_package}'s binary under {}: {stdout}", run.state.display()));

    // The reply the demo harness's recording gives; through OpenClaw it must say the same.
    let expected = demo_reply();
    let gateway = Gateway::start(&run, port).await;
    let approver = Approver::start(&run, port, "allow-once", &json!({})).await;
    let turn = agent_turn(&run, "packaged-plugin", PROMPT).await;
    let describe = || format!("{turn:#}\napprover: {:#?}\ngateway:\n{}", approver.lines(), gateway.output());
    let reply = reply_text(&turn);
    for text in &expected {
        assert!(reply.contains(text.as_str()), "the reply has the demo's {text:?}: {}", describe());
    }
    let approvals = approver.lines().into_iter().filter(|line| line.get("approval").is_some()).count();
    assert_eq!(approvals, 1, "the demo's one approval, granted at the gateway: {}", describe());

    // And it was the shipped binary that ran, found by the platform-package rule: the installed
    // plugin's own copy, or the copy of the installed plugin OpenClaw runs it from (under its state dir).
    let log = std::fs::read_to_string(sandbox.root().join("openclaw.log")).unwrap_or_default() + &gateway.output();
    let found_by = format!(" (found by the platform package {platform_package})");
    let started: Vec<&str> = log
        .split("clawbridge: starting ")
        .skip(1)
        .filter_map(|rest| rest.split_once(&found_by).map(|(path, _)| path))
        .collect();
    assert!(!started.is_empty(), "the log names the bridge found{found_by}:\n{log}");
    let shipped_tail = shipped.strip_prefix(&run.state).expect("installed under the state dir").to_path_buf();
    let package_tail = Path::new("node_modules").join(&platform_package).join("bin/clawbridge");
    for path in started {
        let path = Path::new(path);
        assert!(
            path.starts_with(&run.state) && path.ends_with(&package_tail),
            "{} is {}'s, under {}",
            path.display(),
            platform_package,
            run.state.display()
        );
        assert_eq!(sha256_of(path), sha256_of(&binary), "{} is the packed binary", path.display());
    }
    assert!(shipped_tail.starts_with("extensions"), "installed into the extensions dir: {}", shipped.display());
    approver.stop().await;
    gateway.stop().await;
}

/// PATH with Node 24's directory first, as OpenClawHome runs OpenClaw (npm runs on that node).
fn node_first_path(node: &Path) -> std::ffi::OsString {
    let inherited = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::iter::once(node.parent().expect("node's directory").to_path_buf())
        .chain(std::env::split_paths(&inherited));
    std::env::join_paths(dirs).expect("a PATH")
}

/// The SHA-256 of a file's bytes, read in pieces (the binary is large).
fn sha256_of(path: &Path) -> String {
    use sha2::Digest;
    let mut file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).expect("reading the file");
    format!("{:x}", hasher.finalize())
}

/// The `package.json` inside an `npm pack` tarball.
fn manifest_of(tarball: &Path) -> Value {
    tar_file(tarball, "package/package.json")
}

/// A JSON file inside an `npm pack` tarball.
fn tar_file(tarball: &Path, file: &str) -> Value {
    let output = Command::new("tar").arg("-xOzf").arg(tarball).arg(file).output().expect("tar runs");
    assert!(output.status.success(), "tar {file}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{file} is JSON: {e}"))
}

/// A copy of the test's binary in the sandbox, stripped with binutils' `strip` where it is
/// installed (else the unstripped copy: slower to pack, same proof).
fn stripped_copy(sandbox: &Sandbox) -> PathBuf {
    let copy = sandbox.root().join("clawbridge");
    std::fs::copy(bridge_bin(), &copy).expect("copying the binary");
    match Command::new("strip").arg(&copy).status() {
        Ok(status) if status.success() => {}
        other => eprintln!("strip unavailable ({other:?}): packing the unstripped binary"),
    }
    copy
}

/// The first file under `root` whose path ends with `suffix`.
fn find_file(root: &Path, suffix: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(root).ok()?.flatten() {
        let path = entry.path();
        if path.ends_with(suffix) && path.is_file() {
            return Some(path);
        }
        if entry.file_type().is_ok_and(|kind| kind.is_dir() && !kind.is_symlink()) {
            if let Some(found) = find_file(&path, suffix) {
                return Some(found);
            }
        }
    }
    None
}

/// What `serve`'s demo harness says (it plays the bundled recording; `clawbridge run`'s demo is
/// the listening one, which answers differently): the recording's completed agent messages.
fn demo_reply() -> Vec<String> {
    let recording = repo_root().join("fixtures/recordings/demo/codex-demo.jsonl");
    let recording = std::fs::read_to_string(&recording).unwrap_or_else(|e| panic!("{}: {e}", recording.display()));
    let texts: Vec<String> = recording
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["dir"] == "from_agent" && line["json"]["method"] == "item/completed")
        .map(|line| line["json"]["params"]["item"].clone())
        .filter(|item| item["type"] == "agentMessage")
        .filter_map(|item| item["text"].as_str().map(str::to_owned))
        .filter(|text| !text.trim().is_empty())
        .collect();
    assert!(!texts.is_empty(), "the demo recording has an agent message");
    texts
}
