//! The bench's results: rows of (scenario, measure, value, target, verdict), printed as a table or
//! as JSON, headed by the machine facts the figures depend on.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Scenario, sys};

/// A target a figure is judged against.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    /// The value must be at least this.
    AtLeast(f64),
    /// The value must be at most this.
    AtMost(f64),
}

impl Target {
    fn met(self, value: f64) -> bool {
        match self {
            Target::AtLeast(bound) => value >= bound,
            Target::AtMost(bound) => value <= bound,
        }
    }
}

/// One measured figure.
#[derive(Clone, Debug)]
pub struct Row {
    /// Which scenario produced it.
    pub scenario: String,
    /// What was measured, in words.
    pub measure: String,
    /// The figure, in `unit`.
    pub value: f64,
    /// Its unit (`events/s`, `MiB`, `ms`, `×`).
    pub unit: String,
    /// What it is judged against, if anything.
    pub target: Option<Target>,
    /// Why a figure is what it is, or what to do to get it (shown under the table).
    pub note: Option<String>,
}

impl Row {
    /// A figure with no target (context for the others).
    pub fn info(scenario: Scenario, measure: impl Into<String>, value: f64, unit: &str) -> Row {
        Row { scenario: name(scenario), measure: measure.into(), value, unit: unit.into(), target: None, note: None }
    }

    /// A figure judged against `target`.
    pub fn judged(scenario: Scenario, measure: impl Into<String>, value: f64, unit: &str, target: Target) -> Row {
        Row { target: Some(target), ..Row::info(scenario, measure, value, unit) }
    }

    /// Adds an explanation.
    pub fn with_note(mut self, note: impl Into<String>) -> Row {
        self.note = Some(note.into());
        self
    }

    /// Whether the target was met (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        self.target.map(|t| t.met(self.value))
    }
}

fn name(scenario: Scenario) -> String {
    format!("{scenario:?}").to_lowercase()
}

/// Every row of one bench run, and the machine facts around it.
pub struct Report {
    /// `--quick` sizes: the figures say nothing about the targets.
    quick: bool,
    /// When the run started.
    started: String,
    /// The machine, in one line.
    machine: String,
    /// This run's command line, as given.
    command: String,
    /// Load averages when the run started.
    load_before: String,
    /// Whether the 1-minute load exceeded one busy core when the run started.
    busy_at_start: bool,
    /// Load averages when it ended.
    load_after: String,
    /// The figures.
    rows: Vec<Row>,
    /// Scenarios that could not run, with why.
    failures: Vec<(String, String)>,
    /// Scenarios left out because something they need is missing, with what to do.
    skipped: Vec<(String, String)>,
}

