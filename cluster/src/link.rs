//! Calls this host makes to one other node: each waits in the link's table
//! until that node answers, the caller cancels, or the node is lost.

use std::collections::HashMap;
use std::sync::Arc;

use mcpvisor_actors::ProgressCallback;
use mcpvisor_actors::error::CallError;
use mcpvisor_actors::remote::{RemoteCall, RemoteCalls, RemoteRequest};
use mcpvisor_protocol::CallToolResult;
use mcpvisor_protocol::mcp::messages::ProgressParams;
use parking_lot::Mutex;
use ractor::ActorRef;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::keys::{Key, call_id};
use crate::message::{AgentMsg, Frame};
use crate::wire::{Wire, WireError};

/// Calls to one node that may wait at once; past it a call is refused as overloaded.
const MAX_PENDING: usize = 65_536;

/// One call waiting for its answer.
struct Pending {
    server: Arc<str>,
    tool: Arc<str>,
    reply: oneshot::Sender<Result<CallToolResult, CallError>>,
    progress: Option<ProgressCallback>,
}

/// How calls reach one other node (its agent), and the calls waiting there.
#[derive(Clone)]
pub(crate) struct Link(Arc<LinkInner>);

struct LinkInner {
    /// The other node.
    node: Arc<str>,
    /// This node, as the other knows it.
    local: Arc<str>,
    agent: ActorRef<AgentMsg>,
    max_message: usize,
    /// The key the other node gave this one, once confirmed (see `keys`):
    /// every message but a `hello` carries it, and none goes without it.
    stamp: Mutex<Option<Key>>,
    /// The calls waiting, and whether the node is lost (then new calls fail
    /// at once): one lock, so a call cannot slip in while the loss drains.
    pending: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    calls: HashMap<u64, Pending>,
    lost: bool,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("node", &self.0.node)
            .field("waiting", &self.0.pending.lock().calls.len())
            .finish()
    }
}

impl Link {
    pub(crate) fn new(
        node: Arc<str>,
        local: Arc<str>,
        agent: ActorRef<AgentMsg>,
        max_message: usize,
        stamp: Option<Key>,
    ) -> Self {
        Link(Arc::new(LinkInner {
            node,
            local,
            agent,
            max_message,
            stamp: Mutex::new(stamp),
            pending: Mutex::new(Waiting::default()),
        }))
    }

    /// The other node's agent.
    pub(crate) fn agent(&self) -> &ActorRef<AgentMsg> {
        &self.0.agent
    }

    /// The key the other node confirmed it gave this one.
    pub(crate) fn set_stamp(&self, key: Key) {
        *self.0.stamp.lock() = Some(key);
    }

    /// The key the other node gave this one, once confirmed.
    pub(crate) fn stamp(&self) -> Option<Key> {
        *self.0.stamp.lock()
    }

    /// Sends `wire` to the other node; false when it is too large or cannot be sent.
    pub(crate) fn send(&self, wire: &Wire) -> bool {
        self.0.send(wire)
    }

    /// Sends an encoded message to the other node with its key; false
    /// before the other node's key is confirmed.
    pub(crate) fn send_encoded(&self, bytes: Arc<[u8]>) -> bool {
        self.0.send_encoded(bytes)
    }

    /// Sends a `hello` (the one message without a key).
    pub(crate) fn send_hello(&self, offer: Key) {
        let hello = Wire::Hello {
            from: self.0.local.to_string(),
            offer: offer.to_text(),
        };
        if let Ok(bytes) = hello.encode(self.0.max_message) {
            let _ = self.0.agent.cast(AgentMsg::Frame(Frame {
                key: None,
                bytes: bytes.into(),
            }));
        }
    }

    /// A call ended on the other node (the message came with its key).
    pub(crate) fn answer(&self, id: u64, outcome: Result<Value, WireError>) {
        let Some(pending) = self.0.pending.lock().calls.remove(&id) else {
            // Cancelled here, or an id this link never gave.
            return;
        };
        let result = match outcome {
            Ok(value) => CallToolResult::parse(value).map_err(|source| CallError::InvalidResult {
                server: pending.server.clone(),
                source,
            }),
            Err(e) => Err(e.into_call(&self.0.node, &pending.server, &pending.tool)),
        };
        let _ = pending.reply.send(result);
    }

