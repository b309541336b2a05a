//! One endpoint, both eras: 2026-07-28 requests (no session, `_meta` in
//! place of `initialize`) beside `initialize` sessions, with what that
//! revision asks of the transport — the headers checked against the body,
//! errors carrying their request's id and saying their kind in the status,
//! 405 for GET and DELETE (400 to a 2025 client without its session), and
//! a closed response stream as the client's cancel.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Serve, empty_dir, open_session, post};

const V: &str = "2026-07-28";

/// The params of a request at 2026-07-28: `extra` with the `_meta` it needs.
fn params(extra: Value) -> Value {
    let mut params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stateless-test", "version": "1"},
    }});
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        p.extend(e);
    }
    params
}

/// Posts `method` at 2026-07-28 with the headers a conforming client sends
/// (`name`: its `Mcp-Name`); returns the status and the JSON-RPC message.
async fn call(url: &str, id: u64, method: &str, name: Option<&str>, extra: Value) -> (u16, Value) {
    let mut headers = vec![("mcp-protocol-version", V), ("mcp-method", method)];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params(extra)});
    let (status, _, text) = post(url, &headers, body.to_string()).await;
    (status, read(&text))
}

/// The JSON-RPC message of a JSON or SSE answer (the last SSE event).
fn read(text: &str) -> Value {
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .unwrap_or(text);
    serde_json::from_str(json.trim()).unwrap_or_else(|_| panic!("not JSON-RPC: {text}"))
}

async fn tool(url: &str, id: u64, name: &str, arguments: Value) -> (u16, Value) {
    let extra = json!({"name": name, "arguments": arguments});
    call(url, id, "tools/call", Some(name), extra).await
}

/// Waits for the demo server's tools to be routed.
async fn demo_ready(url: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, listed) = call(url, 1, "tools/list", None, json!({})).await;
        let tools = listed["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if tools.iter().any(|t| t["name"] == "mcp__demo__echo") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the demo tools never came: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_session_and_stateless_requests_are_served_side_by_side() {
    let dir = empty_dir("stateless-both");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let url = serve.url.clone();
    demo_ready(&url).await;

    let (status, found) = call(&url, 7, "server/discover", None, json!({})).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["id"], 7);
    assert_eq!(found["result"]["supportedVersions"], json!([V]));
    assert_eq!(found["result"]["resultType"], "complete");
    assert_eq!(
        found["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "mcpvisor"
    );

    let (status, echoed) = tool(&url, 8, "mcp__demo__echo", json!({"text": "modern"})).await;
    assert_eq!(status, 200, "{echoed}");
    assert_eq!(echoed["result"]["content"][0]["text"], "modern");
    assert_eq!(echoed["result"]["resultType"], "complete");

    let (_, listed) = call(&url, 9, "tools/list", None, json!({})).await;
    assert_eq!(listed["result"]["ttlMs"], 0, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "public", "{listed}");

    // A 2025 session on the same endpoint is served as before, at its revision.
    let session = open_session(&url, &[]).await;
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "mcp__demo__echo", "arguments": {"text": "legacy"}}});
    let (status, _, text) = post(&url, &[("mcp-session-id", &session)], body.to_string()).await;
    let answer = read(&text);
    assert_eq!(status, 200, "{text}");
    assert_eq!(answer["result"]["content"][0]["text"], "legacy");
    assert!(answer["result"].get("resultType").is_none(), "{answer}");
    serve.stop();
}

#[tokio::test]
async fn what_the_revision_refuses_is_refused_with_the_request_id_and_the_status_it_names() {
    let dir = empty_dir("stateless-refusals");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let url = serve.url.clone();

    // A name header that is not the body's.
    let extra = json!({"name": "mcp__demo__echo", "arguments": {"text": "x"}});
    let (status, e) = call(
        &url,
        31,
        "tools/call",
        Some("mcp__demo__pid"),
        extra.clone(),
    )
    .await;
    assert_eq!(
        (status, e["id"].clone(), e["error"]["code"].clone()),
        (400, json!(31), json!(-32020)),
        "{e}"
    );
    // None at all.
    let (status, e) = call(&url, 32, "tools/call", None, extra).await;
    assert_eq!(
        (status, e["error"]["code"].clone()),
        (400, json!(-32020)),
        "{e}"
    );
    // A version not spoken, named alike in the header and the body.
    let body = json!({"jsonrpc": "2.0", "id": 33, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2099-01-01",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ("mcp-protocol-version", "2099-01-01"),
        ("mcp-method", "server/discover"),
    ];
    let (status, _, text) = post(&url, &headers, body.to_string()).await;
    let e = read(&text);
    assert_eq!(
        (status, e["id"].clone(), e["error"]["code"].clone()),
        (400, json!(33), json!(-32022)),
        "{e}"
    );
    assert_eq!(e["error"]["data"]["supported"], json!([V]));
    // Methods the revision removed, and one never known, are not found.
    for (id, method) in [(34, "ping"), (35, "logging/setLevel"), (36, "no/such")] {
        let (status, e) = call(&url, id, method, None, json!({})).await;
        assert_eq!(
            (status, e["id"].clone(), e["error"]["code"].clone()),
            (404, json!(id), json!(-32601)),
            "{method}: {e}"
        );
    }
    // No GET stream and nothing to DELETE without a session.
    let response = serve
        .client()
        .get(&url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let response = serve
        .client()
        .delete(&url)
        .header("mcp-protocol-version", V)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 405);
    // A 2025 client that forgot its session is told so, as its revision does.
    let response = serve
        .client()
        .get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);
    serve.stop();
}

#[tokio::test]
async fn closing_a_stateless_calls_stream_cancels_it_upstream() {
    let dir = empty_dir("stateless-cancel");
    let serve = Serve::start(&dir, &["--http", "127.0.0.1:0"]);
    let url = serve.url.clone();
    demo_ready(&url).await;

    // A 30 s sleep whose client gives up after 1 s: its connection closes.
    let sleeping = tool(&url, 41, "mcp__demo__sleep", json!({"ms": 30_000}));
    let given_up = tokio::time::timeout(Duration::from_secs(1), sleeping).await;
    assert!(given_up.is_err(), "the sleep answered early: {given_up:?}");

    // The demo server hears the cancel (it comes asynchronously: poll).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, seen) = tool(&url, 42, "mcp__demo__cancelled", json!({})).await;
        let text = seen["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("[]")
            .to_string();
        let cancelled: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if cancelled
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["tool"] == "sleep"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the demo server saw no cancellation of the sleep: {seen}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    serve.stop();
}
