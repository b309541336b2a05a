//! The gateway section: `mcpvisor serve`, called at 2025-03-26 and at
//! 2026-07-28, against FastMCP's proxy (both revisions too), ContextForge,
//! supergateway, mcp-proxy and mcp-hub, a direct `Host::call`, and the
//! command line.
//!
//! Rendered inside the full report, or alone by `harness gateway`, which puts
//! it into an existing `BENCHMARKS.md` between [`START`] and [`END`] (replacing
//! the section of an earlier run) and under `"gateway"` in `benchmarks.json`,
//! leaving the rest of both files as they were.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use serde::Serialize;

use super::machine::{Machine, utc_now};
use super::splice::Section;
use super::targets::{self, TargetCheck};
use super::{Cell, markdown};
use crate::figures::Plan;
use crate::gateway::{Column, Gateway, GatewayFigure, GatewayMeasurements, GatewayPeers};
use crate::stats::median;

/// The marker before the section in `BENCHMARKS.md`.
pub const START: &str = "<!-- gateway figures: written by `harness gateway` -->";
/// The marker after it.
pub const END: &str = "<!-- end of gateway figures -->";

/// Where the section sits in the two files.
pub const SECTION: Section = Section {
    start: START,
    end: END,
    key: "gateway",
};

/// The command that writes the section alone.
pub const COMMAND: &str = "cargo run --release -p mcpvisor-bench --bin harness -- gateway";

/// The gateway figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct GatewayReport {
    /// When it ran (UTC).
    pub date: String,
    /// `/proc/loadavg` at the end of the run.
    pub load_average: String,
    /// Versions of the gateways.
    pub versions: BTreeMap<&'static str, String>,
    /// How much was measured.
    pub plan: Plan,
    /// One row per figure.
    pub rows: Vec<GatewayRow>,
    /// The targets, checked.
    pub targets: Vec<TargetCheck>,
    /// Failures and missing gateways.
    pub notes: Vec<String>,
}

/// One figure for every column, with the ratios of one subject to the others.
#[derive(Debug, Clone, Serialize)]
pub struct GatewayRow {
    /// Which figure.
    pub figure: GatewayFigure,
    /// The column the ratios are of: mcpvisor serve at one revision, or the
    /// attached CLI.
    pub subject: Column,
    /// Its label.
    pub label: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Each column's value.
    pub cells: Vec<(Column, Cell)>,
    /// The subject / each other column: the median of per-round ratios.
    pub ratios: Vec<(Column, f64)>,
    /// The subject / the best of the peers called at its revision in the
    /// same round, median over rounds.
    pub per_best_peer: Option<f64>,
}

impl GatewayRow {
    /// The cell of `column`.
    pub fn cell(&self, column: Column) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, v)| v)
    }

    /// The ratio of the row's subject to `column`.
    pub fn ratio(&self, column: Column) -> Option<f64> {
        self.ratios
            .iter()
            .find(|(c, _)| *c == column)
            .map(|(_, r)| *r)
    }
}

const GATEWAY_FIGURES: [GatewayFigure; 5] = [
    GatewayFigure::P50,
    GatewayFigure::P99,
    GatewayFigure::Throughput,
    GatewayFigure::CpuPerCall,
    GatewayFigure::Rss,
];

const GATEWAY_COLUMNS: [Column; 9] = [
    Column::Gateway(Gateway::Mcpvisor),
    Column::Gateway(Gateway::McpvisorStateless),
    Column::Gateway(Gateway::FastMcp),
    Column::Gateway(Gateway::FastMcpStateless),
    Column::Gateway(Gateway::ContextForge),
    Column::Gateway(Gateway::Supergateway),
    Column::Gateway(Gateway::McpProxy),
    Column::Gateway(Gateway::McpHub),
    Column::Direct,
];

/// mcpvisor serve with a session at 2025-03-26.
pub const SERVE: Column = Column::Gateway(Gateway::Mcpvisor);
/// mcpvisor serve called at 2026-07-28.
pub const SERVE_STATELESS: Column = Column::Gateway(Gateway::McpvisorStateless);

