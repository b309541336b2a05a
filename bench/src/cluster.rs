//! The cluster figures: a call from one node to a stdio server another node
//! supervises, against a local call to the same server and against the same
//! call through that node's `mcpvisor serve --http` (MCP over HTTP as the
//! other way to reach a server on another machine); and how long a lost
//! node's routes take to leave the others.
//!
//! Node A is `mcpvisor serve --http … --cluster-listen …` supervising the rmcp
//! echo server (stdio). Node B is this process: a `Host` with no servers of
//! its own that joins A, so every call B makes to `mcp__echo__echo` crosses
//! the cluster to A, runs through A's call path and comes back. The local
//! column is a `Host` in this process supervising the same server. Each round
//! starts fresh nodes; at its end A is killed (SIGKILL: its session closes)
//! and, started again, frozen (SIGSTOP: it stays connected but silent, so
//! only the heartbeat finds it), and B's route is timed until it is gone.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mcpvisor::cluster::{Cluster, ClusterOptions, Cookie};
use mcpvisor::{CallOptions, Host, JoinCluster, SupervisorOptions};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::Serialize;
use serde_json::{Value, json};

use crate::clients::{Client, Connection, keep_in_flight};
use crate::figures::Plan;
use crate::gateway::process::{GatewayProcess, QUALIFIED_TOOL, Scratch};
use crate::gateway::{Gateway, GatewaySetup};
use crate::servers::{PAYLOAD, ServerTarget};
use crate::stats::percentile_us;

/// The heartbeat both nodes use (the CLI's default).
const HEARTBEAT: Duration = Duration::from_millis(250);
/// After how long a silent node is lost (the CLI's default).
const LOST_AFTER: Duration = Duration::from_secs(2);

/// One way of calling the echo server, measured in one round.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figures {
    /// Sequential calls: median round trip.
    pub p50_us: f64,
    /// Sequential calls: 99th percentile.
    pub p99_us: f64,
    /// Calls completed per second with [`Plan::depth`] in flight.
    pub throughput: f64,
}

/// One round of the cluster figures.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ClusterRound {
    /// Node B → node A → the stdio server.
    pub remote: Figures,
    /// A host's own call to the same server.
    pub local: Figures,
    /// The same call through node A's `serve --http`.
    pub http: Figures,
    /// From SIGKILL of node A until B no longer routes its tool.
    pub killed_ms: f64,
    /// From SIGSTOP of node A until B no longer routes its tool.
    pub frozen_ms: f64,
}

/// Every round, and the plan.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterRun {
    /// The rounds, in order.
    pub rounds: Vec<ClusterRound>,
    /// Sequential calls per round and column.
    pub calls: usize,
    /// Calls in flight for throughput.
    pub depth: usize,
    /// The throughput window, in seconds.
    pub window_s: f64,
    /// The heartbeat, in milliseconds.
    pub heartbeat_ms: u64,
    /// The loss bound, in milliseconds.
    pub lost_after_ms: u64,
}

/// Runs every round of `plan`.
pub async fn run(plan: &Plan, setup: &GatewaySetup) -> anyhow::Result<ClusterRun> {
    if !setup.mcpvisor.is_file() {
        bail!(
            "no mcpvisor binary at {} (cargo build --release -p mcpvisor-cli)",
            setup.mcpvisor.display()
        );
    }
    let mut rounds = Vec::new();
    for round in 0..plan.rounds {
        eprintln!("== cluster round {}/{}", round + 1, plan.rounds);
        let measured = measure_round(plan, setup).await?;
        eprintln!(
            "remote  p50 {:>7.1} µs  p99 {:>7.1} µs  {:>7.0} calls/s\n\
             local   p50 {:>7.1} µs  p99 {:>7.1} µs  {:>7.0} calls/s\n\
             http    p50 {:>7.1} µs  p99 {:>7.1} µs  {:>7.0} calls/s\n\
             killed → withdrawn {:.1} ms, frozen → withdrawn {:.1} ms",
            measured.remote.p50_us,
            measured.remote.p99_us,
            measured.remote.throughput,
            measured.local.p50_us,
            measured.local.p99_us,
            measured.local.throughput,
            measured.http.p50_us,
            measured.http.p99_us,
            measured.http.throughput,
            measured.killed_ms,
            measured.frozen_ms,
        );
        rounds.push(measured);
    }
    Ok(ClusterRun {
        rounds,
        calls: plan.calls,
        depth: plan.depth,
        window_s: plan.window.as_secs_f64(),
        heartbeat_ms: HEARTBEAT.as_millis() as u64,
        lost_after_ms: LOST_AFTER.as_millis() as u64,
    })
}

fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    Ok(listener.local_addr()?.port())
}

/// The shared cookie, in a 0600 file.
struct CookieFile {
    scratch: Scratch,
}

impl CookieFile {
    fn new() -> anyhow::Result<CookieFile> {
        let scratch = Scratch::new("cluster-cookie")?;
        let path = scratch.path().join("cookie");
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        std::fs::write(
            &path,
            format!("bench-cluster-cookie-{}-{nanos}\n", std::process::id()),
        )?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        Ok(CookieFile { scratch })
    }

    fn path(&self) -> std::path::PathBuf {
        self.scratch.path().join("cookie")
    }
}

