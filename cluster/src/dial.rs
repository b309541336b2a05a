//! Dialling another node: a TCP (or TLS) connection handed to this node's
//! ractor_cluster server, which authenticates it with the cookie.

use std::time::Duration;

use ractor::ActorRef;
use ractor_cluster::node::NodeServerMessage;
use tokio_rustls::rustls::pki_types::ServerName;

use crate::tls::Tls;

/// The longest one connection attempt may take before it is given up.
const DIAL_TIMEOUT: Duration = Duration::from_secs(3);

/// Connects to `address` in the background; a failure is logged and tried
/// again later by the agent.
pub(crate) fn dial(node_server: ActorRef<NodeServerMessage>, address: String, tls: Option<Tls>) {
    tokio::spawn(async move {
        let attempt = async {
            match &tls {
                None => ractor_cluster::client_connect(&node_server, address.as_str())
                    .await
                    .map_err(|e| e.to_string()),
                Some(tls) => {
                    let host = address
                        .rsplit_once(':')
                        .map(|(host, _)| host.trim_start_matches('[').trim_end_matches(']'))
                        .unwrap_or(&address);
                    let name = ServerName::try_from(host.to_string()).map_err(|e| e.to_string())?;
                    ractor_cluster::node::client::connect_enc(
                        &node_server,
                        address.as_str(),
                        tls.connector.clone(),
                        name,
                    )
                    .await
                    .map_err(|e| e.to_string())
                }
            }
        };
        match tokio::time::timeout(DIAL_TIMEOUT, attempt).await {
            Ok(Ok(())) => tracing::debug!(%address, "connected to a cluster node"),
            Ok(Err(e)) => tracing::debug!(%address, "could not reach a cluster node: {e}"),
            Err(_) => tracing::debug!(%address, "could not reach a cluster node in time"),
        }
    });
}
