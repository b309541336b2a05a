//! The agent's heartbeat: every node is told this one is alive, a node
//! silent past the bound is lost (its routes withdrawn, its calls failed),
//! and the addresses of nodes not reached are dialled (see `dialling`).

use std::sync::Arc;
use std::time::Instant;

use mcpvisor_actors::HostEvent;
use ractor::ActorRef;

use super::{ADVERT_CHECK_TICKS, AgentState};
use crate::message::AgentMsg;
use crate::wire::Wire;

impl AgentState {
    /// The heartbeat: tell every node this one is alive, lose the silent ones.
    pub(super) fn tick(&mut self, myself: &ActorRef<AgentMsg>) {
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
            if !peer.has_key {
                // It has not used this node's key yet: the hello may have
                // crossed a forged one, or been dropped with an old session.
                peer.link.send_hello(peer.given);
            }
        }
        self.ticks += 1;
        if self.ticks % ADVERT_CHECK_TICKS == 0 {
            let _ = myself.cast(AgentMsg::Advertise);
        }
        let _ = myself.cast(AgentMsg::Rejoin);
    }

    /// Withdraws `name`'s routes, fails the calls waiting for it, and drops
    /// the calls it had running here.
    pub(super) fn lose(&mut self, name: &Arc<str>, why: &str) {
        let Some(peer) = self.peers.get_mut(name) else {
            return;
        };
        if !peer.lost {
            tracing::warn!(node = %name, waiting = peer.link.waiting(), "cluster node lost: {why}");
            mcpvisor_actors::node_link(&self.host).announce(HostEvent::NodeLost {
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
        mcpvisor_actors::node_link(&self.host).forget_node(name);
    }

    /// Dials the addresses no node this one has a session with listens on
    /// (the configured ones, and those the nodes it hears pass on), each as
    /// often as its backoff allows (see `dialling`). A node lost by the
    /// heartbeat whose session is still open is not dialled again (a second
    /// session would compete with the first); its session closing removes it.
    pub(super) fn rejoin(&mut self) {
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
        for address in self.dialling.due(wanted, Instant::now()) {
            crate::dial::dial(
                self.node_server.clone(),
                self.connections.clone(),
                address,
                self.tls.clone(),
            );
        }
    }
}
