//! What a session asks its client on a server's behalf (sampling, elicitation,
//! roots): each ask is a request with an id of the session's own, answered by
//! the client's response or failed when the session ends.

use mcpvisor_protocol::wire::jsonrpc::{ErrorObject, Message, Request, RequestId, error_codes};
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::{Outbound, Session, error};

impl Session {
    /// Whether the client declared the capability a server request needs. A
    /// stateless request's client is asked through the bridge, which checks
    /// it there and answers the client -32021 when it does not.
    /// Whether this session's call waits, parked, for its client's retry.
    pub(crate) fn is_parked(&self) -> bool {
        self.asking
            .lock()
            .as_ref()
            .is_some_and(|(_, parked)| parked.load(std::sync::atomic::Ordering::SeqCst))
    }

    pub(crate) fn offers(&self, method: &str, params: &Value) -> bool {
        let state = self.state.lock();
        state.stateless || state.client.offers_request(method, params)
    }

    /// Sends the client a request on `replies` and waits for its answer (the
    /// caller bounds the wait; a dropped wait forgets the request).
    pub(crate) async fn ask(
        &self,
        key: Option<Arc<str>>,
        method: &str,
        params: Value,
        replies: &Outbound,
    ) -> Result<Value, ErrorObject> {
        let asking = self
            .asking
            .lock()
            .as_ref()
            .map(|(asking, _)| asking.clone());
        if let Some(asking) = asking {
            // A stateless client: the question goes into the call's next round.
            let (answer, told) = oneshot::channel();
            let asked = crate::bridge::Asked {
                key,
                method: method.to_string(),
                params,
                answer,
            };
            if asking.send(asked).await.is_err() {
                return Err(error(
                    error_codes::INTERNAL_ERROR,
                    "the client's call has ended",
                ));
            }
            return told.await.unwrap_or_else(|_| {
                Err(error(
                    error_codes::INTERNAL_ERROR,
                    "the client's request ended before it answered",
                ))
            });
        }
        let id = RequestId::String(format!(
            "mcpvisor-{}",
            self.next_ask
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let (tx, rx) = oneshot::channel();
        {
            // Checked under the same lock `close` clears: no ask outlives the session.
            let mut asks = self.asks.lock();
            if self.requests.is_closed() {
                return Err(error(
                    error_codes::INTERNAL_ERROR,
                    "the client's session has ended",
                ));
            }
            asks.insert(id.clone(), tx);
        }
        let forget = AskGuard {
            session: self,
            id: id.clone(),
        };
        let request = Message::Request(Request::new(id, method, Some(params)));
        if replies.send(request).await.is_err() {
            return Err(error(
                error_codes::INTERNAL_ERROR,
                "the client went away before it could be asked",
            ));
        }
        let answer = rx.await.unwrap_or_else(|_| {
            Err(error(
                error_codes::INTERNAL_ERROR,
                "the client's session ended before it answered",
            ))
        });
        drop(forget);
        answer
    }

    pub(super) fn answered(&self, id: &RequestId, answer: Result<Value, ErrorObject>) {
        match self.asks.lock().remove(id) {
            Some(waiting) => {
                let _ = waiting.send(answer);
            }
            None => tracing::debug!(%id, "a downstream client answered no request of ours"),
        }
    }
}

/// Forgets a request sent to the client when its wait ends, however it ends.
struct AskGuard<'a> {
    session: &'a Session,
    id: RequestId,
}

impl Drop for AskGuard<'_> {
    fn drop(&mut self) {
        self.session.asks.lock().remove(&self.id);
    }
}
