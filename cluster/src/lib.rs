//! mcpvisor supervisors on several machines, joined with `ractor_cluster`
//! into one cluster with one route table.
//!
//! Each node supervises the servers of its own configuration, exactly as a
//! host alone does. [`JoinCluster::join_cluster`] makes a host a node: it
//! listens for other nodes, dials the ones it is told to join (and every node
//! those advertise), and authenticates each with the shared [`Cookie`]
//! (optionally over mutual TLS). Every node then routes every other node's
//! tools under the same `mcp__server__tool` names (a node is the node its
//! session authenticated as, whatever its messages say: see `keys`; and a
//! connection is bounded until it authenticates: see `accept` and `gate`);
//! a call to a tool of
//! another node runs there, through that node's own call path, and its
//! answer, progress and errors come back typed. A node that goes silent is
//! lost: calls waiting for it fail with `CallError::NodeLost` and its routes
//! are withdrawn until it speaks again.
//!
//! See `docs/CLUSTER.md` for the topology, how routes converge, and what is
//! and is not promised on partition.

mod accept;
mod advert;
mod agent;
mod connections;
mod dial;
mod dialling;
mod error;
mod gate;
mod handoff;
mod inbound;
mod keys;
mod link;
mod message;
mod options;
mod relay;
mod repeats;
mod sessions;
mod tls;
mod wire;

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use mcpvisor_actors::Host;
use ractor::{Actor, ActorRef};
use ractor_cluster::IncomingEncryptionMode;
use ractor_cluster::node::{NodeConnectionMode, NodeServer, NodeServerMessage};

pub use error::ClusterError;
pub use options::{ClusterOptions, Cookie, MIN_COOKIE_CHARS, TlsFiles};

use agent::{Agent, AgentArgs};
use connections::Connections;
use message::AgentMsg;
use repeats::Repeats;
use tokio::task::JoinHandle;

/// The cluster's decoding of what other nodes send, for the fuzz targets
/// (`fuzz/fuzz_targets/cluster_frames.rs`): not an API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::gate::{FrameBound, FrameTooLarge, PREAUTH_FRAME_BYTES};
    use ractor::Message;
    use ractor::message::SerializedMessage;

    use crate::message::AgentMsg;

    /// What a node makes of another node's cast (`args`, `metadata`).
    #[derive(Debug)]
    pub enum Decoded {
        /// A message, from the node it names, with or without a key.
        Message {
            /// The node it names.
            from: String,
            /// Whether its metadata was a key.
            keyed: bool,
        },
        /// Dropped: why (never its content).
        Unreadable(String),
    }

    /// Decodes a cast as the agent does.
    pub fn decode_cast(args: &[u8], metadata: Option<&[u8]>) -> Decoded {
        let message = SerializedMessage::Cast {
            variant: String::new(),
            args: args.to_vec(),
            metadata: metadata.map(<[u8]>::to_vec),
        };
        match AgentMsg::deserialize(message) {
            Ok(AgentMsg::Peer { key, wire }) => Decoded::Message {
                from: wire.from().to_string(),
                keyed: key.is_some(),
            },
            Ok(AgentMsg::Unreadable(why)) => Decoded::Unreadable(why),
            _ => Decoded::Unreadable("neither".into()),
        }
    }

    /// Decodes a `confirm` call as the agent does: whether it was read as
    /// one, and what went back when it was not (`None`: nothing yet).
    pub fn decode_confirm(args: &[u8]) -> (bool, Option<Vec<u8>>) {
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        let message = SerializedMessage::Call {
            variant: "confirm".into(),
            args: args.to_vec(),
            reply: reply.into(),
            metadata: None,
        };
        let read = matches!(AgentMsg::deserialize(message), Ok(AgentMsg::Confirm { .. }));
        (read, answer.try_recv().ok())
    }
}

/// `address` as `IP:port` when it resolves, else as given (it is dialled,
/// and resolved, again later).
fn resolved(address: &str) -> String {
    use std::net::ToSocketAddrs;
    address
        .to_socket_addrs()
        .ok()
        .and_then(|mut all| all.next())
        .map(|a| a.to_string())
        .unwrap_or_else(|| address.to_string())
}

