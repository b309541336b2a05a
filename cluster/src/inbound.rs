//! Calls other nodes ask this host to run on its own servers.
//!
//! Each runs through the host's call path as a local caller's would, so this
//! node's timeout and restart rules apply; only routes to this host's own
//! servers are served (a node never relays to a third). A cancel from the
//! caller, or the caller's loss, drops the call here, which cancels it on the
//! server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use mcpvisor_actors::{CallOptions, Host};
use mcpvisor_protocol::mcp::messages::ProgressParams;
use ractor::ActorRef;
use serde_json::Value;
use tokio::task::AbortHandle;

use crate::link::Link;
use crate::message::AgentMsg;
use crate::wire::{Wire, WireError};

/// One call another node asked for.
pub(crate) struct Asked {
    pub(crate) id: u64,
    pub(crate) tool: String,
    pub(crate) arguments: Option<Value>,
    pub(crate) timeout_ms: Option<u64>,
    pub(crate) progress: bool,
}

/// The calls other nodes have running here, by node and the caller's id.
pub(crate) struct Inbound {
    /// This node's name, as its answers carry it.
    local: Arc<str>,
    /// This node's agent, told when a call ends.
    agent: ActorRef<AgentMsg>,
    /// The calls one node may have running here at once.
    limit: usize,
    running: HashMap<(Arc<str>, u64), AbortHandle>,
}

impl Inbound {
    pub(crate) fn new(local: Arc<str>, agent: ActorRef<AgentMsg>, limit: usize) -> Self {
        Inbound {
            local,
            agent,
            limit,
            running: HashMap::new(),
        }
    }

    /// Runs `asked` for `node` (reached through `link`), answering through it.
    pub(crate) fn start(&mut self, host: &Host, node: &Arc<str>, link: &Link, asked: Asked) {
        let (local, agent, limit) = (&self.local, &self.agent, self.limit);
        let id = asked.id;
        let key = (node.clone(), id);
        if self.running.contains_key(&key) {
            return;
        }
        let mine = host
            .routes()
            .get(&asked.tool)
            .is_some_and(|route| route.node.is_none());
        let refused = if !mine {
            Some(WireError::UnknownTool {
                name: asked.tool.clone(),
            })
        } else if self.from(node) >= limit {
            Some(WireError::Overloaded { limit })
        } else {
            None
        };
        if let Some(error) = refused {
            link.send(&Wire::Answer {
                from: local.to_string(),
                id,
                outcome: Err(error),
            });
            return;
        }
        // Its client is on another node, which no server's question reaches:
        // a 2026-07-28 server is told this client answers none.
        let mut options = CallOptions::default().answering(Default::default());
        if let Some(ms) = asked.timeout_ms {
            options.timeout = Some(Duration::from_millis(ms));
        }
        if asked.progress {
            let link = link.clone();
            let from = local.to_string();
            options.progress = Some(Arc::new(move |params: &ProgressParams| {
                link.send(&Wire::Progress {
                    from: from.clone(),
                    id,
                    params: params.clone(),
                });
            }));
        }
        let call = host.call(&asked.tool, asked.arguments.unwrap_or(Value::Null), options);
        let link = link.clone();
        let from = local.to_string();
        let agent = agent.clone();
        let caller = node.to_string();
        let task = tokio::spawn(async move {
            let outcome = match call.await {
                Ok(result) => Ok(result.to_value()),
                Err(e) => Err(WireError::from_call(&e)),
            };
            let answer = Wire::Answer {
                from: from.clone(),
                id,
                outcome,
            };
            if !link.send(&answer) {
                // Too large to cross: the caller gets a typed error instead of silence.
                link.send(&Wire::Answer {
                    from,
                    id,
                    outcome: Err(WireError::Other {
                        message: "the result is larger than the cluster's message bound".into(),
                    }),
                });
            }
            let _ = agent.cast(AgentMsg::InboundDone { from: caller, id });
        });
        self.running.insert(key, task.abort_handle());
    }

    /// The caller cancelled: the call is dropped, which cancels it on the server.
    pub(crate) fn cancel(&mut self, node: &str, id: u64) {
        if let Some(task) = self.running.remove(&(Arc::from(node), id)) {
            task.abort();
        }
    }

    /// A call ended on its own.
    pub(crate) fn done(&mut self, node: &str, id: u64) {
        self.running.remove(&(Arc::from(node), id));
    }

    /// The caller's node is lost: nothing of its calls survives here. Each
    /// is answered through `link` as ended by the loss (if that node is
    /// still there and only this side lost it, its callers are not left waiting).
    pub(crate) fn drop_node(&mut self, node: &str, link: &Link) {
        let local = self.local.to_string();
        self.running.retain(|(from, id), task| {
            if &**from != node {
                return true;
            }
            task.abort();
            link.send(&Wire::Answer {
                from: local.clone(),
                id: *id,
                outcome: Err(WireError::Other {
                    message: format!("node `{local}` lost this node and dropped the call"),
                }),
            });
            false
        });
    }

    fn from(&self, node: &Arc<str>) -> usize {
        self.running.keys().filter(|(from, _)| from == node).count()
    }
}
