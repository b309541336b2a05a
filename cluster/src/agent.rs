//! The node agent: one actor per node that speaks for its host to the others.
//!
//! Agents find each other through a ractor process group per node
//! (`node:NAME` in the `mcpvisor` scope), which ractor_cluster keeps in step
//! across authenticated sessions: a member appearing, through the session
//! that authenticated as that node, is a node met; a member leaving is a
//! session closed. Every message from a node met must carry the key this
//! agent gave it (see `keys`). Each agent advertises its host's servers to
//! every other, routes what the others advertise into its host, runs the
//! calls they send, and pings them; a node silent for `lost_after` is lost
//! (its routes withdrawn, its calls failed) until it speaks again.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpvisor_actors::remote::NodeServers;
use mcpvisor_actors::{Host, HostEvent};
use ractor::pg::GroupChangeMessage;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use ractor_cluster::node::NodeServerMessage;
use tokio::task::JoinHandle;

use crate::connections::Connections;
use crate::dialling::{Dialling, MAX_RELAYED};
use crate::inbound::{Asked, Inbound};
use crate::keys::Key;
use crate::link::Link;
use crate::message::AgentMsg;
use crate::options::{ClusterOptions, MAX_NODE_NAME};
use crate::repeats::{Repeats, warn_repeated};
use crate::tls::Tls;
use crate::wire::{MAX_EVENT_TEXT, MAX_SERVERS, Wire, WireServer};

mod exchange;
mod liveness;

/// The process-group scope every node's agent joins.
pub(crate) const SCOPE: &str = "mcpvisor";

/// Changes to this host's servers are advertised together once they stop
/// coming for this long.
const ADVERT_DEBOUNCE: Duration = Duration::from_millis(20);

/// Long enough for the registry to publish after another node's change
/// (its pace holds a publication back 10 ms at most).
const REPUBLISHED: Duration = Duration::from_millis(50);

/// Every this many heartbeats the advertisement is rebuilt and sent if it
/// changed, whatever the signals said.
const ADVERT_CHECK_TICKS: u64 = 20;

/// Whether `address` is an `IP:port` on `ip`: a node's own listen address
/// is taken only on the IP its session comes from, so no node can have the
/// others dial an address of its choosing in its own name.
fn on_ip(address: &str, ip: IpAddr) -> bool {
    address
        .parse::<SocketAddr>()
        .is_ok_and(|a| a.ip().to_canonical() == ip.to_canonical())
}

/// Where a node's gateway serves HTTP, as it advertised `address`: only on
/// the IP its session comes from (a node names no other machine for this
/// one to send requests to); an unspecified IP is read as that one.
/// Not on a link-local IPv6 address (its scope is the sender's own), nor on
/// loopback unless this node's cluster listens on loopback too (a session
/// from loopback is otherwise a tunnel's or a sidecar's, not the node's own).
fn http_on(address: &str, ip: IpAddr, local_is_loopback: bool) -> Option<SocketAddr> {
    let advertised = address.parse::<SocketAddr>().ok()?;
    let ip = ip.to_canonical();
    let at = if advertised.ip().is_unspecified() {
        ip
    } else {
        advertised.ip().to_canonical()
    };
    let link_local = matches!(at, IpAddr::V6(v6) if v6.is_unicast_link_local());
    let allowed = at == ip
        && advertised.port() != 0
        && !link_local
        && (!at.is_loopback() || local_is_loopback);
    // Rebuilt from its parts: no scope or flow label travels on.
    allowed.then(|| SocketAddr::new(at, advertised.port()))
}

/// The group of the agent of node `name`.
pub(crate) fn group_of(name: &str) -> String {
    format!("node:{name}")
}

pub(crate) struct Agent;

pub(crate) struct AgentArgs {
    pub(crate) host: Host,
    pub(crate) options: ClusterOptions,
    pub(crate) node_server: ActorRef<NodeServerMessage>,
    pub(crate) tls: Option<Tls>,
    pub(crate) connections: Arc<Connections>,
    pub(crate) repeats: Arc<Repeats>,
}

