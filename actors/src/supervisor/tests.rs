//! Supervision of the registry: a registry that dies is started again, the
//! routes stay callable throughout, and servers report to the new one.
//! Runs the Python SDK's server from the project's pinned peers.

use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use mcpvisor_transports::StdioSpec;
use serde_json::json;

use crate::events::HostEvent;
use crate::host::Host;
use crate::options::{CallOptions, ServerSpec, SupervisorOptions};
use crate::registry_msg::RegistryMsg;

fn python_server(name: &str) -> ServerSpec {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testkit/peers");
    let python = peers.join("venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run `bash scripts/peers.sh`",
        python.display()
    );
    let script = peers.join("python_server.py");
    ServerSpec::stdio(
        name,
        StdioSpec::new(
            python.to_string_lossy().into_owned(),
            [script.to_string_lossy().into_owned(), "stdio".into()],
        ),
    )
}

async fn wait_for(
    events: &mut (impl futures::Stream<Item = HostEvent> + Unpin),
    pred: impl Fn(&HostEvent) -> bool,
) -> HostEvent {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let e = events.next().await.expect("events end");
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .expect("no matching event within 30 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_dies_is_restarted_and_routes_keep_working() {
    let host = Host::start(vec![python_server("py")], SupervisorOptions::default())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    wait_for(&mut events, |e| matches!(e, HostEvent::ServerReady { .. })).await;
    let routed = host.tools().len();
    assert!(routed >= 2, "echo and add are routed");

    let registry = host
        .supervisor_for_tests()
        .get_children()
        .into_iter()
        .find(|c| c.is_message_type_of::<RegistryMsg>() == Some(true))
        .expect("the registry is a child of the supervisor");
    registry.kill();

    wait_for(&mut events, |e| {
        matches!(e, HostEvent::RegistryRestarted { .. })
    })
    .await;
    // The server reports to the new registry: its tools are published again.
    wait_for(
        &mut events,
        |e| matches!(e, HostEvent::ToolsChanged { tools, .. } if !tools.is_empty()),
    )
    .await;
    assert_eq!(host.tools().len(), routed);
    let new_registry = host
        .supervisor_for_tests()
        .get_children()
        .into_iter()
        .find(|c| c.is_message_type_of::<RegistryMsg>() == Some(true))
        .expect("a registry runs again");
    assert_ne!(new_registry.get_id(), registry.get_id());

    let r = host
        .call(
            "mcp__py__echo",
            json!({"message": "still routed"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(r.text().contains("still routed"), "{}", r.text());

    // The new registry does its job: a server that crashes and comes back is
    // routed to its new connection (with a dead registry the routes would stay
    // on the old one and every call would fail).
    let pid = host.servers()[0].pid.expect("a stdio server has a pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for(&mut events, |e| matches!(e, HostEvent::ServerReady { .. })).await;
    assert_ne!(host.servers()[0].pid, Some(pid));
    let r = host
        .call(
            "mcp__py__echo",
            json!({"message": "after the crash"}),
            CallOptions::default(),
        )
        .await
        .unwrap();
    assert!(r.text().contains("after the crash"), "{}", r.text());
    host.shutdown().await;
    assert!(host.tools().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transport_that_dies_is_the_reason_given_not_stopped() {
    let host = Host::start(vec![python_server("py")], SupervisorOptions::default())
        .await
        .unwrap();
    let mut events = Box::pin(host.events());
    wait_for(&mut events, |e| matches!(e, HostEvent::ServerReady { .. })).await;
    let server = host
        .supervisor_for_tests()
        .get_children()
        .into_iter()
        .find(|c| c.is_message_type_of::<crate::messages::ServerMsg>() == Some(true))
        .expect("the server actor");
    let transport = server
        .get_children()
        .into_iter()
        .next()
        .expect("the transport actor");
    transport.kill();
    let down = wait_for(&mut events, |e| {
        matches!(e, HostEvent::ServerRestarting { .. })
    })
    .await;
    let HostEvent::ServerRestarting { reason, .. } = down else {
        unreachable!()
    };
    assert!(
        matches!(&*reason, crate::error::ConnectionError::ActorFailed(why) if why.contains("transport")),
        "{reason:?}"
    );
    host.shutdown().await;
}
