//! Sessions: oversize bodies, unknown and expired sessions, the caps on
//! sessions and on requests in flight, disconnects and cancellations, DELETE.

use super::*;

#[tokio::test]
async fn oversize_bodies_unknown_sessions_and_bad_json_are_refused() {
    let dir = empty_dir("limits");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    let big = vec![b' '; 4 * 1024 * 1024 + 1];
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], big).await;
    assert_eq!(status, 413);
    assert!(
        message(&body).contains("larger than 4194304 bytes"),
        "{body}"
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", "f00d")], list.clone()).await;
    assert_eq!(status, 404);
    assert!(message(&body).contains("session not found"), "{body}");
    let (status, _, body) = post(&serve.url, &[], list).await;
    assert_eq!(status, 400);
    assert!(message(&body).contains("Mcp-Session-Id"), "{body}");
    // The request's id was readable: the refusal answers it.
    let refused: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(refused["id"], 2, "{body}");
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], "{not json").await;
    assert_eq!(status, 400);
    assert!(message(&body).contains("invalid JSON"), "{body}");
    // The session survived all of it.
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], ping).await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

#[tokio::test]
async fn idle_sessions_expire_and_deleted_ones_are_gone() {
    let dir = empty_dir("expiry");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0", "--session-idle-ms", "300"]);
    let idle = open_session(&serve.url, &[]).await;
    let deleted = open_session(&serve.url, &[]).await;
    let response = reqwest::Client::new()
        .delete(&serve.url)
        .header("mcp-session-id", &deleted)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let (status, _, _) = post(&serve.url, &[("mcp-session-id", &deleted)], ping.clone()).await;
    assert_eq!(status, 404);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (status, _, body) = post(&serve.url, &[("mcp-session-id", &idle)], ping.clone()).await;
        if status == 404 {
            assert!(message(&body).contains("expired"), "{body}");
            break;
        }
        // Each ping keeps it alive, so wait longer than the idle time between tries.
        assert!(
            std::time::Instant::now() < deadline,
            "the idle session never expired"
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
    serve.stop();
}

#[tokio::test]
async fn sessions_over_the_cap_are_refused() {
    let dir = empty_dir("cap");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0", "--max-sessions", "2"]);
    let first = open_session(&serve.url, &[]).await;
    open_session(&serve.url, &[]).await;
    let (status, _, body) = post(&serve.url, &[], initialize().to_string()).await;
    assert_eq!(status, 503);
    assert!(message(&body).contains("2 sessions are open"), "{body}");
    // Closing one makes room.
    reqwest::Client::new()
        .delete(&serve.url)
        .header("mcp-session-id", &first)
        .send()
        .await
        .unwrap();
    open_session(&serve.url, &[]).await;
    serve.stop();
}

/// Without `--max-sessions`, 64 sessions may be open at once.
#[tokio::test]
async fn the_default_cap_is_64_sessions() {
    let dir = empty_dir("default-cap");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    for _ in 0..64 {
        open_session(&serve.url, &[]).await;
    }
    let (status, _, body) = post(&serve.url, &[], initialize().to_string()).await;
    assert_eq!(status, 503, "{body}");
    assert!(message(&body).contains("64 sessions are open"), "{body}");
    serve.stop();
}

/// An idle session is closed after 30 minutes unless told otherwise: the
/// flag's default, which is what `serve` hands its endpoint.
#[test]
fn the_default_idle_close_is_30_minutes() {
    let out = std::process::Command::new(testkit::mcpvisor_exe())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let flag = help
        .split("--session-idle-ms")
        .nth(1)
        .and_then(|rest| rest.split("\n  -").next())
        .unwrap_or_else(|| panic!("no --session-idle-ms in {help}"));
    assert!(flag.contains("[default: 1800000]"), "{flag}");
}

/// One session may have 64 requests in flight: the 65th is refused at once
/// with an error naming the limit, and the session goes on (a request after
/// one of the 64 finished is taken).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_has_at_most_64_requests_in_flight() {
    let dir = empty_dir("in-flight");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(
        &serve.url,
        &[("mcp-session-id", &id)],
        initialized.to_string(),
    )
    .await;
    let sleeps: Vec<_> = (0..64)
        .map(|n| {
            let (url, id) = (serve.url.clone(), id.clone());
            tokio::spawn(async move {
                let sleep = json!({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call",
                    "params": {"name": "mcp__demo__sleep", "arguments": {"ms": 3000}}});
                post(&url, &[("mcp-session-id", &id)], sleep.to_string()).await
            })
        })
        .collect();
    // Until the demo server has all 64, the 65th may still be taken: ask
    // until it is refused, with a bounded number of tries.
    let mut refused = None;
    for attempt in 0..100 {
        let ping = json!({"jsonrpc": "2.0", "id": 1000 + attempt, "method": "ping"});
        let (status, _, body) =
            post(&serve.url, &[("mcp-session-id", &id)], ping.to_string()).await;
        assert_eq!(status, 200, "{body}");
        if body.contains("error") {
            refused = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let refused = refused.expect("no request was refused with 64 in flight");
    assert!(
        message(&refused).contains("64 requests in flight"),
        "{refused}"
    );
    for sleep in sleeps {
        let (status, _, body) = sleep.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("slept"), "{body}");
    }
    let ping = json!({"jsonrpc": "2.0", "id": 2000, "method": "ping"});
    let (_, _, body) = post(&serve.url, &[("mcp-session-id", &id)], ping.to_string()).await;
    assert!(!body.contains("error"), "{body}");
    serve.stop();
}

/// The `mcp__demo__cancelled` record: every cancellation the demo server saw.
async fn cancellations(url: &str, session: &str, id: u64) -> Vec<Value> {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "mcp__demo__cancelled", "arguments": {}}});
    let (status, _, body) = post(url, &[("mcp-session-id", session)], call.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    serde_json::from_str(&text).unwrap()
}

