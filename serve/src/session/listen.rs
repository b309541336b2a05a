//! `subscriptions/listen` (2026-07-28): the stateless revision's one
//! long-lived request, in place of the GET stream and `resources/subscribe`.
//! The session of the request acknowledges what it will send, then is told
//! the supervisor's events like any session, but only the notification types
//! the client asked for, each tagged with the request's id, on the request's
//! own stream, until the client goes away or the gateway stops.

use mcpvisor_protocol::mcp::subscriptions::{ACKNOWLEDGED, ListenFilter, SUBSCRIPTION_ID_KEY};
use mcpvisor_protocol::wire::jsonrpc::{RequestId, error_codes};
use serde_json::{Map, Value, json};

use crate::outcome::Outcome;
use crate::subscriptions;

use super::{Outbound, Session, error, notification};

/// The most resources one listen stream follows (more are not acknowledged).
const MAX_URIS: usize = 64;

/// What a listening session was asked for.
pub(crate) struct Listening {
    filter: ListenFilter,
    /// The listen request's id, as JSON: every message of the stream carries it.
    id: Value,
}

impl Session {
    /// Answers `subscriptions/listen`: the acknowledgement first, then the
    /// asked-for notifications; the answer itself only when the gateway stops.
    pub(super) async fn listen(
        self: &std::sync::Arc<Self>,
        params: Option<&Value>,
        id: &RequestId,
        replies: &Outbound,
    ) -> Outcome {
        let asked = params
            .and_then(|p| p.get("notifications"))
            .filter(|n| n.is_object())
            .ok_or_else(|| {
                error(
                    error_codes::INVALID_PARAMS,
                    "`notifications` must be an object saying what to listen for",
                )
            })?;
        let Ok(_open) = self.gateway.listens.clone().try_acquire_owned() else {
            return Err(error(
                -32000,
                format!(
                    "{} listen streams are open, the limit; close one first",
                    self.gateway.options().max_listens
                ),
            ));
        };
        let wrapped = json!({ "notifications": asked });
        let mut filter = ListenFilter::acknowledged(Some(&wrapped)).unwrap_or_default();
        let host = self.gateway.host();
        // Only what could be subscribed to is acknowledged (and sent).
        let mut honoured = Vec::with_capacity(filter.uris.len());
        for uri in filter.uris.drain(..).take(MAX_URIS) {
            let one = json!({ "uri": &uri });
            let all = &self.gateway.subscribers;
            if subscriptions::subscribe(host, all, &self.subscribed, Some(&one))
                .await
                .is_ok()
            {
                honoured.push(uri);
            }
        }
        filter.uris = honoured;
        let id = serde_json::to_value(id).unwrap_or(Value::Null);
        // Events from here on; nothing is sent before the acknowledgement.
        let events = host.events();
        let mut ack = filter.params();
        tag(&mut ack, &id);
        self.state.lock().listening = Some(Listening {
            filter,
            id: id.clone(),
        });
        if replies.send(notification(ACKNOWLEDGED, ack)).await.is_err() {
            return Err(error(error_codes::INTERNAL_ERROR, "the listener went away"));
        }
        self.watch(events, self.gateway.options().coalesce);
        self.gateway.stopped().await;
        let mut closed = json!({});
        tag(&mut closed, &id);
        Ok(closed)
    }

    /// Whether this session sends `method`'s notifications: every session
    /// does but a listening one, which sends only what it was asked for.
    pub(super) fn listens_for(&self, method: &str) -> bool {
        use mcpvisor_protocol::mcp::messages::methods;
        let state = self.state.lock();
        let Some(listening) = &state.listening else {
            return !state.stateless;
        };
        let filter = &listening.filter;
        match method {
            methods::TOOLS_LIST_CHANGED => filter.tools,
            methods::PROMPTS_LIST_CHANGED => filter.prompts,
            methods::RESOURCES_LIST_CHANGED => filter.resources,
            // Only for the URIs subscribed to, which the caller checks.
            methods::RESOURCES_UPDATED => true,
            _ => false,
        }
    }

    /// Sends an unsolicited notification, tagged with the listen request's
    /// id when this session is one; dropped when the reader is far behind.
    pub(super) fn tell(&self, method: &str, mut params: Value) {
        if !self.listens_for(method) {
            return;
        }
        if let Some(listening) = &self.state.lock().listening {
            tag(&mut params, &listening.id);
        }
        let _ = self.notices.try_send(notification(method, params));
    }
}

/// Puts the subscription id into `params._meta`.
fn tag(params: &mut Value, id: &Value) {
    if let Value::Object(map) = params {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SUBSCRIPTION_ID_KEY.into(), id.clone());
        }
    }
}
