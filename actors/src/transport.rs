//! The transport child actor: owns the server's connection and writes to it.
//!
//! It is linked under its server actor. Reading happens in the transport's own
//! tasks, which hand events to the server actor through
//! [`InboundSink`](crate::inbound::InboundSink); writing
//! happens here, one message at a time (HTTP requests are handed to their own
//! tasks), so a server that stops reading blocks only this actor. Stopping the
//! actor tears the connection down: the process group for stdio, the GET stream
//! and the session (DELETE) for HTTP.

use mcpvisor_transports::{Faulty, GroupSignal, HttpTransport, Outbound, StdioTransport};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::inbound::InboundSink;
use crate::messages::{TransportFault, TransportMsg};

/// The connection a transport actor owns.
pub(crate) enum Transport {
    Stdio(StdioTransport),
    Http(HttpTransport<Faulty<InboundSink>>),
}

impl Transport {
    async fn send(&mut self, out: Outbound) {
        let result = match self {
            Transport::Stdio(t) => t.send(out.line),
            Transport::Http(t) => t.send(out).await,
        };
        // A failed stdio write means the process is going away; its reader reports
        // the exit with its status, which says more. A failed HTTP notification
        // only loses that notification; requests report their own failures.
        if let Err(e) = result {
            tracing::debug!("send to server failed: {e}");
        }
    }

    /// Applies a fault; `Err` says why it could not be.
    async fn fault(&mut self, fault: TransportFault) -> Result<(), String> {
        let signal = match fault {
            TransportFault::Kill => GroupSignal::Kill,
            TransportFault::Stop => GroupSignal::Stop,
            TransportFault::Continue => GroupSignal::Continue,
            TransportFault::CloseStdin | TransportFault::Reset => {
                return match (self, fault) {
                    (Transport::Stdio(t), TransportFault::CloseStdin) => {
                        t.close_stdin();
                        Ok(())
                    }
                    (Transport::Http(t), TransportFault::Reset) => {
                        t.reset_connections().await;
                        Ok(())
                    }
                    _ => Err("not applicable to this transport".into()),
                };
            }
        };
        match self {
            Transport::Stdio(t) => t.signal_group(signal).map_err(|e| e.to_string()),
            Transport::Http(_) => Err("an HTTP server has no process here".into()),
        }
    }

    async fn shutdown(&mut self) {
        match self {
            Transport::Stdio(t) => {
                t.shutdown().await;
            }
            Transport::Http(t) => t.shutdown().await,
        }
    }
}

pub(crate) struct TransportActor {
    /// Counted in [`Vitals::actors`](crate::Vitals) until the actor's task drops it.
    _live: crate::vitals::Live,
}

impl TransportActor {
    pub(crate) fn new() -> Self {
        TransportActor {
            _live: crate::vitals::Live::actor(),
        }
    }
}

impl Actor for TransportActor {
    type Msg = TransportMsg;
    type State = Transport;
    type Arguments = Transport;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        transport: Transport,
    ) -> Result<Transport, ActorProcessingErr> {
        Ok(transport)
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        msg: TransportMsg,
        transport: &mut Transport,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            // Boxed: an HTTP send is a few KiB of future, and ractor keeps room
            // for the largest handler in every actor's loop for its whole life,
            // idle or not. One allocation per send costs less than that per connection.
            TransportMsg::Send(out) => Box::pin(transport.send(out)).await,
            TransportMsg::Abandon(id) => {
                if let Transport::Http(t) = transport {
                    t.abandon(&id);
                }
            }
            TransportMsg::Protocol(revision) => {
                if let Transport::Http(t) = transport {
                    t.set_protocol(revision);
                }
            }
            TransportMsg::Ready => {
                if let Transport::Http(t) = transport {
                    t.start_notifications().await;
                }
            }
            TransportMsg::Fault(fault, reply) => {
                let result = Box::pin(transport.fault(fault)).await;
                if let Some(reply) = reply {
                    let _ = reply.send(result);
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<Self::Msg>,
        transport: &mut Transport,
    ) -> Result<(), ActorProcessingErr> {
        transport.shutdown().await;
        Ok(())
    }
}
