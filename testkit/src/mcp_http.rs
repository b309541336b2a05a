//! A plain reqwest client of `mcpvisor serve --http` speaking Streamable
//! HTTP (MCP 2025-03-26), so every status, header and body is checked as sent.

use std::time::Duration;

use serde_json::{Value, json};

/// One HTTP exchange that is expected to end soon.
pub const QUICK: Duration = Duration::from_secs(20);

/// What one POST got back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub session: Option<String>,
    pub body: String,
}

impl Reply {
    /// The JSON-RPC messages of the body: one JSON value, or SSE `data:` lines.
    pub fn messages(&self) -> Vec<Value> {
        if self.content_type.starts_with("text/event-stream") {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| serde_json::from_str(d.trim()).expect("SSE data is JSON"))
                .collect()
        } else if self.body.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&self.body).expect("the body is JSON")]
        }
    }

    /// The answer to request `id`.
    pub fn answer(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id && (m.get("result").is_some() || m.get("error").is_some()))
            .unwrap_or_else(|| panic!("no answer to request {id} in {self:?}"))
    }
}

/// One HTTP MCP session.
#[derive(Clone)]
pub struct Session {
    pub http: reqwest::Client,
    pub url: String,
    pub id: String,
}

impl Session {
    /// `initialize` (without a session id), then `notifications/initialized`.
    pub async fn open(http: &reqwest::Client, url: &str) -> Session {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "mcpvisor-test", "version": "1"}}});
        let reply = within(QUICK, post(http, url, None, &init)).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let answer = reply.answer(1);
        assert_eq!(
            answer["result"]["protocolVersion"], "2025-03-26",
            "{answer}"
        );
        let id = reply
            .session
            .clone()
            .unwrap_or_else(|| panic!("initialize answered without Mcp-Session-Id: {reply:?}"));
        let session = Session {
            http: http.clone(),
            url: url.to_string(),
            id,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let reply = within(QUICK, session.post(&initialized)).await;
        assert_eq!(reply.status, 202, "{reply:?}");
        session
    }

    pub async fn post(&self, message: &Value) -> Reply {
        post(&self.http, &self.url, Some(&self.id), message).await
    }

    /// `tools/call` as request `id`, with a progress token; the whole reply.
    pub async fn call(&self, id: u64, name: &str, arguments: Value) -> Reply {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": name, "arguments": arguments, "_meta": {"progressToken": format!("p{id}")}}});
        self.post(&request).await
    }

    /// The result of a call that must answer within [`QUICK`].
    pub async fn call_result(&self, id: u64, name: &str, arguments: Value) -> Value {
        let reply = within(QUICK, self.call(id, name, arguments)).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let answer = reply.answer(id);
        assert!(answer.get("result").is_some(), "{name}: {answer}");
        answer["result"].clone()
    }

    pub async fn cancel(&self, id: u64) -> Reply {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the test changed its mind"}});
        within(QUICK, self.post(&cancel)).await
    }
}

pub async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    message: &Value,
) -> Reply {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response = request
        .body(message.to_string())
        .send()
        .await
        .expect("POST");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (status, content_type, session) = (
        response.status().as_u16(),
        header("content-type").unwrap_or_default(),
        header("mcp-session-id"),
    );
    let body = response.text().await.expect("read the body");
    Reply {
        status,
        content_type,
        session,
        body,
    }
}

/// `future`'s output, failing the test after `limit`.
pub async fn within<T>(limit: Duration, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("no answer within {limit:?}"))
}
