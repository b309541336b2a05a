//! The transport child actor: owns the server's process and writes to it.
//!
//! It is linked under its server actor. Reading happens in the transport's own
//! tasks, which hand events to the server actor through [`InboundSink`]; writing
//! happens here, one message at a time, so a server that stops reading blocks
//! only this actor. Stopping the actor tears the process group down.

use std::sync::{Arc, OnceLock};

use mcpvisor_transports::{StdioTransport, TransportEvent, TransportSink};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::Semaphore;

use crate::server::ServerMsg;

pub(crate) enum TransportMsg {
    /// One serialised JSON-RPC message, without its newline.
    Send(Vec<u8>),
}

pub(crate) struct TransportActor;

impl Actor for TransportActor {
    type Msg = TransportMsg;
    type State = StdioTransport;
    type Arguments = StdioTransport;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        transport: StdioTransport,
    ) -> Result<StdioTransport, ActorProcessingErr> {
        Ok(transport)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: TransportMsg,
        transport: &mut StdioTransport,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            TransportMsg::Send(line) => {
                // A failed write means the process is going away; its reader reports
                // the exit with its status, which says more than the write error.
                if let Err(e) = transport.send(line).await {
                    tracing::debug!(pid = transport.pid(), "write to server failed: {e}");
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        transport: &mut StdioTransport,
    ) -> Result<(), ActorProcessingErr> {
        transport.shutdown().await;
        Ok(())
    }
}

/// Hands transport events to the server actor, at most `inbound_queue` at a time.
///
/// Each event carries a semaphore permit that is released when the server actor
/// has handled it, so a flooding server waits on its own pipe instead of filling
/// the actor's (unbounded) mailbox.
pub(crate) struct InboundSink {
    pub(crate) server: ActorRef<ServerMsg>,
    pub(crate) gate: Arc<Semaphore>,
    /// Set once the transport actor exists; stopped if the server actor is gone,
    /// so a server actor that died without its `post_stop` leaves no process behind.
    pub(crate) transport: OnceLock<ActorRef<TransportMsg>>,
}

impl TransportSink for InboundSink {
    async fn deliver(&self, event: TransportEvent) -> bool {
        let Ok(permit) = self.gate.clone().acquire_owned().await else {
            return false;
        };
        if self.server.cast(ServerMsg::Inbound(event, permit)).is_ok() {
            return true;
        }
        if let Some(transport) = self.transport.get() {
            transport.stop(Some("server actor is gone".into()));
        }
        false
    }
}
