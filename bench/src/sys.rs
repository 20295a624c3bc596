//! Facts about this machine and process, read from `/proc` (Linux only, like the bench).

use std::time::{SystemTime, UNIX_EPOCH};

/// A `kB` field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`), in bytes.
pub fn status_bytes(pid: Option<u32>, field: &str) -> Option<u64> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field) && l[field.len()..].starts_with(':'))?;
    let kb: u64 = line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// This process's peak resident set (`VmHWM`), in bytes.
pub fn peak_rss() -> u64 {
    status_bytes(None, "VmHWM").unwrap_or(0)
}

/// This process's current resident set (`VmRSS`), in bytes.
pub fn current_rss() -> u64 {
    status_bytes(None, "VmRSS").unwrap_or(0)
}

/// The 1, 5 and 15 minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The first 1-minute load average as a number (for the "machine was busy" note).
pub fn load_one() -> f64 {
    load_average().split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// CPU model, core count, memory and kernel, in one line.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map(std::num::NonZero::get).unwrap_or(1);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("MemTotal:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()))
        .map(|kb| format!("{:.1} GiB", kb as f64 / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "? GiB".into());
    let kernel =
        std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).unwrap_or_default();
    format!("{cpu} · {cores} cores · {memory} RAM · Linux {kernel}")
}

/// Now as an RFC 3339 UTC timestamp, to the second.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar (H. Hinnant's
/// algorithm), so the report can carry a date without a date crate.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Wall-clock nanoseconds since the epoch: the one clock two processes share, so a line stamped by
/// the peer can be timed by the bridge.
pub fn wall_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_come_out_right() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn this_process_has_a_resident_set() {
        // Both are read; the kernel updates the peak lazily, so it may trail the current value.
        assert!(current_rss() > 1024 * 1024);
        assert!(peak_rss() > 1024 * 1024);
        assert_eq!(status_bytes(None, "NoSuchField"), None);
    }
}
