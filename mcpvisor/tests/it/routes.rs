//! Route building: invalid names and duplicates are reported and not advertised;
//! tools/list_changed re-lists.

use std::time::Duration;

use mcpvisor::{Host, HostEvent};
use serde_json::json;
use testkit::{call, demo, drain, fast_options, next_ready, wait_for};

#[tokio::test]
async fn invalid_tool_names_are_rejected_and_reported() {
    let long = "t".repeat(60);
    let host = Host::start(
        vec![demo(
            "demo",
            &[
                "--extra-tool",
                "bad name!",
                "--extra-tool",
                &long,
                "--extra-tool",
                "ok-tool",
            ],
        )],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    let mut all = Vec::new();
    wait_for(&mut events, Duration::from_secs(20), |e| {
        all.push(e.clone());
        matches!(e, HostEvent::ServerReady { .. })
    })
    .await;
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.contains(&"mcp__demo__ok-tool".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("bad") || n.contains(&long)),
        "{names:?}"
    );
    assert_eq!(names.len(), 13);
    all.extend(drain(&mut events, Duration::from_millis(300)).await);
    all.retain(|e| matches!(e, HostEvent::RouteRejected { .. }));
    let mut rejected: Vec<(String, String)> = all
        .into_iter()
        .map(|e| match e {
            HostEvent::RouteRejected { tool, reason, .. } => (tool, reason),
            _ => unreachable!(),
        })
        .collect();
    rejected.sort();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[0].0, "bad name!");
    assert!(rejected[0].1.contains("character"), "{rejected:?}");
    assert_eq!(rejected[1].0, long);
    assert!(rejected[1].1.contains("64"), "{rejected:?}");

    // Kept beside the routes, for `servers` and for a call that names one.
    let table = host.routes();
    let refused = table.refused("demo").expect("the refusals are kept");
    assert_eq!(refused.total, 2, "{refused:?}");
    assert!(
        refused.of(&long).is_some_and(|r| r.reason.contains("64")),
        "{refused:?}"
    );
    let named = format!("mcp__demo__{long}");
    let failed = call(&host, &named, json!({})).await.unwrap_err();
    assert!(
        matches!(&failed, mcpvisor::CallError::RouteRefused { tool, .. } if *tool == long),
        "{failed:?}"
    );
    assert!(failed.to_string().contains("64"), "{failed}");
    host.shutdown().await;
}

#[tokio::test]
async fn a_tool_listed_twice_is_advertised_for_neither() {
    let host = Host::start(
        vec![demo("demo", &["--extra-tool", "echo"])],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    let conflict = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::RouteConflict { .. })
    })
    .await;
    let HostEvent::RouteConflict { name, servers, .. } = conflict else {
        unreachable!()
    };
    assert_eq!(name.as_str(), "mcp__demo__echo");
    assert_eq!(servers.len(), 2);
    next_ready(&mut events).await;
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(!names.contains(&"mcp__demo__echo".to_string()));
    assert!(names.contains(&"mcp__demo__add".to_string()));
    let e = call(&host, "mcp__demo__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    // The call says why the name it asked for has no route.
    assert!(
        matches!(&e, mcpvisor::CallError::RouteRefused { reason, .. } if reason.contains("same qualified name")),
        "{e}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn the_same_server_name_twice_advertises_neither() {
    let host = Host::start(
        vec![demo("twin", &[]), demo("twin", &[]), demo("solo", &[])],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    let conflict = wait_for(&mut events, Duration::from_secs(20), |e| {
        matches!(e, HostEvent::RouteConflict { .. })
    })
    .await;
    let HostEvent::RouteConflict { name, servers, .. } = conflict else {
        unreachable!()
    };
    assert!(name.as_str().starts_with("mcp__twin__"), "{name}");
    assert_eq!(
        servers.iter().map(|s| &**s).collect::<Vec<_>>(),
        vec!["twin", "twin"]
    );
    host.wait_ready(Duration::from_secs(20)).await;
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        names.iter().all(|n| n.starts_with("mcp__solo__")),
        "{names:?}"
    );
    assert_eq!(names.len(), 12);
    host.shutdown().await;
}

#[tokio::test]
async fn list_changed_relists_and_updates_routes() {
    let host = Host::start(
        vec![demo("demo", &["--list-changed-early"])],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    assert_eq!(host.tools().len(), 12);
    let r = call(&host, "mcp__demo__add_tool", json!({"name": "fresh"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "added fresh");
    let changed = wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ToolsChanged { tools, .. } if tools.iter().any(|t| t.as_str() == "mcp__demo__fresh"))
    })
    .await;
    let HostEvent::ToolsChanged { tools, .. } = changed else {
        unreachable!()
    };
    assert_eq!(tools.len(), 13);
    let r = call(&host, "mcp__demo__fresh", json!({"text": "new route"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "new route");
    host.shutdown().await;
}
