//! The report: every figure with its ratios, the targets, the machine.
//!
//! Written twice from one [`Report`]: `benchmarks.json` (serde) and
//! `BENCHMARKS.md` ([`markdown`]).

#[cfg(feature = "cluster")]
pub mod cluster;
pub mod curve;
pub mod gateway;
pub mod machine;
pub mod markdown;
pub mod soak;
pub mod splice;
pub mod svg;
pub mod targets;

/// Where the cluster section sits: written by `harness cluster` (the
/// `cluster` feature), carried over by every full run.
pub const CLUSTER_SECTION: splice::Section = splice::Section {
    start: "<!-- cluster figures: written by `harness cluster` -->",
    end: "<!-- end of cluster figures -->",
    key: "cluster",
};

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::clients::Client;
use crate::figures::{Figure, Measurements, Plan};
use crate::stats::median;
use curve::CurveReport;
use gateway::GatewayReport;
use machine::{Machine, Versions};
use targets::TargetCheck;

/// Everything a run produced.
#[derive(Debug, Serialize)]
pub struct Report {
    /// When it ran (UTC).
    pub date: String,
    /// The command that produced it.
    pub command: String,
    /// Where it ran.
    pub machine: Machine,
    /// What ran.
    pub versions: Versions,
    /// How much was measured.
    pub plan: Plan,
    /// One row per figure and server.
    pub rows: Vec<Row>,
    /// The targets, checked.
    pub targets: Vec<TargetCheck>,
    /// Failures and missing servers.
    pub notes: Vec<String>,
    /// `mcpvisor serve` against the other gateways, if measured.
    pub gateway: Option<GatewayReport>,
    /// What the fault shim costs a host with no fault set, if measured.
    pub shim: Option<crate::figures::shim::ShimCost>,
    /// The cost curve, if measured.
    pub curve: Option<CurveReport>,
}

/// One figure against one server, for every client.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Which figure.
    pub figure: Figure,
    /// Its label.
    pub label: &'static str,
    /// Its unit.
    pub unit: &'static str,
    /// The server's key.
    pub server: &'static str,
    /// The server's label.
    pub server_label: &'static str,
    /// What the floor column is for this server.
    pub floor_kind: &'static str,
    /// mcpvisor's value, if measured.
    pub mcpvisor: Option<Cell>,
    /// rmcp's value, if measured.
    pub rmcp: Option<Cell>,
    /// The floor's value, if measured.
    pub floor: Option<Cell>,
    /// The Tokio pipe floor's value (stdio), if measured.
    pub tokio_floor: Option<Cell>,
    /// Median over rounds of mcpvisor / rmcp in the same round.
    pub mcpvisor_per_rmcp: Option<f64>,
    /// Median over rounds of mcpvisor / floor in the same round.
    pub mcpvisor_per_floor: Option<f64>,
    /// Median over rounds of mcpvisor / Tokio pipe floor in the same round.
    pub mcpvisor_per_tokio_floor: Option<f64>,
}

/// One client's value: the median, and each round's.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Median over rounds.
    pub median: f64,
    /// Value of each round, in round order.
    pub rounds: Vec<f64>,
}

impl Row {
    /// The cell of `client`.
    pub fn cell(&self, client: Client) -> Option<&Cell> {
        match client {
            Client::Mcpvisor => self.mcpvisor.as_ref(),
            Client::Rmcp => self.rmcp.as_ref(),
            Client::Floor => self.floor.as_ref(),
            Client::TokioFloor => self.tokio_floor.as_ref(),
        }
    }
}

impl Report {
    /// Builds the report of `m`.
    pub fn new(
        m: &Measurements,
        plan: &Plan,
        machine: Machine,
        versions: Versions,
        gateway: Option<GatewayReport>,
    ) -> Report {
        let rows = rows(m);
        let targets = targets::check(&rows);
        Report {
            date: machine::utc_now(),
            command: "cargo run --release -p mcpvisor-bench --bin harness".into(),
            machine,
            versions,
            plan: plan.clone(),
            rows,
            targets,
            notes: m.notes().to_vec(),
            gateway,
            shim: None,
            curve: None,
        }
    }

    /// The row of `figure` against `server`.
    pub fn row(&self, figure: Figure, server: &str) -> Option<&Row> {
        find(&self.rows, figure, server)
    }

    /// Writes `BENCHMARKS.md` and `benchmarks.json` into `dir`, with the
    /// curve's charts. The soak and cluster sections of the files already
    /// there (each is measured alone) are carried over, and so is the curve section when this run
    /// did not measure the curve.
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)?;
        let soak = splice::keep(dir, &soak::SECTION);
        let cluster = splice::keep(dir, &CLUSTER_SECTION);
        let earlier_curve = match self.curve {
            Some(_) => None,
            None => splice::keep(dir, &curve::SECTION),
        };
        std::fs::write(
            dir.join("benchmarks.json"),
            serde_json::to_string_pretty(self)? + "\n",
        )?;
        std::fs::write(dir.join("BENCHMARKS.md"), markdown::render(self))?;
        if let Some(curve) = &self.curve {
            curve.write_charts(dir)?;
        }
        if let Some(curve) = earlier_curve {
            splice::carry_over(dir, &curve::SECTION, &curve)?;
        }
        if let Some(soak) = soak {
            splice::carry_over(dir, &soak::SECTION, &soak)?;
        }
        if let Some(cluster) = cluster {
            splice::carry_over(dir, &CLUSTER_SECTION, &cluster)?;
        }
        Ok(())
    }
}

pub(crate) fn find<'a>(rows: &'a [Row], figure: Figure, server: &str) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.figure == figure && r.server == server)
}

fn rows(m: &Measurements) -> Vec<Row> {
    let mut rows = Vec::new();
    for figure in Figure::ALL {
        for server in m.servers() {
            let rounds = |client| m.rounds(figure, server.key, client);
            if Client::ALL.iter().all(|&c| rounds(c).is_none()) {
                continue;
            }
            let mcpvisor = rounds(Client::Mcpvisor);
            rows.push(Row {
                figure,
                label: figure.label(),
                unit: figure.unit(),
                server: server.key,
                server_label: server.label,
                floor_kind: if server.http {
                    "kept-alive POST"
                } else {
                    "cat through a pipe"
                },
                mcpvisor: mcpvisor.and_then(cell),
                rmcp: rounds(Client::Rmcp).and_then(cell),
                floor: rounds(Client::Floor).and_then(cell),
                tokio_floor: rounds(Client::TokioFloor).and_then(cell),
                mcpvisor_per_rmcp: paired_ratio(mcpvisor, rounds(Client::Rmcp)),
                mcpvisor_per_floor: paired_ratio(mcpvisor, rounds(Client::Floor)),
                mcpvisor_per_tokio_floor: paired_ratio(mcpvisor, rounds(Client::TokioFloor)),
            });
        }
    }
    rows
}

fn cell(rounds: &BTreeMap<usize, f64>) -> Option<Cell> {
    let values: Vec<f64> = rounds.values().copied().collect();
    Some(Cell {
        median: median(&values)?,
        rounds: values,
    })
}

/// The median over rounds of `a / b` within each round both were measured in.
fn paired_ratio(a: Option<&BTreeMap<usize, f64>>, b: Option<&BTreeMap<usize, f64>>) -> Option<f64> {
    let (a, b) = (a?, b?);
    let ratios: Vec<f64> = a
        .iter()
        .filter_map(|(round, x)| b.get(round).map(|y| x / y))
        .filter(|r| r.is_finite())
        .collect();
    median(&ratios)
}
