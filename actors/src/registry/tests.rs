//! The registry's route building, driven directly: conflicts advertised for
//! neither claimant, invalid names reported, removal, and a restarted registry
//! beginning from what was published, and the pace of publications in a burst.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::mcp::messages::Tool;
use serde_json::json;

use super::{RegistryArgs, RegistryState, ToolsReport, published_servers};
use crate::events::{EventBus, HostEvent};
use crate::lane::test_ports::recorded_lane;
use crate::nodes::NodeBoard;
use crate::remote::{NodeServers, RemoteCall, RemoteCalls, RemoteRequest, RemoteServer};
use crate::routes::RouteSnapshot;
use crate::server_lists::{Offers, ServerLink};
use crate::status::{ServerId, StatusBoard};

fn state() -> (RegistryState, tokio::sync::broadcast::Receiver<HostEvent>) {
    let bus = EventBus::new(64);
    let events = bus.subscribe();
    let args = RegistryArgs {
        routes: Arc::new(RouteSnapshot::default()),
        bus,
        resume: false,
        status: StatusBoard::new(),
        nodes: Arc::new(NodeBoard::default()),
    };
    let state = RegistryState::new(args, BTreeMap::new());
    (state, events)
}

/// A tool named `name` with an object input schema.
fn tool(name: &str) -> Tool {
    Tool {
        name: name.to_string(),
        description: None,
        input_schema: json!({"type": "object"}),
        annotations: None,
        title: None,
        output_schema: None,
        execution: None,
        icons: Vec::new(),
    }
}

async fn report(id: u64, name: &str, tools: &[&str]) -> ToolsReport {
    let (lane, _, _) = recorded_lane(name, 8);
    let link = Arc::new(ServerLink {
        id: ServerId(id),
        name: Arc::from(name),
        lane,
        request_timeout: Duration::from_secs(60),
        offers: Offers::default(),
        lists: Default::default(),
        limits: Default::default(),
        revision: None,
        mirrors_params: false,
    });
    ToolsReport {
        id: ServerId(id),
        name: Arc::from(name),
        link,
        tools: tools.iter().map(|t| tool(t)).collect(),
        rejected: Vec::new(),
        initial: true,
        pid: None,
    }
}

fn drain(events: &mut tokio::sync::broadcast::Receiver<HostEvent>) -> Vec<HostEvent> {
    std::iter::from_fn(|| events.try_recv().ok()).collect()
}

#[tokio::test]
async fn a_name_two_servers_claim_is_advertised_for_neither() {
    let (mut state, mut events) = state();
    state.report(report(1, "a", &["echo", "one"]).await);
    state.report(report(2, "a", &["echo", "two"]).await);
    state.rebuild();
    let routes = state.args.routes.load();
    assert!(
        routes.get("mcp__a__echo").is_none(),
        "ambiguous: advertised for neither"
    );
    assert!(routes.get("mcp__a__one").is_some() && routes.get("mcp__a__two").is_some());
    assert_eq!(state.advertised(ServerId(1)).len(), 1);
    assert_eq!(state.advertised(ServerId(2)).len(), 1);
    let conflicts: Vec<_> = drain(&mut events)
        .into_iter()
        .filter(|e| matches!(e, HostEvent::RouteConflict { .. }))
        .collect();
    assert_eq!(conflicts.len(), 1, "reported once");
    // Reported once, not on every rebuild.
    state.rebuild();
    assert!(
        drain(&mut events)
            .iter()
            .all(|e| !matches!(e, HostEvent::RouteConflict { .. }))
    );
    // One claimant left: the name is routed again.
    state.servers.remove(&ServerId(2));
    state.rebuild();
    assert!(state.args.routes.load().get("mcp__a__echo").is_some());
}

#[tokio::test]
async fn names_that_cannot_be_routes_are_reported_not_advertised() {
    let (mut state, mut events) = state();
    state.report(report(1, "s", &["ok", "bad name!", "has__double"]).await);
    state.rebuild();
    let routes = state.args.routes.load();
    assert_eq!(routes.len(), 1);
    let rejected: Vec<String> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            HostEvent::RouteRejected { tool, .. } => Some(tool),
            _ => None,
        })
        .collect();
    assert_eq!(rejected, ["bad name!", "has__double"]);
}

#[tokio::test]
async fn a_restarted_registry_begins_from_the_published_routes() {
    let (mut state, _events) = state();
    state.report(report(1, "a", &["x", "y"]).await);
    state.report(report(2, "b", &["z"]).await);
    state.rebuild();
    let resumed = published_servers(&state.args.routes.load());
    assert_eq!(resumed.len(), 2);
    assert_eq!(resumed[&ServerId(1)].routes.len(), 2);
    assert_eq!(&*resumed[&ServerId(2)].name, "b");
}

