//! One point of the cost curve, measured in this (fresh) process and printed
//! as one JSON line.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure};
use mcpvisor::{CallOptions, Host, ServerSpec, ServerState, StdioSpec, SupervisorOptions};
use mcpvisor_protocol::state::listing::{ListingLimits, json_size};

use super::super::calls::ms;
use super::published::change_published;
use super::{Axis, Point};
use crate::servers::rmcp_echo::{TOOLS_FLAG, extra_tool_name};
use crate::servers::{PAYLOAD, RMCP_ECHO_ARG};
use crate::stats::{median, percentile_us};
use crate::usage::{open_fds, raise_open_files_limit, resident, threads};

/// Long enough for a thousand servers started at once on two busy cores.
const READY_WITHIN: Duration = Duration::from_secs(300);

/// Measures the point `x` of `axis`; `calls` sequential calls for the call
/// p50, `changes` tool-list changes for each change figure.
pub async fn probe(axis: Axis, x: usize, calls: usize, changes: usize) -> anyhow::Result<Point> {
    let exe = std::env::current_exe()?;
    match axis {
        Axis::Fleet => fleet(&exe, x, calls, changes).await,
        Axis::Tools => tools(&exe, x, changes).await,
    }
}

async fn fleet(exe: &Path, n: usize, calls: usize, changes: usize) -> anyhow::Result<Point> {
    let limit = raise_open_files_limit()?;
    ensure!(
        limit as usize > 3 * n + 64,
        "{n} servers need more open files than the hard limit {limit}"
    );
    let specs = (0..n).map(|i| spec(exe, &format!("echo{i}"), 0)).collect();
    let (host, ready_ms) = start(specs, options()).await?;
    let mut values = idle_usage().await;
    values.insert("ready_ms".into(), ready_ms);
    let echo = "mcp__echo0__echo";
    let arguments = serde_json::json!({ "text": PAYLOAD });
    for _ in 0..calls / 10 {
        host.call(echo, arguments.clone(), CallOptions::default())
            .await?;
    }
    let mut rtts = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = Instant::now();
        let answer = host
            .call(echo, arguments.clone(), CallOptions::default())
            .await?;
        rtts.push(start.elapsed());
        ensure!(!answer.is_error, "echo failed: {}", answer.text());
    }
    if let Some(p50) = percentile_us(&rtts, 0.5) {
        values.insert("call_p50_us".into(), p50);
    }
    let mut published = Vec::with_capacity(changes);
    for i in 0..changes {
        published.push(change_published(&host, "echo0", &extra_tool_name(i)).await?);
    }
    if let Some(v) = median(&published) {
        values.insert("publish_ms".into(), v);
    }
    host.shutdown().await;
    Ok(Point {
        x: n,
        values,
        notes: Vec::new(),
    })
}

async fn tools(exe: &Path, n: usize, changes: usize) -> anyhow::Result<Point> {
    let (limits, notes) = listing_limits(n + changes);
    let mut options = options();
    options.listing = limits;
    let specs = vec![spec(exe, "big", n), spec(exe, "small", 0)];
    let (host, ready_ms) = start(specs, options).await?;
    let mut values = idle_usage().await;
    values.insert("ready_ms".into(), ready_ms);
    let mut relist = Vec::with_capacity(changes);
    let mut rebuild = Vec::with_capacity(changes);
    let mut snapshot = Vec::with_capacity(changes);
    for i in 0..changes {
        relist.push(change_published(&host, "big", &extra_tool_name(n + i)).await?);
        rebuild.push(change_published(&host, "small", &extra_tool_name(i)).await?);
        let start = Instant::now();
        let listed = host.tools().len();
        snapshot.push(ms(start.elapsed()));
        // echo and grow on both servers, the big one's tools, and what grew.
        ensure!(
            listed == n + 4 + 2 * (i + 1),
            "Host::tools() has {listed} tools"
        );
    }
    for (key, samples) in [
        ("relist_ms", relist),
        ("rebuild_ms", rebuild),
        ("tools_ms", snapshot),
    ] {
        if let Some(v) = median(&samples) {
            values.insert(key.into(), v);
        }
    }
    host.shutdown().await;
    Ok(Point {
        x: n,
        values,
        notes,
    })
}

/// A curve echo server named `name` listing `extra` tools beyond `echo` and `grow`.
fn spec(exe: &Path, name: &str, extra: usize) -> ServerSpec {
    let args = [
        RMCP_ECHO_ARG.to_string(),
        TOOLS_FLAG.into(),
        extra.to_string(),
    ];
    ServerSpec::stdio(name, StdioSpec::new(exe.to_string_lossy(), args))
}

fn options() -> SupervisorOptions {
    let mut options = SupervisorOptions::default();
    // A thousand servers starting together on two cores each wait their turn.
    options.startup_timeout = READY_WITHIN;
    options
}

/// Starts a host and waits until every server is ready; the milliseconds it took.
async fn start(specs: Vec<ServerSpec>, options: SupervisorOptions) -> anyhow::Result<(Host, f64)> {
    let start = Instant::now();
    let host = Host::start(specs, options).await?;
    let statuses = host.wait_ready(READY_WITHIN).await;
    let ready_ms = ms(start.elapsed());
    if let Some(down) = statuses.iter().find(|s| s.state != ServerState::Ready) {
        let state = format!("{:?}", down.state);
        host.shutdown().await;
        bail!("server {} is not ready: {state}", down.name);
    }
    // Later subscribers see only what follows; nothing waits for what came before.
    drop(host.events());
    Ok((host, ready_ms))
}

/// RSS, threads and open files once the host has sat idle for a second.
async fn idle_usage() -> BTreeMap<String, f64> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let r = resident();
    BTreeMap::from([
        ("rss_mib".into(), r.total_kib as f64 / 1024.0),
        ("anon_mib".into(), r.anon_kib as f64 / 1024.0),
        ("threads".into(), threads() as f64),
        ("fds".into(), open_fds() as f64),
    ])
}

/// The host's default listing bounds, raised where `tools` listed tools
/// (plus `echo` and `grow`) would pass them, with a note of each raise: the
/// harness raises them, the library's defaults stay as they are.
fn listing_limits(tools: usize) -> (ListingLimits, Vec<String>) {
    let mut limits = ListingLimits::default();
    let mut notes = Vec::new();
    let entries = tools + 2;
    if entries > limits.max_entries {
        notes.push(format!(
            "the tools curve raises the host's listing bound on tools per server from {} \
             (the default) to {entries}",
            limits.max_entries
        ));
        limits.max_entries = entries;
    }
    let one = serde_json::json!({
        "name": extra_tool_name(0),
        "description": "A listed tool of the cost curve",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    });
    // The pages' envelopes and the two named tools are far under one tool per page.
    let bytes = (json_size(&one) + 1) * (entries + entries / 500 + 1);
    if bytes > limits.max_bytes {
        notes.push(format!(
            "the tools curve raises the host's listing bound on bytes per server from {} MiB \
             (the default) to {} MiB",
            limits.max_bytes >> 20,
            (bytes >> 20) + 1
        ));
        limits.max_bytes = ((bytes >> 20) + 1) << 20;
    }
    (limits, notes)
}
