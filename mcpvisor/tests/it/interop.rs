//! Real third-party servers, each over every wire it speaks: server-everything
//! (npm) over stdio and Streamable HTTP, and the Python SDK's `MCPServer` (PyPI)
//! over stdio and Streamable HTTP in both answer modes. One scenario runs for
//! every case (support/peers.rs starts the peers; `scripts/peers.sh` installs them).

use std::time::Duration;

use futures::Stream;
use mcpvisor::{CallError, CompletionTarget, Host, HostEvent, ResourceContents, ServerState};
use serde_json::json;
use testkit::peers::{Peer, Wire};
use testkit::{call, eventually, fast_options, wait_for};

type Events = std::pin::Pin<Box<dyn Stream<Item = HostEvent> + Send>>;

#[tokio::test]
async fn server_everything_over_stdio() {
    interop(Peer::Everything, Wire::Stdio).await;
}

#[tokio::test]
async fn server_everything_over_http() {
    interop(Peer::Everything, Wire::HttpSse).await;
}

#[tokio::test]
async fn python_sdk_server_over_stdio() {
    interop(Peer::PythonSdk, Wire::Stdio).await;
}

#[tokio::test]
async fn python_sdk_over_http_with_sse_answers() {
    interop(Peer::PythonSdk, Wire::HttpSse).await;
}

#[tokio::test]
async fn python_sdk_over_http_with_json_answers() {
    interop(Peer::PythonSdk, Wire::HttpJson).await;
}

/// The scenario: the server comes up with its tools, answers calls, gets its
/// notifications through to the host, and over HTTP has its session deleted
/// at shutdown.
async fn interop(peer: Peer, wire: Wire) {
    let running = peer.run(wire);
    let host = Host::start(vec![running.spec.clone()], fast_options())
        .await
        .unwrap();
    let mut events: Events = Box::pin(host.events());
    let statuses = host.wait_ready(Duration::from_secs(30)).await;
    assert_eq!(
        statuses[0].state,
        ServerState::Ready,
        "{statuses:?}\n{}",
        running.output()
    );
    let tool = |t: &str| format!("mcp__{}__{t}", peer.name());
    let r = call(&host, &tool("echo"), json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: hi");
    match peer {
        Peer::Everything => everything(&host, &mut events).await,
        Peer::PythonSdk => python_sdk(&host, &mut events).await,
    }
    host.shutdown().await;
    if let Some(server) = &running.server {
        assert!(
            eventually(Duration::from_secs(5), || server
                .output()
                .contains(peer.session_deleted_line()))
            .await,
            "the session was deleted at shutdown:\n{}",
            server.output()
        );
    }
}

/// server-everything: its many tools, its log notifications, many calls at once.
async fn everything(host: &Host, events: &mut Events) {
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    assert!(names.len() >= 10, "{names:?}");
    // Its log notifications arrive (over HTTP on the GET stream) once simulated
    // logging is on.
    call(host, "mcp__everything__toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    let log = wait_for(events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ServerLog { .. })
    })
    .await;
    let HostEvent::ServerLog { server, .. } = log else {
        unreachable!()
    };
    assert_eq!(&*server, "everything");
    // Many calls in flight on one connection.
    let calls = (0..64).map(|i| {
        host.call(
            "mcp__everything__echo",
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
}

/// The Python SDK: exactly its tools, structured output, and a
/// notification sent outside any request that makes the client re-list.
async fn python_sdk(host: &Host, events: &mut Events) {
    let mut names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            "mcp__py__add",
            "mcp__py__add_prompt",
            "mcp__py__announce",
            "mcp__py__confirm_delete",
            "mcp__py__confirm_round",
            "mcp__py__connect_account",
            "mcp__py__echo",
            "mcp__py__needs_connection",
            "mcp__py__sleep"
        ]
    );
    python_resources_and_prompts(host).await;
    let r = call(host, "mcp__py__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(r.text(), "42");
    assert_eq!(r.structured_content, Some(json!({"result": 42})));
    // The ToolsChanged of the first listing, so the next one is a re-list.
    wait_for(events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
    // Over HTTP it travels on the GET stream.
    assert_eq!(
        call(host, "mcp__py__announce", json!({}))
            .await
            .unwrap()
            .text(),
        "announced"
    );
    wait_for(events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
}

/// The Python SDK's resource, template, prompt and completion, on the same
/// connection as its tools.
async fn python_resources_and_prompts(host: &Host) {
    let resources = host.resources().await;
    assert!(resources.failed.is_empty(), "{:?}", resources.failed);
    let uris: Vec<(&str, &str)> = resources
        .entries
        .iter()
        .map(|r| (&*r.server, r.resource.uri.as_str()))
        .collect();
    assert_eq!(
        uris,
        vec![("py", "note://greeting"), ("py", "note://hostile")]
    );
    let read = host.read_resource("py", "note://greeting").await.unwrap();
    assert!(
        matches!(&read.contents[..], [ResourceContents::Text { text, .. }] if text == "Hello from the Python SDK"),
        "{:?}",
        read.contents
    );
    let templates = host.resource_templates().await;
    assert_eq!(templates.entries.len(), 1);
    assert_eq!(templates.entries[0].template.uri_template, "note://{name}");
    let filled = host.read_resource("py", "note://cats").await.unwrap();
    assert!(
        matches!(&filled.contents[..], [ResourceContents::Text { text, .. }] if text == "Note cats"),
        "{:?}",
        filled.contents
    );
    let prompts = host.prompts().await;
    let names: Vec<&str> = prompts.entries.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, vec!["mcp__py__review"]);
    let mut arguments = std::collections::BTreeMap::new();
    arguments.insert("code".to_string(), "fn main() {}".to_string());
    let got = host
        .get_prompt("mcp__py__review", &arguments)
        .await
        .unwrap();
    let text = serde_json::to_string(&got.raw).unwrap();
    assert!(text.contains("review this rust code"), "{text}");
    let done = host
        .complete(
            &CompletionTarget::Prompt("mcp__py__review".into()),
            "language",
            "r",
        )
        .await
        .unwrap();
    assert_eq!(done.values, vec!["ruby".to_string(), "rust".to_string()]);
    // It offers no subscriptions and no logging: typed refusals, nothing sent.
    let err = host.subscribe("py", "note://greeting").await.unwrap_err();
    assert!(matches!(err, CallError::NotOffered { .. }), "{err:?}");
}
