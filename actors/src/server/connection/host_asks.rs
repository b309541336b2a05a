//! What a connection asks of its host and answers for it: servers' requests
//! (sampling, elicitation, roots), and what a new connection is asked again
//! (the log level, subscriptions).

use std::sync::Arc;

use mcpvisor_protocol::mcp::messages::{ClientCapabilities, methods};
use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, ErrorResponse, Response, error_codes};
use mcpvisor_protocol::{Message, RequestId};
use ractor::ActorRef;
use serde_json::Value;

use super::{Connection, Pending};
use crate::error::CallError;
use crate::host_requests::{self, HostAsk};
use crate::messages::ServerMsg;
use crate::server_lists::ServerLink;

impl Connection {
    /// Hands a server's request to the host's handler on a task of its own,
    /// bounded in number and time; its answer comes back as `HostAnswered`.
    pub(super) fn ask_host(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: RequestId,
        method: String,
        params: Value,
    ) {
        if method == methods::ROOTS_LIST {
            // The roots are the host's, kept here: no handler is involved.
            let roots = self
                .ctx
                .roots
                .read()
                .clone()
                .unwrap_or_else(|| Arc::from([]));
            let result = serde_json::json!({ "roots": &*roots });
            self.answer_host_request(id, Ok(result));
            return;
        }
        let options = &self.ctx.options;
        let admitted = match &options.client_handler {
            None => Err(host_requests::error(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            )),
            Some(_) if self.host_requests >= options.max_host_requests => {
                Err(host_requests::error(
                    -32000,
                    format!(
                        "the host is answering {} requests of this server; try again later",
                        self.host_requests
                    ),
                ))
            }
            Some(handler) => {
                // What this server was told, at the revision it speaks: no more.
                let revision = self
                    .session
                    .revision()
                    .unwrap_or(mcpvisor_protocol::mcp::revision::Revision::V2025_03_26);
                let declared = ClientCapabilities::declared_by(
                    Some(&handler.0.capabilities().to_value_at(revision)),
                    revision,
                );
                HostAsk::read(self.name.clone(), &method, params, declared)
                    .map(|ask| (handler.clone(), ask))
            }
        };
        let (handler, ask) = match admitted {
            Ok(admitted) => admitted,
            Err(error) => {
                self.answer_host_request(id, Err(error));
                return;
            }
        };
        if let HostAsk::Url(asked) = &ask {
            self.lane
                .expect_completion(asked.elicitation.elicitation_id.clone());
        }
        self.host_requests += 1;
        let timeout = options.host_request_timeout;
        let me = myself.clone();
        tokio::spawn(async move {
            // A handler that panics or never returns still gets the server an answer.
            let answer = ask.answer_within(&*handler.0, timeout).await;
            let _ = me.cast(ServerMsg::HostAnswered { id, answer });
        });
    }

    /// Sends the host's answer to a server's request.
    pub(crate) fn answer_host_request(
        &mut self,
        id: RequestId,
        answer: Result<Value, ErrorObject>,
    ) {
        let message = match answer {
            Ok(result) => Message::Response(Response { id, result }),
            Err(error) => Message::Error(ErrorResponse {
                id: Some(id),
                error,
            }),
        };
        self.send(&message);
    }

    /// The host's roots changed: tell the server (once it is initialized).
    pub(crate) fn roots_changed(&mut self) {
        // A stateless revision has no such notification: each request that
        // needs roots asks for them.
        if self.session.is_ready() && !self.stopping && self.session.request_meta().is_none() {
            let note = Message::Notification(mcpvisor_protocol::wire::jsonrpc::Notification::new(
                methods::ROOTS_LIST_CHANGED,
                None,
            ));
            self.send(&note);
        }
    }

    /// A request handed to the host has its answer.
    pub(crate) fn host_answered(&mut self, id: RequestId, answer: Result<Value, ErrorObject>) {
        self.host_requests = self.host_requests.saturating_sub(1);
        if !self.stopping {
            self.answer_host_request(id, answer);
        }
    }

    /// Asks a new connection what the host asked of the server before: the
    /// log level ahead of any call, the subscriptions one at a time on the
    /// lane (with the calls' deadline), so however many there are, at most one
    /// is waiting for its answer.
    pub(super) fn renew(&mut self, link: &Arc<ServerLink>) {
        // MCP 2026-07-28 has neither a log level to set nor subscriptions to renew.
        if self.session.request_meta().is_some() {
            return;
        }
        if self.offers.logging
            && let Some(level) = self.ctx.restart_replay.level(&self.name)
            && let Ok((_, msg)) = self.session.request(
                methods::SET_LOG_LEVEL,
                Some(level.params()),
                Pending::Renewal {
                    what: "the log level",
                },
            )
        {
            self.send(&msg);
        }
        let uris = self.ctx.restart_replay.subscriptions(&self.name);
        if !self.offers.subscribe || uris.is_empty() {
            return;
        }
        let link = link.clone();
        tokio::spawn(async move {
            for uri in uris {
                let params = mcpvisor_protocol::mcp::resources::uri_params(&uri);
                match link.ask(methods::RESOURCES_SUBSCRIBE, Some(params)).await {
                    Ok(_) => {}
                    Err(e @ (CallError::Rpc { .. } | CallError::InvalidResult { .. })) => {
                        tracing::warn!(server = %link.name, "renewing a subscription failed: {e}");
                    }
                    // The connection is gone or going: the next one renews them all.
                    Err(_) => return,
                }
            }
        });
    }
}
