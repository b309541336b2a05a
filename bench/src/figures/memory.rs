//! Host memory per idle connection, each client measured in a fresh process.
//!
//! The harness starts itself as a probe (`harness probe-memory CLIENT N`):
//! the probe opens and closes one connection so code and one-time state are
//! resident, reads its RSS, opens N idle connections to the rmcp echo server,
//! waits, reads its RSS again and prints both. A fresh process per sample
//! keeps the allocator's leftovers of earlier figures out of the delta.

use std::time::Duration;

use anyhow::{Context, bail};
use mcpvisor::SupervisorOptions;
use serde::{Deserialize, Serialize};

use super::{Figure, Measurements, Plan, rotated};
use crate::clients::{Client, Connection, PipeFloor, RmcpConnection, mcpvisor as host};
use crate::servers::ServerTarget;
use crate::usage::{Resident, resident};

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

/// Runs one probe per client, in an order rotated by `round`.
pub async fn measure(
    plan: &Plan,
    exe: &std::path::Path,
    target: &ServerTarget,
    round: usize,
    m: &mut Measurements,
) {
    for client in rotated(&Client::FLEET, round) {
        match run_probe(exe, client, plan.fleet).await {
            Ok(probe) => {
                let per = probe.per_connection_kib();
                eprintln!(
                    "{:<18} {:<9} {per:.1} KiB per idle connection (RSS {} → {} KiB)",
                    "memory",
                    client.name(),
                    probe.before_kib,
                    probe.after_kib
                );
                m.record(Figure::MemoryPerConnection, target, client, round, per);
            }
            Err(e) => m.note(format!(
                "memory probe of {} failed in round {}: {e:#}",
                client.name(),
                round + 1
            )),
        }
    }
}

async fn run_probe(exe: &std::path::Path, client: Client, n: usize) -> anyhow::Result<ProbeResult> {
    let output = tokio::process::Command::new(exe)
        .args([PROBE_ARG, client.name(), &n.to_string()])
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
/// server (this binary) and returns the resident memory before and after.
pub async fn probe(client: &str, n: usize) -> anyhow::Result<ProbeResult> {
    let exe = std::env::current_exe()?;
    let target = ServerTarget::rmcp_echo(&exe);
    let client = Client::parse(client)?;
    Connection::open(client, &target).await?.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = resident();
    let after = match client {
        Client::Mcpvisor => {
            let specs = (0..n)
                .map(|i| host::spec(&format!("echo{i}"), &target))
                .collect();
            let host = host::start_host(specs, SupervisorOptions::default()).await?;
            let after = idle_resident().await;
            host.shutdown().await;
            after
        }
        Client::Rmcp => {
            let mut open = Vec::with_capacity(n);
            for _ in 0..n {
                open.push(RmcpConnection::open(&target).await?);
            }
            let after = idle_resident().await;
            futures::future::join_all(open.into_iter().map(RmcpConnection::close)).await;
            after
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
