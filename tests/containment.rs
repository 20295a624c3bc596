//! Containment that holds (issue 16): descendants that leave the agent's process group (`setsid`,
//! a double fork) are stopped with the attempt and found by `clawbridge reap` after a bridge was
//! SIGKILLed at any instant — with a cgroup per agent where the machine allows it and with the
//! token fallback alike (docs/containment.md).
//!
//! Survivors are recognised by a marker variable unique to each test, exported by the agent's own
//! launcher script (the bridge passes no variable of the test's environment on), so these tests
//! never look at — let alone touch — another process on the machine.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use clawbridge_bridge::supervisor::{
    CGROUPS_VAR, CONTAINMENT_VAR, ChildProcess, CommandSpec, Containment, EnvPolicy, PidRegistry, SpawnError,
    SpawnOptions, StopPolicy, StopStage, TOKEN_SEPARATOR, cgroups_available,
};

/// The variable the launcher scripts export; its value is unique per test (and per batch).
const MARKER_VAR: &str = "CLAWBRIDGE_CONTAINMENT_TEST_MARKER";

fn fresh_marker(what: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!("{what}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Live (non-zombie) processes whose environment holds `NAME=VALUE` exactly.
fn carriers(name: &str, value: &str) -> Vec<i32> {
    let entry = format!("{name}={value}").into_bytes();
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for pid in dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        if environ.split(|&b| b == 0).any(|item| item == entry) && live(pid) {
            found.push(pid);
        }
    }
    found
}

fn live(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !matches!(stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next()), Some('Z' | 'X'))
    })
}

fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Kills whatever a failed test left, so one failure does not leave sleepers for an hour.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in carriers(MARKER_VAR, &self.0) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// How an agent's descendant leaves its process group.
#[derive(Clone, Copy, Debug)]
enum Escape {
    /// `setsid sleep 300 &`: a session (and group) of its own.
    Setsid,
    /// `(sleep 300 &) &`: re-parented to init, no longer the agent's descendant, but still in
    /// its group.
    DoubleFork,
    /// `(setsid sleep 300 &) &`: what a daemon does, both re-parented and in a session of its own.
    Daemon,
}

impl Escape {
    fn shell(self) -> &'static str {
        match self {
            Escape::Setsid => "setsid sleep 300 </dev/null >/dev/null 2>&1 &",
            Escape::DoubleFork => "(sleep 300 </dev/null >/dev/null 2>&1 &) &",
            Escape::Daemon => "(setsid sleep 300 </dev/null >/dev/null 2>&1 &) &",
        }
    }
}

/// A launcher script: exports the marker, starts the escaping descendant, then `exec`s `then`.
fn launcher(dir: &Path, marker: &str, escape: Escape, then: &str) -> PathBuf {
    let path = dir.join(format!("agent-{marker}"));
    let text = format!("#!/bin/sh\nexport {MARKER_VAR}={marker}\n{}\n{then}\n", escape.shell());
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn quick_stop() -> StopPolicy {
    StopPolicy {
        after_stdin_close: Duration::from_secs(2),
        after_sigterm: Duration::from_secs(5),
        after_sigkill: Duration::from_secs(5),
    }
}

/// The agent's containment value, read from its own environment (what the bridge set).
fn containment_value_of(pid: u32) -> String {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let prefix = format!("{CONTAINMENT_VAR}=");
    environ
        .split(|&b| b == 0)
        .find_map(|item| std::str::from_utf8(item).ok()?.strip_prefix(&prefix).map(str::to_string))
        .expect("the agent carries a containment token")
}

/// The agent's own token: the last of its value (outer bridges' tokens come first).
fn token_of(pid: u32) -> String {
    containment_value_of(pid).rsplit(TOKEN_SEPARATOR).next().unwrap().to_string()
}

/// Live processes whose containment value names `token` among its tokens.
fn token_carriers(token: &str) -> Vec<i32> {
    let prefix = format!("{CONTAINMENT_VAR}=").into_bytes();
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else { return found };
    for pid in dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let carries = environ.split(|&b| b == 0).any(|item| {
            item.strip_prefix(prefix.as_slice())
                .is_some_and(|value| value.split(|&b| b == TOKEN_SEPARATOR as u8).any(|t| t == token.as_bytes()))
        });
        if carries && live(pid) {
            found.push(pid);
        }
    }
    found
}

