//! `Host::reload`: only the difference between the old and the new set of
//! servers moves; an unchanged server keeps its process and its calls.

use std::time::Duration;

use mcpvisor::{CallOptions, Host, ServerState};
use serde_json::json;
use testkit::{call, demo, fast_options, is_alive};

fn pid_of(host: &Host, name: &str) -> u32 {
    host.servers()
        .iter()
        .find(|s| &*s.name == name)
        .and_then(|s| s.pid)
        .unwrap_or_else(|| panic!("no pid for {name}: {:?}", host.servers()))
}

#[tokio::test]
async fn reload_starts_stops_and_restarts_only_what_changed() {
    let host = Host::start(
        vec![demo("keep", &[]), demo("change", &[]), demo("drop", &[])],
        fast_options(),
    )
    .await
    .unwrap();
    host.wait_ready(Duration::from_secs(20)).await;
    let (keep, change, dropped) = (
        pid_of(&host, "keep"),
        pid_of(&host, "change"),
        pid_of(&host, "drop"),
    );
    // A call in flight on the unchanged server lives through the reload.
    let slow = host.call(
        "mcp__keep__sleep",
        json!({"ms": 1500}),
        CallOptions::default(),
    );
    let slow = tokio::spawn(slow);
    tokio::time::sleep(Duration::from_millis(100)).await;

    let report = host
        .reload(vec![
            demo("keep", &[]),
            demo("change", &["--extra-tool", "fresh"]),
            demo("add", &[]),
        ])
        .await
        .unwrap();
    let names = |v: &[std::sync::Arc<str>]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&report.unchanged), ["keep"]);
    assert_eq!(names(&report.restarted), ["change"]);
    assert_eq!(names(&report.removed), ["drop"]);
    assert_eq!(names(&report.added), ["add"]);

    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    let mut seen: Vec<&str> = statuses.iter().map(|s| &*s.name).collect();
    seen.sort();
    assert_eq!(seen, ["add", "change", "keep"]);
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    assert_eq!(
        pid_of(&host, "keep"),
        keep,
        "the unchanged server was restarted"
    );
    assert_ne!(pid_of(&host, "change"), change);
    assert!(
        testkit::eventually(Duration::from_secs(5), || !is_alive(dropped)).await,
        "the removed server's process is still running"
    );
    assert!(
        !is_alive(change),
        "the changed server's old process is still running"
    );
    let result = slow
        .await
        .unwrap()
        .expect("the call on the unchanged server survives");
    assert!(!result.is_error);

    let tools: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(
        tools.contains(&"mcp__change__fresh".to_string()),
        "{tools:?}"
    );
    assert!(tools.contains(&"mcp__add__echo".to_string()), "{tools:?}");
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__drop__")),
        "{tools:?}"
    );
    let echoed = call(&host, "mcp__add__echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "hi");
    host.shutdown().await;
}
