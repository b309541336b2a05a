//! MCP 2026-07-28 over Streamable HTTP, what arrives besides answers and
//! what a connection keeps: list changes and resource updates on
//! `subscriptions/listen` (opened again after a restart and with each new
//! subscription), lists read again once their `ttlMs` runs out, and the log
//! level each request asks for. Against the TypeScript SDK v2 server (see
//! `stateless_http`).

use std::time::Duration;

use mcpvisor::HostEvent;
use serde_json::{Value, json};
use testkit::{call, eventually, wait_for};

use crate::stateless_http::{logged, posted, ready_stateless, start, ts_v2};

#[tokio::test]
async fn a_list_change_arrives_on_the_listen_stream() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let listens = || posted(&server, "subscriptions/listen");
    assert!(eventually(Duration::from_secs(10), || listens() == 1).await);
    let has = |name: &str| host.tools().iter().any(|t| t.name.to_string() == name);
    assert!(!has("mcp__ts__announced"));
    call(&host, "mcp__ts__announce", json!({})).await.unwrap();
    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
    assert!(
        eventually(Duration::from_secs(10), || has("mcp__ts__announced")).await,
        "{}",
        server.output()
    );
    let here = call(&host, "mcp__ts__announced", json!({})).await.unwrap();
    assert_eq!(here.text(), "here");
    host.shutdown().await;
}

#[tokio::test]
async fn a_subscription_rides_in_the_listen_stream_and_outlives_a_restart() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let listens = || posted(&server, "subscriptions/listen");
    assert!(eventually(Duration::from_secs(10), || listens() == 1).await);
    host.subscribe("ts", "note://board").await.unwrap();
    // Listened for again, with the resource.
    assert!(eventually(Duration::from_secs(10), || listens() == 2).await);
    let updated = |e: &HostEvent| matches!(e, HostEvent::ResourceUpdated { uri, .. } if &**uri == "note://board");
    // The server's stream may lag the POST: touch until an update arrives.
    let mut seen = false;
    for _ in 0..20 {
        call(&host, "mcp__ts__touch", json!({})).await.unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(1500), async {
            use futures::StreamExt;
            while let Some(e) = events.next().await {
                if updated(&e) {
                    return;
                }
            }
        })
        .await;
        if waited.is_ok() {
            seen = true;
            break;
        }
    }
    assert!(seen, "no resource update: {}", server.output());

    host.restart("ts").await.unwrap();
    ready_stateless(&host, &mut events).await;
    // The new connection listens again, with the subscription.
    assert!(eventually(Duration::from_secs(10), || listens() == 3).await);
    call(&host, "mcp__ts__touch", json!({})).await.unwrap();
    wait_for(&mut events, Duration::from_secs(10), updated).await;

    host.unsubscribe("ts", "note://board").await.unwrap();
    assert!(eventually(Duration::from_secs(10), || listens() == 4).await);
    host.shutdown().await;
}

#[tokio::test]
async fn lists_are_read_again_once_stale() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let count = |method: &str| posted(&server, method);
    // The SDK's lists say `ttlMs: 0`: stale at once, so each is read when needed.
    let resources = host.resources().await;
    assert_eq!(resources.entries.len(), 1, "{:?}", resources.failed);
    host.resources().await;
    assert_eq!(count("resources/list"), 2, "{}", server.output());

    // A tool added with no notice: the next calls find the list stale and it
    // is read again (not more than once a second, however many calls).
    let listed_before = count("tools/list");
    call(&host, "mcp__ts__add_quietly", json!({}))
        .await
        .unwrap();
    let has = |name: &str| host.tools().iter().any(|t| t.name.to_string() == name);
    let mut found = false;
    for _ in 0..40 {
        call(&host, "mcp__ts__echo", json!({"message": "x"}))
            .await
            .unwrap();
        if has("mcp__ts__quiet") {
            found = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(found, "{}", server.output());
    // However many calls, not more than once a second.
    for _ in 0..200 {
        call(&host, "mcp__ts__echo", json!({"message": "x"}))
            .await
            .unwrap();
    }
    let relisted = count("tools/list") - listed_before;
    assert!((1..=20).contains(&relisted), "{relisted} re-listings");
    let shh = call(&host, "mcp__ts__quiet", json!({})).await.unwrap();
    assert_eq!(shh.text(), "shh");
    host.shutdown().await;
}

#[tokio::test]
async fn the_log_level_rides_in_each_request_and_in_the_next_connection() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let levels = || {
        logged(&server)
            .iter()
            .filter(|r| r["mcp-name"] == "echo")
            .map(|r| r.get("logLevel").cloned().unwrap_or(Value::Null))
            .collect::<Vec<_>>()
    };
    call(&host, "mcp__ts__echo", json!({"message": "a"}))
        .await
        .unwrap();
    host.set_log_level("ts", mcpvisor::LogLevel::Warning)
        .await
        .unwrap();
    call(&host, "mcp__ts__echo", json!({"message": "b"}))
        .await
        .unwrap();
    assert_eq!(levels(), vec![Value::Null, json!("warning")]);
    host.restart("ts").await.unwrap();
    ready_stateless(&host, &mut events).await;
    call(&host, "mcp__ts__echo", json!({"message": "c"}))
        .await
        .unwrap();
    assert_eq!(
        levels().last(),
        Some(&json!("warning")),
        "{}",
        server.output()
    );
    host.shutdown().await;
}
