//! The Streamable HTTP fixture (testkit/src/http_server) answers as the MCP
//! 2025-03-26 transport says and as its script asks, checked with a raw HTTP client.

use std::time::Duration;

use serde_json::{Value, json};
use testkit::http_server::{AnswerMode, GetMode, HttpMcpServer, Script};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A raw HTTP client speaking to one fixture.
struct Raw {
    http: reqwest::Client,
    url: String,
}

impl Raw {
    fn new(server: &HttpMcpServer) -> Raw {
        Raw {
            http: reqwest::Client::new(),
            url: server.url.clone(),
        }
    }

    fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(&self.url)
            .header("accept", ACCEPT_BOTH)
            .header("content-type", "application/json")
            .body(body.to_string());
        with_session(request, session)
    }

    async fn send(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        self.post(session, body).send().await.expect("POST")
    }

    async fn get(&self, session: &str, last_event_id: Option<&str>) -> reqwest::Response {
        let mut request = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        request.send().await.expect("GET")
    }

    /// Initializes and returns the new session id.
    async fn initialize(&self) -> String {
        let response = self.send(None, &initialize(1)).await;
        assert_eq!(response.status(), 200);
        header(&response, "mcp-session-id").expect("a session id")
    }
}

fn with_session(
    request: reqwest::RequestBuilder,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    match session {
        Some(id) => request.header("mcp-session-id", id),
        None => request,
    }
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }})
}

fn echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"text": text}}})
}

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": {}}})
}

fn text_result(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id,
           "result": {"content": [{"type": "text", "text": text}], "isError": false}})
}

fn header(response: &reqwest::Response, name: &str) -> Option<String> {
    let value = response.headers().get(name)?;
    Some(value.to_str().expect("ASCII header").to_string())
}

/// `(id, data)` of each event of a whole SSE body, comments and empty events left out.
fn events(body: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    for block in body.split("\n\n").filter(|b| !b.is_empty()) {
        let mut id = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id: ") {
                id = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v);
            }
        }
        if id.is_some() || !data.is_empty() {
            out.push((id, data.join("\n")));
        }
    }
    out
}

fn json_of(data: &str) -> Value {
    serde_json::from_str(data).expect("JSON event data")
}

#[tokio::test]
async fn initialize_opens_counting_sessions_and_records_headers() {
    let server = HttpMcpServer::start(Script::default()).await;
    let raw = Raw::new(&server);
    let response = raw
        .post(None, &initialize(1))
        .header("authorization", "Bearer t0ken")
        .header("x-api-key", "k-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(&response, "mcp-session-id").as_deref(),
        Some("sess-1")
    );
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("text/event-stream")
    );
    let body = response.text().await.unwrap();
    let events = events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0].0.as_deref(), Some("1"));
    let answer = json_of(&events[0].1);
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(answer["result"]["serverInfo"]["name"], "http-fixture");
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"],
        true
    );

    assert_eq!(raw.initialize().await, "sess-2");
    assert_eq!(server.sessions(), ["sess-1", "sess-2"]);
    let first = &server.requests()[0];
    assert_eq!(first.http_method, "POST");
    assert_eq!(first.rpc_method.as_deref(), Some("initialize"));
    assert_eq!(first.rpc_id, Some(json!(1)));
    assert_eq!(first.session, None);
    assert_eq!(first.accept.as_deref(), Some(ACCEPT_BOTH));
    assert_eq!(first.content_type.as_deref(), Some("application/json"));
    assert_eq!(first.authorization.as_deref(), Some("Bearer t0ken"));
    assert_eq!(first.x_api_key.as_deref(), Some("k-123"));
}

