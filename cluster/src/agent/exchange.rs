//! The agent's side of the key exchange (see `keys`): a key another node
//! offers is confirmed with that node's own agent before it is used, and
//! this node answers the same question about the keys it gave.

use std::sync::Arc;
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorId, ActorRef, RpcReplyPort};

use super::AgentState;
use crate::keys::Key;
use crate::message::{AgentMsg, confirmation};
use crate::repeats::warn_repeated;

/// A confirm that takes longer than this is taken as refused (and the
/// node's next hello tried).
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(2);

impl AgentState {
    /// `node` (or another node in its name) offered `offer` in a hello.
    pub(super) fn offered(&mut self, myself: &ActorRef<AgentMsg>, node: &Arc<str>, offer: Key) {
        let Some(peer) = self.peers.get_mut(node) else {
            return;
        };
        if peer.link.stamp() == Some(offer) {
            // Known already: the hello asks for our servers.
            let link = peer.link.clone();
            self.send_advert(&link);
            return;
        }
        if peer.confirming.is_some() {
            peer.next_offer = Some(offer);
            return;
        }
        self.confirm(myself, node, offer);
    }

    /// Asks `node`'s agent, through its own session, whether it offered `offer`.
    fn confirm(&mut self, myself: &ActorRef<AgentMsg>, node: &Arc<str>, offer: Key) {
        let Some(peer) = self.peers.get_mut(node) else {
            return;
        };
        peer.confirming = Some(offer);
        let agent = peer.link.agent().clone();
        let cell = peer.cell;
        let from = self.local.to_string();
        let me = myself.clone();
        let node = node.clone();
        tokio::spawn(async move {
            let answer = agent
                .call(
                    |reply| AgentMsg::Confirm { from, offer, reply },
                    Some(CONFIRM_TIMEOUT),
                )
                .await;
            let confirmed =
                matches!(answer, Ok(CallResult::Success(bytes)) if bytes == confirmation(true));
            let _ = me.cast(AgentMsg::Confirmed {
                node,
                cell,
                offer,
                confirmed,
            });
        });
    }

    /// The answer to this node's confirm of `offer` from `node`'s agent `cell`.
    pub(super) fn confirmed(
        &mut self,
        myself: &ActorRef<AgentMsg>,
        node: &Arc<str>,
        cell: ActorId,
        offer: Key,
        confirmed: bool,
    ) {
        let Some(peer) = self.peers.get_mut(node) else {
            return;
        };
        if peer.cell != cell {
            return;
        }
        peer.confirming = None;
        if !confirmed {
            warn_repeated!(
                self.repeats,
                format!("unconfirmed {node}"),
                node = %node,
                "cluster key ignored: a hello in that node's name offered a key the node did not give"
            );
            if let Some(next) = peer.next_offer.take() {
                self.confirm(myself, node, next);
            }
            return;
        }
        peer.next_offer = None;
        peer.link.set_stamp(offer);
        let (link, given) = (peer.link.clone(), peer.given);
        self.send_advert(&link);
        // Its advertisement, if it came before, was not routed: ask again.
        link.send_hello(given);
    }

    /// Another node (or one in its name) asks whether `offer` is the key
    /// this node gave node `from`: the answer goes back only through the
    /// session the question came on.
    pub(super) fn asked_to_confirm(&self, from: &str, offer: Key, reply: RpcReplyPort<Vec<u8>>) {
        let confirmed = self.peers.get(from).is_some_and(|p| p.given == offer);
        let _ = reply.send(confirmation(confirmed));
    }
}
