//! rmcp 3.11 as a server at MCP 2026-07-28 (the echo server the harness
//! measures, over stdio and Streamable HTTP): mcpvisor reaches it with no
//! handshake when the settings name that revision alone, calls it, and after
//! a crash reaches it again at the same revision; by default it initializes
//! at 2025-03-26 as before. And rmcp's tasks extension (its own task runtime):
//! a call the server runs as a task is followed to its result, its question
//! answered by the host, its cancellation and deadline sent as `tasks/cancel`.

use std::time::Duration;

use mcpvisor::{CallOptions, Host, HostEvent, ServerState, SupervisorOptions, Versions};
use mcpvisor_bench::clients::mcpvisor::spec;
use mcpvisor_bench::servers::ServerTarget;
use mcpvisor_bench::servers::http::HttpServer;
use serde_json::json;

fn harness() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_harness"))
}

async fn host(target: &ServerTarget, versions: Option<&[&str]>) -> Host {
    let mut options = SupervisorOptions::default();
    options.startup_timeout = Duration::from_secs(20);
    if let Some(versions) = versions {
        options.protocol_versions = Versions::parse(versions).unwrap();
    }
    Host::start(vec![spec("rmcp", target)], options)
        .await
        .unwrap()
}

/// Waits for the server to be ready and says at which revision.
async fn ready_at(host: &Host) -> String {
    let statuses = host.wait_ready(Duration::from_secs(20)).await;
    assert_eq!(statuses[0].state, ServerState::Ready, "{statuses:?}");
    statuses[0]
        .initialize
        .as_ref()
        .map(|i| i.protocol_version.clone())
        .unwrap_or_default()
}

async fn echo(host: &Host, text: &str) -> String {
    host.call(
        "mcp__rmcp__echo",
        json!({"text": text}),
        CallOptions::default(),
    )
    .await
    .unwrap()
    .text()
}

#[tokio::test]
async fn over_stdio_it_is_reached_at_2026_07_28_and_again_after_a_crash() {
    let target = ServerTarget::rmcp_echo(&harness());
    let host = host(&target, Some(&["2026-07-28"])).await;
    assert_eq!(ready_at(&host).await, "2026-07-28");
    assert!(echo(&host, "hi").await.contains("hi"));

    let mut events = Box::pin(host.events_from_now());
    let pid = host.servers()[0].pid.unwrap();
    nix_kill(pid);
    loop {
        use futures::StreamExt;
        match tokio::time::timeout(Duration::from_secs(20), events.next()).await {
            Ok(Some(HostEvent::ServerReady { protocol, .. })) => {
                assert_eq!(protocol.as_deref(), Some("2026-07-28"));
                break;
            }
            Ok(Some(_)) => {}
            other => panic!("no restart: {other:?}"),
        }
    }
    assert_ne!(host.servers()[0].pid, Some(pid));
    assert!(echo(&host, "again").await.contains("again"));
    host.shutdown().await;
}

#[tokio::test]
async fn over_http_it_is_reached_at_2026_07_28_and_by_default_initialized() {
    let server = HttpServer::rmcp(&harness(), false).unwrap();
    let target = ServerTarget::rmcp_http(server.url.clone());
    let host = host(&target, Some(&["2026-07-28"])).await;
    assert_eq!(ready_at(&host).await, "2026-07-28");
    assert!(echo(&host, "modern").await.contains("modern"));
    host.shutdown().await;

    let host = host_default(&target).await;
    assert_eq!(ready_at(&host).await, "2025-03-26");
    assert!(echo(&host, "dated").await.contains("dated"));
    host.shutdown().await;
}

async fn host_default(target: &ServerTarget) -> Host {
    host(target, None).await
}

