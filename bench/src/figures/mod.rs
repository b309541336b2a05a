//! What is measured, in which order, and where the values go.
//!
//! A run is a number of rounds; each round measures every figure once for
//! every client, rotating the order of the clients from round to round so no
//! client always runs first (on a warm cache) or last (on a tired machine).

pub mod calls;
pub mod curve;
pub mod fleet;
pub mod memory;
pub mod restart;
pub mod shim;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::clients::Client;
use crate::servers::http::HttpServer;
use crate::servers::{Peers, ServerTarget};

/// How much to measure.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Rounds; every figure is the median over them.
    pub rounds: usize,
    /// Sequential calls timed per round.
    pub calls: usize,
    /// Calls made and not timed before them.
    pub warmup: usize,
    /// Calls kept in flight on one connection for the throughput figure.
    pub depth: usize,
    /// How long the throughput window lasts.
    #[serde(serialize_with = "as_secs")]
    pub window: Duration,
    /// Spawn-to-ready samples per client, server and round.
    pub spawn_samples: usize,
    /// Servers started at once for the fleet and memory figures.
    pub fleet: usize,
    /// Servers started at once for the big fleet figures (0: not measured).
    pub big_fleet: usize,
    /// Kill-to-ready samples per round and policy.
    pub restart_samples: usize,
    /// `mcpvisor call` runs per round, attached and one-shot each.
    pub cli_runs: usize,
}

fn as_secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Plan {
    /// The plan: 10,000 calls, 64 in flight for 5 s, 100 servers, 3 rounds.
    pub fn full() -> Plan {
        Plan {
            rounds: 3,
            calls: 10_000,
            warmup: 500,
            depth: 64,
            window: Duration::from_secs(5),
            spawn_samples: 5,
            fleet: 100,
            big_fleet: 1_000,
            restart_samples: 3,
            cli_runs: 30,
        }
    }

    /// A short run to check that everything works.
    pub fn quick() -> Plan {
        Plan {
            rounds: 1,
            calls: 1_000,
            warmup: 100,
            window: Duration::from_secs(1),
            spawn_samples: 2,
            restart_samples: 2,
            cli_runs: 10,
            big_fleet: 200,
            ..Plan::full()
        }
    }
}

/// A figure of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Sequential call round trip, median.
    P50,
    /// Sequential call round trip, 99th percentile.
    P99,
    /// Calls per second with `depth` calls in flight on one connection.
    Throughput,
    /// Host CPU time (user + system) per sequential call.
    CpuPerCall,
    /// Start (process spawn or HTTP connect) until the tools are listed.
    SpawnToReady,
    /// `fleet` stdio servers started at once until all are ready.
    FleetReady,
    /// [`Figure::FleetReady`] divided by one server's spawn-to-ready.
    FleetVsOne,
    /// Host CPU time (user + system) spent starting the fleet and shutting it down.
    FleetCpu,
    /// `big_fleet` stdio servers started at once until all are ready.
    BigFleetReady,
    /// Host CPU time spent starting the big fleet and shutting it down.
    BigFleetCpu,
    /// Resident memory added per idle connection.
    MemoryPerConnection,
    /// Resident memory added per idle Streamable HTTP connection with its GET stream open.
    MemoryPerHttpConnection,
    /// SIGKILL of the server until it is ready again, default restart policy.
    RestartDefault,
    /// The same with no backoff: the restart machinery alone.
    RestartNoBackoff,
}

impl Figure {
    /// Every figure, in report order.
    pub const ALL: [Figure; 14] = [
        Figure::P50,
        Figure::P99,
        Figure::Throughput,
        Figure::CpuPerCall,
        Figure::SpawnToReady,
        Figure::FleetReady,
        Figure::FleetVsOne,
        Figure::FleetCpu,
        Figure::BigFleetReady,
        Figure::BigFleetCpu,
        Figure::MemoryPerConnection,
        Figure::MemoryPerHttpConnection,
        Figure::RestartDefault,
        Figure::RestartNoBackoff,
    ];

