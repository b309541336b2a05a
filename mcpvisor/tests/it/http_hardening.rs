//! What the HTTP transport refuses to do for a server: follow a redirect (to
//! another origin or anywhere), wait forever for a notification's 202, or
//! reconnect its GET stream in a loop when the server says `retry: 0`.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcpvisor::HttpSpec;
use mcpvisor::{Host, HostEvent, SecretString, ServerSpec, SupervisorOptions};
use serde_json::json;
use testkit::http_server::{GetMode, HttpMcpServer, Script};
use testkit::{call, fast_options, next_ready, wait_for};

/// Every request that reached an origin: method, path and query, headers.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// An origin that answers everything with `status` (a 3xx with `location`, or a 404 recorder).
async fn origin(status: StatusCode, location: Option<String>) -> (SocketAddr, Seen) {
    let seen = Seen::default();
    let app = Router::new()
        .fallback(
            |State((seen, status, location)): State<(Seen, StatusCode, Option<String>)>,
             req: Request| async move {
                let mut line = format!("{} {}", req.method(), req.uri());
                for (name, value) in req.headers() {
                    line.push_str(&format!(
                        " | {name}: {}",
                        String::from_utf8_lossy(value.as_bytes())
                    ));
                }
                seen.0.lock().unwrap().push(line);
                let mut resp: Response = status.into_response();
                if let Some(l) = location {
                    resp.headers_mut()
                        .insert(header::LOCATION, l.parse().unwrap());
                }
                resp
            },
        )
        .with_state((seen.clone(), status, location));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, seen)
}

fn few_restarts() -> SupervisorOptions {
    let mut o = fast_options();
    o.restart.max_restarts = 1;
    o
}

fn http_spec(name: &str, url: String, headers: Vec<(String, SecretString)>) -> ServerSpec {
    ServerSpec::http(
        name,
        HttpSpec {
            url,
            headers,
            oauth: None,
        },
    )
}

