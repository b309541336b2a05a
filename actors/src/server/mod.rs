//! The server actor: one MCP connection.
//!
//! It starts the transport as a linked child, runs the handshake and the first
//! full tools/list (within the startup timeout), reports tools to the registry,
//! and opens the connection's call lane (calls and their answers pass through
//! the lane, not through this actor's mailbox). Any failure of the connection — the process exiting, an
//! over-long frame, a failed handshake, a request timeout — fails every pending
//! request and stops this actor; the supervisor decides about a restart. A new
//! connection is always a new actor, so a late answer from an old one has
//! nowhere to go.

mod connection;
mod lane_ports;
mod malformed;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcpvisor_protocol::state::calls::RequestIds;
use mcpvisor_transports::{Faulty, HttpTransport, Oversized, StdioTransport};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::Semaphore;

use crate::context::HostContext;
use crate::error::{ConnectionError, FailureCell};
use crate::fault_board::LiveConnection;
use crate::inbound::InboundSink;
use crate::lane::{CallLane, LaneWrite};
use crate::messages::{ServerMsg, SupervisorMsg, TransportFault, TransportMsg};
use crate::options::{ServerSpec, TransportSpec};
use crate::status::ServerId;
use crate::transport::{Transport, TransportActor};
pub(crate) use connection::Connection;

/// Messages of the server actor.
pub(crate) struct ServerArgs {
    pub(crate) id: ServerId,
    pub(crate) spec: Arc<ServerSpec>,
    pub(crate) ctx: Arc<HostContext>,
    /// Where this connection records why it ends (read by the supervisor).
    pub(crate) failure: FailureCell,
}

pub(crate) struct ServerActor {
    /// Counted in [`Vitals::actors`](crate::Vitals) until the actor's task drops it.
    _live: crate::vitals::Live,
}

impl ServerActor {
    pub(crate) fn new() -> Self {
        ServerActor {
            _live: crate::vitals::Live::actor(),
        }
    }
}

