//! The 16 MiB stdio write backlog, seen through `Host`: a server that stops
//! reading its stdin (SIGSTOP) while calls keep coming. Once the backlog is
//! full a call fails at once with the typed `Backlog` error, what the host holds
//! stays bounded, the connection is not torn down for it, and once the server
//! reads again (SIGCONT) every queued call is answered and new calls work.
//! The writer itself: `transports/tests/stdio.rs`.

mod support;

use std::time::Duration;

use futures::FutureExt;
use mcpvisor::transports::TransportError;
use mcpvisor::{CallError, CallOptions, Host, PendingCall, ServerState};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::{call, demo, fast_options, peak_kib, reset_peak};

/// The default `StdioOptions::write_backlog`.
const BACKLOG: usize = 16 * 1024 * 1024;
/// The text of each call: large, yet its echo stays under the 1 MiB frame limit.
const TEXT_LEN: usize = 256 * 1024;
/// What a pipe may hold before the writer queues (64 KiB on Linux, 1 MiB at most
/// when raised): calls that fit there never reach the queue.
const PIPE_AT_MOST: usize = 1024 * 1024;

/// A call's text, distinct per call so each answer can be matched to its call.
fn text(i: usize) -> String {
    let tag = format!("call-{i:05}-");
    let mut text = tag.repeat(TEXT_LEN / tag.len());
    text.truncate(TEXT_LEN);
    text
}

fn echo(host: &Host, i: usize) -> PendingCall {
    // Long enough that no call times out (which would end the connection)
    // while the server is stopped.
    let options = CallOptions::default().timeout(Duration::from_secs(300));
    host.call("mcp__slow__echo", json!({"text": text(i)}), options)
}

/// True when `result` is the typed backlog error of the full queue.
fn is_backlog(result: &Result<mcpvisor::CallToolResult, CallError>) -> bool {
    matches!(
        result,
        Err(CallError::Transport {
            source: TransportError::Backlog { limit },
            ..
        }) if *limit == BACKLOG
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_fills_the_backlog_then_calls_fail_at_once_until_it_reads() {
    let host = Host::start(vec![demo("slow", &[])], fast_options())
        .await
        .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    let pid: i32 = call(&host, "mcp__slow__pid", json!({}))
        .await
        .unwrap()
        .text()
        .parse()
        .unwrap();
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();

    // Calls are written (or queued) when made; the first one refused is the
    // one that would take the queue past the limit.
    let line_at_least = TEXT_LEN;
    let most_accepted = (BACKLOG + PIPE_AT_MOST) / line_at_least + 1;
    let mut queued = Vec::new();
    let refused = loop {
        let mut pending = echo(&host, queued.len());
        match (&mut pending).now_or_never() {
            None => queued.push(pending),
            Some(result) => break result,
        }
        assert!(
            queued.len() <= most_accepted,
            "{} calls of {TEXT_LEN} bytes were accepted by a server that reads nothing",
            queued.len()
        );
    };
    assert!(is_backlog(&refused), "{refused:?}");
    assert!(
        queued.len() * TEXT_LEN >= BACKLOG - PIPE_AT_MOST,
        "refused after only {} calls",
        queued.len()
    );
    let said = refused.unwrap_err().to_string();
    assert!(said.contains("not reading its input"), "{said}");

    // Every further call is refused at once too, and none of them is held:
    // a hundred more calls of 256 KiB leave the peak where it was.
    let before = reset_peak();
    for i in 0..100 {
        let result = echo(&host, 100_000 + i)
            .now_or_never()
            .expect("a call past the backlog fails at once");
        assert!(is_backlog(&result), "{result:?}");
    }
    let rose = peak_kib().saturating_sub(before);
    assert!(
        rose < 8 * 1024,
        "100 refused calls raised the peak by {rose} KiB"
    );
    // Refusing a call is not a reason to end the connection.
    assert_eq!(host.servers()[0].state, ServerState::Ready);

    kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
    for (i, pending) in queued.into_iter().enumerate() {
        let answer = tokio::time::timeout(Duration::from_secs(60), pending)
            .await
            .unwrap_or_else(|_| panic!("queued call {i} was not answered after SIGCONT"))
            .unwrap_or_else(|e| panic!("queued call {i}: {e}"));
        assert!(
            answer.text() == text(i),
            "call {i} got another call's answer"
        );
    }
    let after = call(&host, "mcp__slow__pid", json!({})).await.unwrap();
    assert_eq!(after.text(), pid.to_string(), "the server was restarted");
    let r = echo(&host, 7).await.unwrap();
    assert!(r.text() == text(7));
    host.shutdown().await;
}