    /// What the report calls it.
    pub fn label(self) -> &'static str {
        match self {
            Figure::P50 => "call round trip p50",
            Figure::P99 => "call round trip p99",
            Figure::Throughput => "throughput, 64 in flight",
            Figure::CpuPerCall => "host CPU per call",
            Figure::SpawnToReady => "spawn (or connect) to ready",
            Figure::FleetReady => "100 servers to all-ready",
            Figure::FleetVsOne => "100 servers vs one",
            Figure::FleetCpu => "host CPU to start and stop 100 servers",
            Figure::BigFleetReady => "1,000 servers to all-ready",
            Figure::BigFleetCpu => "host CPU to start and stop 1,000 servers",
            Figure::MemoryPerConnection => "host memory per idle connection",
            Figure::MemoryPerHttpConnection => {
                "host memory per idle HTTP connection with its GET stream"
            }
            Figure::RestartDefault => "kill to ready again (default backoff 200 ms ±20 %)",
            Figure::RestartNoBackoff => "kill to ready again (no backoff)",
        }
    }

    /// Its unit.
    pub fn unit(self) -> &'static str {
        match self {
            Figure::P50 | Figure::P99 | Figure::CpuPerCall => "µs",
            Figure::Throughput => "calls/s",
            Figure::SpawnToReady
            | Figure::FleetReady
            | Figure::FleetCpu
            | Figure::BigFleetReady
            | Figure::BigFleetCpu
            | Figure::RestartDefault
            | Figure::RestartNoBackoff => "ms",
            Figure::FleetVsOne => "×",
            Figure::MemoryPerConnection | Figure::MemoryPerHttpConnection => "KiB",
        }
    }

    /// True where more is better (throughput); everything else is a cost.
    pub fn higher_is_better(self) -> bool {
        self == Figure::Throughput
    }
}

/// A server something was measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MeasuredServer {
    /// [`ServerTarget::key`].
    pub key: &'static str,
    /// [`ServerTarget::label`].
    pub label: &'static str,
    /// True for Streamable HTTP.
    pub http: bool,
}

/// Every value measured: for each figure, server and client, one value per round.
#[derive(Debug, Default)]
pub struct Measurements {
    values: BTreeMap<(Figure, String, Client), BTreeMap<usize, f64>>,
    servers: Vec<MeasuredServer>,
    notes: Vec<String>,
}

impl Measurements {
    /// Records `value` of `figure` for `server` and `client` in `round`.
    pub fn record(
        &mut self,
        figure: Figure,
        server: &ServerTarget,
        client: Client,
        round: usize,
        value: f64,
    ) {
        if !self.servers.iter().any(|s| s.key == server.key) {
            self.servers.push(MeasuredServer {
                key: server.key,
                label: server.label,
                http: server.is_http(),
            });
        }
        self.values
            .entry((figure, server.key.to_string(), client))
            .or_default()
            .insert(round, value);
    }

    /// The values by round, if any were recorded.
    pub fn rounds(
        &self,
        figure: Figure,
        server: &str,
        client: Client,
    ) -> Option<&BTreeMap<usize, f64>> {
        self.values.get(&(figure, server.to_string(), client))
    }

    /// The value of one round.
    pub fn value(&self, figure: Figure, server: &str, client: Client, round: usize) -> Option<f64> {
        self.rounds(figure, server, client)?.get(&round).copied()
    }

    /// Servers measured, in the order first measured.
    pub fn servers(&self) -> &[MeasuredServer] {
        &self.servers
    }

    /// Keeps a remark for the report (a measurement that failed, a server missing).
    pub fn note(&mut self, note: String) {
        eprintln!("note: {note}");
        self.notes.push(note);
    }

