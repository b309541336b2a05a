//! `mcpvisor serve --http` turns away what it must, each refusal with its
//! status and a body a person can read: foreign origins and rebound host
//! names, missing or wrong tokens, oversize bodies, unknown and expired
//! sessions, sessions over the cap; it refuses to start exposed without a token.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::serve::HttpServe;

const SECRET: &str = "tok-7f3a9c-never-printed-4d1e8b20c6";

fn empty_dir(tag: &str) -> PathBuf {
    testkit::serve::empty_dir("serve-http", tag)
}

/// `mcpvisor serve <args>` with every log line collected (the token must be in none).
struct Serve(HttpServe);

impl Serve {
    /// The refusals here other than the token's are the same with or without
    /// one; they are checked without (`--no-token`) unless the test names a
    /// token file. The default token is tested in `serve_http_hardening.rs`.
    fn start(dir: &Path, args: &[&str]) -> Serve {
        let mut args = args.to_vec();
        if !args.contains(&"--token-file") {
            args.push("--no-token");
        }
        Serve(HttpServe::start(dir, &args, Some("trace")))
    }

    /// SIGTERM (it must exit 0), then everything it logged.
    fn stop(mut self) -> String {
        let status = self.0.terminate();
        assert!(status.success(), "serve exited with {status}");
        self.0.output()
    }
}

impl std::ops::Deref for Serve {
    type Target = HttpServe;

    fn deref(&self) -> &HttpServe {
        &self.0
    }
}

fn serve_command(dir: &Path, extra: &[&str]) -> std::process::Command {
    let mut command = testkit::serve::mcpvisor(dir);
    command
        .arg("serve")
        .args(extra)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "serve-http-test", "version": "1"}}})
}

async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("POST");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.unwrap())
}

/// Opens a session; returns its id.
async fn open_session(url: &str, headers: &[(&str, &str)]) -> String {
    let (status, h, body) = post(url, headers, initialize().to_string()).await;
    assert_eq!(status, 200, "{body}");
    h.get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_string()
}

/// The JSON-RPC error message of a refusal body.
fn message(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {body}"));
    v["error"]["message"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn foreign_origins_and_rebound_hosts_are_refused() {
    let dir = empty_dir("origin");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "http://evil.example")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403);
    assert!(message(&body).contains("Origin not allowed"), "{body}");
    // A page of another site whose name was rebound to 127.0.0.1.
    let (status, _, body) = post(
        &serve.url,
        &[("host", "evil.example:80")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403);
    assert!(message(&body).contains("DNS rebinding"), "{body}");
    // A page on another loopback port is another site: refused unless listed.
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "http://localhost:6274")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // The endpoint's own origin is accepted.
    let own = serve
        .url
        .trim_end_matches("/mcp")
        .replace("127.0.0.1", "localhost");
    let (status, _, body) = post(&serve.url, &[("origin", &own)], initialize().to_string()).await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

/// A page of another site can neither read a session's stream nor end it:
/// GET and DELETE are held to the same Origin rule as POST.
#[tokio::test]
async fn foreign_origins_are_refused_on_get_and_delete_too() {
    let dir = empty_dir("origin-get-delete");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let id = open_session(&serve.url, &[]).await;
    let client = reqwest::Client::new();
    let get = client
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 403);
    let delete = client
        .delete(&serve.url)
        .header("mcp-session-id", &id)
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status().as_u16(), 403);
    // The session is still there for its own client.
    let ping = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], ping.to_string()).await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

#[tokio::test]
async fn an_allowed_origin_is_accepted() {
    let dir = empty_dir("allowed");
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--allow-origin",
            "https://app.example",
        ],
    );
    let (status, _, body) = post(
        &serve.url,
        &[("origin", "https://app.example")],
        initialize().to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    serve.stop();
}

