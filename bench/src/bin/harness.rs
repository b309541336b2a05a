//! The benchmark harness: mcpvisor against rmcp and the raw floor.
//!
//! `harness [--quick] [--out DIR]` measures every figure and writes
//! `BENCHMARKS.md` and `benchmarks.json` (default: the workspace's `docs/`).
//! `harness gateway` measures only `mcpvisor serve` against the other gateways
//! and puts that section into the existing files, leaving the rest as it was;
//! `harness curve` does the same for the cost curve (and its SVG charts), and
//! `harness soak --minutes M` for a soak of M minutes, and `harness cluster`
//! for the cluster's figures, which only they run.
//! The same binary is also the rmcp echo server (`harness rmcp-echo-server`),
//! the same over Streamable HTTP (`harness rmcp-http-server [--sessions]`),
//! the mcpvisor demo server (`harness demo-server`) and the memory probe
//! (`harness probe-memory CLIENT N [URL]`) and the curve's probe
//! (`harness probe-curve fleet|tools N CALLS CHANGES`), so one build has every part it runs;
//! `harness profile-calls CLIENT N` makes only sequential calls, and
//! `harness profile-fleet CLIENT N REPEATS` only starts fleets, and
//! `harness profile-gateway URL TOOL N` only calls a running gateway, for a profiler.

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
#[cfg(feature = "cluster")]
use mcpvisor_bench::cluster;
use mcpvisor_bench::figures::curve::{self, CurvePlan};
use mcpvisor_bench::figures::{self, Plan, Setup, memory};
use mcpvisor_bench::gateway::{self, GatewayPeers, GatewaySetup};
use mcpvisor_bench::profile;
use mcpvisor_bench::report::Report;
#[cfg(feature = "cluster")]
use mcpvisor_bench::report::cluster::ClusterReport;
use mcpvisor_bench::report::curve::CurveReport;
use mcpvisor_bench::report::gateway::GatewayReport;
use mcpvisor_bench::report::machine::{Machine, Versions};
use mcpvisor_bench::report::soak::SoakReport;
use mcpvisor_bench::servers::rmcp_http::{self, RMCP_HTTP_ARG};
use mcpvisor_bench::servers::{Peers, RMCP_ECHO_ARG, rmcp_echo, rmcp_tasks};
use mcpvisor_bench::soak::{self, SoakPlan};

/// Measures mcpvisor against rmcp and the raw floor and writes the report.
#[derive(Parser)]
#[command(name = "harness")]
struct Args {
    /// A short run (1 round, 1,000 calls, 1 s windows) to check that everything works.
    #[arg(long, global = true)]
    quick: bool,
    /// Where to write BENCHMARKS.md and benchmarks.json.
    #[arg(long, global = true)]
    out: Option<PathBuf>,
    /// Rounds (overrides the plan's).
    #[arg(long, global = true)]
    rounds: Option<usize>,
    /// Sequential calls per round (overrides the plan's).
    #[arg(long, global = true)]
    calls: Option<usize>,
    /// Where the pinned peers are installed (default: the workspace's testkit/peers).
    #[arg(long, global = true)]
    peers: Option<PathBuf>,
    /// Where the third-party gateways are installed (default: bench/peers, by bench/peers/install.sh).
    #[arg(long, global = true)]
    gateway_peers: Option<PathBuf>,
    /// The mcpvisor binary to serve with (default: `mcpvisor` next to this binary;
    /// build it with `cargo build --release -p mcpvisor-cli`).
    #[arg(long, global = true)]
    mcpvisor: Option<PathBuf>,
    /// Measure only servers whose key contains this (rmcp-echo, demo, rmcp-http,
    /// rmcp-http-sessions, everything-stdio, everything-http, python-http-json, gateway,
    /// curve); the report then holds only those.
    #[arg(long)]
    only: Option<String>,
    #[command(subcommand)]
    command: Option<Only>,
}

