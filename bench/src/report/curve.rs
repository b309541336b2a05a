//! The cost-curve section: a table, the growth per step, and an SVG chart
//! for each curve.
//!
//! Rendered inside the full report, or alone by `harness curve`, which puts
//! it into an existing `BENCHMARKS.md` between [`SECTION`]'s markers and
//! under `"curve"` in `benchmarks.json`. Which quantity grows worse than
//! linearly is read off the figures ([`WORSE_THAN_LINEAR`]), never written
//! by hand.

use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::machine::{Machine, utc_now};
use super::splice::Section;
use super::svg::{self, Panel};
use crate::figures::curve::{Axis, CurveMeasurements, CurvePlan, Quantity};
use crate::stats::median;

/// Where the section sits in the two files.
pub const SECTION: Section = Section {
    start: "<!-- curve figures: written by `harness curve` -->",
    end: "<!-- end of curve figures -->",
    key: "curve",
};

/// The command that writes the section alone.
pub const COMMAND: &str = "cargo run --release -p mcpvisor-bench --bin harness -- curve";

/// A step whose value grows by more than this many times the growth of x is
/// called worse than linear (noise on two shared cores stays well under it).
pub const WORSE_THAN_LINEAR: f64 = 1.5;

/// The curve figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct CurveReport {
    /// When it ran (UTC).
    pub date: String,
    /// `/proc/loadavg` at the end of the run.
    pub load_average: String,
    /// How much was measured.
    pub plan: CurvePlan,
    /// The fleet curve, then the tools curve.
    pub curves: Vec<Curve>,
    /// Failures, and bounds the harness raised.
    pub notes: Vec<String>,
}

/// One curve: every quantity at every x.
#[derive(Debug, Clone, Serialize)]
pub struct Curve {
    /// Which curve.
    pub axis: Axis,
    /// The x values (servers or tools), ascending.
    pub xs: Vec<usize>,
    /// One line per quantity.
    pub lines: Vec<Line>,
}

/// One quantity along a curve.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// What it is.
    pub quantity: Quantity,
    /// Median over rounds at each x (`None` where no round measured it).
    pub medians: Vec<Option<f64>>,
    /// Every round's value at each x.
    pub samples: Vec<Vec<f64>>,
    /// The growth from each x to the next.
    pub steps: Vec<Step>,
}

/// The growth of a quantity from one x to the next.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Step {
    /// x before.
    pub from: usize,
    /// x after.
    pub to: usize,
    /// value(to) / value(from).
    pub factor: f64,
    /// `factor` / (to / from): 1.0 is linear growth, 0.1 a constant over a 10× step.
    pub per_linear: f64,
}

impl Step {
    /// True when the step grows more than [`WORSE_THAN_LINEAR`] times linearly.
    pub fn worse_than_linear(&self) -> bool {
        self.per_linear > WORSE_THAN_LINEAR
    }
}

impl CurveReport {
    /// Builds the section from `m`.
    pub fn new(m: &CurveMeasurements, plan: &CurvePlan) -> CurveReport {
        let curves = [Axis::Fleet, Axis::Tools]
            .into_iter()
            .map(|axis| curve(m, axis))
            .filter(|c| !c.xs.is_empty())
            .collect();
        CurveReport {
            date: utc_now(),
            load_average: Machine::detect().load_average,
            plan: plan.clone(),
            curves,
            notes: m.notes.clone(),
        }
    }

    /// Writes each curve's chart into `dir` (`curve-fleet.svg`, `curve-tools.svg`).
    pub fn write_charts(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        for c in &self.curves {
            std::fs::write(dir.join(chart_file(c.axis)), chart(c))?;
        }
        Ok(())
    }

    /// Writes the charts and puts the section into `dir`'s `BENCHMARKS.md`
    /// and `benchmarks.json`, leaving the rest of both as it was.
    pub fn splice_into(&self, dir: &Path, versions: &str) -> anyhow::Result<()> {
        self.write_charts(dir)?;
        SECTION.splice_into(dir, &render(self, versions), &serde_json::to_value(self)?)
    }
}

fn curve(m: &CurveMeasurements, axis: Axis) -> Curve {
    let xs: Vec<usize> = m
        .points
        .keys()
        .filter(|(a, _)| *a == axis)
        .map(|&(_, x)| x)
        .collect();
    let lines = axis
        .quantities()
        .iter()
        .map(|&quantity| {
            let samples: Vec<Vec<f64>> = xs
                .iter()
                .map(|&x| {
                    m.points[&(axis, x)]
                        .iter()
                        .filter_map(|p| p.values.get(quantity.key).copied())
                        .collect()
                })
                .collect();
            let medians: Vec<Option<f64>> = samples.iter().map(|s| median(s)).collect();
            let steps = steps(&xs, &medians);
            Line {
                quantity,
                medians,
                samples,
                steps,
            }
        })
        .collect();
    Curve { axis, xs, lines }
}

