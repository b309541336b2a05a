//! The soak: one host with twenty rmcp echo servers under a steady mixed load
//! for minutes, sampled once a minute, to show whether memory, threads or
//! file descriptors creep up while calls, cancels and restarts go on.
//!
//! The load is modest on purpose (200 calls/s by default) so a long soak can
//! run beside other work: the soak looks for leaks, not for speed.

pub mod load;

use std::path::Path;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use mcpvisor::{Host, HostEvent, RestartPolicy, SupervisorOptions};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::Serialize;
use tokio::time::Instant;

use crate::clients::mcpvisor as host;
use crate::servers::ServerTarget;
use crate::usage::{open_fds, resident, threads};
use load::{Counts, Tally};

/// How long and how hard to soak.
#[derive(Debug, Clone, Serialize)]
pub struct SoakPlan {
    /// How long the load runs, in minutes.
    pub minutes: f64,
    /// rmcp echo servers in the host.
    pub servers: usize,
    /// Workers calling at once, each one call at a time.
    pub workers: usize,
    /// Calls started per second over all workers (a burst counts as one tick).
    pub calls_per_second: f64,
    /// Every this many ticks a worker makes [`SoakPlan::burst`] calls at once.
    pub burst_every: u64,
    /// Calls in a burst.
    pub burst: usize,
    /// Every this many ticks a worker drops its call once it is in flight.
    pub cancel_every: u64,
    /// Seconds between SIGKILLs of one server's process (the servers in turn).
    pub kill_every_s: u64,
    /// Seconds between samples.
    pub sample_every_s: u64,
}

impl SoakPlan {
    /// The soak for `minutes`: 20 servers, 8 workers, 200 calls/s,
    /// a kill every 30 s, a sample every minute.
    pub fn new(minutes: f64) -> SoakPlan {
        SoakPlan {
            minutes,
            servers: 20,
            workers: 8,
            calls_per_second: 200.0,
            burst_every: 20,
            burst: 8,
            cancel_every: 7,
            kill_every_s: 30,
            sample_every_s: 60,
        }
    }
}

/// The host as seen at one moment of the soak.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the load began.
    pub at_s: f64,
    /// `VmRSS` of the harness process (the host and the load), KiB.
    pub rss_kib: u64,
    /// `RssAnon`, KiB.
    pub anon_kib: u64,
    /// Threads of the process.
    pub threads: u64,
    /// Open file descriptors of the process.
    pub fds: u64,
    /// Servers ready at that moment.
    pub ready_servers: usize,
    /// How calls ended so far.
    pub calls: Counts,
    /// SIGKILLs sent so far.
    pub kills: u64,
    /// `ServerRestarting` events so far.
    pub restarts: u64,
}

/// Everything a soak saw.
#[derive(Debug, Clone, Serialize)]
pub struct SoakRun {
    /// What ran.
    pub plan: SoakPlan,
    /// At the start, each minute, and at the end.
    pub samples: Vec<Sample>,
    /// `ServerFailed` events (a server given up on): none is expected.
    pub failed: u64,
    /// Events the soak's own subscriber missed by falling behind.
    pub events_lost: u64,
}

/// Lifecycle events counted as they come.
#[derive(Debug, Default)]
struct Lifecycle {
    restarts: AtomicU64,
    failed: AtomicU64,
    lost: AtomicU64,
}

/// Runs the soak of `plan` with the rmcp echo server served by `exe`.
pub async fn run(plan: &SoakPlan, exe: &Path) -> anyhow::Result<SoakRun> {
    let target = ServerTarget::rmcp_echo(exe);
    let specs = (0..plan.servers)
        .map(|i| host::spec(&format!("echo{i}"), &target))
        .collect();
    let mut options = SupervisorOptions::default();
    // Killed every half minute for an hour: the intensity limit must not give up on one.
    options.restart = RestartPolicy {
        max_restarts: 1_000,
        ..RestartPolicy::default()
    };
    let host = host::start_host(specs, options).await?;
    let lifecycle = Arc::new(Lifecycle::default());
    let counting = tokio::spawn(count_lifecycle(host.clone(), lifecycle.clone()));
    let tally = Arc::new(Tally::default());
    let kills = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(plan.minutes * 60.0);
    let workers: Vec<_> = (0..plan.workers)
        .map(|i| {
            tokio::spawn(load::worker(
                host.clone(),
                plan.clone(),
                i,
                deadline,
                tally.clone(),
            ))
        })
        .collect();
    let killing = tokio::spawn(kill_in_turn(host.clone(), plan.clone(), kills.clone()));
    let mut samples = Vec::new();
    let mut next = start;
    loop {
        tokio::time::sleep_until(next).await;
        let s = Sample {
            at_s: start.elapsed().as_secs_f64(),
            rss_kib: resident().total_kib,
            anon_kib: resident().anon_kib,
            threads: threads(),
            fds: open_fds(),
            ready_servers: host.ready_servers(),
            calls: tally.read(),
            kills: kills.load(Ordering::Relaxed),
            restarts: lifecycle.restarts.load(Ordering::Relaxed),
        };
        eprintln!(
            "soak {:>6.0} s  RSS {} KiB  threads {}  fds {}  ready {}  ok {}  cancelled {}  failed {}  kills {}  restarts {}",
            s.at_s,
            s.rss_kib,
            s.threads,
            s.fds,
            s.ready_servers,
            s.calls.ok,
            s.calls.cancelled,
            s.calls.failed(),
            s.kills,
            s.restarts
        );
        samples.push(s);
        if next >= deadline {
            break;
        }
        next = (next + Duration::from_secs(plan.sample_every_s)).min(deadline);
    }
    killing.abort();
    for worker in workers {
        let _ = worker.await;
    }
    host.shutdown().await;
    // The stream ends only when the last handle of the host goes; the counts are in.
    counting.abort();
    Ok(SoakRun {
        plan: plan.clone(),
        samples,
        failed: lifecycle.failed.load(Ordering::Relaxed),
        events_lost: lifecycle.lost.load(Ordering::Relaxed),
    })
}

/// Counts restarts, failures and lost events as they come.
async fn count_lifecycle(host: Host, lifecycle: Arc<Lifecycle>) {
    let mut events = pin!(host.events());
    while let Some(event) = events.next().await {
        let counter = match event {
            HostEvent::ServerRestarting { .. } => &lifecycle.restarts,
            HostEvent::ServerFailed { .. } => &lifecycle.failed,
            HostEvent::EventsLost { count } => {
                lifecycle.lost.fetch_add(count, Ordering::Relaxed);
                continue;
            }
            _ => continue,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Every `kill_every_s` (the first after half of it), SIGKILL the next
/// server's process, as a crash would.
async fn kill_in_turn(host: Host, plan: SoakPlan, kills: Arc<AtomicU64>) {
    let period = Duration::from_secs(plan.kill_every_s);
    // Half a period out of step with the samples, so none is taken at a kill.
    let mut ticks = tokio::time::interval_at(Instant::now() + period / 2, period);
    for k in (0..plan.servers).cycle() {
        ticks.tick().await;
        let name = format!("echo{k}");
        let pid = host
            .servers()
            .into_iter()
            .find(|s| *s.name == *name)
            .and_then(|s| s.pid);
        // A server still restarting from an earlier kill has no pid: skip it.
        if let Some(pid) = pid
            && kill(Pid::from_raw(pid as i32), Signal::SIGKILL).is_ok()
        {
            kills.fetch_add(1, Ordering::Relaxed);
        }
    }
}
