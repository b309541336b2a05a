//! An answer that cannot be read but names its request fails that call at
//! once, with a typed error, instead of leaving it to its timeout; the
//! connection goes on.

use std::time::Duration;

use mcpvisor::{CallError, CallOptions, Host};
use serde_json::json;
use testkit::{demo, fast_options, next_ready};

async fn broken_answers(hostile: &str) {
    let mut options = fast_options();
    options.request_timeout = Duration::from_secs(120);
    let host = Host::start(vec![demo("odd", &["--hostile", hostile])], options)
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let pid = host.servers()[0].pid;
    for round in 0..3 {
        let call = host.call(
            "mcp__odd__echo",
            json!({"text": round.to_string()}),
            CallOptions::default(),
        );
        let outcome = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .unwrap_or_else(|_| panic!("{hostile}: the call waited for its 120 s timeout"));
        match outcome {
            Err(CallError::InvalidResult { server, source }) => {
                assert_eq!(&*server, "odd");
                assert!(source.to_string().contains("could not be read"), "{source}");
            }
            other => panic!("{hostile}: expected InvalidResult, got {other:?}"),
        }
    }
    assert_eq!(host.servers()[0].pid, pid, "the connection goes on");
    host.shutdown().await;
}

#[tokio::test]
async fn an_answer_with_both_result_and_error_fails_its_call_at_once() {
    broken_answers("result-and-error").await;
}

#[tokio::test]
async fn an_answer_nested_too_deep_fails_its_call_at_once() {
    broken_answers("too-deep-answer").await;
}
