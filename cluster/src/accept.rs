//! This node's cluster port: mcpvisor accepts the connections itself, so no
//! one connection can stop it accepting others. ractor_cluster would await
//! each TLS handshake inside its accept loop; here each runs in a task of
//! its own, with a deadline, and only connections the admission caps let in
//! (see `connections`) get one. A connection past its handshake is handed
//! to ractor_cluster through the gate (see `handoff`, `gate`).

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::node::NodeServerMessage;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

use crate::connections::Connections;
use crate::handoff::hand_over;
use crate::repeats::{Repeats, warn_repeated};

/// A connection must have authenticated (TLS handshake included) this long
/// after it was accepted, or it is closed.
pub(crate) const PREAUTH_DEADLINE: Duration = Duration::from_secs(5);

/// What the accept loop needs.
pub(crate) struct Acceptor {
    pub(crate) listener: TcpListener,
    pub(crate) node_server: ActorRef<NodeServerMessage>,
    pub(crate) tls: Option<TlsAcceptor>,
    pub(crate) connections: Arc<Connections>,
    pub(crate) repeats: Arc<Repeats>,
}

impl Acceptor {
    /// Accepts connections until the task is aborted (the node leaves).
    pub(crate) fn spawn(self) -> JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                match self.listener.accept().await {
                    Ok((stream, peer)) => self.admit(stream, peer),
                    Err(e) => {
                        // Out of file descriptors, say: wait rather than spin.
                        warn_repeated!(
                            self.repeats,
                            "accept".into(),
                            "cluster port cannot accept a connection: {e}"
                        );
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        })
    }

    fn admit(&self, stream: TcpStream, peer: std::net::SocketAddr) {
        let Some(ticket) = self.connections.admit(peer.ip()) else {
            warn_repeated!(
                self.repeats,
                format!("full {}", peer.ip()),
                peer = %peer.ip(),
                "cluster connection refused: too many connections from it (or in all) have not authenticated yet"
            );
            return;
        };
        let _ = stream.set_nodelay(true);
        let deadline = Instant::now() + PREAUTH_DEADLINE;
        let node_server = self.node_server.clone();
        let connections = self.connections.clone();
        let tls = self.tls.clone();
        let repeats = self.repeats.clone();
        tokio::spawn(async move {
            match tls {
                None => {
                    let conn = connections.register(peer, None, Some(ticket));
                    hand_over(&node_server, stream, conn, deadline, true);
                }
                Some(tls) => match tokio::time::timeout_at(deadline, tls.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let certificate = stream
                            .get_ref()
                            .1
                            .peer_certificates()
                            .and_then(|chain| chain.first())
                            .map(|c| c.clone().into_owned());
                        let conn = connections.register(peer, certificate, Some(ticket));
                        hand_over(&node_server, stream, conn, deadline, true);
                    }
                    Ok(Err(e)) => {
                        warn_repeated!(repeats, format!("tls {}", peer.ip()), peer = %peer.ip(), "cluster connection refused: TLS handshake failed: {e}");
                    }
                    Err(_) => {
                        warn_repeated!(repeats, format!("tls {}", peer.ip()), peer = %peer.ip(), "cluster connection closed: no TLS handshake within {} s", PREAUTH_DEADLINE.as_secs());
                    }
                },
            }
        });
    }
}
