//! `mcpvisor serve` as a gateway, against the gateways people use today.
//!
//! Each gateway runs as its own process in front of the same stdio upstream,
//! the rmcp echo server (this binary with [`crate::servers::RMCP_ECHO_ARG`]),
//! and one client measures them all: the HTTP floor client
//! ([`crate::clients::HttpFloor`]: kept-alive reqwest, a preformatted
//! `tools/call`, the answer read whole), so the ratios compare gateways and
//! not clients. mcp-hub offers only the older HTTP+SSE transport for MCP, so
//! it is reached through its REST route `POST /api/servers/tools` with the same
//! client. The same rounds also time a direct [`mcpvisor::Host::call`] to the
//! same upstream (in-process) and the `mcpvisor call` command line, attached to
//! a running serve and one-shot.

pub mod cli;
pub mod process;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::clients::{Client, Connection};
use crate::figures::{Plan, rotated};
use crate::servers::ServerTarget;
use crate::stats::{median, percentile_us};
use process::GatewayProcess;

/// A gateway fronting the stdio upstream over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gateway {
    /// `mcpvisor serve --http`.
    Mcpvisor,
    /// `mcpvisor serve --http` called at MCP 2026-07-28 (no session).
    McpvisorStateless,
    /// supergateway 4.0.0, stdio → Streamable HTTP, stateful.
    Supergateway,
    /// mcp-proxy 6.7.19 (TypeScript), Streamable HTTP.
    McpProxy,
    /// mcp-hub 4.2.1 through its REST tool-call route.
    McpHub,
    /// FastMCP 4.1.6's proxy (`fastmcp run mcp.json --transport http`), one
    /// session at 2025-03-26.
    FastMcp,
    /// The same proxy called at MCP 2026-07-28 (no session).
    FastMcpStateless,
    /// IBM ContextForge 1.0.7's stdio bridge (`python -m
    /// mcpgateway.translate --expose-streamable-http`), what it runs a stdio
    /// server behind.
    ContextForge,
}

impl Gateway {
    /// Every gateway, in report order.
    pub const ALL: [Gateway; 8] = [
        Gateway::Mcpvisor,
        Gateway::McpvisorStateless,
        Gateway::FastMcp,
        Gateway::FastMcpStateless,
        Gateway::ContextForge,
        Gateway::Supergateway,
        Gateway::McpProxy,
        Gateway::McpHub,
    ];

    /// The third-party ones.
    pub const PEERS: [Gateway; 6] = [
        Gateway::FastMcp,
        Gateway::FastMcpStateless,
        Gateway::ContextForge,
        Gateway::Supergateway,
        Gateway::McpProxy,
        Gateway::McpHub,
    ];

    /// Whether it is called at MCP 2026-07-28 (no session): compared with
    /// gateways called the same way.
    pub fn stateless(self) -> bool {
        matches!(self, Gateway::McpvisorStateless | Gateway::FastMcpStateless)
    }

    /// The report's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Gateway::Mcpvisor => "mcpvisor serve",
            Gateway::McpvisorStateless => "mcpvisor serve, 2026-07-28",
            Gateway::Supergateway => "supergateway",
            Gateway::McpProxy => "mcp-proxy",
            Gateway::McpHub => "mcp-hub",
            Gateway::FastMcp => "FastMCP proxy",
            Gateway::FastMcpStateless => "FastMCP proxy, 2026-07-28",
            Gateway::ContextForge => "ContextForge translate",
        }
    }

    /// Its package (for the third-party ones): npm's, or PyPI's.
    pub fn package(self) -> Option<Package> {
        match self {
            Gateway::Mcpvisor | Gateway::McpvisorStateless => None,
            Gateway::Supergateway => Some(Package::Npm("supergateway")),
            Gateway::McpProxy => Some(Package::Npm("mcp-proxy")),
            Gateway::McpHub => Some(Package::Npm("mcp-hub")),
            Gateway::FastMcp | Gateway::FastMcpStateless => {
                Some(Package::PyPi("fastmcp", "fastmcp"))
            }
            Gateway::ContextForge => {
                Some(Package::PyPi("contextforge", "mcp_contextforge_gateway"))
            }
        }
    }
}

