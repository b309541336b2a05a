//! What every crate's integration tests share: the built binary, demo-server
//! specs, fast options, event waits, process and memory readings from /proc,
//! the in-process HTTP, OAuth and OIDC fixtures, the pinned third-party peers
//! (`peers/`, installed by `scripts/peers.sh`), and `mcpvisor serve` and
//! cluster nodes as child processes.

pub mod attached;
pub mod auth_server;
pub mod cluster;
mod exe;
pub mod http_server;
pub mod logs;
pub mod mcp_http;
pub mod oidc;
pub mod peers;
pub mod proc;
pub mod serve;

pub use exe::mcpvisor_exe;
/// The seeded generator the chaos engine deals with.
pub use mcpvisor_chaos::Rng;
pub use proc::{is_alive, live_group_members, peak_kib, reset_peak, rss_kib};

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mcpvisor::{HostEvent, RestartPolicy, ServerSpec, StdioSpec, SupervisorOptions};

/// A demo server from the built `mcpvisor` binary, with extra flags.
pub fn demo(name: &str, flags: &[&str]) -> ServerSpec {
    let mut args = vec!["demo-server".to_string()];
    args.extend(flags.iter().map(|f| f.to_string()));
    ServerSpec::stdio(name, StdioSpec::new(crate::mcpvisor_exe(), args))
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
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("peers")
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

/// Runs the ignored test `test` of the module `module` (pass `module_path!()`)
/// alone, in a fresh process of this test binary, with `env` set and its
/// output piped: for a test that needs several processes of its own.
pub fn rerun_alone(module: &str, test: &str, env: &[(&str, &str)]) -> std::process::Child {
    // The harness names a test by its path without the crate's name.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    };
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args(["--exact", &name, "--ignored", "--nocapture"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.spawn().expect("re-run this test binary")
}

/// A new, empty directory for one test, `mcpvisor-<name>-<pid>-<n>` under the
/// system's temporary directory: the count keeps apart two tests of one
/// binary that pass the same name.
pub fn scratch_dir(name: &str) -> PathBuf {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let n = MADE.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("mcpvisor-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a scratch directory");
    dir
}