/// An agent (`cat`: runs until stdin closes) whose launcher started an escaping descendant; the
/// staged stop ends the group politely and then kills the escaped descendant.
async fn stopped_agent_leaves_no_descendant(escape: Escape, containment: Containment) {
    let dir = tempfile::tempdir().unwrap();
    let marker = fresh_marker("stop");
    let _cleanup = Cleanup(marker.clone());
    let program = launcher(dir.path(), &marker, escape, "exec cat");
    let options = SpawnOptions { containment, die_with_bridge: false, ..SpawnOptions::default() };
    let mut child = ChildProcess::spawn(&CommandSpec::new(&program), options).unwrap();
    let pid = child.pid();
    wait_until("the escaped descendant runs", Duration::from_secs(10), || {
        carriers(MARKER_VAR, &marker).iter().any(|&p| p as u32 != pid)
    });
    let token = token_of(pid);
    let escaped: Vec<i32> = carriers(MARKER_VAR, &marker).into_iter().filter(|&p| p as u32 != pid).collect();
    assert_eq!(token_carriers(&token).len(), 2, "the agent and its descendant carry the token");
    // Where the product can make cgroups, the agent must be in one, so the cgroup's part is
    // proven rather than silently covered by the token.
    let with_cgroup = containment == Containment::CgroupWhereAvailable && cgroups_available().is_ok();
    assert_eq!(child.cgroup().is_some(), with_cgroup, "the agent has a cgroup exactly where they can be made");

    let outcome = child.stop(quick_stop()).await;
    assert_ne!(outcome.stage, StopStage::Unkillable);
    let expected_outside = match escape {
        Escape::Setsid | Escape::Daemon => 1,
        Escape::DoubleFork => 0, // still in the group: the group's SIGTERM ended it
    };
    assert_eq!(outcome.outside_group, expected_outside, "{escape:?}: what had left the group was killed");
    let (by_cgroup, by_token) = if with_cgroup { (expected_outside, 0) } else { (0, expected_outside) };
    assert_eq!(
        (outcome.escaped.by_cgroup, outcome.escaped.by_token),
        (by_cgroup, by_token),
        "{escape:?}: the mark that found it (cgroups {with_cgroup})"
    );
    assert!(token_carriers(&token).is_empty(), "nothing carrying the token is alive");
    assert!(escaped.iter().all(|&p| !live(p)), "the escaped sleeper {escaped:?} is gone");
    assert!(carriers(MARKER_VAR, &marker).is_empty());
}

#[tokio::test]
async fn a_setsid_descendant_is_stopped_with_the_agent() {
    stopped_agent_leaves_no_descendant(Escape::Setsid, Containment::CgroupWhereAvailable).await;
}

#[tokio::test]
async fn a_double_forked_descendant_is_stopped_with_the_agent() {
    stopped_agent_leaves_no_descendant(Escape::DoubleFork, Containment::CgroupWhereAvailable).await;
}

#[tokio::test]
async fn a_daemonised_descendant_is_stopped_with_the_agent() {
    stopped_agent_leaves_no_descendant(Escape::Daemon, Containment::CgroupWhereAvailable).await;
}

#[tokio::test]
async fn without_cgroups_a_daemonised_descendant_is_still_stopped_by_its_token() {
    stopped_agent_leaves_no_descendant(Escape::Daemon, Containment::TokenOnly).await;
}

#[tokio::test]
async fn without_cgroups_a_setsid_descendant_is_still_stopped_by_its_token() {
    stopped_agent_leaves_no_descendant(Escape::Setsid, Containment::TokenOnly).await;
}

#[tokio::test]
async fn without_cgroups_a_double_forked_descendant_is_still_stopped_by_its_token() {
    stopped_agent_leaves_no_descendant(Escape::DoubleFork, Containment::TokenOnly).await;
}

