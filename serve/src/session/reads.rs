//! Resources, prompts and completion through the session, and the two of
//! them whose server may ask mid-request (`resources/read`, `prompts/get`):
//! made for this session's client, whose answers a 2026-07-28 server is
//! told of and whose questions reach it (through the bridge when it is a
//! stateless client), as a `tools/call`'s do.

use std::sync::Arc;

use mcpvisor_protocol::mcp::messages::methods;
use serde_json::Value;

use crate::outcome::Outcome;
use crate::resources_prompts::{self, MadeFor};

use super::{Outbound, Session};

impl Session {
    /// Answers one of the methods [`resources_prompts::handles`].
    pub(super) async fn resources_prompts(
        &self,
        method: &str,
        params: Option<Value>,
        replies: &Outbound,
    ) -> Outcome {
        let asking = match method {
            methods::RESOURCES_READ => Some(methods::RESOURCES_READ),
            methods::PROMPTS_GET => Some(methods::PROMPTS_GET),
            _ => None,
        };
        let Some(method) = asking else {
            return self.read(method, params.as_ref(), None).await;
        };
        let (stateless, client) = {
            let state = self.state.lock();
            (state.stateless, state.client)
        };
        match self.me.upgrade().filter(|_| stateless) {
            Some(me) => {
                let replies = replies.clone();
                self.bridged(me, method, params, client, move |me, params| async move {
                    me.read(method, params.as_ref(), Some(&replies)).await
                })
                .await
            }
            None => self.read(method, params.as_ref(), Some(replies)).await,
        }
    }

    /// `method` for this session's client: while it runs, its server's
    /// questions go to `replies` (when given).
    async fn read(
        &self,
        method: &str,
        params: Option<&Value>,
        replies: Option<&Outbound>,
    ) -> Outcome {
        let enter = |server: Arc<str>| -> Option<Box<dyn Send>> {
            let callers = self.gateway.callers()?;
            let replies = replies?.clone();
            Some(Box::new(callers.enter(server, self.me.clone(), replies)))
        };
        let made_for = MadeFor {
            answers: self.state.lock().client,
            enter: &enter,
        };
        resources_prompts::answer_for(
            self.gateway.host(),
            self.naming(),
            self.gateway.options().page_size,
            self.revision(),
            method,
            params,
            replies.map(|_| &made_for),
        )
        .await
    }
}