#[tokio::test]
async fn a_publication_waits_for_the_pace_and_is_queued_once() {
    let (mut state, mut events) = state();
    let (registry, mut sent) = crate::test_actors::recorder::<super::RegistryMsg>().await;
    // Nothing published yet: the first publication is queued at once.
    state.report(report(1, "a", &["x"]).await);
    state.publish_soon(&registry);
    let first = tokio::time::timeout(Duration::from_secs(5), sent.recv()).await;
    assert!(matches!(first, Ok(Some(super::RegistryMsg::Publish))));
    state.publishing = false;
    state.publish(&registry);
    assert!(
        drain(&mut events)
            .iter()
            .any(|e| matches!(e, HostEvent::ToolsChanged { server, .. } if &**server == "a")),
        "the report is announced once published"
    );
    // A burst: the last publication was costly, so the next one waits for the pace.
    let pace = Duration::from_millis(400);
    state.next_publication = std::time::Instant::now() + pace;
    state.report(report(2, "b", &["y"]).await);
    state.publish_soon(&registry);
    state.report(report(3, "c", &["z"]).await);
    state.publish_soon(&registry);
    let early = tokio::time::timeout(pace / 2, sent.recv()).await;
    assert!(early.is_err(), "published before the pace allowed");
    let paced = tokio::time::timeout(Duration::from_secs(5), sent.recv()).await;
    assert!(matches!(paced, Ok(Some(super::RegistryMsg::Publish))));
    let again = tokio::time::timeout(Duration::from_millis(200), sent.recv()).await;
    assert!(
        again.is_err(),
        "two reports of one burst queue one publication"
    );
    registry.stop(None);
}

#[tokio::test]
async fn a_removal_is_published_and_announced() {
    let (mut state, mut events) = state();
    let (registry, _sent) = crate::test_actors::recorder::<super::RegistryMsg>().await;
    state.report(report(1, "a", &["x"]).await);
    state.publish(&registry);
    assert!(state.args.routes.load().get("mcp__a__x").is_some());
    drain(&mut events);
    state.servers.remove(&ServerId(1));
    state.removed.push(Arc::from("a"));
    state.publish(&registry);
    assert!(state.args.routes.load().get("mcp__a__x").is_none());
    let gone = drain(&mut events).into_iter().any(|e| {
        matches!(e, HostEvent::ToolsChanged { server, tools } if &*server == "a" && tools.is_empty())
    });
    assert!(gone, "the removal is announced with no tools");
    registry.stop(None);
}

/// Another node's calls, never made here.
#[derive(Debug)]
struct Unreached;

impl RemoteCalls for Unreached {
    fn start(&self, _request: RemoteRequest) -> RemoteCall {
        let (_, answer) = tokio::sync::oneshot::channel();
        RemoteCall {
            answer,
            cancel: Arc::new(|| {}),
        }
    }
}

fn node(name: &str, servers: &[(&str, &[&str])]) -> NodeServers {
    let servers = servers
        .iter()
        .map(|(server, tools)| RemoteServer {
            name: Arc::from(*server),
            state: Arc::from("ready"),
            reason: None,
            tools: tools
                .iter()
                .map(|t| {
                    Arc::new(
                        mcpvisor_protocol::ToolDefinition::from_owned_tool(server, tool(t))
                            .unwrap()
                            .0,
                    )
                })
                .collect(),
        })
        .collect();
    NodeServers {
        node: Arc::from(name),
        servers,
        calls: Arc::new(Unreached),
        http: None,
    }
}

/// A host named node `a` supervising `servers` (their names are its claims).
async fn node_a(
    servers: &[(u64, &str, &[&str])],
) -> (RegistryState, tokio::sync::broadcast::Receiver<HostEvent>) {
    let (mut state, events) = state();
    state.args.nodes.name_local(Arc::from("a"));
    for (id, name, tools) in servers {
        state
            .args
            .status
            .update(ServerId(*id), &Arc::from(*name), |_| {});
        state.report(report(*id, name, tools).await);
    }
    (state, events)
}

fn nodes_changed(state: &mut RegistryState) {
    state.remote = super::nodes::remote_routes(&state.args.nodes, &state.args.bus);
    state.rebuild();
}

