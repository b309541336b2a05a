//! Calls through the host against the demo server: handshake, paginated listing,
//! results, concurrency, cancellation and progress.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use mcpvisor::{CallError, CallOptions, Host, ServerState};
use mcpvisor_demo::BUILT_IN_TOOLS;
use serde_json::{Value, json};
use testkit::{call, demo, fast_options};

async fn ready_host(flags: &[&str]) -> Host {
    let host = Host::start(vec![demo("demo", flags)], fast_options())
        .await
        .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    host
}

#[tokio::test]
async fn initialize_paginated_list_and_call() {
    // Page size 2: the 12 built-in tools arrive over 6 pages.
    let host = ready_host(&["--page-size", "2"]).await;
    let names: Vec<String> = host
        .tools()
        .iter()
        .map(|t| t.name.tool().to_string())
        .collect();
    let mut expected: Vec<String> = BUILT_IN_TOOLS.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(names, expected);
    assert!(BUILT_IN_TOOLS.len() > 2 * 3, "several pages were needed");
    let echo = host
        .tools()
        .into_iter()
        .find(|t| t.name.as_str() == "mcp__demo__echo")
        .unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert!(echo.input_schema["properties"]["text"].is_object());

    let r = call(&host, "mcp__demo__echo", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "hello");
    assert!(!r.is_error);
    let r = call(&host, "mcp__demo__add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(r.text(), "42");
    assert_eq!(r.structured_content.as_ref().unwrap()["sum"], json!(42));
    let r = call(&host, "mcp__demo__fail", json!({"message": "nope"}))
        .await
        .unwrap();
    assert!(r.is_error, "a tool error is a result, not a call error");
    assert_eq!(r.text(), "nope");
    host.shutdown().await;
}

#[tokio::test]
async fn errors_are_typed() {
    let host = ready_host(&[]).await;
    let e = call(&host, "mcp__demo__nope", json!({})).await.unwrap_err();
    assert!(
        matches!(e, CallError::UnknownTool(ref n) if n == "mcp__demo__nope"),
        "{e}"
    );
    let e = call(&host, "mcp__demo__add", json!({"a": "x"}))
        .await
        .unwrap_err();
    let CallError::Rpc { error, .. } = e else {
        panic!("expected an RPC error, got {e}")
    };
    assert_eq!(error.code, -32602);
    host.shutdown().await;
    let e = call(&host, "mcp__demo__echo", json!({"text": "x"}))
        .await
        .unwrap_err();
    // No routes after shutdown, and the call says the server is stopped.
    assert!(
        matches!(&e, CallError::ServerUnavailable { why, next_try: None, .. } if why.as_deref() == Some("stopped")),
        "{e}"
    );
}

#[tokio::test]
async fn thousand_concurrent_calls_on_one_connection() {
    let host = ready_host(&[]).await;
    let calls = (0..1000).map(|i| {
        let args = if i % 10 == 0 {
            json!({"ms": (i % 7) * 3})
        } else {
            json!({"text": format!("call-{i}")})
        };
        let tool = if i % 10 == 0 {
            "mcp__demo__sleep"
        } else {
            "mcp__demo__echo"
        };
        host.call(tool, args, CallOptions::default())
    });
    let results = join_all(calls).await;
    for (i, r) in results.into_iter().enumerate() {
        let text = r.unwrap_or_else(|e| panic!("call {i} failed: {e}")).text();
        if i % 10 == 0 {
            assert_eq!(text, format!("slept {} ms", (i % 7) * 3));
        } else {
            assert_eq!(text, format!("call-{i}"), "answers never cross");
        }
    }
    host.shutdown().await;
}

fn recorded_cancellations(text: &str) -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(text).expect("cancelled returns a JSON array")
}