/// An agent that exits by itself, its handle dropped without a stop: the drop kills what escaped.
#[tokio::test]
async fn a_dropped_agent_that_exited_by_itself_leaves_no_descendant() {
    for containment in [Containment::CgroupWhereAvailable, Containment::TokenOnly] {
        let dir = tempfile::tempdir().unwrap();
        let marker = fresh_marker("drop");
        let _cleanup = Cleanup(marker.clone());
        let program = launcher(dir.path(), &marker, Escape::Setsid, "sleep 0.2; exit 0");
        let options = SpawnOptions { containment, die_with_bridge: false, ..SpawnOptions::default() };
        let child = ChildProcess::spawn(&CommandSpec::new(&program), options).unwrap();
        wait_until("the escaped descendant runs", Duration::from_secs(10), || {
            carriers(MARKER_VAR, &marker).iter().any(|&p| p as u32 != child.pid())
        });
        child.wait().await;
        drop(child);
        wait_until("the escaped descendant is gone", Duration::from_secs(10), || {
            carriers(MARKER_VAR, &marker).is_empty()
        });
    }
}

/// The token is the bridge's: no env policy can remove it, and a value the policy sets (or the
/// bridge inherited) cannot stand in for it.
#[tokio::test]
async fn the_token_reaches_the_agent_whatever_its_env_policy_says() {
    let mut spec = CommandSpec::new("cat");
    spec.env = EnvPolicy::default().with_var(CONTAINMENT_VAR, "forged").without("CLAWBRIDGE_*");
    let options = SpawnOptions { die_with_bridge: false, ..SpawnOptions::default() };
    let mut child = ChildProcess::spawn(&spec, options).unwrap();
    assert!(!containment_value_of(child.pid()).contains("forged"));
    let token = token_of(child.pid());
    assert_eq!(token.len(), 32, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_hexdigit()), "{token}");
    child.stop(quick_stop()).await;
}

/// Without cgroups, a descendant whose pid keeps moving (each process starts the next and exits,
/// every 10 ms or so, up to a thousand times) is stopped too: each carrier is stopped (SIGSTOP)
/// the moment a walk finds it, and all are killed once a walk finds every carrier stopped. (One
/// that hops every millisecond can fall between the reads of two walks: docs/containment.md,
/// the fallback's limit.)
#[tokio::test]
async fn without_cgroups_a_descendant_whose_pid_keeps_moving_is_still_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let marker = fresh_marker("walker");
    let _cleanup = Cleanup(marker.clone());
    // Bounded (HOPS), so even a failing run ends by itself.
    let walker = dir.path().join("walker");
    std::fs::write(
        &walker,
        "#!/bin/sh\nsleep 0.01\nn=${HOPS:-0}\nif [ \"$n\" -lt 1000 ]; then HOPS=$((n + 1)) \"$0\" & fi\n",
    )
    .unwrap();
    std::fs::set_permissions(&walker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let agent = dir.path().join("agent");
    let text = format!(
        "#!/bin/sh\nexport {MARKER_VAR}={marker}\nsetsid {} </dev/null >/dev/null 2>&1 &\nexec cat\n",
        shell_quote(&walker.display().to_string())
    );
    std::fs::write(&agent, text).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options =
        SpawnOptions { containment: Containment::TokenOnly, die_with_bridge: false, ..SpawnOptions::default() };
    let mut child = ChildProcess::spawn(&CommandSpec::new(&agent), options).unwrap();
    let pid = child.pid();
    wait_until("the walker runs", Duration::from_secs(10), || {
        carriers(MARKER_VAR, &marker).iter().any(|&p| p as u32 != pid)
    });
    let outcome = child.stop(quick_stop()).await;
    assert_ne!(outcome.stage, StopStage::Unkillable, "{outcome:?}");
    assert!(outcome.escaped.by_token >= 1, "{outcome:?}");
    std::thread::sleep(Duration::from_millis(200));
    let survivors = carriers(MARKER_VAR, &marker);
    assert!(survivors.is_empty(), "the walker is still running as {survivors:?}");
}