fn token_file(dir: &Path, mode: u32) -> PathBuf {
    let path = dir.join("token");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[tokio::test]
async fn the_bearer_token_is_required_and_never_printed() {
    let dir = empty_dir("token");
    let token = token_file(&dir, 0o600);
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    );
    for presented in [None, Some("Bearer wrong"), Some("Basic dG9rOg==")] {
        let headers: Vec<(&str, &str)> = presented
            .map(|v| ("authorization", v))
            .into_iter()
            .collect();
        let (status, h, body) = post(&serve.url, &headers, initialize().to_string()).await;
        assert_eq!(status, 401, "{presented:?}: {body}");
        assert_eq!(h.get("www-authenticate").unwrap(), "Bearer");
        assert!(message(&body).contains("bearer token"), "{body}");
        assert!(!body.contains(SECRET));
    }
    let bearer = format!("Bearer {SECRET}");
    let id = open_session(&serve.url, &[("authorization", &bearer)]).await;
    // Every request needs it, not just the first.
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let (status, _, _) = post(&serve.url, &[("mcp-session-id", &id)], list.clone()).await;
    assert_eq!(status, 401);
    let (status, _, body) = post(
        &serve.url,
        &[("mcp-session-id", &id), ("authorization", &bearer)],
        list,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let logs = serve.stop();
    assert!(!logs.contains(SECRET), "the token was logged:\n{logs}");
}

#[test]
fn a_token_file_others_can_read_is_refused() {
    let dir = empty_dir("token-mode");
    let token = token_file(&dir, 0o644);
    let out = serve_command(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("must be 0600"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
}

#[test]
fn an_exposed_address_needs_a_token() {
    let dir = empty_dir("exposed");
    let out = serve_command(&dir, &["--http", "0.0.0.0:0", "--no-token"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("loopback addresses only") && stderr.contains("--no-token"),
        "{stderr}"
    );
    // It refused before starting any server.
    assert!(!stderr.contains("started stdio server"), "{stderr}");
}

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

#[tokio::test]
async fn a_malformed_initialize_opens_no_session_and_a_batch_gets_an_array() {
    let dir = empty_dir("init-batch");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0", "--max-sessions", "1"]);
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    for _ in 0..3 {
        let (status, headers, body) = post(&serve.url, &[], bad.to_string()).await;
        assert_eq!(status, 400, "{body}");
        assert!(headers.get("mcp-session-id").is_none());
        assert!(message(&body).contains("protocolVersion"), "{body}");
    }
    // The one slot is still free.
    let id = open_session(&serve.url, &[]).await;
    let batch = json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]).to_string();
    // The transport asks clients to take both answer forms; one that takes
    // JSON alone is refused.
    let json_only = reqwest::Client::new()
        .post(&serve.url)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-session-id", &id)
        .body(batch.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(json_only.status().as_u16(), 406);
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], batch).await;
    assert_eq!(status, 200, "{body}");
    // A batch's answers come as a stream of its messages, each answer once.
    let answers: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        answers,
        vec![json!({"jsonrpc": "2.0", "id": 2, "result": {}})]
    );
    serve.stop();
}