/// Node A: `mcpvisor serve` in front of the echo server, a cluster node at `port`.
async fn node_a(
    setup: &GatewaySetup,
    cookie: &CookieFile,
    port: u16,
) -> anyhow::Result<GatewayProcess> {
    let extra: Vec<String> = [
        "--cluster-listen".to_string(),
        format!("127.0.0.1:{port}"),
        "--node-name".into(),
        "a".into(),
        "--cookie-file".into(),
        cookie.path().to_string_lossy().into_owned(),
        "--heartbeat-ms".into(),
        HEARTBEAT.as_millis().to_string(),
        "--node-lost-ms".into(),
        LOST_AFTER.as_millis().to_string(),
    ]
    .into();
    GatewayProcess::start_with(Gateway::Mcpvisor, setup, &extra).await
}

/// Node B: a host of this process with no servers, joined to A.
async fn node_b(cookie: &CookieFile, a_port: u16) -> anyhow::Result<(Host, Cluster)> {
    let host = Host::start(Vec::new(), SupervisorOptions::default()).await?;
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
    let mut options = ClusterOptions::new(listen, Cookie::from_file(&cookie.path())?);
    options.node_name = Some("b".into());
    options.join = vec![format!("127.0.0.1:{a_port}")];
    options.heartbeat = HEARTBEAT;
    options.lost_after = LOST_AFTER;
    let cluster = host.join_cluster(options).await?;
    Ok((host, cluster))
}

/// Waits until `host` routes (or, `present` false, no longer routes) the echo tool.
async fn routed(host: &Host, present: bool, within: Duration) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + within;
    loop {
        if host.routes().get(QUALIFIED_TOOL).is_some() == present {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!(
                "the route was {} within {within:?}",
                if present {
                    "not routed"
                } else {
                    "still routed"
                }
            );
        }
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

async fn remote_call(host: &Host, arguments: &Value) -> anyhow::Result<()> {
    let result = host
        .call(QUALIFIED_TOOL, arguments.clone(), CallOptions::default())
        .await
        .context("a remote call")?;
    anyhow::ensure!(!result.is_error, "the echo tool failed: {}", result.text());
    Ok(())
}

async fn host_figures(plan: &Plan, host: &Host) -> anyhow::Result<Figures> {
    let arguments = json!({"text": PAYLOAD});
    for _ in 0..plan.warmup {
        remote_call(host, &arguments).await?;
    }
    let mut times = Vec::with_capacity(plan.calls);
    for _ in 0..plan.calls {
        let started = Instant::now();
        remote_call(host, &arguments).await?;
        times.push(started.elapsed());
    }
    let completed =
        keep_in_flight(plan.depth, plan.window, || remote_call(host, &arguments)).await?;
    Ok(Figures {
        p50_us: percentile_us(&times, 0.50).unwrap_or(f64::NAN),
        p99_us: percentile_us(&times, 0.99).unwrap_or(f64::NAN),
        throughput: completed as f64 / plan.window.as_secs_f64(),
    })
}

async fn connection_figures(plan: &Plan, mut connection: Connection) -> anyhow::Result<Figures> {
    connection.sequential(plan.warmup).await?;
    let times = connection.sequential(plan.calls).await?;
    let completed = connection.in_flight(plan.depth, plan.window).await?;
    connection.close().await;
    Ok(Figures {
        p50_us: percentile_us(&times, 0.50).unwrap_or(f64::NAN),
        p99_us: percentile_us(&times, 0.99).unwrap_or(f64::NAN),
        throughput: completed as f64 / plan.window.as_secs_f64(),
    })
}

async fn measure_round(plan: &Plan, setup: &GatewaySetup) -> anyhow::Result<ClusterRound> {
    let cookie = CookieFile::new()?;
    let a_port = free_port()?;
    let a = node_a(setup, &cookie, a_port).await?;
    let (b, cluster) = node_b(&cookie, a_port).await?;
    routed(&b, true, Duration::from_secs(30)).await?;
    let remote = host_figures(plan, &b).await?;
    let http = connection_figures(plan, Connection::Http(a.client().await?)).await?;
    let local = connection_figures(
        plan,
        Connection::open(Client::Mcpvisor, &ServerTarget::rmcp_echo(&setup.exe)).await?,
    )
    .await?;

    // Killed: the session closes with the process.
    let killed_at = Instant::now();
    let _ = nix::sys::signal::killpg(Pid::from_raw(a.pid() as i32), Signal::SIGKILL);
    let gone = routed(&b, false, LOST_AFTER * 5).await?;
    let killed_ms = gone.duration_since(killed_at).as_secs_f64() * 1e3;
    a.stop();

    // Frozen: connected but silent; the heartbeat finds it.
    let a = node_a(setup, &cookie, a_port).await?;
    routed(&b, true, Duration::from_secs(30)).await?;
    let frozen_at = Instant::now();
    kill(Pid::from_raw(a.pid() as i32), Signal::SIGSTOP)?;
    let gone = routed(&b, false, LOST_AFTER * 5).await;
    let frozen_ms = gone.map(|g| g.duration_since(frozen_at).as_secs_f64() * 1e3);
    let _ = kill(Pid::from_raw(a.pid() as i32), Signal::SIGCONT);
    a.stop();
    drop(cluster);
    b.shutdown().await;
    Ok(ClusterRound {
        remote,
        local,
        http,
        killed_ms,
        frozen_ms: frozen_ms?,
    })
}
