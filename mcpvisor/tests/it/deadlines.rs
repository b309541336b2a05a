//! A call's deadline belongs to its connection: a hung server is found out and
//! its connection restarted on time even when nobody polls the call.

use std::time::Duration;

use mcpvisor::{CallError, CallOptions, Host, HostEvent};
use serde_json::json;
use testkit::{demo, fast_options, next_ready, wait_for};

#[tokio::test]
async fn a_timeout_fires_while_the_caller_is_not_polling() {
    let host = Host::start(vec![demo("hung", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let first_pid = host.servers()[0].pid;
    let options = CallOptions::default().timeout(Duration::from_millis(300));
    // Created, never polled until the connection has been restarted.
    let pending = host.call("mcp__hung__sleep", json!({"ms": 60_000}), options);
    let restarted = wait_for(&mut events, Duration::from_secs(15), |e| {
        matches!(e, HostEvent::ServerRestarting { .. })
    })
    .await;
    let HostEvent::ServerRestarting { reason, .. } = restarted else {
        unreachable!()
    };
    assert!(reason.to_string().contains("timed out"), "{reason}");
    match pending.await {
        Err(CallError::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(300)),
        other => panic!("expected the call's own timeout, got {other:?}"),
    }
    next_ready(&mut events).await;
    assert_ne!(
        host.servers()[0].pid,
        first_pid,
        "a new connection, never the timed-out one"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn many_deadlines_share_one_timer_and_each_fires_in_order() {
    let host = Host::start(vec![demo("d", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    // A short call due first among long ones: only it times out; an answered
    // call is unaffected by the timer.
    let long: Vec<_> = (0..20)
        .map(|_| {
            host.call(
                "mcp__d__sleep",
                json!({"ms": 60_000}),
                CallOptions::default().timeout(Duration::from_secs(600)),
            )
        })
        .collect();
    let quick = host
        .call(
            "mcp__d__echo",
            json!({"text": "fast"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(quick.text(), "fast");
    let short = host.call(
        "mcp__d__sleep",
        json!({"ms": 60_000}),
        CallOptions::default().timeout(Duration::from_millis(200)),
    );
    assert!(matches!(short.await, Err(CallError::Timeout { .. })));
    // The timeout ended the connection: the long calls fail with it, at once.
    for call in long {
        let e = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("the connection's end fails the other calls")
            .unwrap_err();
        assert!(matches!(e, CallError::ConnectionTimedOut { .. }), "{e:?}");
    }
    host.shutdown().await;
}
