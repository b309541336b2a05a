//! The hooks a cluster drives a host through: naming it as a node, routing
//! what the other nodes advertise, withdrawing a node it lost, relaying what
//! happened to them. They are not the embedder's: `mcpvisor` does not
//! re-export them, and only the cluster crate takes a [`NodeLink`].

use std::sync::Arc;

use super::Host;
use crate::events::HostEvent;
use crate::messages::SupervisorMsg;
use crate::remote::NodeServers;

/// A host as the cluster it joined sees it.
pub struct NodeLink<'a>(&'a Host);

/// The cluster's hooks on `host`.
pub fn node_link(host: &Host) -> NodeLink<'_> {
    NodeLink(host)
}

impl NodeLink<'_> {
    /// Names this host as a node of a cluster. Called once, by the cluster it
    /// joins, before any [`NodeLink::set_node_servers`]; false when it already has
    /// a name.
    pub fn name_node(&self, name: &str) -> bool {
        self.0.0.nodes.name_local(Arc::from(name))
    }

    /// Routes what another node of the cluster advertises, replacing what it
    /// advertised before. Its tools are called like this host's own; a server
    /// name that this host or a third node also supervises is routed on
    /// neither, with a [`HostEvent::RouteConflict`] naming the nodes.
    pub fn set_node_servers(&self, servers: NodeServers) {
        self.0.0.nodes.set(servers);
        let _ = self.0.0.supervisor.cast(SupervisorMsg::NodesChanged);
    }

    /// Withdraws every route to `node` (lost, or gone from the cluster).
    /// Calls already on their way there are the cluster's to fail.
    pub fn forget_node(&self, node: &str) {
        if self.0.0.nodes.remove(node) {
            let _ = self.0.0.supervisor.cast(SupervisorMsg::NodesChanged);
        }
    }

    /// Tells this host's subscribers what happened to other nodes of its
    /// cluster. Only [`HostEvent::NodeJoined`], [`HostEvent::NodeLost`] and
    /// [`HostEvent::Remote`] are taken (a cluster relays them); for any other
    /// event this returns false and emits nothing.
    pub fn announce(&self, event: HostEvent) -> bool {
        let about_nodes = matches!(
            event,
            HostEvent::NodeJoined { .. } | HostEvent::NodeLost { .. } | HostEvent::Remote { .. }
        );
        if about_nodes {
            self.0.0.bus.emit(event);
        }
        about_nodes
    }
}