fn reason(e: &HostEvent) -> Option<String> {
    match e {
        HostEvent::ServerRestarting { reason, .. } | HostEvent::ServerFailed { reason, .. } => {
            Some(reason.to_string())
        }
        _ => None,
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_and_carries_nothing() {
    for status in [
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::FOUND,
        StatusCode::PERMANENT_REDIRECT,
    ] {
        let (elsewhere, reached) = origin(StatusCode::NOT_FOUND, None).await;
        let target = format!("http://{elsewhere}/collect?stolen=LOCATION-QUERY-SECRET");
        let (redirector, _) = origin(status, Some(target)).await;
        let headers = vec![(
            "X-Api-Key".to_string(),
            SecretString::new("HEADER-SECRET-VALUE".to_string()),
        )];
        let url = format!("http://{redirector}/mcp?api_key=URL-QUERY-SECRET");
        let host = Host::start(vec![http_spec("moved", url, headers)], few_restarts())
            .await
            .unwrap();
        let mut events = Box::pin(host.events());
        let failed = wait_for(&mut events, Duration::from_secs(20), |e| {
            reason(e).is_some()
        })
        .await;
        let why = reason(&failed).unwrap().to_string();
        assert!(why.contains(&format!("HTTP {}", status.as_u16())), "{why}");
        assert!(why.contains("redirects are not followed"), "{why}");
        assert!(why.contains(&elsewhere.to_string()), "names where: {why}");
        for secret in [
            "LOCATION-QUERY-SECRET",
            "URL-QUERY-SECRET",
            "HEADER-SECRET-VALUE",
        ] {
            assert!(!why.contains(secret), "{why}");
            let shown = format!("{:?} {:?}", host.servers(), failed);
            assert!(!shown.contains(secret), "{shown}");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        host.shutdown().await;
        assert_eq!(
            reached.all(),
            Vec::<String>::new(),
            "nothing reached the other origin after a {status}"
        );
    }
}

#[tokio::test]
async fn a_redirected_get_stream_is_not_followed_and_calls_go_on() {
    let (elsewhere, reached) = origin(StatusCode::NOT_FOUND, None).await;
    let target: &'static str = Box::leak(format!("http://{elsewhere}/steal").into_boxed_str());
    let server = HttpMcpServer::start(Script {
        get: GetMode::Redirect(target),
        ..Script::default()
    })
    .await;
    let headers = vec![(
        "X-Api-Key".to_string(),
        SecretString::new("HEADER-SECRET-VALUE".to_string()),
    )];
    let host = Host::start(
        vec![http_spec("fx", server.url.clone(), headers)],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "still here"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "still here");
    let gets = server
        .requests()
        .iter()
        .filter(|r| r.http_method == "GET")
        .count();
    assert!(gets >= 1, "the GET stream was tried");
    host.shutdown().await;
    assert_eq!(reached.all(), Vec::<String>::new());
}

#[tokio::test]
async fn a_notification_post_that_is_never_answered_times_out() {
    let server = HttpMcpServer::start(Script {
        hang_notifications: true,
        ..Script::default()
    })
    .await;
    let mut options = fast_options();
    // Long enough that only the exchange timeout can make the server ready.
    options.startup_timeout = Duration::from_secs(120);
    options.http.exchange_timeout = Duration::from_millis(300);
    let host = Host::start(
        vec![http_spec("fx", server.url.clone(), Vec::new())],
        options,
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    // `initialized` hangs; without a bound the transport would never send tools/list.
    wait_for(&mut events, Duration::from_secs(30), |e| {
        matches!(e, HostEvent::ServerReady { .. })
    })
    .await;
    let r = call(&host, "mcp__fx__echo", json!({"text": "after"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "after");
    host.shutdown().await;
}

#[tokio::test]
async fn a_get_stream_asking_for_retry_zero_reconnects_no_faster_than_the_floor() {
    let server = HttpMcpServer::start(Script {
        get: GetMode::RetryThenClose { retry_ms: 0 },
        ..Script::default()
    })
    .await;
    let host = Host::start(
        vec![http_spec("fx", server.url.clone(), Vec::new())],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    let gets = || {
        server
            .requests()
            .iter()
            .filter(|r| r.http_method == "GET")
            .count()
    };
    let before = gets();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let in_a_second = gets() - before;
    host.shutdown().await;
    // At the 100 ms floor a second holds at most ~10 reconnections; honouring
    // `retry: 0` literally gives hundreds.
    assert!(in_a_second >= 1, "the stream kept reconnecting");
    assert!(
        in_a_second <= 15,
        "{in_a_second} GETs in one second after `retry: 0`"
    );
}

#[tokio::test]
async fn a_cancel_the_server_never_accepts_does_not_hold_up_other_calls() {
    let server = HttpMcpServer::start(Script {
        hang_cancels: true,
        hang_tool: Some("stuck".into()),
        ..Script::default()
    })
    .await;
    // The default exchange timeout (30 s) stands: before the notice task, every
    // call sent after the cancel waited that long behind it.
    let host = Host::start(
        vec![http_spec("fx", server.url.clone(), Vec::new())],
        fast_options(),
    )
    .await
    .unwrap();
    let mut events = Box::pin(host.events());
    next_ready(&mut events).await;
    for round in 0..3 {
        let stuck = host.call("mcp__fx__stuck", json!({}), Default::default());
        let stuck = tokio::time::timeout(Duration::from_millis(200), stuck).await;
        assert!(stuck.is_err(), "the stuck tool never answers");
        // Dropping it sent `notifications/cancelled`, which the server never accepts.
        let echoed = tokio::time::timeout(
            Duration::from_secs(10),
            call(
                &host,
                "mcp__fx__echo",
                json!({"text": format!("round {round}")}),
            ),
        )
        .await
        .expect("a call after an unaccepted cancel completes")
        .unwrap();
        assert_eq!(echoed.text(), format!("round {round}"));
    }
    let cancels = server
        .rpc_methods()
        .iter()
        .filter(|m| m.as_deref() == Some("notifications/cancelled"))
        .count();
    assert!(cancels >= 1, "the cancel was posted");
    host.shutdown().await;
}
