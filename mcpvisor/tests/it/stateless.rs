//! MCP 2026-07-28 over stdio against the Python SDK 2.3.0 server: reached
//! without `initialize` when the settings put it first (a `server/discover`
//! probe), or by default when the server refuses `initialize` as a
//! 2026-07-28-only server does (once, never a restart loop); every request
//! then carries the revision, calls work, and a crash brings it back at the
//! same revision. A list that leaves the revision out fails typed.

use std::time::Duration;

use mcpvisor::{Host, HostEvent, ServerSpec, ServerState, Versions};
use serde_json::json;
use testkit::peers::{Peer, Wire, modern_only_python};
use testkit::{call, eventually, fast_options, next_ready};

const MODERN: &str = "2026-07-28";

async fn start(spec: ServerSpec, versions: Option<Versions>) -> Host {
    let mut options = fast_options();
    if let Some(versions) = versions {
        options.protocol_versions = versions;
    }
    Host::start(vec![spec], options).await.unwrap()
}

/// Ready at 2026-07-28, as the status and the `ServerReady` event say.
async fn ready_stateless(
    host: &Host,
    events: &mut (impl futures::Stream<Item = HostEvent> + Unpin),
) {
    let HostEvent::ServerReady { protocol, .. } = next_ready(events).await else {
        unreachable!()
    };
    assert_eq!(protocol.as_deref(), Some(MODERN));
    let status = &host.servers()[0];
    assert_eq!(status.state, ServerState::Ready, "{status:?}");
    let settled = status
        .initialize
        .as_ref()
        .map(|i| i.protocol_version.clone());
    assert_eq!(settled.as_deref(), Some(MODERN), "{status:?}");
}

#[tokio::test]
async fn first_in_the_list_it_is_probed_for_and_used() {
    let running = Peer::PythonSdk.run(Wire::Stdio);
    let versions = Versions::parse(&[MODERN, "2025-03-26"]).unwrap();
    let host = start(running.spec.clone(), Some(versions)).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    assert!(
        host.tools()
            .iter()
            .any(|t| t.name.to_string() == "mcp__py__echo")
    );
    let echoed = call(&host, "mcp__py__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("hi"), "{}", echoed.text());
    let added = call(&host, "mcp__py__add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(added.text().contains('5'), "{}", added.text());

    // A list change arrives on the subscriptions/listen request in flight.
    call(&host, "mcp__py__announce", json!({})).await.unwrap();
    testkit::wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, HostEvent::ToolsChanged { .. })
    })
    .await;

    // A question (input_required) answered by the host's handler.
    match call(&host, "mcp__py__confirm_round", json!({"path": "/tmp/z"})).await {
        // No handler here: the call fails typed, saying what was asked.
        Err(mcpvisor::CallError::InputUnanswered { key, .. }) => assert_eq!(key, "confirm"),
        other => panic!("{other:?}"),
    }

    // A crash: restarted, probed again, at the same revision.
    let pid = host.servers()[0].pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    ready_stateless(&host, &mut events).await;
    assert_ne!(host.servers()[0].pid, Some(pid));
    let echoed = call(&host, "mcp__py__echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("again"), "{}", echoed.text());
    host.shutdown().await;
}

#[tokio::test]
async fn a_server_that_refuses_initialize_as_a_modern_one_is_reached_once() {
    // No setting: initialize at 2025-03-26, refused, then 2026-07-28.
    let host = start(modern_only_python("py"), None).await;
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    assert_eq!(host.servers()[0].restarts, 0, "reached on the first try");
    let echoed = call(&host, "mcp__py__echo", json!({"message": "modern"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("modern"), "{}", echoed.text());
    host.shutdown().await;
}

#[tokio::test]
async fn a_list_without_it_says_why_a_modern_only_server_is_out_of_reach() {
    let versions = Versions::parse(&["2025-11-25"]).unwrap();
    let host = start(modern_only_python("py"), Some(versions)).await;
    let reason = || match &host.servers()[0].state {
        ServerState::Restarting { reason, .. } | ServerState::Failed { reason, .. } => {
            Some(reason.to_string())
        }
        _ => None,
    };
    assert!(
        eventually(Duration::from_secs(20), || reason().is_some()).await,
        "{:?}",
        host.servers()
    );
    let reason = reason().unwrap();
    assert!(
        reason.contains("2026-07-28") && reason.contains("not in protocol_versions"),
        "{reason}"
    );
    assert_ne!(host.servers()[0].state, ServerState::Ready);
    host.shutdown().await;
}

/// A person who confirms.
struct Confirms;

impl mcpvisor::ClientHandler for Confirms {
    fn capabilities(&self) -> mcpvisor::ClientCapabilities {
        mcpvisor::ClientCapabilities {
            elicitation: true,
            ..Default::default()
        }
    }

    fn elicit(
        &self,
        _request: mcpvisor::FormRequest,
    ) -> mcpvisor::HostAnswer<mcpvisor::ElicitAnswer> {
        let answer = mcpvisor::ElicitAnswer::parse(
            &json!({"action": "accept", "content": {"confirm": true}}),
        )
        .expect("an answer");
        Box::pin(async move { Ok(answer) })
    }
}

#[tokio::test]
async fn over_stdio_a_question_is_answered_and_a_timeout_restarts_it() {
    let running = Peer::PythonSdk.run(Wire::Stdio);
    let mut options = fast_options();
    options.protocol_versions = Versions::parse(&[MODERN]).unwrap();
    options.client_handler = Some(mcpvisor::SharedClientHandler(std::sync::Arc::new(Confirms)));
    let host = Host::start(vec![running.spec.clone()], options)
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    ready_stateless(&host, &mut events).await;
    let done = call(&host, "mcp__py__confirm_round", json!({"path": "/tmp/s"}))
        .await
        .unwrap();
    assert_eq!(done.text(), "deleted /tmp/s");
    let pid = host.servers()[0].pid;
    let slow = host.call(
        "mcp__py__sleep",
        json!({"ms": 5000}),
        mcpvisor::CallOptions::default().timeout(Duration::from_millis(300)),
    );
    assert!(matches!(
        slow.await,
        Err(mcpvisor::CallError::Timeout { .. })
    ));
    // The connection was terminated: a new process, reached again at 2026-07-28.
    ready_stateless(&host, &mut events).await;
    assert_ne!(host.servers()[0].pid, pid);
    let echoed = call(&host, "mcp__py__echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert!(echoed.text().contains("back"), "{}", echoed.text());
    host.shutdown().await;
}