fn nix_kill(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A person whose name is Ada, and who confirms.
struct Ada;

impl mcpvisor::ClientHandler for Ada {
    fn capabilities(&self) -> mcpvisor::ClientCapabilities {
        mcpvisor::ClientCapabilities {
            elicitation: true,
            ..Default::default()
        }
    }

    fn elicit(
        &self,
        request: mcpvisor::FormRequest,
    ) -> mcpvisor::HostAnswer<mcpvisor::ElicitAnswer> {
        // Each form as it asks: a name, or a confirmation.
        let confirm = request
            .params()
            .pointer("/requestedSchema/properties/confirm")
            .is_some();
        let content = match confirm {
            true => json!({"confirm": true}),
            false => json!({"name": "Ada"}),
        };
        let answer =
            mcpvisor::ElicitAnswer::parse(&json!({"action": "accept", "content": content}))
                .expect("an answer");
        Box::pin(async move { Ok(answer) })
    }
}

async fn tasks_host() -> Host {
    let target = ServerTarget {
        key: "rmcp-tasks",
        label: "rmcp tasks server (stdio)",
        endpoint: mcpvisor_bench::servers::Endpoint::Stdio {
            command: harness().to_string_lossy().into_owned(),
            args: vec![mcpvisor_bench::servers::rmcp_tasks::RMCP_TASKS_ARG.into()],
        },
        tool: "slow_echo",
        argument: "text",
        stateless: true,
    };
    let mut options = SupervisorOptions::default();
    options.protocol_versions = Versions::parse(&["2026-07-28"]).unwrap();
    options.client_handler = Some(mcpvisor::SharedClientHandler(std::sync::Arc::new(Ada)));
    let host = Host::start(vec![spec("rmcp", &target)], options)
        .await
        .unwrap();
    assert_eq!(ready_at(&host).await, "2026-07-28");
    host
}

#[tokio::test]
async fn a_call_the_server_runs_as_a_task_is_followed_to_its_result() {
    let host = tasks_host().await;
    let done = host
        .call(
            "mcp__rmcp__slow_echo",
            json!({"text": "later", "ms": 300}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.text(), "later");
    // Its question goes to the host's handler, its answer back with tasks/update.
    let greeted = host
        .call("mcp__rmcp__ask_name", json!({}), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(greeted.text(), "hello Ada");
    host.shutdown().await;
}

#[tokio::test]
async fn a_task_past_its_deadline_or_cancelled_ends_alone() {
    let host = tasks_host().await;
    let slow = host.call(
        "mcp__rmcp__slow_echo",
        json!({"text": "never", "ms": 10000}),
        CallOptions::default().timeout(Duration::from_millis(500)),
    );
    match slow.await {
        Err(mcpvisor::CallError::Timeout { after, .. }) => {
            assert_eq!(after, Duration::from_millis(500))
        }
        other => panic!("{other:?}"),
    }
    let pending = host.call(
        "mcp__rmcp__slow_echo",
        json!({"text": "never", "ms": 10000}),
        CallOptions::default(),
    );
    let canceller = pending.canceller();
    tokio::time::sleep(Duration::from_millis(200)).await;
    canceller.cancel();
    assert!(matches!(pending.await, Err(mcpvisor::CallError::Cancelled)));
    // The connection went on through both: no restart.
    assert_eq!(host.servers()[0].restarts, 0);
    let done = host
        .call(
            "mcp__rmcp__slow_echo",
            json!({"text": "still", "ms": 50}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.text(), "still");
    host.shutdown().await;
}

#[tokio::test]
async fn its_questions_list_changes_and_timeouts_at_2026_07_28() {
    let host = tasks_host().await;
    let mut events = Box::pin(host.events_from_now());
    // A round of questions (input_required), answered by the host.
    let done = host
        .call("mcp__rmcp__confirm", json!({}), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(done.text(), "confirmed");
    // A list change on subscriptions/listen.
    host.call("mcp__rmcp__grow", json!({}), CallOptions::default())
        .await
        .unwrap();
    let has = || {
        host.tools()
            .iter()
            .any(|t| t.name.to_string() == "mcp__rmcp__grown")
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !has() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(has(), "no list change came");
    // A plain call past its timeout restarts the connection, reached again.
    let pid = host.servers()[0].pid;
    let slow = host.call(
        "mcp__rmcp__sleep",
        json!({"ms": 5000}),
        CallOptions::default().timeout(Duration::from_millis(300)),
    );
    assert!(matches!(
        slow.await,
        Err(mcpvisor::CallError::Timeout { .. })
    ));
    loop {
        use futures::StreamExt;
        match tokio::time::timeout(Duration::from_secs(20), events.next()).await {
            Ok(Some(HostEvent::ServerReady { protocol, .. })) => {
                assert_eq!(protocol.as_deref(), Some("2026-07-28"));
                break;
            }
            Ok(Some(_)) => {}
            other => panic!("no restart: {other:?}"),
        }
    }
    assert_ne!(host.servers()[0].pid, pid);
    let done = host
        .call(
            "mcp__rmcp__slow_echo",
            json!({"text": "after", "ms": 10}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(done.text(), "after");
    host.shutdown().await;
}