fn steps(xs: &[usize], medians: &[Option<f64>]) -> Vec<Step> {
    xs.windows(2)
        .zip(medians.windows(2))
        .filter_map(|(x, v)| {
            let (a, b) = (v[0]?, v[1]?);
            (a > 0.0 && x[0] > 0).then(|| {
                let factor = b / a;
                Step {
                    from: x[0],
                    to: x[1],
                    factor,
                    per_linear: factor / (x[1] as f64 / x[0] as f64),
                }
            })
        })
        .collect()
}

fn chart_file(axis: Axis) -> String {
    format!("curve-{}.svg", axis.name())
}

fn x_label(axis: Axis) -> &'static str {
    match axis {
        Axis::Fleet => "stdio servers in one host",
        Axis::Tools => "tools listed by one server",
    }
}

fn title(axis: Axis) -> &'static str {
    match axis {
        Axis::Fleet => "mcpvisor cost curve: servers in one host (log-log)",
        Axis::Tools => "mcpvisor cost curve: tools of one server (log-log)",
    }
}

/// The curve as small multiples: a log-log panel per quantity, each with the
/// line a linear growth from the first point would follow.
fn chart(c: &Curve) -> String {
    let panels: Vec<Panel> = c
        .lines
        .iter()
        .map(|line| {
            let points: Vec<(f64, f64)> =
                c.xs.iter()
                    .zip(&line.medians)
                    .filter_map(|(&x, v)| Some((x as f64, (*v)?)))
                    .collect();
            let linear = match (points.first(), c.xs.last()) {
                (Some(&(x0, y0)), Some(&last)) => {
                    vec![(x0, y0), (last as f64, y0 * last as f64 / x0)]
                }
                _ => Vec::new(),
            };
            Panel {
                title: line.quantity.short.to_string(),
                y_label: line.quantity.unit.to_string(),
                series: vec![
                    svg::Series {
                        name: line.quantity.label.to_string(),
                        points,
                        reference: false,
                    },
                    svg::Series {
                        name: "linear from the first point".into(),
                        points: linear,
                        reference: true,
                    },
                ],
            }
        })
        .collect();
    svg::small_multiples(title(c.axis), x_label(c.axis), &panels)
}

