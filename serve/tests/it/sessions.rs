//! Downstream sessions of `mcpvisor serve --http` side by side: a cancel in one
//! session ends that session's call alone (and reaches the upstream server),
//! and a crashed upstream fails only the calls to that server.
//!
//! The client is plain reqwest speaking Streamable HTTP (MCP 2025-03-26), so
//! every status, header and body is checked as sent. Every wait is bounded;
//! `serve` is stopped (and killed with its group on a hang) at the end.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};

use testkit::mcp_http::{QUICK, Session, within};
use testkit::proc::is_alive;
use testkit::serve::{HttpServe, mcpvisor, wait_timeout};

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-sessions", tag)
}

/// Runs a quick command (`enable`) in `dir`, killed if it hangs.
fn run(dir: &Path, args: &[&str]) -> Output {
    let mut child = mcpvisor(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpvisor");
    if wait_timeout(&mut child, Duration::from_secs(30)).is_none() {
        let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    }
    child.wait_with_output().expect("collect mcpvisor's output")
}

/// The text of a tool result's first block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn is_error(result: &Value) -> bool {
    result["isError"].as_bool().unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_in_one_session_ends_that_call_alone() {
    let dir = empty_dir("cancel");
    let mut serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0"], None);
    let http = serve.client();
    let a = Session::open(&http, &serve.url).await;
    let b = Session::open(&http, &serve.url).await;
    assert_ne!(a.id, b.id, "each initialize opens its own session");
    let pid: u32 = text(&b.call_result(9, "mcp__demo__pid", json!({})).await)
        .parse()
        .expect("a pid");

    // Both sessions use request id 2: ids belong to their session.
    let a_call = tokio::spawn({
        let a = a.clone();
        async move { a.call(2, "mcp__demo__sleep", json!({"ms": 60_000})).await }
    });
    let b_call = tokio::spawn({
        let b = b.clone();
        async move { b.call(2, "mcp__demo__sleep", json!({"ms": 4_000})).await }
    });
    // Both calls reach the demo server before A changes its mind.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(!a_call.is_finished() && !b_call.is_finished());

    let cancelled = a.cancel(2).await;
    assert_eq!(cancelled.status, 202, "{cancelled:?}");
    assert!(cancelled.body.is_empty(), "{cancelled:?}");

    // A's POST ends without an answer: serve sends none for a cancelled request
    // (no message reached the POST's stream, so it is closed with 202 Accepted).
    let a_reply = within(Duration::from_secs(10), a_call)
        .await
        .expect("A's POST task");
    assert!(
        !b_call.is_finished(),
        "B's 4 s call is still running when A's cancelled call ends"
    );
    assert_eq!(a_reply.status, 202, "{a_reply:?}");
    assert!(
        a_reply.body.is_empty(),
        "no answer for a cancelled request: {a_reply:?}"
    );
    assert!(a_reply.messages().is_empty(), "{a_reply:?}");

    let b_reply = within(QUICK, b_call).await.expect("B's POST task");
    assert_eq!(b_reply.status, 200, "{b_reply:?}");
    let answer = b_reply.answer(2);
    let result = &answer["result"];
    assert!(!is_error(result), "{answer}");
    assert_eq!(text(result), "slept 4000 ms", "{answer}");

    // The cancel reached the demo server (A's call only), which still runs.
    let seen = b.call_result(10, "mcp__demo__cancelled", json!({})).await;
    let seen: Value = serde_json::from_str(text(&seen)).expect("a JSON array");
    assert_eq!(
        seen.as_array().map(Vec::len),
        Some(1),
        "one cancellation upstream: {seen}"
    );
    let again: u32 = text(&b.call_result(11, "mcp__demo__pid", json!({})).await)
        .parse()
        .unwrap();
    assert_eq!(again, pid, "cancelling restarted nothing");

    // Session A goes on: the cancelled id is free again.
    let echoed = a
        .call_result(2, "mcp__demo__echo", json!({"text": "after"}))
        .await;
    assert_eq!(text(&echoed), "after");

    let status = serve.terminate();
    assert_eq!(status.code(), Some(0), "{}", serve.output());
    assert!(!is_alive(pid), "the demo server stopped with serve");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_upstream_fails_only_its_own_calls() {
    let dir = empty_dir("crash");
    let demo = json!({"command": testkit::mcpvisor_exe(), "args": ["demo-server"]});
    let config = json!({"mcpServers": {"a": demo, "b": demo}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    for name in ["a", "b"] {
        let out = run(&dir, &["enable", name]);
        assert!(
            out.status.success(),
            "enable {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut serve = HttpServe::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--restart-initial-backoff-ms",
            "50",
        ],
        None,
    );
    let http = serve.client();
    let session = Session::open(&http, &serve.url).await;
    let pid_of = |server: &'static str, id: u64| {
        let session = session.clone();
        async move {
            let result = session
                .call_result(id, &format!("mcp__{server}__pid"), json!({}))
                .await;
            text(&result).parse::<u32>().expect("a pid")
        }
    };
    let (a_pid, b_pid) = (pid_of("a", 2).await, pid_of("b", 3).await);
    assert_ne!(a_pid, b_pid);

    let b_sleep = tokio::spawn({
        let session = session.clone();
        async move { session.call(4, "mcp__b__sleep", json!({"ms": 3_000})).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let crashed = session.call_result(5, "mcp__a__crash", json!({})).await;
    assert!(
        is_error(&crashed),
        "a crash is a tool error, not a protocol error: {crashed}"
    );
    assert!(
        text(&crashed).contains("`a`"),
        "the error names the server: {crashed}"
    );
    assert!(!b_sleep.is_finished(), "b's call is still running");

    let reply = within(QUICK, b_sleep).await.expect("b's POST task");
    assert_eq!(reply.status, 200, "{reply:?}");
    let answer = reply.answer(4);
    assert!(!is_error(&answer["result"]), "{answer}");
    assert_eq!(text(&answer["result"]), "slept 3000 ms", "{answer}");
    assert_eq!(pid_of("b", 6).await, b_pid, "b kept its process");
    assert!(!is_alive(a_pid), "a's process is gone");

    // a comes back on its own (restarts are allowed here).
    let deadline = Instant::now() + QUICK;
    let mut id = 7;
    let a_again = loop {
        id += 1;
        let result = session.call_result(id, "mcp__a__pid", json!({})).await;
        if !is_error(&result) {
            break text(&result).parse::<u32>().expect("a pid");
        }
        assert!(Instant::now() < deadline, "a did not come back: {result}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(a_again, a_pid);

    let status = serve.terminate();
    assert_eq!(status.code(), Some(0), "{}", serve.output());
}
