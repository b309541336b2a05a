//! Leaks in a long-lived `mcpvisor serve --http`: clients come and go (a
//! session opened, a call, a GET stream, a call the client walks away from,
//! the session deleted) and, once it settles, the serving process holds
//! *exactly* what it held before: open file descriptors, threads and child
//! processes, read from its /proc entry while it keeps running.
//!
//! 200 client cycles by default; `MCPVISOR_LEAK_CYCLES=10000` for the soak run.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::serve::{HttpServe, empty_dir};

/// What the serving process holds at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Reading {
    fds: usize,
    threads: usize,
    children: usize,
}

fn count(dir: String) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

fn read(pid: u32) -> Reading {
    let mut children = 0;
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for task in tasks.flatten() {
            let listed = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            children += listed.split_whitespace().count();
        }
    }
    Reading {
        fds: count(format!("/proc/{pid}/fd")),
        threads: count(format!("/proc/{pid}/task")),
        children,
    }
}

/// Waits until two readings two seconds apart agree (Tokio's idle blocking
/// threads linger ~10 s); that reading.
async fn settled(pid: u32) -> Reading {
    let mut last = read(pid);
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let now = read(pid);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("serve never settled; last reading {last:?}");
}

async fn back_to(pid: u32, baseline: &Reading) -> Reading {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let now = read(pid);
        if now == *baseline || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request.body(body.to_string()).send().await.expect("POST");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// One client from start to end.
async fn client_cycle(url: &str, n: u64) {
    let client = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "serve-leaks", "version": "1"}}});
    let (status, headers, body) = post(&client, url, None, init).await;
    assert_eq!(status, 200, "{body}");
    let session = headers["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&client, url, Some(&session), initialized).await;
    assert_eq!(status, 202);
    let get = client
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    let text = format!("client {n}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__demo__echo", "arguments": {"text": text}}});
    let (status, _, body) = post(&client, url, Some(&session), call).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(&text), "{body}");
    // A call the client walks away from before its answer.
    let sleep = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "mcp__demo__sleep", "arguments": {"ms": 200}}});
    let walked_away = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .timeout(Duration::from_millis(50))
        .body(sleep.to_string())
        .send()
        .await;
    assert!(walked_away.is_err(), "the sleep answered at once");
    let deleted = client
        .delete(url)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    let ended = tokio::time::timeout(Duration::from_secs(10), get.text()).await;
    assert!(ended.is_ok(), "the GET stream outlived its session");
}

fn cycles() -> u64 {
    std::env::var("MCPVISOR_LEAK_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_coming_and_going_leave_serve_as_it_was() {
    let dir = empty_dir("serve-leaks", "cycles");
    let mut serve = HttpServe::start(&dir, &["--http", "127.0.0.1:0", "--no-token"], None);
    let pid = serve.pid();
    for n in 0..5 {
        client_cycle(&serve.url, n).await;
    }
    // The walked-away calls end at the server before the baseline.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let baseline = settled(pid).await;
    assert_eq!(baseline.children, 1, "the demo server: {baseline:?}");
    let total = cycles();
    let started = Instant::now();
    for n in 0..total {
        client_cycle(&serve.url, n).await;
    }
    let now = back_to(pid, &baseline).await;
    eprintln!(
        "{total} clients in {:?}; baseline {baseline:?}, now {now:?}",
        started.elapsed()
    );
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .map(|t| t.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    assert_eq!(now, baseline, "after {total} clients; fds now {fds:?}");
    let status = serve.terminate();
    assert!(status.success(), "serve exited with {status}");
}