/// The section as markdown, between [`SECTION`]'s markers; `versions` names
/// mcpvisor's build.
pub fn render(report: &CurveReport, versions: &str) -> String {
    let mut out = String::new();
    let p = &report.plan;
    let _ = writeln!(
        out,
        "{}\n## The cost curve\n\n\
         Generated by `{COMMAND}` on {}; load average at the end of the run {} (1, 5, 15 min); \
         {versions}. Every point is measured in a fresh child process of the harness, once in \
         each of {} rounds; each value is the median. Call p50 over {} sequential calls after {} \
         warm-up calls; each change figure is the median of {} changes. Growth per step is the value \
         at the larger x over the value at the smaller, divided by the growth of x: 1.00 is \
         linear, 0.10 a constant over a 10× step; steps over {WORSE_THAN_LINEAR:.1} are in bold.",
        SECTION.start,
        report.date,
        report.load_average,
        p.rounds,
        thousands(p.calls),
        thousands(p.calls / 10),
        p.changes,
    );
    for c in &report.curves {
        section(&mut out, c);
    }
    out.push_str(HOW);
    if !report.notes.is_empty() {
        out.push_str("\nNotes from this run:\n\n");
        for note in &report.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out.push_str(SECTION.end);
    out.push('\n');
    out
}

fn section(out: &mut String, c: &Curve) {
    let (heading, x_name) = match c.axis {
        Axis::Fleet => ("### Servers in one host", "servers"),
        Axis::Tools => ("### Tools of one server", "tools"),
    };
    let _ = writeln!(
        out,
        "\n{heading}\n\n![{} curve]({})\n",
        c.axis.name(),
        chart_file(c.axis)
    );
    let _ = write!(out, "| {x_name} |");
    for line in &c.lines {
        let _ = write!(out, " {} |", line.quantity.label);
    }
    let _ = writeln!(out, "\n|---:|{}", "---:|".repeat(c.lines.len()));
    for (i, x) in c.xs.iter().enumerate() {
        let _ = write!(out, "| {} |", thousands(*x));
        for line in &c.lines {
            let cell = line.medians[i].map_or("n/a".into(), |v| {
                format!("{} {}", number(v), line.quantity.unit)
            });
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
    let spans: Vec<String> =
        c.xs.windows(2)
            .map(|w| format!("{} → {}", thousands(w[0]), thousands(w[1])))
            .collect();
    let _ = writeln!(
        out,
        "\nGrowth per step, divided by the growth of {x_name}:\n\n| quantity | {} |\n|---|{}",
        spans.join(" | "),
        "---:|".repeat(spans.len())
    );
    for line in &c.lines {
        let cells: Vec<String> =
            c.xs.windows(2)
                .map(|w| {
                    line.steps
                        .iter()
                        .find(|s| s.from == w[0] && s.to == w[1])
                        .map_or("n/a".into(), |s| {
                            let shown = format!("{:.2} (×{:.1})", s.per_linear, s.factor);
                            if s.worse_than_linear() {
                                format!("**{shown}**")
                            } else {
                                shown
                            }
                        })
                })
                .collect();
        let _ = writeln!(out, "| {} | {} |", line.quantity.label, cells.join(" | "));
    }
    let _ = writeln!(out, "\n{}", verdict(c, x_name));
}

/// The sentence saying what grows worse than linearly along `c`.
fn verdict(c: &Curve, x_name: &str) -> String {
    let worse: Vec<String> = c
        .lines
        .iter()
        .filter_map(|line| {
            let steps: Vec<String> = line
                .steps
                .iter()
                .filter(|s| s.worse_than_linear())
                .map(|s| {
                    format!(
                        "{} → {} {x_name}: ×{:.1}, {:.1}× linear",
                        thousands(s.from),
                        thousands(s.to),
                        s.factor,
                        s.per_linear
                    )
                })
                .collect();
            (!steps.is_empty()).then(|| format!("{} ({})", line.quantity.label, steps.join("; ")))
        })
        .collect();
    if worse.is_empty() {
        let steepest = c
            .lines
            .iter()
            .flat_map(|l| l.steps.iter().map(move |s| (l, s)))
            .max_by(|a, b| a.1.per_linear.total_cmp(&b.1.per_linear));
        match steepest {
            Some((line, s)) => format!(
                "Nothing here grows worse than linearly with the {x_name}; the steepest step is \
                 {} from {} to {} ({:.2}× linear).",
                line.quantity.label,
                thousands(s.from),
                thousands(s.to),
                s.per_linear
            ),
            None => "Too few points to say how anything grows.".into(),
        }
    } else {
        format!(
            "**Worse than linear** with the {x_name}: {}.",
            worse.join("; ")
        )
    }
}

fn number(v: f64) -> String {
    match v {
        v if v.fract() == 0.0 => format!("{v:.0}"),
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

const HOW: &str = "
How these are taken:

- **Servers**: N rmcp echo servers (this harness binary, `rmcp-echo-server --tools 0`: `echo` \
and `grow`) started as one `Host` with default options but a 300 s startup timeout; \
the probe raises its own soft open-files limit to the hard limit (three pipes per server). \
**Time to all-ready** runs from `Host::start` until `wait_ready` finds every server ready \
(initialized and listed). **RSS** (`VmRSS`) and **threads** (`Threads` of `/proc/self/status`) \
are read after a second idle, in the probe process, which holds only the host. **Call p50**: \
sequential `echo` calls to one server while the others idle. **Tools change to routes \
published**: `grow` on one server, which lists one tool more and sends \
`notifications/tools/list_changed`; timed from the call until `HostEvent::ToolsChanged` for \
that server with the new tool in `Host::routes()`.
- **Tools**: one server lists N extra tools (`t000000`…, each with a one-property input schema) \
in pages of 1,000, beside a second server listing none. **Spawn to ready** covers both starting \
together (initialize, then every page). **Re-list**: `grow` on the big server, until its new \
tool is routed (the notification, N tools listed again, checked and turned into routes, the \
table rebuilt and published). **Route-table rebuild**: `grow` on the small server, until its \
new tool is routed: listing two tools, while the registry rebuilds the whole table, the big \
server's N routes included. **Host::tools()**: one call, which copies and sorts every route's \
definition.
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::curve::Point;

    fn measured() -> CurveMeasurements {
        let mut m = CurveMeasurements::default();
        for (x, ready, rss) in [(1, 10.0, 5.0), (10, 50.0, 6.0), (100, 2000.0, 15.0)] {
            let values = [("ready_ms", ready), ("rss_mib", rss)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            m.points.insert(
                (Axis::Fleet, x),
                vec![Point {
                    x,
                    values,
                    notes: Vec::new(),
                }],
            );
        }
        m
    }

    #[test]
    fn steps_worse_than_linear_are_named() {
        let report = CurveReport::new(&measured(), &CurvePlan::quick());
        let fleet = &report.curves[0];
        let ready = &fleet.lines[0];
        assert_eq!(ready.steps.len(), 2);
        assert!(!ready.steps[0].worse_than_linear());
        assert!(ready.steps[1].worse_than_linear());
        assert!((ready.steps[1].per_linear - 4.0).abs() < 1e-9);
        let md = render(&report, "mcpvisor test");
        assert!(md.contains(
            "**Worse than linear** with the servers: time to all-ready (10 → 100 servers: ×40.0, 4.0× linear)."
        ));
        assert!(md.contains("![fleet curve](curve-fleet.svg)"));
        assert!(md.contains("| 100 | 2000 ms | 15 MiB | n/a |"));
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(100), "100");
    }
}