impl Report {
    /// An empty report, stamped with the machine and its load now.
    pub fn new(quick: bool) -> Report {
        Report {
            quick,
            started: sys::utc_now(),
            machine: sys::machine(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            load_before: sys::load_average(),
            busy_at_start: sys::load_one() > 1.0,
            load_after: String::new(),
            rows: Vec::new(),
            failures: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// Adds a figure.
    pub fn push(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// Records that `scenario` could not run.
    pub fn failed(&mut self, scenario: Scenario, error: &anyhow::Error) {
        self.failures.push((name(scenario), format!("{error:#}")));
    }

    /// Records that `scenario` was left out, and why.
    pub fn skipped(&mut self, scenario: Scenario, why: &str) {
        self.skipped.push((name(scenario), why.to_string()));
    }

    /// Whether any scenario could not run.
    pub fn has_failures(&self) -> bool {
        !self.failures.is_empty()
    }

    /// Stamps the load at the end.
    pub fn finish(&mut self) {
        self.load_after = sys::load_average();
    }

    fn header(&self) -> String {
        let build = if cfg!(debug_assertions) { "debug build (figures not representative)" } else { "release build" };
        let sizes = if self.quick { " · --quick sizes (a smoke run, not figures)" } else { "" };
        let busy = if self.busy_at_start {
            "note: the machine was busy when the run started; figures are pessimistic\n"
        } else {
            ""
        };
        format!(
            "clawbridge-bench {} · {build}{sizes} · {}\nmachine: {}\ncommand: {}\nload average (1/5/15 min): {} at start, {} at end\n{busy}",
            env!("CARGO_PKG_VERSION"),
            self.started,
            self.machine,
            self.command,
            self.load_before,
            self.load_after
        )
    }

    /// The human table.
    pub fn to_table(&self) -> String {
        let mut out = self.header();
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|r| {
                let target = match r.target {
                    Some(Target::AtLeast(b)) => format!("≥ {} {}", number(b), r.unit),
                    Some(Target::AtMost(b)) => format!("≤ {} {}", number(b), r.unit),
                    None => String::new(),
                };
                let verdict = match r.met() {
                    Some(true) => "met",
                    Some(false) => "MISSED",
                    None => "",
                };
                [
                    r.scenario.clone(),
                    r.measure.clone(),
                    format!("{} {}", number(r.value), r.unit),
                    target,
                    verdict.into(),
                ]
            })
            .collect();
        let heads = ["scenario", "measure", "value", "target", "verdict"];
        let mut widths = heads.map(|h| h.chars().count());
        for row in &cells {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut text = String::new();
            for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                let pad = w - cell.chars().count();
                // Values are right-aligned so digits line up; the rest reads left to right.
                if i == 2 {
                    let _ = write!(text, "{}{cell}  ", " ".repeat(pad));
                } else {
                    let _ = write!(text, "{cell}{}  ", " ".repeat(pad));
                }
            }
            text.trim_end().to_string()
        };
        let _ = writeln!(out, "{}", line(&heads.map(String::from)));
        let _ = writeln!(out, "{}", widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>().join("  "));
        for row in &cells {
            let _ = writeln!(out, "{}", line(row));
        }
        let notes: Vec<String> = self
            .rows
            .iter()
            .filter_map(|r| r.note.as_ref().map(|n| format!("- {} / {}: {n}", r.scenario, r.measure)))
            .collect();
        if !notes.is_empty() {
            let _ = writeln!(out, "\nnotes:");
            for note in notes {
                let _ = writeln!(out, "{note}");
            }
        }
        for (scenario, why) in &self.skipped {
            let _ = writeln!(out, "\nskipped {scenario}: {why}");
        }
        for (scenario, error) in &self.failures {
            let _ = writeln!(out, "\nFAILED {scenario}: {error}");
        }
        out
    }

    /// The JSON document.
    pub fn to_json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let target = r.target.map(|t| match t {
                    Target::AtLeast(b) => json!({"atLeast": b}),
                    Target::AtMost(b) => json!({"atMost": b}),
                });
                json!({
                    "scenario": r.scenario, "measure": r.measure, "value": r.value, "unit": r.unit,
                    "target": target, "met": r.met(), "note": r.note,
                })
            })
            .collect();
        let failures: Vec<Value> = self.failures.iter().map(|(s, e)| json!({"scenario": s, "error": e})).collect();
        let skipped: Vec<Value> = self.skipped.iter().map(|(s, w)| json!({"scenario": s, "why": w})).collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "release": !cfg!(debug_assertions),
            "quick": self.quick,
            "started": self.started,
            "machine": self.machine,
            "command": self.command,
            "loadBefore": self.load_before,
            "loadAfter": self.load_after,
            "rows": rows,
            "failures": failures,
            "skipped": skipped,
        })
    }
}

/// A figure for people: thousands separated, at most three significant decimals.
pub fn number(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let decimals = match value.abs() {
        v if v >= 1000.0 || v.fract() == 0.0 => 0,
        v if v >= 100.0 => 1,
        v if v >= 10.0 => 2,
        _ => 3,
    };
    let text = format!("{value:.decimals$}");
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let (sign, digits) = int.strip_prefix('-').map_or(("", int), |d| ("-", d));
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(frac) => format!("{sign}{grouped}.{frac}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_and_rounded() {
        assert_eq!(number(1_234_567.8), "1,234,568");
        assert_eq!(number(999.94), "999.9");
        assert_eq!(number(12.3456), "12.35");
        assert_eq!(number(0.51234), "0.512");
        assert_eq!(number(-4200.0), "-4,200");
        assert_eq!(number(8.0), "8");
    }

    #[test]
    fn the_table_judges_each_row_against_its_target() {
        let mut report = Report::new(true);
        report.push(Row::judged(Scenario::Latency, "p99", 0.4, "ms", Target::AtMost(1.0)));
        report.push(Row::judged(Scenario::Startup, "p50", 12.0, "ms", Target::AtMost(10.0)).with_note("busy"));
        report.push(Row::info(Scenario::Throughput, "lines", 200_000.0, "lines"));
        report.finish();
        let table = report.to_table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].starts_with("clawbridge-bench "), "{table}");
        assert!(lines.iter().any(|l| l.starts_with("latency") && l.ends_with("met")), "{table}");
        assert!(lines.iter().any(|l| l.starts_with("startup") && l.ends_with("MISSED")), "{table}");
        assert!(table.contains("- startup / p50: busy"), "{table}");
        let json = report.to_json();
        assert_eq!(json["rows"][0]["met"], true);
        assert_eq!(json["rows"][1]["met"], false);
        assert_eq!(json["rows"][2]["met"], Value::Null);
    }
}
