//! Oversize input never makes the host buffer it: a 1 MiB + 1 line over stdio and
//! a 10 MiB SSE event over HTTP fail with typed errors while RSS stays flat.
//!
//! RSS is per process, so these tests live in their own test binary and take a
//! lock: nothing else allocates in this process while they measure.

mod support;

use mcpvisor::transports::{HttpSpec, TransportError};
use mcpvisor::{CallError, Host, ServerSpec};
use serde_json::json;
use support::http_server::{HttpMcpServer, Script};
use support::{call, demo, fast_options, next_ready, rss_kib};

static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn oversize_stdio_frames_are_typed_errors_with_flat_memory() {
    let _alone = ONE_AT_A_TIME.lock().await;
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
    let before = rss_kib();
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
    let growth_kib = rss_kib().saturating_sub(before);
    // Five floods of 1 MiB + 1: a client that buffered them would grow by several MiB each.
    assert!(growth_kib < 4 * 1024, "RSS grew by {growth_kib} KiB");
    host.shutdown().await;
}

#[tokio::test]
async fn a_10_mib_sse_event_is_a_typed_error_with_flat_memory() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = HttpMcpServer::start(Script {
        huge_event_tool: Some("huge".into()),
        ..Script::default()
    })
    .await;
    let mut options = fast_options();
    options.http.message_limit = 1024 * 1024;
    let spec = ServerSpec::http(
        "fx",
        HttpSpec {
            url: server.url.clone(),
            headers: Vec::new(),
            oauth: None,
        },
    );
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    // One oversize event first, so buffers that are reused are already counted.
    let _ = call(&host, "mcp__fx__huge", json!({})).await;
    let before = rss_kib();
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
    let growth_kib = rss_kib().saturating_sub(before);
    // Three more 10 MiB events: buffering one would show as 10 MiB.
    assert!(growth_kib < 4 * 1024, "RSS grew by {growth_kib} KiB");
    assert!(!matches!(
        host.servers()[0].state,
        mcpvisor::ServerState::Failed { .. }
    ));
    host.shutdown().await;
}