/// Where a third-party gateway comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Package {
    /// An npm package under `node_modules`.
    Npm(&'static str),
    /// A PyPI package: the venv it is in (`venv-<name>`) and its
    /// distribution's name as its `.dist-info` spells it.
    PyPi(&'static str, &'static str),
}

impl Package {
    fn name(self) -> &'static str {
        match self {
            Package::Npm(name) | Package::PyPi(_, name) => name,
        }
    }
}

/// A column of the gateway figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Column {
    /// Through a gateway over HTTP.
    Gateway(Gateway),
    /// `Host::call` in this process, no gateway.
    Direct,
    /// `mcpvisor call` attached to a running serve.
    CliAttached,
    /// `mcpvisor --no-attach call`: starts the server itself.
    CliOneShot,
}

/// A gateway figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayFigure {
    /// Sequential call round trip, median (µs).
    P50,
    /// Sequential call round trip, 99th percentile (µs).
    P99,
    /// Calls per second with `depth` in flight.
    Throughput,
    /// CPU time of the gateway process per sequential call (µs).
    CpuPerCall,
    /// `VmRSS` of the gateway process after the run (MiB).
    Rss,
    /// A `mcpvisor call` from process start to exit, median over the runs (ms).
    CliCall,
}

impl GatewayFigure {
    /// What the report calls it.
    pub fn label(self) -> &'static str {
        match self {
            GatewayFigure::P50 => "call round trip p50",
            GatewayFigure::P99 => "call round trip p99",
            GatewayFigure::Throughput => "throughput, 64 in flight",
            GatewayFigure::CpuPerCall => "gateway CPU per call",
            GatewayFigure::Rss => "gateway RSS after the run",
            GatewayFigure::CliCall => "`mcpvisor call`, start to exit (median)",
        }
    }

    /// Its unit.
    pub fn unit(self) -> &'static str {
        match self {
            GatewayFigure::P50 | GatewayFigure::P99 | GatewayFigure::CpuPerCall => "µs",
            GatewayFigure::Throughput => "calls/s",
            GatewayFigure::Rss => "MiB",
            GatewayFigure::CliCall => "ms",
        }
    }

    /// True where more is better.
    pub fn higher_is_better(self) -> bool {
        self == GatewayFigure::Throughput
    }
}

/// Where the gateways come from.
#[derive(Debug, Clone)]
pub struct GatewaySetup {
    /// The harness binary (the upstream).
    pub exe: PathBuf,
    /// The `mcpvisor` binary.
    pub mcpvisor: PathBuf,
    /// The npm gateways.
    pub peers: GatewayPeers,
}

impl GatewaySetup {
    /// `mcpvisor --config CONFIG --home HOME`, ready for a subcommand.
    pub fn mcpvisor_command(&self, config: &Path, home: &Path) -> Command {
        let mut c = Command::new(&self.mcpvisor);
        c.arg("--config").arg(config).arg("--home").arg(home);
        c
    }

    /// The `mcpvisor` next to this binary (`target/release/mcpvisor`).
    pub fn sibling_mcpvisor(exe: &Path) -> PathBuf {
        exe.with_file_name("mcpvisor")
    }
}

/// The npm gateways installed by `bench/peers/install.sh`.
#[derive(Debug, Clone)]
pub struct GatewayPeers {
    root: PathBuf,
}

impl GatewayPeers {
    /// Gateways installed under `root`.
    pub fn new(root: PathBuf) -> Self {
        GatewayPeers { root }
    }

