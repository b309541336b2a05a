//! Events a host can react to, and the bus that carries them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::QualifiedMcpToolName;
use mcpvisor_protocol::human;
use mcpvisor_protocol::mcp::messages::{LogMessageParams, ProgressParams};
use tokio::sync::broadcast;

use crate::error::DownReason;

/// Something that happened to a server or to the routes.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum HostEvent {
    /// A connection is being set up (attempt 0 is the first start).
    ServerStarting {
        /// Which server.
        server: Arc<str>,
        /// Consecutive restart attempt; 0 for the first start.
        attempt: u32,
    },
    /// The server finished initialize and its first tools/list; its routes are live.
    ServerReady {
        /// Which server.
        server: Arc<str>,
        /// Its process id, for stdio servers.
        pid: Option<u32>,
        /// Tools it listed.
        tools: usize,
        /// The protocol revision it settled on.
        protocol: Option<Arc<str>>,
    },
    /// The connection ended and will be restarted after `backoff`.
    ServerRestarting {
        /// Which server.
        server: Arc<str>,
        /// Consecutive attempt (1-based).
        attempt: u32,
        /// Delay before the restart.
        backoff: Duration,
        /// Why the connection ended.
        reason: DownReason,
    },
    /// The server failed too often and stays down until a host restarts it.
    ServerFailed {
        /// Which server.
        server: Arc<str>,
        /// Why it last failed.
        reason: DownReason,
    },
    /// The server cannot be authorized without a person: run `mcpvisor login <name>`,
    /// then restart it. It is not restarted meanwhile.
    LoginRequired {
        /// Which server.
        server: Arc<str>,
        /// Why.
        reason: DownReason,
    },
    /// The server was stopped on purpose.
    ServerStopped {
        /// Which server.
        server: Arc<str>,
    },
    /// A fault was dealt to the server ([`Host::inject`](crate::Host::inject)).
    FaultInjected {
        /// Which server.
        server: Arc<str>,
        /// The fault.
        fault: crate::fault::Fault,
    },
    /// The routes of a server changed.
    ToolsChanged {
        /// Which server.
        server: Arc<str>,
        /// Its routes now (not counting rejected or conflicting ones).
        tools: Vec<QualifiedMcpToolName>,
    },
    /// Two routes would share a name; neither is advertised. In a cluster,
    /// also every route of a server whose name more than one node claims.
    RouteConflict {
        /// The contested name.
        name: QualifiedMcpToolName,
        /// The servers claiming it (a name twice when one server lists a tool
        /// twice, or when two nodes each supervise a server of that name).
        servers: Vec<Arc<str>>,
        /// The nodes claiming its server, in order; empty for a conflict on this host alone.
        nodes: Vec<Arc<str>>,
    },
    /// A tool cannot form a valid route and is not advertised.
    RouteRejected {
        /// Which server.
        server: Arc<str>,
        /// The tool name as the server sent it (or the entry that did not parse).
        tool: String,
        /// Why.
        reason: String,
    },
    /// Progress of a call.
    Progress {
        /// Which server.
        server: Arc<str>,
        /// The progress notification.
        progress: ProgressParams,
    },
    /// A log message the server sent over MCP.
    ServerLog {
        /// Which server.
        server: Arc<str>,
        /// The message.
        message: LogMessageParams,
    },
    /// The server's HTTP session expired and a new one was opened; tools are re-listed.
    SessionRenewed {
        /// Which server.
        server: Arc<str>,
    },
    /// The server's resources or resource templates changed (the next
    /// [`crate::Host::resources`] lists them again).
    ResourcesChanged {
        /// Which server.
        server: Arc<str>,
    },
    /// A resource the host subscribed to changed.
    ResourceUpdated {
        /// Which server.
        server: Arc<str>,
        /// The resource's URI.
        uri: Arc<str>,
    },
    /// A URL elicitation the host was asked about completed out of band
    /// (`notifications/elicitation/complete`): what waited for it may be tried again.
    ElicitationComplete {
        /// Which server.
        server: Arc<str>,
        /// The server's id for the elicitation.
        elicitation_id: Arc<str>,
    },
    /// The server's prompts changed (the next [`crate::Host::prompts`] lists them again).
    PromptsChanged {
        /// Which server.
        server: Arc<str>,
    },
    /// This subscriber fell behind and missed `count` events.
    EventsLost {
        /// How many.
        count: u64,
    },
    /// The route registry stopped unexpectedly and was started again; the routes
    /// it had published stay, and every running server reports its tools again.
    RegistryRestarted {
        /// Why the old one stopped.
        reason: String,
    },
    /// Another node of the cluster this host joined was met; its routes
    /// follow as it advertises them.
    NodeJoined {
        /// The node.
        node: Arc<str>,
    },
    /// Another node of the cluster was lost: its routes are withdrawn and
    /// the calls waiting for it failed with `CallError::NodeLost`.
    NodeLost {
        /// The node.
        node: Arc<str>,
        /// Why it counts as lost.
        reason: String,
    },
    /// Something that happened to another node's server, as that node told it.
    Remote {
        /// The node that supervises the server.
        node: Arc<str>,
        /// What happened, as [`HostEvent::kind`] names it there (`server_ready`…).
        kind: Arc<str>,
        /// Which server, when the event is about one.
        server: Option<Arc<str>>,
        /// The event's line on that node.
        text: String,
    },
}

