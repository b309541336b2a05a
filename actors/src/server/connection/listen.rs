//! The notification stream at a stateless revision (2026-07-28): one
//! `subscriptions/listen` request in flight, asking for the list changes the
//! server offers and the updates of the resources the host subscribed to.
//! Best effort: a server without it never breaks a call. Opened when the
//! connection is ready (so again after every restart), and again with a new
//! filter when the host's subscriptions change.

use mcpvisor_protocol::RequestId;
use mcpvisor_protocol::mcp::messages::methods;
use mcpvisor_protocol::mcp::subscriptions::{LISTEN, ListenFilter};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, Message, Notification};
use serde_json::{Value, json};

use super::{Connection, Pending};
use crate::options::TransportSpec;

impl Connection {
    /// Opens the stream (or opens it again with what the host wants now).
    pub(crate) fn open_listen(&mut self) {
        if self.stopping || !self.ready || self.session.request_meta().is_none() {
            return;
        }
        let uris = if self.offers.subscribe {
            self.ctx.restart_replay.subscriptions(&self.name)
        } else {
            Vec::new()
        };
        let filter = ListenFilter {
            tools: self.offers.tools,
            prompts: self.offers.prompts,
            resources: self.offers.resources,
            uris,
        };
        if let Some(old) = self.listen.take() {
            let _ = self.session.forget(&old);
            self.close_listen(old);
        }
        if filter.is_empty() {
            return;
        }
        if let Ok((id, msg)) = self
            .session
            .request(LISTEN, Some(filter.params()), Pending::Listen)
        {
            self.listen = Some(id);
            self.send(&msg);
        }
    }

    /// Ends the stream `id`: over stdio by telling the server; over HTTP the
    /// transport closes it when the next one opens (or at shutdown).
    fn close_listen(&mut self, id: RequestId) {
        if matches!(self.spec.transport, TransportSpec::Http(_)) {
            return;
        }
        let note = Notification::new(
            methods::CANCELLED,
            Some(json!({"requestId": id, "reason": "listening anew"})),
        );
        self.send(&Message::Notification(note));
    }

    /// The server answered the listen: it ended the stream itself, or
    /// refused it. Either way it is not asked again on this connection.
    pub(super) fn listen_answered(&mut self, outcome: Result<Value, ErrorObject>) {
        self.listen = None;
        match outcome {
            Ok(_) => tracing::debug!(server = %self.name, "the server ended subscriptions/listen"),
            Err(e) => {
                tracing::debug!(server = %self.name, code = e.code, "subscriptions/listen refused: {}", e.message)
            }
        }
    }
}
