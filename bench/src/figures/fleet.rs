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
use crate::usage::cpu_time;

/// Times `plan.fleet` copies of `target` to all-ready with each client, and
/// each against that client's spawn-to-ready of one in the same round; then
/// `plan.big_fleet` copies. Each fleet's host CPU is taken too.
pub async fn measure(plan: &Plan, target: &ServerTarget, round: usize, m: &mut Measurements) {
    let sizes = [
        (plan.fleet, Figure::FleetReady, Figure::FleetCpu),
        (plan.big_fleet, Figure::BigFleetReady, Figure::BigFleetCpu),
    ];
    for (n, ready_figure, cpu_figure) in sizes {
        if n == 0 {
            continue;
        }
        for client in rotated(&Client::FLEET, round) {
            let cpu = cpu_time();
            let timed = match client {
                Client::Mcpvisor => mcpvisor(n, target).await,
                Client::Rmcp => rmcp(n, target).await,
                Client::Floor | Client::TokioFloor => floor(n).await,
            };
            let cpu_ms = ms(cpu_time().saturating_sub(cpu));
            match timed {
                Ok(fleet_ms) => {
                    eprintln!(
                        "{:<18} {:<9} {n} servers ready in {fleet_ms:.0} ms, {cpu_ms:.0} ms of host CPU",
                        "fleet",
                        client.name(),
                    );
                    m.record(ready_figure, target, client, round, fleet_ms);
                    m.record(cpu_figure, target, client, round, cpu_ms);
                    if ready_figure != Figure::FleetReady {
                        continue;
                    }
                    if let Some(one) = m.value(Figure::SpawnToReady, target.key, client, round) {
                        m.record(Figure::FleetVsOne, target, client, round, fleet_ms / one);
                    }
                }
                Err(e) => m.note(format!(
                    "{n} servers with {} failed in round {}: {e:#}",
                    client.name(),
                    round + 1
                )),
            }
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
