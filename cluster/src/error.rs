//! Why a host could not join a cluster.

use std::path::PathBuf;
use std::time::Duration;

/// Why joining a cluster failed. None of these carries the cookie or a key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The cookie file cannot be used.
    #[error("cookie file {}: {reason}", path.display())]
    Cookie {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A TLS file cannot be used.
    #[error("TLS {what} {}: {reason}", path.display())]
    Tls {
        /// Which file (`certificate`, `key`, `CA`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The node name is not one a cluster can use.
    #[error("node name {0:?} must be 1 to 128 letters, digits, or - _ . : [ ]")]
    NodeName(String),
    /// The heartbeat would declare live nodes lost.
    #[error("heartbeat {heartbeat:?} must be non-zero and shorter than lost-after {lost_after:?}")]
    Heartbeat {
        /// How often nodes tell each other they are alive.
        heartbeat: Duration,
        /// After how long a silent node is lost.
        lost_after: Duration,
    },
    /// The listen address names no interface (`0.0.0.0`, `::`).
    #[error(
        "--cluster-listen {0} names no one interface: other nodes dial the address a node listens on, so give one they can reach"
    )]
    Listen(std::net::SocketAddr),
    /// Plain TCP on an address other than loopback without `insecure_plaintext`.
    #[error(
        "--cluster-listen {0} is not loopback and the cluster has no TLS: give --tls-cert, --tls-key and --tls-ca, or --insecure-plaintext to let anyone on the network read and alter the cluster's traffic"
    )]
    Plaintext(std::net::SocketAddr),
    /// The host already belongs to a cluster.
    #[error("this host already joined a cluster as node `{0}`")]
    AlreadyJoined(String),
    /// The node's listener or agent could not start.
    #[error("the cluster node could not start: {0}")]
    Start(String),
}
