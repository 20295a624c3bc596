//! `clawbridge-bench --quick` keeps working: every scenario runs end to end at tiny sizes (the real
//! peers' roles played by the bench binary, the product's backends and serve's pipeline, the
//! product's `serve` started) and the table is well-formed. The figures themselves are not
//! asserted: benchmarks are not timed tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// The product's `clawbridge` executable beside the bench's, where the bench looks for it. Cargo
/// hands a test the executables of its own package only, so the product's is built here (once per
/// test binary, into the same target dir and profile); cargo releases its build lock before it runs
/// tests.
fn product() -> &'static Path {
    static PRODUCT: OnceLock<PathBuf> = OnceLock::new();
    PRODUCT.get_or_init(|| {
        let bench = Path::new(env!("CARGO_BIN_EXE_clawbridge-bench"));
        let profile_dir = bench.parent().expect("the bench executable is in a profile dir");
        let target_dir = profile_dir.parent().expect("the profile dir is in the target dir");
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        build.args(["build", "--quiet", "-p", "clawbridge", "--bin", "clawbridge", "--manifest-path"]);
        build.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml")).arg("--target-dir").arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(other) => {
                build.args(["--profile", other]);
            }
            None => panic!("no profile dir name in {}", bench.display()),
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the product's clawbridge failed: {status}");
        let product = bench.with_file_name("clawbridge");
        assert!(product.is_file(), "no {} after building it", product.display());
        product
    })
}

