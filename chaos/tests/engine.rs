//! A CI-sized chaos run on the chaos engine (`mcpvisor-chaos`, the engine
//! behind `mcpvisor chaos`): eight stdio demo servers and one Streamable HTTP
//! server under steady echo and ping load, two decks of faults (every kind
//! twice, in a seeded order) dealt through `Host::inject`, the isolation
//! invariants checked after each cycle. The same run goes longer as
//! `cargo run --release --example chaos`.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::HttpSpec;
use mcpvisor::{FaultKind, ServerSpec};
use mcpvisor_chaos::{ChaosOptions, Load, Progress};
use serde_json::json;
use testkit::demo;
use testkit::http_server::{GetMode, HttpMcpServer, Script};

/// Stdio servers of the run.
const STDIO: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_cycles_keep_every_invariant() {
    // An open GET stream, so its thread is part of what must not leak; no
    // record of requests, since memory is measured.
    let http = HttpMcpServer::start(Script {
        unrecorded: true,
        get: GetMode::Stream {
            events: 0,
            then_close: false,
            interval_ms: 1000,
        },
        ..Script::default()
    })
    .await;
    let mut servers: Vec<ServerSpec> = (0..STDIO).map(|i| demo(&format!("s{i}"), &[])).collect();
    servers.push(ServerSpec::http("h0", HttpSpec::new(http.url.clone())));
    // The load as a user writes it: echo three times as often as ping, each
    // echo's answer its own text (so an answer that reached another call is caught).
    let mut calls = Vec::new();
    for server in servers.iter().map(|s| &s.name) {
        calls.push(json!({
            "tool": format!("mcp__{server}__echo"),
            "arguments": {"text": "chaos {call}"},
            "expect": "chaos {call}",
            "weight": 3,
        }));
        calls.push(json!({"ping": server}));
    }
    let load = Load::from_json(&serde_json::Value::Array(calls).to_string()).unwrap();
    let kinds = FaultKind::ALL.len();
    let mut chaos = ChaosOptions::default();
    chaos.seed = 0x6d63_7076;
    chaos.cycles = Some(2 * kinds);
    chaos.faults = FaultKind::ALL.map(FaultKind::default_fault).to_vec();
    // A stop shorter than the calls' timeout: calls wait it out.
    chaos.faults[1] = "stop:1s".parse().unwrap();
    chaos.load = load;
    chaos.call_timeout = Duration::from_secs(3);
    chaos.on_progress = Some(Arc::new(|p: &Progress| eprintln!("chaos: {p:?}")));

    let report = mcpvisor_chaos::run(servers, mcpvisor_chaos::brisk_supervisor_options(), chaos)
        .await
        .unwrap();
    http.stop();
    eprintln!("{report}");
    assert!(report.passed(), "{report}");
    assert_eq!(report.cycles, 2 * kinds);
    // Every kind was dealt twice, and each time the server came back.
    assert_eq!(report.faults.len(), kinds, "{report}");
    for (kind, tally) in &report.faults {
        assert_eq!(
            (tally.dealt, tally.recovered, tally.skipped),
            (2, 2, 0),
            "{kind}: {report}"
        );
    }
    assert_eq!(report.recovery.count, 2 * kinds as u64);
    assert_eq!(report.calls.healthy_failed, 0, "{report}");
    assert!(report.calls.healthy_ok > 100, "the load was real: {report}");
    assert!(
        report.calls.faulted_failed > 0,
        "the faults were real: {report}"
    );
    // Kill, close-stdin and drop restart once each, exit during initialize twice.
    assert!(report.restarts >= 10, "{report}");
    assert!(report.process_groups > STDIO as u64, "{report}");
    assert_eq!(report.leaked_processes, 0);
    assert_eq!(report.panics, 0);
    // Once the host is gone, its connections' threads and fds are too (tokio's
    // blocking pool may still hold the thread that joined the GET stream's;
    // mcpvisor/tests/leaks.rs accounts for threads exactly).
    let r = &report.resources;
    assert!(
        r.after_shutdown.threads <= r.baseline.threads + 2,
        "{report}"
    );
    assert!(r.after_shutdown.fds < r.baseline.fds, "{report}");
}
