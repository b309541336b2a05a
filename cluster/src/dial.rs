//! Dialling another node: a TCP (or TLS) connection this node makes and
//! hands to its ractor_cluster server, which authenticates it with the
//! cookie. Like an accepted one, it passes the gate (see `gate`).

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::node::NodeServerMessage;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::rustls::pki_types::ServerName;

use crate::accept::PREAUTH_DEADLINE;
use crate::connections::Connections;
use crate::handoff::hand_over;
use crate::tls::Tls;

/// The longest connecting (TCP and TLS) may take before it is given up.
const DIAL_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects to `address` in the background; a failure is logged and tried
/// again later by the agent.
pub(crate) fn dial(
    node_server: ActorRef<NodeServerMessage>,
    connections: Arc<Connections>,
    address: String,
    tls: Option<Tls>,
) {
    tokio::spawn(async move {
        let attempt = async {
            let stream = TcpStream::connect(address.as_str())
                .await
                .map_err(|e| e.to_string())?;
            let _ = stream.set_nodelay(true);
            let peer = stream.peer_addr().map_err(|e| e.to_string())?;
            match &tls {
                None => {
                    let conn = connections.register(peer, None, None);
                    Ok::<_, String>((conn, Box::new(stream) as Box<dyn Stream>))
                }
                Some(tls) => {
                    let host = address
                        .rsplit_once(':')
                        .map(|(host, _)| host.trim_start_matches('[').trim_end_matches(']'))
                        .unwrap_or(&address);
                    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
                    let stream = tls
                        .connector
                        .connect(name, stream)
                        .await
                        .map_err(|e| e.to_string())?;
                    let certificate = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|chain| chain.first())
                        .map(|c| c.clone().into_owned());
                    let conn = connections.register(peer, certificate, None);
                    Ok((conn, Box::new(stream) as Box<dyn Stream>))
                }
            }
        };
        match tokio::time::timeout(DIAL_TIMEOUT, attempt).await {
            Ok(Ok((conn, stream))) => {
                let deadline = Instant::now() + PREAUTH_DEADLINE;
                hand_over(&node_server, stream, conn, deadline, false);
                tracing::debug!(%address, "connected to a cluster node");
            }
            Ok(Err(e)) => tracing::debug!(%address, "could not reach a cluster node: {e}"),
            Err(_) => tracing::debug!(%address, "could not reach a cluster node in time"),
        }
    });
}

/// A dialled stream, plain or TLS.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin {}
impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin> Stream for S {}
