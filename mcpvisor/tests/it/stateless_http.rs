//! MCP 2026-07-28 over Streamable HTTP against real servers of that
//! revision: the TypeScript SDK v2 server as a strict endpoint
//! (`createMcpHandler` with `legacy: 'reject'`, which logs the headers of
//! each request) and the Python SDK 2.3.0 server. Reached by default when
//! `initialize` is refused as such a server refuses it (once), or probed
//! first; every POST carries the revision's headers and no session; a tool
//! whose schema mirrors an argument into a header is called with it (the
//! SDK refuses the call without it), one whose annotation is invalid is not
//! offered; a multi-round-trip request is answered by the host; list changes
//! and resource updates arrive on `subscriptions/listen`, opened again after a
//! restart; a request that times out restarts the connection, which is
//! reached again.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor::{
    CallError, ClientCapabilities, ClientHandler, ElicitAnswer, FormRequest, Host, HostAnswer,
    HostEvent, ServerSpec, ServerState, SharedClientHandler, Versions,
};
use serde_json::{Value, json};
use testkit::peers::PeerServer;
use testkit::{call, eventually, fast_options, next_ready, wait_for};

const MODERN: &str = "2026-07-28";

pub(crate) fn ts_v2() -> (PeerServer, ServerSpec) {
    let server = PeerServer::ts_v2();
    let spec = ServerSpec::http("ts", mcpvisor::HttpSpec::new(server.url.clone()));
    (server, spec)
}

/// A person who accepts every question with `{"confirm": true}`.
struct Confirms;

impl ClientHandler for Confirms {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: true,
            ..Default::default()
        }
    }

    fn elicit(&self, _request: FormRequest) -> HostAnswer<ElicitAnswer> {
        let answer =
            ElicitAnswer::parse(&json!({"action": "accept", "content": {"confirm": true}}))
                .expect("an answer");
        Box::pin(async move { Ok(answer) })
    }
}

pub(crate) async fn start(spec: ServerSpec, versions: Option<Versions>) -> Host {
    let mut options = fast_options();
    if let Some(versions) = versions {
        options.protocol_versions = versions;
    }
    options.client_handler = Some(SharedClientHandler(Arc::new(Confirms)));
    Host::start(vec![spec], options).await.unwrap()
}

/// Ready at 2026-07-28, as the event and the status say.
pub(crate) async fn ready_stateless(
    host: &Host,
    events: &mut (impl futures::Stream<Item = HostEvent> + Unpin),
) {
    let HostEvent::ServerReady { protocol, .. } = next_ready(events).await else {
        unreachable!()
    };
    assert_eq!(protocol.as_deref(), Some(MODERN), "{:?}", host.servers());
    let status = &host.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
}

/// A call past its timeout restarts the connection (the guide's rule), which
/// is reached again at 2026-07-28 and answers.
async fn a_timeout_restarts_it(
    host: &Host,
    events: &mut (impl futures::Stream<Item = HostEvent> + Unpin),
    server: &str,
    sleep: Value,
) {
    let slow = host.call(
        &format!("mcp__{server}__sleep"),
        sleep,
        mcpvisor::CallOptions::default().timeout(Duration::from_millis(300)),
    );
    match slow.await {
        Err(CallError::Timeout { .. }) => {}
        other => panic!("{other:?}"),
    }
    ready_stateless(host, events).await;
    let echoed = call(
        host,
        &format!("mcp__{server}__echo"),
        json!({"message": "back"}),
    )
    .await
    .unwrap();
    assert!(echoed.text().contains("back"), "{}", echoed.text());
}

/// The server's process dies; the connection fails and is restarted; the
/// server comes back on its port (`again`) and is reached at 2026-07-28.
async fn a_crash_is_survived(
    host: &Host,
    events: &mut (impl futures::Stream<Item = HostEvent> + Unpin),
    server: PeerServer,
    name: &str,
    again: impl FnOnce(u16) -> PeerServer,
) -> PeerServer {
    let port = server.port();
    drop(server);
    let down = || {
        matches!(
            host.servers()[0].state,
            ServerState::Restarting { .. } | ServerState::Failed { .. }
        )
    };
    // The next call finds it gone, and the connection ends.
    let _ = call(host, &format!("mcp__{name}__echo"), json!({"message": "x"})).await;
    assert!(
        eventually(Duration::from_secs(20), down).await,
        "{:?}",
        host.servers()
    );
    let server = again(port);
    ready_stateless(host, events).await;
    let echoed = call(
        host,
        &format!("mcp__{name}__echo"),
        json!({"message": "up"}),
    )
    .await
    .unwrap();
    assert!(echoed.text().contains("up"), "{}", echoed.text());
    server
}