impl HostEvent {
    /// What happened, in one word: `server_ready`, `tools_changed`, `node_lost`…
    pub fn kind(&self) -> &'static str {
        match self {
            HostEvent::ServerStarting { .. } => "server_starting",
            HostEvent::ServerReady { .. } => "server_ready",
            HostEvent::ServerRestarting { .. } => "server_restarting",
            HostEvent::ServerFailed { .. } => "server_failed",
            HostEvent::LoginRequired { .. } => "login_required",
            HostEvent::ServerStopped { .. } => "server_stopped",
            HostEvent::FaultInjected { .. } => "fault_injected",
            HostEvent::ToolsChanged { .. } => "tools_changed",
            HostEvent::RouteConflict { .. } => "route_conflict",
            HostEvent::RouteRejected { .. } => "route_rejected",
            HostEvent::Progress { .. } => "progress",
            HostEvent::ServerLog { .. } => "server_log",
            HostEvent::SessionRenewed { .. } => "session_renewed",
            HostEvent::ResourcesChanged { .. } => "resources_changed",
            HostEvent::ResourceUpdated { .. } => "resource_updated",
            HostEvent::ElicitationComplete { .. } => "elicitation_complete",
            HostEvent::PromptsChanged { .. } => "prompts_changed",
            HostEvent::EventsLost { .. } => "events_lost",
            HostEvent::RegistryRestarted { .. } => "registry_restarted",
            HostEvent::NodeJoined { .. } => "node_joined",
            HostEvent::NodeLost { .. } => "node_lost",
            HostEvent::Remote { .. } => "remote",
        }
    }

    /// The server the event is about, when it is about one.
    pub fn server(&self) -> Option<&Arc<str>> {
        match self {
            HostEvent::ServerStarting { server, .. }
            | HostEvent::ServerReady { server, .. }
            | HostEvent::ServerRestarting { server, .. }
            | HostEvent::ServerFailed { server, .. }
            | HostEvent::LoginRequired { server, .. }
            | HostEvent::ServerStopped { server }
            | HostEvent::FaultInjected { server, .. }
            | HostEvent::ToolsChanged { server, .. }
            | HostEvent::RouteRejected { server, .. }
            | HostEvent::Progress { server, .. }
            | HostEvent::ServerLog { server, .. }
            | HostEvent::SessionRenewed { server }
            | HostEvent::ResourcesChanged { server }
            | HostEvent::ResourceUpdated { server, .. }
            | HostEvent::ElicitationComplete { server, .. }
            | HostEvent::PromptsChanged { server } => Some(server),
            HostEvent::RouteConflict { servers, .. } => servers.first(),
            HostEvent::Remote { server, .. } => server.as_ref(),
            HostEvent::EventsLost { .. }
            | HostEvent::RegistryRestarted { .. }
            | HostEvent::NodeJoined { .. }
            | HostEvent::NodeLost { .. } => None,
        }
    }
}

