//! What the registry is told: a server's full tools list, a publication due, a
//! server gone, another node's advertisement changed. Below the registry, so
//! the servers and the host context that send these need not know the actor.

use std::sync::Arc;

use mcpvisor_protocol::mcp::messages::Tool;

use crate::server_lists::ServerLink;
use crate::status::ServerId;

/// What a server tells the registry after a full tools/list.
pub(crate) struct ToolsReport {
    pub(crate) id: ServerId,
    pub(crate) name: Arc<str>,
    /// The connection: its lane, timeout and what else it offers.
    pub(crate) link: Arc<ServerLink>,
    pub(crate) tools: Vec<Tool>,
    /// Entries of the list that were not tools at all.
    pub(crate) rejected: Vec<String>,
    /// The first list of this connection: the server becomes ready with it.
    pub(crate) initial: bool,
    pub(crate) pid: Option<u32>,
}

pub(crate) enum RegistryMsg {
    Report(Box<ToolsReport>),
    /// Publish the routes of every report taken since the last publication.
    Publish,
    /// The server's connection is gone; drop its routes.
    Remove(ServerId),
    /// What another node advertises changed (or a node was lost): rebuild its routes.
    NodesChanged,
}

// Stays on its node (see the note in `messages`).
#[cfg(feature = "cluster")]
impl ractor::Message for RegistryMsg {}