#[tokio::test]
async fn echo_answers_as_json_as_json_batch_and_as_sse() {
    let script = Script {
        answer: AnswerMode::Json,
        ..Script::default()
    };
    let server = HttpMcpServer::start(script.clone()).await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;

    let response = raw.send(Some(&session), &echo(2, "hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("application/json")
    );
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body, text_result(2, "hi"));

    server.set_script(Script {
        answer: AnswerMode::JsonBatch,
        ..script.clone()
    });
    let response = raw.send(Some(&session), &echo(3, "batched")).await;
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("application/json")
    );
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(body[0]["method"], "notifications/message");
    assert_eq!(body[0]["params"]["data"], "before the answer");
    assert_eq!(body[1], text_result(3, "batched"));

    server.set_script(Script {
        answer: AnswerMode::SseNotifyFirst,
        ..script
    });
    let response = raw.send(Some(&session), &echo(4, "streamed")).await;
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("text/event-stream")
    );
    let body = response.text().await.unwrap();
    let events = events(&body);
    assert_eq!(events.len(), 2, "{body}");
    assert_eq!(json_of(&events[0].1)["params"]["logger"], "fixture");
    assert_eq!(json_of(&events[1].1), text_result(4, "streamed"));
    assert_ne!(events[0].0, events[1].0, "each event has its own id");
    assert_eq!(
        server.rpc_methods().last().unwrap().as_deref(),
        Some("tools/call")
    );
}

#[tokio::test]
async fn notification_gets_202_and_bad_headers_get_406_and_415() {
    let server = HttpMcpServer::start(Script::default()).await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = raw.send(Some(&session), &initialized).await;
    assert_eq!(response.status(), 202);
    assert!(response.bytes().await.unwrap().is_empty());

    let post = |accept: &str, content_type: &str| {
        raw.http
            .post(&raw.url)
            .header("mcp-session-id", &session)
            .header("accept", accept)
            .header("content-type", content_type)
            .body(echo(2, "x").to_string())
            .send()
    };
    let only_json = post("application/json", "application/json").await.unwrap();
    assert_eq!(only_json.status(), 406);
    let as_text = post(ACCEPT_BOTH, "text/plain").await.unwrap();
    assert_eq!(as_text.status(), 415);
    let no_session = raw.send(None, &echo(4, "x")).await;
    assert_eq!(no_session.status(), 400);
}

#[tokio::test]
async fn get_not_allowed_gives_405_and_records_last_event_id() {
    let server = HttpMcpServer::start(Script::default()).await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    assert_eq!(raw.get(&session, None).await.status(), 405);
    assert_eq!(raw.get(&session, Some("7")).await.status(), 405);
    server.set_script(Script {
        get: GetMode::Conflict,
        ..Script::default()
    });
    assert_eq!(raw.get(&session, None).await.status(), 409);
    assert_eq!(
        server.get_last_event_ids(),
        [None, Some("7".to_string()), None]
    );
}

#[tokio::test]
async fn delete_forgets_the_session_and_is_recorded() {
    let server = HttpMcpServer::start(Script::default()).await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    let delete = raw.http.delete(&raw.url).header("mcp-session-id", &session);
    assert_eq!(delete.send().await.unwrap().status(), 200);
    assert_eq!(server.deletes(), [Some("sess-1".to_string())]);
    assert!(server.sessions().is_empty());
    assert_eq!(raw.send(Some(&session), &echo(2, "x")).await.status(), 404);
}

#[tokio::test]
async fn expired_sessions_get_404_or_the_400_variant() {
    let server = HttpMcpServer::start(Script::default()).await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    server.expire_sessions();
    let response = raw.send(Some(&session), &echo(2, "x")).await;
    assert_eq!(response.status(), 404);

    server.set_script(Script {
        dead_session_400: true,
        ..Script::default()
    });
    let response = raw.send(Some(&session), &echo(3, "x")).await;
    assert_eq!(response.status(), 400);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(
        body["error"]["message"],
        "Bad Request: No valid session ID provided"
    );
    assert_eq!(body["id"], Value::Null);
}

