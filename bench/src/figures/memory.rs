//! Host memory per idle connection, each client measured in a fresh process.
//!
//! The harness starts itself as a probe (`harness probe-memory CLIENT N
//! [URL]`): the probe opens and closes one connection so code and one-time
//! state are resident, reads its RSS, opens N idle connections, waits, reads
//! its RSS again and prints both. A fresh process per sample keeps the
//! allocator's leftovers of earlier figures out of the delta.
//!
//! Without a URL the connections go to the rmcp echo server on stdio (one
//! process each). With the URL of the rmcp echo server over HTTP with sessions
//! ([`ServerTarget::rmcp_http_sessions`]) they are N Streamable HTTP
//! connections to that one server, each with its GET stream: the probe reads
//! its RSS only once the server counts N more GET streams open.

use std::time::Duration;

use anyhow::{Context, bail};
use mcpvisor::SupervisorOptions;
use serde::{Deserialize, Serialize};

use super::{Figure, Measurements, Plan, rotated};
use crate::clients::{Client, Connection, PipeFloor, RmcpConnection, mcpvisor as host};
use crate::servers::open_streams::{settle_streams, wait_for_streams};
use crate::servers::{Endpoint, ServerTarget};
use crate::usage::{Resident, resident};

/// The clients whose idle HTTP connections are measured: the floor holds no
/// GET stream, so it has no comparable figure.
const HTTP_CLIENTS: [Client; 2] = [Client::Mcpvisor, Client::Rmcp];

/// How long the GET streams of all connections may take to open.
const STREAMS_WITHIN: Duration = Duration::from_secs(30);

/// How long the streams of earlier connections may take to close.
const SETTLE_WITHIN: Duration = Duration::from_secs(5);

/// The argument that makes the harness a memory probe.
pub const PROBE_ARG: &str = "probe-memory";

/// What a probe prints, one JSON line.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProbeResult {
    /// Idle connections opened.
    pub connections: usize,
    /// `VmRSS` before them, KiB.
    pub before_kib: u64,
    /// `VmRSS` with them open and idle, KiB.
    pub after_kib: u64,
    /// `RssAnon` before, KiB.
    pub anon_before_kib: u64,
    /// `RssAnon` after, KiB.
    pub anon_after_kib: u64,
}

impl ProbeResult {
    /// Resident memory added per connection, KiB.
    pub fn per_connection_kib(&self) -> f64 {
        (self.after_kib as f64 - self.before_kib as f64) / self.connections.max(1) as f64
    }
}

/// Runs one probe per client, in an order rotated by `round`, against the
/// rmcp echo server on stdio or, if `target` is HTTP, against `target`.
pub async fn measure(
    plan: &Plan,
    exe: &std::path::Path,
    target: &ServerTarget,
    round: usize,
    m: &mut Measurements,
) {
    let (clients, figure, url): (&[Client], _, _) = match &target.endpoint {
        Endpoint::Http { url } => (&HTTP_CLIENTS, Figure::MemoryPerHttpConnection, Some(url)),
        Endpoint::Stdio { .. } => (&Client::FLEET, Figure::MemoryPerConnection, None),
    };
    for client in rotated(clients, round) {
        match run_probe(exe, client, plan.fleet, url.map(String::as_str)).await {
            Ok(probe) => {
                let per = probe.per_connection_kib();
                eprintln!(
                    "{:<18} {:<9} {per:.1} KiB per idle connection (RSS {} → {} KiB)",
                    format!("memory {}", target.key),
                    client.name(),
                    probe.before_kib,
                    probe.after_kib
                );
                m.record(figure, target, client, round, per);
            }
            Err(e) => m.note(format!(
                "memory probe of {} failed in round {}: {e:#}",
                client.name(),
                round + 1
            )),
        }
    }
}

async fn run_probe(
    exe: &std::path::Path,
    client: Client,
    n: usize,
    url: Option<&str>,
) -> anyhow::Result<ProbeResult> {
    let output = tokio::process::Command::new(exe)
        .args([PROBE_ARG, client.name(), &n.to_string()])
        .args(url)
        .stdin(std::process::Stdio::null())
        .output()
        .await?;
    if !output.status.success() {
        bail!(
            "probe exited with {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let line = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(line.trim()).with_context(|| format!("probe printed {line:?}"))
}

/// The probe's side: opens `n` idle connections of `client` to the rmcp echo
/// server (this binary on stdio, or the HTTP server at `url`) and returns the
/// resident memory before and after.
pub async fn probe(client: &str, n: usize, url: Option<&str>) -> anyhow::Result<ProbeResult> {
    let exe = std::env::current_exe()?;
    let target = match url {
        Some(url) => ServerTarget::rmcp_http_sessions(url.to_string()),
        None => ServerTarget::rmcp_echo(&exe),
    };
    let client = Client::parse(client)?;
    // The stream count is read on a client of its own, connected before the
    // first RSS reading so its cost is not counted as the connections'.
    let counter = reqwest::Client::new();
    Connection::open(client, &target).await?.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The warm-up connection's stream may close a little after it: counting
    // it in the baseline would leave the wait one stream short.
    let streams_before = match url {
        Some(url) => settle_streams(&counter, url, SETTLE_WITHIN).await?,
        None => 0,
    };
    let before = resident();
    let streams_open = async {
        match url {
            Some(url) => wait_for_streams(&counter, url, streams_before + n, STREAMS_WITHIN).await,
            None => Ok(()),
        }
    };
    let after = match client {
        Client::Mcpvisor => {
            let specs = (0..n)
                .map(|i| host::spec(&format!("echo{i}"), &target))
                .collect();
            let host = host::start_host(specs, SupervisorOptions::default()).await?;
            let streams = streams_open.await;
            let after = idle_resident().await;
            host.shutdown().await;
            streams?;
            after
        }
        Client::Rmcp => {
            let mut open = Vec::with_capacity(n);
            for _ in 0..n {
                open.push(RmcpConnection::open(&target).await?);
            }
            let streams = streams_open.await;
            let after = idle_resident().await;
            futures::future::join_all(open.into_iter().map(RmcpConnection::close)).await;
            streams?;
            after
        }
        Client::Floor | Client::TokioFloor if url.is_some() => {
            bail!("the floor holds no GET stream")
        }
        Client::Floor | Client::TokioFloor => {
            let open = (0..n)
                .map(|_| PipeFloor::open())
                .collect::<anyhow::Result<Vec<_>>>()?;
            let after = idle_resident().await;
            open.into_iter().for_each(PipeFloor::close);
            after
        }
    };
    Ok(ProbeResult {
        connections: n,
        before_kib: before.total_kib,
        after_kib: after.total_kib,
        anon_before_kib: before.anon_kib,
        anon_after_kib: after.anon_kib,
    })
}

/// Resident memory after the connections have sat idle for a second.
async fn idle_resident() -> Resident {
    tokio::time::sleep(Duration::from_secs(1)).await;
    resident()
}
