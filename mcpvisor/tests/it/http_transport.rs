//! The Streamable HTTP transport against the scriptable fixture: answer kinds,
//! sessions, the GET stream, resumption, failures and limits.

use std::time::Duration;

use mcpvisor::{
    CallError, CallOptions, Host, HostEvent, SecretString, ServerSpec, ServerState,
    SupervisorOptions,
};
use mcpvisor::{HttpSpec, TransportError};
use serde_json::json;
use testkit::http_server::{AnswerMode, GetMode, HttpMcpServer, Script};
use testkit::{call, eventually, fast_options, next_ready, wait_for};

fn options() -> SupervisorOptions {
    let mut o = fast_options();
    o.http.get_backoff_initial = Duration::from_millis(50);
    o
}

fn spec(server: &HttpMcpServer) -> ServerSpec {
    ServerSpec::http(
        "fx",
        HttpSpec {
            url: server.url.clone(),
            headers: Vec::new(),
            oauth: None,
        },
    )
}

async fn start(
    script: Script,
) -> (
    HttpMcpServer,
    Host,
    std::pin::Pin<Box<dyn futures::Stream<Item = HostEvent> + Send>>,
) {
    let server = HttpMcpServer::start(script).await;
    let host = Host::start(vec![spec(&server)], options()).await.unwrap();
    let mut events: std::pin::Pin<Box<dyn futures::Stream<Item = HostEvent> + Send>> =
        Box::pin(host.events());
    next_ready(&mut events).await;
    (server, host, events)
}

fn is_log(e: &HostEvent, data: &str) -> bool {
    matches!(e, HostEvent::ServerLog { message, .. } if message.data == json!(data))
}

