//! The cost curve: what one host pays as it holds more servers, and as one
//! server lists more tools.
//!
//! Every point is measured in a fresh child process of the harness
//! (`harness probe-curve fleet|tools N CALLS CHANGES`, see [`probe`]), so
//! neither the allocator's leftovers nor the threads of earlier points or
//! figures count against it, and the thousand-server point's raised open-files
//! limit stays in that child. Each point is taken once per round; the report
//! keeps the median over rounds.

pub mod probe;
mod published;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// The argument that makes the harness a curve probe.
pub const PROBE_ARG: &str = "probe-curve";

/// Which curve a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// N stdio rmcp echo servers in one host.
    Fleet,
    /// One server listing N tools (beside a second server with none).
    Tools,
}

impl Axis {
    /// Its name on the probe's command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Axis::Fleet => "fleet",
            Axis::Tools => "tools",
        }
    }

    /// Parses [`Axis::name`].
    pub fn parse(name: &str) -> anyhow::Result<Axis> {
        match name {
            "fleet" => Ok(Axis::Fleet),
            "tools" => Ok(Axis::Tools),
            other => bail!("no curve named {other:?} (fleet, tools)"),
        }
    }

    /// The quantities measured along it, in report order.
    pub fn quantities(self) -> &'static [Quantity] {
        match self {
            Axis::Fleet => &FLEET,
            Axis::Tools => &TOOLS,
        }
    }
}

/// One measured quantity of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Quantity {
    /// Its key in a probe's values and in the JSON.
    pub key: &'static str,
    /// What the report's tables call it.
    pub label: &'static str,
    /// What a chart's panel calls it (a third of the chart wide).
    pub short: &'static str,
    /// Its unit.
    pub unit: &'static str,
}

const fn quantity(
    key: &'static str,
    label: &'static str,
    short: &'static str,
    unit: &'static str,
) -> Quantity {
    Quantity {
        key,
        label,
        short,
        unit,
    }
}

/// Along the fleet curve.
pub const FLEET: [Quantity; 5] = [
    quantity("ready_ms", "time to all-ready", "time to all-ready", "ms"),
    quantity("rss_mib", "host RSS", "host RSS", "MiB"),
    quantity("threads", "host threads", "host threads", "threads"),
    quantity(
        "call_p50_us",
        "call p50, one server busy",
        "call p50, others idle",
        "µs",
    ),
    quantity(
        "publish_ms",
        "one server's tools change to routes published",
        "tools change → published",
        "ms",
    ),
];

/// Along the tools curve.
pub const TOOLS: [Quantity; 5] = [
    quantity(
        "ready_ms",
        "spawn to ready (initialize + full listing)",
        "spawn to ready",
        "ms",
    ),
    quantity(
        "relist_ms",
        "re-list after list_changed to routes published",
        "re-list → published",
        "ms",
    ),
    quantity(
        "rebuild_ms",
        "route-table rebuild (another server's change)",
        "route-table rebuild",
        "ms",
    ),
    quantity("tools_ms", "Host::tools() snapshot", "Host::tools()", "ms"),
    quantity("rss_mib", "host RSS", "host RSS", "MiB"),
];

/// How much of the curve to measure.
#[derive(Debug, Clone, Serialize)]
pub struct CurvePlan {
    /// Fresh-process samples of every point; the report keeps their median.
    pub rounds: usize,
    /// Servers in one host, one point each.
    pub fleet_sizes: Vec<usize>,
    /// Tools of the one big server, one point each.
    pub tool_counts: Vec<usize>,
    /// Sequential calls timed on one server of each fleet.
    pub calls: usize,
    /// Tool-list changes timed at each point (the median is kept).
    pub changes: usize,
}

impl CurvePlan {
    /// The curve: 1 to 1,000 servers, 100 to 100,000 tools, 3 rounds.
    pub fn full() -> CurvePlan {
        CurvePlan {
            rounds: 3,
            fleet_sizes: vec![1, 10, 100, 1_000],
            tool_counts: vec![100, 1_000, 10_000, 100_000],
            calls: 2_000,
            changes: 5,
        }
    }

    /// Every point once, with fewer calls: to check that the curve runs.
    pub fn quick() -> CurvePlan {
        CurvePlan {
            rounds: 1,
            calls: 300,
            changes: 3,
            ..CurvePlan::full()
        }
    }

    fn points(&self, axis: Axis) -> &[usize] {
        match axis {
            Axis::Fleet => &self.fleet_sizes,
            Axis::Tools => &self.tool_counts,
        }
    }
}

/// What one probe measured at one point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// Servers or tools.
    pub x: usize,
    /// Each [`Quantity::key`] measured, with its value.
    pub values: BTreeMap<String, f64>,
    /// What the probe had to change to measure it (a raised listing bound).
    pub notes: Vec<String>,
}

/// Every point of every round.
#[derive(Debug, Default)]
pub struct CurveMeasurements {
    /// Samples by curve and point, in round order.
    pub points: BTreeMap<(Axis, usize), Vec<Point>>,
    /// Failures, and what probes noted.
    pub notes: Vec<String>,
}

impl CurveMeasurements {
    fn note(&mut self, note: String) {
        eprintln!("note: {note}");
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// Measures every point of `plan`, each in a fresh child process of `exe`.
pub async fn run(plan: &CurvePlan, exe: &Path) -> CurveMeasurements {
    let mut m = CurveMeasurements::default();
    for round in 0..plan.rounds {
        for axis in [Axis::Fleet, Axis::Tools] {
            for &x in plan.points(axis) {
                match run_probe(exe, axis, x, plan).await {
                    Ok(point) => {
                        let shown: Vec<String> = point
                            .values
                            .iter()
                            .map(|(k, v)| format!("{k} {v:.2}"))
                            .collect();
                        eprintln!("{:<18} {x:>7}  {}", axis.name(), shown.join("  "));
                        for note in &point.notes {
                            m.note(note.clone());
                        }
                        m.points.entry((axis, x)).or_default().push(point);
                    }
                    Err(e) => m.note(format!(
                        "the {} curve at {x} failed in round {}: {e:#}",
                        axis.name(),
                        round + 1
                    )),
                }
            }
        }
    }
    m
}

async fn run_probe(exe: &Path, axis: Axis, x: usize, plan: &CurvePlan) -> anyhow::Result<Point> {
    let output = tokio::process::Command::new(exe)
        .args([
            PROBE_ARG,
            axis.name(),
            &x.to_string(),
            &plan.calls.to_string(),
            &plan.changes.to_string(),
        ])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await?;
    if !output.status.success() {
        bail!(
            "probe exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let line = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(line.trim()).with_context(|| format!("probe printed {line:?}"))
}