impl Actor for ServerActor {
    type Msg = ServerMsg;
    type State = Connection;
    type Arguments = ServerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServerMsg>,
        args: ServerArgs,
    ) -> Result<Connection, ActorProcessingErr> {
        let (spec, ctx) = (args.spec.clone(), args.ctx.clone());
        // A start that fails says why in types, not only in the actor's error text.
        let record = |e: ConnectionError| {
            let text = e.to_string();
            *args.failure.lock() = Some(e);
            ActorProcessingErr::from(text)
        };
        let capacity = ctx.options.inbound_queue.max(1);
        let inbound = Arc::new(InboundSink {
            server: myself.clone(),
            gate: Arc::new(Semaphore::new(capacity)),
            capacity,
            transport: OnceLock::new(),
            lane: OnceLock::new(),
        });
        let faults = ctx.faults.server(&spec.name);
        let http = matches!(spec.transport, TransportSpec::Http(_));
        let oversized = match &spec.transport {
            TransportSpec::Stdio(_) => Oversized::Frame {
                limit: ctx.options.stdio.frame_limit,
            },
            TransportSpec::Http(_) => Oversized::Message {
                limit: ctx.options.http.message_limit,
            },
        };
        let sink = Arc::new(Faulty::new(inbound.clone(), faults.wire.clone(), oversized));
        let (transport, pid) = match &spec.transport {
            TransportSpec::Stdio(stdio) => {
                let t = StdioTransport::spawn(&spec.name, stdio, &ctx.options.stdio, sink.clone())
                    .map_err(|e| record(e.into()))?;
                let pid = t.pid();
                (Transport::Stdio(t), Some(pid))
            }
            TransportSpec::Http(http) => {
                let client = ctx.http_client().map_err(|e| record(e.into()))?;
                let streams = ctx.streams().map_err(|e| record(e.into()))?;
                let t =
                    HttpTransport::new(&spec.name, http, client, &ctx.options.http, sink.clone())
                        .map_err(|e| record(e.into()))?
                        .with_faults(faults.wire.clone())
                        .with_streams(streams);
                (Transport::Http(t), None)
            }
        };
        let stdin = match &transport {
            Transport::Stdio(t) => Some(t.writer()),
            Transport::Http(_) => None,
        };
        let (child, _) =
            TransportActor::spawn_linked(None, TransportActor::new(), transport, myself.get_cell())
                .await
                .map_err(|e| record(ConnectionError::ActorFailed(e.to_string())))?;
        let _ = inbound.transport.set(child.clone());
        faults.attach(
            http,
            LiveConnection {
                actor: myself.get_id(),
                transport: child.clone(),
                sink,
            },
        );
        let writer: Arc<dyn LaneWrite> = match stdin {
            Some(stdin) => stdin,
            None => Arc::new(child.clone()),
        };
        // One id counter for the connection: its session's requests and its calls.
        let ids = RequestIds::new();
        let lane = Arc::new(CallLane::new(
            Arc::from(spec.name.as_str()),
            Arc::new(myself.clone()),
            writer,
            ids.clone(),
            ctx.options.max_in_flight,
        ));
        lane.bind();
        lane.start_deadlines();
        let _ = inbound.lane.set(lane.clone());
        let exit_during_initialize = !http && faults.take_exit_on_initialize();
        let mut conn = Connection::new(args, child.clone(), pid, lane, ids);
        conn.begin(&myself);
        if exit_during_initialize {
            // `initialize` is queued to the writer; the kill races its write, so the
            // server dies with it unread or unanswered, and the start fails either way.
            tracing::debug!(server = %spec.name, "fault: exiting during initialize");
            let _ = child.cast(TransportMsg::Fault(TransportFault::Kill, None));
        }
        Ok(conn)
    }

    /// Linked to the supervisor by now: tell it the process is running.
    async fn post_start(
        &self,
        myself: ActorRef<ServerMsg>,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(sup) = myself.try_get_supervisor() {
            let _ = sup.send_message(SupervisorMsg::Spawned {
                id: conn.id(),
                actor: myself.get_id(),
                pid: conn.pid(),
            });
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ServerMsg>,
        msg: ServerMsg,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            ServerMsg::CallTimedOut { id, after } => {
                if conn.lane().take_expired(id) {
                    conn.fail(&myself, ConnectionError::RequestTimeout(after));
                }
            }
            ServerMsg::WriteFailed { error, confirmed } => {
                if confirmed {
                    conn.fail(&myself, ConnectionError::Transport(error));
                } else {
                    let grace = conn.write_failure_grace();
                    myself.send_after(grace, move || ServerMsg::WriteFailed {
                        error,
                        confirmed: true,
                    });
                }
            }
            ServerMsg::Inbound(event, _permit) => conn.inbound(&myself, event),
            ServerMsg::SetupDue => conn.setup_due(&myself),
            ServerMsg::ReportAgain => conn.report_again(&myself),
            ServerMsg::HostAnswered { id, answer } => conn.host_answered(id, answer),
            ServerMsg::RootsChanged => conn.roots_changed(),
            ServerMsg::Relisten => conn.open_listen(),
            ServerMsg::ToolsStale => conn.tools_stale(&myself),
        }
        Ok(())
    }

    /// The transport child ended while the connection was live: the connection
    /// ends with that as its reason, not a bare "stopped".
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<ServerMsg>,
        evt: SupervisionEvent,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        let cause = match evt {
            SupervisionEvent::ActorTerminated(_, _, reason) => {
                ConnectionError::ActorFailed(format!(
                    "the transport stopped ({})",
                    reason.as_deref().unwrap_or("no reason given")
                ))
            }
            SupervisionEvent::ActorFailed(_, err) => {
                ConnectionError::ActorFailed(format!("the transport failed: {err}"))
            }
            _ => return Ok(()),
        };
        conn.fail(&myself, cause);
        Ok(())
    }

    async fn post_stop(
        &self,
        myself: ActorRef<ServerMsg>,
        conn: &mut Connection,
    ) -> Result<(), ActorProcessingErr> {
        conn.close_pending("connection stopped");
        conn.detach_faults(myself.get_id());
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