#[derive(Subcommand)]
enum Only {
    /// Only `mcpvisor serve` (at 2025-03-26 and 2026-07-28) against FastMCP's proxy
    /// (both too), ContextForge, supergateway, mcp-proxy and mcp-hub, a direct
    /// Host::call and the `mcpvisor call` command line; the section is put into the
    /// existing BENCHMARKS.md and benchmarks.json.
    Gateway,
    /// Only the cost curve (1 to 1,000 servers, 100 to 100,000 tools); the
    /// section and its charts are put into the existing files.
    Curve,
    /// A soak: 20 servers under steady mixed load, sampled each minute; the
    /// section is put into the existing files.
    Soak {
        /// How long the load runs.
        #[arg(long, default_value_t = 60.0)]
        minutes: f64,
    },
    /// Only the cluster (built with `--features cluster`): a call from this
    /// process (node B) to a stdio server
    /// that `mcpvisor serve` (node A) supervises, against a local call and
    /// the HTTP gateway, and how long a lost node's routes take to leave; the
    /// section is put into the existing files.
    #[cfg(feature = "cluster")]
    Cluster,
}

fn main() -> anyhow::Result<()> {
    mcpvisor_demo::serve_if_requested();
    let argv: Vec<String> = std::env::args().collect();
    match argv.get(1).map(String::as_str) {
        Some(RMCP_ECHO_ARG) => rmcp_echo::serve_stdio(&argv[2..]),
        Some(RMCP_HTTP_ARG) => rmcp_http::serve(&argv[2..]),
        Some(rmcp_tasks::RMCP_TASKS_ARG) => rmcp_tasks::serve_stdio(),
        Some(memory::PROBE_ARG) => return probe(&argv[2..]),
        Some(curve::PROBE_ARG) => return probe_curve(&argv[2..]),
        Some(profile::PROFILE_ARG) => return profile_calls(&argv[2..]),
        Some(profile::PROFILE_FLEET_ARG) => return profile_fleet(&argv[2..]),
        Some(profile::PROFILE_GATEWAY_ARG) => return profile_gateway(&argv[2..]),
        _ => {}
    }
    let args = Args::parse();
    // The big fleet holds a few thousand pipes: the harness raises its own limit,
    // never the library.
    if let Err(e) = mcpvisor_bench::usage::raise_open_files_limit() {
        eprintln!("note: the open-files limit was not raised: {e}");
    }
    let mut plan = if args.quick {
        Plan::quick()
    } else {
        Plan::full()
    };
    plan.rounds = args.rounds.unwrap_or(plan.rounds);
    plan.calls = args.calls.unwrap_or(plan.calls);
    let peers = args.peers.map_or_else(Peers::in_workspace, Peers::new);
    let exe = std::env::current_exe()?;
    let gateway_setup = GatewaySetup {
        mcpvisor: args
            .mcpvisor
            .unwrap_or_else(|| GatewaySetup::sibling_mcpvisor(&exe)),
        peers: args
            .gateway_peers
            .map_or_else(GatewayPeers::in_workspace, GatewayPeers::new),
        exe: exe.clone(),
    };
    let out = args
        .out
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    let runtime = tokio::runtime::Runtime::new()?;
    if let Some(Only::Gateway) = args.command {
        let measured = runtime.block_on(gateway::run(&plan, &gateway_setup));
        let report = GatewayReport::new(&measured, &plan, &gateway_setup.peers);
        report.splice_into(&out, &Versions::detect(&peers).gateway_line())?;
        eprintln!(
            "wrote the gateway section of {}",
            out.join("BENCHMARKS.md").display()
        );
        runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        return Ok(());
    }
    let curve_plan = if args.quick {
        CurvePlan::quick()
    } else {
        CurvePlan::full()
    };
    match args.command {
        Some(Only::Curve) => {
            let measured = runtime.block_on(curve::run(&curve_plan, &exe));
            let report = CurveReport::new(&measured, &curve_plan);
            report.splice_into(&out, &Versions::detect(&peers).host_line())?;
            eprintln!(
                "wrote the curve section of {} and its charts",
                out.join("BENCHMARKS.md").display()
            );
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            return Ok(());
        }
        Some(Only::Soak { minutes }) => {
            let run = runtime.block_on(soak::run(&SoakPlan::new(minutes), &exe))?;
            SoakReport::new(run).splice_into(&out, &Versions::detect(&peers).host_line())?;
            eprintln!(
                "wrote the soak section of {}",
                out.join("BENCHMARKS.md").display()
            );
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            return Ok(());
        }
        #[cfg(feature = "cluster")]
        Some(Only::Cluster) => {
            let run = runtime.block_on(cluster::run(&plan, &gateway_setup))?;
            ClusterReport::new(run).splice_into(&out, &Versions::detect(&peers).host_line())?;
            eprintln!(
                "wrote the cluster section of {}",
                out.join("BENCHMARKS.md").display()
            );
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            return Ok(());
        }
        Some(Only::Gateway) | None => {}
    }
    let with_gateway = args.only.as_deref().is_none_or(|o| "gateway".contains(o));
    let with_curve = args.only.as_deref().is_none_or(|o| "curve".contains(o));
    let setup = Setup {
        exe,
        peers: peers.clone(),
        only: args.only,
    };
    let measurements = runtime.block_on(figures::run(&plan, &setup));
    let curve = with_curve.then(|| {
        let measured = runtime.block_on(curve::run(&curve_plan, &setup.exe));
        CurveReport::new(&measured, &curve_plan)
    });
    let gateway = if with_gateway {
        let measured = runtime.block_on(gateway::run(&plan, &gateway_setup));
        Some(GatewayReport::new(&measured, &plan, &gateway_setup.peers))
    } else {
        None
    };
    let mut report = Report::new(
        &measurements,
        &plan,
        Machine::detect(),
        Versions::detect(&peers),
        gateway,
    );
    report.curve = curve;
    match figures::shim::measure() {
        Ok(shim) => report.shim = Some(shim),
        Err(e) => eprintln!("note: the fault shim was not measured: {e}"),
    }
    report.write(&out)?;
    eprintln!("wrote {}", out.join("BENCHMARKS.md").display());
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// `probe-memory CLIENT N [URL]`: prints one JSON line of resident memory.
fn probe(args: &[String]) -> anyhow::Result<()> {
    let (client, n, url) = match args {
        [client, n] => (client, n, None),
        [client, n, url] => (client, n, Some(url.as_str())),
        _ => anyhow::bail!("usage: harness probe-memory CLIENT N [URL]"),
    };
    let n: usize = n.parse()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(memory::probe(client, n, url))?;
    println!("{}", serde_json::to_string(&result)?);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// `probe-curve fleet|tools N CALLS CHANGES`: prints one JSON line, the curve at N.
fn probe_curve(args: &[String]) -> anyhow::Result<()> {
    let [axis, n, calls, changes] = args else {
        anyhow::bail!("usage: harness probe-curve fleet|tools N CALLS CHANGES");
    };
    let axis = curve::Axis::parse(axis)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let point = runtime.block_on(curve::probe::probe(
        axis,
        n.parse()?,
        calls.parse()?,
        changes.parse()?,
    ))?;
    println!("{}", serde_json::to_string(&point)?);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// `profile-calls CLIENT N`: sequential calls only; prints the mean round trip.
fn profile_calls(args: &[String]) -> anyhow::Result<()> {
    let [client, n] = args else {
        anyhow::bail!("usage: harness profile-calls CLIENT N");
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let mean = runtime.block_on(profile::profile_calls(client, n.parse()?))?;
    println!("{client}: {mean:.1} µs per call");
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// `profile-gateway URL TOOL N`: calls through a running gateway only; prints the round trip.
fn profile_gateway(args: &[String]) -> anyhow::Result<()> {
    let [url, tool, n] = args else {
        anyhow::bail!("usage: harness profile-gateway URL TOOL|ping N");
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let (mean, p50) = runtime.block_on(profile::profile_gateway(url, tool, n.parse()?))?;
    println!("{tool}: mean {mean:.1} µs, p50 {p50:.1} µs per call");
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// `profile-fleet CLIENT N REPEATS`: fleets only; prints the mean time to all-ready.
fn profile_fleet(args: &[String]) -> anyhow::Result<()> {
    let [client, n, repeats] = args else {
        anyhow::bail!("usage: harness profile-fleet CLIENT N REPEATS");
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let (mean, cpu) =
        runtime.block_on(profile::profile_fleet(client, n.parse()?, repeats.parse()?))?;
    println!("{client}: {mean:.1} ms to all-ready, {cpu:.1} ms of host CPU per fleet");
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}