    /// Progress of a call the other node runs.
    pub(crate) fn progress(&self, id: u64, params: &ProgressParams) {
        let progress = self
            .0
            .pending
            .lock()
            .calls
            .get(&id)
            .and_then(|p| p.progress.clone());
        if let Some(progress) = progress {
            progress(params);
        }
    }

    /// The node is lost: every waiting call fails with `NodeLost`, and so does
    /// every call made after.
    pub(crate) fn lose(&self) {
        let waiting: Vec<Pending> = {
            let mut pending = self.0.pending.lock();
            pending.lost = true;
            pending.calls.drain().map(|(_, p)| p).collect()
        };
        for pending in waiting {
            let _ = pending.reply.send(Err(CallError::NodeLost {
                node: self.0.node.clone(),
                server: pending.server,
            }));
        }
    }

    /// How many calls wait for this node's answer.
    pub(crate) fn waiting(&self) -> usize {
        self.0.pending.lock().calls.len()
    }
}

impl LinkInner {
    fn send(&self, wire: &Wire) -> bool {
        match wire.encode(self.max_message) {
            Ok(bytes) => self.send_encoded(bytes.into()),
            Err(size) => {
                tracing::warn!(node = %self.node, size, "cluster message over the bound: not sent");
                false
            }
        }
    }

    fn send_encoded(&self, bytes: Arc<[u8]>) -> bool {
        // Nothing goes before the other node's key is confirmed: it would drop it.
        let Some(key) = *self.stamp.lock() else {
            return false;
        };
        self.agent
            .cast(AgentMsg::Frame(Frame {
                key: Some(key),
                bytes,
            }))
            .is_ok()
    }

    fn cancel(&self, id: u64) {
        let Some(pending) = self.pending.lock().calls.remove(&id) else {
            return;
        };
        let _ = pending.reply.send(Err(CallError::Cancelled));
        self.send(&Wire::Cancel {
            from: self.local.to_string(),
            id,
        });
    }
}

impl RemoteCalls for Link {
    fn start(&self, request: RemoteRequest) -> RemoteCall {
        let (reply, answer) = oneshot::channel();
        let inner = &self.0;
        let refuse = |reply: oneshot::Sender<_>, answer, error: CallError| {
            let _ = reply.send(Err(error));
            RemoteCall {
                answer,
                cancel: Arc::new(|| {}),
            }
        };
        // Unguessable, and never one that waits already.
        let mut id = call_id();
        while inner.pending.lock().calls.contains_key(&id) {
            id = call_id();
        }
        let call = Wire::Call {
            from: inner.local.to_string(),
            id,
            tool: request.tool.to_string(),
            arguments: request.arguments,
            timeout_ms: request
                .timeout
                .map(|t| t.as_millis().min(u64::MAX as u128) as u64),
            progress: request.progress.is_some(),
        };
        let bytes = match call.encode(inner.max_message) {
            Ok(bytes) => bytes,
            Err(size) => {
                return refuse(
                    reply,
                    answer,
                    CallError::InvalidRequest(format!(
                        "the call's arguments make a {size}-byte message; messages to node `{}` are at most {} bytes",
                        inner.node, inner.max_message
                    )),
                );
            }
        };
        {
            let mut pending = inner.pending.lock();
            if pending.lost {
                drop(pending);
                return refuse(
                    reply,
                    answer,
                    CallError::NodeLost {
                        node: inner.node.clone(),
                        server: request.server,
                    },
                );
            }
            if pending.calls.len() >= MAX_PENDING {
                drop(pending);
                return refuse(
                    reply,
                    answer,
                    CallError::Overloaded {
                        server: request.server,
                        limit: MAX_PENDING,
                    },
                );
            }
            pending.calls.insert(
                id,
                Pending {
                    server: request.server.clone(),
                    tool: request.tool,
                    reply,
                    progress: request.progress,
                },
            );
        }
        if !inner.send_encoded(bytes.into()) {
            // The node's session is gone (the loss is being handled), or its key unknown.
            if let Some(p) = inner.pending.lock().calls.remove(&id) {
                let _ = p.reply.send(Err(CallError::NodeLost {
                    node: inner.node.clone(),
                    server: request.server,
                }));
            }
        }
        let weak = Arc::downgrade(&self.0);
        RemoteCall {
            answer,
            cancel: Arc::new(move || {
                if let Some(inner) = weak.upgrade() {
                    inner.cancel(id);
                }
            }),
        }
    }
}
