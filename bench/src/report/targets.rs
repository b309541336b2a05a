//! The targets, checked against the figures of the same run.

use serde::Serialize;

use super::gateway::{GatewayRow, SERVE, SERVE_STATELESS};
use super::{Row, find};
use crate::figures::Figure;
use crate::gateway::{Column, GatewayFigure};

/// Whether a figure must stay under or reach its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// measured ≤ limit.
    AtMost,
    /// measured ≥ limit.
    AtLeast,
}

/// One target and how the run did.
#[derive(Debug, Clone, Serialize)]
pub struct TargetCheck {
    /// The target as the issue states it.
    pub target: &'static str,
    /// What is compared: a ratio (×) or an absolute value with its unit.
    pub quantity: &'static str,
    /// The measured value; `None` if it could not be measured.
    pub measured: Option<f64>,
    /// The bound.
    pub bound: Bound,
    /// The limit.
    pub limit: f64,
    /// Whether it is met; `None` if not measured.
    pub met: Option<bool>,
    /// By how much it is missed, as a fraction of the limit (0.2 = 20 % past it).
    pub missed_by: Option<f64>,
}

struct Spec {
    target: &'static str,
    quantity: &'static str,
    figure: Figure,
    server: &'static str,
    value: fn(&Row) -> Option<f64>,
    bound: Bound,
    limit: f64,
}

fn per_rmcp(r: &Row) -> Option<f64> {
    r.mcpvisor_per_rmcp
}

fn per_floor(r: &Row) -> Option<f64> {
    r.mcpvisor_per_floor
}

fn per_tokio_floor(r: &Row) -> Option<f64> {
    r.mcpvisor_per_tokio_floor
}

fn mcpvisor_alone(r: &Row) -> Option<f64> {
    r.mcpvisor.as_ref().map(|c| c.median)
}

const SPECS: [Spec; 15] = [
    Spec {
        target: "stdio, rmcp echo server: host memory per idle connection ≤ 0.8 × rmcp's",
        quantity: "memory mcpvisor/rmcp (×)",
        figure: Figure::MemoryPerConnection,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 0.8,
    },
    Spec {
        target: "Streamable HTTP, server-everything: connect to ready ≤ 1.0 × rmcp",
        quantity: "connect-to-ready mcpvisor/rmcp (×)",
        figure: Figure::SpawnToReady,
        server: "everything-http",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.0,
    },
    Spec {
        target: "Streamable HTTP, Python SDK: connect to ready ≤ 1.0 × rmcp",
        quantity: "connect-to-ready mcpvisor/rmcp (×)",
        figure: Figure::SpawnToReady,
        server: "python-http-json",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.0,
    },
    Spec {
        target: "100 stdio servers to all-ready ≤ 1.0 × rmcp spawning them in parallel",
        quantity: "all-ready mcpvisor/rmcp (×)",
        figure: Figure::FleetReady,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.0,
    },
    Spec {
        target: "1,000 stdio servers to all-ready ≤ 1.1 × rmcp",
        quantity: "all-ready mcpvisor/rmcp (×)",
        figure: Figure::BigFleetReady,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.1,
    },
    Spec {
        target: "host CPU to start 100 servers ≤ 1.2 × rmcp's",
        quantity: "CPU mcpvisor/rmcp (×)",
        figure: Figure::FleetCpu,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.2,
    },
    Spec {
        target: "host CPU to start 1,000 servers ≤ 1.2 × rmcp's",
        quantity: "CPU mcpvisor/rmcp (×)",
        figure: Figure::BigFleetCpu,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 1.2,
    },
    Spec {
        target: "stdio, rmcp echo server: call p50 ≤ 1.15 × the Tokio pipe floor",
        quantity: "p50 mcpvisor/tokio floor (×)",
        figure: Figure::P50,
        server: "rmcp-echo",
        value: per_tokio_floor,
        bound: Bound::AtMost,
        limit: 1.15,
    },
    Spec {
        target: "stdio, rmcp echo server: call p50 ≤ 0.85 × rmcp",
        quantity: "p50 mcpvisor/rmcp (×)",
        figure: Figure::P50,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtMost,
        limit: 0.85,
    },
    Spec {
        target: "stdio, rmcp echo server: 64-in-flight throughput ≥ 1.5 × rmcp",
        quantity: "throughput mcpvisor/rmcp (×)",
        figure: Figure::Throughput,
        server: "rmcp-echo",
        value: per_rmcp,
        bound: Bound::AtLeast,
        limit: 1.5,
    },
    Spec {
        target: "HTTP, server-everything: p50 ≤ 1.1 × a kept-alive connection's floor",
        quantity: "p50 mcpvisor/floor (×)",
        figure: Figure::P50,
        server: "everything-http",
        value: per_floor,
        bound: Bound::AtMost,
        limit: 1.1,
    },
    Spec {
        target: "HTTP, Python JSON: p50 ≤ 1.1 × a kept-alive connection's floor",
        quantity: "p50 mcpvisor/floor (×)",
        figure: Figure::P50,
        server: "python-http-json",
        value: per_floor,
        bound: Bound::AtMost,
        limit: 1.1,
    },
    Spec {
        target: "HTTP client ceiling, rmcp echo server over HTTP (not the bottleneck): 64-in-flight throughput ≥ 1.5 × rmcp's default client",
        quantity: "throughput mcpvisor/rmcp (×)",
        figure: Figure::Throughput,
        server: "rmcp-http",
        value: per_rmcp,
        bound: Bound::AtLeast,
        limit: 1.5,
    },
    Spec {
        target: "HTTP client ceiling, rmcp echo server over HTTP (not the bottleneck): p50 ≤ 1.1 × a kept-alive connection's floor",
        quantity: "p50 mcpvisor/floor (×)",
        figure: Figure::P50,
        server: "rmcp-http",
        value: per_floor,
        bound: Bound::AtMost,
        limit: 1.1,
    },
    Spec {
        target: "Streamable HTTP: ≤ 64 KiB host memory per idle connection with its GET stream",
        quantity: "KiB per connection",
        figure: Figure::MemoryPerHttpConnection,
        server: "rmcp-http-sessions",
        value: mcpvisor_alone,
        bound: Bound::AtMost,
        limit: 64.0,
    },
];

