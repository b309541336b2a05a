//! What a session is held to: a malformed `initialize`, batches, the
//! revision it negotiated, and what an older session is given.

use super::*;

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
