//! What ractor_cluster says of its sessions, for the log: a
//! session that closes before it authenticated is a node refused (a wrong
//! cookie, or not a node of this cluster at all).

use std::collections::HashSet;

use parking_lot::Mutex;
use ractor::{ActorId, ActorRef};
use ractor_cluster::node::{
    NodeEventSubscription, NodeServerMessage, NodeServerSessionInformation,
};

struct Sessions {
    /// Sessions that authenticated, by their actor.
    authenticated: Mutex<HashSet<ActorId>>,
}

impl NodeEventSubscription for Sessions {
    fn node_session_opened(&self, session: NodeServerSessionInformation) {
        tracing::debug!(peer = %session.peer_addr, "cluster session opened");
    }

    fn node_session_disconnected(&self, session: NodeServerSessionInformation) {
        let was_authenticated = self.authenticated.lock().remove(&session.actor.get_id());
        if !was_authenticated {
            tracing::warn!(
                peer = %session.peer_addr,
                "cluster session refused: it closed before authenticating (a wrong cookie, or not a node of this cluster)"
            );
            return;
        }
        // The agent learns of it from the node's group (its agent's cell
        // leaving), which tells one session of a node from another.
        let name = session.peer_name.map(|p| p.name).unwrap_or_default();
        tracing::info!(peer = %session.peer_addr, node = %name, "cluster session closed");
    }

    fn node_session_authenticated(&self, session: NodeServerSessionInformation) {
        self.authenticated.lock().insert(session.actor.get_id());
        let name = session.peer_name.map(|p| p.name).unwrap_or_default();
        tracing::info!(peer = %session.peer_addr, node = %name, "cluster session authenticated");
    }
}

/// Logs the node server's session events.
pub(crate) fn watch(node_server: &ActorRef<NodeServerMessage>) {
    let _ = node_server.cast(NodeServerMessage::SubscribeToEvents {
        id: "mcpvisor-sessions".into(),
        subscription: Box::new(Sessions {
            authenticated: Mutex::new(HashSet::new()),
        }),
    });
}