/// How many requests of `method` the TypeScript peer logged.
pub(crate) fn posted(server: &PeerServer, method: &str) -> usize {
    logged(server)
        .iter()
        .filter(|r| r["mcp-method"] == method)
        .count()
}

/// The requests the TypeScript peer logged, as JSON objects.
pub(crate) fn logged(server: &PeerServer) -> Vec<Value> {
    server
        .output()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

#[tokio::test]
async fn a_strict_server_is_reached_by_default_and_every_post_says_what_it_is() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    assert_eq!(host.servers()[0].restarts, 0, "reached on the first try");

    let echoed = call(&host, "mcp__ts__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "echo: hi");
    let added = call(&host, "mcp__ts__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(added.text(), "5");
    // The SDK refuses this call (-32020) unless Mcp-Param-Region mirrors the argument.
    let routed = call(
        &host,
        "mcp__ts__in_region",
        json!({"region": "eu-west-1", "query": "q"}),
    )
    .await
    .unwrap();
    assert_eq!(routed.text(), "q in eu-west-1");
    // A value outside the header-safe set goes Base64-encoded, and still matches.
    let routed = call(
        &host,
        "mcp__ts__in_region",
        json!({"region": " Zürich ", "query": "q"}),
    )
    .await
    .unwrap();
    assert_eq!(routed.text(), "q in  Zürich ");

    // The tool with a number-typed x-mcp-header is not offered, and says why.
    let names: Vec<String> = host.tools().iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"mcp__ts__echo".to_string()), "{names:?}");
    assert!(
        !names.contains(&"mcp__ts__bad_header".to_string()),
        "{names:?}"
    );
    let refused = host.routes();
    let refusals = refused.refused("ts").expect("the refusals of ts");
    assert!(
        format!("{refusals:?}").contains("bad_header"),
        "{refusals:?}"
    );
    match call(&host, "mcp__ts__bad_header", json!({"score": 1.5})).await {
        Err(CallError::RouteRefused { reason, .. }) => {
            assert!(reason.contains("x-mcp-header"), "{reason}")
        }
        other => panic!("{other:?}"),
    }

    let requests = logged(&server);
    let methods: Vec<&str> = requests
        .iter()
        .filter_map(|r| r.get("mcp-method").and_then(Value::as_str))
        .collect();
    // Refused once, probed once, never initialized again.
    assert_eq!(requests[0].get("mcp-method"), None, "{requests:?}");
    assert_eq!(methods.first(), Some(&"server/discover"), "{requests:?}");
    assert!(methods.contains(&"tools/list"), "{methods:?}");
    for r in &requests[1..] {
        assert_eq!(r["http"], "POST", "no GET stream, no DELETE: {r}");
        assert_eq!(r["mcp-protocol-version"], MODERN, "{r}");
        assert!(r.get("mcp-session-id").is_none(), "no session: {r}");
    }
    let calls: Vec<&Value> = requests
        .iter()
        .filter(|r| r["mcp-method"] == "tools/call")
        .collect();
    assert_eq!(calls[0]["mcp-name"], "echo", "{calls:?}");
    let regions: Vec<&Value> = calls
        .iter()
        .filter(|r| r["mcp-name"] == "in_region")
        .map(|r| &r["mcp-param-region"])
        .collect();
    assert_eq!(
        regions,
        [&json!("eu-west-1"), &json!("=?base64?IFrDvHJpY2gg?=")],
        "{calls:?}"
    );

    host.shutdown().await;
    // Shut down: nothing to delete, and nothing is sent.
    assert!(
        !logged(&server).iter().any(|r| r["http"] == "DELETE"),
        "{}",
        server.output()
    );
}