    /// The remarks.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// `items` rotated left by `round`.
pub fn rotated<T: Copy>(items: &[T], round: usize) -> Vec<T> {
    let mut v = items.to_vec();
    if !v.is_empty() {
        let shift = round % v.len();
        v.rotate_left(shift);
    }
    v
}

/// Where the servers come from.
#[derive(Debug, Clone)]
pub struct Setup {
    /// This binary, which also serves the rmcp echo and demo servers.
    pub exe: PathBuf,
    /// The third-party peers.
    pub peers: Peers,
    /// Only servers whose key contains this, if set.
    pub only: Option<String>,
}

/// Runs every figure of `plan` and returns what was measured.
pub async fn run(plan: &Plan, setup: &Setup) -> Measurements {
    let mut m = Measurements::default();
    let (targets, _http_servers) = targets(setup, &mut m);
    let echo = ServerTarget::rmcp_echo(&setup.exe);
    let (sessions, _sessions_server) = sessions_target(setup, &mut m);
    for round in 0..plan.rounds {
        eprintln!("== round {}/{}", round + 1, plan.rounds);
        for target in &targets {
            calls::measure(plan, target, round, &mut m).await;
        }
        if selected(setup, echo.key) {
            fleet::measure(plan, &echo, round, &mut m).await;
            memory::measure(plan, &setup.exe, &echo, round, &mut m).await;
            restart::measure(plan, &echo, round, &mut m).await;
        }
        if let Some(sessions) = &sessions {
            memory::measure(plan, &setup.exe, sessions, round, &mut m).await;
        }
    }
    m
}

/// The rmcp echo server over HTTP with sessions and GET streams, for the
/// memory of idle HTTP connections, if selected and started.
fn sessions_target(
    setup: &Setup,
    m: &mut Measurements,
) -> (Option<ServerTarget>, Option<HttpServer>) {
    let key = ServerTarget::rmcp_http_sessions(String::new()).key;
    if !selected(setup, key) {
        return (None, None);
    }
    match HttpServer::rmcp(&setup.exe, true) {
        Ok(server) => (
            Some(ServerTarget::rmcp_http_sessions(server.url.clone())),
            Some(server),
        ),
        Err(e) => {
            m.note(format!(
                "the rmcp HTTP server with sessions did not start: {e:#}"
            ));
            (None, None)
        }
    }
}

fn selected(setup: &Setup, key: &str) -> bool {
    setup.only.as_deref().is_none_or(|only| key.contains(only))
}

/// The servers to measure, with the HTTP peers started (they stop when the
/// returned handles drop).
fn targets(setup: &Setup, m: &mut Measurements) -> (Vec<ServerTarget>, Vec<HttpServer>) {
    let exe: &Path = &setup.exe;
    let mut targets = vec![
        ServerTarget::rmcp_echo(exe),
        ServerTarget::rmcp_echo_2026(exe),
        ServerTarget::demo(exe),
    ];
    let mut servers = Vec::new();
    match HttpServer::rmcp(exe, false) {
        Ok(server) => {
            targets.push(ServerTarget::rmcp_http(server.url.clone()));
            targets.push(ServerTarget::rmcp_http_2026(server.url.clone()));
            servers.push(server);
        }
        Err(e) => m.note(format!("the rmcp HTTP server did not start: {e:#}")),
    }
    if setup.peers.has_everything() {
        targets.push(ServerTarget::everything_stdio(&setup.peers));
        match HttpServer::everything(&setup.peers) {
            Ok(server) => {
                targets.push(ServerTarget::everything_http(server.url.clone()));
                servers.push(server);
            }
            Err(e) => m.note(format!("server-everything over HTTP did not start: {e:#}")),
        }
    } else {
        m.note("server-everything is not installed (bash scripts/peers.sh)".into());
    }
    if setup.peers.has_python() {
        match HttpServer::python_json(&setup.peers) {
            Ok(server) => {
                targets.push(ServerTarget::python_http(server.url.clone()));
                servers.push(server);
            }
            Err(e) => m.note(format!("the Python SDK server did not start: {e:#}")),
        }
    } else {
        m.note("the Python SDK is not installed (bash scripts/peers.sh)".into());
    }
    targets.retain(|t| selected(setup, t.key));
    (targets, servers)
}