/// One line for a person: `server: what happened`. Server-supplied text is
/// included as it came; a terminal front end escapes control characters.
impl fmt::Display for HostEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line = match self {
            HostEvent::ServerStarting { server, attempt: 0 } => format!("{server}: starting"),
            HostEvent::ServerStarting { server, attempt } => {
                format!("{server}: starting (attempt {attempt})")
            }
            HostEvent::ServerReady {
                server,
                pid,
                tools,
                protocol,
            } => {
                let pid = pid.map(|p| format!(", pid {p}")).unwrap_or_default();
                let protocol = protocol
                    .as_ref()
                    .map(|p| format!(", protocol {p}"))
                    .unwrap_or_default();
                format!(
                    "{server}: ready, {}{protocol}{pid}",
                    human::count(*tools, "tool")
                )
            }
            HostEvent::ServerRestarting {
                server,
                attempt,
                backoff,
                reason,
            } => {
                let backoff = human::duration(*backoff);
                format!("{server}: down ({reason}); restart {attempt} in {backoff}")
            }
            HostEvent::ServerFailed { server, reason } => {
                format!("{server}: failed, not restarting: {reason}")
            }
            HostEvent::ServerStopped { server } => format!("{server}: stopped"),
            HostEvent::FaultInjected { server, fault } => {
                format!("{server}: fault injected: {fault}")
            }
            HostEvent::ToolsChanged { server, tools } => {
                format!("{server}: {} routed", human::count(tools.len(), "tool"))
            }
            HostEvent::RouteConflict {
                name,
                servers,
                nodes,
            } if !nodes.is_empty() => {
                let nodes: Vec<&str> = nodes.iter().map(|s| &**s).collect();
                let server = servers.first().map(|s| &**s).unwrap_or_default();
                format!(
                    "route conflict: {name}: server {server} is supervised on nodes {}; not advertised",
                    nodes.join(", ")
                )
            }
            HostEvent::RouteConflict { name, servers, .. } => {
                let servers: Vec<&str> = servers.iter().map(|s| &**s).collect();
                format!(
                    "route conflict: {name} claimed by {}; not advertised",
                    servers.join(", ")
                )
            }
            HostEvent::RouteRejected {
                server,
                tool,
                reason,
            } => format!("{server}: tool {tool:?} not routed: {reason}"),
            HostEvent::Progress { server, progress } => {
                let total = progress.total.map(|t| format!("/{t}")).unwrap_or_default();
                let msg = progress.message.as_deref().unwrap_or("");
                format!("{server}: progress {}{total} {msg}", progress.progress)
            }
            HostEvent::ServerLog { server, message } => {
                format!("{server}: [{}] {}", message.level, message.data)
            }
            HostEvent::SessionRenewed { server } => {
                format!("{server}: HTTP session expired; a new one was opened")
            }
            HostEvent::LoginRequired { server, reason } => {
                format!("{server}: login required: {reason}")
            }
            HostEvent::ResourcesChanged { server } => format!("{server}: resources changed"),
            HostEvent::ResourceUpdated { server, uri } => {
                format!("{server}: resource updated: {uri}")
            }
            HostEvent::PromptsChanged { server } => format!("{server}: prompts changed"),
            HostEvent::ElicitationComplete {
                server,
                elicitation_id,
            } => format!("{server}: elicitation {elicitation_id} completed"),
            HostEvent::EventsLost { count } => format!("({count} events missed)"),
            HostEvent::NodeJoined { node } => format!("node {node}: joined"),
            HostEvent::NodeLost { node, reason } => {
                format!("node {node}: lost ({reason}); its routes are withdrawn")
            }
            HostEvent::Remote { node, text, .. } => format!("[{node}] {text}"),
            HostEvent::RegistryRestarted { reason } => {
                format!("route registry restarted ({reason}); servers report again")
            }
        };
        f.write_str(&line)
    }
}

/// Fan-out of events to every subscriber; bounded, never blocks the sender.
#[derive(Clone)]
pub(crate) struct EventBus(broadcast::Sender<HostEvent>);

impl EventBus {
    pub(crate) fn new(capacity: usize) -> Self {
        EventBus(broadcast::channel(capacity.max(1)).0)
    }

    pub(crate) fn emit(&self, event: HostEvent) {
        // No subscribers is fine: events are for whoever listens.
        let _ = self.0.send(event);
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<HostEvent> {
        self.0.subscribe()
    }
}
