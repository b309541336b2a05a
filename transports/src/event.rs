//! What a transport hands to its owner.

use std::future::Future;

use mcpvisor_protocol::mcp::route_headers::RouteHeaders;
use mcpvisor_protocol::{Incoming, MessageError, RequestId};

use crate::error::TransportError;

/// One thing that arrived on a transport.
#[derive(Debug)]
pub enum TransportEvent {
    /// A message or batch from the server.
    Message(Incoming),
    /// A frame that is not a JSON-RPC message; the connection goes on.
    Malformed(MessageError),
    /// An answer to request `id` that could not be read: that request fails now
    /// (not at its timeout); the connection goes on.
    UnreadableAnswer {
        /// The request it answers.
        id: RequestId,
        /// Why it could not be read.
        error: MessageError,
    },
    /// One request failed at the transport level (HTTP status, oversize answer);
    /// the connection goes on.
    RequestFailed {
        /// The request that failed.
        id: RequestId,
        /// Why.
        error: TransportError,
    },
    /// The HTTP session expired and a new one was initialized: what the server
    /// offers may have changed.
    SessionRenewed,
    /// The transport ended; nothing follows.
    Closed(TransportError),
}

impl TransportEvent {
    /// The event for a frame that did not parse: an unreadable answer when its
    /// id can still be read, else a malformed frame.
    pub fn unparsed(frame: &[u8], error: MessageError) -> TransportEvent {
        match mcpvisor_protocol::wire::answer_probe::unreadable_answer_id(frame) {
            Some(id) => TransportEvent::UnreadableAnswer { id, error },
            None => TransportEvent::Malformed(error),
        }
    }
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

/// One message on its way to the server, with what the transport must know of it.
#[derive(Debug, Clone)]
pub struct Outbound {
    /// The serialised message, without a trailing newline.
    pub line: Vec<u8>,
    /// The request id when the message is a request (answers are expected).
    pub id: Option<RequestId>,
    /// True for `initialize`: HTTP keeps it to renew an expired session.
    pub initialize: bool,
    /// True for a listing the connection makes of itself (`tools/list` and the
    /// like): over HTTP it does not wait for the notification stream to open.
    pub listing: bool,
    /// At a stateless revision (2026-07-28): the headers Streamable HTTP
    /// mirrors from the body, computed by whoever built it, so the transport
    /// never reads a body again. Such a message goes out with no session.
    pub route: Option<Box<RouteHeaders>>,
}