#[tokio::test]
async fn json_answers_and_the_headers_every_post_carries() {
    let (server, host, _events) = start(Script {
        answer: AnswerMode::Json,
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "json"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "json");
    let posts: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.http_method == "POST")
        .collect();
    assert!(
        posts.len() >= 4,
        "initialize, initialized, tools/list, tools/call"
    );
    for p in &posts {
        assert_eq!(p.content_type.as_deref(), Some("application/json"));
        assert_eq!(
            p.accept.as_deref(),
            Some("application/json, text/event-stream")
        );
    }
    assert_eq!(posts[0].rpc_method.as_deref(), Some("initialize"));
    assert!(posts[0].session.is_none());
    let session = server.sessions()[0].clone();
    assert!(
        posts[1..]
            .iter()
            .all(|p| p.session.as_deref() == Some(session.as_str())),
        "session id on every later POST"
    );
    assert_eq!(
        posts[1].rpc_method.as_deref(),
        Some("notifications/initialized"),
        "answered 202"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn sse_answer_with_a_notification_before_the_response() {
    let (_server, host, mut events) = start(Script {
        answer: AnswerMode::SseNotifyFirst,
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.text(), "3");
    wait_for(&mut events, Duration::from_secs(5), |e| {
        is_log(e, "before the answer")
    })
    .await;
    host.shutdown().await;
}

/// An answered event stream is read to its end, so its connection goes back to
/// the pool: sequential calls do not each pay for a new connection.
#[tokio::test]
async fn answered_sse_streams_leave_their_connection_reusable() {
    let (server, host, _events) = start(Script {
        end_delay_ms: 5,
        ..Script::default()
    })
    .await;
    let before = server.connections();
    for i in 0..30 {
        let text = format!("call {i}");
        let r = call(&host, "mcp__fx__echo", json!({"text": text}))
            .await
            .unwrap();
        assert_eq!(r.text(), text);
        // Past the stream's end: a connection still being read is busy, and a
        // call then opens another (that one is reused later too).
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let opened = server.connections() - before;
    assert!(opened <= 3, "30 calls opened {opened} connections");
    host.shutdown().await;
}

/// A cancelled request stops waiting: its POST is dropped with its connection,
/// so cancelling calls to a server that never answers does not pile up
/// connections (and tasks) for as long as the host runs.
#[tokio::test]
async fn cancelled_requests_release_their_connections() {
    let (server, host, _events) = start(Script {
        hang_tool: Some("stall".into()),
        ..Script::default()
    })
    .await;
    let baseline = server.open_connections();
    for _ in 0..10 {
        let call = host.call("mcp__fx__stall", json!({}), CallOptions::default());
        // Dropped unanswered: cancelled.
        assert!(
            tokio::time::timeout(Duration::from_millis(100), call)
                .await
                .is_err()
        );
    }
    assert!(
        eventually(Duration::from_secs(10), || server.open_connections()
            <= baseline + 1)
        .await,
        "{} connections open, {baseline} before the cancelled calls",
        server.open_connections()
    );
    host.shutdown().await;
}

#[tokio::test]
async fn batch_answer_delivers_every_message() {
    let (_server, host, mut events) = start(Script {
        answer: AnswerMode::JsonBatch,
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "in a batch"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "in a batch");
    wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, HostEvent::ServerLog { .. })
    })
    .await;
    host.shutdown().await;
}

async fn session_expiry_renews_and_retries(script: Script) {
    let (server, host, mut events) = start(script).await;
    let first = server.sessions();
    assert_eq!(first.len(), 1);
    server.expire_sessions();
    let r = call(&host, "mcp__fx__echo", json!({"text": "after expiry"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after expiry");
    wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, HostEvent::SessionRenewed { .. })
    })
    .await;
    let now = server.sessions();
    assert_eq!(now.len(), 1);
    assert_ne!(now, first, "a new session");
    let inits = server
        .rpc_methods()
        .iter()
        .filter(|m| m.as_deref() == Some("initialize"))
        .count();
    assert_eq!(inits, 2);
    assert_eq!(host.servers()[0].restarts, 0, "renewal is not a restart");
    host.shutdown().await;
}

#[tokio::test]
async fn expired_session_404_starts_a_new_session_and_retries_once() {
    session_expiry_renews_and_retries(Script::default()).await;
}

/// Calls sent while a renewal's `initialize` is still on its way keep the old
/// session id (and wait for the renewal when it is refused), rather than going
/// out with no session at all and failing with the server's 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_during_a_renewal_wait_for_it() {
    let (server, host, _events) = start(Script::default()).await;
    server.set_script(Script {
        slow_initialize_ms: 400,
        ..Script::default()
    });
    server.expire_sessions();
    let first = host.call(
        "mcp__fx__echo",
        json!({"text": "first"}),
        CallOptions::default(),
    );
    let first = tokio::spawn(first);
    // Let the first call meet the expiry: the renewal's initialize is on its way.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let during: Vec<_> = (0..8)
        .map(|i| {
            let text = format!("during {i}");
            let call = host.call(
                "mcp__fx__echo",
                json!({"text": text}),
                CallOptions::default(),
            );
            tokio::spawn(async move { (text, call.await) })
        })
        .collect();
    assert_eq!(first.await.unwrap().unwrap().text(), "first");
    for call in during {
        let (text, answer) = call.await.unwrap();
        assert_eq!(answer.unwrap().text(), text);
    }
    let sessionless: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.http_method == "POST" && r.session.is_none())
        .filter_map(|r| r.rpc_method)
        .collect();
    assert_eq!(
        sessionless,
        ["initialize", "initialize"],
        "only the two initializes go out without a session"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn dead_session_400_is_treated_as_expiry() {
    session_expiry_renews_and_retries(Script {
        dead_session_400: true,
        ..Script::default()
    })
    .await;
}

#[tokio::test]
async fn get_405_means_no_stream_and_posts_still_work() {
    let (server, host, _events) = start(Script {
        get: GetMode::NotAllowed,
        ..Script::default()
    })
    .await;
    for i in 0..5 {
        let r = call(&host, "mcp__fx__echo", json!({"text": format!("p{i}")}))
            .await
            .unwrap();
        assert_eq!(r.text(), format!("p{i}"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.get_last_event_ids().len(), 1, "405 is not retried");
    host.shutdown().await;
}

/// The listing that makes a connection ready does not wait for the notification
/// stream to open; a call does, so no call can be cut before the stream is open.
#[tokio::test]
async fn listings_go_out_while_the_get_opens_and_calls_wait_for_it() {
    const SLOW_GET: Duration = Duration::from_millis(1500);
    let (server, host, _events) = start(Script {
        get: GetMode::Stream {
            events: 0,
            then_close: false,
            interval_ms: 1000,
        },
        slow_get_ms: SLOW_GET.as_millis() as u64,
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    let requests = server.requests();
    let arrived = |http: &str, rpc: Option<&str>| {
        requests
            .iter()
            .find(|r| r.http_method == http && r.rpc_method.as_deref() == rpc)
            .unwrap_or_else(|| panic!("no {http} {rpc:?} in {requests:?}"))
            .at
    };
    let get = arrived("GET", None);
    let answered = get + SLOW_GET;
    let listed = arrived("POST", Some("tools/list"));
    let called = arrived("POST", Some("tools/call"));
    assert!(
        listed < answered,
        "tools/list waited for the GET's answer: it came {:?} after the GET",
        listed.duration_since(get)
    );
    assert!(
        called >= answered,
        "tools/call went out before the GET was answered: {:?} after the GET",
        called.duration_since(get)
    );
    host.shutdown().await;
}

#[tokio::test]
async fn get_409_never_breaks_posts() {
    let (_server, host, _events) = start(Script {
        get: GetMode::Conflict,
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "fine"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "fine");
    host.shutdown().await;
}

#[tokio::test]
async fn dropped_get_stream_resumes_with_last_event_id() {
    let script = Script {
        get: GetMode::Stream {
            events: 2,
            then_close: true,
            interval_ms: 10,
        },
        ..Script::default()
    };
    // Not `start`: it skips events until ready, and the stream opens before that.
    let server = HttpMcpServer::start(script).await;
    let host = Host::start(vec![spec(&server)], options()).await.unwrap();
    let mut events = Box::pin(host.events());
    let mut seen = Vec::new();
    wait_for(&mut events, Duration::from_secs(10), |e| {
        if let HostEvent::ServerLog { message, .. } = e {
            seen.push(message.data.as_str().unwrap_or_default().to_string());
        }
        seen.len() >= 4
    })
    .await;
    assert_eq!(
        seen,
        vec!["g-1", "g-2", "g-3", "g-4"],
        "no event lost or repeated"
    );
    let ids = server.get_last_event_ids();
    assert_eq!(ids[0], None);
    assert_eq!(ids[1].as_deref(), Some("g-2"));
    host.shutdown().await;
}

#[tokio::test]
async fn cut_post_stream_is_resumed_by_get_after_retry() {
    let (server, host, _events) = start(Script {
        cut_tool: Some("cut".into()),
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__cut", json!({})).await.unwrap();
    assert_eq!(r.text(), "cut done");
    let cut = &server.cuts()[0];
    let resumed = cut.resumed_at.expect("resumed by GET");
    // The server asked for `retry: 500`; resuming sooner would ignore it.
    assert!(resumed.duration_since(cut.cut_at) >= Duration::from_millis(450));
    assert!(
        server
            .get_last_event_ids()
            .contains(&Some("p-1".to_string()))
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_restarts_and_its_session_is_deleted() {
    let (server, host, mut events) = start(Script {
        hang_tool: Some("hang".into()),
        ..Script::default()
    })
    .await;
    let first = server.sessions()[0].clone();
    let e = host
        .call(
            "mcp__fx__hang",
            json!({}),
            CallOptions::default().timeout(Duration::from_millis(300)),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, CallError::Timeout { .. }), "{e}");
    next_ready(&mut events).await;
    assert!(
        server.deletes().contains(&Some(first.clone())),
        "{:?}",
        server.deletes()
    );
    assert!(!server.sessions().contains(&first));
    let r = call(&host, "mcp__fx__echo", json!({"text": "new connection"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "new connection");
    host.shutdown().await;
}

#[tokio::test]
async fn garbage_in_an_sse_answer_is_skipped() {
    let (_server, host, _events) = start(Script {
        garbage_tool: Some("junk".into()),
        ..Script::default()
    })
    .await;
    let r = call(&host, "mcp__fx__junk", json!({})).await.unwrap();
    assert_eq!(r.text(), "junk done");
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}

#[tokio::test]
async fn a_10_mib_event_fails_that_call_with_a_typed_error() {
    let (_server, host, _events) = start(Script {
        huge_event_tool: Some("huge".into()),
        ..Script::default()
    })
    .await;
    let e = call(&host, "mcp__fx__huge", json!({})).await.unwrap_err();
    assert!(
        matches!(e, CallError::Transport { source: TransportError::MessageTooLarge { limit }, .. } if limit == 4 * 1024 * 1024),
        "{e}"
    );
    let r = call(&host, "mcp__fx__echo", json!({"text": "still fine"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "still fine");
    host.shutdown().await;
}

#[tokio::test]
async fn other_statuses_fail_the_call_with_status_and_body() {
    let (_server, host, _events) = start(Script {
        fail_status_tool: Some(("boom".into(), 500)),
        ..Script::default()
    })
    .await;
    let e = call(&host, "mcp__fx__boom", json!({})).await.unwrap_err();
    let CallError::Transport {
        source: TransportError::HttpStatus { status, body },
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(*status, 500);
    assert_eq!(body, "fixture failure");
    let r = call(
        &host,
        "mcp__fx__echo",
        json!({"text": "connection survives"}),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "connection survives");
    host.shutdown().await;
}

#[tokio::test]
async fn configured_headers_arrive_on_every_request() {
    let server = HttpMcpServer::start(Script::default()).await;
    let headers = vec![
        ("Authorization".to_string(), SecretString::new("Bearer abc")),
        ("X-Api-Key".to_string(), SecretString::new("key-1")),
    ];
    let spec = ServerSpec::http(
        "fx",
        HttpSpec {
            url: server.url.clone(),
            headers,
            oauth: None,
        },
    );
    let host = Host::start(vec![spec], options()).await.unwrap();
    assert_eq!(
        host.wait_ready(Duration::from_secs(10)).await[0].state,
        ServerState::Ready
    );
    call(&host, "mcp__fx__echo", json!({"text": "x"}))
        .await
        .unwrap();
    host.shutdown().await;
    let all = server.requests();
    assert!(all.len() >= 5);
    for r in &all {
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer abc"),
            "{} {:?}",
            r.http_method,
            r.rpc_method
        );
        assert_eq!(r.x_api_key.as_deref(), Some("key-1"));
    }
    assert!(all.iter().any(|r| r.http_method == "DELETE"));
}

#[tokio::test]
async fn a_server_restarted_on_the_same_port_gets_a_new_session() {
    let (server, host, mut events) = start(Script::default()).await;
    let port = server.addr.port();
    server.stop();
    drop(server);
    // Let the aborted accept loop release the port.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let server = HttpMcpServer::start_on(port, Script::default()).await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "again"})).await;
    // The old session is unknown to the new process: renewed transparently, or,
    // when the old connection was reset under the request, a restart.
    if r.is_err() {
        next_ready(&mut events).await;
    }
    assert!(eventually(Duration::from_secs(10), || server.sessions().len() == 1).await);
    let r = call(&host, "mcp__fx__echo", json!({"text": "again"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "again");
    host.shutdown().await;
}
