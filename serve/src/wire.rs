//! The JSON shapes of mcpvisor's own methods (`mcpvisor/servers`,
//! `mcpvisor/watch`): server statuses and events, as the CLI prints them with
//! `--json` too.

use mcpvisor::{HostEvent, ReloadReport, ServerState, ServerStatus};
use serde_json::{Value, json};

/// A server's state as one word (`starting`, `ready`, `restarting`, `failed`,
/// `login_required`, `stopped`).
pub fn state_word(state: &ServerState) -> &'static str {
    match state {
        ServerState::Starting { .. } => "starting",
        ServerState::Ready => "ready",
        ServerState::Restarting { .. } => "restarting",
        ServerState::Failed { .. } => "failed",
        ServerState::LoginRequired { .. } => "login_required",
        _ => "stopped",
    }
}

/// A server's state for a person: the word and, when down, why.
pub fn state_text(state: &ServerState) -> String {
    match state {
        ServerState::Starting { attempt } => format!("starting (attempt {attempt})"),
        ServerState::Ready => "ready".into(),
        ServerState::Restarting {
            attempt,
            backoff,
            reason,
        } => format!(
            "restarting (attempt {attempt}, in {}): {reason}",
            mcpvisor_protocol::human::duration(*backoff)
        ),
        ServerState::Failed { reason } => format!("failed: {reason}"),
        ServerState::LoginRequired { reason } => format!("login required: {reason}"),
        _ => "stopped".into(),
    }
}

/// When the supervisor next tries a server, for a person (`in 25 s`).
pub fn next_try_text(s: &ServerStatus) -> Option<String> {
    let at = s.next_try?;
    let left = at
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_default();
    Some(format!("in {}", mcpvisor_protocol::human::duration(left)))
}

/// One server's status, with the tools it listed that have no route
/// (`routes`: the host's current table).
pub fn status_json(s: &ServerStatus, routes: &mcpvisor::routes::RouteTable) -> Value {
    let refused = routes.refused(&s.name).map(|r| {
        json!({
            "total": r.total,
            "first": r.first.iter().map(|f| json!({"tool": f.tool, "reason": f.reason})).collect::<Vec<_>>(),
        })
    });
    let mut detail = state_text(&s.state);
    if let (ServerState::Failed { .. }, Some(next)) = (&s.state, next_try_text(s)) {
        detail.push_str(&format!("; next try {next}"));
    }
    json!({
        "name": &*s.name,
        "state": state_word(&s.state),
        "detail": detail,
        "nextTryMs": s.next_try.map(|at| at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default()
            .as_millis() as u64),
        "refused": refused,
        "pid": s.pid,
        "tools": s.tools,
        "restarts": s.restarts,
        "serverInfo": s.initialize.as_ref().map(|i| json!({
            "name": i.server_info.name, "version": i.server_info.version
        })),
        "protocol": s.initialize.as_ref().map(|i| i.protocol_version.as_str()),
    })
}

/// Every server this host routes to: its own (with its node name, once it
/// joined a cluster), then every other node's, as that node advertised it.
pub fn cluster_statuses(host: &mcpvisor::Host) -> Vec<Value> {
    let local = host.node_name();
    let routes = host.routes();
    let mut all: Vec<Value> = host
        .servers()
        .iter()
        .map(|s| {
            let mut status = status_json(s, &routes);
            if let Some(node) = &local {
                status["node"] = json!(&**node);
            }
            status
        })
        .collect();
    for node in host.nodes() {
        for s in &node.servers {
            all.push(json!({
                "name": &*s.name,
                "node": &*node.node,
                "remote": true,
                "state": &*s.state,
                "detail": match &s.reason {
                    Some(reason) => format!("{}: {reason}", s.state),
                    None => s.state.to_string(),
                },
                "tools": s.tools.len(),
            }));
        }
    }
    all
}

/// What a reload did.
pub fn reload_json(r: &ReloadReport) -> Value {
    let names = |v: &[std::sync::Arc<str>]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    json!({
        "added": names(&r.added),
        "removed": names(&r.removed),
        "restarted": names(&r.restarted),
        "unchanged": names(&r.unchanged),
    })
}

