//! What the host's events become for this client: `list_changed` for the lists
//! it sees, resource updates it subscribed to, and log messages at its level.

use mcpvisor::HostEvent;
use mcpvisor_protocol::mcp::messages::methods;
use serde_json::json;

use crate::events::level_rank;

use crate::wire;

use super::{Session, extension};

impl Session {
    /// Reacts to one supervisor event; returns which lists may have changed.
    pub(crate) fn on_event(&self, event: &HostEvent) -> wire::Changed {
        let (watching, log_level) = {
            let state = self.state.lock();
            (state.watching, state.log_level)
        };
        // A call's progress goes to the session that made the call, through
        // the call itself; a watcher sees no other session's.
        if watching && !matches!(event, HostEvent::Progress { .. }) {
            let mut described = wire::event_json(event);
            // In a cluster, this node's own events carry its name too.
            if described.get("node").is_none()
                && let Some(node) = self.gateway.host().node_name()
            {
                described["node"] = json!(&*node);
            }
            let params = json!({"text": event.to_string(), "event": described});
            self.tell(extension::EVENT, params);
        }
        // Server logs may carry any session's call data: for trusted clients only.
        if let (HostEvent::ServerLog { server, message }, Some(min)) = (event, log_level)
            && self.ingress.is_trusted()
            && level_rank(&message.level).is_some_and(|l| l >= min)
        {
            let params = json!({"level": message.level, "logger": &**server, "data": message.data});
            self.tell(methods::LOG_MESSAGE, params);
        }
        if let HostEvent::ElicitationComplete {
            server,
            elicitation_id,
        } = event
        {
            self.completed(server, elicitation_id);
        }
        if let HostEvent::ResourceUpdated { server, uri } = event
            && self.subscribed.has(server, uri)
        {
            self.tell(methods::RESOURCES_UPDATED, json!({ "uri": &**uri }));
        }
        wire::changes(event)
    }

    /// Tells the client which lists changed (one notification per list).
    pub(crate) fn lists_changed(&self, changed: wire::Changed) {
        if !self.state.lock().initialized {
            return;
        }
        let notices = [
            (changed.tools, methods::TOOLS_LIST_CHANGED),
            (changed.resources, methods::RESOURCES_LIST_CHANGED),
            (changed.prompts, methods::PROMPTS_LIST_CHANGED),
        ];
        for (_, method) in notices.iter().filter(|(yes, _)| *yes) {
            self.tell(method, json!({}));
        }
    }
}
