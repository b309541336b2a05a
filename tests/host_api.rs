//! The host handle as an agent developer holds it: cloned into tasks, called
//! from threads outside the runtime, its servers' `initialize` answers and
//! its events readable as text.

mod support;

use std::time::Duration;

use mcpvisor::{CallOptions, Host, HostEvent};
use serde_json::json;
use support::{demo, fast_options, next_ready};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_clone_is_the_same_host_and_dropping_one_stops_nothing() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    let ready = next_ready(&mut events).await;
    assert!(ready.to_string().starts_with("d: ready,"), "{ready}");
    let clone = host.clone();
    let in_task = tokio::spawn(async move {
        let r = clone
            .call(
                "mcp__d__echo",
                json!({"text": "from a task"}),
                CallOptions::default(),
            )
            .await
            .unwrap();
        r.text().to_string()
    });
    assert_eq!(in_task.await.unwrap(), "from a task");
    // The clone is gone; the host still runs.
    let r = host
        .call(
            "mcp__d__echo",
            json!({"text": "still"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(r.text(), "still");
    let again = host.clone();
    again.shutdown().await;
    assert!(host.is_shut_down(), "a clone's shutdown is the host's");
    assert!(host.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_from_a_thread_outside_the_runtime_completes() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let outside = host.clone();
    let answer = std::thread::spawn(move || {
        assert!(
            tokio::runtime::Handle::try_current().is_err(),
            "no runtime here"
        );
        let call = outside.call(
            "mcp__d__echo",
            json!({"text": "from a plain thread"}),
            CallOptions::default().timeout(Duration::from_secs(20)),
        );
        futures::executor::block_on(call).map(|r| r.text().to_string())
    })
    .join()
    .unwrap();
    assert_eq!(answer.unwrap(), "from a plain thread");
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_status_carries_what_initialize_returned() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let status = &host.servers()[0];
    let init = status.initialize.as_ref().expect("initialized");
    assert!(!init.server_info.name.is_empty());
    assert!(!init.server_info.version.is_empty());
    assert_eq!(init.protocol_version, "2025-03-26");
    host.shutdown().await;
    assert!(
        matches!(host.servers()[0].state, mcpvisor::ServerState::Stopped),
        "{:?}",
        host.servers()[0].state
    );
    let stopped = HostEvent::ServerStopped { server: "d".into() };
    assert_eq!(stopped.to_string(), "d: stopped");
}