impl GatewayReport {
    /// Builds the section from `m`.
    pub fn new(m: &GatewayMeasurements, plan: &Plan, peers: &GatewayPeers) -> GatewayReport {
        let mut rows = Vec::new();
        for subject in [SERVE, SERVE_STATELESS] {
            for figure in GATEWAY_FIGURES {
                rows.push(row(m, figure, subject, &GATEWAY_COLUMNS));
            }
        }
        rows.push(row(
            m,
            GatewayFigure::CliCall,
            Column::CliAttached,
            &[Column::CliAttached, Column::CliOneShot],
        ));
        rows.retain(|r| !r.cells.is_empty());
        let mut versions = BTreeMap::new();
        // One line per package: the 2026-07-28 columns are the same gateways.
        for g in Gateway::PEERS.into_iter().filter(|g| !g.stateless()) {
            let v = peers.version(g).unwrap_or_else(|| "not installed".into());
            versions.insert(g.name(), v);
        }
        GatewayReport {
            date: utc_now(),
            load_average: Machine::detect().load_average,
            versions,
            plan: plan.clone(),
            targets: targets::check_gateway(&rows),
            rows,
            notes: m.notes().to_vec(),
        }
    }

    /// Puts the section into `dir/BENCHMARKS.md` (replacing an earlier one,
    /// else at the end) and under `"gateway"` in `dir/benchmarks.json`.
    pub fn splice_into(&self, dir: &Path, versions: &str) -> anyhow::Result<()> {
        SECTION.splice_into(dir, &render(self, versions), &serde_json::to_value(self)?)
    }
}

fn row(
    m: &GatewayMeasurements,
    figure: GatewayFigure,
    subject: Column,
    columns: &[Column],
) -> GatewayRow {
    let rounds = |c| m.rounds(figure, c);
    let cells = columns
        .iter()
        .filter_map(|&c| Some((c, cell(rounds(c)?)?)))
        .collect();
    let ratios = columns
        .iter()
        .filter(|&&c| c != subject)
        .filter_map(|&c| Some((c, paired_ratio(rounds(subject)?, rounds(c)?)?)))
        .collect();
    // The best peer at the subject's revision in each round, then the subject over it.
    let era = match subject {
        Column::Gateway(g) => Some(g.stateless()),
        _ => None,
    };
    let best: BTreeMap<usize, f64> = rounds(subject)
        .map(|s| {
            s.keys()
                .filter_map(|&round| {
                    let values = Gateway::PEERS
                        .iter()
                        .filter(|g| Some(g.stateless()) == era)
                        .filter_map(|&g| rounds(Column::Gateway(g))?.get(&round).copied())
                        .filter(|v| v.is_finite());
                    let best = if figure.higher_is_better() {
                        values.reduce(f64::max)
                    } else {
                        values.reduce(f64::min)
                    };
                    Some((round, best?))
                })
                .collect()
        })
        .unwrap_or_default();
    let per_best_peer = if era.is_some() {
        rounds(subject).and_then(|s| paired_ratio(s, &best))
    } else {
        None
    };
    GatewayRow {
        figure,
        subject,
        label: figure.label(),
        unit: figure.unit(),
        cells,
        ratios,
        per_best_peer,
    }
}

fn cell(rounds: &BTreeMap<usize, f64>) -> Option<Cell> {
    let values: Vec<f64> = rounds.values().copied().collect();
    Some(Cell {
        median: median(&values)?,
        rounds: values,
    })
}

fn paired_ratio(a: &BTreeMap<usize, f64>, b: &BTreeMap<usize, f64>) -> Option<f64> {
    let ratios: Vec<f64> = a
        .iter()
        .filter_map(|(round, x)| b.get(round).map(|y| x / y))
        .filter(|r| r.is_finite())
        .collect();
    median(&ratios)
}