/// Another node as this one knows it.
struct Peer {
    link: Link,
    /// Its agent's cell as this node's session sees it.
    cell: ActorId,
    last_seen: Instant,
    /// Silent past the bound: routes withdrawn until it speaks again.
    lost: bool,
    /// The key this node gave it: every message from it but a `hello` carries it.
    given: Key,
    /// Whether it sent a message with `given` (until then it is sent `hello`s).
    has_key: bool,
    /// A key it offered that this node is confirming, and the next to confirm.
    confirming: Option<Key>,
    next_offer: Option<Key>,
    /// The IP its session comes from.
    session_ip: IpAddr,
    /// Where it listens, as it advertised (on `session_ip`).
    listen: Option<String>,
    /// Where the nodes it hears listen, as it advertised (bounded).
    knows: Vec<String>,
    /// Its last advertisement's servers and HTTP address, as sent: one that
    /// repeats is not routed again.
    servers: Vec<u8>,
    /// Where its gateway serves HTTP, as it advertised (on `session_ip`).
    http: Option<SocketAddr>,
}

pub(crate) struct AgentState {
    host: Host,
    local: Arc<str>,
    listen: String,
    options: ClusterOptions,
    node_server: ActorRef<NodeServerMessage>,
    tls: Option<Tls>,
    connections: Arc<Connections>,
    repeats: Arc<Repeats>,
    peers: HashMap<Arc<str>, Peer>,
    inbound: Inbound,
    /// The advertisement last sent to every node, to skip sending it unchanged.
    advertised: Vec<u8>,
    advert_due: bool,
    ticks: u64,
    /// Every address this node tries to be connected to.
    dialling: Dialling,
    ticker: JoinHandle<()>,
    watcher: JoinHandle<()>,
    events: JoinHandle<()>,
}

