//! How a transport's reading tasks reach their server: answers to calls go
//! straight to the call lane, everything else to the server actor's mailbox,
//! never more at a time than the actor has let through.

use std::sync::{Arc, OnceLock};

use mcpvisor_protocol::Incoming;
use mcpvisor_transports::{TransportEvent, TransportSink};
use ractor::ActorRef;
use tokio::sync::Semaphore;

use crate::error::CallError;
use crate::lane::CallLane;
use crate::messages::{ServerMsg, TransportMsg};

/// Hands transport events to the server actor, at most `inbound_queue` at a time.
///
/// Each event carries a semaphore permit that is released when the server actor
/// has handled it, so a flooding server waits on its own pipe instead of filling
/// the actor's (unbounded) mailbox.
pub(crate) struct InboundSink {
    pub(crate) server: ActorRef<ServerMsg>,
    pub(crate) gate: Arc<Semaphore>,
    /// The gate's size: all permits free means nothing waits in the actor's mailbox.
    pub(crate) capacity: usize,
    /// Set once the lane exists; answers to calls complete there directly.
    pub(crate) lane: OnceLock<Arc<CallLane>>,
    /// Set once the transport actor exists; stopped if the server actor is gone,
    /// so a server actor that died without its `post_stop` leaves no process behind.
    pub(crate) transport: OnceLock<ActorRef<TransportMsg>>,
}

impl TransportSink for InboundSink {
    async fn deliver(&self, event: TransportEvent) -> bool {
        let event = match (event, self.lane.get()) {
            // Only with nothing queued for the actor: an answer must not overtake the
            // notifications the server sent before it.
            (TransportEvent::Message(Incoming::Single(msg)), Some(lane))
                if self.gate.available_permits() == self.capacity =>
            {
                match lane.complete(msg) {
                    None => return true,
                    Some(msg) => TransportEvent::Message(Incoming::Single(msg)),
                }
            }
            (event, _) => event,
        };
        let Ok(permit) = self.gate.clone().acquire_owned().await else {
            return false;
        };
        if self.server.cast(ServerMsg::Inbound(event, permit)).is_ok() {
            return true;
        }
        if let Some(transport) = self.transport.get() {
            transport.stop(Some("server actor is gone".into()));
        }
        // An actor that ended without its cleanup (a panic) did not close its lane.
        if let Some(lane) = self.lane.get() {
            lane.close(&CallError::ConnectionClosed {
                server: lane.server().clone(),
                reason: Arc::from("the connection's actor is gone"),
            });
        }
        false
    }
}
