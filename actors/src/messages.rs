//! The messages of the supervision tree's actors, below every actor: an actor
//! file imports the messages of the actors it talks to from here, never the
//! actor itself, so the files depend on each other one way.

use std::sync::Arc;
use std::time::Duration;

use mcpvisor_protocol::RequestId;
use mcpvisor_protocol::mcp::messages::InitializeResult;
use mcpvisor_transports::{Outbound, TransportError, TransportEvent};
use ractor::ActorId;
use tokio::sync::{OwnedSemaphorePermit, oneshot};

use crate::status::ServerId;

/// To a server actor (one connection).
pub(crate) enum ServerMsg {
    /// A call's deadline passed while it waited: the connection is ended unless
    /// its answer arrived since.
    CallTimedOut { id: i64, after: Duration },
    /// Writing to the server failed. The connection ends after a grace period
    /// (`confirmed`), so the reader's report of the exit, which says more, can
    /// come first.
    WriteFailed {
        error: TransportError,
        confirmed: bool,
    },
    /// Something arrived on the transport; the permit bounds the backlog.
    Inbound(TransportEvent, OwnedSemaphorePermit),
    /// A setup deadline may have passed: the startup (initialize and the
    /// first tools/list) or a re-listing after `tools/list_changed`.
    SetupDue,
    /// The registry was restarted: report the tools to it again.
    ReportAgain,
    /// The host's roots changed.
    RootsChanged,
    /// The host's subscriptions changed: listen anew (a stateless revision).
    Relisten,
    /// A call found the tools list stale (a stateless revision's `ttlMs`).
    ToolsStale,
    /// The host answered (or failed to answer) a server's request.
    HostAnswered {
        id: mcpvisor_protocol::wire::jsonrpc::RequestId,
        answer: Result<serde_json::Value, mcpvisor_protocol::wire::jsonrpc::ErrorObject>,
    },
}

/// To a transport actor (the server's process or HTTP client).
pub(crate) enum TransportMsg {
    /// One serialised JSON-RPC message.
    Send(Outbound),
    /// The handshake settled on this revision: what follows (from
    /// `notifications/initialized` on) carries what it asks for (the HTTP
    /// version header).
    Protocol(mcpvisor_protocol::mcp::revision::Revision),
    /// The handshake is complete: open what waits for it (the HTTP GET stream).
    Ready,
    /// The caller gave up on this request: stop waiting for its answer.
    Abandon(RequestId),
    /// A fault to apply to the connection; the reply says whether it was.
    Fault(TransportFault, Option<oneshot::Sender<Result<(), String>>>),
}

/// What fault injection asks of a transport actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransportFault {
    /// SIGKILL to the process group.
    Kill,
    /// SIGSTOP to the process group.
    Stop,
    /// SIGCONT to the process group (a stop ends).
    Continue,
    /// Close the server's stdin.
    CloseStdin,
    /// Reset the HTTP connections in use.
    Reset,
}

/// To the supervisor.
pub(crate) enum SupervisorMsg {
    /// What another node of the cluster advertises changed: the registry rebuilds its routes.
    NodesChanged,
    /// A server finished its first tools/list: its backoff starts over.
    ServerReady {
        id: ServerId,
    },
    /// A server actor started its process (stdio: with this pid).
    Spawned {
        id: ServerId,
        actor: ActorId,
        pid: Option<u32>,
    },
    /// A server actor's handshake completed with this answer.
    Initialized {
        id: ServerId,
        actor: ActorId,
        init: Arc<InitializeResult>,
    },
    /// The registry published a server's routes (`initial`: its first list).
    Published {
        id: ServerId,
        tools: usize,
        initial: bool,
        pid: Option<u32>,
    },
    /// A server is stopping because it cannot be authorized: no restart until asked.
    LoginRequired {
        id: ServerId,
        /// The stopping actor (a newer one of the same slot is not meant).
        actor: ActorId,
        reason: crate::error::DownReason,
    },
    /// A backoff elapsed; `generation` guards against a restart that was superseded.
    Restart {
        id: ServerId,
        generation: u64,
    },
    /// A host asks to bring back servers of this name that are down or failed.
    RestartServer {
        name: String,
        reply: oneshot::Sender<Result<usize, crate::error::CallError>>,
    },
    Shutdown {
        reply: Option<oneshot::Sender<()>>,
    },
    /// The host's roots changed: tell every server.
    RootsChanged,
    /// A host's new set of servers: start, stop or restart the difference.
    Reload {
        specs: Vec<crate::options::ServerSpec>,
        reply: oneshot::Sender<ReloadReport>,
    },
    /// The registry stopped unexpectedly: start another.
    RestartRegistry {
        reason: String,
    },
}

// With ractor's `cluster` feature (the cluster's node agents talk across
// machines) every message type says whether it can cross the wire. These
// stay on their node: the defaults refuse to serialize them.
#[cfg(feature = "cluster")]
impl ractor::Message for ServerMsg {}
#[cfg(feature = "cluster")]
impl ractor::Message for TransportMsg {}
#[cfg(feature = "cluster")]
impl ractor::Message for SupervisorMsg {}

/// What a reload did, by server name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReloadReport {
    /// Servers that were not there before and were started.
    pub added: Vec<Arc<str>>,
    /// Servers that are gone and were stopped.
    pub removed: Vec<Arc<str>>,
    /// Servers whose definition changed and were started again.
    pub restarted: Vec<Arc<str>>,
    /// Servers left running as they were.
    pub unchanged: Vec<Arc<str>>,
}
