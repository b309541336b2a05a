//! What ractor_cluster says of its sessions: each is tied to the connection
//! this node handed it (see `connections`), the gate opens when it
//! authenticates, and, under TLS, a session whose certificate does not name
//! the node it authenticated as is ended there. A session that closes
//! before it authenticated is a node refused (a wrong cookie, or not a node
//! of this cluster at all): logged, at most once a window per address.

use std::sync::Arc;

use ractor::ActorRef;
use ractor_cluster::node::{
    NodeEventSubscription, NodeServerMessage, NodeServerSessionInformation,
};

use crate::connections::Connections;
use crate::repeats::{Repeats, warn_repeated};

struct Sessions {
    connections: Arc<Connections>,
    repeats: Arc<Repeats>,
    tls: bool,
}

/// The node name in ractor_cluster's `NAME@HOST`.
fn node_name(session: &NodeServerSessionInformation) -> Option<&str> {
    let full = &session.peer_name.as_ref()?.name;
    Some(full.split_once('@').map_or(full.as_str(), |(name, _)| name))
}

impl NodeEventSubscription for Sessions {
    fn node_session_opened(&self, session: NodeServerSessionInformation) {
        let conn = self.connections.opened(&session.peer_addr, session.node_id);
        let peer = conn.map(|c| c.peer.to_string()).unwrap_or_default();
        tracing::debug!(%peer, "cluster session opened");
    }

    fn node_session_disconnected(&self, session: NodeServerSessionInformation) {
        let Some(conn) = self.connections.closed(session.node_id) else {
            return;
        };
        if !conn.authenticated() {
            warn_repeated!(
                self.repeats,
                format!("refused {}", conn.peer.ip()),
                peer = %conn.peer,
                "cluster session refused: it closed before authenticating (a wrong cookie, or not a node of this cluster)"
            );
            return;
        }
        // The agent learns of it from the node's group (its agent's cell
        // leaving), which tells one session of a node from another.
        let node = conn.node().unwrap_or_else(|| Arc::from(""));
        tracing::info!(peer = %conn.peer, %node, "cluster session closed");
    }

    fn node_session_authenticated(&self, session: NodeServerSessionInformation) {
        let Some(conn) = self.connections.session(session.node_id) else {
            return;
        };
        let Some(name) = node_name(&session) else {
            session.actor.stop(Some("no node name".into()));
            return;
        };
        if self.tls {
            let named = conn
                .certificate
                .as_ref()
                .is_some_and(|c| crate::tls::names_node(c, name));
            if !named {
                warn_repeated!(
                    self.repeats,
                    format!("certificate {}", conn.peer.ip()),
                    peer = %conn.peer,
                    node = %name,
                    "cluster session refused: its certificate does not name the node it says it is"
                );
                session
                    .actor
                    .stop(Some("certificate does not name the node".into()));
                return;
            }
        }
        conn.authenticate(Arc::from(name));
        tracing::info!(peer = %conn.peer, node = %name, "cluster session authenticated");
    }
}

/// Ties the node server's sessions to `connections` (see the module).
pub(crate) fn watch(
    node_server: &ActorRef<NodeServerMessage>,
    connections: Arc<Connections>,
    repeats: Arc<Repeats>,
    tls: bool,
) {
    let _ = node_server.cast(NodeServerMessage::SubscribeToEvents {
        id: "mcpvisor-sessions".into(),
        subscription: Box::new(Sessions {
            connections,
            repeats,
            tls,
        }),
    });
}
