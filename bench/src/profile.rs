//! One figure alone, for a profiler: sequential echo calls of one client to
//! the rmcp echo server, or starting a fleet of them, and nothing else in the
//! process.
//!
//! ```sh
//! valgrind --tool=callgrind target/release/harness profile-calls mcpvisor 2000
//! perf record -g target/release/harness profile-fleet mcpvisor 100 20
//! # a gateway already serving (e.g. under callgrind): its tool, or MCP pings;
//! # MCP_BEARER_TOKEN is sent as its bearer token when set
//! MCP_BEARER_TOKEN=$(mcpvisor serve --print-token) \
//!   target/release/harness profile-gateway http://127.0.0.1:PORT/mcp mcp__echo__echo 2000
//! ```

use std::time::Instant;

use anyhow::bail;

use crate::clients::{Client, Connection, HttpFloor};
use crate::servers::ServerTarget;

/// The argument that makes the harness run [`profile_calls`].
pub const PROFILE_ARG: &str = "profile-calls";
/// The argument that makes the harness run [`profile_fleet`].
pub const PROFILE_FLEET_ARG: &str = "profile-fleet";
/// The argument that makes the harness run [`profile_gateway`].
pub const PROFILE_GATEWAY_ARG: &str = "profile-gateway";

/// Sequential calls of `tool` (`{"text": …}`), or MCP `ping`s when `tool` is
/// `ping`, through a gateway already serving Streamable HTTP at `url` (for a
/// profiler attached to the gateway); returns the mean and the median round
/// trip in microseconds after 100 warm-up calls.
pub async fn profile_gateway(url: &str, tool: &str, calls: usize) -> anyhow::Result<(f64, f64)> {
    let arguments = serde_json::json!({"text": crate::servers::PAYLOAD});
    let token = std::env::var("MCP_BEARER_TOKEN").ok();
    let mut client = HttpFloor::open_mcp_with(url, tool, &arguments, token.as_deref()).await?;
    if tool == "ping" {
        client = client.pinging();
    }
    let mut connection = Connection::Http(client);
    connection.sequential(100).await?;
    let times = connection.sequential(calls).await?;
    connection.close().await;
    let mean = times.iter().map(|t| t.as_secs_f64()).sum::<f64>() * 1e6 / calls.max(1) as f64;
    let p50 = crate::stats::percentile_us(&times, 0.5).unwrap_or(f64::NAN);
    Ok((mean, p50))
}

/// Starts `n` rmcp echo servers with `client` until all are ready, `repeats`
/// times; returns the mean time to all-ready and the mean CPU time of this
/// process (all threads, start and shutdown included) per fleet, in milliseconds.
pub async fn profile_fleet(client: &str, n: usize, repeats: usize) -> anyhow::Result<(f64, f64)> {
    let target = ServerTarget::rmcp_echo(&std::env::current_exe()?);
    let mut total = 0.0;
    let cpu = crate::usage::cpu_time();
    for _ in 0..repeats.max(1) {
        total += match client {
            "mcpvisor" => crate::figures::fleet::mcpvisor(n, &target).await?,
            "rmcp" => crate::figures::fleet::rmcp(n, &target).await?,
            other => bail!("unknown client {other:?}"),
        };
    }
    let cpu_ms = (crate::usage::cpu_time() - cpu).as_secs_f64() * 1e3;
    let repeats = repeats.max(1) as f64;
    Ok((total / repeats, cpu_ms / repeats))
}

/// Opens `client`'s connection to the rmcp echo server (this binary), makes
/// 100 warm-up calls and then `calls` sequential calls, and returns the
/// mean round trip in microseconds.
pub async fn profile_calls(client: &str, calls: usize) -> anyhow::Result<f64> {
    let client = Client::parse(client)?;
    let target = ServerTarget::rmcp_echo(&std::env::current_exe()?);
    let mut connection = Connection::open(client, &target).await?;
    connection.sequential(100).await?;
    let start = Instant::now();
    connection.sequential(calls).await?;
    let mean = start.elapsed().as_secs_f64() * 1e6 / calls.max(1) as f64;
    connection.close().await;
    Ok(mean)
}
