//! Many stdio servers started at once until every one is ready.
//!
//! mcpvisor starts them as one host; rmcp spawns and initializes each on its
//! own task, all in parallel, and lists its tools; the floor spawns as many
//! `cat`s and gets one line back from each.

use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, ensure};
use mcpvisor::SupervisorOptions;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::task::JoinSet;

use super::calls::ms;
use super::{Figure, Measurements, Plan, rotated};
use crate::clients::{Client, RmcpConnection, mcpvisor as host};
use crate::servers::ServerTarget;

/// Times `plan.fleet` copies of `target` to all-ready with each client, and
/// each against that client's spawn-to-ready of one in the same round.
pub async fn measure(plan: &Plan, target: &ServerTarget, round: usize, m: &mut Measurements) {
    for client in rotated(&Client::FLEET, round) {
        let timed = match client {
            Client::Mcpvisor => mcpvisor(plan.fleet, target).await,
            Client::Rmcp => rmcp(plan.fleet, target).await,
            Client::Floor | Client::TokioFloor => floor(plan.fleet).await,
        };
        match timed {
            Ok(fleet_ms) => {
                eprintln!(
                    "{:<18} {:<9} {} servers ready in {fleet_ms:.0} ms",
                    "fleet",
                    client.name(),
                    plan.fleet
                );
                m.record(Figure::FleetReady, target, client, round, fleet_ms);
                if let Some(one) = m.value(Figure::SpawnToReady, target.key, client, round) {
                    m.record(Figure::FleetVsOne, target, client, round, fleet_ms / one);
                }
            }
            Err(e) => m.note(format!(
                "{} servers with {} failed in round {}: {e:#}",
                plan.fleet,
                client.name(),
                round + 1
            )),
        }
    }
}

/// Milliseconds until `n` servers of one mcpvisor host are all ready.
pub async fn mcpvisor(n: usize, target: &ServerTarget) -> anyhow::Result<f64> {
    let specs = (0..n)
        .map(|i| host::spec(&format!("echo{i}"), target))
        .collect();
    let start = Instant::now();
    let host = host::start_host(specs, SupervisorOptions::default()).await?;
    let elapsed = ms(start.elapsed());
    ensure!(host.ready_servers() == n, "not every server is ready");
    host.shutdown().await;
    Ok(elapsed)
}

/// Milliseconds until rmcp has `n` connections initialized, in parallel.
pub async fn rmcp(n: usize, target: &ServerTarget) -> anyhow::Result<f64> {
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        let target = target.clone();
        tasks.spawn(async move { RmcpConnection::open(&target).await });
    }
    let mut connections = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        connections.push(joined??);
    }
    let elapsed = ms(start.elapsed());
    futures::future::join_all(connections.into_iter().map(RmcpConnection::close)).await;
    Ok(elapsed)
}

async fn floor(n: usize) -> anyhow::Result<f64> {
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..n {
        tasks.spawn(async {
            let mut child = tokio::process::Command::new("cat")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let mut stdin = child.stdin.take().context("cat's stdin")?;
            let mut stdout = BufReader::new(child.stdout.take().context("cat's stdout")?);
            stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1}\n").await?;
            let mut line = String::new();
            stdout.read_line(&mut line).await?;
            ensure!(!line.is_empty(), "cat closed its output");
            anyhow::Ok((child, stdin))
        });
    }
    let mut children = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        children.push(joined??);
    }
    let elapsed = ms(start.elapsed());
    for (mut child, stdin) in children {
        drop(stdin);
        let _ = child.wait().await;
    }
    Ok(elapsed)
}
