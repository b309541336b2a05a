//! What the host's events become for this client: `list_changed` for the lists
//! it sees, resource updates it subscribed to, and log messages at its level.

use std::sync::Arc;

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
        // Server logs may carry any session's call data: for trusted clients
        // only, unless they come while this session alone calls the server
        // (then they go on its call's stream; see `Session::relaying_logs`).
        if let (HostEvent::ServerLog { server, message }, Some(min)) = (event, log_level)
            && self.ingress.is_trusted()
            && level_rank(&message.level).is_some_and(|l| l >= min)
            && !self.calls_alone(server)
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

    /// Whether this session is the one calling `server` now.
    pub(super) fn calls_alone(&self, server: &str) -> bool {
        let Some(callers) = self.gateway.callers() else {
            return false;
        };
        callers
            .calling(server)
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s), self))
    }

    /// Whether this client asked for any log messages.
    pub(super) fn asked_for_logs(&self) -> bool {
        self.state.lock().log_level.is_some()
    }

    /// Whether this client asked for log messages at `level` (a session's
    /// `logging/setLevel`, a stateless request's `logLevel`).
    pub(super) fn wants_log(&self, level: &str) -> bool {
        let min = self.state.lock().log_level;
        min.is_some_and(|min| level_rank(level).is_some_and(|l| l >= min))
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
