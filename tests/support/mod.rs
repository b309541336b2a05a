//! Shared helpers of the integration tests: demo-server specs, fast options,
//! event waits, and process and memory readings from /proc.
#![allow(dead_code)]

pub mod attached;
pub mod auth_server;
pub mod cluster;
pub mod http_server;
pub mod logs;
pub mod mcp_http;
pub mod oidc;
pub mod peers;
pub mod proc;
pub mod serve;

#[allow(unused_imports)]
pub use proc::{is_alive, live_group_members, peak_kib, reset_peak, rss_kib};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mcpvisor::{HostEvent, RestartPolicy, ServerSpec, StdioSpec, SupervisorOptions};

/// A demo server from the built `mcpvisor` binary, with extra flags.
pub fn demo(name: &str, flags: &[&str]) -> ServerSpec {
    let mut args = vec!["demo-server".to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    ServerSpec::stdio(name, StdioSpec::new(env!("CARGO_BIN_EXE_mcpvisor"), args))
}

/// Options with short teardown and restart delays, so tests do not wait on defaults.
pub fn fast_options() -> SupervisorOptions {
    let mut options = SupervisorOptions::default();
    options.request_timeout = Duration::from_secs(30);
    options.startup_timeout = Duration::from_secs(20);
    options.restart = RestartPolicy {
        initial_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
        max_restarts: 1000,
        ..RestartPolicy::default()
    };
    options.stdio.grace = Duration::from_millis(200);
    options
}

/// Waits for the first event matching `pred`, failing the test after `within`.
pub async fn wait_for<S, F>(events: &mut S, within: Duration, mut pred: F) -> HostEvent
where
    S: Stream<Item = HostEvent> + Unpin,
    F: FnMut(&HostEvent) -> bool,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, events.next()).await {
            Ok(Some(e)) if pred(&e) => return e,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("event stream ended"),
            Err(_) => panic!("no matching event within {within:?}"),
        }
    }
}

/// Every event until `quiet` passes without one.
pub async fn drain<S: Stream<Item = HostEvent> + Unpin>(
    events: &mut S,
    quiet: Duration,
) -> Vec<HostEvent> {
    let mut out = Vec::new();
    while let Ok(Some(e)) = tokio::time::timeout(quiet, events.next()).await {
        out.push(e);
    }
    out
}

/// Polls `cond` until it holds or `within` passes; returns whether it held.
pub async fn eventually(within: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where `.ci/peers` installs the third-party servers.
pub fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers")
}

/// Waits for the next `ServerReady` event (up to 20 s).
pub async fn next_ready<S: Stream<Item = HostEvent> + Unpin>(events: &mut S) -> HostEvent {
    wait_for(events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerReady { .. })
    })
    .await
}

/// Calls `name` with default options.
pub async fn call(
    host: &mcpvisor::Host,
    name: &str,
    arguments: serde_json::Value,
) -> Result<mcpvisor::CallToolResult, mcpvisor::CallError> {
    host.call(name, arguments, mcpvisor::CallOptions::default())
        .await
}