/// A session opens with the body of `initialize` asking for `version`; returns
/// its id and the revision the gateway answered.
async fn open_at(url: &str, version: &str) -> (String, String) {
    let mut init = initialize();
    init["params"]["protocolVersion"] = json!(version);
    let (status, headers, body) = post(url, &[], init.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let id = headers["mcp-session-id"].to_str().unwrap().to_string();
    // The answer may come as JSON or as one SSE event.
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&body);
    let answer: Value = serde_json::from_str(json).unwrap();
    (
        id,
        answer["result"]["protocolVersion"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

#[tokio::test]
async fn sessions_negotiate_a_revision_and_are_held_to_it() {
    // With no setting every session speaks 2025-03-26, whatever it asks.
    let dir = empty_dir("revisions-default");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    assert_eq!(open_at(&serve.url, "2025-06-18").await.1, "2025-03-26");
    serve.stop();

    let dir = empty_dir("revisions");
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--protocol-versions",
            "2025-06-18,2025-03-26",
        ],
    );
    // A listed revision is the session's; an unknown one gets the first preferred.
    assert_eq!(open_at(&serve.url, "2025-03-26").await.1, "2025-03-26");
    assert_eq!(open_at(&serve.url, "2024-11-05").await.1, "2025-06-18");
    let (id, revision) = open_at(&serve.url, "2025-06-18").await;
    assert_eq!(revision, "2025-06-18");
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    let with = |version: &'static str| {
        [
            ("mcp-session-id", id.clone()),
            ("mcp-protocol-version", version.to_string()),
        ]
    };
    let h = with("2025-06-18");
    let pairs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = post(&serve.url, &pairs, ping.clone()).await;
    assert_eq!(status, 200, "{body}");
    // A request naming another revision than the session's is refused.
    let h = with("2025-03-26");
    let pairs: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, _, body) = post(&serve.url, &pairs, ping.clone()).await;
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("MCP-Protocol-Version"), "{body}");
    // So is a batch: 2025-06-18 has none.
    let batch = format!("[{ping}]");
    let (status, _, body) = post(&serve.url, &[("mcp-session-id", &id)], batch).await;
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("batches"), "{body}");
    // The GET stream and DELETE are held to the session's revision too.
    let client = reqwest::Client::new();
    let get = client
        .get(&serve.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-03-26")
        .send()
        .await
        .unwrap();
    assert_eq!(get.status().as_u16(), 400);
    let delete = |version: &'static str| {
        client
            .delete(&serve.url)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", version)
            .send()
    };
    assert_eq!(delete("2025-03-26").await.unwrap().status().as_u16(), 400);
    let (status, _, body) = post(&serve.url, &pairs_of(&with("2025-06-18")), ping).await;
    assert_eq!(status, 200, "the refused DELETE left the session: {body}");
    assert_eq!(delete("2025-06-18").await.unwrap().status().as_u16(), 204);
    serve.stop();
}

fn pairs_of<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The result of one `tools/call` in `session` (JSON or one SSE event).
async fn call_in(url: &str, session: &str, name: &str, arguments: Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let (status, _, body) = post(url, &[("mcp-session-id", session)], call.to_string()).await;
    assert_eq!(status, 200, "{body}");
    let json = body
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(&body);
    serde_json::from_str::<Value>(json).unwrap()["result"].clone()
}

#[tokio::test]
async fn an_older_session_gets_resource_links_as_text() {
    let dir = empty_dir("convert");
    let index = testkit::peers_dir()
        .join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let config =
        json!({"mcpServers": {"everything": {"command": "node", "args": [index, "stdio"]}}});
    std::fs::write(dir.join(".mcp.json"), config.to_string()).unwrap();
    let enabled = testkit::serve::mcpvisor(&dir)
        .args(["enable", "everything"])
        .output()
        .unwrap();
    assert!(enabled.status.success());
    // Upstream at 2025-11-25; one session at each end of the range.
    let serve = Serve::start(
        &dir,
        &[
            "--http",
            "127.0.0.1:0",
            "--protocol-versions",
            "2025-11-25,2025-03-26",
        ],
    );
    let (new, _) = open_at(&serve.url, "2025-11-25").await;
    let (old, revision) = open_at(&serve.url, "2025-03-26").await;
    assert_eq!(revision, "2025-03-26");
    let tool = "mcp__everything__get-resource-links";
    let fresh = call_in(&serve.url, &new, tool, json!({"count": 1})).await;
    let kinds: Vec<&str> = fresh["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert!(kinds.contains(&"resource_link"), "{fresh}");
    let converted = call_in(&serve.url, &old, tool, json!({"count": 1})).await;
    let blocks = converted["content"].as_array().unwrap();
    assert!(blocks.iter().all(|b| b["type"] == "text"), "{converted}");
    assert!(
        blocks
            .iter()
            .any(|b| b["text"].as_str().unwrap().starts_with("[resource link: ")),
        "{converted}"
    );
    serve.stop();
}
