//! What a transport hands to its owner.

use std::future::Future;

use mcpvisor_protocol::{Incoming, MessageError};

use crate::error::TransportError;

/// One thing that arrived on a transport.
#[derive(Debug)]
pub enum TransportEvent {
    /// A message or batch from the server.
    Message(Incoming),
    /// A frame that is not a JSON-RPC message; the connection goes on.
    Malformed(MessageError),
    /// The transport ended; nothing follows.
    Closed(TransportError),
}

/// Receives a transport's events.
///
/// `deliver` may wait: that is how a slow owner pushes back on a flooding
/// server (the reader stops reading, the pipe fills, the server blocks).
/// Returning `false` means the owner is gone and the reader stops.
pub trait TransportSink: Send + Sync + 'static {
    /// Hands over one event.
    fn deliver(&self, event: TransportEvent) -> impl Future<Output = bool> + Send;
}
