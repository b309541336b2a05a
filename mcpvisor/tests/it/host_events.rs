//! Events a host subscribes to for calls it did not make itself: progress of
//! every call, whoever passed the callback, and a server stopped on purpose.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use mcpvisor::{CallOptions, Host, HostEvent};
use serde_json::json;
use testkit::{demo, fast_options, next_ready};

#[tokio::test]
async fn progress_reaches_the_call_and_the_event_stream_and_shutdown_says_stopped() {
    let host = Host::start(vec![demo("demo", &[])], fast_options())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let seen_by_call = Arc::new(Mutex::new(Vec::new()));
    let sink = seen_by_call.clone();
    let options =
        CallOptions::default().on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let r = host
        .call("mcp__demo__progress", json!({"steps": 3}), options)
        .await
        .unwrap();
    assert_eq!(r.text(), "done 3 steps");
    assert_eq!(*seen_by_call.lock().unwrap(), [1.0, 2.0, 3.0]);

    let shutdown = {
        let host = host.clone();
        tokio::spawn(async move { host.shutdown().await })
    };
    // Everything until the server is reported stopped.
    let mut progress = Vec::new();
    let mut stopped = Vec::new();
    let collected = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(event) = events.next().await {
            match event {
                HostEvent::Progress {
                    server,
                    progress: p,
                } => {
                    assert_eq!(&*server, "demo");
                    progress.push((p.progress, p.total, p.message));
                }
                HostEvent::ServerStopped { server } => {
                    stopped.push(server.to_string());
                    break;
                }
                _ => {}
            }
        }
    })
    .await;
    assert!(
        collected.is_ok(),
        "no ServerStopped after shutdown: {stopped:?}"
    );
    shutdown.await.unwrap();
    assert_eq!(
        progress,
        [
            (1.0, Some(3.0), Some("step 1".to_string())),
            (2.0, Some(3.0), Some("step 2".to_string())),
            (3.0, Some(3.0), Some("step 3".to_string())),
        ]
    );
    assert_eq!(stopped, ["demo"]);
}
