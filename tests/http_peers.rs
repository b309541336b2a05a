//! Real third-party servers over Streamable HTTP: server-everything (npm) and
//! the Python SDK in both answer modes.

mod support;

use std::time::Duration;

use mcpvisor::transports::HttpSpec;
use mcpvisor::{Host, HostEvent, ServerSpec, ServerState};
use serde_json::json;
use support::peers::PeerServer;
use support::{call, eventually, fast_options, wait_for};

fn http(name: &str, url: &str) -> ServerSpec {
    ServerSpec::http(
        name,
        HttpSpec {
            url: url.to_string(),
            headers: Vec::new(),
            oauth: None,
        },
    )
}

#[tokio::test]
async fn server_everything_over_http() {
    let peer = PeerServer::everything();
    let host = Host::start(vec![http("ev", &peer.url)], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(
        statuses[0].state,
        ServerState::Ready,
        "{statuses:?}\n{}",
        peer.output()
    );
    assert!(host.tools().len() >= 10);
    let r = call(&host, "mcp__ev__echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: over http");
    // Its log notifications arrive on the GET stream once simulated logging is on.
    call(&host, "mcp__ev__toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    let log = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerLog { .. })
    })
    .await;
    let HostEvent::ServerLog { server, .. } = log else {
        unreachable!()
    };
    assert_eq!(&*server, "ev");
    // Many calls in flight on the shared client.
    let calls = (0..64).map(|i| {
        host.call(
            "mcp__ev__echo",
            json!({"message": format!("m{i}")}),
            Default::default(),
        )
    });
    for (i, r) in futures::future::join_all(calls)
        .await
        .into_iter()
        .enumerate()
    {
        assert_eq!(r.unwrap().text(), format!("Echo: m{i}"));
    }
    host.shutdown().await;
    assert!(
        eventually(Duration::from_secs(5), || peer
            .output()
            .contains("Received session termination request"))
        .await,
        "the session was deleted at shutdown:\n{}",
        peer.output()
    );
}

async fn python_over_http(json_answers: bool) {
    let peer = PeerServer::python(json_answers);
    let host = Host::start(vec![http("py", &peer.url)], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(
        statuses[0].state,
        ServerState::Ready,
        "{statuses:?}\n{}",
        peer.output()
    );
    let mut names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        vec!["mcp__py__add", "mcp__py__announce", "mcp__py__echo"]
    );
    let r = call(&host, "mcp__py__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hi");
    let r = call(&host, "mcp__py__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"result": 42})));
    // A notification sent outside any request travels on the GET stream and
    // makes the client re-list.
    drain_tools_changed(&mut events).await;
    assert_eq!(
        call(&host, "mcp__py__announce", json!({}))
            .await
            .unwrap()
            .text(),
        "announced"
    );
    wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
    host.shutdown().await;
    assert!(
        eventually(Duration::from_secs(5), || peer
            .output()
            .contains("\"DELETE /mcp HTTP/1.1\" 200"))
        .await,
        "the session was deleted at shutdown:\n{}",
        peer.output()
    );
}

/// Consumes the ToolsChanged of the first listing, so a later one is a re-list.
async fn drain_tools_changed<S: futures::Stream<Item = HostEvent> + Unpin>(events: &mut S) {
    wait_for(events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
}

#[tokio::test]
async fn python_sdk_over_http_with_sse_answers() {
    python_over_http(false).await;
}

#[tokio::test]
async fn python_sdk_over_http_with_json_answers() {
    python_over_http(true).await;
}
