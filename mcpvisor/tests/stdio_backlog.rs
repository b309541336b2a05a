//! The 16 MiB stdio write backlog, seen through `Host`: a server that stops
//! reading its stdin (SIGSTOP) while calls keep coming. Once the backlog is
//! full a call fails at once with the typed `Backlog` error, what the host holds
//! stays bounded, the connection is not torn down for it, and once the server
//! reads again (SIGCONT) every queued call is answered and new calls work; or,
//! killed while stopped, the queued calls fail typed and its restart answers.
//! The writer itself: `transports/tests/stdio.rs`.

use std::time::Duration;

use futures::FutureExt;
use mcpvisor::TransportError;
use mcpvisor::{CallError, CallOptions, Host, HostEvent, PendingCall, ServerState};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use testkit::{call, demo, fast_options, peak_kib, reset_peak};

/// The default `StdioOptions::write_backlog`.
const BACKLOG: usize = 16 * 1024 * 1024;
/// The text of each call: large, yet its echo stays under the 1 MiB frame limit.
const TEXT_LEN: usize = 256 * 1024;
/// What a pipe may hold before the writer queues (64 KiB on Linux, 1 MiB at most
/// when raised): calls that fit there never reach the queue.
const PIPE_AT_MOST: usize = 1024 * 1024;

/// The tests take turns: each fills 16 MiB in this process, and the first
/// reads this process's peak memory.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

async fn ready_host() -> Host {
    let host = Host::start(vec![demo("slow", &[])], fast_options())
        .await
        .unwrap();
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    host
}

async fn server_pid(host: &Host) -> i32 {
    call(host, "mcp__slow__pid", json!({}))
        .await
        .unwrap()
        .text()
        .parse()
        .unwrap()
}

/// Makes calls until one is refused; the calls accepted, and that refusal.
fn fill(
    host: &Host,
) -> (
    Vec<PendingCall>,
    Result<mcpvisor::CallToolResult, CallError>,
) {
    let most_accepted = (BACKLOG + PIPE_AT_MOST) / TEXT_LEN + 1;
    let mut queued = Vec::new();
    loop {
        let mut pending = echo(host, queued.len());
        match (&mut pending).now_or_never() {
            None => queued.push(pending),
            Some(result) => return (queued, result),
        }
        assert!(
            queued.len() <= most_accepted,
            "{} calls of {TEXT_LEN} bytes were accepted by a server that reads nothing",
            queued.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_fills_the_backlog_then_calls_fail_at_once_until_it_reads() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let host = ready_host().await;
    let pid = server_pid(&host).await;
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();

    // Calls are written (or queued) when made; the first one refused is the
    // one that would take the queue past the limit.
    let (queued, refused) = fill(&host);
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
    // Refusing a call is not a reason to end the connection: past the time a
    // failed write waits for the exit report (`2 × exit_wait + 500 ms`), the
    // stopped server still has its connection, never restarted.
    let exit_wait = fast_options().stdio.exit_wait;
    tokio::time::sleep((exit_wait * 2 + Duration::from_millis(500)) * 2).await;
    assert_eq!(host.servers()[0].state, ServerState::Ready);
    assert_eq!(host.servers()[0].restarts, 0, "{:?}", host.servers());

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_killed_with_a_full_backlog_fails_its_calls_and_comes_back() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let host = ready_host().await;
    let pid = server_pid(&host).await;
    kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
    let (queued, refused) = fill(&host);
    assert!(is_backlog(&refused), "{refused:?}");

    kill(Pid::from_raw(pid), Signal::SIGKILL).unwrap();
    for (i, pending) in queued.into_iter().enumerate() {
        let result = tokio::time::timeout(Duration::from_secs(60), pending)
            .await
            .unwrap_or_else(|_| panic!("queued call {i} still waits after the kill"));
        assert!(
            matches!(
                result,
                Err(CallError::ConnectionClosed { .. }
                    | CallError::Transport {
                        source: TransportError::Exited { .. },
                        ..
                    })
            ),
            "call {i}: {result:?}"
        );
    }
    // The restarted server reads again: a new process, and large calls pass.
    let mut events = Box::pin(host.events());
    testkit::wait_for(
        &mut events,
        Duration::from_secs(20),
        |e| matches!(e, HostEvent::ServerReady { pid: Some(p), .. } if *p != pid as u32),
    )
    .await;
    assert_ne!(server_pid(&host).await, pid);
    for i in 0..4 {
        assert!(echo(&host, i).await.unwrap().text() == text(i));
    }
    host.shutdown().await;
}