/// Room for ractor_cluster's own framing around one of our messages.
const FRAME_OVERHEAD: u64 = 64 * 1024;

/// A host's membership of a cluster. The node leaves the cluster when this
/// is dropped (or on [`Cluster::leave`]): hold it as long as the host serves.
pub struct Cluster {
    node: String,
    agent: ActorRef<AgentMsg>,
    node_server: ActorRef<NodeServerMessage>,
    accepting: JoinHandle<()>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("node", &self.node).finish()
    }
}

impl Cluster {
    /// This node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Leaves the cluster: other nodes lose this one's routes, calls waiting
    /// for other nodes fail, and the listener closes.
    pub fn leave(self) {
        drop(self);
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.accepting.abort();
        self.agent.stop(None);
        self.node_server.stop(None);
    }
}

/// Joining a cluster, for a [`Host`].
pub trait JoinCluster {
    /// Makes this host a node of a cluster (see the crate's documentation).
    fn join_cluster(
        &self,
        options: ClusterOptions,
    ) -> impl Future<Output = Result<Cluster, ClusterError>> + Send;
}

impl JoinCluster for Host {
    fn join_cluster(
        &self,
        options: ClusterOptions,
    ) -> impl Future<Output = Result<Cluster, ClusterError>> + Send {
        join(self.clone(), options)
    }
}

async fn join(host: Host, mut options: ClusterOptions) -> Result<Cluster, ClusterError> {
    options.check()?;
    let tls = options.tls.as_ref().map(tls::load).transpose()?;
    let name = options.name();
    if let Some(joined) = host.node_name() {
        return Err(ClusterError::AlreadyJoined(joined.to_string()));
    }
    // Addresses as nodes advertise theirs (`IP:port`), so a node reached
    // through its configured name is known as reached.
    options.join = options.join.iter().map(|a| resolved(a)).collect();
    // This node accepts on its port itself (see `accept`); bound here, so a
    // port in use is an error here rather than a listener dying in the background.
    let listener = std::net::TcpListener::bind(options.listen)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .and_then(tokio::net::TcpListener::from_std)
        .map_err(|e| ClusterError::Start(format!("cannot listen on {}: {e}", options.listen)))?;
    // ractor_cluster always runs a listener of its own: it gets a loopback
    // port nobody is told of, and a TLS acceptor that takes no one.
    let unused = match options.listen.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    };
    let server = NodeServer::new(
        0,
        options.cookie.expose().to_string(),
        name.clone(),
        options.listen.ip().to_string(),
        Some(IncomingEncryptionMode::Tls(tls::refusing())),
        // Every node dials every other itself (over TLS when it is on), from
        // the addresses nodes advertise.
        Some(NodeConnectionMode::Isolated),
    )
    .with_listen_addr(unused)
    .with_max_inbound_frame_size(options.max_message_bytes as u64 + FRAME_OVERHEAD);
    let (node_server, _) = Actor::spawn(None, server, ())
        .await
        .map_err(|e| ClusterError::Start(e.to_string()))?;
    // Named once the node can start, so a join that failed can be tried again.
    if !mcpvisor_actors::node_link(&host).name_node(&name) {
        node_server.stop(None);
        return Err(ClusterError::AlreadyJoined(
            host.node_name().map(|n| n.to_string()).unwrap_or_default(),
        ));
    }
    let connections = Connections::new();
    let repeats = Arc::new(Repeats::default());
    // Before any connection is handed over, so every session is tied to its own.
    sessions::watch(
        &node_server,
        connections.clone(),
        repeats.clone(),
        tls.is_some(),
    );
    let acceptor = tls.as_ref().map(|t| t.acceptor.clone());
    let (agent, _) = Actor::spawn(
        None,
        Agent,
        AgentArgs {
            host,
            options,
            node_server: node_server.clone(),
            tls,
            connections: connections.clone(),
            repeats: repeats.clone(),
        },
    )
    .await
    .map_err(|e| {
        node_server.stop(None);
        ClusterError::Start(e.to_string())
    })?;
    let accepting = accept::Acceptor {
        listener,
        node_server: node_server.clone(),
        tls: acceptor,
        connections,
        repeats,
    }
    .spawn();
    Ok(Cluster {
        node: name,
        agent,
        node_server,
        accepting,
    })
}