#[tokio::test]
async fn dropping_a_call_sends_cancelled_to_the_server() {
    let host = ready_host(&[]).await;
    let slow = host.call(
        "mcp__demo__sleep",
        json!({"ms": 30_000}),
        CallOptions::default(),
    );
    // Dropping the future at the timeout is the host cancelling.
    assert!(
        tokio::time::timeout(Duration::from_millis(300), slow)
            .await
            .is_err()
    );
    let r = call(&host, "mcp__demo__cancelled", json!({}))
        .await
        .unwrap();
    let seen = recorded_cancellations(&r.text());
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["tool"], "sleep");
    assert!(seen[0]["requestId"].is_i64());
    host.shutdown().await;
}

#[tokio::test]
async fn explicit_cancel_resolves_the_call_as_cancelled() {
    let host = ready_host(&[]).await;
    let slow = host.call(
        "mcp__demo__sleep",
        json!({"ms": 30_000}),
        CallOptions::default(),
    );
    let canceller = slow.canceller();
    let task = tokio::spawn(slow);
    tokio::time::sleep(Duration::from_millis(200)).await;
    canceller.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(outcome, Err(CallError::Cancelled)), "{outcome:?}");
    let r = call(&host, "mcp__demo__cancelled", json!({}))
        .await
        .unwrap();
    assert_eq!(recorded_cancellations(&r.text()).len(), 1);
    // The connection is still the same one and still works.
    let r = call(&host, "mcp__demo__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}

#[tokio::test]
async fn progress_reaches_the_caller() {
    let host = ready_host(&[]).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let options = CallOptions::default()
        .on_progress(move |p| sink.lock().unwrap().push((p.progress, p.total)));
    let r = host
        .call("mcp__demo__progress", json!({"steps": 4}), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "done 4 steps");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    host.shutdown().await;
}

/// Answers complete calls without passing through the server actor unless
/// something the server sent earlier is still queued there: under load, every
/// progress notification still reaches its callback before its call resolves.
#[tokio::test]
async fn progress_always_arrives_before_the_answer() {
    let host = ready_host(&[]).await;
    for round in 0..5 {
        let calls = (0..16).map(|i| {
            let seen = Arc::new(Mutex::new(0u32));
            let sink = seen.clone();
            let options = CallOptions::default().on_progress(move |_| *sink.lock().unwrap() += 1);
            let call = host.call("mcp__demo__progress", json!({"steps": 25}), options);
            async move {
                let r = call.await.unwrap();
                assert_eq!(r.text(), "done 25 steps");
                let count = *seen.lock().unwrap();
                assert_eq!(count, 25, "round {round}, call {i}");
            }
        });
        join_all(calls).await;
    }
    host.shutdown().await;
}

/// A log message the server sent before its answer is on the host's event
/// stream by the time the call resolves, under concurrent calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_always_arrive_before_the_answer() {
    use futures::{FutureExt, StreamExt};
    let host = ready_host(&[]).await;
    let events = Arc::new(Mutex::new((
        Box::pin(host.events()),
        std::collections::HashSet::<String>::new(),
    )));
    for round in 0..5 {
        let calls = (0..16).map(|i| {
            let message = format!("round {round} call {i}");
            let call = host.call(
                "mcp__demo__log",
                json!({"message": message}),
                CallOptions::default(),
            );
            let events = events.clone();
            async move {
                assert_eq!(call.await.unwrap().text(), "logged");
                let mut guard = events.lock().unwrap();
                let (stream, seen) = &mut *guard;
                while let Some(Some(event)) = stream.next().now_or_never() {
                    if let mcpvisor::HostEvent::ServerLog { message, .. } = event {
                        if let Some(text) = message.data.as_str() {
                            seen.insert(text.to_string());
                        }
                    }
                }
                assert!(seen.contains(&message), "{message} came after its answer");
            }
        });
        join_all(calls).await;
    }
    host.shutdown().await;
}

#[tokio::test]
async fn a_panicking_progress_callback_does_not_break_the_connection() {
    let host = ready_host(&[]).await;
    let options = CallOptions::default().on_progress(|_| panic!("host bug in a progress callback"));
    let r = host
        .call("mcp__demo__progress", json!({"steps": 2}), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "done 2 steps");
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}