/// The section as markdown, between [`START`] and [`END`]; `versions` names
/// mcpvisor's build (and the node that ran the peers).
pub fn render(report: &GatewayReport, versions: &str) -> String {
    let mut out = String::new();
    let p = &report.plan;
    let peers: Vec<String> = report
        .versions
        .iter()
        .map(|(name, v)| format!("{name} {v}"))
        .collect();
    let _ = writeln!(
        out,
        "{START}\n## Gateway: `mcpvisor serve` against FastMCP, ContextForge, supergateway, mcp-proxy and mcp-hub\n\n\
         Generated by `{COMMAND}` (after `cargo build --release -p mcpvisor-cli` and \
         `bash bench/peers/install.sh`) on {}; load average at the end of the run {} \
         (1, 5, 15 min). Each value is the median over {} rounds (the gateways and the direct \
         call take turns in an order rotated every round), and each ratio is the median of the \
         per-round ratios. The machine is shared and noisy (2 cores for the client, the gateway \
         and the upstream together); read the ratios.\n\n\
         - Versions: {versions}; {}\n\
         - Plan: {} sequential calls after {} warm-up calls; {} calls in flight for {:.0} s; \
         {} `mcpvisor call` runs of each kind per round\n",
        report.date,
        report.load_average,
        p.rounds,
        peers.join("; "),
        p.calls,
        p.warmup,
        p.depth,
        p.window.as_secs_f64(),
        p.cli_runs,
    );
    out.push_str(SETUP);
    values_table(&mut out, report);
    ratios_table(&mut out, report);
    if let Some(row) = report
        .rows
        .iter()
        .find(|r| r.figure == GatewayFigure::CliCall)
    {
        out.push_str(
            "\n| figure | attached to a running serve | one-shot (`--no-attach`) | attached/one-shot |\n\
             |---|---:|---:|---:|\n",
        );
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            row.label,
            value(row, Column::CliAttached),
            value(row, Column::CliOneShot),
            ratio(row.ratio(Column::CliOneShot))
        );
    }
    out.push_str("\n### Gateway targets\n\n");
    markdown::targets(&mut out, &report.targets);
    out.push_str(HOW);
    if !report.notes.is_empty() {
        out.push_str("\nNotes from this run:\n\n");
        for note in &report.notes {
            let _ = writeln!(out, "- {note}");
        }
    }
    out.push_str(END);
    out.push('\n');
    out
}

fn column_name(column: Column) -> &'static str {
    match column {
        Column::Gateway(Gateway::McpHub) => "mcp-hub (REST)",
        Column::Gateway(g) => g.name(),
        Column::Direct => "direct Host::call",
        Column::CliAttached => "`mcpvisor call`, attached",
        Column::CliOneShot => "`mcpvisor call`, one-shot",
    }
}

/// One line per gateway, one column per figure.
fn values_table(out: &mut String, report: &GatewayReport) {
    let rows: Vec<&GatewayRow> = report
        .rows
        .iter()
        .filter(|r| r.subject == SERVE && r.figure != GatewayFigure::CliCall)
        .collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.label).collect();
    let _ = writeln!(
        out,
        "\n| gateway | {} |\n|---|{}",
        labels.join(" | "),
        "---:|".repeat(rows.len())
    );
    for column in GATEWAY_COLUMNS {
        let cells: Vec<String> = rows.iter().map(|r| value(r, column)).collect();
        let _ = writeln!(out, "| {} | {} |", column_name(column), cells.join(" | "));
    }
}

