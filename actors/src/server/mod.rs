//! The server actor: one MCP connection.
//!
//! It starts the transport as a linked child, runs the handshake and the first
//! full tools/list (within the startup timeout), reports tools to the registry,
//! and answers calls. Any failure of the connection — the process exiting, an
//! over-long frame, a failed handshake, a request timeout — fails every pending
//! request and stops this actor; the supervisor decides about a restart. A new
//! connection is always a new actor, so a late answer from an old one has
//! nowhere to go.

mod connection;
mod malformed;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpvisor_protocol::CallToolResult;
use mcpvisor_transports::{HttpTransport, StdioTransport, TransportEvent};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

use crate::context::HostContext;
use crate::error::{CallError, ConnectionError};
use crate::options::{ProgressCallback, ServerSpec, TransportSpec};
use crate::status::ServerId;
use crate::transport::{InboundSink, Transport, TransportActor};
pub(crate) use connection::Connection;

/// A tool call on its way to a server.
pub(crate) struct CallRequest {
    /// Host-side handle of the call, used to cancel or time it out.
    pub(crate) token: u64,
    pub(crate) tool: String,
    pub(crate) arguments: Option<Value>,
    pub(crate) progress: Option<ProgressCallback>,
    pub(crate) reply: oneshot::Sender<Result<CallToolResult, CallError>>,
}

/// Messages of the server actor.
pub(crate) enum ServerMsg {
    Call(Box<CallRequest>),
    /// The host dropped or cancelled the call.
    Cancel {
        token: u64,
    },
    /// The host's deadline for the call passed.
    CallTimedOut {
        token: u64,
        after: Duration,
    },
    /// Something arrived on the transport; the permit bounds the backlog.
    Inbound(TransportEvent, OwnedSemaphorePermit),
    /// Startup (initialize + first tools/list) took too long.
    StartupTimeout,
    /// A re-list after `tools/list_changed` took too long.
    ListTimedOut {
        generation: u64,
    },
}

pub(crate) struct ServerArgs {
    pub(crate) id: ServerId,
    pub(crate) spec: Arc<ServerSpec>,
    pub(crate) ctx: Arc<HostContext>,
}

pub(crate) struct ServerActor;

impl Actor for ServerActor {
    type Msg = ServerMsg;
    type State = Connection;
    type Arguments = ServerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServerMsg>,
        args: ServerArgs,
    ) -> Result<Connection, ActorProcessingErr> {
        let ServerArgs { id, spec, ctx } = args;
        let sink = Arc::new(InboundSink {
            server: myself.clone(),
            gate: Arc::new(Semaphore::new(ctx.options.inbound_queue.max(1))),
            transport: OnceLock::new(),
        });
        let (transport, pid) = match &spec.transport {
            TransportSpec::Stdio(stdio) => {
                let t = StdioTransport::spawn(&spec.name, stdio, &ctx.options.stdio, sink.clone())?;
                let pid = t.pid();
                (Transport::Stdio(t), Some(pid))
            }
            TransportSpec::Http(http) => {
                let client = ctx.http_client()?;
                let t =
                    HttpTransport::new(&spec.name, http, client, &ctx.options.http, sink.clone())?;
                (Transport::Http(t), None)
            }
        };
        let (child, _) =
            TransportActor::spawn_linked(None, TransportActor, transport, myself.get_cell())
                .await?;
        let _ = sink.transport.set(child.clone());
        if pid.is_some() {
            ctx.status
                .update(id, &Arc::from(spec.name.as_str()), |s| s.pid = pid);
        }
        let mut conn = Connection::new(id, spec, ctx, child, pid);
        conn.begin(&myself);
        Ok(conn)
    }

    async fn handle(
        &self,
        myself: ActorRef<ServerMsg>,
        msg: ServerMsg,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ServerMsg::Call(call) => conn.call(*call),
            ServerMsg::Cancel { token } => conn.cancel(token),
            ServerMsg::CallTimedOut { token, after } => {
                if conn.has_call(token) {
                    conn.fail(&myself, ConnectionError::RequestTimeout(after));
                }
            }
            ServerMsg::Inbound(event, _permit) => conn.inbound(&myself, event),
            ServerMsg::StartupTimeout => {
                if !conn.is_ready() {
                    let after = conn.startup_timeout();
                    conn.fail(&myself, ConnectionError::StartupTimeout(after));
                }
            }
            ServerMsg::ListTimedOut { generation } => {
                if conn.listing_generation() == Some(generation) {
                    let after = conn.request_timeout();
                    conn.fail(&myself, ConnectionError::RequestTimeout(after));
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<ServerMsg>,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        conn.close_pending("connection stopped");
        // The transport's teardown waits for the process group; a transport stuck in
        // a write to a stopped process is killed instead (its drop kills the group).
        let child = conn.transport().clone();
        let wait = conn.teardown_budget();
        if child.stop_and_wait(None, Some(wait)).await.is_err() {
            let _ = child.kill_and_wait(Some(Duration::from_secs(1))).await;
        }
        let _ = myself;
        Ok(())
    }
}
