//! What happens to this host's own servers, passed to the other nodes.

use futures::StreamExt;
use mcpvisor_actors::{Host, HostEvent};
use ractor::ActorRef;
use tokio::task::JoinHandle;

use crate::message::AgentMsg;

/// Passes what happens to this host's own servers to the agent, for the
/// other nodes: state changes, tool changes, faults. Progress and server logs
/// stay here, and so does what this host observes of other nodes' servers.
pub(crate) fn relay_events(host: &Host, agent: ActorRef<AgentMsg>) -> JoinHandle<()> {
    let host = host.clone();
    let mut events = Box::pin(host.events_from_now());
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let relayed = matches!(
                event,
                HostEvent::ServerStarting { .. }
                    | HostEvent::ServerReady { .. }
                    | HostEvent::ServerRestarting { .. }
                    | HostEvent::ServerFailed { .. }
                    | HostEvent::LoginRequired { .. }
                    | HostEvent::ServerStopped { .. }
                    | HostEvent::FaultInjected { .. }
                    | HostEvent::ToolsChanged { .. }
            );
            let Some(server) = event.server().filter(|_| relayed) else {
                continue;
            };
            let mine = host.servers().iter().any(|s| s.name == *server);
            if !mine {
                continue;
            }
            let local = AgentMsg::LocalEvent {
                kind: event.kind(),
                server: server.to_string(),
                text: event.to_string(),
            };
            if agent.cast(local).is_err() {
                break;
            }
        }
    })
}
