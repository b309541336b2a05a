//! Oversize input never makes the host buffer it: a 1 MiB + 1 line over stdio and
//! a 10 MiB SSE event over HTTP fail with typed errors while the host's *peak*
//! memory stays flat — a client that buffered the whole payload and freed it
//! again would still show in the peak.
//!
//! The peak (VmHWM) is per process, and the test harness runs other tests and
//! the HTTP fixture in this one; so each case runs the host in a fresh process
//! of this test binary (`case_…`, ignored unless asked for by its parent), which
//! resets the peak after warming up and prints how far it rose.

use std::process::Command;

use mcpvisor::{CallError, Host, ServerSpec};
use mcpvisor::{HttpSpec, TransportError};
use serde_json::json;
use testkit::http_server::{HttpMcpServer, Script};
use testkit::{call, demo, fast_options, next_ready, peak_kib, reset_peak};

/// Set for the fresh process that runs one case.
const CASE: &str = "MCPVISOR_MEMORY_CASE";
/// Where the HTTP case finds the fixture its parent runs.
const URL: &str = "MCPVISOR_MEMORY_URL";
/// What a case prints, followed by KiB.
const REPORT: &str = "peak growth KiB: ";
/// A client that buffered one payload would rise by at least 1 MiB (stdio) or
/// 10 MiB (SSE); working memory stays well under this.
const FLAT_KIB: u64 = 4 * 1024;

/// Runs `case` alone in a fresh process of this binary; how far its peak rose.
fn in_a_fresh_process(case: &str, env: &[(&str, String)]) -> u64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            case,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CASE, "1")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{case} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The harness may print its own words on the same line first.
    stdout
        .lines()
        .find_map(|l| l.split_once(REPORT).map(|(_, n)| n))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .inspect(|growth| eprintln!("{case}: the peak rose by {growth} KiB"))
        .unwrap_or_else(|| panic!("{case} reported no peak:\n{stdout}"))
}

/// In a case: the peak is measured from here.
fn start_measuring() -> u64 {
    reset_peak()
}

/// In a case: how far the peak rose since `start`.
fn report(start: u64) {
    println!("{REPORT}{}", peak_kib().saturating_sub(start));
}

#[test]
fn oversize_stdio_frames_are_typed_errors_with_a_flat_peak() {
    let growth = in_a_fresh_process("case_stdio_floods", &[]);
    assert!(growth < FLAT_KIB, "the peak rose by {growth} KiB");
}

