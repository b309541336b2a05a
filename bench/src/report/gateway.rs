//! The gateway section: `mcpvisor serve` against supergateway, mcp-proxy and
//! mcp-hub, a direct `Host::call`, and the command line.
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

/// One figure for every column.
#[derive(Debug, Clone, Serialize)]
pub struct GatewayRow {
    /// Which figure.
    pub figure: GatewayFigure,
    /// Its label.
    pub label: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// Each column's value.
    pub cells: Vec<(Column, Cell)>,
    /// mcpvisor serve (or the attached CLI) / each other column: the median of per-round ratios.
    pub ratios: Vec<(Column, f64)>,
    /// mcpvisor serve / the best of the three peers in the same round, median over rounds.
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

const GATEWAY_COLUMNS: [Column; 6] = [
    Column::Gateway(Gateway::Mcpvisor),
    Column::Gateway(Gateway::McpvisorStateless),
    Column::Gateway(Gateway::Supergateway),
    Column::Gateway(Gateway::McpProxy),
    Column::Gateway(Gateway::McpHub),
    Column::Direct,
];

const SERVE: Column = Column::Gateway(Gateway::Mcpvisor);

impl GatewayReport {
    /// Builds the section from `m`.
    pub fn new(m: &GatewayMeasurements, plan: &Plan, peers: &GatewayPeers) -> GatewayReport {
        let mut rows = Vec::new();
        for figure in GATEWAY_FIGURES {
            rows.push(row(m, figure, SERVE, &GATEWAY_COLUMNS));
        }
        rows.push(row(
            m,
            GatewayFigure::CliCall,
            Column::CliAttached,
            &[Column::CliAttached, Column::CliOneShot],
        ));
        rows.retain(|r| !r.cells.is_empty());
        let mut versions = BTreeMap::new();
        for g in Gateway::PEERS {
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
    // The best peer of each round, then the subject over it.
    let best: BTreeMap<usize, f64> = rounds(subject)
        .map(|s| {
            s.keys()
                .filter_map(|&round| {
                    let values = Gateway::PEERS
                        .iter()
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
    let per_best_peer = if subject == SERVE {
        rounds(subject).and_then(|s| paired_ratio(s, &best))
    } else {
        None
    };
    GatewayRow {
        figure,
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
        "{START}\n## Gateway: `mcpvisor serve` against supergateway, mcp-proxy and mcp-hub\n\n\
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
    out.push_str(
        "\n| figure | mcpvisor serve | supergateway | mcp-proxy | mcp-hub (REST) | direct Host::call \
         | serve/best peer | serve/supergateway | serve/mcp-proxy | serve/mcp-hub | serve/direct |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in report
        .rows
        .iter()
        .filter(|r| r.figure != GatewayFigure::CliCall)
    {
        let cells: Vec<String> = GATEWAY_COLUMNS.iter().map(|&c| value(row, c)).collect();
        let ratios: Vec<String> = GATEWAY_COLUMNS[1..]
            .iter()
            .map(|&c| ratio(row.ratio(c)))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            row.label,
            cells.join(" | "),
            ratio(row.per_best_peer),
            ratios.join(" | ")
        );
    }
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
approved with `mcpvisor enable`; the tool is `mcp__echo__echo`), **supergateway** \
(`--stdio CMD --outputTransport streamableHttp --stateful --logLevel none`), **mcp-proxy** \
(`--host 127.0.0.1 --port P -- CMD`) and **mcp-hub** (`--port P --config hub.json`). One client \
measures them all: the harness's HTTP floor client (kept-alive reqwest, a preformatted \
`tools/call` posted, the answer read whole and checked for a result that is not an error). \
supergateway, mcp-proxy and mcpvisor serve are reached over Streamable HTTP with one session; \
mcp-hub serves MCP only over the older HTTP+SSE transport, so it is reached through its REST \
route `POST /api/servers/tools` (`{server_name, tool, arguments}`), the same client posting a \
fixed body: a lighter path than its MCP one, which if anything flatters mcp-hub. \
The **direct Host::call** is the `mcpvisor` library in the harness process calling the same \
upstream (no gateway, no HTTP): what the gateway adds on top of the supervisor.
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
        let row = |f| report.rows.iter().find(|r| r.figure == f).unwrap();
        assert_eq!(row(GatewayFigure::P50).per_best_peer, Some(0.5));
        assert_eq!(row(GatewayFigure::Throughput).per_best_peer, Some(5.0));
        assert_eq!(row(GatewayFigure::P50).ratio(Column::Direct), Some(3.0));
        assert_eq!(
            row(GatewayFigure::CliCall).ratio(Column::CliOneShot),
            Some(0.5)
        );
        let met: Vec<Option<bool>> = report.targets.iter().map(|t| t.met).collect();
        assert_eq!(met, [Some(true), Some(true), Some(false), Some(true)]);
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