/// Posts a `tools/call` and walks away before the answer.
async fn post_and_disconnect(url: &str, session: &str, id: u64, ms: u64) {
    let sleep = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "mcp__demo__sleep", "arguments": {"ms": ms}}});
    let sent = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .timeout(Duration::from_millis(300))
        .body(sleep.to_string())
        .send()
        .await;
    assert!(sent.is_err(), "the call answered before the client left");
}

#[tokio::test]
async fn a_client_that_disconnects_does_not_cancel_but_a_later_cancel_does() {
    let dir = empty_dir("disconnect");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    // Gone before the answer: the call runs to its end upstream (MCP: a
    // disconnection is not a cancellation).
    post_and_disconnect(&serve.url, &id, 2, 1000).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(cancellations(&serve.url, &id, 3).await, Vec::<Value>::new());
    // Gone, then cancelled by id: the cancel still reaches the server.
    post_and_disconnect(&serve.url, &id, 4, 30_000).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 4, "reason": "changed my mind"}});
    let (status, _, _) = post(&serve.url, &[("mcp-session-id", &id)], cancel.to_string()).await;
    assert_eq!(status, 202);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut n = 5;
    loop {
        let seen = cancellations(&serve.url, &id, n).await;
        if seen.len() == 1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no cancellation reached the server: {seen:?}"
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    serve.stop();
}

#[tokio::test]
async fn deleting_a_session_ends_its_get_stream() {
    let dir = empty_dir("get-end");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    let client = reqwest::Client::new();
    let get = client
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 200);
    let deleted = client
        .delete(&serve.url)
        .header("mcp-session-id", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    // The stream ends instead of sending keep-alives for a session that is gone.
    let body = tokio::time::timeout(Duration::from_secs(10), get.text()).await;
    assert!(body.is_ok(), "the GET stream outlived its session");
    serve.stop();
}
