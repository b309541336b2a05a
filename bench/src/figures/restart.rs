//! Kill-to-ready-again: SIGKILL a supervised server, time until it is ready.
//!
//! Only mcpvisor supervises; rmcp has no restart to compare with (its
//! column is n/a, and spawn-to-ready is the floor of any restart). Measured
//! twice: with the default policy, whose 200 ms first backoff dominates, and
//! with no backoff, which leaves the restart machinery alone.

use std::pin::pin;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use mcpvisor::{HostEvent, RestartPolicy, SupervisorOptions};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::calls::ms;
use super::{Figure, Measurements, Plan};
use crate::clients::Client;
use crate::clients::mcpvisor::{SERVER_NAME, spec, start_host};
use crate::servers::ServerTarget;
use crate::stats::median;

/// Measures both policies against `target` in this round.
pub async fn measure(plan: &Plan, target: &ServerTarget, round: usize, m: &mut Measurements) {
    // A generous intensity limit: the samples must not mark the server failed.
    let lenient = RestartPolicy {
        max_restarts: 1_000,
        ..RestartPolicy::default()
    };
    let immediate = RestartPolicy {
        initial_backoff: Duration::ZERO,
        jitter: 0.0,
        ..lenient.clone()
    };
    for (figure, policy) in [
        (Figure::RestartDefault, lenient),
        (Figure::RestartNoBackoff, immediate),
    ] {
        match samples(plan.restart_samples, target, policy).await {
            Ok(times) => {
                let value = median(&times).unwrap_or(f64::NAN);
                eprintln!(
                    "{:<18} {:<9} kill to ready {value:.1} ms ({})",
                    "restart",
                    Client::Mcpvisor.name(),
                    figure.label()
                );
                m.record(figure, target, Client::Mcpvisor, round, value);
            }
            Err(e) => m.note(format!(
                "restart figure failed in round {}: {e:#}",
                round + 1
            )),
        }
    }
}

async fn samples(
    count: usize,
    target: &ServerTarget,
    restart: RestartPolicy,
) -> anyhow::Result<Vec<f64>> {
    let mut options = SupervisorOptions::default();
    options.restart = restart;
    let host = start_host(vec![spec(SERVER_NAME, target)], options).await?;
    // The first stream replays everything since start; the second starts now.
    drop(host.events());
    let mut events = pin!(host.events());
    let mut times = Vec::with_capacity(count);
    for _ in 0..count {
        let pid = host
            .servers()
            .first()
            .and_then(|s| s.pid)
            .context("the server has no pid")?;
        let start = Instant::now();
        kill(Pid::from_raw(pid as i32), Signal::SIGKILL)?;
        let ready_again = async {
            while let Some(event) = events.next().await {
                if let HostEvent::ServerReady { pid: Some(new), .. } = event
                    && new != pid
                {
                    return Ok(());
                }
            }
            bail!("the event stream ended")
        };
        tokio::time::timeout(Duration::from_secs(30), ready_again)
            .await
            .context("not ready again within 30 s")??;
        times.push(ms(start.elapsed()));
    }
    host.shutdown().await;
    Ok(times)
}