#[tokio::test]
async fn another_nodes_servers_are_routed_with_their_node() {
    let (mut state, _events) = node_a(&[(1, "alpha", &["echo"])]).await;
    state
        .args
        .nodes
        .set(node("b", &[("beta", &["echo", "add"])]));
    nodes_changed(&mut state);
    let routes = state.args.routes.load();
    assert_eq!(routes.len(), 3);
    let remote = routes.get("mcp__beta__add").expect("b's tool is routed");
    assert_eq!(remote.node.as_deref(), Some("b"));
    assert!(routes.get("mcp__alpha__echo").unwrap().node.is_none());
    // The node is lost: its routes go, this host's stay.
    state.args.nodes.remove("b");
    nodes_changed(&mut state);
    let routes = state.args.routes.load();
    assert_eq!(routes.len(), 1);
    assert!(routes.get("mcp__alpha__echo").is_some());
}

#[tokio::test]
async fn a_server_name_two_nodes_claim_is_routed_on_neither_and_reported_with_both() {
    let (mut state, mut events) =
        node_a(&[(1, "alpha", &["echo"]), (2, "dup", &["echo", "mine"])]).await;
    state.rebuild();
    assert!(state.args.routes.load().get("mcp__dup__echo").is_some());
    drain(&mut events);
    state
        .args
        .nodes
        .set(node("b", &[("dup", &["echo", "theirs"])]));
    nodes_changed(&mut state);
    let routes = state.args.routes.load();
    for withheld in ["mcp__dup__echo", "mcp__dup__mine", "mcp__dup__theirs"] {
        assert!(routes.get(withheld).is_none(), "{withheld} is routed");
    }
    assert!(routes.get("mcp__alpha__echo").is_some());
    assert!(
        state.advertised(ServerId(2)).is_empty(),
        "this host's dup is withheld too"
    );
    let conflicts: Vec<(String, Vec<Arc<str>>)> = drain(&mut events)
        .into_iter()
        .filter_map(|e| match e {
            HostEvent::RouteConflict { name, nodes, .. } => Some((name.to_string(), nodes)),
            _ => None,
        })
        .collect();
    assert_eq!(conflicts.len(), 3, "one per withheld tool: {conflicts:?}");
    for (_, nodes) in &conflicts {
        assert_eq!(nodes.iter().map(|n| &**n).collect::<Vec<_>>(), ["a", "b"]);
    }
    // Claimed even while down: a server with no routes still claims its name.
    state.servers.remove(&ServerId(2));
    nodes_changed(&mut state);
    assert!(state.args.routes.load().get("mcp__dup__theirs").is_none());
    // b is lost: this host's claim alone is left.
    state.args.nodes.remove("b");
    state.report(report(2, "dup", &["echo", "mine"]).await);
    nodes_changed(&mut state);
    assert!(state.args.routes.load().get("mcp__dup__mine").is_some());
}

#[tokio::test]
async fn a_tool_advertised_under_another_servers_name_is_refused() {
    let (mut state, mut events) = node_a(&[]).await;
    let mut lying = node("b", &[("beta", &["echo"])]);
    let foreign = node("b", &[("alpha", &["steal"])]).servers[0].tools[0].clone();
    lying.servers[0].tools.push(foreign);
    state.args.nodes.set(lying);
    nodes_changed(&mut state);
    let routes = state.args.routes.load();
    assert!(routes.get("mcp__beta__echo").is_some());
    assert!(routes.get("mcp__alpha__steal").is_none());
    assert!(drain(&mut events).iter().any(|e| matches!(
        e,
        HostEvent::RouteRejected { tool, .. } if tool == "mcp__alpha__steal"
    )));
}

fn listed(state: &RegistryState) -> Vec<String> {
    let table = state.args.routes.load();
    let listed: Vec<String> = table
        .sorted()
        .iter()
        .map(|r| r.definition.name.to_string())
        .collect();
    assert_eq!(listed.len(), table.len(), "{listed:?}");
    listed
}

#[tokio::test]
async fn the_table_lists_every_route_in_name_order() {
    // Names whose order differs from their servers' names' order ("a" before
    // "a-" as names, after it as `a__…` against `a-__…`).
    let (mut state, _events) = node_a(&[
        (1, "a", &["zeta", "alpha"]),
        (2, "a-b", &["m"]),
        (3, "a_b", &["x", "b"]),
        (4, "ab", &["q"]),
        (5, "c", &["one", "clash"]),
    ])
    .await;
    state
        .args
        .nodes
        .set(node("b", &[("a-", &["k"]), ("aa", &["j"])]));
    nodes_changed(&mut state);
    let names = listed(&state);
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(names, expected);
    assert_eq!(names.len(), 10);
    // Two connections of one server (one going, one coming), a name both list.
    state.report(report(6, "c", &["two", "clash"]).await);
    state.rebuild();
    let names = listed(&state);
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(names, expected);
    assert!(!names.iter().any(|n| n == "mcp__c__clash"), "{names:?}");
}