/// An agent of a nested bridge (the bridge itself runs with an outer bridge's token) carries the
/// outer token in front of its own, so the outer bridge's stop and reap find it too.
#[test]
fn a_nested_bridges_agents_keep_the_outer_token() {
    let dir = tempfile::tempdir().unwrap();
    let marker = fresh_marker("nested");
    let _cleanup = Cleanup(marker.clone());
    let outer = "0123456789abcdef0123456789abcdef";
    let program = hanging_launcher(dir.path(), &marker);
    let mut bridge = clawbridge_run(&dir.path().join("state"), &program, false)
        .env(CONTAINMENT_VAR, outer)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the agent and its setsid descendant run", Duration::from_secs(30), || {
        carriers(MARKER_VAR, &marker).len() == 2
    });
    let values: Vec<String> =
        carriers(MARKER_VAR, &marker).into_iter().map(|pid| containment_value_of(pid as u32)).collect();
    bridge.kill().unwrap();
    bridge.wait().unwrap();
    for value in &values {
        let tokens: Vec<&str> = value.split(TOKEN_SEPARATOR).collect();
        assert_eq!(tokens.len(), 2, "{value}");
        assert_eq!(tokens[0], outer, "the outer token comes first: {value}");
    }
    assert!(!token_carriers(outer).is_empty(), "the outer bridge finds the inner bridge's agents");
}

/// A record that cannot be written fails the spawn, naming the path, and the agent never runs:
/// nothing could find what it left if the bridge crashed.
#[tokio::test]
async fn an_agent_that_cannot_be_recorded_is_not_started() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let registry = PidRegistry::open(&pids).unwrap();
    std::fs::remove_dir(&pids).unwrap();
    std::fs::write(&pids, b"a file where the folder was").unwrap();
    let ran = dir.path().join("ran");
    let agent = dir.path().join("agent");
    std::fs::write(&agent, format!("#!/bin/sh\ntouch {}\nexec cat\n", shell_quote(&ran.display().to_string())))
        .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options = SpawnOptions { registry: Some(registry), die_with_bridge: false, ..SpawnOptions::default() };
    let error = ChildProcess::spawn(&CommandSpec::new(&agent), options).unwrap_err();
    assert!(matches!(error, SpawnError::Record { .. }), "{error:?}");
    // One line, as serve shows it, names the path and the OS error.
    let line = error.to_string();
    assert!(line.contains(&pids.display().to_string()), "the error names the record's path: {line}");
    assert!(line.contains("(os error "), "and the OS error: {line}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!ran.exists(), "the agent never ran");
}

/// A descendant that leaves the group *and* clears its environment (token included) is found only
/// by the agent's cgroup: where the machine gave the agent one, it is killed; where it did not,
/// this is the fallback's stated limit (docs/containment.md), and the stop reports nothing found.
#[tokio::test]
async fn an_env_clearing_descendant_is_stopped_exactly_where_the_agent_has_a_cgroup() {
    let dir = tempfile::tempdir().unwrap();
    let marker = fresh_marker("env-clearing");
    let _cleanup = Cleanup(marker.clone());
    let path = dir.path().join("agent");
    let text =
        format!("#!/bin/sh\nenv -i {MARKER_VAR}={marker} setsid sleep 300 </dev/null >/dev/null 2>&1 &\nexec cat\n");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options = SpawnOptions { die_with_bridge: false, ..SpawnOptions::default() };
    let options = SpawnOptions { containment: Containment::CgroupWhereAvailable, ..options };
    let mut child = ChildProcess::spawn(&CommandSpec::new(&path), options).unwrap();
    wait_until("the descendant runs", Duration::from_secs(10), || !carriers(MARKER_VAR, &marker).is_empty());
    // In the agent's own cgroup exactly (the path the kernel reports ends the agent's folder),
    // and where the product can make cgroups, it has one.
    let own = std::fs::read_to_string(format!("/proc/{}/cgroup", child.pid()))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("0::").map(|p| p.trim_start_matches('/').to_string()))
        .unwrap_or_default();
    let in_cgroup = child.cgroup().is_some_and(|dir| !own.is_empty() && dir.ends_with(&own));
    assert_eq!(in_cgroup, cgroups_available().is_ok(), "in its own cgroup exactly where cgroups can be made: {own}");
    let outcome = child.stop(quick_stop()).await;
    if in_cgroup {
        assert_eq!(outcome.escaped.by_cgroup, 1, "the cgroup found the descendant without a token");
        assert!(carriers(MARKER_VAR, &marker).is_empty(), "and it is gone");
    } else {
        assert_eq!(outcome.outside_group, 0, "without a cgroup nothing can find it (the stated limit)");
    }
}

