//! A session's URL elicitations (2025-11-25): a server's `-32042` handed on
//! only to a client that takes URL mode, and the completion notices of the
//! elicitations forwarded to this client, which reach it and no other.

use std::sync::Arc;

use mcpvisor_protocol::mcp::url_elicitation;
use mcpvisor_protocol::wire::jsonrpc::ErrorObject;
use serde_json::{Value, json};

use super::Session;
use crate::outcome::{self, Outcome};

/// How many forwarded URL elicitations a session remembers.
const ASKED_URLS: usize = 64;

impl Session {
    /// A server's `-32042`: handed on only to a client that takes URL
    /// elicitation, rebuilt from the elicitations that pass the checks, each
    /// expected to complete in this session. Another client gets a tool error
    /// that says what is missing, without the URLs.
    pub(super) fn url_elicitation_required(
        &self,
        server: &Arc<str>,
        error: ErrorObject,
    ) -> Outcome {
        let takes = self.state.lock().client.elicitation_url;
        match url_elicitation::UrlElicitation::required(&error) {
            Some(Ok(needed)) if takes => {
                let listed: Vec<Value> = needed
                    .iter()
                    .map(|n| {
                        self.expect_completion(server, &n.elicitation_id);
                        json!({"mode": "url", "elicitationId": n.elicitation_id,
                            "url": n.url, "message": n.message})
                    })
                    .collect();
                Err(ErrorObject {
                    code: url_elicitation::URL_ELICITATION_REQUIRED,
                    message: error.message,
                    data: Some(json!({ "elicitations": listed })),
                })
            }
            Some(Ok(_)) => Ok(outcome::tool_error(format!(
                "server `{server}` needs the person to complete a step in a browser first, and this client does not take URL elicitation"
            ))),
            _ => Ok(outcome::tool_error(format!(
                "server `{server}` asked for a browser step that cannot be shown safely"
            ))),
        }
    }

    /// A URL elicitation of `server` goes to this client: its completion will too.
    pub(crate) fn expect_completion(&self, server: &Arc<str>, elicitation_id: &str) {
        let mut state = self.state.lock();
        let key = (server.clone(), elicitation_id.to_string());
        if state.asked_urls.contains(&key) {
            return;
        }
        if state.asked_urls.len() == ASKED_URLS {
            state.asked_urls.pop_front();
        }
        state.asked_urls.push_back(key);
    }

    /// The server says the URL elicitation `elicitation_id` completed: this
    /// client hears it if it was the one asked.
    pub(super) fn completed(&self, server: &Arc<str>, elicitation_id: &str) {
        let mut state = self.state.lock();
        let known = state
            .asked_urls
            .iter()
            .position(|(s, id)| s == server && id == elicitation_id);
        if let Some(i) = known {
            state.asked_urls.remove(i);
            drop(state);
            let params = json!({ "elicitationId": elicitation_id });
            self.tell(url_elicitation::ELICITATION_COMPLETE, params);
        }
    }
}
