//! Peak memory of a bridge process while a 100 MB line and a 1 GiB stderr flood pass through it.
//!
//! `cargo bench -p clawbridge-bridge --bench peak_memory` — prints the figures and whether they meet
//! the 200 MB target. It measures this process's peak RSS (VmHWM), so it runs alone, not under the
//! test harness.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clawbridge_bridge::connection::AgentConnection;
use clawbridge_bridge::rpc::{PeerConfig, PeerEvent, RejectAll};
use clawbridge_bridge::supervisor::{CommandSpec, SpawnOptions, StopPolicy};
use serde_json::json;

const TARGET_MIB: f64 = 200.0;

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(f64::NAN);
    kib / 1024.0
}

#[tokio::main]
async fn main() {
    let spec = CommandSpec::new(clawbridge_fixtures::fixture_bin("fake-agent"));
    let config = PeerConfig { request_timeout: Duration::from_secs(600), ..PeerConfig::default() };
    let (agent, mut events) = AgentConnection::spawn(&spec, SpawnOptions::default(), config, Arc::new(RejectAll))
        .expect("spawn the fake agent");
    let drain = tokio::spawn(async move {
        let mut oversize = 0;
        while let Some(event) = events.recv().await {
            if matches!(event, PeerEvent::Problem(_)) {
                oversize += 1;
            }
        }
        oversize
    });
    let baseline = peak_rss_mib();

    let started = Instant::now();
    agent
        .peer()
        .request("fake/oversize", Some(&json!({"bytes": 100_000_000})))
        .await
        .expect("answer after the 100 MB line");
    let line_time = started.elapsed();
    let after_line = peak_rss_mib();

    let started = Instant::now();
    agent.peer().request("fake/stderr", Some(&json!({"bytes": 1u64 << 30}))).await.expect("answer after the flood");
    let flood_time = started.elapsed();
    let after_flood = peak_rss_mib();
    let tail = agent.process().expect("spawned").stderr().held_bytes();

    agent.shutdown(StopPolicy::default()).await;
    let problems = drain.await.unwrap_or(0);

    println!("| scenario | time | peak RSS (VmHWM) |");
    println!("|---|---|---|");
    println!("| start (fake agent spawned) | – | {baseline:.1} MiB |");
    println!(
        "| 100 MB line skipped ({problems} problem event) | {:.2} s | {after_line:.1} MiB |",
        line_time.as_secs_f64()
    );
    println!(
        "| 1 GiB stderr drained (tail kept: {tail} bytes) | {:.2} s | {after_flood:.1} MiB |",
        flood_time.as_secs_f64()
    );
    let verdict = if after_flood < TARGET_MIB { "meets" } else { "MISSES" };
    println!("peak {after_flood:.1} MiB {verdict} the {TARGET_MIB} MiB target");
}
