//! A server cannot make a `tools/list` cost unbounded memory: cursors are kept
//! as hashes and capped in length, and one listing's bytes are capped, each
//! with a typed error naming the server.

use std::time::Duration;

use mcpvisor::{Host, HostEvent};
use testkit::{demo, fast_options, rss_kib, wait_for};

fn failure_reason(e: &HostEvent) -> Option<String> {
    match e {
        HostEvent::ServerRestarting { reason, .. } | HostEvent::ServerFailed { reason, .. } => {
            Some(reason.to_string())
        }
        _ => None,
    }
}

async fn first_failure(hostile: &str, max_bytes: Option<usize>) -> (String, u64) {
    let mut options = fast_options();
    options.restart.max_restarts = 0;
    options.startup_timeout = Duration::from_secs(120);
    if let Some(b) = max_bytes {
        options.listing.max_bytes = b;
    }
    let before = rss_kib();
    let host = Host::start(vec![demo("lister", &["--hostile", hostile])], options)
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let failed = wait_for(&mut events, Duration::from_secs(90), |e| {
        failure_reason(e).is_some()
    })
    .await;
    let grown = rss_kib().saturating_sub(before);
    host.shutdown().await;
    (failure_reason(&failed).unwrap(), grown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_cursors_are_refused_not_kept() {
    let (reason, grown_kib) = first_failure("huge-cursors", None).await;
    assert!(reason.contains("server `lister`"), "{reason}");
    assert!(
        reason.contains("cursor is longer than 16384 bytes"),
        "{reason}"
    );
    assert!(grown_kib < 64 * 1024, "host grew {grown_kib} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_listing_stops_at_its_byte_cap() {
    let cap = 8 * 1024 * 1024;
    let (reason, grown_kib) = first_failure("endless-listing", Some(cap)).await;
    assert!(reason.contains("server `lister`"), "{reason}");
    assert!(
        reason.contains(&format!("larger than {cap} bytes")),
        "{reason}"
    );
    assert!(grown_kib < 96 * 1024, "host grew {grown_kib} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_long_cursors_cost_their_hashes_not_their_bytes() {
    // 10,000 distinct 15 KiB cursors: ~150 MiB if kept, a few hundred KiB as hashes.
    let (reason, grown_kib) = first_failure("long-cursors", None).await;
    assert!(reason.contains("more than 10000 pages"), "{reason}");
    assert!(grown_kib < 48 * 1024, "host grew {grown_kib} KiB");
}
