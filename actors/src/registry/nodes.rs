//! Routes to servers on other nodes, and server names more than one node claims.
//!
//! A server's name is unique cluster-wide: a name two nodes claim is routed on
//! neither, and each node reports the conflict naming the nodes. Every node
//! decides the same way from the same claims (each node claims every server
//! it supervises, up or down), so no node keeps a route another withholds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::events::{EventBus, HostEvent};
use crate::nodes::NodeBoard;
use crate::routes::{Route, RouteRun, Via};
use crate::status::{ServerId, StatusBoard};

/// One remote server's routes, built once per advertisement.
pub(super) struct RemoteRoutes {
    pub(super) server: Arc<str>,
    /// Sorted by name, as a local server's.
    pub(super) routes: RouteRun,
}

/// Every other node's servers and their routes. A tool a node advertises
/// under another server's name is left out and reported: a node's routes
/// are its own servers' and nothing else.
pub(super) fn remote_routes(board: &NodeBoard, bus: &EventBus) -> Vec<RemoteRoutes> {
    let mut all = Vec::new();
    for node in board.snapshot() {
        for server in &node.servers {
            let mut routes: Vec<(Arc<str>, Arc<Route>)> = Vec::with_capacity(server.tools.len());
            for tool in &server.tools {
                if tool.name.server() != &*server.name {
                    tracing::warn!(node = %node.node, server = %server.name, tool = %tool.name, "remote route refused: another server's name");
                    bus.emit(HostEvent::RouteRejected {
                        server: server.name.clone(),
                        tool: tool.name.to_string(),
                        reason: format!(
                            "node `{}` advertised it under server `{}`",
                            node.node, server.name
                        ),
                    });
                    continue;
                }
                let route = Route {
                    definition: tool.clone(),
                    // Ids are per node; a remote server's is not this host's to give.
                    server_id: ServerId(0),
                    server: server.name.clone(),
                    node: Some(node.node.clone()),
                    via: Via::Node(node.calls.clone()),
                };
                routes.push((Arc::from(tool.name.as_str()), Arc::new(route)));
            }
            routes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            all.push(RemoteRoutes {
                server: server.name.clone(),
                routes: routes.into(),
            });
        }
    }
    all
}

/// Each remote server's route names, to tell which changed.
pub(super) fn names_by_server(remote: &[RemoteRoutes]) -> BTreeMap<Arc<str>, Vec<Arc<str>>> {
    remote
        .iter()
        .map(|r| {
            let mut names: Vec<Arc<str>> = r.routes.iter().map(|(key, _)| key.clone()).collect();
            names.sort();
            (r.server.clone(), names)
        })
        .collect()
}

/// Each server name more than one node claims, with the claiming nodes in
/// order. This node claims every server it supervises; a node that has not
/// joined a cluster claims nothing against anyone.
pub(super) fn contested(
    board: &NodeBoard,
    status: &StatusBoard,
) -> HashMap<Arc<str>, Vec<Arc<str>>> {
    let Some(local) = board.local() else {
        return HashMap::new();
    };
    if board.is_empty() {
        return HashMap::new();
    }
    let mut claims: HashMap<Arc<str>, Vec<Arc<str>>> = HashMap::new();
    for name in status.names() {
        let nodes = claims.entry(name).or_default();
        if !nodes.contains(local) {
            nodes.push(local.clone());
        }
    }
    for node in board.snapshot() {
        for server in &node.servers {
            let nodes = claims.entry(server.name.clone()).or_default();
            if !nodes.contains(&node.node) {
                nodes.push(node.node.clone());
            }
        }
    }
    claims.retain(|_, nodes| nodes.len() > 1);
    for nodes in claims.values_mut() {
        nodes.sort();
    }
    claims
}