/// One line per figure and subject (serve at each revision), one column per
/// other gateway: the subject's value over the other's.
fn ratios_table(out: &mut String, report: &GatewayReport) {
    let others: Vec<Column> = GATEWAY_COLUMNS.to_vec();
    let names: Vec<String> = others
        .iter()
        .map(|&c| format!("/ {}", column_name(c)))
        .collect();
    let _ = writeln!(
        out,
        "\n| ratio | / best peer at the same revision | {} |\n|---|---:|{}",
        names.join(" | "),
        "---:|".repeat(others.len())
    );
    for row in report
        .rows
        .iter()
        .filter(|r| r.figure != GatewayFigure::CliCall)
    {
        let cells: Vec<String> = others
            .iter()
            .map(|&c| {
                if c == row.subject {
                    "—".into()
                } else {
                    ratio(row.ratio(c))
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "| {}: {} | {} | {} |",
            row.label,
            column_name(row.subject),
            ratio(row.per_best_peer),
            cells.join(" | ")
        );
    }
}

fn value(row: &GatewayRow, column: Column) -> String {
    row.cell(column).map_or("n/a".into(), |c| {
        let v = c.median;
        let n = match row.figure {
            GatewayFigure::Throughput => format!("{v:.0}"),
            _ if v >= 100.0 => format!("{v:.0}"),
            _ => format!("{v:.1}"),
        };
        format!("{n} {}", row.unit)
    })
}

fn ratio(r: Option<f64>) -> String {
    r.map_or("n/a".to_string(), |r| format!("{r:.2}×"))
}

const SETUP: &str = "\
Every gateway runs as its own process in front of the same upstream, the rmcp echo server \
over stdio (this harness binary), on a loopback port, started afresh for each round: \
**mcpvisor serve** (`mcpvisor --config .mcp.json serve --http 127.0.0.1:P`, the one entry \
approved with `mcpvisor enable`; the tool is `mcp__echo__echo`), **FastMCP proxy** \
(`fastmcp run mcp.json --transport http --port P`, the same one-entry configuration), \
**ContextForge translate** (`python -m mcpgateway.translate --stdio CMD \
--expose-streamable-http --port P`: ContextForge's bridge, what it puts a stdio server \
behind), **supergateway** (`--stdio CMD --outputTransport streamableHttp --stateful \
--logLevel none`), **mcp-proxy** (`--host 127.0.0.1 --port P -- CMD`) and **mcp-hub** \
(`--port P --config hub.json`); each answers in its default way (SSE or JSON). One client \
measures them all: the harness's HTTP floor client (kept-alive reqwest, a preformatted \
`tools/call` posted, the answer read whole and checked for a result that is not an error). \
The gateways are reached over Streamable HTTP with one session at 2025-03-26; mcpvisor serve \
and the FastMCP proxy are also called at **2026-07-28** (the rows so named): no session, every \
call carrying its `_meta` (revision, client capabilities and information) and the \
`Mcp-Method`/`Mcp-Name` headers, as that revision asks. \
mcp-hub serves MCP only over the older HTTP+SSE transport, so it is reached through its REST \
route `POST /api/servers/tools` (`{server_name, tool, arguments}`), the same client posting a \
fixed body: a lighter path than its MCP one, which if anything flatters mcp-hub. \
The **direct Host::call** is the `mcpvisor` library in the harness process calling the same \
upstream (no gateway, no HTTP): what the gateway adds on top of the supervisor. A ratio's \
**best peer** is the best third-party gateway called at the same revision in that round.
";

const HOW: &str = "
How these are taken:

- **p50/p99, throughput**: as in the tables above, through the gateway: sequential calls \
after the warm-up, then 64 kept in flight for the window (the client opens as many kept-alive \
connections as it needs, all in the one session).
- **Gateway CPU per call**: utime + stime of the gateway process itself (all its threads, from \
`/proc/PID/stat`, in 10 ms ticks) over the sequential calls, divided by their number; neither \
the upstream's CPU nor the client's is included.
- **Gateway RSS**: `VmRSS` of the gateway process after the throughput window (the upstream \
not included).
- **`mcpvisor call`**: the process from spawn to exit, `mcpvisor --config C --home H call \
mcp__echo__echo '{\"text\":…}'`, attached to a `mcpvisor serve` for the same configuration \
through its local socket, and with `--no-attach`, which starts the server, initializes it, \
calls and stops it; the two kinds alternate, the median of each per round.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> GatewayMeasurements {
        let mut m = GatewayMeasurements::default();
        let serve = Column::Gateway(Gateway::Mcpvisor);
        for round in 0..2 {
            m.record(GatewayFigure::P50, serve, round, 300.0);
            m.record(GatewayFigure::P50, Column::Direct, round, 100.0);
            m.record(GatewayFigure::Throughput, serve, round, 20_000.0);
            for (g, p50, calls) in [
                (Gateway::Supergateway, 800.0, 2_000.0),
                (Gateway::McpHub, 600.0, 4_000.0),
            ] {
                m.record(GatewayFigure::P50, Column::Gateway(g), round, p50);
                m.record(GatewayFigure::Throughput, Column::Gateway(g), round, calls);
            }
            // At 2026-07-28 the best peer is the one called the same way,
            // though mcp-hub's figures are better.
            m.record(GatewayFigure::P50, SERVE_STATELESS, round, 350.0);
            m.record(GatewayFigure::Throughput, SERVE_STATELESS, round, 10_000.0);
            let fastmcp = Column::Gateway(Gateway::FastMcpStateless);
            m.record(GatewayFigure::P50, fastmcp, round, 700.0);
            m.record(GatewayFigure::Throughput, fastmcp, round, 1_000.0);
            m.record(GatewayFigure::CliCall, Column::CliAttached, round, 4.0);
            m.record(GatewayFigure::CliCall, Column::CliOneShot, round, 8.0);
        }
        m
    }

    #[test]
    fn ratios_take_the_best_peer_of_each_round() {
        let report = GatewayReport::new(
            &measured(),
            &Plan::quick(),
            &GatewayPeers::new("/nonexistent".into()),
        );
        let row = |f| {
            let serve = |r: &&GatewayRow| r.subject == SERVE || f == GatewayFigure::CliCall;
            report
                .rows
                .iter()
                .filter(serve)
                .find(|r| r.figure == f)
                .unwrap()
        };
        let stateless = |f| {
            let of = |r: &&GatewayRow| r.subject == SERVE_STATELESS && r.figure == f;
            report.rows.iter().find(of).unwrap()
        };
        assert_eq!(stateless(GatewayFigure::P50).per_best_peer, Some(0.5));
        assert_eq!(
            stateless(GatewayFigure::Throughput).per_best_peer,
            Some(10.0)
        );
        assert_eq!(row(GatewayFigure::P50).per_best_peer, Some(0.5));
        assert_eq!(row(GatewayFigure::Throughput).per_best_peer, Some(5.0));
        assert_eq!(row(GatewayFigure::P50).ratio(Column::Direct), Some(3.0));
        assert_eq!(
            row(GatewayFigure::CliCall).ratio(Column::CliOneShot),
            Some(0.5)
        );
        let met: Vec<Option<bool>> = report.targets.iter().map(|t| t.met).collect();
        assert_eq!(
            met,
            [
                Some(true),
                Some(true),
                Some(true),
                Some(true),
                Some(false),
                Some(true)
            ]
        );
    }

    #[test]
    fn splicing_replaces_the_section_and_keeps_the_rest() {
        let dir = std::env::temp_dir().join(format!("gateway-splice-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("BENCHMARKS.md"),
            "# Benchmarks\n\nearlier figures\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("benchmarks.json"),
            "{\n  \"rows\": [\n    1\n  ]\n}\n",
        )
        .unwrap();
        let report = GatewayReport::new(
            &measured(),
            &Plan::quick(),
            &GatewayPeers::new("/nonexistent".into()),
        );
        report.splice_into(&dir, "mcpvisor test").unwrap();
        report.splice_into(&dir, "mcpvisor test").unwrap();
        let md = std::fs::read_to_string(dir.join("BENCHMARKS.md")).unwrap();
        assert!(md.starts_with("# Benchmarks\n\nearlier figures\n"));
        assert_eq!(md.matches(START).count(), 1);
        assert_eq!(md.matches(END).count(), 1);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("benchmarks.json")).unwrap())
                .unwrap();
        assert_eq!(json["rows"][0], 1);
        assert_eq!(json.as_object().unwrap().len(), 2);
        assert!(json["gateway"]["rows"].is_array());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
