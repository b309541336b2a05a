//! Servers that another node supervises, as this host routes to them.
//!
//! A cluster (the `mcpvisor-cluster` crate) tells the host what each other node
//! advertises ([`NodeLink::set_node_servers`](crate::NodeLink::set_node_servers)) and
//! forgets a node it lost ([`NodeLink::forget_node`](crate::NodeLink::forget_node)).
//! The registry folds those servers into the one route table, under the same
//! qualified names, so a host calls a remote tool exactly as a local one. A
//! server name that two nodes claim is routed on neither.
//!
//! How a remote call travels is the cluster's business: the host hands it a
//! [`RemoteRequest`] through the node's [`RemoteCalls`] and waits on the
//! [`RemoteCall`] it gets back. The owning node runs the call through its own
//! call path, so its timeout and restart rules are the ones that apply.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::{CallToolResult, ToolDefinition};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::error::CallError;
use crate::options::ProgressCallback;

/// One call for a server on another node.
pub struct RemoteRequest {
    /// The server, as its node names it.
    pub server: Arc<str>,
    /// The tool's qualified name (`mcp__server__tool`).
    pub tool: Arc<str>,
    /// The arguments, as the caller gave them.
    pub arguments: Option<Value>,
    /// Where progress goes, when the caller asked for it.
    pub progress: Option<ProgressCallback>,
    /// The caller's timeout, or the server's own when the caller gave none.
    pub timeout: Option<Duration>,
}

impl fmt::Debug for RemoteRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Arguments are the caller's data: not for logs.
        f.debug_struct("RemoteRequest")
            .field("server", &self.server)
            .field("tool", &self.tool)
            .field("progress", &self.progress.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// A remote call on its way: the answer to wait for and how to cancel it.
pub struct RemoteCall {
    /// Resolves to the result, or to the typed error the owning node (or the
    /// loss of it) gave.
    pub answer: oneshot::Receiver<Result<CallToolResult, CallError>>,
    /// Cancels the call on the owning node; a no-op once it has ended.
    pub cancel: Arc<dyn Fn() + Send + Sync>,
}

impl fmt::Debug for RemoteCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteCall").finish_non_exhaustive()
    }
}

/// How calls reach one other node.
pub trait RemoteCalls: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` to the node. A call that cannot be sent fails at once
    /// through the returned answer.
    fn start(&self, request: RemoteRequest) -> RemoteCall;
}

/// A server another node supervises, as that node advertises it.
#[derive(Debug, Clone)]
pub struct RemoteServer {
    /// Its name, unique in the cluster (a name two nodes claim is routed on neither).
    pub name: Arc<str>,
    /// Where it stands, in the words of its node's status (`ready`, `restarting`…).
    pub state: Arc<str>,
    /// Why it is down, when it is.
    pub reason: Option<Arc<str>>,
    /// Its routed tools, as its node advertises them.
    pub tools: Vec<Arc<ToolDefinition>>,
}

/// Everything one other node advertises.
#[derive(Debug, Clone)]
pub struct NodeServers {
    /// The node's name.
    pub node: Arc<str>,
    /// Its servers: every one it supervises, routed or not, so a name it
    /// claims is a conflict even while that server is down.
    pub servers: Vec<RemoteServer>,
    /// How its calls travel.
    pub calls: Arc<dyn RemoteCalls>,
    /// Where its gateway serves MCP over HTTP, when it does (and said so):
    /// a 2026-07-28 request that must be answered there is passed on to it.
    pub http: Option<std::net::SocketAddr>,
}