    /// The bench crate's `peers/`.
    pub fn in_workspace() -> Self {
        GatewayPeers::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("peers"))
    }

    fn module(&self, package: &str) -> PathBuf {
        self.root.join("node_modules").join(package)
    }

    /// supergateway's entry script.
    pub fn supergateway(&self) -> PathBuf {
        self.module("supergateway").join("dist/index.js")
    }

    /// mcp-proxy's entry script.
    pub fn mcp_proxy(&self) -> PathBuf {
        self.module("mcp-proxy").join("dist/bin/mcp-proxy.mjs")
    }

    /// mcp-hub's entry script.
    pub fn mcp_hub(&self) -> PathBuf {
        self.module("mcp-hub").join("dist/cli.js")
    }

    fn venv(&self, name: &str) -> PathBuf {
        self.root.join(format!("venv-{name}"))
    }

    /// FastMCP's command line.
    pub fn fastmcp(&self) -> PathBuf {
        self.venv("fastmcp").join("bin/fastmcp")
    }

    /// The Python that has ContextForge.
    pub fn contextforge_python(&self) -> PathBuf {
        self.venv("contextforge").join("bin/python")
    }

    /// True when `gateway` can run (mcpvisor always can).
    pub fn has(&self, gateway: Gateway) -> bool {
        match gateway {
            Gateway::Mcpvisor | Gateway::McpvisorStateless => true,
            Gateway::Supergateway => self.supergateway().is_file(),
            Gateway::McpProxy => self.mcp_proxy().is_file(),
            Gateway::McpHub => self.mcp_hub().is_file(),
            Gateway::FastMcp | Gateway::FastMcpStateless => self.fastmcp().is_file(),
            Gateway::ContextForge => self.contextforge_python().is_file(),
        }
    }

    /// The installed version of `gateway`'s package.
    pub fn version(&self, gateway: Gateway) -> Option<String> {
        match gateway.package()? {
            Package::Npm(name) => {
                let text = std::fs::read_to_string(self.module(name).join("package.json")).ok()?;
                let value: serde_json::Value = serde_json::from_str(&text).ok()?;
                value["version"].as_str().map(str::to_string)
            }
            package @ Package::PyPi(venv, _) => {
                // `lib/pythonX.Y/site-packages/<name>-<version>.dist-info`.
                let lib = self.venv(venv).join("lib");
                let python = std::fs::read_dir(lib).ok()?.flatten().next()?.path();
                let prefix = format!("{}-", package.name());
                std::fs::read_dir(python.join("site-packages"))
                    .ok()?
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .find_map(|n| {
                        let rest = n.strip_prefix(&prefix)?.strip_suffix(".dist-info")?;
                        Some(rest.to_string())
                    })
            }
        }
    }
}

/// Every gateway value: per figure and column, one value per round.
#[derive(Debug, Default)]
pub struct GatewayMeasurements {
    values: BTreeMap<(GatewayFigure, Column), BTreeMap<usize, f64>>,
    notes: Vec<String>,
}

impl GatewayMeasurements {
    /// Records `value` of `figure` for `column` in `round`.
    pub fn record(&mut self, figure: GatewayFigure, column: Column, round: usize, value: f64) {
        self.values
            .entry((figure, column))
            .or_default()
            .insert(round, value);
    }

    /// The values by round, if any.
    pub fn rounds(&self, figure: GatewayFigure, column: Column) -> Option<&BTreeMap<usize, f64>> {
        self.values.get(&(figure, column))
    }

    /// Keeps a remark for the report.
    pub fn note(&mut self, note: String) {
        eprintln!("note: {note}");
        self.notes.push(note);
    }