/// Checks every target against `rows`.
pub fn check(rows: &[Row]) -> Vec<TargetCheck> {
    SPECS
        .iter()
        .map(|spec| {
            let measured = find(rows, spec.figure, spec.server).and_then(spec.value);
            checked(spec.target, spec.quantity, measured, spec.bound, spec.limit)
        })
        .collect()
}

/// The gateway targets, against the gateway figures of the same run.
pub fn check_gateway(rows: &[GatewayRow]) -> Vec<TargetCheck> {
    let row = |figure, subject| {
        rows.iter()
            .find(|r| r.figure == figure && r.subject == subject)
    };
    let best = |figure, subject| row(figure, subject).and_then(|r| r.per_best_peer);
    let direct = row(GatewayFigure::P50, SERVE).and_then(|r| r.ratio(Column::Direct));
    let attached = row(GatewayFigure::CliCall, Column::CliAttached)
        .and_then(|r| r.cell(Column::CliAttached))
        .map(|c| c.median);
    vec![
        checked(
            "gateway: 64-in-flight throughput through mcpvisor serve ≥ 3 × the best peer (a session at 2025-03-26)",
            "throughput serve/best peer (×)",
            best(GatewayFigure::Throughput, SERVE),
            Bound::AtLeast,
            3.0,
        ),
        checked(
            "gateway: p50 through mcpvisor serve ≤ 0.5 × the best peer (a session at 2025-03-26)",
            "p50 serve/best peer (×)",
            best(GatewayFigure::P50, SERVE),
            Bound::AtMost,
            0.5,
        ),
        checked(
            "gateway at 2026-07-28: 64-in-flight throughput through mcpvisor serve ≥ 3 × the best peer called at 2026-07-28",
            "throughput serve/best peer, 2026-07-28 (×)",
            best(GatewayFigure::Throughput, SERVE_STATELESS),
            Bound::AtLeast,
            3.0,
        ),
        checked(
            "gateway at 2026-07-28: p50 through mcpvisor serve ≤ 0.5 × the best peer called at 2026-07-28",
            "p50 serve/best peer, 2026-07-28 (×)",
            best(GatewayFigure::P50, SERVE_STATELESS),
            Bound::AtMost,
            0.5,
        ),
        checked(
            "gateway: p50 through mcpvisor serve ≤ 2.5 × a direct Host::call to the same server",
            "p50 serve/direct (×)",
            direct,
            Bound::AtMost,
            2.5,
        ),
        checked(
            "CLI: attached `mcpvisor call`, start to exit, median ≤ 30 ms",
            "attached median (ms)",
            attached,
            Bound::AtMost,
            30.0,
        ),
    ]
}

fn checked(
    target: &'static str,
    quantity: &'static str,
    measured: Option<f64>,
    bound: Bound,
    limit: f64,
) -> TargetCheck {
    let met = measured.map(|v| match bound {
        Bound::AtMost => v <= limit,
        Bound::AtLeast => v >= limit,
    });
    let missed_by = measured
        .filter(|_| met == Some(false))
        .map(|v| match bound {
            Bound::AtMost => v / limit - 1.0,
            Bound::AtLeast => 1.0 - v / limit,
        });
    TargetCheck {
        target,
        quantity,
        measured,
        bound,
        limit,
        met,
        missed_by,
    }
}