// ---------------------------------------------------------------------------------------------
// `clawbridge run` and `clawbridge reap`
// ---------------------------------------------------------------------------------------------

/// `clawbridge run` on the demo backend with `program` as its agent.
fn clawbridge_run(state: &Path, program: &Path, cgroups: bool) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_clawbridge"));
    command
        .envs(clawbridge_fixtures::no_user_config())
        .args(["run", "--backend", "demo", "--approve", "--program"])
        .arg(program)
        .arg("list the files")
        .env("CLAWBRIDGE_STATE_DIR", state)
        .env(CGROUPS_VAR, if cgroups { "on" } else { "off" })
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn clawbridge_reap(state: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_clawbridge"))
        .envs(clawbridge_fixtures::no_user_config())
        .args(["reap", "--grace-ms", "500"])
        .env("CLAWBRIDGE_STATE_DIR", state)
        .output()
        .expect("clawbridge reap runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "reap failed: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The demo agent played by this binary, behind a launcher that first starts an escaping sleeper.
fn demo_launcher(dir: &Path, marker: &str, escape: Escape) -> PathBuf {
    let real = shell_quote(env!("CARGO_BIN_EXE_clawbridge"));
    launcher(dir, marker, escape, &format!("exec {real} \"$@\""))
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// A whole `clawbridge run` turn whose agent left a setsid / double-forked sleeper: when `run`
/// returns, nothing the agent started is alive — with and without cgroups.
#[test]
fn a_finished_run_leaves_no_escaped_descendant() {
    for cgroups in [true, false] {
        for escape in [Escape::Setsid, Escape::DoubleFork, Escape::Daemon] {
            let dir = tempfile::tempdir().unwrap();
            let marker = fresh_marker("run");
            let _cleanup = Cleanup(marker.clone());
            let program = demo_launcher(dir.path(), &marker, escape);
            let out = clawbridge_run(&dir.path().join("state"), &program, cgroups).output().unwrap();
            assert!(out.status.success(), "the turn completes: {}", String::from_utf8_lossy(&out.stderr));
            let survivors = carriers(MARKER_VAR, &marker);
            assert!(survivors.is_empty(), "{escape:?} (cgroups {cgroups}) left {survivors:?} running");
        }
    }
}

/// A launcher that starts the escaping sleeper and then hangs as the agent (it never answers), so
/// the bridge is sure to be killed while its agent and the sleeper run.
fn hanging_launcher(dir: &Path, marker: &str) -> PathBuf {
    launcher(dir, marker, Escape::Setsid, "exec sleep 300")
}

/// `clawbridge run` SIGKILLed while its agent and a setsid descendant run: the agent dies with its
/// bridge (PDEATHSIG), the descendant does not; `clawbridge reap` then leaves nothing running.
#[test]
fn reap_after_a_sigkilled_run_leaves_no_survivor() {
    for cgroups in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let marker = fresh_marker("killed");
        let _cleanup = Cleanup(marker.clone());
        let program = hanging_launcher(dir.path(), &marker);
        let mut bridge = clawbridge_run(&state, &program, cgroups).stderr(Stdio::null()).spawn().unwrap();
        wait_until("the agent and its setsid descendant run", Duration::from_secs(30), || {
            carriers(MARKER_VAR, &marker).len() == 2
        });
        bridge.kill().unwrap();
        bridge.wait().unwrap();
        wait_until("the agent died with its bridge", Duration::from_secs(10), || {
            carriers(MARKER_VAR, &marker).len() == 1
        });
        let report = clawbridge_reap(&state);
        assert!(report.contains("1 of them outside the group"), "reap names the escaped descendant: {report}");
        let survivors = carriers(MARKER_VAR, &marker);
        assert!(survivors.is_empty(), "cgroups {cgroups}: {survivors:?} survived reap; reap said: {report}");
        let records: Vec<_> = std::fs::read_dir(state.join("pids"))
            .map(|dir| {
                dir.flatten().map(|e| e.file_name()).filter(|n| n.to_string_lossy().ends_with(".json")).collect()
            })
            .unwrap_or_default();
        assert!(records.is_empty(), "no pid record is left: {records:?}");
    }
}

/// A tiny deterministic generator (SplitMix64), so a failing kill schedule can be replayed from
/// its printed seed.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// 200 `clawbridge run`s, each SIGKILLed 0–200 ms after it started (in parallel batches), whose
/// agent starts a setsid descendant at once: after `clawbridge reap`, nothing is left — whatever
/// instant the kill hit (before the record, between record and spawn, between spawn and the pid's
/// record, mid-handshake). Half the batches run without cgroups.
#[test]
fn two_hundred_runs_killed_at_random_early_instants_leave_no_survivor_after_reap() {
    const RUNS: usize = 200;
    const BATCH: usize = 20;
    let seed: u64 = std::env::var("CONTAINMENT_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_0016);
    let mut random = SplitMix(seed);
    let dir = tempfile::tempdir().unwrap();
    for batch in 0..RUNS / BATCH {
        let cgroups = batch % 2 == 0;
        let state = dir.path().join(format!("state-{batch}"));
        let marker = fresh_marker("early");
        let _cleanup = Cleanup(marker.clone());
        let program = hanging_launcher(dir.path(), &marker);
        let delays: Vec<Duration> = (0..BATCH).map(|_| Duration::from_millis(random.next() % 201)).collect();
        let started = Instant::now();
        let mut bridges: Vec<(Duration, std::process::Child)> = delays
            .iter()
            .map(|&delay| (delay, clawbridge_run(&state, &program, cgroups).stderr(Stdio::null()).spawn().unwrap()))
            .collect();
        bridges.sort_by_key(|(delay, _)| *delay);
        for (delay, bridge) in &mut bridges {
            if let Some(wait) = delay.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
            bridge.kill().unwrap();
        }
        for (_, bridge) in &mut bridges {
            bridge.wait().unwrap();
        }
        let report = clawbridge_reap(&state);
        // A process the SIGKILL found mid-exec can take a moment to show its environment.
        std::thread::sleep(Duration::from_millis(100));
        let survivors = carriers(MARKER_VAR, &marker);
        assert!(
            survivors.is_empty(),
            "seed {seed} (CONTAINMENT_SEED={seed}), batch {batch}, cgroups {cgroups}, delays {delays:?}: \
             {survivors:?} survived reap; reap said: {report}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Codex: the token reaches the tool commands it runs, whatever its shell environment policy
// ---------------------------------------------------------------------------------------------

/// Codex builds every tool command's environment from its `shell_environment_policy`; with
/// `inherit = "none"` nothing of its own environment passes — but the bridge's `set` override
/// puts the containment variable back, so a command the model runs carries the agent's token.
#[tokio::test]
async fn a_codex_tool_command_carries_the_token_under_an_inherit_none_policy() {
    use std::sync::Arc;

    use clawbridge_adapters::codex::{CodexConfig, CodexSession, SessionHooks, ThreadOptions};
    use clawbridge_bridge::attempt::hooks::{ApprovalDecision, FixedApprover, NoHostTools};
    use clawbridge_fixtures::hooks::RecordingObserver;
    use clawbridge_fixtures::peers::codex::config_toml;
    use clawbridge_fixtures::peers::{Sandbox, peer_or_skip, start_mock};

    let Some(codex) = peer_or_skip("codex") else { return };
    let sandbox = Sandbox::new().expect("a sandbox");
    let scenario = serde_json::json!({"rules": [
        {"when": {"last_input_is_tool_result": true},
         "reply": {"text": "The command printed:", "text_quoting_tool_result": true}},
        {"when": {"last_user_text_contains": "run", "tool_offered": "exec_command"},
         "reply": {"run_command": {"command": format!("echo token=${CONTAINMENT_VAR}="), "escalated": true,
                                   "justification": "Allow it?", "shell": "/bin/bash"}}}
    ]});
    let mock = start_mock(&scenario).await.expect("the mock starts");
    let config_text = format!("{}\n[shell_environment_policy]\ninherit = \"none\"\n", config_toml(&mock));
    std::fs::write(sandbox.codex_home().join("config.toml"), config_text).unwrap();
    let mut config = CodexConfig::new(&codex);
    config.codex_home = Some(sandbox.codex_home());
    config.env = sandbox.env();
    config.cwd = Some(sandbox.work());
    let hooks = SessionHooks {
        approver: Arc::new(FixedApprover(ApprovalDecision::Allow)),
        tools: Arc::new(NoHostTools),
        observer: Arc::new(RecordingObserver::default()),
    };
    let mut session = CodexSession::connect(config, hooks).await.expect("codex accepts the override");
    let value = containment_value_of(session.pid().expect("spawned"));
    let options = ThreadOptions { cwd: Some(sandbox.work().display().to_string()), ..ThreadOptions::default() };
    let thread = session.start_thread(&options).await.unwrap();
    let result = tokio::time::timeout(
        Duration::from_secs(90),
        session.run_turn(
            &thread.thread_id,
            "Please run it.",
            &mut |_: &clawbridge_bridge::events::Event| {},
            &tokio_util::sync::CancellationToken::new(),
        ),
    )
    .await
    .expect("the turn ends")
    .expect("the turn runs");
    session.shutdown().await;
    let expected = format!("token={value}=");
    assert!(
        result.assistant_texts.iter().any(|t| t.contains(&expected)),
        "the tool command saw {:?}, the agent carries {value}",
        result.assistant_texts
    );
}

/// Whatever a stop and the drop cannot finish keeps the agent's record, so the reap after this
/// bridge has gone still finds it: here the agent's cgroup cannot be removed, because a running
/// bridge (this test) owns a cgroup below it. (Where no cgroup can be made, there is nothing to
/// hold the cgroup back and the test has nothing to show.)
#[tokio::test]
async fn what_the_stop_and_drop_cannot_finish_keeps_its_record() {
    let state = tempfile::tempdir().unwrap();
    let registry = PidRegistry::open(state.path()).unwrap();
    let options = SpawnOptions { registry: Some(registry), die_with_bridge: false, ..SpawnOptions::default() };
    let mut child = ChildProcess::spawn(&CommandSpec::new("cat"), options).unwrap();
    let Some(cgroup) = child.cgroup().map(Path::to_path_buf) else {
        assert!(cgroups_available().is_err(), "cgroups can be made here, yet the agent has none");
        child.stop(quick_stop()).await;
        return;
    };
    let record = state.path().join(format!("{}.json", token_of(child.pid())));
    let held = cgroup.join(format!("clawbridge-{}-0", std::process::id()));
    std::fs::create_dir(&held).unwrap();
    let policy = StopPolicy { after_sigkill: Duration::from_millis(300), ..quick_stop() };
    let outcome = child.stop(policy).await;
    assert_eq!(outcome.stage, StopStage::Unkillable, "the cgroup could not be removed");
    drop(child);
    // The drop tries again off the runtime's threads for a few seconds, then gives up.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let kept = record.exists();
    let _ = std::fs::remove_dir(&held);
    let _ = std::fs::remove_dir(&cgroup);
    let _ = std::fs::remove_file(&record);
    assert!(kept, "the record of an agent whose cgroup remains is kept");
}
