//! Latency: a Codex peer writes assistant deltas at a steady rate, each stamped with the wall-clock
//! time just before it is written and flushed; the host end times each notification as it arrives
//! (after the session, serve's pipeline, its host stage and the peer's line writer). Both processes
//! read the same clock.

use std::ffi::OsStr;

use super::report::{Report, Row, Target};
use super::session::{self, HostSide};
use super::{Scenario, Setup};

/// The target for p99, in milliseconds.
const P99_TARGET_MS: f64 = 1.0;

/// Runs the latency scenario and adds its rows.
pub async fn run(ctx: &Setup<'_>, report: &mut Report) -> anyhow::Result<()> {
    let events = ctx.sizes.latency_events as u64;
    let rate = ctx.sizes.latency_rate;
    let (events_arg, rate_arg) = (format!("--events={events}"), format!("--rate={rate}"));
    let role = [OsStr::new("paced"), OsStr::new(&events_arg), OsStr::new(&rate_arg)];
    let program = session::peer_program(ctx.work, "latency", ctx.me, &role)?;
    let host = HostSide { stamps: true, ..HostSide::new("bench-latency") };
    let attempt = session::attempt(&ctx.backend("codex")?, &program, host).await?;
    attempt.check(0)?;
    let mut latencies = attempt.totals.delivered.latencies_ns.clone();
    if latencies.len() as u64 != events {
        anyhow::bail!("{} of {events} stamped deltas reached the host", latencies.len());
    }
    latencies.sort_unstable();
    let ms = |ns: u64| ns as f64 / 1e6;
    let at = |q: f64| latencies[((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1];
    let measure = |what: &str| format!("codex delta → attempt/event, {what} ({events} events at {rate}/s)");
    report.push(Row::info(Scenario::Latency, measure("p50"), ms(at(0.50)), "ms"));
    report.push(Row::judged(Scenario::Latency, measure("p99"), ms(at(0.99)), "ms", Target::AtMost(P99_TARGET_MS)));
    report.push(Row::info(Scenario::Latency, measure("max"), ms(*latencies.last().unwrap_or(&0)), "ms"));
    if let Some((first, last)) = attempt.totals.delivered.stamp_span.filter(|(f, l)| l > f) {
        let achieved = (events - 1) as f64 / ((last - first) as f64 / 1e9);
        report.push(
            Row::info(Scenario::Latency, "rate the peer actually wrote at", achieved, "events/s")
                .with_note("the peer sleeps to each line's due time; a late wake-up writes the lines that fell due"),
        );
    }
    Ok(())
}