fn bench(args: &[&str]) -> Output {
    product();
    let state = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_clawbridge-bench"))
        .args(args)
        .env("CLAWBRIDGE_STATE_DIR", state.path())
        .env_remove("CLAWBRIDGE_BENCH_SDK_PYTHON")
        .env_remove("CLAWBRIDGE_BENCH_PRODUCT")
        .output()
        .expect("clawbridge-bench runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table's data rows: (scenario, measure, value, target, verdict), split on the column layout the
/// dashed rule under the header gives.
fn rows(table: &str) -> Vec<[String; 5]> {
    let lines: Vec<&str> = table.lines().collect();
    let rule = lines.iter().position(|l| l.starts_with("----------")).expect("a rule under the header");
    let widths: Vec<usize> = lines[rule].split("  ").map(|dashes| dashes.chars().count()).collect();
    assert_eq!(widths.len(), 5, "five columns: {}", lines[rule]);
    assert!(lines[rule - 1].starts_with("scenario"), "{table}");
    lines[rule + 1..]
        .iter()
        .take_while(|l| !l.is_empty())
        .map(|line| {
            let chars: Vec<char> = line.chars().collect();
            let mut at = 0;
            let mut cells: [String; 5] = Default::default();
            for (i, width) in widths.iter().enumerate() {
                let end = (at + width).min(chars.len());
                cells[i] = chars[at.min(chars.len())..end].iter().collect::<String>().trim().to_string();
                at = end + 2;
            }
            cells
        })
        .collect()
}

#[test]
fn quick_bench_runs_every_scenario_and_prints_a_well_formed_table() {
    // The anchor needs the Python SDK's venv; without one it must say so, not fail.
    let out = bench(&["--quick", "--sdk-python", "/nonexistent/python"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}", out.status);
    assert!(stdout.starts_with("clawbridge-bench "), "{stdout}");
    assert!(stdout.contains("--quick sizes"), "quick runs say they are not figures: {stdout}");
    assert!(stdout.lines().nth(1).is_some_and(|l| l.starts_with("machine: ")), "{stdout}");
    assert!(!stdout.contains("FAILED"), "{stdout}");
    assert!(stdout.contains("skipped anchor: the Python SDK's venv is not installed"), "{stdout}");

    let rows = rows(&stdout);
    for scenario in ["throughput", "latency", "memory", "startup"] {
        assert!(rows.iter().any(|r| r[0] == scenario), "no {scenario} row:\n{stdout}");
    }
    for row in &rows {
        let number = row[2].split_whitespace().next().unwrap_or_default().replace(',', "");
        let value: f64 = number.parse().unwrap_or_else(|_| panic!("value {:?} in {row:?}", row[2]));
        assert!(value.is_finite() && value >= 0.0, "{row:?}");
        match row[3].as_str() {
            "" => assert_eq!(row[4], "", "no target, no verdict: {row:?}"),
            target => {
                assert!(target.starts_with('≥') || target.starts_with('≤'), "{row:?}");
                assert!(row[4] == "met" || row[4] == "MISSED", "{row:?}");
            }
        }
    }
    assert!(stdout.lines().nth(2).is_some_and(|l| l.starts_with("command: ") && l.contains("--quick")), "{stdout}");
    // Every recording was sized, parsed the typed way, and went through every full path; each
    // path is given as a ratio to the typed parse limit, and the in-process one is judged.
    let unit = |measure: &str| {
        rows.iter().find(|r| r[1] == measure).map(|r| r[2].rsplit(' ').next().unwrap_or("").to_string())
    };
    let sized = |prefix: &str| rows.iter().filter(|r| r[1].starts_with(prefix) && r[2].ends_with("B avg")).count();
    for backend in ["codex", "claude", "acp"] {
        assert_eq!(sized(&format!("{backend}: line size of the real recordings (p99 ")), 1, "{stdout}");
        assert_eq!(sized(&format!("{backend}: line size of the generated stream (p99 ")), 1, "{stdout}");
        assert_eq!(unit(&format!("{backend}: typed parse limit")).as_deref(), Some("lines/s"), "{stdout}");
        let judged = format!("{backend}: full path (in-process serve pipeline) ÷ typed parse limit");
        let ratio = rows.iter().find(|r| r[1] == judged);
        assert!(ratio.is_some_and(|r| r[3].starts_with('≥')), "{backend} ratio row:\n{stdout}");
        for path in [
            "project decoder (text → typed), peer lines",
            "full path (in-process serve pipeline), peer lines",
            "`clawbridge run --json` to a pipe, peer lines",
            "`clawbridge run --json` to a file, peer lines",
        ] {
            assert_eq!(unit(&format!("{backend}: {path}")).as_deref(), Some("lines/s"), "{backend}: {path}\n{stdout}");
            let ratio = format!("{backend}: {} ÷ typed parse limit", path.trim_end_matches(", peer lines"));
            assert_eq!(unit(&ratio).as_deref(), Some("×"), "{ratio}\n{stdout}");
        }
    }
    // The real serve process runs the harnesses of Codex and Claude.
    for backend in ["codex", "claude"] {
        let what = format!("{backend}: `clawbridge serve` process to a host on its stdio");
        assert_eq!(unit(&format!("{what}, peer lines")).as_deref(), Some("lines/s"), "{stdout}");
        assert_eq!(unit(&format!("{what} ÷ typed parse limit")).as_deref(), Some("×"), "{stdout}");
    }
    // Every concurrent attempt completed, and the latency scenario timed every delta.
    let completed = rows.iter().find(|r| r[0] == "memory" && r[1].ends_with("completed")).expect("completed row");
    assert_eq!(completed[4], "met", "{completed:?}");
    assert!(rows.iter().any(|r| r[0] == "latency" && r[1].contains("p99")), "{stdout}");
}

#[test]
fn json_output_carries_rows_with_targets_and_verdicts() {
    let out = bench(&["--quick", "--json", "--scenario", "startup,latency"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(report["quick"], true);
    let rows = report["rows"].as_array().expect("rows");
    assert!(rows.iter().all(|r| r["scenario"] == "startup" || r["scenario"] == "latency"), "{report}");
    let judged: Vec<&Value> = rows.iter().filter(|r| !r["target"].is_null()).collect();
    assert_eq!(judged.len(), 2, "startup p50 and latency p99 are judged: {report}");
    assert!(judged.iter().all(|r| r["met"].is_boolean() && r["value"].as_f64().is_some()), "{report}");
    assert!(report["failures"].as_array().is_some_and(Vec::is_empty), "{report}");
}

#[test]
fn an_unknown_scenario_is_refused_with_the_list_of_known_ones() {
    let out = bench(&["--scenario", "warp-speed"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("throughput") && stderr.contains("anchor"), "{stderr}");
}

#[test]
fn a_bad_scenario_is_one_clear_error_with_a_non_zero_exit_and_nothing_on_stdout() {
    let out = bench(&["--scenario", "nonesuch"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout is reserved for the table");
    assert!(text(&out.stderr).contains("invalid value 'nonesuch'"), "{}", text(&out.stderr));
}

#[test]
fn the_startup_scenario_without_the_product_says_how_to_get_it() {
    let out = bench(&["--quick", "--scenario", "startup", "--clawbridge", "/nonexistent/clawbridge"]);
    assert!(!out.status.success());
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FAILED startup: no clawbridge executable at /nonexistent/clawbridge"), "{stdout}");
    assert!(stdout.contains("cargo build --release -p clawbridge"), "{stdout}");
}
