//! What a node tells every other: the servers it supervises, up or down
//! (each one a claim on its name), with the tools its registry routes.

use std::collections::HashMap;

use mcpvisor_actors::{Host, ServerState};

use crate::wire::{Wire, WireServer, WireTool};

/// A server's state in a word, as other nodes show it.
fn state_word(state: &ServerState) -> (&'static str, Option<String>) {
    match state {
        ServerState::Starting { .. } => ("starting", None),
        ServerState::Ready => ("ready", None),
        ServerState::Restarting { reason, .. } => ("restarting", Some(reason.to_string())),
        ServerState::Failed { reason } => ("failed", Some(reason.to_string())),
        ServerState::LoginRequired { reason } => ("login_required", Some(reason.to_string())),
        ServerState::Stopped => ("stopped", None),
        _ => ("unknown", None),
    }
}

/// This host's servers and routes, as every other node should know them.
fn advert(
    host: &Host,
    local: &str,
    listen: &str,
    peers: Vec<String>,
    http: Option<std::net::SocketAddr>,
) -> Wire {
    let table = host.routes();
    let mut tools: HashMap<&str, Vec<WireTool>> = HashMap::new();
    // In name order: the same servers and tools make the same bytes, so an
    // unchanged advertisement is recognised and not sent again.
    for route in table.sorted().iter().filter(|r| r.node.is_none()) {
        tools
            .entry(&route.server)
            .or_default()
            .push(WireTool::from_definition(&route.definition));
    }
    let servers = host
        .servers()
        .into_iter()
        .map(|status| {
            let (state, reason) = state_word(&status.state);
            WireServer {
                tools: tools.remove(&*status.name).unwrap_or_default(),
                name: status.name.to_string(),
                state: state.to_string(),
                reason,
            }
        })
        .collect();
    Wire::Advert {
        from: local.to_string(),
        listen: listen.to_string(),
        peers,
        servers,
        http: http.map(|a| a.to_string()),
    }
}

/// The advertisement, encoded within `max` bytes: when the tools do not
/// fit, the servers alone (their names are still claimed).
pub(crate) fn encoded(
    host: &Host,
    local: &str,
    listen: &str,
    peers: Vec<String>,
    http: Option<std::net::SocketAddr>,
    max: usize,
) -> Vec<u8> {
    let mut advert = advert(host, local, listen, peers, http);
    match advert.encode(max) {
        Ok(bytes) => bytes,
        Err(size) => {
            tracing::error!(
                size,
                max,
                "this node's tools do not fit in one cluster message; other nodes get its server names only"
            );
            if let Wire::Advert { servers, .. } = &mut advert {
                for server in servers {
                    server.tools.clear();
                }
            }
            advert.encode(max).unwrap_or_default()
        }
    }
}