/// One event.
pub fn event_json(e: &HostEvent) -> Value {
    match e {
        HostEvent::ServerStarting { server, attempt } => {
            json!({"event": "server_starting", "server": &**server, "attempt": attempt})
        }
        HostEvent::ServerReady {
            server,
            pid,
            tools,
            protocol,
        } => json!({
            "event": "server_ready", "server": &**server, "pid": pid, "tools": tools,
            "protocol": protocol.as_deref()
        }),
        HostEvent::ServerRestarting {
            server,
            attempt,
            backoff,
            reason,
        } => json!({
            "event": "server_restarting", "server": &**server, "attempt": attempt,
            "backoff_ms": backoff.as_millis() as u64, "reason": reason.to_string()
        }),
        HostEvent::ServerFailed { server, reason } => {
            json!({"event": "server_failed", "server": &**server, "reason": reason.to_string()})
        }
        HostEvent::ServerStopped { server } => {
            json!({"event": "server_stopped", "server": &**server})
        }
        HostEvent::FaultInjected { server, fault } => json!({
            "event": "fault_injected", "server": &**server, "fault": fault.to_string()
        }),
        HostEvent::ToolsChanged { server, tools } => json!({
            "event": "tools_changed", "server": &**server,
            "tools": tools.iter().map(|t| t.as_str()).collect::<Vec<_>>()
        }),
        HostEvent::RouteConflict {
            name,
            servers,
            nodes,
        } => json!({
            "event": "route_conflict", "name": name.as_str(),
            "servers": servers.iter().map(|s| &**s).collect::<Vec<_>>(),
            "nodes": nodes.iter().map(|s| &**s).collect::<Vec<_>>()
        }),
        HostEvent::RouteRejected {
            server,
            tool,
            reason,
        } => {
            json!({"event": "route_rejected", "server": &**server, "tool": tool, "reason": reason})
        }
        HostEvent::Progress { server, progress } => json!({
            "event": "progress", "server": &**server, "progress": progress.progress,
            "total": progress.total, "message": progress.message
        }),
        HostEvent::ServerLog { server, message } => json!({
            "event": "server_log", "server": &**server, "level": message.level,
            "logger": message.logger, "data": message.data
        }),
        HostEvent::SessionRenewed { server } => {
            json!({"event": "session_renewed", "server": &**server})
        }
        HostEvent::LoginRequired { server, reason } => {
            json!({"event": "login_required", "server": &**server, "reason": reason.to_string()})
        }
        HostEvent::ResourcesChanged { server } => {
            json!({"event": "resources_changed", "server": &**server})
        }
        HostEvent::ResourceUpdated { server, uri } => {
            json!({"event": "resource_updated", "server": &**server, "uri": &**uri})
        }
        HostEvent::PromptsChanged { server } => {
            json!({"event": "prompts_changed", "server": &**server})
        }
        HostEvent::ElicitationComplete {
            server,
            elicitation_id,
        } => json!({"event": "elicitation_complete", "server": &**server,
            "elicitation_id": &**elicitation_id}),
        HostEvent::EventsLost { count } => json!({"event": "events_lost", "count": count}),
        HostEvent::RegistryRestarted { reason } => {
            json!({"event": "registry_restarted", "reason": reason})
        }
        HostEvent::NodeJoined { node } => json!({"event": "node_joined", "node": &**node}),
        HostEvent::NodeLost { node, reason } => {
            json!({"event": "node_lost", "node": &**node, "reason": reason})
        }
        HostEvent::Remote {
            node,
            kind,
            server,
            text,
        } => json!({"event": &**kind, "node": &**node,
            "server": server.as_deref(), "text": text}),
        other => json!({"event": "other", "text": other.to_string()}),
    }
}

/// Which advertised lists an event may change (each warrants its
/// `notifications/…/list_changed`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Changed {
    pub(crate) tools: bool,
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

impl Changed {
    pub(crate) fn any(self) -> bool {
        self.tools || self.resources || self.prompts
    }

    pub(crate) fn add(&mut self, other: Changed) {
        self.tools |= other.tools;
        self.resources |= other.resources;
        self.prompts |= other.prompts;
    }
}

/// The lists `e` may change: a server coming or going changes all three.
pub(crate) fn changes(e: &HostEvent) -> Changed {
    let lifecycle = matches!(
        e,
        HostEvent::ServerReady { .. }
            | HostEvent::ServerStopped { .. }
            | HostEvent::ServerRestarting { .. }
            | HostEvent::ServerFailed { .. }
            | HostEvent::LoginRequired { .. }
            | HostEvent::RegistryRestarted { .. }
    );
    Changed {
        tools: changes_routes(e),
        resources: lifecycle || matches!(e, HostEvent::ResourcesChanged { .. }),
        prompts: lifecycle || matches!(e, HostEvent::PromptsChanged { .. }),
    }
}

/// Whether an event can change the advertised tool set.
fn changes_routes(e: &HostEvent) -> bool {
    !matches!(
        e,
        // Other nodes' routes change through the registry, which says so
        // with `ToolsChanged`.
        HostEvent::NodeJoined { .. }
            | HostEvent::NodeLost { .. }
            | HostEvent::Remote { .. }
            | HostEvent::ServerStarting { .. }
            | HostEvent::Progress { .. }
            | HostEvent::ServerLog { .. }
            | HostEvent::RouteRejected { .. }
            | HostEvent::SessionRenewed { .. }
            | HostEvent::ResourcesChanged { .. }
            | HostEvent::ResourceUpdated { .. }
            | HostEvent::PromptsChanged { .. }
            // The fault's effects (a restart) come as their own events.
            | HostEvent::FaultInjected { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_changes_no_list_by_itself() {
        let event = HostEvent::FaultInjected {
            server: "demo".into(),
            fault: mcpvisor::Fault::Kill,
        };
        assert!(!changes(&event).any());
        assert_eq!(event_json(&event)["fault"], "kill");
    }
}
