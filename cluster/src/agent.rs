//! The node agent: one actor per node that speaks for its host to the others.
//!
//! Agents find each other through a ractor process group per node
//! (`node:NAME` in the `mcpvisor` scope), which ractor_cluster keeps in step
//! across authenticated sessions: a member appearing is a node met, a member
//! leaving is a session closed. Each agent advertises its host's servers to
//! every other, routes what the others advertise into its host, runs the
//! calls they send, and pings them; a node silent for `lost_after` is lost
//! (its routes withdrawn, its calls failed) until it speaks again.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use mcpvisor_actors::remote::NodeServers;
use mcpvisor_actors::{Host, HostEvent};
use ractor::pg::GroupChangeMessage;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use ractor_cluster::node::NodeServerMessage;
use tokio::task::JoinHandle;

use crate::connections::Connections;
use crate::inbound::{Asked, Inbound};
use crate::link::Link;
use crate::options::ClusterOptions;
use crate::repeats::Repeats;
use crate::tls::Tls;
use crate::wire::{AgentMsg, MAX_EVENT_TEXT, MAX_PEERS, MAX_SERVERS, Wire, WireServer};

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

/// How often an address this node cannot reach is tried again.
const REJOIN_EVERY: Duration = Duration::from_secs(1);

/// Where this node's call ids start: from the clock, so a node started
/// again on the same name does not give the ids its previous run gave.
fn first_call_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    // A node started again begins above every id its earlier run gave,
    // unless that run made more calls than nanoseconds passed.
    nanos.max(1)
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
    /// Where it listens, as it advertised.
    listen: Option<String>,
    /// Where the nodes it hears listen, as it advertised (bounded).
    knows: Vec<String>,
    /// Its last advertisement's servers, as sent: one that repeats is not routed again.
    servers: Vec<u8>,
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
    /// Every call id this node gives, across its links (see `Link`).
    ids: Arc<AtomicU64>,
    /// The advertisement last sent to every node, to skip sending it unchanged.
    advertised: Vec<u8>,
    advert_due: bool,
    ticks: u64,
    /// Every address this node tries to be connected to, with the last try.
    addresses: HashMap<String, Option<Instant>>,
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
        let addresses = args
            .options
            .join
            .iter()
            .map(|a| (a.clone(), None))
            .collect();
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
            ids: Arc::new(AtomicU64::new(first_call_id())),
            advertised: Vec::new(),
            advert_due: false,
            ticks: 0,
            addresses,
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
            AgentMsg::Peer(wire) => state.heard(&myself, wire),
            AgentMsg::Unreadable(why) => {
                crate::repeats::warn_repeated!(
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
    /// A node's agent appeared in its group: greet it and tell it our servers.
    fn meet(&mut self, name: &str, cell: ActorCell) {
        if name == &*self.local {
            return;
        }
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
            self.ids.clone(),
        );
        tracing::info!(node = %name, "cluster node met");
        self.host
            .announce(HostEvent::NodeJoined { node: name.clone() });
        self.peers.insert(
            name.clone(),
            Peer {
                link: link.clone(),
                cell: cell.get_id(),
                last_seen: Instant::now(),
                lost: false,
                listen: None,
                knows: Vec::new(),
                servers: Vec::new(),
            },
        );
        link.send(&Wire::Hello {
            from: self.local.to_string(),
        });
        self.send_advert(&link);
    }

    /// A message from another node.
    fn heard(&mut self, myself: &ActorRef<AgentMsg>, wire: Wire) {
        let from: Arc<str> = Arc::from(wire.from());
        if from == self.local {
            return;
        }
        if !self.peers.contains_key(&from) {
            // Heard before its group change arrived: find its agent now.
            let members = ractor::pg::get_scoped_members(&SCOPE.into(), &group_of(&from));
            match members.into_iter().find(|c| !c.get_id().is_local()) {
                Some(cell) => self.meet(&from, cell),
                None => {
                    tracing::debug!(node = %from, "message from a node not met; dropped");
                    return;
                }
            }
        }
        let Some(peer) = self.peers.get_mut(&from) else {
            return;
        };
        peer.last_seen = Instant::now();
        if peer.lost {
            // It speaks again: a fresh link, and its servers asked for anew.
            tracing::info!(node = %from, "cluster node back");
            self.host
                .announce(HostEvent::NodeJoined { node: from.clone() });
            peer.lost = false;
            peer.link = Link::new(
                from.clone(),
                self.local.clone(),
                peer.link.agent().clone(),
                self.options.max_message_bytes,
                self.ids.clone(),
            );
            peer.link.send(&Wire::Hello {
                from: self.local.to_string(),
            });
        }
        let link = peer.link.clone();
        match wire {
            Wire::Hello { .. } => self.send_advert(&link),
            Wire::Advert {
                listen,
                peers,
                servers,
                ..
            } => {
                let fingerprint = serde_json::to_vec(&servers).unwrap_or_default();
                let Some(peer) = self.peers.get_mut(&from) else {
                    return;
                };
                // Where it and the nodes it hears listen: this node dials
                // those it is not connected to (see `rejoin`).
                peer.listen = Some(listen).filter(|a| a.len() <= 256);
                peer.knows = peers
                    .into_iter()
                    .filter(|a| a.len() <= 256)
                    .take(MAX_PEERS)
                    .collect();
                if peer.servers == fingerprint {
                    return;
                }
                peer.servers = fingerprint;
                self.route(myself, &from, &link, servers);
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
                self.host.announce(HostEvent::Remote {
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
    ) {
        if servers.len() > MAX_SERVERS {
            tracing::warn!(%node, servers = servers.len(), "node advertised more servers than a node may; the rest are ignored");
            servers.truncate(MAX_SERVERS);
        }
        let servers = servers
            .into_iter()
            .filter_map(|s| s.into_remote(node))
            .collect();
        self.host.set_node_servers(NodeServers {
            node: node.clone(),
            servers,
            calls: Arc::new(link.clone()),
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
            self.options.max_message_bytes,
        )
    }

    fn send_advert(&self, link: &Link) {
        let bytes = self.encoded_advert();
        if !bytes.is_empty() {
            let _ = link.agent().cast(AgentMsg::Frame(bytes));
        }
    }

    /// Sends the advertisement to every node that hears this one, unless it
    /// is what they already have (`force` sends it anyway).
    fn advertise(&mut self, force: bool) {
        let bytes = self.encoded_advert();
        if bytes.is_empty() || (!force && bytes == self.advertised) {
            return;
        }
        for peer in self.peers.values().filter(|p| !p.lost) {
            let _ = peer.link.agent().cast(AgentMsg::Frame(bytes.clone()));
        }
        self.advertised = bytes;
    }

    /// The heartbeat: tell every node this one is alive, lose the silent ones.
    fn tick(&mut self, myself: &ActorRef<AgentMsg>) {
        let now = Instant::now();
        let silent: Vec<Arc<str>> = self
            .peers
            .iter()
            .filter(|(_, p)| !p.lost && now.duration_since(p.last_seen) > self.options.lost_after)
            .map(|(name, _)| name.clone())
            .collect();
        for name in silent {
            let why = format!(
                "not heard from for {} ms",
                self.options.lost_after.as_millis()
            );
            self.lose(&name, &why);
        }
        let ping = Wire::Ping {
            from: self.local.to_string(),
        };
        for peer in self.peers.values() {
            peer.link.send(&ping);
        }
        self.ticks += 1;
        if self.ticks % ADVERT_CHECK_TICKS == 0 {
            let _ = myself.cast(AgentMsg::Advertise);
        }
        let _ = myself.cast(AgentMsg::Rejoin);
    }

    /// Withdraws `name`'s routes, fails the calls waiting for it, and drops
    /// the calls it had running here.
    fn lose(&mut self, name: &Arc<str>, why: &str) {
        let Some(peer) = self.peers.get_mut(name) else {
            return;
        };
        if !peer.lost {
            tracing::warn!(node = %name, waiting = peer.link.waiting(), "cluster node lost: {why}");
            self.host.announce(HostEvent::NodeLost {
                node: name.clone(),
                reason: why.to_string(),
            });
        }
        peer.lost = true;
        // Its routes go: its next advertisement is routed even if unchanged.
        peer.servers.clear();
        peer.link.lose();
        // Its calls running here are dropped, and each is answered as ended:
        // if it still hears this node (a loss on one side only), nothing of
        // it waits for an answer that will not come.
        let link = peer.link.clone();
        self.inbound.drop_node(name, &link);
        self.host.forget_node(name);
    }

    /// Dials every address that no node this one has a session with
    /// listens on, at most once per [`REJOIN_EVERY`] each: the configured
    /// ones, and those the nodes it hears advertise now. A node lost by the
    /// heartbeat whose session is still open is not dialled again (a second
    /// session would compete with the first); its session closing removes it.
    fn rejoin(&mut self) {
        let now = Instant::now();
        let reached: Vec<&String> = self
            .peers
            .values()
            .filter_map(|p| p.listen.as_ref())
            .collect();
        let mut wanted: Vec<String> = self.options.join.clone();
        for peer in self.peers.values() {
            wanted.extend(peer.knows.iter().cloned());
        }
        wanted.sort();
        wanted.dedup();
        wanted.retain(|a| *a != self.listen && !reached.contains(&a));
        // Addresses nobody wants any more are forgotten.
        self.addresses.retain(|a, _| wanted.contains(a));
        for address in wanted {
            let last = self.addresses.entry(address.clone()).or_insert(None);
            if last.is_some_and(|t| now.duration_since(t) < REJOIN_EVERY) {
                continue;
            }
            *last = Some(now);
            crate::dial::dial(
                self.node_server.clone(),
                self.connections.clone(),
                address,
                self.tls.clone(),
            );
        }
    }
}