    /// The remarks.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// What one gateway did in one round.
struct GatewayRun {
    p50_us: f64,
    p99_us: f64,
    throughput: f64,
    cpu_per_call_us: f64,
    rss_mib: f64,
}

/// Runs every gateway figure of `plan`.
pub async fn run(plan: &Plan, setup: &GatewaySetup) -> GatewayMeasurements {
    let mut m = GatewayMeasurements::default();
    if !setup.mcpvisor.is_file() {
        m.note(format!(
            "no mcpvisor binary at {} (cargo build --release -p mcpvisor-cli): no gateway figures",
            setup.mcpvisor.display()
        ));
        return m;
    }
    let gateways: Vec<Gateway> = Gateway::ALL
        .into_iter()
        .filter(|&g| setup.peers.has(g))
        .collect();
    for g in Gateway::PEERS.into_iter().filter(|&g| !setup.peers.has(g)) {
        m.note(format!(
            "{} is not installed (bash bench/peers/install.sh)",
            g.name()
        ));
    }
    let mut columns: Vec<Column> = gateways.into_iter().map(Column::Gateway).collect();
    columns.push(Column::Direct);
    for round in 0..plan.rounds {
        eprintln!("== gateway round {}/{}", round + 1, plan.rounds);
        for column in rotated(&columns, round) {
            measure_column(plan, setup, column, round, &mut m).await;
        }
        match cli::measure(plan, setup, round).await {
            Ok((attached, one_shot)) => {
                eprintln!(
                    "{:<16} attached {attached:>6.1} ms  one-shot {one_shot:>6.1} ms",
                    "mcpvisor call"
                );
                m.record(GatewayFigure::CliCall, Column::CliAttached, round, attached);
                m.record(GatewayFigure::CliCall, Column::CliOneShot, round, one_shot);
            }
            Err(e) => m.note(format!(
                "the CLI figure failed in round {}: {e:#}",
                round + 1
            )),
        }
    }
    m
}

async fn measure_column(
    plan: &Plan,
    setup: &GatewaySetup,
    column: Column,
    round: usize,
    m: &mut GatewayMeasurements,
) {
    let result = match column {
        Column::Gateway(g) => measure_gateway(plan, setup, g).await,
        Column::Direct => measure_direct(plan, setup).await,
        Column::CliAttached | Column::CliOneShot => return,
    };
    let name = match column {
        Column::Gateway(g) => g.name(),
        _ => "direct Host::call",
    };
    match result {
        Ok(f) => {
            eprintln!(
                "{name:<18} p50 {:>8.1} µs  p99 {:>8.1} µs  {:>8.0} calls/s  gateway cpu {:>6.1} µs/call  rss {:>6.1} MiB",
                f.p50_us, f.p99_us, f.throughput, f.cpu_per_call_us, f.rss_mib
            );
            m.record(GatewayFigure::P50, column, round, f.p50_us);
            m.record(GatewayFigure::P99, column, round, f.p99_us);
            if let Column::Gateway(_) = column {
                m.record(GatewayFigure::Throughput, column, round, f.throughput);
                m.record(GatewayFigure::CpuPerCall, column, round, f.cpu_per_call_us);
                m.record(GatewayFigure::Rss, column, round, f.rss_mib);
            }
        }
        Err(e) => m.note(format!("{name} failed in round {}: {e:#}", round + 1)),
    }
}

async fn measure_gateway(
    plan: &Plan,
    setup: &GatewaySetup,
    gateway: Gateway,
) -> anyhow::Result<GatewayRun> {
    let process = GatewayProcess::start(gateway, setup).await?;
    let mut connection = Connection::Http(process.client().await?);
    connection.sequential(plan.warmup).await?;
    let cpu_before = process.cpu()?;
    let times = connection.sequential(plan.calls).await?;
    let cpu = process.cpu()?.saturating_sub(cpu_before);
    let completed = connection.in_flight(plan.depth, plan.window).await?;
    let rss_kib = process.rss_kib()?;
    connection.close().await;
    process.stop();
    Ok(GatewayRun {
        p50_us: percentile_us(&times, 0.50).unwrap_or(f64::NAN),
        p99_us: percentile_us(&times, 0.99).unwrap_or(f64::NAN),
        throughput: completed as f64 / plan.window.as_secs_f64(),
        cpu_per_call_us: cpu.as_secs_f64() * 1e6 / plan.calls.max(1) as f64,
        rss_mib: rss_kib as f64 / 1024.0,
    })
}

async fn measure_direct(plan: &Plan, setup: &GatewaySetup) -> anyhow::Result<GatewayRun> {
    let target = ServerTarget::rmcp_echo(&setup.exe);
    let mut connection = Connection::open(Client::Mcpvisor, &target).await?;
    connection.sequential(plan.warmup).await?;
    let times = connection.sequential(plan.calls).await?;
    connection.close().await;
    Ok(GatewayRun {
        p50_us: percentile_us(&times, 0.50).unwrap_or(f64::NAN),
        p99_us: percentile_us(&times, 0.99).unwrap_or(f64::NAN),
        throughput: f64::NAN,
        cpu_per_call_us: f64::NAN,
        rss_mib: f64::NAN,
    })
}

/// The median of `values`, or NaN.
pub(crate) fn median_or_nan(values: &[f64]) -> f64 {
    median(values).unwrap_or(f64::NAN)
}
