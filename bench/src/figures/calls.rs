//! Per connection: spawn-to-ready, sequential round trips, CPU per call, and
//! throughput with calls in flight.

use std::time::{Duration, Instant};

use super::{Figure, Measurements, Plan, rotated};
use crate::clients::{Client, Connection};
use crate::servers::ServerTarget;
use crate::stats::{median, percentile_us};
use crate::usage::cpu_time;

/// What one client did against one server in one round.
#[derive(Debug, Clone, Copy)]
struct CallFigures {
    p50_us: f64,
    p99_us: f64,
    throughput: f64,
    cpu_per_call_us: f64,
    spawn_ms: f64,
}

/// Measures every client against `target` once, in an order rotated by `round`.
pub async fn measure(plan: &Plan, target: &ServerTarget, round: usize, m: &mut Measurements) {
    for client in rotated(&Client::ALL, round) {
        if !client.reaches(target) {
            continue;
        }
        match measure_one(plan, client, target).await {
            Ok(f) => {
                eprintln!(
                    "{:<18} {:<9} p50 {:>8.1} µs  p99 {:>8.1} µs  {:>8.0} calls/s  cpu {:>6.1} µs/call  ready {:>7.1} ms",
                    target.key,
                    client.name(),
                    f.p50_us,
                    f.p99_us,
                    f.throughput,
                    f.cpu_per_call_us,
                    f.spawn_ms
                );
                m.record(Figure::P50, target, client, round, f.p50_us);
                m.record(Figure::P99, target, client, round, f.p99_us);
                m.record(Figure::Throughput, target, client, round, f.throughput);
                m.record(Figure::CpuPerCall, target, client, round, f.cpu_per_call_us);
                m.record(Figure::SpawnToReady, target, client, round, f.spawn_ms);
            }
            Err(e) => m.note(format!(
                "{} against {} failed in round {}: {e:#}",
                client.name(),
                target.label,
                round + 1
            )),
        }
    }
}

async fn measure_one(
    plan: &Plan,
    client: Client,
    target: &ServerTarget,
) -> anyhow::Result<CallFigures> {
    let start = Instant::now();
    let mut connection = Connection::open(client, target).await?;
    let mut spawn = vec![ms(start.elapsed())];

    connection.sequential(plan.warmup).await?;
    let cpu_before = cpu_time();
    let times = connection.sequential(plan.calls).await?;
    let cpu = cpu_time().saturating_sub(cpu_before);
    let completed = connection.in_flight(plan.depth, plan.window).await?;
    connection.close().await;

    for _ in 1..plan.spawn_samples {
        let start = Instant::now();
        let connection = Connection::open(client, target).await?;
        spawn.push(ms(start.elapsed()));
        connection.close().await;
    }
    Ok(CallFigures {
        p50_us: percentile_us(&times, 0.50).unwrap_or(f64::NAN),
        p99_us: percentile_us(&times, 0.99).unwrap_or(f64::NAN),
        throughput: completed as f64 / plan.window.as_secs_f64(),
        cpu_per_call_us: cpu.as_secs_f64() * 1e6 / plan.calls.max(1) as f64,
        spawn_ms: median(&spawn).unwrap_or(f64::NAN),
    })
}

/// Milliseconds of `d`.
pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