#[tokio::test]
async fn cut_post_stream_is_answered_on_the_resuming_get() {
    let server = HttpMcpServer::start(Script {
        cut_tool: Some("flaky".into()),
        ..Script::default()
    })
    .await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    let response = raw.send(Some(&session), &call(5, "flaky")).await;
    assert_eq!(
        header(&response, "content-type").as_deref(),
        Some("text/event-stream")
    );
    assert_eq!(
        response.text().await.unwrap(),
        "id: p-1\nretry: 500\ndata: \n\n"
    );

    let resumed = raw.get(&session, Some("p-1")).await;
    assert_eq!(resumed.status(), 200);
    let body = resumed.text().await.unwrap();
    let events = events(&body);
    assert_eq!(events.len(), 1, "{body}");
    assert_eq!(events[0].0.as_deref(), Some("p-2"));
    assert_eq!(json_of(&events[0].1), text_result(5, "flaky done"));
    let cuts = server.cuts();
    assert_eq!(cuts.len(), 1);
    assert!(cuts[0].resumed_at.expect("resumed") >= cuts[0].cut_at);
}

#[tokio::test]
async fn get_stream_numbers_events_across_reconnections() {
    let server = HttpMcpServer::start(Script {
        get: GetMode::Stream {
            events: 2,
            then_close: true,
            interval_ms: 10,
        },
        ..Script::default()
    })
    .await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    let mut ids = Vec::new();
    for last in [None, Some("g-5"), None] {
        let body = raw.get(&session, last).await.text().await.unwrap();
        for (id, data) in events(&body) {
            assert_eq!(json_of(&data)["params"]["data"].as_str(), id.as_deref());
            ids.push(id.unwrap());
        }
    }
    assert_eq!(ids, ["g-1", "g-2", "g-6", "g-7", "g-8", "g-9"]);
}

#[tokio::test]
async fn open_get_stream_carries_pushes_and_ends_when_the_session_expires() {
    let server = HttpMcpServer::start(Script {
        get: GetMode::Stream {
            events: 0,
            then_close: false,
            interval_ms: 0,
        },
        ..Script::default()
    })
    .await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;
    let mut stream = raw.get(&session, None).await;
    assert_eq!(stream.status(), 200);
    let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    assert_eq!(server.push(changed.clone()), 1);
    let chunk = stream.chunk().await.unwrap().expect("an event");
    let chunk = String::from_utf8(chunk.to_vec()).unwrap();
    assert_eq!(chunk, format!("id: g-1\ndata: {changed}\n\n"));

    server.expire_sessions();
    let rest = tokio::time::timeout(Duration::from_secs(3), stream.text()).await;
    let rest = rest.expect("the stream ends").unwrap();
    assert!(
        rest.is_empty() || rest.starts_with(": keepalive"),
        "{rest:?}"
    );
}

#[tokio::test]
async fn tool_knobs_shape_their_answers() {
    let server = HttpMcpServer::start(Script {
        hang_tool: Some("stuck".into()),
        garbage_tool: Some("messy".into()),
        huge_event_tool: Some("huge".into()),
        fail_status_tool: Some(("broken".into(), 503)),
        ..Script::default()
    })
    .await;
    let raw = Raw::new(&server);
    let session = raw.initialize().await;

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let body = raw.send(Some(&session), &list).await.text().await.unwrap();
    let listed = json_of(&events(&body)[0].1);
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["echo", "add", "slow", "stuck", "messy", "huge", "broken"]
    );

    let broken = raw.send(Some(&session), &call(3, "broken")).await;
    assert_eq!(broken.status(), 503);
    assert_eq!(broken.text().await.unwrap(), "fixture failure");

    let messy = raw
        .send(Some(&session), &call(4, "messy"))
        .await
        .bytes()
        .await
        .unwrap();
    assert!(messy.starts_with(b"\xff\xfe"), "non-UTF-8 first");
    let valid = format!("data: {}\n\n", text_result(4, "messy done"));
    assert!(messy.ends_with(valid.as_bytes()));

    let huge = raw
        .send(Some(&session), &call(5, "huge"))
        .await
        .bytes()
        .await
        .unwrap();
    assert!(huge.len() > 10 * 1024 * 1024);
    assert!(huge.ends_with(format!("data: {}\n\n", text_result(5, "huge done")).as_bytes()));

    let stuck = raw.send(Some(&session), &call(6, "stuck")).await;
    assert_eq!(stuck.status(), 200);
    let next = tokio::time::timeout(Duration::from_millis(300), stuck.bytes()).await;
    assert!(next.is_err(), "a hanging call never answers");
}