#[tokio::test]
#[ignore = "run in a fresh process by oversize_stdio_frames_are_typed_errors_with_a_flat_peak"]
async fn case_stdio_floods() {
    assert!(std::env::var_os(CASE).is_some(), "run by its parent test");
    let host = Host::start(vec![demo("demo", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    // Exactly 1 MiB is a valid frame (and warms up the buffers it needs).
    let r = call(&host, "mcp__demo__flood", json!({"bytes": 1_048_576}))
        .await
        .unwrap();
    assert!(r.text().len() > 1_000_000);
    drop(r);
    let start = start_measuring();
    for round in 0..5 {
        if round > 0 {
            next_ready(&mut events).await;
        }
        let e = call(&host, "mcp__demo__flood", json!({"bytes": 1_048_577}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                CallError::Transport {
                    source: TransportError::FrameTooLarge { limit: 1_048_576 },
                    ..
                }
            ),
            "{e}"
        );
    }
    report(start);
    host.shutdown().await;
}

#[tokio::test]
async fn a_10_mib_sse_event_is_a_typed_error_with_a_flat_peak() {
    // The fixture runs here; the host, in the fresh process.
    let server = HttpMcpServer::start(Script {
        huge_event_tool: Some("huge".into()),
        ..Script::default()
    })
    .await;
    let url = server.url.clone();
    let growth =
        tokio::task::spawn_blocking(move || in_a_fresh_process("case_sse_floods", &[(URL, url)]))
            .await
            .unwrap();
    assert!(growth < FLAT_KIB, "the peak rose by {growth} KiB");
}

#[tokio::test]
#[ignore = "run in a fresh process by a_10_mib_sse_event_is_a_typed_error_with_a_flat_peak"]
async fn case_sse_floods() {
    let url = std::env::var(URL).expect("run by its parent test");
    let mut options = fast_options();
    options.http.message_limit = 1024 * 1024;
    let spec = ServerSpec::http(
        "fx",
        HttpSpec {
            url,
            headers: Vec::new(),
            oauth: None,
        },
    );
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    // One oversize event first, so buffers that are reused are already counted.
    let _ = call(&host, "mcp__fx__huge", json!({})).await;
    let start = start_measuring();
    for _ in 0..3 {
        let e = call(&host, "mcp__fx__huge", json!({})).await.unwrap_err();
        assert!(
            matches!(
                e,
                CallError::Transport {
                    source: TransportError::MessageTooLarge { limit: 1_048_576 },
                    ..
                }
            ),
            "{e}"
        );
    }
    report(start);
    assert!(!matches!(
        host.servers()[0].state,
        mcpvisor::ServerState::Failed { .. }
    ));
    host.shutdown().await;
}

/// Floods are read at the host's pace, not buffered: the peak stays under this
/// while a server sends notifications (or stderr) as fast as it can. A queue
/// without a bound fills at tens of MiB per second.
const FLOOD_KIB: u64 = 2 * 1024;

/// A host with a healthy demo server and one that misbehaves as `behaviour`.
async fn host_beside(name: &str, behaviour: &str) -> Host {
    let specs = vec![demo("healthy", &[]), demo(name, &["--hostile", behaviour])];
    let host = Host::start(specs, fast_options()).await.unwrap();
    let statuses = host.wait_ready(std::time::Duration::from_secs(60)).await;
    assert!(
        statuses
            .iter()
            .all(|s| s.state == mcpvisor::ServerState::Ready),
        "{statuses:?}"
    );
    host
}

#[test]
fn a_notification_flood_keeps_a_flat_peak() {
    let growth = in_a_fresh_process("case_notification_flood", &[]);
    assert!(growth < FLOOD_KIB, "the peak rose by {growth} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run in a fresh process by a_notification_flood_keeps_a_flat_peak"]
async fn case_notification_flood() {
    use futures::{FutureExt, StreamExt};
    assert!(std::env::var_os(CASE).is_some(), "run by its parent test");
    let host = host_beside("flood", "notification-flood").await;
    let mut events = Box::pin(host.events());
    // Let the flood fill every queue on its way before the peak is reset.
    let warm_up = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    while let Ok(Some(_)) = tokio::time::timeout_at(warm_up, events.next()).await {}
    let start = start_measuring();
    let mut seen = 0u64;
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut calls = 0;
    while tokio::time::Instant::now() < until {
        let text = format!("during the flood {calls}");
        let r = call(&host, "mcp__healthy__echo", json!({ "text": text }))
            .await
            .unwrap();
        assert_eq!(r.text(), text);
        calls += 1;
        while let Some(Some(e)) = events.next().now_or_never() {
            seen += match e {
                mcpvisor::HostEvent::ServerLog { server, .. } if &*server == "flood" => 1,
                mcpvisor::HostEvent::EventsLost { count } => count,
                _ => 0,
            };
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(seen > 1_000, "the flood was real: {seen} notifications");
    println!("flood notifications seen: {seen}");
    report(start);
    host.shutdown().await;
}

#[test]
fn a_stderr_flood_keeps_a_flat_peak() {
    let growth = in_a_fresh_process("case_stderr_flood", &[]);
    assert!(growth < FLOOD_KIB, "the peak rose by {growth} KiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run in a fresh process by a_stderr_flood_keeps_a_flat_peak"]
async fn case_stderr_flood() {
    assert!(std::env::var_os(CASE).is_some(), "run by its parent test");
    let host = host_beside("noisy", "stderr-flood").await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let start = start_measuring();
    let until = tokio::time::Instant::now() + std::time::Duration::from_secs(3);
    let mut calls = 0;
    while tokio::time::Instant::now() < until {
        let text = format!("over the noise {calls}");
        let r = call(&host, "mcp__noisy__echo", json!({ "text": text }))
            .await
            .unwrap();
        assert_eq!(r.text(), text);
        calls += 1;
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    report(start);
    host.shutdown().await;
}
