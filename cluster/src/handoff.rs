//! Handing a connection, accepted or dialled by this node and past its TLS
//! handshake, to ractor_cluster, which authenticates it with the cookie and
//! runs the session: its reads go through the gate (see `gate`).

use std::sync::Arc;

use ractor::ActorRef;
use ractor_cluster::node::NodeServerMessage;
use ractor_cluster::{BoxRead, BoxWrite, ClusterBidiStream};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::connections::Conn;
use crate::gate::Gated;

/// A connection as ractor_cluster takes it.
struct Handed<S> {
    stream: S,
    conn: Arc<Conn>,
    deadline: Instant,
}

impl<S> ClusterBidiStream for Handed<S>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    fn split(self: Box<Self>) -> (BoxRead, BoxWrite) {
        let (read, write) = tokio::io::split(self.stream);
        (
            Box::new(Gated::new(read, self.conn, self.deadline)),
            Box::new(write),
        )
    }

    fn peer_label(&self) -> Option<String> {
        Some(self.conn.label.clone())
    }
}

/// Hands `stream` to `node_server`: `inbound` when this node accepted it.
/// It must authenticate before `deadline`.
pub(crate) fn hand_over<S>(
    node_server: &ActorRef<NodeServerMessage>,
    stream: S,
    conn: Arc<Conn>,
    deadline: Instant,
    inbound: bool,
) -> bool
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    node_server
        .cast(NodeServerMessage::ConnectionOpenedExternal {
            stream: Box::new(Handed {
                stream,
                conn,
                deadline,
            }),
            is_server: inbound,
        })
        .is_ok()
}
