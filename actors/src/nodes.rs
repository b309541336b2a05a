//! The other nodes of a cluster as this host knows them: what each one
//! advertises and how calls reach it.
//!
//! The cluster writes it (through the host), the registry reads it when it
//! builds routes, and a registry started after another died reads it again,
//! so routes to other nodes survive a registry restart as local ones do.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use crate::remote::NodeServers;

/// What every other node advertises, and this node's own name once it joined.
#[derive(Default)]
pub(crate) struct NodeBoard {
    local: OnceLock<Arc<str>>,
    nodes: RwLock<BTreeMap<Arc<str>, Arc<NodeServers>>>,
}

impl NodeBoard {
    /// Names this node; a host joins one cluster once, so the first name stays.
    pub(crate) fn name_local(&self, name: Arc<str>) -> bool {
        self.local.set(name).is_ok()
    }

    /// This node's name, once it joined a cluster.
    pub(crate) fn local(&self) -> Option<&Arc<str>> {
        self.local.get()
    }

    /// Replaces what `servers.node` advertises.
    pub(crate) fn set(&self, servers: NodeServers) {
        self.nodes
            .write()
            .insert(servers.node.clone(), Arc::new(servers));
    }

    /// Forgets a node; false when it was not known.
    pub(crate) fn remove(&self, node: &str) -> bool {
        self.nodes.write().remove(node).is_some()
    }

    /// Every other node's advertisement, by node name.
    pub(crate) fn snapshot(&self) -> Vec<Arc<NodeServers>> {
        self.nodes.read().values().cloned().collect()
    }

    /// True when no other node is known (a host alone, or not in a cluster).
    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.read().is_empty()
    }
}
