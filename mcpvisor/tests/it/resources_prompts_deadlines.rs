//! Requests other than tool calls (`resources/read` here) go on the call lane
//! with the calls' rules: one past the request timeout fails with
//! `CallError::Timeout` and ends the connection, which is replaced; one whose
//! future is dropped is cancelled at the server with `notifications/cancelled`.

use std::time::Duration;

use mcpvisor::HttpSpec;
use mcpvisor::{CallError, Host, HostEvent, ServerSpec};
use serde_json::json;
use testkit::http_server::{HttpMcpServer, Script};
use testkit::{call, eventually, fast_options, next_ready, wait_for};

async fn start(timeout: Duration) -> (HttpMcpServer, Host) {
    let server = HttpMcpServer::start(Script {
        hang_resource_reads: true,
        ..Script::default()
    })
    .await;
    let mut options = fast_options();
    options.request_timeout = timeout;
    let spec = ServerSpec::http("fx", HttpSpec::new(server.url.clone()));
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    (server, host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_read_past_its_timeout_ends_the_connection() {
    let (server, host) = start(Duration::from_millis(300)).await;
    let mut events = Box::pin(host.events());
    let read = tokio::time::timeout(
        Duration::from_secs(20),
        host.read_resource("fx", "note://stuck"),
    )
    .await
    .expect("the read ended by its own deadline");
    assert!(matches!(read, Err(CallError::Timeout { .. })), "{read:?}");
    wait_for(
        &mut events,
        Duration::from_secs(10),
        |e| matches!(e, HostEvent::ServerRestarting { server, .. } if &**server == "fx"),
    )
    .await;
    wait_for(
        &mut events,
        Duration::from_secs(10),
        |e| matches!(e, HostEvent::ServerReady { server, .. } if &**server == "fx"),
    )
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    assert_eq!(
        server
            .rpc_methods()
            .iter()
            .filter(|m| m.as_deref() == Some("initialize"))
            .count(),
        2,
        "a new connection"
    );
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_resource_read_is_cancelled_at_the_server() {
    let (server, host) = start(Duration::from_secs(30)).await;
    let reading = {
        let host = host.clone();
        tokio::spawn(async move { host.read_resource("fx", "note://stuck").await })
    };
    let sent = eventually(Duration::from_secs(10), || {
        server
            .rpc_methods()
            .iter()
            .any(|m| m.as_deref() == Some("resources/read"))
    })
    .await;
    assert!(sent, "the read reached the server");
    let id = server
        .requests()
        .into_iter()
        .find(|r| r.rpc_method.as_deref() == Some("resources/read"))
        .and_then(|r| r.rpc_id)
        .expect("the read's id");
    reading.abort();
    let cancelled = eventually(Duration::from_secs(10), || {
        server.requests().iter().any(|r| {
            r.rpc_method.as_deref() == Some("notifications/cancelled")
                && r.body.as_ref().and_then(|b| b.pointer("/params/requestId")) == Some(&id)
        })
    })
    .await;
    assert!(cancelled, "no notifications/cancelled for request {id}");
    // The connection goes on.
    let r = call(&host, "mcp__fx__echo", json!({"text": "still"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "still");
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}