impl Actor for Agent {
    type Msg = AgentMsg;
    type State = AgentState;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<AgentMsg>,
        args: AgentArgs,
    ) -> Result<AgentState, ActorProcessingErr> {
        let local: Arc<str> = Arc::from(args.options.name());
        ractor::pg::join_scoped(SCOPE.into(), group_of(&local), vec![myself.get_cell()]);
        ractor::pg::monitor_scope(SCOPE.into(), myself.get_cell());
        let ticker = myself.send_interval(args.options.heartbeat, || AgentMsg::Tick);
        let mut changes = args.host.watch_servers();
        let me = myself.clone();
        let watcher = tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                if me.cast(AgentMsg::LocalChanged).is_err() {
                    break;
                }
            }
        });
        let events = crate::relay::relay_events(&args.host, myself.clone());
        let _ = myself.cast(AgentMsg::Rejoin);
        let inbound = Inbound::new(
            local.clone(),
            myself.clone(),
            args.options.max_inbound_calls,
        );
        Ok(AgentState {
            host: args.host,
            listen: args.options.listen.to_string(),
            local,
            options: args.options,
            node_server: args.node_server,
            tls: args.tls,
            connections: args.connections,
            repeats: args.repeats,
            peers: HashMap::new(),
            inbound,
            advertised: Vec::new(),
            advert_due: false,
            ticks: 0,
            dialling: Dialling::default(),
            ticker,
            watcher,
            events,
        })
    }

    async fn post_stop(
        &self,
        myself: ActorRef<AgentMsg>,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        state.ticker.abort();
        state.watcher.abort();
        state.events.abort();
        ractor::pg::demonitor_scope(SCOPE.into(), myself.get_id());
        let names: Vec<Arc<str>> = state.peers.keys().cloned().collect();
        for name in names {
            state.lose(&name, "this node left the cluster");
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<AgentMsg>,
        msg: AgentMsg,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            AgentMsg::Peer { key, wire } => state.heard(&myself, key, wire),
            AgentMsg::Confirm { from, offer, reply } => state.asked_to_confirm(&from, offer, reply),
            AgentMsg::Confirmed {
                node,
                cell,
                offer,
                confirmed,
            } => state.confirmed(&myself, &node, cell, offer, confirmed),
            AgentMsg::Unreadable(why) => {
                warn_repeated!(
                    state.repeats,
                    "unreadable".into(),
                    "a cluster message could not be read and was dropped: {why}"
                );
            }
            // Frames are for other nodes; one addressed here is nobody's.
            AgentMsg::Frame(_) => {}
            AgentMsg::Tick => state.tick(&myself),
            AgentMsg::LocalChanged => {
                if !state.advert_due {
                    state.advert_due = true;
                    myself.send_after(ADVERT_DEBOUNCE, || AgentMsg::Advertise);
                }
            }
            AgentMsg::Advertise => {
                state.advert_due = false;
                state.advertise(false);
            }
            AgentMsg::Rejoin => state.rejoin(),
            AgentMsg::InboundDone { from, id } => state.inbound.done(&from, id),
            AgentMsg::LocalEvent { kind, server, text } => {
                let event = Wire::Event {
                    from: state.local.to_string(),
                    kind: kind.to_string(),
                    server: Some(server),
                    text,
                };
                for peer in state.peers.values().filter(|p| !p.lost) {
                    peer.link.send(&event);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<AgentMsg>,
        event: SupervisionEvent,
        state: &mut AgentState,
    ) -> Result<(), ActorProcessingErr> {
        let SupervisionEvent::ProcessGroupChanged(change) = event else {
            return Ok(());
        };
        match change {
            GroupChangeMessage::Join(scope, group, cells) if scope == SCOPE => {
                if let Some(name) = group.strip_prefix("node:") {
                    for cell in cells.into_iter().filter(|c| !c.get_id().is_local()) {
                        state.meet(name, cell);
                    }
                }
            }
            GroupChangeMessage::Leave(scope, group, cells) if scope == SCOPE => {
                if let Some(name) = group.strip_prefix("node:") {
                    let name: Arc<str> = Arc::from(name);
                    let gone = state
                        .peers
                        .get(&name)
                        .is_some_and(|p| cells.iter().any(|c| c.get_id() == p.cell));
                    if gone {
                        state.lose(&name, "its session closed");
                        state.peers.remove(&name);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl AgentState {
    /// The IP of the session `cell` came through, if that session
    /// authenticated as node `name` (and, under TLS, its certificate names it).
    fn session_of(&self, name: &str, cell: &ActorCell) -> Option<IpAddr> {
        let ActorId::Remote { node_id, .. } = cell.get_id() else {
            return None;
        };
        let conn = self.connections.session(node_id)?;
        (conn.authenticated() && conn.node().as_deref() == Some(name)).then_some(conn.peer.ip())
    }

    /// A node's agent appeared in its group: offer it a key (see `keys`);
    /// it is told our servers once its own key is confirmed.
    fn meet(&mut self, name: &str, cell: ActorCell) {
        if name == &*self.local || name.len() > MAX_NODE_NAME {
            return;
        }
        let Some(session_ip) = self.session_of(name, &cell) else {
            warn_repeated!(
                self.repeats,
                format!("impostor {name}"),
                node = %name,
                "cluster agent ignored: it appeared in node {name}'s group through a session that is not that node's"
            );
            return;
        };
        let Some(given) = Key::random() else {
            tracing::error!(node = %name, "no randomness for a cluster key: the node is not met");
            return;
        };
        let name: Arc<str> = Arc::from(name);
        if let Some(old) = self.peers.get(&name) {
            if old.cell == cell.get_id() {
                return;
            }
            // A new session to the same node: what went through the old one is lost.
            self.lose(&name, "it reconnected");
        }
        let link = Link::new(
            name.clone(),
            self.local.clone(),
            ActorRef::from(cell.clone()),
            self.options.max_message_bytes,
            None,
        );
        tracing::info!(node = %name, "cluster node met");
        mcpvisor_actors::node_link(&self.host)
            .announce(HostEvent::NodeJoined { node: name.clone() });
        self.peers.insert(
            name.clone(),
            Peer {
                link: link.clone(),
                cell: cell.get_id(),
                last_seen: Instant::now(),
                lost: false,
                given,
                has_key: false,
                confirming: None,
                next_offer: None,
                session_ip,
                listen: None,
                knows: Vec::new(),
                servers: Vec::new(),
                http: None,
            },
        );
        link.send_hello(given);
    }

    /// A message from another node, that came with `key`.
    fn heard(&mut self, myself: &ActorRef<AgentMsg>, key: Option<Key>, wire: Wire) {
        if wire.from().len() > MAX_NODE_NAME {
            return;
        }
        let from: Arc<str> = Arc::from(wire.from());
        if from == self.local {
            return;
        }
        if !self.peers.contains_key(&from) {
            // Heard before its group change arrived: find its agent now.
            let members = ractor::pg::get_scoped_members(&SCOPE.into(), &group_of(&from));
            match members
                .into_iter()
                .find(|c| self.session_of(&from, c).is_some())
            {
                Some(cell) => self.meet(&from, cell),
                None => {
                    tracing::debug!(node = %from, "message from a node not met; dropped");
                    return;
                }
            }
        }
        if let Wire::Hello { offer, .. } = &wire {
            if let Some(offer) = Key::from_text(offer) {
                self.offered(myself, &from, offer);
            }
            return;
        }
        let Some(peer) = self.peers.get_mut(&from) else {
            return;
        };
        if key != Some(peer.given) {
            warn_repeated!(
                self.repeats,
                format!("unkeyed {from}"),
                node = %from,
                "cluster message dropped: it did not come with the key this node gave that node (another node sent it in that node's name, or an old session did)"
            );
            return;
        }
        peer.has_key = true;
        peer.last_seen = Instant::now();
        if peer.lost {
            // It speaks again: a fresh link, and its servers asked for anew.
            tracing::info!(node = %from, "cluster node back");
            mcpvisor_actors::node_link(&self.host)
                .announce(HostEvent::NodeJoined { node: from.clone() });
            peer.lost = false;
            peer.link = Link::new(
                from.clone(),
                self.local.clone(),
                peer.link.agent().clone(),
                self.options.max_message_bytes,
                peer.link.stamp(),
            );
            peer.link.send_hello(peer.given);
        }
        let link = peer.link.clone();
        match wire {
            Wire::Hello { .. } => {}
            // Routed once this node can answer its calls (its key confirmed):
            // it is asked again then.
            Wire::Advert { .. } if link.stamp().is_none() => {}
            Wire::Advert {
                listen,
                peers,
                servers,
                http,
                ..
            } => {
                let Some(peer) = self.peers.get_mut(&from) else {
                    return;
                };
                let local_is_loopback = self
                    .listen
                    .parse::<SocketAddr>()
                    .is_ok_and(|a| a.ip().is_loopback());
                let http = http
                    .as_deref()
                    .and_then(|a| http_on(a, peer.session_ip, local_is_loopback));
                let fingerprint = serde_json::to_vec(&(&servers, http)).unwrap_or_default();
                // Where it and the nodes it hears listen: this node dials
                // those it is not connected to (see `rejoin`).
                let ip = peer.session_ip;
                peer.listen = Some(listen).filter(|a| on_ip(a, ip));
                peer.knows = peers
                    .into_iter()
                    .filter(|a| a.parse::<SocketAddr>().is_ok())
                    .take(MAX_RELAYED)
                    .collect();
                if peer.servers == fingerprint {
                    return;
                }
                peer.servers = fingerprint;
                peer.http = http;
                self.route(myself, &from, &link, servers, http);
            }
            Wire::Ping { .. } => {}
            Wire::Call {
                id,
                tool,
                arguments,
                timeout_ms,
                progress,
                ..
            } => self.inbound.start(
                &self.host,
                &from,
                &link,
                Asked {
                    id,
                    tool,
                    arguments,
                    timeout_ms,
                    progress,
                },
            ),
            Wire::Progress { id, params, .. } => link.progress(id, &params),
            Wire::Answer { id, outcome, .. } => link.answer(id, outcome),
            Wire::Cancel { id, .. } => self.inbound.cancel(&from, id),
            Wire::Event {
                kind,
                server,
                mut text,
                ..
            } => {
                if text.len() > MAX_EVENT_TEXT {
                    let mut end = MAX_EVENT_TEXT;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                }
                mcpvisor_actors::node_link(&self.host).announce(HostEvent::Remote {
                    node: from.clone(),
                    kind: Arc::from(kind.chars().take(64).collect::<String>()),
                    server: server.map(|s| Arc::from(s.chars().take(128).collect::<String>())),
                    text,
                });
            }
        }
    }

    /// Routes what `node` advertises into the host.
    fn route(
        &mut self,
        myself: &ActorRef<AgentMsg>,
        node: &Arc<str>,
        link: &Link,
        mut servers: Vec<WireServer>,
        http: Option<SocketAddr>,
    ) {
        if servers.len() > MAX_SERVERS {
            tracing::warn!(%node, servers = servers.len(), "node advertised more servers than a node may; the rest are ignored");
            servers.truncate(MAX_SERVERS);
        }
        let servers = servers
            .into_iter()
            .filter_map(|s| s.into_remote(node))
            .collect();
        mcpvisor_actors::node_link(&self.host).set_node_servers(NodeServers {
            node: node.clone(),
            servers,
            calls: Arc::new(link.clone()),
            http,
        });
        // Whether this host's own routes are withheld may have changed with
        // it: once the registry has published, advertise what changed.
        myself.send_after(REPUBLISHED, || AgentMsg::Advertise);
    }

    /// The advertisement as it goes to every node.
    fn encoded_advert(&self) -> Vec<u8> {
        let peers = self
            .peers
            .values()
            .filter(|p| !p.lost)
            .filter_map(|p| p.listen.clone())
            .collect::<std::collections::BTreeSet<String>>()
            .into_iter()
            .collect();
        crate::advert::encoded(
            &self.host,
            &self.local,
            &self.listen,
            peers,
            self.options.http,
            self.options.max_message_bytes,
        )
    }

    fn send_advert(&self, link: &Link) {
        let bytes = self.encoded_advert();
        if !bytes.is_empty() {
            link.send_encoded(bytes.into());
        }
    }

    /// Sends the advertisement to every node that hears this one, unless it
    /// is what they already have (`force` sends it anyway).
    fn advertise(&mut self, force: bool) {
        let bytes = self.encoded_advert();
        if bytes.is_empty() || (!force && bytes == self.advertised) {
            return;
        }
        let shared: Arc<[u8]> = bytes.as_slice().into();
        for peer in self.peers.values().filter(|p| !p.lost) {
            peer.link.send_encoded(shared.clone());
        }
        self.advertised = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::{http_on, on_ip};

    #[test]
    fn a_nodes_own_address_is_taken_only_on_its_sessions_ip() {
        let ip = "127.0.0.1".parse().unwrap();
        assert!(on_ip("127.0.0.1:9001", ip));
        assert!(on_ip("127.0.0.1:9001", "::ffff:127.0.0.1".parse().unwrap()));
        assert!(!on_ip("10.0.0.9:9001", ip));
        // A name would be resolved to an address of the advertiser's choosing.
        assert!(!on_ip("localhost:9001", ip));
    }

    #[test]
    fn a_nodes_http_address_is_taken_only_on_its_sessions_ip() {
        let at = |advertised: &str, session: &str, loopback: bool| {
            http_on(advertised, session.parse().unwrap(), loopback).map(|a| a.to_string())
        };
        let lan = "10.0.0.9";
        assert_eq!(
            at("10.0.0.9:7001", lan, false).as_deref(),
            Some("10.0.0.9:7001")
        );
        // Unspecified: the IP the session comes from.
        assert_eq!(
            at("0.0.0.0:7001", lan, false).as_deref(),
            Some("10.0.0.9:7001")
        );
        assert_eq!(
            at("[::ffff:10.0.0.9]:7001", lan, false).as_deref(),
            Some("10.0.0.9:7001")
        );
        // Another machine, port 0, a name: never.
        assert_eq!(at("10.0.0.7:7001", lan, false), None);
        assert_eq!(at("10.0.0.9:0", lan, false), None);
        assert_eq!(at("localhost:7001", lan, false), None);
        // Loopback only in a cluster on loopback (else the session is a tunnel's).
        assert_eq!(
            at("127.0.0.1:7001", "127.0.0.1", true).as_deref(),
            Some("127.0.0.1:7001")
        );
        assert_eq!(at("0.0.0.0:7001", "127.0.0.1", false), None);
        // Link-local IPv6: its scope is the sender's; no scope travels on.
        assert_eq!(at("[fe80::1%2]:7001", "fe80::1", false), None);
        assert_eq!(
            at("[2001:db8::1%3]:7001", "2001:db8::1", false).as_deref(),
            Some("[2001:db8::1]:7001")
        );
    }
}