#[tokio::test]
async fn first_in_the_list_it_is_probed_for_with_no_initialize() {
    let (server, spec) = ts_v2();
    let versions = Versions::parse(&[MODERN, "2025-11-25"]).unwrap();
    let host = start(spec, Some(versions)).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let requests = logged(&server);
    assert_eq!(requests[0]["mcp-method"], "server/discover", "{requests:?}");
    assert!(
        requests.iter().all(|r| r.get("mcp-method").is_some()),
        "no initialize: {requests:?}"
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_question_the_server_asks_is_answered_by_the_host_and_the_call_goes_on() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let done = call(&host, "mcp__ts__confirm_delete", json!({"path": "/tmp/x"}))
        .await
        .unwrap();
    assert_eq!(done.text(), "deleted /tmp/x");
    let rounds = logged(&server)
        .into_iter()
        .filter(|r| r["mcp-name"] == "confirm_delete")
        .count();
    assert_eq!(rounds, 2, "asked, then sent again: {}", server.output());
    host.shutdown().await;
}

#[tokio::test]
async fn a_request_that_times_out_restarts_the_connection_which_is_reached_again() {
    let (server, spec) = ts_v2();
    let mut options = fast_options();
    options.request_timeout = Duration::from_millis(500);
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    match call(&host, "mcp__ts__sleep", json!({"ms": 5000})).await {
        Err(CallError::Timeout { .. }) => {}
        other => panic!("{other:?}"),
    }
    ready_stateless(&host, &mut events).await;
    let echoed = call(&host, "mcp__ts__echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "echo: back");
    let probes = posted(&server, "server/discover");
    assert_eq!(probes, 2, "discovered again after the restart");
    // Over HTTP a request is cancelled by closing its stream: no notice is posted.
    assert!(
        !logged(&server)
            .iter()
            .any(|r| r["mcp-method"] == "notifications/cancelled"),
        "{}",
        server.output()
    );
    host.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_call_closes_its_stream_and_posts_nothing() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let pending = host.call(
        "mcp__ts__sleep",
        json!({"ms": 3000}),
        mcpvisor::CallOptions::default(),
    );
    let canceller = pending.canceller();
    let seen = || logged(&server).iter().any(|r| r["mcp-name"] == "sleep");
    assert!(eventually(Duration::from_secs(10), seen).await);
    canceller.cancel();
    assert!(matches!(pending.await, Err(CallError::Cancelled)));
    // The connection goes on.
    let echoed = call(&host, "mcp__ts__echo", json!({"message": "still"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "echo: still");
    assert!(
        !logged(&server)
            .iter()
            .any(|r| r["mcp-method"] == "notifications/cancelled"),
        "{}",
        server.output()
    );
    assert_eq!(host.servers()[0].restarts, 0);
    host.shutdown().await;
}

#[tokio::test]
async fn the_python_sdk_over_http_at_2026_07_28_alone() {
    let server = PeerServer::python(true);
    let spec = ServerSpec::http("py", mcpvisor::HttpSpec::new(server.url.clone()));
    python_at_2026(spec.clone()).await;
    // Its sessions' server dies and comes back: reached again, statelessly.
    let host = start(spec, Some(Versions::parse(&[MODERN]).unwrap())).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let _server = a_crash_is_survived(&host, &mut events, server, "py", |port| {
        PeerServer::python_at(true, port)
    })
    .await;
    host.shutdown().await;
}

#[tokio::test]
async fn the_python_sdk_in_its_stateless_http_mode() {
    let server = PeerServer::python_stateless();
    let spec = ServerSpec::http("py", mcpvisor::HttpSpec::new(server.url.clone()));
    python_at_2026(spec.clone()).await;
    // A crash of the server: reached again when it is back.
    let host = start(spec, Some(Versions::parse(&[MODERN]).unwrap())).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let server = a_crash_is_survived(
        &host,
        &mut events,
        server,
        "py",
        PeerServer::python_stateless_at,
    )
    .await;
    host.shutdown().await;
    // And by default: initialize at 2025-03-26, as before, on the same server.
    let host = start(
        ServerSpec::http("py", mcpvisor::HttpSpec::new(server.url.clone())),
        None,
    )
    .await;
    let mut events = Box::pin(host.events());
    let HostEvent::ServerReady { protocol, .. } = next_ready(&mut events).await else {
        unreachable!()
    };
    assert_eq!(protocol.as_deref(), Some("2025-03-26"));
    let echoed = call(&host, "mcp__py__echo", json!({"message": "old"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("old"), "{}", echoed.text());
    host.shutdown().await;
}

/// The Python SDK server at `spec`, reached at 2026-07-28 alone: calls, a
/// list change on its listen stream, a round of questions.
async fn python_at_2026(spec: ServerSpec) {
    let versions = Versions::parse(&[MODERN]).unwrap();
    let host = start(spec, Some(versions)).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let echoed = call(&host, "mcp__py__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("hi"), "{}", echoed.text());
    let added = call(&host, "mcp__py__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert!(added.text().contains("42"), "{}", added.text());
    // A list change on its subscriptions/listen stream.
    call(&host, "mcp__py__announce", json!({})).await.unwrap();
    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
    // A question (input_required) answered by the host; the state comes back as sent.
    let done = call(&host, "mcp__py__confirm_round", json!({"path": "/tmp/y"}))
        .await
        .unwrap();
    assert_eq!(done.text(), "deleted /tmp/y");
    a_timeout_restarts_it(&host, &mut events, "py", json!({"ms": 5000})).await;
    host.shutdown().await;
}

#[tokio::test]
async fn the_sdk_default_mode_serves_both_eras() {
    let server = PeerServer::ts_v2_default();
    let spec = || ServerSpec::http("ts", mcpvisor::HttpSpec::new(server.url.clone()));
    // By default: initialize at 2025-03-26, which this mode still serves.
    let host = start(spec(), None).await;
    let mut events = Box::pin(host.events());
    let HostEvent::ServerReady { protocol, .. } = next_ready(&mut events).await else {
        unreachable!()
    };
    assert_eq!(protocol.as_deref(), Some("2025-03-26"));
    let echoed = call(&host, "mcp__ts__echo", json!({"message": "old"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "echo: old");
    host.shutdown().await;
    // 2026-07-28 first: probed for and used, with its question rounds.
    let versions = Versions::parse(&[MODERN, "2025-03-26"]).unwrap();
    let host = start(spec(), Some(versions)).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let done = call(&host, "mcp__ts__confirm_delete", json!({"path": "/tmp/d"}))
        .await
        .unwrap();
    assert_eq!(done.text(), "deleted /tmp/d");
    call(&host, "mcp__ts__announce", json!({})).await.unwrap();
    wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;
    a_timeout_restarts_it(&host, &mut events, "ts", json!({"ms": 5000})).await;
    let _server = a_crash_is_survived(&host, &mut events, server, "ts", |port| {
        PeerServer::ts_v2_at(port, "stateless")
    })
    .await;
    host.shutdown().await;
}

#[tokio::test]
async fn a_strict_server_that_dies_is_reached_again() {
    let (server, spec) = ts_v2();
    let host = start(spec, None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let _server = a_crash_is_survived(&host, &mut events, server, "ts", |port| {
        PeerServer::ts_v2_at(port, "reject")
    })
    .await;
    host.shutdown().await;
}

/// A person slow to answer.
struct Slow;

impl ClientHandler for Slow {
    fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: true,
            ..Default::default()
        }
    }

    fn elicit(&self, _request: FormRequest) -> HostAnswer<ElicitAnswer> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            Ok(
                ElicitAnswer::parse(&json!({"action": "accept", "content": {"confirm": true}}))
                    .expect("an answer"),
            )
        })
    }
}

#[tokio::test]
async fn the_rounds_of_a_call_share_its_deadline_and_a_late_answer_is_not_sent() {
    let (server, spec) = ts_v2();
    let mut options = fast_options();
    options.client_handler = Some(SharedClientHandler(Arc::new(Slow)));
    let host = Host::start(vec![spec], options).await.unwrap();
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let asked = host.call(
        "mcp__ts__confirm_delete",
        json!({"path": "/tmp/late"}),
        mcpvisor::CallOptions::default().timeout(Duration::from_millis(500)),
    );
    match asked.await {
        // The call's own timeout, though the host was still answering.
        Err(CallError::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(500)),
        other => panic!("{other:?}"),
    }
    // Wait past the host's answer: the round it would have made is not sent,
    // and the connection was not restarted for it.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let rounds = logged(&server)
        .into_iter()
        .filter(|r| r["mcp-name"] == "confirm_delete")
        .count();
    assert_eq!(rounds, 1, "{}", server.output());
    assert_eq!(host.servers()[0].restarts, 0);
    let echoed = call(&host, "mcp__ts__echo", json!({"message": "on"}))
        .await
        .unwrap();
    assert_eq!(echoed.text(), "echo: on");
    host.shutdown().await;
}
