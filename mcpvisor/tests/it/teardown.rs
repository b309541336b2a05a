//! Shutdown leaves nothing running: no server process, no grandchild, no thread.

use std::time::Duration;

use mcpvisor::{CallError, CallOptions, Host, ServerState};
use serde_json::json;
use testkit::{call, demo, eventually, fast_options, is_alive, live_group_members};

#[tokio::test]
async fn shutdown_leaves_no_process_of_any_group() {
    let specs = vec![
        demo("a", &["--grandchild"]),
        demo("b", &["--grandchild"]),
        demo("c", &[]),
    ];
    let host = Host::start(specs, fast_options()).await.unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert!(
        statuses.iter().all(|s| s.state == ServerState::Ready),
        "{statuses:?}"
    );
    let leaders: Vec<u32> = statuses.iter().map(|s| s.pid.unwrap()).collect();
    let mut grandchildren = Vec::new();
    for server in ["a", "b"] {
        let r = call(&host, &format!("mcp__{server}__grandchild_pid"), json!({}))
            .await
            .unwrap();
        grandchildren.push(r.text().trim().parse::<u32>().unwrap());
    }
    for &pgid in &leaders {
        assert!(!live_group_members(pgid).is_empty());
    }
    assert!(grandchildren.iter().all(|&p| is_alive(p)));
    // A call in flight during shutdown fails with a typed error, not a hang.
    let pending = host.call(
        "mcp__c__sleep",
        json!({"ms": 60_000}),
        CallOptions::default(),
    );
    let in_flight = tokio::spawn(pending);
    tokio::time::sleep(Duration::from_millis(100)).await;

    host.shutdown().await;

    let outcome = tokio::time::timeout(Duration::from_secs(5), in_flight)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(outcome, Err(CallError::Shutdown)), "{outcome:?}");
    for &pgid in &leaders {
        // The leaders were reaped by us: not even a zombie is left.
        assert!(
            !std::path::Path::new(&format!("/proc/{pgid}")).exists(),
            "leader {pgid} still in /proc"
        );
        let left = live_group_members(pgid);
        assert!(
            eventually(Duration::from_secs(2), || live_group_members(pgid)
                .is_empty())
            .await,
            "group {pgid} still has {left:?}"
        );
    }
    assert!(
        grandchildren.iter().all(|&p| !is_alive(p)),
        "grandchildren are killed with their group"
    );
    assert!(
        host.servers()
            .iter()
            .all(|s| s.state == ServerState::Stopped)
    );
    assert!(host.tools().is_empty());
}

#[tokio::test]
async fn a_server_that_ignores_stdin_eof_and_sigterm_is_still_stopped() {
    // `sh` traps TERM and never reads stdin; only SIGKILL ends it.
    let spec = mcpvisor::ServerSpec::stdio(
        "stubborn",
        mcpvisor::StdioSpec::new(
            "sh",
            ["-c", "trap '' TERM; sleep 1000 & while :; do sleep 1; done"],
        ),
    );
    let mut options = fast_options();
    options.startup_timeout = Duration::from_secs(30);
    let host = Host::start(vec![spec], options).await.unwrap();
    // It never answers initialize, but its pid is known from the start.
    assert!(eventually(Duration::from_secs(10), || host.servers()[0].pid.is_some()).await);
    let pid = host.servers()[0].pid.unwrap();
    assert!(
        eventually(Duration::from_secs(5), || live_group_members(pid).len()
            >= 2)
        .await
    );
    host.shutdown().await;
    assert!(
        eventually(Duration::from_secs(2), || live_group_members(pid)
            .is_empty())
        .await
    );
}
